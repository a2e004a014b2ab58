"""Stage 2: walk the syntax tree once, the way bash would run it, without executing anything.

The state is a list of *worlds*. A world is one consistent assignment of variables along one path
through the script. A condition packlint can decide from known values takes its branch; one it cannot
decide forks the world, and the fork records the decision (`Condition`) so later findings can name the
branch that triggers them. Worlds whose states become identical are merged again, so a branch that
only runs `mkdir` costs nothing. Values are `Known` or `Unknown`; command substitutions are never run.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import sys
from packlint.records import factory, record
from pathlib import Path

from packlint import launchers as L
from packlint.parse import GAP_VARIABLE, RAW_EXPANSION, ParsedScript, parse
from packlint.source import SourceFile, load, prepare
from packlint.errors import PacklintError
from packlint.globs import bash_pattern_regex as _glob_regex
from packlint.values import Condition, Known, Span, Unknown, Value, Variable

MAX_WORLDS = 16
MAX_LOOP_ITERATIONS = 64
# Worlds one loop iteration may hand to the next before they are joined into one.
MAX_LOOP_WORLDS = 4
MAX_CALL_DEPTH = 32
MAX_SOURCE_DEPTH = 16
MAX_NESTING = 400
# Python frames a nesting level may take (a `$( )` level is ~8 frames): the recursion limit is raised to
# this while a script is analysed, so MAX_NESTING, not Python, is what stops deep input.
RECURSION_LIMIT = 12 * MAX_NESTING + 1000
MAX_VALUE_CHARS = 1 << 20
# Work units (statements run + words expanded + world-merge effort, over all worlds) one script may take.
# A unit costs 10-50 us on a loaded 2-core machine, so the budget ends any script well under a second.
# Measured on 1,515 public scripts: median 77 units, 99th percentile about 1,100, largest legitimate
# ones under 10,000 (benchmarks/run.py --public).
MAX_WORK = 15_000

_NOISE = {"comment", "heredoc_body", "heredoc_start", "heredoc_end", "heredoc_content", ";", ";;", "&",
          "then", "do", "done", "fi", "else", "elif", "esac", "in", "{", "}", "(", ")", "\n"}
# Commands whose whole purpose is their exit status: their status stays unknown in && / || lists.
_PREDICATES = {"grep", "egrep", "fgrep", "pgrep", "which", "type", "hash", "getent", "id", "compgen",
               "ping", "nc", "curl", "wget", "ls", "cmp", "diff", "pidof", "nvidia-smi"}
_BASH_DYNAMIC = {"RANDOM", "SECONDS", "HOSTNAME", "PWD", "OLDPWD", "PPID", "UID", "EUID", "BASHPID",
                 "HOME", "USER", "SRANDOM", "EPOCHSECONDS", "EPOCHREALTIME", "SHLVL", "HOSTTYPE",
                 "MACHTYPE", "OSTYPE", "BASH_VERSION", "IFS", "PATH", "LOGNAME", "SHELL", "TERM"}


@record(eq=True)
class Diagnostic:
    severity: str   # error | warning | info
    code: str
    message: str
    span: Span | None

    def to_json(self) -> dict:
        d = {"severity": self.severity, "code": self.code, "message": self.message}
        if self.span is not None:
            d.update(file=self.span.file, line=self.span.line, column=self.span.column)
        return d


@record
class LaunchInstance:
    """One launch as seen in one world: what the interpreter hands to the launch model."""

    span: Span
    context: tuple[str, ...]          # function calls / loop iterations that led here
    seq: int                          # execution order, to tell "exported after the launch"
    fields: list[Value]               # the command line from the outermost launcher on
    env: dict[str, Variable]          # exported variables + prefix/wrapper assignments
    unexported: dict[str, Variable]   # set, not exported
    when: tuple[Condition, ...]
    command: list[Value] | None = None  # what bash executes, when it differs (`srun ... bash -c "..."`)


@record
class World:
    vars: dict[str, Variable]
    positional: list[Value]
    script: str
    functions: dict[str, tuple[object, ParsedScript]] = factory(dict)
    when: tuple[Condition, ...] = ()
    flow: str | None = None            # exit | return | break | continue
    locals_stack: list[dict[str, Variable | None]] = factory(list)
    allexport: bool = False            # `set -a` is on
    exported_functions: frozenset = frozenset()  # `export -f NAME`: visible to child bash processes
    unknown_exports: bool = False      # `export $(...)`: names packlint cannot know were exported
    exit_trap: object = None           # `trap '...' EXIT`: (code Value, span) run when the script ends
    nullglob: bool = False             # `shopt -s nullglob`
    aliases: object = None             # `alias NAME=...` definitions (a dict)
    expand_aliases: bool = False       # `shopt -s expand_aliases`: scripts expand aliases only then

    def fork(self) -> "World":
        return World(dict(self.vars), list(self.positional), self.script, dict(self.functions),
                     self.when, self.flow, [dict(f) for f in self.locals_stack], self.allexport,
                     self.exported_functions, self.unknown_exports, self.exit_trap, self.nullglob,
                     None if self.aliases is None else dict(self.aliases), self.expand_aliases)


def _vkey(v):
    if v is None:
        return None
    if isinstance(v, Known):
        return ("k", v.text, v.span)
    return ("u", v.reason)


class Piece:
    """Part of a word being expanded: literal or expanded text, and whether word splitting applies.
    (Hand-written: the hottest object of the interpreter.)"""

    __slots__ = ("text", "split", "span", "reason", "boundary", "vanish", "origin")

    def __init__(self, text: str | None, split: bool = False, span: Span | None = None, reason: str = "",
                 boundary: bool = False, vanish: bool = False, origin: str | None = None) -> None:
        self.origin = origin          # "caller": text from the script's arguments
        self.text = text              # None: unknown
        self.split = split            # result of an unquoted expansion: subject to word splitting
        self.span = span
        self.reason = reason
        self.boundary = boundary      # "${A[@]}": a field boundary before this piece
        self.vanish = vanish          # "${A[@]}" of an empty array / "$@" with no args

    def __repr__(self) -> str:
        return f"Piece({self.text!r}, split={self.split}, reason={self.reason!r})"


class _OutOfWork(Exception):
    """MAX_WORK reached: unwinds the whole analysis (caught in Interpreter.run)."""

    def __init__(self, span: Span | None) -> None:
        super().__init__("out of work budget")
        self.span = span


class Interpreter:
    def __init__(self, *, env: dict[str, str] | None = None, args: list[str] | None = None,
                 known_env: tuple[str, ...] = (), cwd: str | None = None) -> None:
        self.initial_env = dict(env or {})
        self.args = list(args or [])
        self.known_env = tuple(known_env)
        self.cwd = cwd or os.getcwd()
        self.diagnostics: list[Diagnostic] = []
        self.launches: list[LaunchInstance] = []
        self.export_events: list[tuple[int, str, Span | None]] = []
        self.seq = 0
        self.context: list[str] = []
        self.source_stack: list[str] = []
        self.depth = 0
        self.call_depth = 0
        self.parsed: dict[str, ParsedScript] = {}
        self._diag_seen: set = set()
        self.world_cap_hit = False
        self._here = None                   # (node, parsed script) of the statement being run
        self.alias_depth = 0
        self.launch_prefix: list[tuple] = []  # outer launchers of `srun bash -c "..."`
        self.source_calls = 0               # how many `source`s are being executed (for `return`)
        self.error_cut: int | None = None   # byte offset of a parse error inside the current statement
        self.work = 0                        # see MAX_WORK
        self.stop_reported = False           # a STOP_CODES diagnostic was given (PK902: once per file)
        self.unknown_launchers: list[tuple[str, str, Span]] = []  # (command, why, where): see PK903
        self.training_exports: list[tuple[str, Span | None]] = []  # packing gates set (PK903)
        self._top_stmt = None                # the top-level statement of the script being run

    # ------------------------------------------------------------------ entry
    def run(self, ps: ParsedScript, real_path: str | None) -> list[World]:
        world = World(vars={}, positional=[Known(a, None, "caller") for a in self.args],
                      script=real_path or ps.source.path)
        for name, value in self.initial_env.items():
            world.vars[name] = Variable(Known(value), exported=True, source="caller")
        for name in self.known_env:
            if name not in world.vars:
                world.vars[name] = Variable(Unknown(f"${name} is set by the cluster at run time"),
                                            exported=True, source="cluster")
        for problem in ps.problems:
            self.diag(problem.severity, problem.code, problem.message, problem.span)
        if real_path:
            self.source_stack.append(os.path.realpath(real_path))
        saved_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(saved_limit, RECURSION_LIMIT))
        try:
            worlds = self.exec_block(_runnable(ps, self._statements(ps.root)), [world], ps)
            worlds = self._run_exit_traps(worlds, ps)
            self._no_launch_found(worlds, ps)
            return worlds
        except _OutOfWork as stop:
            self.depth = 0
            top = self._top_stmt
            where = ps.source.span(top) if top is not None else stop.span
            if top is not None and not _may_launch_after(ps, top.start_byte, self.launches, where):
                self.diag("info", "analysis-limit", "analysis stopped here (work budget of "
                          f"{MAX_WORK} steps); nothing after this point looks like a launch", where)
            else:
                self.diag("warning", "too-complex", "analysis stopped in this construct: the script loops or "
                          f"branches more than packlint follows ({MAX_WORK} steps); launches from here on "
                          "are not seen", where)
            return [world]
        except RecursionError:  # a path MAX_NESTING does not count: stop cleanly, keep what was found
            self.depth = 0
            self.diag("error", "too-deep", "the script nests too deeply to analyse; analysis stopped here "
                      "(please report this script to packlint)", None)
            return [world]
        finally:
            sys.setrecursionlimit(saved_limit)

    def _no_launch_found(self, worlds: list[World], ps: ParsedScript) -> None:
        """No launch recognised, yet the file sets training settings: say so (PK903) rather than pass
        it as "All clear", naming the command packlint did not know when there is one."""
        if self.launches or any(p.severity == "error" and p.code == "syntax" for p in ps.problems):
            return  # a launch, or bash stops at a syntax error (PK900 says so)
        if self.unknown_launchers:
            head, why, span = self.unknown_launchers[0]
            others = sorted({h for h, _, _ in self.unknown_launchers[1:]} - {head})
            more = f" (also: {', '.join(f'`{o}`' for o in others)})" if others else ""
            self.diag("info", "no-launch-found", f"no launch recognised: `{head}` {why}, but packlint does not "
                      f"know `{head}` as a launcher{more}; its settings are not checked", span)
            return
        gates = sorted({n for w in worlds for n, v in w.vars.items()
                        if v.exported and v.source != "caller" and _PACKING_GATE.search(n)})
        if gates:
            var = next(w.vars[gates[0]] for w in worlds if gates[0] in w.vars)
            self.diag("info", "no-launch-found", f"the script sets packing settings ({', '.join(gates[:4])}) but "
                      "packlint recognises no launch in it; nothing is checked against them",
                      var.assigned_at)

    def diag(self, severity: str, code: str, message: str, span: Span | None) -> None:
        if code in STOP_CODES:  # PK902 once per file: later stops are noted, not reported again
            if self.stop_reported:
                severity, code = "info", "analysis-limit"
            self.stop_reported = True
        key = (code, message, span)
        if key not in self._diag_seen:
            self._diag_seen.add(key)
            self.diagnostics.append(Diagnostic(severity, code, message, span))

    # ------------------------------------------------------------------ statements
    @staticmethod
    def _statements(node) -> list:
        return [c for c in node.named_children if c.type not in _NOISE]

    def exec_block(self, stmts: list, worlds: list[World], ps: ParsedScript) -> list[World]:
        for stmt in stmts:
            active = [w for w in worlds if w.flow is None]
            if not active:
                break
            done = [w for w in worlds if w.flow is not None]
            out: list[World] = []
            for w in active:
                out.extend(self.exec_stmt(stmt, w, ps))
            # merging costs a pass over every variable: only worth it when this statement forked
            worlds = self._merge(done + out) if len(out) > len(active) else done + out
        return worlds

    def _run_exit_traps(self, worlds: list[World], ps: ParsedScript) -> list[World]:
        """When the script ends (normally or by `exit`), bash runs the EXIT trap: its launches count."""
        out = []
        for w in worlds:
            if w.exit_trap is None:
                out.append(w)
                continue
            code, span = w.exit_trap
            w.exit_trap = None
            w.flow = None
            self.context.append(f"EXIT trap set at {span.short()}")
            try:
                out.extend(_b_eval(self, [Known("eval"), code], w, ps, span, None))
            finally:
                self.context.pop()
        return out

    def _merge(self, worlds: list[World]) -> list[World]:
        if len(worlds) <= 1:
            return worlds
        self.work += len(worlds) * len(worlds[0].vars) // 32  # comparing states costs about this
        # Same state = same Variable objects (assignments replace them, never mutate them): compare the
        # cheap parts first, then the variable maps as dicts (identity of values, at C speed).
        buckets: dict[tuple, list[World]] = {}
        result: list[World] = []
        for w in worlds:
            light = (len(w.vars), w.flow, w.allexport, len(w.locals_stack),
                     tuple(_vkey(p) for p in w.positional))
            for r in buckets.get(light, ()):
                if r.vars == w.vars and r.functions.keys() == w.functions.keys():
                    r.when = _common_prefix(r.when, w.when)
                    break
            else:
                buckets.setdefault(light, []).append(w)
                result.append(w)
        if len(result) > MAX_WORLDS:
            # Joined, not dropped: every path is still followed (no launch is lost), the paths beyond
            # the cap as one whose disagreeing values are unknown.
            here = self._here[1].source.span(self._here[0]) if self._here else None
            if not self.world_cap_hit:
                self.world_cap_hit = True
                self.diag("info", "too-many-branches",
                          f"more than {MAX_WORLDS} combinations of undecidable branches; the paths beyond "
                          f"the first {MAX_WORLDS - 1} are followed as one, with the values they disagree on "
                          "unknown", here)
            keep = max(1, MAX_WORLDS - len({w.flow for w in result[MAX_WORLDS - 1:]}))
            rest = result[keep:]
            flows = list(dict.fromkeys(w.flow for w in rest))  # worlds leaving by exit/break stay apart
            result = result[:keep] + [_join_worlds([w for w in rest if w.flow == f], "more undecidable "
                                                   "branches than packlint follows one by one", here)
                                      for f in flows]
        return result

    def exec_stmt(self, node, world: World, ps: ParsedScript) -> list[World]:
        self._here = (node, ps)
        if self.depth == 0 and not self.source_calls and self.call_depth == 0:
            self._top_stmt = node
        self.seq += 1
        self.work += 1
        if self.work > MAX_WORK:
            raise _OutOfWork(ps.source.span(node))
        self.depth += 1
        try:
            if self.depth > MAX_NESTING:
                self.diag("warning", "too-deep", "nesting too deep to analyse; the rest of this construct "
                          "is skipped", ps.source.span(node))
                return [world]
            if node.type == "ERROR" or node.has_error and self._inside_error(node, ps):
                self._names_unknown(node, world, ps)
                return [world]
            handler = getattr(self, "_s_" + node.type, None)
            if handler is None:
                return [world]
            following = node.next_sibling
            if following is not None and following.type == "&":
                # `cmd &` runs in a background subshell: what it launches starts, what it sets or
                # exports never reaches this shell (`export A=1 & export B=1` leaves A unset)
                handler(node, world.fork(), ps)
                return [world]
            saved_cut = self.error_cut
            if node.has_error and node.type in ("command", "declaration_command", "variable_assignment",
                                                 "variable_assignments", "redirected_statement"):
                cuts = [a for a, b in ps.error_ranges if node.start_byte <= a < node.end_byte]
                if cuts:
                    self.error_cut = min(cuts)
                    self._names_unknown(node, world, ps)
            try:
                return handler(node, world, ps)
            finally:
                self.error_cut = saved_cut
        finally:
            self.depth -= 1

    def _names_unknown(self, node, world, ps) -> None:
        """A construct packlint could not parse: whatever it assigns becomes unknown."""
        text = node.text.decode("utf-8", "replace")
        span = ps.source.span(node)
        for m in re.finditer(r"(?:^|[;\s])(?:export\s+|declare\s+(?:-\w+\s+)*|local\s+)?([A-Za-z_]\w*)\+?=", text):
            name = m.group(1)
            old = world.vars.get(name)
            world.vars[name] = Variable(Unknown("could not analyse this line", span), None,
                                        old.exported if old else "export" in m.group(0), span)

    def _inside_error(self, node, ps: ParsedScript) -> bool:
        return any(a <= node.start_byte and node.end_byte <= b for a, b in ps.error_ranges)

    def _s_program(self, node, world, ps):
        return self.exec_block(self._statements(node), [world], ps)

    def _s_compound_statement(self, node, world, ps):
        if node.children and node.children[0].type == "((":
            for c in node.named_children:
                self.arith(c, world, ps)
            return [world]
        return self.exec_block(self._statements(node), [world], ps)

    _s_do_group = _s_compound_statement

    def _s_subshell(self, node, world, ps):
        self.exec_block(self._statements(node), [world.fork()], ps)
        return [world]

    def _s_redirected_statement(self, node, world, ps):
        body = node.child_by_field_name("body")
        if body is None:
            return [world]
        if body.type == "while_statement":
            lines = self._fed_lines(node, world, ps)
            if lines is not None:
                fed = self._while_read(body, lines, world, ps)
                if fed is not None:
                    return fed
        return self.exec_stmt(body, world, ps)

    def _fed_lines(self, node, world, ps) -> list[str] | None:
        """The lines a loop reads from `<<< "text"` or a here-document, when they are known."""
        for c in node.children:
            if c.type == "herestring_redirect":
                value = next((x for x in c.named_children), None)
                text = self.expand_joined(value, world, ps) if value is not None else None
                return text.text.split("\n") if isinstance(text, Known) else None
            if c.type == "heredoc_redirect":
                body = next((x for x in c.named_children if x.type == "heredoc_body"), None)
                if body is None or body.named_children:  # expansions inside: not followed
                    return None
                return body.text.decode("utf-8", "replace").rstrip("\n").split("\n")
        return None

    def _while_read(self, loop, lines: list[str], world, ps) -> list[World] | None:
        """`while read a b; do ...; done <<< "..."`: one iteration per known input line, with the
        variables `read` sets (split on IFS, the last one taking the rest of the line)."""
        conds = [loop.children[i] for i in range(loop.child_count)
                 if loop.field_name_for_child(i) == "condition" and loop.children[i].type not in _NOISE]
        body = loop.child_by_field_name("body")
        if len(conds) != 1 or conds[0].type != "command" or body is None:
            return None
        cmd = conds[0]
        name_node = cmd.child_by_field_name("name")
        if name_node is None or name_node.text != b"read":
            return None
        ifs = None
        for i, c in enumerate(cmd.children):
            if c.type == "variable_assignment" and c.child_by_field_name("name") is not None \
                    and c.child_by_field_name("name").text == b"IFS":
                v = self.expand_joined(c.child_by_field_name("value"), world, ps)
                ifs = v.text if isinstance(v, Known) else None
        args = []
        for i, c in enumerate(cmd.children):
            if cmd.field_name_for_child(i) == "argument":
                args.extend(self.expand_fields(c, world, ps))
        if any(not isinstance(a, Known) for a in args):
            return None
        names = [a.text for a in args if not a.text.startswith("-")]
        if not names or any(not re.fullmatch(r"[A-Za-z_]\w*", n) for n in names) or \
                any(a.text.startswith("-") and set(a.text[1:]) - set("rs") for a in args):
            return None
        span = ps.source.span(cmd)
        worlds = [world]
        for line in lines[:MAX_LOOP_ITERATIONS]:
            if ifs is None or ifs == " \t\n":
                parts = line.split(None, len(names) - 1)
            else:
                parts = re.split("[" + re.escape(ifs) + "]", line, maxsplit=len(names) - 1)
            parts += [""] * (len(names) - len(parts))
            for w in worlds:
                if w.flow is None:
                    for n, v in zip(names, parts):
                        self.set_var(w, n, Variable(Known(v, span), assigned_at=span), span)
            worlds = self._loop_body(body, worlds, ps)
            if all(w.flow is not None for w in worlds):
                break
        for w in worlds:
            _after_loop(w)
        return worlds

    def _s_pipeline(self, node, world, ps):
        parts = [c for c in node.named_children if c.type not in _NOISE]
        for part in parts:  # every element runs in a subshell: its variables do not come back
            self.exec_stmt(part, world.fork(), ps)
        return [world]

    def _s_negated_command(self, node, world, ps):
        return [w for w, _ in self.status(node, world, ps)]

    def _s_list(self, node, world, ps):
        return [w for w, _ in self.status(node, world, ps)]

    def _s_test_command(self, node, world, ps):
        return [world]

    def _s_function_definition(self, node, world, ps):
        name_node = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name_node is not None and body is not None:
            world.functions[name_node.text.decode("utf-8", "replace")] = (body, ps)
        return [world]

    def _s_variable_assignment(self, node, world, ps):
        self.assign(node, world, ps)
        return [world]

    def _s_variable_assignments(self, node, world, ps):
        for c in node.named_children:
            if c.type == "variable_assignment":
                self.assign(c, world, ps)
        return [world]

    def _s_if_statement(self, node, world, ps):
        clauses = []  # (condition nodes or None, body statements)
        cond, body, current = [], [], None
        for i, child in enumerate(node.children):
            fname = node.field_name_for_child(i)
            if child.type in ("elif_clause", "else_clause"):
                continue
            if fname == "condition":
                if child.type not in _NOISE:
                    cond.append(child)
            elif child.is_named and child.type not in _NOISE:
                body.append(child)
        clauses.append((cond, body))
        for child in node.named_children:
            if child.type == "elif_clause":
                c_nodes, b_nodes, in_body = [], [], False
                for sub in child.children:
                    if sub.type == "then":
                        in_body = True
                        continue
                    if sub.is_named and sub.type not in _NOISE:
                        (b_nodes if in_body else c_nodes).append(sub)
                clauses.append((c_nodes, b_nodes))
            elif child.type == "else_clause":
                clauses.append((None, self._statements(child)))
        return self._run_clauses_at(clauses, world, ps)  # only `elif` levels count as nesting

    def _run_clauses(self, clauses, world, ps) -> list[World]:
        if not clauses:
            return [world]
        self.depth += 1  # one level per `elif`: a long chain recurses
        try:
            if self.depth > MAX_NESTING:
                cond = clauses[0][0]
                self.diag("warning", "too-deep", "nesting too deep to analyse; the rest of this construct "
                          "is skipped", ps.source.span(cond[-1]) if cond else None)
                return [world]
            return self._run_clauses_at(clauses, world, ps)
        finally:
            self.depth -= 1

    def _run_clauses_at(self, clauses, world, ps) -> list[World]:
        (cond, body), rest = clauses[0], clauses[1:]
        if cond is None:
            return self.exec_block(body, [world], ps)
        results: list[World] = []
        for w, status in self.status_seq(cond, world, ps, in_condition=True):
            text = _snippet(cond[-1]) if cond else "condition"
            span = ps.source.span(cond[-1]) if cond else None
            if status is True:
                results.extend(self.exec_block(body, [w], ps))
            elif status is False:
                results.extend(self._run_clauses(rest, w, ps))
            else:
                yes, no = w, w.fork()
                yes.when = yes.when + (Condition(text, "is true", span),)
                no.when = no.when + (Condition(text, "is false", span),)
                results.extend(self.exec_block(body, [yes], ps))
                results.extend(self._run_clauses(rest, no, ps))
        return self._merge(results)

    def _s_case_statement(self, node, world, ps):
        subject_node = node.child_by_field_name("value")
        if subject_node is None:
            subject_node = next((c for c in node.named_children if c.type != "case_item"), None)
        subject = self.expand_joined(subject_node, world, ps) if subject_node is not None else Known("")
        items = [c for c in node.named_children if c.type == "case_item"]
        arms = []
        for item in items:
            patterns, body, seen_paren = [], [], False
            for c in item.children:
                if c.type == ")":
                    seen_paren = True
                    continue
                if not seen_paren:
                    if c.is_named and c.type not in _NOISE:
                        patterns.append(c)
                elif c.is_named and c.type not in _NOISE:
                    body.append(c)
            arms.append((patterns, body, item))
        if isinstance(subject, Known):
            decided = self._case_known(subject.text, arms, world, ps)
            if decided is not None:
                return decided
        # undecidable: one world per arm, plus "no arm matched" unless there is a catch-all
        results: list[World] = []
        subject_text = _snippet(subject_node) if subject_node is not None else "?"
        catch_all = False
        for patterns, body, item in arms:
            w = world.fork()
            pat_text = " | ".join(_snippet(p) for p in patterns)
            w.when = w.when + (Condition(f"case {subject_text}", f"matches `{pat_text})`",
                                         ps.source.span(item)),)
            results.extend(self.exec_block(body, [w], ps))
            if any(_snippet(p) == "*" for p in patterns):
                catch_all = True
                break
        if not catch_all:
            w = world.fork()
            w.when = w.when + (Condition(f"case {subject_text}", "matches no arm", ps.source.span(node)),)
            results.append(w)
        return self._merge(results)

    def _case_known(self, subject: str, arms, world, ps) -> list[World] | None:
        """`case` on a known subject, with bash's terminators: `;;` stops, `;&` runs the next arm's body
        too, `;;&` goes on testing the arms after it. None: a pattern is unknown (undecidable)."""
        worlds = [world]
        i, run_next = 0, False
        while i < len(arms):
            patterns, body, item = arms[i]
            if not run_next:
                matched = False
                for p in patterns:
                    pat = self.expand_pattern(p, world, ps)
                    if pat is None:
                        return None if worlds == [world] else worlds
                    if _glob_match(subject, pat):
                        matched = True
                        break
                if not matched:
                    i += 1
                    continue
            worlds = self.exec_block(body, worlds, ps)
            terminator = next((c.type for c in item.children if c.type in (";;", ";&", ";;&")), ";;")
            if terminator == ";;":
                return worlds
            run_next = terminator == ";&"
            i += 1
        return worlds

    def _s_for_statement(self, node, world, ps):
        var_node = node.child_by_field_name("variable")
        body = node.child_by_field_name("body")
        if var_node is None or body is None:
            return [world]
        name = var_node.text.decode()
        value_nodes = [node.children[i] for i in range(node.child_count)
                       if node.field_name_for_child(i) == "value"]
        has_in = any(c.type == "in" for c in node.children)
        if has_in:
            items: list[Value] = []
            for group in _glued_groups(value_nodes):
                items.extend(self.expand_group(group, world, ps))
        else:
            items = list(world.positional)
        span = ps.source.span(node)
        if any(not isinstance(i, Known) for i in items):
            reason = next(i.reason for i in items if isinstance(i, Unknown))
            return self._loop_unknown(body, world, ps, name, Unknown(reason, span),
                                      f"for {name} in ...", span)
        entry = world.fork()
        worlds = [world]
        for count, item in enumerate(items):
            if count >= MAX_LOOP_ITERATIONS:
                worlds = self._loop_widen(body, entry, worlds, ps, name, f"for {name} in ...", span,
                                          len(items))
                break
            for w in worlds:
                self.set_var(w, name, Variable(item, assigned_at=span), span)
            self.context.append(f"for {name}={item.text} ({span.short()})")
            try:
                worlds = self._loop_body(body, worlds, ps)
            finally:
                self.context.pop()
            if all(w.flow is not None and w.flow.startswith("break_done") for w in worlds):
                break
        for w in worlds:
            _after_loop(w)
        return worlds

    def _loop_body(self, body, worlds, ps) -> list[World]:
        active = [w for w in worlds if w.flow is None]
        rest = [w for w in worlds if w.flow is not None]
        out = self.exec_block(self._statements(body), active, ps) if active else []
        for w in out:
            if w.flow == "continue":
                w.flow = None
            elif w.flow == "break":
                w.flow = "break_done"
            elif w.flow and w.flow.startswith(("break ", "continue ")):
                # `break 2` / `continue 2`: leave this loop, then act on the enclosing one
                kind, n = w.flow.split()
                w.flow = f"break_done {kind}" + ("" if int(n) == 2 else f" {int(n) - 1}")
        going = [w for w in out if w.flow is None]
        if len(going) > MAX_LOOP_WORLDS:
            # Undecidable branches inside a loop would multiply the worlds with every iteration (k**n):
            # the worlds that go on to the next iteration are joined (what they disagree on is unknown).
            span = going[0].when[-1].span if going[0].when else None
            joined = _join_worlds(going, "undecidable branches inside a loop", span)
            out = [w for w in out if w.flow is not None] + [joined]
        return self._merge(rest + out)

    def _loop_widen(self, body, entry: World, worlds: list[World], ps, var, text, span,
                    total: int | None = None) -> list[World]:
        """The unroll cap is reached: the remaining iterations are analysed in one symbolic pass from
        a state where whatever the iterations changed is unknown (launches inside are still seen)."""
        done = [w for w in worlds if w.flow is not None]
        live = [w for w in worlds if w.flow is None]
        many = f"{total} iterations" if total else "more iterations"
        self.diag("info", "loop-bound", f"loop has {many}: the first {MAX_LOOP_ITERATIONS} are followed one by "
                  "one, the rest in one pass with the values they change unknown", span)
        if not live:
            return done
        joined = _join_worlds([entry] + live, f"the iterations of the loop at {span.short()}", span)
        value = Unknown(f"set by the later iterations of the loop at {span.short()}", span)
        out = self._loop_unknown(body, joined, ps, var, value if var else None, text, span)
        for w in out:
            if w.flow == "loop_done":
                w.flow = None
        return done + out

    def _loop_endless(self, body, world: World, ps, span) -> list[World]:
        """`while true` / `while :`: never unrolled. One pass from the entry state finds what the loop
        does with known values; a second pass from the join of entry and exit states (what an iteration
        changes becomes unknown) finds the ways out (`break`, `exit`) that depend on those changes.
        Worlds still looping after that never leave the loop in bash."""
        entry = world.fork()
        first = self._loop_body(body, [world], ps)
        out = [w for w in first if w.flow is not None]
        live = [w for w in first if w.flow is None]
        if live:
            joined = _join_worlds([entry] + live, f"the iterations of the loop at {span.short()}", span)
            second = self._loop_body(body, [joined], ps)
            out.extend(w for w in second if w.flow is not None)
            forever = [w for w in second if w.flow is None]
            if forever and not out:
                for w in forever:
                    w.flow = "exit"  # bash never gets past a loop nothing leaves
                out = forever
        return out

    def _loop_unknown(self, body, world, ps, var, value, text, span) -> list[World]:
        """A loop whose iteration count is unknown: model "never runs" and "runs once"."""
        skip = world.fork()
        skip.when = skip.when + (Condition(text, "runs no iteration", span),)
        run = world
        run.when = run.when + (Condition(text, "runs its body", span),)
        if var is not None:
            self.set_var(run, var, Variable(value, assigned_at=span), span)
        out = self._loop_body(body, [run], ps)
        for w in out:
            _after_loop(w)
        # Joined again right after the loop: forking every later statement on "did that data loop run"
        # multiplies the work for nothing (such loops prepare data; they rarely set a gate). What the
        # loop changed becomes unknown; launches inside it keep their own `when`.
        going = [skip] + [w for w in out if w.flow is None]
        ended = [w for w in out if w.flow is not None]
        return self._merge(ended + [_join_worlds(going, f"how many times the loop at {span.short()} runs", span)])

    def _s_c_style_for_statement(self, node, world, ps):
        init = node.child_by_field_name("initializer")
        cond = node.child_by_field_name("condition")
        update = node.child_by_field_name("update")
        body = node.child_by_field_name("body")
        span = ps.source.span(node)
        if body is None:
            return [world]
        if init is not None:
            self.arith(init, world, ps)
        entry = world.fork()
        worlds = [world]
        for count in range(MAX_LOOP_ITERATIONS + 1):
            if count == MAX_LOOP_ITERATIONS:
                worlds = self._loop_widen(body, entry, worlds, ps, None, _snippet(node), span)
                break
            live = [w for w in worlds if w.flow is None]
            if not live:
                break
            nxt = [w for w in worlds if w.flow is not None]
            for w in live:
                c = self.arith(cond, w, ps) if cond is not None else 1
                if isinstance(c, Unknown):
                    nxt.extend(self._loop_unknown(body, w, ps, None, None, _snippet(node), span))
                    continue
                if c == 0:
                    w.flow = "loop_done"
                    nxt.append(w)
                    continue
                out = self._loop_body(body, [w], ps)
                for o in out:
                    if o.flow is None and update is not None:
                        self.arith(update, o, ps)
                nxt.extend(out)
            worlds = self._merge(nxt)
        for w in worlds:
            _after_loop(w)
        return worlds

    def _s_while_statement(self, node, world, ps):
        cond_nodes = [node.children[i] for i in range(node.child_count)
                      if node.field_name_for_child(i) == "condition" and node.children[i].type not in _NOISE]
        body = node.child_by_field_name("body")
        until = node.children[0].type == "until"
        span = ps.source.span(node)
        if body is None:
            return [world]
        constant = all(b"$" not in c.text and b"`" not in c.text for c in cond_nodes)
        entry = world.fork()
        worlds = [world]
        finished: list[World] = []
        for count in range(MAX_LOOP_ITERATIONS + 1):
            live = [w for w in worlds if w.flow is None]
            finished.extend(w for w in worlds if w.flow is not None)
            if not live:
                break
            if count == MAX_LOOP_ITERATIONS:
                finished.extend(self._loop_widen(body, entry, live, ps, None,
                                                 _snippet(node).split("\n")[0], span))
                break
            nxt = []
            for w in live:
                for w2, status in self.status_seq(cond_nodes, w, ps, in_condition=True):
                    if status is not None and until:
                        status = not status
                    if status is False:
                        finished.append(w2)
                    elif status is True and constant:
                        # `while true`, `until false`: unbounded, never unrolled
                        finished.extend(self._loop_endless(body, w2, ps, span))
                    elif status is True:
                        nxt.extend(self._loop_body(body, [w2], ps))
                    else:
                        finished.extend(self._loop_unknown(body, w2, ps, None, None,
                                                           _snippet(node).split("\n")[0], span))
            worlds = self._merge(nxt)
        for w in finished:
            _after_loop(w)
        return self._merge(finished)

    # ------------------------------------------------------------------ exit status
    def status_seq(self, nodes, world, ps, in_condition=False) -> list[tuple[World, bool | None]]:
        """Run a condition list (`if a; b; then`): the status is the last command's."""
        if not nodes:
            return [(world, True)]
        pairs = [(world, True)]
        for n in nodes:
            nxt = []
            for w, _ in pairs:
                if w.flow is not None:
                    nxt.append((w, False))
                    continue
                nxt.extend(self.status(n, w, ps, in_condition))
            pairs = nxt
        return pairs

    def status(self, node, world, ps, in_condition=False) -> list[tuple[World, bool | None]]:
        self.depth += 1  # `a && b && ...` and `! ! ...` nest one level per operator
        try:
            if self.depth > MAX_NESTING:
                self.diag("warning", "too-deep", "nesting too deep to analyse; the rest of this construct "
                          "is skipped", ps.source.span(node))
                return [(world, None)]
            return self._status(node, world, ps, in_condition)
        finally:
            self.depth -= 1

    def _status(self, node, world, ps, in_condition=False) -> list[tuple[World, bool | None]]:
        t = node.type
        if t == "list":
            kids = [c for c in node.children if c.type not in ("comment",)]
            left, op, right = kids[0], kids[1].type, kids[-1]
            if op not in ("&&", "||") or len(kids) < 3:  # a grammar gap: an ERROR node where the operator is
                self._names_unknown(node, world, ps)
                return [(world, None)]
            out = []
            for w, st in self.status(left, world, ps, in_condition):
                if w.flow is not None:
                    out.append((w, st))
                    continue
                run_right = {"&&": st, "||": None if st is None else not st}[op]
                if run_right is True:
                    out.extend(self.status(right, w, ps, in_condition))
                elif run_right is False:
                    out.append((w, st))
                else:
                    text = _snippet(left)
                    span = ps.source.span(left)
                    yes, no = w, w.fork()
                    runs = "succeeds" if op == "&&" else "fails"
                    skips = "fails" if op == "&&" else "succeeds"
                    yes.when = yes.when + (Condition(text, runs, span),)
                    no.when = no.when + (Condition(text, skips, span),)
                    out.extend(self.status(right, yes, ps, in_condition))
                    out.append((no, op == "||"))
            return out
        if t == "negated_command":
            inner = node.named_children[-1]
            return [(w, None if s is None else not s) for w, s in self.status(inner, world, ps, in_condition)]
        if t == "test_command":
            return [(world, self.eval_test_node(node, world, ps))]
        if t == "compound_statement" and node.children and node.children[0].type == "((":
            v = None
            for c in node.named_children:
                v = self.arith(c, world, ps)
            return [(world, None if isinstance(v, Unknown) or v is None else v != 0)]
        if t == "redirected_statement":
            body = node.child_by_field_name("body")
            return self.status(body, world, ps, in_condition) if body is not None else [(world, None)]
        if t == "pipeline":
            self._s_pipeline(node, world, ps)
            last = [c for c in node.named_children if c.type not in _NOISE][-1]
            bang = node.children and node.children[0].type == "!"
            st = self._command_status_guess(last, world, ps, in_condition)
            return [(world, None if st is None else (not st if bang else st))]
        if t == "command":
            before = len(self.launches)
            fields_status: list[tuple[World, bool | None]] = []
            worlds = self._s_command(node, world, ps, status_out=fields_status)
            if fields_status:
                return fields_status
            guessed = self._command_status_guess(node, world, ps, in_condition)
            if len(self.launches) > before:
                guessed = None
            return [(w, guessed if w.flow is None else False) for w in worlds]
        worlds = self.exec_stmt(node, world, ps)
        return [(w, None if in_condition else True) for w in worlds]

    def _command_status_guess(self, node, world, ps, in_condition) -> bool | None:
        """Ordinary commands in `&&`/`||` lists are assumed to succeed (launch scripts run on a working
        machine); in `if`/`while` conditions, and for commands that exist to be tested, it is unknown."""
        if node.type != "command":
            return None if in_condition else True
        name_node = node.child_by_field_name("name")
        name = name_node.text.decode("utf-8", "replace") if name_node is not None else ""
        if name in ("true", ":"):
            return True
        if name == "false":
            return False
        if in_condition or os.path.basename(name) in _PREDICATES:
            return None
        return True

    # ------------------------------------------------------------------ tests
    def eval_test_node(self, node, world, ps) -> bool | None:
        inner = [c for c in node.named_children]
        if not inner:
            return False
        opener = node.children[0].type
        if opener == "[":
            # `[` is a command: its arguments are split and unquoted empties vanish before it reads them
            # (`[ $EMPTY != 32B ]` is `[ != 32B ]`, an error: status 2, the else branch runs)
            words: list[Value] = []
            for c in node.children[1:]:
                if c.type != "]":
                    self._bracket_words(c, world, ps, words)
            return self.test_args(words)
        return self._test_expr(inner[0], world, ps, double=opener == "[[")

    _TEST_TREE = frozenset({"binary_expression", "unary_expression", "parenthesized_expression",
                            "negated_expression", "postfix_expression"})

    def _bracket_words(self, node, world, ps, out: list[Value]) -> None:
        """The argument words of `[ ... ]` in order: operators as written, operands expanded."""
        if node.type in self._TEST_TREE:
            for c in node.children:
                self._bracket_words(c, world, ps, out)
        elif not node.is_named or node.type in ("test_operator", "extglob_pattern", "regex"):
            out.append(Known(node.text.decode("utf-8", "replace"), ps.source.span(node)))
        elif node.type != "comment":
            out.extend(self.expand_fields(node, world, ps))

    def _test_expr(self, node, world, ps, double) -> bool | None:
        self.depth += 1  # `[[ ( ( ... ) ) ]]`, `[[ a && b && ... ]]`
        try:
            if self.depth > MAX_NESTING:
                return None
            return self._test_expr_at(node, world, ps, double)
        finally:
            self.depth -= 1

    def _test_expr_at(self, node, world, ps, double) -> bool | None:
        t = node.type
        if t == "parenthesized_expression":
            kids = node.named_children
            return self._test_expr(kids[0], world, ps, double) if kids else None
        if t in ("negated_expression",) or (t == "unary_expression" and node.children[0].type == "!"):
            v = self._test_expr(node.named_children[-1], world, ps, double)
            return None if v is None else not v
        if t == "unary_expression":
            op_node = node.child_by_field_name("operator") or node.children[0]
            op = op_node.text.decode()
            operand = node.named_children[-1]
            if op == "-v":
                name = self.expand_joined(operand, world, ps)
                if not isinstance(name, Known):
                    return None
                var = world.vars.get(name.text)
                if var is None:
                    return False
                return None if isinstance(var.scalar(), Unknown) and var.source == "cluster" else True
            v = self.expand_joined(operand, world, ps)
            if not isinstance(v, Known):
                return None
            if op == "-z":
                return v.text == ""
            if op == "-n":
                return v.text != ""
            return None  # file tests: the file system of the cluster is unknown
        if t == "binary_expression":
            op_node = node.child_by_field_name("operator")
            op = op_node.text.decode() if op_node is not None else ""
            left = node.child_by_field_name("left")
            right = node.child_by_field_name("right")
            if op in ("&&", "-a", "||", "-o"):
                a = self._test_expr(left, world, ps, double)
                if op in ("&&", "-a"):
                    if a is False:
                        return False
                    b = self._test_expr(right, world, ps, double)
                    return False if b is False else (None if a is None or b is None else True)
                if a is True:
                    return True
                b = self._test_expr(right, world, ps, double)
                return True if b is True else (None if a is None or b is None else False)
            lv = self.expand_joined(left, world, ps) if left is not None else Known("")
            rights = [node.children[i] for i in range(node.child_count) if node.field_name_for_child(i) == "right"]
            if op in ("==", "=", "!=") and double and len(rights) > 1:
                # tree-sitter-bash splits `*"--help"*` into three `right` children: one pattern
                parts = [self.expand_pattern(r, world, ps) for r in rights]
                if not isinstance(lv, Known) or any(p is None for p in parts):
                    return None
                m = _glob_match(lv.text, "".join(parts))
                return m if op != "!=" else not m
            if op in ("==", "=", "!=") and double and right is not None:
                pat = self.expand_pattern(right, world, ps)
                if not isinstance(lv, Known) or pat is None:
                    return None
                m = _glob_match(lv.text, pat)
                return m if op != "!=" else not m
            if op == "=~":
                rv = self.expand_joined(right, world, ps)
                if not isinstance(lv, Known) or not isinstance(rv, Known):
                    return None
                try:
                    m = re.search(rv.text, lv.text)
                except re.error:
                    return None
                span = ps.source.span(node)
                items = [Known(g or "", span) for g in (m.group(0), *m.groups())] if m else []
                world.vars["BASH_REMATCH"] = Variable(None, items, False, span)
                return m is not None
            rv = self.expand_joined(right, world, ps) if right is not None else Known("")
            if not isinstance(lv, Known) or not isinstance(rv, Known):
                return None
            return _compare(op, lv.text, rv.text, world, self)
        v = self.expand_joined(node, world, ps)
        return None if not isinstance(v, Known) else v.text != ""

    def test_args(self, args: list[Value]) -> bool | None:
        """`test`/`[` with already expanded arguments (POSIX rules by argument count)."""
        if args and isinstance(args[-1], Known) and args[-1].text == "]":
            args = args[:-1]
        if any(not isinstance(a, Known) for a in args):
            return None
        words = [a.text for a in args]
        return _posix_test(words, self)

    # ------------------------------------------------------------------ commands
    def _s_command(self, node, world, ps, status_out=None):
        prefix: list = []
        name_node = node.child_by_field_name("name")
        arg_nodes = []
        for i, c in enumerate(node.children):
            fname = node.field_name_for_child(i)
            if c.type == "variable_assignment" and name_node is not None and c.start_byte < name_node.start_byte:
                prefix.append(c)
            elif fname == "argument":
                arg_nodes.append(c)
        words = [name_node] + [a for a in arg_nodes if a.type not in (
            "herestring_redirect", "file_redirect", "heredoc_redirect")] if name_node is not None else []
        glue_tail = None
        if prefix and words and _ends_with_dollar(prefix[-1].child_by_field_name("value")) \
                and words[0].start_byte == prefix[-1].end_byte and words[0].type in ("word", "command_name"):
            # `A=$D/$T.log` read by tree-sitter as `A=$D/$` + command `T.log`
            glue_tail = words.pop(0)
            name_node = words[0] if words else None
        if name_node is None:
            for n, a in enumerate(prefix):
                self.assign(a, world, ps, glue_tail=glue_tail if n == len(prefix) - 1 else None)
            return [world]
        # tree-sitter-bash glues `a=1 b=2` + newline + the next command into one command (no error
        # node): assignments separated from the command by an unescaped newline stand on their own
        items = prefix + [name_node]
        split_at = 0
        for k in range(1, len(items)):
            if _NEWLINE.search(ps.source.data, items[k - 1].end_byte, items[k].start_byte):
                split_at = k
        if split_at:
            for a in prefix[:split_at]:
                self.assign(a, world, ps)
            prefix = prefix[split_at:]
        first = prefix[0] if prefix else name_node
        fields = []
        for group in _glued_groups(words):
            fields.extend(self.expand_group(group, world, ps))
        span = ps.source.span(node) if first is items[0] else \
            ps.source.span_of_points(first.start_point, node.end_point)
        prefix_env: dict[str, Variable] = {}
        for n, a in enumerate(prefix):
            name, var = self._assignment_value(a, world, ps,
                                               glue_tail=glue_tail if n == len(prefix) - 1 else None)
            if name is not None:
                prefix_env[name] = Variable(var.value, var.items, True, var.assigned_at, var.assigned_at,
                                            "prefix")
        return self.run_command(fields, prefix_env, world, ps, span, node, status_out)

    def run_command(self, fields, prefix_env, world, ps, span, node, status_out=None) -> list[World]:
        if not fields:
            return [world]
        # peel wrappers: env A=1 nohup exec time ...
        exec_replaces = False
        xargs_token = None
        while fields:
            head = L.basename(fields[0])
            if head not in L.WRAPPERS:
                break
            if head == "exec":
                exec_replaces = True
            value_opts, n_pos = L.WRAPPERS[head]
            i = 1
            while i < len(fields):
                f = fields[i]
                if not isinstance(f, Known):
                    name = _assignment_prefix(f) if head == "env" else None
                    if name is None:
                        break
                    # `env MASTER_ADDR="$h" torchrun ...`: the name is known, the value is not
                    prefix_env[name] = Variable(Unknown(f.reason, f.span), None, True, f.span, f.span, "prefix")
                    i += 1
                    continue
                if head == "env" and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", f.text or ""):
                    name, _, val = f.text.partition("=")
                    prefix_env[name] = Variable(Known(val, f.span), None, True, f.span, f.span, "prefix")
                    i += 1
                    continue
                if head == "env" and f.text in ("-u", "--unset") and i + 1 < len(fields):
                    u = fields[i + 1]
                    if isinstance(u, Known):
                        prefix_env[u.text] = Variable(None, None, False, f.span, None, "unset")
                    i += 2
                    continue
                if head == "env" and f.text.startswith("--unset="):
                    prefix_env[f.text.split("=", 1)[1]] = Variable(None, None, False, f.span, None, "unset")
                    i += 1
                    continue
                if head == "env" and f.text in ("-i", "--ignore-environment", "-"):
                    # `env -i`: the program starts from an empty environment plus the NAME=VALUE given
                    prefix_env.clear()
                    prefix_env[_CLEAR_ENV] = Variable(None, None, False, f.span, None, "unset")
                    i += 1
                    continue
                if head == "xargs" and f.text.startswith("-I"):
                    # `xargs -I{} cmd ... {}`: the placeholder is replaced by input at run time
                    token = f.text[2:] or (fields[i + 1].text if i + 1 < len(fields) and
                                           isinstance(fields[i + 1], Known) else None)
                    if token:
                        xargs_token = token
                    i += 1 if f.text[2:] else 2
                    continue
                if f.text.startswith("-") and len(f.text) > 1:
                    takes_value = f.text in value_opts or ("*" in value_opts and "=" not in f.text)
                    i += 2 if takes_value else 1
                    continue
                if head in ("nsys", "ncu") and i == 1 and f.text in ("profile", "launch"):
                    i += 1
                    continue
                break
            i += n_pos
            fields = fields[i:]
            if xargs_token:
                fields = [Unknown(f"replaced by xargs input ({xargs_token})", v.span)
                          if isinstance(v, Known) and xargs_token in v.text else v for v in fields]
                xargs_token = None
        if not fields:
            return [world]
        head = fields[0]
        name = head.text if isinstance(head, Known) else None
        if name is not None and world.expand_aliases and world.aliases and name in world.aliases \
                and self.alias_depth < 8:
            value, aspan = world.aliases[name]
            try:
                words = [Known(w, aspan) for w in shlex.split(value)]
            except ValueError:
                words = []
            if words:
                self.alias_depth += 1
                try:
                    return self.run_command(words + fields[1:], prefix_env, world, ps, span, node, status_out)
                finally:
                    self.alias_depth -= 1
        if name is not None and "/" not in name and name in world.functions and not prefix_env.get("__nofunc"):
            return self.call_function(name, fields[1:], prefix_env, world, span)
        container = L.split_container(fields)
        if container is not None:
            return self._run_in_container(fields, container, prefix_env, world, ps, span, node)
        launcher = L.launcher_name(fields)
        if launcher in _SUBMITTERS:
            return self._run_submitted(launcher, fields, prefix_env, world, ps, span, node)
        if launcher is not None:
            prefix_env = self._launcher_env(fields, prefix_env, world, span)
            inner = L.inner_shell_command(fields)
            if inner is not None:
                # `srun ... bash -c "torchrun ..."`: the launches inside run under srun
                self.launch_prefix.append((fields[:inner], list(fields), span))
                task_env = dict(prefix_env)
                if launcher == "srun":
                    for name in _SRUN_TASK_ENV:
                        if name not in world.vars:
                            task_env[name] = Variable(Unknown(f"${name} is set by srun for each task"),
                                                      exported=True, source="cluster")
                before = len(self.launches)
                try:
                    self._run_shell(fields[inner:], task_env, world, ps, span, node)
                finally:
                    self.launch_prefix.pop()
                if len(self.launches) == before:
                    # nothing we know runs inside: the launcher still starts the command it is given
                    self.record_launch(fields, prefix_env, world, span)
                if exec_replaces:
                    world.flow = "exit"
                return [world]
            self.record_launch(fields, prefix_env, world, span)
            if exec_replaces:
                world.flow = "exit"
            return [world]
        base = os.path.basename(name) if name else None
        if base in ("bash", "sh", "zsh", "dash"):
            return self._run_shell(fields, prefix_env, world, ps, span, node)
        handler = _BUILTINS.get(name) if name else None
        if handler is not None:
            return handler(self, fields, world, ps, span, status_out)
        self._note_unknown_command(fields, span)
        return [world]

    def _note_unknown_command(self, fields, span) -> None:
        """A command packlint does not know that looks like it starts training (a `*.py` program or
        Megatron-style flags among its words): named by PK903 when the file has no launch at all."""
        if len(self.unknown_launchers) >= 8:
            return
        head = L.basename(fields[0])
        if head is None or head in _NOT_LAUNCHERS:
            return
        why = None
        for f in fields[1:]:
            if isinstance(f, Known):
                if f.text.endswith(".py") and not f.text.startswith("-"):
                    why = f"runs `{f.text}`"
                    break
                if f.text.split("=")[0] in _TRAINING_FLAGS:
                    why = f"is given `{f.text.split('=')[0]}`"
                    break
        if why is not None:
            self.unknown_launchers.append((head, why, span))

    def _run_in_container(self, fields, container, prefix_env, world, ps, span, node) -> list[World]:
        """`docker run -e A=1 IMAGE torchrun ...`: the command runs with the container's environment
        (for docker/podman only the `-e` variables: the script's exports do not reach it)."""
        spec, options, k = container
        inside = world.fork()
        host = {n: v for n, v in world.vars.items() if v.exported and v.items is None and v.value is not None}
        host.update({n: v for n, v in prefix_env.items() if v.source != "unset"})
        clean = any(o.name in spec.clean_env_flags for o in options)
        env: dict[str, Variable] = dict(host) if spec.inherits_env and not clean else {}
        for opt in options:
            if opt.name not in spec.env_options or not opt.args:
                continue
            arg = opt.args[0]
            if not isinstance(arg, Known):
                continue
            name, eq, value = arg.text.partition("=")
            if eq:
                env[name] = Variable(Known(value, arg.span), None, True, arg.span, arg.span, "prefix")
            elif name in host:
                env[name] = host[name]  # `-e NAME`: passed through from the host environment
        inside.vars = env
        inside.functions = {}
        inside.locals_stack = []
        self.context.append(f"inside `{L.basename(fields[0])} {fields[1].text}` at {span.short()}")
        try:
            self.run_command(fields[k:], {}, inside, ps, span, node)
        finally:
            self.context.pop()
        return [world]

    def _launcher_env(self, fields, prefix_env, world, span) -> dict[str, Variable]:
        """`srun --export=NONE` drops the environment, `--export=ALL,X=1` adds X."""
        if L.basename(fields[0]) != "srun":
            return prefix_env
        parts = L.split_launch(fields)
        export = L.export_option([o for owner, o in parts.launcher_options if owner == "srun"])
        if export is None:
            return prefix_env
        inherit, added = export
        env = dict(prefix_env)
        if not inherit:
            env = {_CLEAR_ENV: Variable(None, None, False, span, None, "unset")}
        for name, value in added.items():
            if value is None:
                old = prefix_env.get(name) or world.vars.get(name)
                if old is not None and old.exported and old.value is not None and old.items is None:
                    env[name] = old
            else:
                env[name] = Variable(value, None, True, value.span, value.span, "prefix")
        return env

    def _submitted_world(self, world: World, prefix_env, *, remote: bool, export=None) -> World:
        """The shell a submitted command runs in: a fresh process. A remote one (ssh, pdsh, ray) starts
        from that machine's environment, which the script cannot see: nothing of ours reaches it."""
        child = world.fork()
        inherit = not remote and (export is None or export[0])
        env = {k: v for k, v in world.vars.items() if v.exported and v.items is None} if inherit else {}
        if inherit:
            env.update({k: v for k, v in prefix_env.items() if v.source != "unset"})
        for name, value in (export[1].items() if export else ()):
            if value is None:
                old = prefix_env.get(name) or world.vars.get(name)
                if old is not None and old.exported:
                    env[name] = old
            else:
                env[name] = Variable(value, None, True, value.span, value.span, "prefix")
        child.vars = env
        child.functions = {}
        child.locals_stack = []
        child.positional = []
        child.flow = None
        return child

    def _run_submitted(self, launcher, fields, prefix_env, world, ps, span, node) -> list[World]:
        """Commands that hand a command to another shell: `sbatch --wrap`, a job script (`sbatch job.sh`,
        `sbatch <<EOF`), `ssh HOST CMD`, `pdsh -w HOSTS CMD`, `ray job submit -- CMD`. What that shell
        launches is analysed with the environment it gets (see docs/launch-forms.md)."""
        spec = L.LAUNCHERS[launcher]
        self.context.append(f"run by `{launcher}` at {span.short()}")
        try:
            if launcher == "ray job submit":
                _, k, _ = L._split_options(spec, fields, spec.words)
                if k < len(fields):
                    self.run_command(list(fields[k:]), {}, self._submitted_world(world, prefix_env, remote=True),
                                     ps, span, node)
                return [world]
            string = L.command_string(fields)
            if string is not None:
                spec, _, words = string
                export = None
                if launcher == "sbatch":
                    opts, _, _ = L._split_options(spec, fields, 1)
                    export = L.export_option(opts)
                child = self._submitted_world(world, prefix_env, remote=spec.remote, export=export)
                code = self.code_text(words, child)
                if code is None:
                    self.diag("info", "unanalysed", f"the command `{launcher}` runs is unknown; not analysed", span)
                    return [world]
                cspan = code.span or span
                src = SourceFile(path=ps.source.path, data=code.text.encode("utf-8", "surrogateescape"),
                                 line_base=cspan.line - 1, column_base=cspan.column)
                self._exec_source(src, child, None)
                return [world]
            job = L.job_script(fields)
            if job is None:
                return [world]
            opts, k = job
            export = L.export_option(opts)
            child = self._submitted_world(world, prefix_env, remote=False, export=export)
            if k < len(fields):
                target = fields[k]
                path = self.resolve_path(target.text, world) if isinstance(target, Known) else None
                if path is None:
                    return [world]
                try:
                    sf = load(path, display=self._display(path))
                except PacklintError as exc:
                    self.diag("warning", "source-unreadable", exc.one_line(), span)
                    return [world]
                child.positional = list(fields[k + 1:])
                self._job_env(child, sf.data)
                self._exec_source(sf, child, path)
                return [world]
            src = self._heredoc_source(node, world, ps)
            if src is not None:
                self._job_env(child, src.data)
                self._exec_source(src, child, None)
            return [world]
        finally:
            self.context.pop()

    @staticmethod
    def _job_env(child: World, data: bytes) -> None:
        """A job script's `#SBATCH` headers: Slurm sets the job's node/task/GPU counts from them."""
        for name, value in L.sbatch_header_env(data.decode("utf-8", "replace")).items():
            if name not in child.vars:
                child.vars[name] = Variable(Known(value), exported=True, source="cluster")

    def _heredoc_source(self, node, world, ps) -> SourceFile | None:
        """The here-document fed to a command (`sbatch <<EOF ... EOF`), expanded as bash does (not
        when the delimiter is quoted), as a script of its own at its place in the file."""
        parent = node.parent if node is not None else None
        if parent is None or parent.type != "redirected_statement":
            return None
        redirect = next((c for c in parent.children if c.type == "heredoc_redirect"), None)
        if redirect is None:
            return None
        body = next((c for c in redirect.named_children if c.type == "heredoc_body"), None)
        start = next((c for c in redirect.children if c.type == "heredoc_start"), None)
        if body is None:
            return None
        bspan = ps.source.span(body)
        raw = ps.source.data[body.start_byte:body.end_byte]
        if start is not None and any(q in start.text for q in (b"'", b'"', b"\\")):
            text = raw.decode("utf-8", "surrogateescape")
        else:
            value = self.expand_joined(body, world, ps)
            code = self.code_text([value], world) if not isinstance(value, Known) else value
            if code is None:
                return None
            text = code.text
        return SourceFile(path=ps.source.path, data=text.encode("utf-8", "surrogateescape"),
                          line_base=bspan.line - 1, column_base=bspan.column)

    def call_function(self, name, args, prefix_env, world, span) -> list[World]:
        body, fps = world.functions[name]
        if self.call_depth >= MAX_CALL_DEPTH:
            self.diag("warning", "recursion", f"function `{name}` calls nest deeper than {MAX_CALL_DEPTH}; "
                      "not followed further", span)
            return [world]
        saved_positional = world.positional
        world.positional = list(args)
        saved_prefix = {}
        for k, v in prefix_env.items():
            saved_prefix[k] = world.vars.get(k)
            world.vars[k] = v
        world.locals_stack.append({})
        self.call_depth += 1
        self.context.append(f"{name}() called at {span.short()}")
        try:
            out = self.exec_block(self._statements(body) if body.type == "compound_statement" else [body],
                                  [world], fps)
        finally:
            self.call_depth -= 1
            self.context.pop()
        for w in out:
            frame = w.locals_stack.pop() if w.locals_stack else {}
            for k, old in frame.items():
                if old is None:
                    w.vars.pop(k, None)
                else:
                    w.vars[k] = old
            for k, old in saved_prefix.items():
                if old is None:
                    w.vars.pop(k, None)
                else:
                    w.vars[k] = old
            w.positional = saved_positional
            if w.flow == "return":
                w.flow = None
        return self._merge(out)

    def _run_shell(self, fields, prefix_env, world, ps, span, node) -> list[World]:
        """`bash -c '...'` is analysed as a script of its own; `bash other.sh args` follows the file."""
        args = fields[1:]
        i = 0
        while i < len(args) and isinstance(args[i], Known) and args[i].text.startswith("-") \
                and not L.is_shell_c(args[i]):
            i += 1
        child = world.fork()
        child.vars = {k: v for k, v in world.vars.items() if v.exported}
        child.vars.update(prefix_env)
        child.functions = {n: f for n, f in world.functions.items() if n in world.exported_functions}
        child.locals_stack = []
        if i < len(args) and L.is_shell_c(args[i]):
            if i + 1 >= len(args):
                return [world]
            code = self.code_text([args[i + 1]], child)
            if code is None:
                self.diag("info", "unanalysed", f"`{L.basename(fields[0])} -c` with an unknown command "
                          f"string ({args[i + 1].reason}) is not analysed", span)
                return [world]
            child.positional = list(args[i + 3:])
            # `bash -c CODE NAME ARGS`: NAME becomes $0 (bash's own name when absent)
            name_arg = args[i + 2] if len(args) > i + 2 else fields[0]
            child.script = name_arg.text if isinstance(name_arg, Known) else "bash"
            cspan = code.span or span
            src = SourceFile(path=ps.source.path, data=code.text.encode("utf-8", "surrogateescape"),
                             line_base=cspan.line - 1, column_base=cspan.column)
            self._exec_source(src, child, None)
            return [world]
        if i < len(args):
            target = args[i]
            if isinstance(target, Known):
                path = self.resolve_path(target.text, world)
                if path is not None:
                    child.positional = list(args[i + 1:])
                    try:
                        sf = load(path, display=self._display(path))
                    except PacklintError as exc:
                        self.diag("warning", "source-unreadable", exc.one_line(), span)
                        return [world]
                    self._exec_source(sf, child, path)
        return [world]

    def code_text(self, values: list[Value], world: World) -> Known | None:
        """The text of code given as a string (`bash -c`, `eval`), words joined by spaces. A partly
        unknown string keeps its known parts; each unknown part becomes a variable of `world` that
        holds an unknown value, so the code around it is still analysed. None: nothing is known."""
        text: list[str] = []
        known_any = False
        for n, v in enumerate(values):
            if n:
                text.append(" ")
            if isinstance(v, Known):
                text.append(v.text)
                known_any = True
                continue
            if not v.parts:
                return None
            for piece, reason in v.parts:
                if piece is None:
                    name = f"{_UNKNOWN_PART}{len(world.vars)}_{len(text)}"
                    world.vars[name] = Variable(Unknown(reason, v.span))
                    text.append("${" + name + "}")
                else:
                    text.append(piece)
                    known_any = known_any or bool(piece.strip())
        if not known_any:
            return None
        first = values[0]
        return Known("".join(text), first.span)

    def _exec_source(self, src: SourceFile, world: World, real_path: str | None) -> list[World]:
        ps = parse(src)
        for problem in ps.problems:
            self.diag(problem.severity, problem.code, problem.message, problem.span)
        if real_path:
            self.source_stack.append(os.path.realpath(real_path))
        try:
            return self.exec_block(_runnable(ps, self._statements(ps.root)), [world], ps)
        finally:
            if real_path:
                self.source_stack.pop()

    def _display(self, path: str) -> str:
        try:
            rel = os.path.relpath(path, self.cwd)
        except ValueError:
            return path
        return path if rel.startswith("..") else rel

    def resolve_path(self, text: str, world: World) -> str | None:
        if text.startswith("~"):
            return None
        candidates = []
        if os.path.isabs(text):
            candidates.append(text)
        else:
            if self.source_stack:
                candidates.append(os.path.join(os.path.dirname(self.source_stack[0]), text))
                candidates.append(os.path.join(os.path.dirname(self.source_stack[-1]), text))
            candidates.append(os.path.join(self.cwd, text))
        for c in candidates:
            # not only regular files: `source /dev/zero` or a FIFO is then refused by load() with its reason
            if os.path.exists(c) and not os.path.isdir(c):
                return os.path.normpath(c)
        return None

    def source_file(self, fields, world, ps, span) -> list[World]:
        if len(fields) < 2:
            return [world]
        target = fields[1]
        text = target.text if isinstance(target, Known) else None
        guessed = False
        if text is None and isinstance(target, Unknown) and target.reason.startswith("partly unknown:"):
            text = target.reason.split("tail=", 1)[-1] if "tail=" in target.reason else None
            guessed = text is not None
        if text is None:
            self.diag("warning", "source-unknown",
                      f"cannot follow `source`: the path is unknown ({target.reason}); settings it makes "
                      "are not seen", span)
            return [world]
        path = self.resolve_path(text, world)
        if path is None:
            self.diag("warning", "source-not-found",
                      f"sourced file not found: {text} (looked beside the script and in the working "
                      "directory); settings it makes are not seen", span)
            return [world]
        real = os.path.realpath(path)
        if real in self.source_stack:
            self.diag("info", "source-cycle", f"`source {text}` would include itself again "
                      "(cycle); not followed", span)
            return [world]
        if len(self.source_stack) >= MAX_SOURCE_DEPTH:
            self.diag("warning", "source-depth", f"sourced files nest deeper than {MAX_SOURCE_DEPTH}; "
                      f"{text} not followed", span)
            return [world]
        if guessed:
            self.diag("info", "source-guessed", f"sourced path partly unknown; assumed it is {text} "
                      "beside the script", span)
        try:
            sf = load(path, display=self._display(path))
        except PacklintError as exc:
            self.diag("warning", "source-unreadable", exc.one_line(), span)
            return [world]
        saved = world.positional
        if len(fields) > 2:
            world.positional = list(fields[2:])
        saved_frames = len(world.locals_stack)
        self.source_calls += 1
        try:
            out = self._exec_source(sf, world, path)
        finally:
            self.source_calls -= 1
        for w in out:
            if len(fields) > 2:
                w.positional = saved
            if w.flow == "return" and len(w.locals_stack) == saved_frames:
                w.flow = None
        return self._merge(out)

    def record_launch(self, fields, prefix_env, world, span) -> None:
        # bash exports scalars only: arrays and names marked for export but never set stay behind
        env = {k: v for k, v in world.vars.items()
               if v.exported and v.items is None and v.value is not None}
        unexported = {k: v for k, v in world.vars.items()
                      if (not v.exported or v.items is not None) and k not in prefix_env
                      and not k.startswith(_UNKNOWN_PART)}
        if _CLEAR_ENV in prefix_env:
            env = {}
        for k, v in prefix_env.items():
            if v.source == "unset":
                env.pop(k, None)
            else:
                env[k] = v
        if L.basename(fields[0]) in ("mpirun", "mpiexec"):
            # `mpirun -x NAME=VALUE` sets NAME for the ranks it starts
            for opt, val in zip(fields, fields[1:]):
                if isinstance(opt, Known) and opt.text == "-x" and isinstance(val, Known) and "=" in val.text:
                    name, _, text = val.text.partition("=")
                    env[name] = Variable(Known(text, val.span), None, True, val.span, val.span, "prefix")
        command = None
        if self.launch_prefix:
            # the process runs under the outer launcher(s); bash itself executes the outer command
            fields = [f for prefix, _, _ in self.launch_prefix for f in prefix] + list(fields)
            _, command, span = self.launch_prefix[0]
        self.launches.append(LaunchInstance(span, tuple(self.context), self.seq, list(fields), env,
                                            unexported, world.when, command))

    # ------------------------------------------------------------------ assignment
    def _assignment_value(self, node, world, ps, glue_tail=None) -> tuple[str | None, Variable]:
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        span = ps.source.span(node)
        if name_node is None:
            return None, Variable()
        name = name_node.text.decode("utf-8", "replace")
        if name_node.type == "subscript":
            return None, Variable()
        appending = any(c.type == "+=" for c in node.children)
        old = world.vars.get(name)
        if value_node is not None and value_node.type == "array":
            items: list[Value] = []
            for group in _glued_groups([c for c in value_node.named_children if c.type != "comment"]):
                items.extend(self.expand_group(group, world, ps))
            if appending and old is not None:
                prev = old.items if old.items is not None else ([old.value] if old.value is not None else [])
                items = list(prev) + items
            return name, Variable(None, items, old.exported if old else False, span,
                                  old.exported_at if old else None)
        if glue_tail is not None:
            value = _join(self.group_pieces([value_node, glue_tail], world, ps),
                          ps.source.span_of_points(value_node.start_point, glue_tail.end_point))
        else:
            value = self.expand_joined(value_node, world, ps) if value_node is not None else Known("", span)
        if old is not None and old.integer and old.items is None:
            # `declare -i M; M=2+3; M+=1`: the value is evaluated as arithmetic (and += adds)
            r = _to_int(value.text, self, world, ps) if isinstance(value, Known) else Unknown(value.reason)
            if appending and not isinstance(r, Unknown):
                cur = _to_int(old.value.text, self, world, ps) if isinstance(old.value, Known) else \
                    Unknown("unknown value")
                r = cur if isinstance(cur, Unknown) else cur + r
            var = Variable(Known(str(r), span) if not isinstance(r, Unknown) else Unknown(r.reason, span), None,
                           old.exported, span, old.exported_at)
            var.integer = True
            return name, var
        if appending and old is not None:
            if old.items is not None:
                items = list(old.items)
                if items:
                    items[0] = _concat(items[0], value, span)
                else:
                    items = [value]
                return name, Variable(None, items, old.exported, span, old.exported_at)
            value = _concat(old.value or Known(""), value, span)
        if isinstance(value, Known) and value.span is None:
            value = Known(value.text, span)
        return name, Variable(value, None, old.exported if old else False, span,
                              old.exported_at if old else None)

    def assign(self, node, world, ps, *, export=False, local=False, force_array=False,
               glue_tail=None) -> str | None:
        name_node = node.child_by_field_name("name")
        if name_node is not None and name_node.type == "subscript":
            self._assign_subscript(node, name_node, world, ps)
            return None
        name, var = self._assignment_value(node, world, ps, glue_tail=glue_tail)
        if name is None:
            return None
        old = world.vars.get(name)
        if old is not None and old.ref is not None:  # through a nameref: the named variable is set
            name = old.ref
            old = world.vars.get(name)
        if old is not None and old.readonly:
            self.diag("warning", "readonly", f"assignment to readonly variable {name} is ignored by bash",
                      var.assigned_at)
            return name
        if force_array and var.items is None:
            var = Variable(None, [] if var.value is None else [var.value], var.exported, var.assigned_at,
                           var.exported_at)
        if old is not None and old.source in ("caller", "cluster") and not export:
            var.exported = True  # a variable from the environment stays exported
        if export:
            var.exported = True
            var.exported_at = var.assigned_at
        if local and world.locals_stack:
            frame = world.locals_stack[-1]
            if name not in frame:
                frame[name] = old
        self.set_var(world, name, var, var.assigned_at)
        return name

    def set_var(self, world, name, var: Variable, span) -> None:
        if world.allexport and not var.exported and var.source != "unset":
            var.exported = True  # `set -a`: every assignment exports
            var.exported_at = var.exported_at or span
        if var.exported:
            self.export_events.append((self.seq, name, var.exported_at or span, var))
        world.vars[name] = var

    def _assign_subscript(self, node, sub, world, ps) -> None:
        name = sub.child_by_field_name("name")
        index = sub.child_by_field_name("index")
        value_node = node.child_by_field_name("value")
        if name is None:
            return
        vname = name.text.decode()
        span = ps.source.span(node)
        value = self.expand_joined(value_node, world, ps) if value_node is not None else Known("", span)
        old = world.vars.get(vname)
        if old is not None and old.assoc is not None:  # C[key]=v / C[key]+=v
            key = self.expand_joined(index, world, ps) if index is not None else Known("")
            new = old.copy()
            if not isinstance(key, Known):
                new.assoc = {}
            else:
                if any(c.type == "+=" for c in node.children) and key.text in new.assoc:
                    value = _concat(new.assoc[key.text], value, span)
                new.assoc[key.text] = value
            world.vars[vname] = new
            return
        idx = self.arith(index, world, ps) if index is not None else Unknown("no index")
        items = list(old.items) if old is not None and old.items is not None else (
            [old.value] if old is not None and old.value is not None else [])
        if isinstance(idx, Unknown) or idx < 0 or idx > 4096:
            items.append(Unknown(f"array element at an unknown index ({_snippet(index)})", span))
        else:
            while len(items) <= idx:
                items.append(None)  # a hole: bash arrays are sparse
            items[idx] = value
        world.vars[vname] = Variable(None, items, old.exported if old else False, span,
                                     old.exported_at if old else None)

    # ------------------------------------------------------------------ expansion
    def expand_fields(self, node, world, ps) -> list[Value]:
        """A word as bash turns it into arguments: expansions, quote removal, word splitting."""
        pieces = self.pieces(node, world, ps, quoted=False)
        if ps.source.crlf:
            _crlf_tail(node, ps, pieces)
        return _assemble(pieces, ps.source.span(node), _ifs(world))

    def group_pieces(self, group: list, world, ps) -> list[Piece]:
        """Pieces of a word tree-sitter-bash split in two (`$D/$T.log` -> `$D/$` + `T.log`): the
        trailing `$` and the next word's leading name are put back together as `$T`."""
        pieces: list[Piece] = []
        for k, node in enumerate(group):
            if k < len(group) - 1:
                for c in node.children[:-1]:
                    pieces.extend(self.pieces(c, world, ps, quoted=False))
                continue
            if k == 0:
                return self.pieces(node, world, ps, quoted=False)
            text = node.text.decode("utf-8", "replace")
            m = re.match(r"[A-Za-z_]\w*|[0-9@*#?$!-]", text)
            span = ps.source.span(node)
            if m is None:
                pieces.append(Piece("$" + _unescape_unquoted(text), span=span))
                continue
            pieces.extend(self._param(m.group(0), None, world, False, span, ps))
            rest = text[m.end():]
            if "$" in rest or "`" in rest:
                pieces.append(Piece(None, span=span, reason=f"could not analyse `{text}`"))
            elif rest:
                pieces.append(Piece(_unescape_unquoted(rest), span=span))
        return pieces

    def expand_group(self, group: list, world, ps) -> list[Value]:
        if len(group) == 1:
            return self.expand_fields(group[0], world, ps)
        span = ps.source.span_of_points(group[0].start_point, group[-1].end_point)
        return _assemble(self.group_pieces(group, world, ps), span, _ifs(world))

    def expand_joined(self, node, world, ps) -> Value:
        """A word where no splitting happens (assignment values, `[[ ]]` operands, case subjects)."""
        if node is None:
            return Known("")
        pieces = self.pieces(node, world, ps, quoted=False)
        if ps.source.crlf:
            _crlf_tail(node, ps, pieces)
        return _join(pieces, ps.source.span(node))

    def expand_pattern(self, node, world, ps) -> str | None:
        """A pattern (`case` arm, `[[ == ]]` right side): quoted parts match literally."""
        out = []
        for p in self.pieces(node, world, ps, quoted=False, pattern=True):
            if p.text is None:
                return None
            out.append(p.text)
        return "".join(out)

    def pieces(self, node, world, ps, quoted: bool, pattern: bool = False) -> list[Piece]:
        self.work += 1
        if self.error_cut is not None and node.end_byte > self.error_cut:
            return [Piece(None, span=ps.source.span(node), reason="could not analyse this part of the line")]
        self.depth += 1
        try:
            if self.depth > MAX_NESTING:
                return [Piece(None, span=ps.source.span(node), reason="nesting too deep to analyse")]
            out = self._pieces(node, world, ps, quoted, pattern)
        finally:
            self.depth -= 1
        # Exact or unknown: a parser placeholder (`$__PLGAP___`, `$__PX3___`) that some grammar path
        # reads as literal text (`${6:-$__PLGAP___}` gives a `word`) is never passed on as a value.
        for i, p in enumerate(out):
            if p.text is not None and ("$" + GAP_VARIABLE in p.text or "$" + RAW_EXPANSION in p.text):
                out[i] = Piece(None, p.split, p.span, "could not analyse this part (bash accepts it; "
                               "packlint's parser does not)", p.boundary, p.vanish, p.origin)
        return out

    def _pieces(self, node, world, ps, quoted, pattern) -> list[Piece]:
        t = node.type
        span = ps.source.span(node)
        if t in ("word", "number", "command_name", "extglob_pattern", "regex", "special_variable_name",
                 "variable_name", "test_operator", "string_content", "heredoc_content"):
            if t == "command_name":
                return [p for c in node.named_children for p in self.pieces(c, world, ps, quoted, pattern)]
            text = node.text.decode("utf-8", "replace")
            if t == "word" and not quoted:
                tilde = re.match(r"(?:[A-Za-z_]\w*=)?~(?=/|$)", text)  # `~/x`, and `name=~/x` as bash does
                if tilde:
                    home = world.vars.get("HOME")
                    if home is None or not isinstance(home.scalar(), Known):
                        return [Piece(None, span=span, reason="~ (the home directory at run time)")]
                    text = text[:tilde.end() - 1] + home.scalar().text + text[tilde.end():]
                if pattern:
                    return [Piece(_unescape_pattern(text), span=span)]
                if world.nullglob and _GLOB_CHARS.search(text):
                    return [Piece(None, span=span, split=True,
                                  reason=f"glob {text!r} with nullglob: the files it matches at run time")]
                if "{" in text and "," in text and _BRACE_LIST.search(text):
                    alternatives = _brace_expand(text)
                    parent = node.parent
                    if len(alternatives) > 1 and (parent is None or parent.type != "concatenation"):
                        return [Piece(_unescape_unquoted(a), span=span, boundary=k > 0)
                                for k, a in enumerate(alternatives)]
                text = _unescape_unquoted(text)
            return [Piece(text, span=span)]
        if t == "concatenation":
            if (not quoted and not pattern and "{" in node.text.decode("utf-8", "replace")
                    and all(c.type == "word" for c in node.children)):
                # tree-sitter splits `{train,val}.json` into words; bash brace-expands the whole word
                text = node.text.decode("utf-8", "replace")
                alternatives = _brace_expand(text) if _BRACE_LIST.search(text) else [text]
                parent = node.parent
                if len(alternatives) > 1 and (parent is None or parent.type != "concatenation"):
                    return [Piece(_unescape_unquoted(a), span=span, boundary=k > 0)
                            for k, a in enumerate(alternatives)]
            return [p for c in node.children for p in self.pieces(c, world, ps, quoted, pattern)]
        if t == "raw_string":
            text = node.text.decode("utf-8", "replace")[1:-1]
            return [Piece(_glob_escape(text) if pattern else text, span=span)]
        if t == "ansi_c_string":
            raw = node.text.decode("utf-8", "replace")[2:-1]
            try:
                text = raw.encode("latin-1", "backslashreplace").decode("unicode_escape")
            except (UnicodeDecodeError, UnicodeEncodeError):
                text = raw
            return [Piece(_glob_escape(text) if pattern else text, span=span)]
        if t in ("string", "translated_string"):
            return self._string_pieces(node, world, ps, pattern)
        if t == "simple_expansion" or t == "expansion":
            out = self._expansion(node, world, ps, quoted)
            if pattern and quoted:
                return [Piece(_glob_escape(p.text), p.split, p.span, p.reason, p.boundary, p.vanish)
                        if p.text is not None else p for p in out]
            return out
        if t == "command_substitution":
            return [self._command_substitution(node, world, ps, quoted)]
        if t == "process_substitution":
            return [Piece(None, span=span, reason=f"process substitution {_snippet(node)}")]
        if t == "arithmetic_expansion":
            v = None
            for c in node.named_children:
                v = self.arith(c, world, ps)
            if v is None or isinstance(v, Unknown):
                reason = v.reason if isinstance(v, Unknown) else "empty arithmetic"
                return [Piece(None, span=span, reason=f"arithmetic {_snippet(node)}: {reason}")]
            return [Piece(str(v), split=not quoted, span=span)]
        if t == "brace_expression":
            return [Piece(None, span=span, reason=f"brace expansion {_snippet(node)}")]
        if t in ("file_redirect", "heredoc_redirect", "herestring_redirect", "comment"):
            return []
        text = node.text.decode("utf-8", "replace")
        return [Piece(text, span=span)]

    def _string_pieces(self, node, world, ps, pattern) -> list[Piece]:
        """Double quotes: literal gaps between the expansions keep their text (escapes removed)."""
        out: list[Piece] = []
        data = ps.source.data
        kids = [c for c in node.children if c.is_named]
        start = node.start_byte + (1 if node.type == "string" else 2)
        end = node.end_byte - 1
        pos = start
        saw_any = False
        for c in kids:
            if c.start_byte > pos:
                gap = data[pos:c.start_byte].decode("utf-8", "replace")
                out.append(Piece(_unescape_dquote(gap), span=ps.source.span(node)))
            if c.type == "string_content":
                text = _unescape_dquote(c.text.decode("utf-8", "replace"))
                out.append(Piece(_glob_escape(text) if pattern else text, span=ps.source.span(c)))
            else:
                # tree-sitter-bash puts the blanks before `${` inside the expansion's first token
                # ("a ${D}" -> `a` + ` ${D}`): inside quotes they are text
                lead = len(c.text) - len(c.text.lstrip())
                if lead:
                    out.append(Piece(data[c.start_byte:c.start_byte + lead].decode("utf-8", "replace"),
                                     span=ps.source.span(c)))
                sub = self.pieces(c, world, ps, quoted=True, pattern=pattern)
                out.extend(sub)
            pos = c.end_byte
            saw_any = True
        if end > pos:
            gap = data[pos:end].decode("utf-8", "replace")
            out.append(Piece(_unescape_dquote(gap), span=ps.source.span(node)))
        if not out and not saw_any:
            out.append(Piece("", span=ps.source.span(node)))
        if not any(p.vanish or p.boundary for p in out):
            # "": an empty quoted string still makes a field
            out.insert(0, Piece("", span=ps.source.span(node)))
        return out

    def _command_substitution(self, node, world, ps, quoted) -> Piece:
        span = ps.source.span(node)
        text = _snippet(node)
        inner = [c for c in node.named_children if c.type != "comment"]
        # $(dirname "$0") / $(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd): the script's directory
        if _SCRIPT_DIR.match(text.replace("\n", " ")):
            script = self.source_stack[-1] if self.source_stack else None
            if script:
                absolute = "pwd" in text
                d = os.path.dirname(script) if absolute else os.path.dirname(world.script) or "."
                return Piece(d, split=not quoted, span=span)
        # $(echo words): the words joined by spaces
        if len(inner) == 1 and inner[0].type == "command":
            cmd = inner[0]
            name = cmd.child_by_field_name("name")
            if name is not None and name.text == b"echo":
                args = []
                for i, c in enumerate(cmd.children):
                    if cmd.field_name_for_child(i) == "argument":
                        args.extend(self.expand_fields(c, world, ps))
                if args and isinstance(args[0], Known) and args[0].text.startswith("-"):
                    return Piece(None, span=span, reason=f"command substitution {text}")
                if all(isinstance(a, Known) for a in args):
                    return Piece(" ".join(a.text for a in args), split=not quoted, span=span)
        return Piece(None, span=span, reason=f"command substitution {text}", split=not quoted)

    def lookup(self, world, name: str) -> Variable | None:
        return world.vars.get(name)

    def _expansion(self, node, world, ps, quoted) -> list[Piece]:
        span = ps.source.span(node)
        t = node.type
        kids = node.children
        if t == "simple_expansion":
            target = node.named_children[0] if node.named_children else None
            if target is None:
                return [Piece("$", span=span)]
            name = target.text.decode("utf-8", "replace")
            if name.startswith(RAW_EXPANSION):
                return self._raw_expansion(name, world, ps, quoted, span)
            return self._param(name, None, world, quoted, span)
        # ${...}
        inner = kids[1:-1]
        if not inner:
            return [Piece(None, span=span, reason="bad substitution")]
        # ${#X} / ${#A[@]}
        if inner[0].type == "#" and len(inner) == 2:
            target = inner[1]
            if target.type == "subscript":
                var = self.lookup(world, target.child_by_field_name("name").text.decode())
                idx = target.child_by_field_name("index")
                if idx is not None and idx.text in (b"@", b"*"):
                    items = [] if var is None else (list(var.assoc.values()) if var.assoc is not None else
                                                    var.items if var.items is not None else [var.value])
                    split = next((i for i in items if isinstance(i, Unknown) and i.may_split), None)
                    if split is not None:  # `arr=($(cmd))`: as many items as the output has words
                        return [Piece(None, span=span, reason=f"the array's length depends on {split.reason}",
                                      split=not quoted)]
                    n = sum(1 for i in items if i is not None)
                    return [Piece(str(n), split=not quoted, span=span)]
            name = target.text.decode("utf-8", "replace")
            if name in ("@", "*"):
                return [Piece(str(len(world.positional)), split=not quoted, span=span)]
            v = self._scalar(name, world, span)
            if not isinstance(v, Known):
                return [Piece(None, span=span, reason=v.reason)]
            return [Piece(str(len(v.text)), split=not quoted, span=span)]
        if inner[0].type == "!":
            return [Piece(None, span=span, reason=f"indirect expansion {_snippet(node)}")]
        target = inner[0]
        op_nodes = inner[1:]
        subscript = None
        if target.type == "subscript":
            name = target.child_by_field_name("name").text.decode("utf-8", "replace")
            subscript = target.child_by_field_name("index")
        else:
            name = target.text.decode("utf-8", "replace")
        if not op_nodes:
            return self._param(name, subscript, world, quoted, span, ps)
        op = op_nodes[0].type
        operands = op_nodes[1:]
        operand_node = operands[0] if operands else None
        if op in (":-", "-", ":=", "=", ":+", "+", ":?", "?"):
            is_set, value_pieces = self._param_state(name, subscript, world, quoted, span, ps)
            colon = op.startswith(":")
            if is_set is None:
                # unknown whether set/empty: the value is unknown unless both sides agree
                return [Piece(None, span=span, reason=f"{_snippet(node)}: unknown whether ${name} is set",
                              split=not quoted)]
            empty = is_set and _pieces_empty(value_pieces)
            use_default = (not is_set) or (colon and empty)
            if op in (":+", "+"):
                if use_default:
                    return []
                return self._operand_pieces(operands, world, ps, quoted)
            if op in (":?", "?"):
                return value_pieces if not use_default else [
                    Piece(None, span=span, reason=f"{_snippet(node)}: would abort the script")]
            if not use_default:
                return value_pieces
            default = self._operand_pieces(operands, world, ps, quoted)
            if op in (":=", "="):
                joined = _join(default, span)
                self.set_var(world, name, Variable(joined, None, (world.vars.get(name) or Variable()).exported,
                                                   span), span)
            return default
        if op == ":" and (name in ("@", "*") or (subscript is not None and subscript.text in (b"@", b"*"))):
            # ${@:2}, ${A[@]:1:2}: slices of the argument list / of an array
            nums = [o for o in operands if o.type != ":"]
            off = self.arith(nums[0], world, ps) if nums else 0
            ln = self.arith(nums[1], world, ps) if len(nums) > 1 else None
            if isinstance(off, Unknown) or isinstance(ln, Unknown):
                return [Piece(None, span=span, reason=f"{_snippet(node)}: unknown offset", split=not quoted)]
            if name in ("@", "*"):
                items = [Known(world.script)] + world.positional
            else:
                var = world.vars.get(name)
                items = [] if var is None else (var.items if var.items is not None else
                                                [var.value] if var.value is not None else [])
            items = items[off:] if off >= 0 else items[max(len(items) + off, 0):]
            if ln is not None:
                items = items[:ln] if ln >= 0 else items[:ln]
            star = name == "*" or (subscript is not None and subscript.text == b"*")
            return _items_pieces(items, quoted, span, star=star, sep=_ifs_sep(world))
        # string operations need the value
        value = self._scalar_sub(name, subscript, world, span, ps)
        if not isinstance(value, Known):
            return [Piece(None, span=span, reason=value.reason, split=not quoted)]
        text = value.text
        arg = self.expand_pattern(operand_node, world, ps) if operand_node is not None else ""
        if op in ("#", "##", "%", "%%"):
            if arg is None:
                return [Piece(None, span=span, reason=f"{_snippet(node)}: unknown pattern", split=not quoted)]
            return [Piece(_remove_affix(text, arg, op), split=not quoted, span=value.span or span)]
        if op in ("/", "//", "/#", "/%"):
            repl_node = operands[2] if len(operands) >= 3 else (operands[1] if len(operands) == 2 and
                                                                 operands[1].type != "/" else None)
            # operands may be [pattern, '/', replacement]
            repl = ""
            rest = [o for o in operands[1:] if o.type != "/"]
            if rest:
                rv = self.expand_joined(rest[0], world, ps)
                if not isinstance(rv, Known):
                    return [Piece(None, span=span, reason=rv.reason, split=not quoted)]
                repl = rv.text
            del repl_node
            if arg is None:
                return [Piece(None, span=span, reason=f"{_snippet(node)}: unknown pattern", split=not quoted)]
            return [Piece(_replace(text, arg, repl, op), split=not quoted, span=span)]
        if op in ("^", "^^", ",", ",,"):
            if op == "^^":
                text = text.upper()
            elif op == ",,":
                text = text.lower()
            elif op == "^":
                text = text[:1].upper() + text[1:]
            else:
                text = text[:1].lower() + text[1:]
            return [Piece(text, split=not quoted, span=span)]
        if op == ":":
            nums = [o for o in operands if o.type != ":"]
            if operands and operands[0].type == ":":  # `${X::n}`: the offset is empty (0)
                off = 0
                ln = self.arith(nums[0], world, ps) if nums else 0
            else:
                off = self.arith(nums[0], world, ps) if nums else 0
                ln = self.arith(nums[1], world, ps) if len(nums) > 1 else None
            if isinstance(off, Unknown) or isinstance(ln, Unknown):
                return [Piece(None, span=span, reason=f"{_snippet(node)}: unknown offset", split=not quoted)]
            end = None if ln is None else (off + ln if ln >= 0 else ln)
            return [Piece(text[off:end] if off >= 0 else text[off:end], split=not quoted, span=span)]
        return [Piece(None, span=span, reason=f"unsupported expansion {_snippet(node)}", split=not quoted)]

    def _raw_expansion(self, name, world, ps, quoted, span) -> list[Piece]:
        """Evaluate a `${...}` kept as raw text by the parser (quotes or backslashes inside)."""
        m = re.fullmatch(rf"{RAW_EXPANSION}(\d+)_*", name)
        index = int(m.group(1)) if m else -1
        if not 0 <= index < len(ps.raw_expansions):
            return [Piece(None, span=span, reason="could not analyse this expansion", split=not quoted)]
        raw = ps.raw_expansions[index]
        unknown = [Piece(None, span=span, reason=f"could not analyse {raw}", split=not quoted)]
        m = re.match(r"\$\{([A-Za-z_]\w*|\d+)(.*)\}$", raw, re.S)
        if m is None:
            return unknown
        var, rest = m.group(1), m.group(2)
        op = next((o for o in (":-", ":=", ":+", ":?", "//", "/#", "/%", "##", "%%", "^^", ",,", "-", "=",
                               "+", "?", "/", "#", "%", "^", ",") if rest.startswith(o)), None)
        if op is None:
            return unknown
        arg = rest[len(op):]
        if op in (":-", ":=", ":+", ":?", "-", "=", "+", "?"):
            is_set, value_pieces = self._param_state(var, None, world, quoted, span, ps)
            operand = _raw_operand(arg, world, self, span)
            if is_set is None or operand is None:
                return unknown
            use_default = (not is_set) or (op.startswith(":") and _pieces_empty(value_pieces))
            if op in (":+", "+"):
                return [] if use_default else [Piece(operand[0], split=not quoted, span=span)]
            if not use_default:
                return value_pieces
            if op in (":?", "?"):
                return unknown
            if op in (":=", "="):
                self.set_var(world, var, Variable(Known(operand[0], span), assigned_at=span), span)
            return [Piece(operand[0], split=not quoted, span=span)]
        value = self._scalar(var, world, span)
        if not isinstance(value, Known):
            return [Piece(None, span=span, reason=value.reason, split=not quoted)]
        text = value.text
        if op in ("^^", ",,", "^", ","):
            text = {"^^": text.upper(), ",,": text.lower(), "^": text[:1].upper() + text[1:],
                    ",": text[:1].lower() + text[1:]}[op]
            return [Piece(text, split=not quoted, span=span)]
        if op in ("#", "##", "%", "%%"):
            pattern = _raw_operand(arg, world, self, span)
            if pattern is None:
                return unknown
            return [Piece(_remove_affix(text, pattern[1], op), split=not quoted, span=span)]
        pattern_raw, repl_raw = _split_unescaped_slash(arg)
        pattern = _raw_operand(pattern_raw, world, self, span)
        repl = _raw_operand(repl_raw, world, self, span) if repl_raw is not None else ("", "")
        if pattern is None or repl is None:
            return unknown
        return [Piece(_replace(text, pattern[1], repl[0], op), split=not quoted, span=span)]

    def _operand_pieces(self, operands, world, ps, quoted) -> list[Piece]:
        """The word of `${X:-word}` / `${X:+word}`: unquoted, its result is split like any expansion
        (`${V:+--precision $V}` gives two words), literal text included."""
        out = []
        for o in operands:
            parts = o.children if (not quoted and o.type == "concatenation") else [o]
            for part in parts:
                pieces = self.pieces(part, world, ps, quoted=quoted)
                if not quoted and part.type == "word":
                    for p in pieces:
                        if p.text is not None:
                            p.split = True
                out.extend(pieces)
        return out

    def _param_state(self, name, subscript, world, quoted, span, ps) -> tuple[bool | None, list[Piece]]:
        """(is the parameter set?, its pieces)."""
        if name.isdigit():
            n = int(name)
            if n == 0:
                return True, [Piece(world.script, split=not quoted, span=span)]
            if n <= len(world.positional):
                v = world.positional[n - 1]
                return True, _value_pieces(v, quoted, span)
            return False, []
        if name in ("@", "*"):
            return bool(world.positional), _items_pieces(world.positional, quoted, span, star=name == "*",
                                                         sep=_ifs_sep(world))
        var = world.vars.get(name)
        if var is None:
            if name in _BASH_DYNAMIC or name.startswith(GAP_VARIABLE):
                return None, []
            return False, []
        if var.items is not None and subscript is not None:
            return True, self._param(name, subscript, world, quoted, span, ps)
        v = var.scalar()
        if v is None:
            return False, []
        if isinstance(v, Unknown) and var.source == "cluster":
            return True, _value_pieces(v, quoted, span)
        return True, _value_pieces(v, quoted, span)

    def _scalar(self, name, world, span) -> Value:
        if name.startswith(GAP_VARIABLE):
            return Unknown("could not analyse this part (bash accepts it; packlint's parser does not)", span)
        if name.isdigit():
            n = int(name)
            if n == 0:
                return Known(world.script, span)
            return world.positional[n - 1] if n <= len(world.positional) else Known("", span)
        if name == "#":
            return Known(str(len(world.positional)), span)
        if name in ("?", "$", "!", "-", "_"):
            return Unknown(f"${name} is only known at run time", span)
        if name in ("@", "*"):
            return Known(" ".join(p.text if isinstance(p, Known) else "?" for p in world.positional), span) \
                if all(isinstance(p, Known) for p in world.positional) else Unknown("unknown argument", span)
        if name == "LINENO":
            return Known(str(span.line), span)
        var = world.vars.get(name)
        if var is not None and var.ref is not None:
            var = world.vars.get(var.ref)
        if var is None:
            if name in _BASH_DYNAMIC:
                return Unknown(f"${name} is set by bash at run time", span)
            return Known("", span)
        v = var.scalar()
        return v if v is not None else Known("", span)

    def _scalar_sub(self, name, subscript, world, span, ps) -> Value:
        if subscript is None:
            return self._scalar(name, world, span)
        pieces = self._param(name, subscript, world, True, span, ps)
        return _join(pieces, span)

    def _param(self, name, subscript, world, quoted, span, ps=None) -> list[Piece]:
        if name in ("@", "*"):
            return _items_pieces(world.positional, quoted, span, star=name == "*", sep=_ifs_sep(world))
        if name == "BASH_SOURCE" and subscript is not None:
            script = self.source_stack[-1] if self.source_stack else world.script
            return [Piece(self._display_source(script, world), split=not quoted, span=span)]
        if subscript is not None:
            var = world.vars.get(name)
            idx_text = subscript.text.decode("utf-8", "replace")
            if var is not None and var.assoc is not None:
                if idx_text in ("@", "*"):
                    return _items_pieces(list(var.assoc.values()), quoted, span, star=idx_text == "*",
                                         sep=_ifs_sep(world))
                key = self.expand_joined(subscript, world, ps) if ps is not None else Unknown("key")
                if not isinstance(key, Known):
                    return [Piece(None, span=span, reason=f"array key {idx_text} is unknown", split=not quoted)]
                found = var.assoc.get(key.text)
                return _value_pieces(found, quoted, span) if found is not None else [Piece("", span=span)]
            if idx_text in ("@", "*"):
                if var is None:
                    return [Piece("", vanish=True, span=span)] if quoted else []
                items = var.items if var.items is not None else ([var.value] if var.value is not None else [])
                return _items_pieces(items, quoted, span, star=idx_text == "*", sep=_ifs_sep(world))
            idx = self.arith(subscript, world, ps) if ps is not None else Unknown("index")
            if isinstance(idx, Unknown):
                return [Piece(None, span=span, reason=f"array index {idx_text} is unknown", split=not quoted)]
            if var is None:
                return [Piece("", span=span)]
            items = var.items if var.items is not None else [var.value]
            split = next((i for i in items[:idx + 1] if isinstance(i, Unknown) and i.may_split), None) \
                if idx >= 0 else next((i for i in items if isinstance(i, Unknown) and i.may_split), None)
            if split is not None:  # items before this index may be any number of words
                return [Piece(None, span=span, reason=f"array element {idx_text} depends on {split.reason}",
                              split=not quoted)]
            if idx < 0:
                idx += len(items)
            if 0 <= idx < len(items) and items[idx] is not None:
                return _value_pieces(items[idx], quoted, span)
            return [Piece("", span=span)]
        v = self._scalar(name, world, span)
        return _value_pieces(v, quoted, span)

    def _display_source(self, real: str, world: World) -> str:
        if self.source_stack and real == self.source_stack[0]:
            return world.script
        return self._display(real)

    # ------------------------------------------------------------------ arithmetic
    def arith(self, node, world, ps) -> int | Unknown:
        if node is None:
            return 0
        self.depth += 1
        try:
            if self.depth > MAX_NESTING:
                return Unknown("nesting too deep")
            return self._arith(node, world, ps)
        except (ZeroDivisionError, OverflowError, ValueError, RecursionError):
            return Unknown(f"arithmetic error in {_snippet(node)}")
        finally:
            self.depth -= 1

    def _arith_var(self, name, world, ps, span) -> int | Unknown:
        v = self._scalar(name, world, span)
        if not isinstance(v, Known):
            return Unknown(v.reason)
        return _to_int(v.text, self, world, ps)

    def _arith(self, node, world, ps) -> int | Unknown:
        t = node.type
        span = ps.source.span(node)
        if t == "number":
            return _parse_int(node.text.decode())
        if t in ("variable_name", "word"):
            text = node.text.decode("utf-8", "replace")
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
                return self._arith_var(text, world, ps, span)
            return _to_int(text, self, world, ps)
        if t in ("simple_expansion", "expansion", "command_substitution", "string", "concatenation",
                 "raw_string", "arithmetic_expansion"):
            v = self.expand_joined(node, world, ps)
            if not isinstance(v, Known):
                return Unknown(v.reason)
            return _to_int(v.text, self, world, ps)
        if t == "parenthesized_expression":
            kids = node.named_children
            return self.arith(kids[0], world, ps) if kids else 0
        if t == "subscript":
            name = node.child_by_field_name("name").text.decode()
            pieces = self._param(name, node.child_by_field_name("index"), world, True, span, ps)
            v = _join(pieces, span)
            return Unknown(v.reason) if not isinstance(v, Known) else _to_int(v.text, self, world, ps)
        if t == "unary_expression":
            op = node.children[0].type
            operand = node.named_children[-1]
            if op in ("++", "--"):
                return self._arith_update(operand, world, ps, 1 if op == "++" else -1, prefix=True)
            if operand.type == "binary_expression":
                # tree-sitter-bash binds `-5 + 3` as -(5 + 3); in bash unary operators bind tighter
                # than every binary one, so apply the operator to the leftmost operand instead.
                return self._arith_unary_leftmost(op, operand, world, ps)
            v = self.arith(operand, world, ps)
            if isinstance(v, Unknown):
                return v
            return _unary(op, v)
        if t == "postfix_expression":
            op = node.children[-1].type
            return self._arith_update(node.named_children[0], world, ps, 1 if op == "++" else -1, prefix=False)
        if t == "ternary_expression":
            c = self.arith(node.child_by_field_name("condition"), world, ps)
            if isinstance(c, Unknown):
                return c
            return self.arith(node.child_by_field_name("consequence" if c else "alternative"), world, ps)
        if t == "variable_assignment":
            name = node.child_by_field_name("name").text.decode()
            v = self.arith(node.child_by_field_name("value"), world, ps)
            self.set_var(world, name, Variable(Known(str(v), span) if not isinstance(v, Unknown) else v, None,
                                               (world.vars.get(name) or Variable()).exported, span), span)
            return v
        if t == "binary_expression":
            op_node = node.child_by_field_name("operator")
            op = op_node.type if op_node is not None else ""
            left = node.child_by_field_name("left")
            right = node.child_by_field_name("right")
            if op in ("=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^="):
                name = left.text.decode()
                r = self.arith(right, world, ps)
                if op != "=" and not isinstance(r, Unknown):
                    cur = self._arith_var(name, world, ps, span)
                    r = cur if isinstance(cur, Unknown) else _binop(op[:-1], cur, r)
                val = Known(str(r), span) if not isinstance(r, Unknown) else r
                old = world.vars.get(name)
                self.set_var(world, name, Variable(val, None, old.exported if old else False, span), span)
                return r
            if op == "&&":
                a = self.arith(left, world, ps)
                if a == 0:
                    return 0
                b = self.arith(right, world, ps)
                if isinstance(a, Unknown) or isinstance(b, Unknown):
                    return a if isinstance(a, Unknown) else b
                return int(bool(b))
            if op == "||":
                a = self.arith(left, world, ps)
                if not isinstance(a, Unknown) and a != 0:
                    return 1
                b = self.arith(right, world, ps)
                if isinstance(a, Unknown) or isinstance(b, Unknown):
                    return a if isinstance(a, Unknown) else b
                return int(bool(b))
            a = self.arith(left, world, ps)
            b = self.arith(right, world, ps)
            if isinstance(a, Unknown):
                return a
            if isinstance(b, Unknown):
                return b
            return _binop(op, a, b)
        return Unknown(f"unsupported arithmetic {_snippet(node)}")

    def _arith_unary_leftmost(self, op, node, world, ps) -> int | Unknown:
        if node.type != "binary_expression":
            v = self.arith(node, world, ps)
            return v if isinstance(v, Unknown) else _unary(op, v)
        op_node = node.child_by_field_name("operator")
        bop = op_node.type if op_node is not None else ""
        if bop.endswith("=") and bop not in ("==", "!=", "<=", ">="):
            v = self.arith(node, world, ps)
            return v if isinstance(v, Unknown) else _unary(op, v)
        a = self._arith_unary_leftmost(op, node.child_by_field_name("left"), world, ps)
        if bop == "&&" and a == 0:
            return 0
        if bop == "||" and not isinstance(a, Unknown) and a != 0:
            return 1
        b = self.arith(node.child_by_field_name("right"), world, ps)
        if isinstance(a, Unknown):
            return a
        if isinstance(b, Unknown):
            return b
        if bop in ("&&", "||"):
            return int(bool(b))
        return _binop(bop, a, b)

    def _arith_update(self, operand, world, ps, delta, prefix) -> int | Unknown:
        name = operand.text.decode()
        span = ps.source.span(operand)
        cur = self._arith_var(name, world, ps, span)
        if isinstance(cur, Unknown):
            return cur
        old = world.vars.get(name)
        self.set_var(world, name, Variable(Known(str(cur + delta), span), None,
                                           old.exported if old else False, span), span)
        return cur + delta if prefix else cur


# ---------------------------------------------------------------------- builtins
def _b_export(interp, fields, world, ps, span, status_out, *, node=None):
    return [world]


def _b_set(interp: Interpreter, fields, world, ps, span, status_out):
    args = fields[1:]
    for a in args:
        if isinstance(a, Known) and re.fullmatch(r"[-+][a-zA-Z]+", a.text) and "a" in a.text:
            world.allexport = a.text.startswith("-")
        if isinstance(a, Known) and a.text in ("-o", "+o"):
            i = args.index(a)
            if i + 1 < len(args) and isinstance(args[i + 1], Known) and args[i + 1].text == "allexport":
                world.allexport = a.text == "-o"
    for i, a in enumerate(args):
        if isinstance(a, Known) and a.text == "--":
            world.positional = list(args[i + 1:])
            return [world]
    if args and isinstance(args[0], Known) and not args[0].text.startswith(("-", "+")):
        world.positional = list(args)
    return [world]


def _b_shift(interp, fields, world, ps, span, status_out):
    n = 1
    if len(fields) > 1:
        v = fields[1]
        if not isinstance(v, Known) or not v.text.isdigit():
            world.positional = [Unknown("positional arguments after an unknown shift", span)]
            return [world]
        n = int(v.text)
    if n > len(world.positional):
        if status_out is not None:
            status_out.append((world, False))
        return [world]
    world.positional = world.positional[n:]
    return [world]


def _b_source(interp: Interpreter, fields, world, ps, span, status_out):
    return interp.source_file(fields, world, ps, span)


def _b_exit(interp, fields, world, ps, span, status_out):
    world.flow = "exit"
    return [world]


def _b_return(interp, fields, world, ps, span, status_out):
    # `return` ends a function or a sourced file; at the top of the script bash treats it as exit
    world.flow = "return" if world.locals_stack or interp.source_calls else "exit"
    return [world]


def _after_loop(w: World) -> None:
    """Leaving a loop: a plain break/end is done; `break 2`/`continue 2` act on the enclosing loop."""
    if w.flow in ("break_done", "loop_done"):
        w.flow = None
    elif w.flow is not None and w.flow.startswith("break_done "):
        w.flow = w.flow[len("break_done "):]


def _loop_levels(fields) -> int:
    if len(fields) > 1 and isinstance(fields[1], Known) and fields[1].text.isdigit():
        return max(1, int(fields[1].text))
    return 1


def _b_break(interp, fields, world, ps, span, status_out):
    n = _loop_levels(fields)
    world.flow = "break" if n == 1 else f"break {n}"
    return [world]


def _b_continue(interp, fields, world, ps, span, status_out):
    n = _loop_levels(fields)
    world.flow = "continue" if n == 1 else f"continue {n}"
    return [world]


def _b_test(interp: Interpreter, fields, world, ps, span, status_out):
    if status_out is not None:
        status_out.append((world, interp.test_args(fields[1:])))
    return [world]


def _b_shopt(interp, fields, world, ps, span, status_out):
    """`shopt -s/-u nullglob|expand_aliases`: the options that change what a launch line becomes."""
    args = [f.text for f in fields[1:] if isinstance(f, Known)]
    on = "-s" in args
    if "-s" in args or "-u" in args:
        if "nullglob" in args:
            world.nullglob = on
        if "expand_aliases" in args:
            world.expand_aliases = on
    return [world]


def _b_alias(interp, fields, world, ps, span, status_out):
    """`alias tr="torchrun --nproc_per_node 2"` (used only with expand_aliases, as in scripts)."""
    for f in fields[1:]:
        if isinstance(f, Known) and "=" in f.text:
            name, _, value = f.text.partition("=")
            world.aliases = dict(world.aliases or {})
            world.aliases[name] = (value, f.span)
    return [world]


def _b_trap(interp: Interpreter, fields, world, ps, span, status_out):
    """`trap 'cmd' EXIT`: the command runs when the script ends (kept and run then)."""
    args = [f for f in fields[1:] if not (isinstance(f, Known) and f.text in ("--",))]
    if len(args) >= 2 and isinstance(args[0], Known) and not args[0].text.startswith("-"):
        signals = {a.text.upper().removeprefix("SIG") for a in args[1:] if isinstance(a, Known)}
        if signals & {"EXIT", "0"}:
            world.exit_trap = None if args[0].text in ("", "-") else (args[0], span)
    return [world]


def _b_read(interp, fields, world, ps, span, status_out):
    """`read` sets its variables from input: unknown; `read -a NAME` (also bundled, `-ra`) an array of
    unknown length."""
    args = fields[1:]
    array = None
    names = []
    i = 0
    while i < len(args):
        f = args[i]
        t = f.text if isinstance(f, Known) else None
        if t is not None and t.startswith("-") and len(t) > 1:
            letters = t[1:]
            takes = next((c for c in letters if c in "adnNptu"), None)
            if takes == "a" and i + 1 < len(args) and isinstance(args[i + 1], Known):
                array = args[i + 1].text
            i += 2 if takes else 1
            continue
        if t is not None and re.fullmatch(r"[A-Za-z_]\w*", t):
            names.append(t)
        i += 1
    if array is not None:
        world.vars[array] = Variable(None, [Unknown("read from input", span, may_split=True)], assigned_at=span)
    for n in names:
        world.vars[n] = Variable(Unknown("value read from input at run time", span), assigned_at=span)
    return [world]


def _b_eval(interp: Interpreter, fields, world, ps, span, status_out):
    args = fields[1:]
    if not args:
        return [world]
    code = interp.code_text(args, world)
    if code is None:
        interp.diag("info", "unanalysed", "`eval` of an unknown string is not analysed", span)
        return [world]
    src = SourceFile(path=ps.source.path, data=code.text.encode("utf-8", "surrogateescape"),
                     line_base=span.line - 1, column_base=span.column - 1)
    return interp._exec_source(src, world, None)


def _b_unknown_assign(interp, fields, world, ps, span, status_out):
    """printf -v VAR / getopts / mapfile: the target variable becomes unknown."""
    args = fields[1:]
    name = fields[0].text
    targets = []
    if name == "printf":
        for i, a in enumerate(args):
            if isinstance(a, Known) and a.text == "-v" and i + 1 < len(args) and isinstance(args[i + 1], Known):
                targets.append(args[i + 1].text)
    elif name == "getopts" and len(args) >= 2 and isinstance(args[1], Known):
        targets.append(args[1].text)
    elif name in ("mapfile", "readarray") and args and isinstance(args[-1], Known):
        targets.append(args[-1].text)
    for t in targets:
        if name in ("mapfile", "readarray"):  # an array of as many lines as the input has
            world.vars[t] = Variable(None, [Unknown(f"lines read by {name} at run time", span, may_split=True)],
                                     assigned_at=span)
        else:
            world.vars[t] = Variable(Unknown(f"set by {name} at run time", span), assigned_at=span)
    return [world]


def _b_let(interp: Interpreter, fields, world, ps, span, status_out):
    for a in fields[1:]:
        if isinstance(a, Known):
            inc = re.fullmatch(r"\s*(?:([A-Za-z_]\w*)(\+\+|--)|(\+\+|--)([A-Za-z_]\w*))\s*", a.text)
            if inc:
                name = inc.group(1) or inc.group(4)
                cur = interp._arith_var(name, world, ps, span)
                if not isinstance(cur, Unknown):
                    step = 1 if "+" in (inc.group(2) or inc.group(3)) else -1
                    interp.set_var(world, name, Variable(Known(str(cur + step), span), assigned_at=span), span)
                continue
            m = re.fullmatch(r"([A-Za-z_]\w*)\s*([-+*/%]?=)\s*(.+)", a.text)
            if m:
                rhs = _to_int(m.group(3), interp, world, ps)
                if m.group(2) != "=" and not isinstance(rhs, Unknown):
                    cur = interp._arith_var(m.group(1), world, ps, span)
                    rhs = cur if isinstance(cur, Unknown) else _binop(m.group(2)[0], cur, rhs)
                val = Known(str(rhs), span) if not isinstance(rhs, Unknown) else rhs
                interp.set_var(world, m.group(1), Variable(val, assigned_at=span), span)
    return [world]


def _b_declare(interp: Interpreter, fields, world, ps, span, status_out):
    """`export`/`declare`/`local`/`readonly` reached as an ordinary command (after a tree-sitter
    misparse, or behind `builtin`): same semantics as the declaration statement, on expanded words."""
    keyword = fields[0].text
    export = keyword == "export"
    readonly = keyword == "readonly"
    global_flag = any(isinstance(f, Known) and f.text.startswith("-") and "g" in f.text for f in fields[1:])
    local = keyword == "local" or (keyword in ("declare", "typeset") and bool(world.locals_stack)
                                   and not global_flag)
    unexport = False
    for f in fields[1:]:
        if not isinstance(f, Known):
            name = _assignment_prefix(f)
            if name is not None:  # `export NAME=<unknown>`
                old = world.vars.get(name)
                var = Variable(Unknown(f.reason, f.span), None, export and not unexport or bool(
                    old and old.exported), f.span, f.span if export else None)
                interp.set_var(world, name, var, f.span)
            continue
        t = f.text
        if t.startswith("-") and "=" not in t:
            export = export or "x" in t
            readonly = readonly or "r" in t
            unexport = unexport or (keyword == "export" and "n" in t)
            continue
        if t.startswith("+"):
            unexport = unexport or "x" in t
            continue
        name, eq, value = t.partition("=")
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            continue
        old = world.vars.get(name)
        if local and world.locals_stack and name not in world.locals_stack[-1]:
            world.locals_stack[-1][name] = old
        if eq:
            var = Variable(Known(value, f.span), None, False, f.span, None)
        elif old is not None:
            var = old.copy()
        else:
            var = Variable(None, None, False, None, None)
        if old is not None and old.source in ("caller", "cluster"):
            var.exported = True
        if export and not unexport:
            var.exported, var.exported_at = True, f.span
        if unexport:
            var.exported = False
        var.readonly = var.readonly or readonly
        interp.set_var(world, name, var, f.span)
    return [world]


def _b_unset(interp, fields, world, ps, span, status_out):
    functions = any(isinstance(f, Known) and f.text == "-f" for f in fields[1:])
    for f in fields[1:]:
        if isinstance(f, Known) and not f.text.startswith("-"):
            if functions:
                world.functions.pop(f.text, None)
            elif not (world.vars.get(f.text) and world.vars[f.text].readonly):
                world.vars.pop(f.text, None)
    return [world]


_BUILTINS = {
    "export": _b_declare, "declare": _b_declare, "typeset": _b_declare, "local": _b_declare,
    "readonly": _b_declare, "unset": _b_unset, "trap": _b_trap, "shopt": _b_shopt, "alias": _b_alias,
    "set": _b_set, "shift": _b_shift, "source": _b_source, ".": _b_source, "exit": _b_exit,
    "return": _b_return, "break": _b_break, "continue": _b_continue, "test": _b_test, "[": _b_test,
    "read": _b_read, "eval": _b_eval, "printf": _b_unknown_assign, "getopts": _b_unknown_assign,
    "mapfile": _b_unknown_assign, "readarray": _b_unknown_assign, "let": _b_let,
}


# declaration_command / unset_command are statements in tree-sitter-bash, not commands
def _s_declaration_command(self: Interpreter, node, world, ps):
    keyword = node.children[0].type
    options = []
    export = keyword == "export"
    local = keyword == "local"
    readonly = keyword == "readonly"
    force_array = False
    unexport = False
    is_function = False
    for c in node.named_children:
        if c.type == "word" and c.text.startswith((b"-", b"+")):
            flag = c.text.decode()
            options.append(flag)
            if flag.startswith("-"):
                export = export or "x" in flag
                readonly = readonly or "r" in flag
                force_array = force_array or "a" in flag or "A" in flag
                is_function = is_function or "f" in flag or "F" in flag
                if keyword == "export" and "n" in flag:
                    unexport = True
            elif "x" in flag:
                unexport = True
    if keyword in ("declare", "typeset") and world.locals_stack and not any("g" in o for o in options
                                                                           if o.startswith("-")):
        local = True  # declare inside a function is local, like bash (unless -g)
    if is_function:
        if keyword == "export":  # `export -f fn`: child shells (bash -c) see the function
            for c in node.named_children:
                if c.type in ("word", "variable_name") and not c.text.startswith((b"-", b"+")):
                    world.exported_functions = world.exported_functions | {c.text.decode("utf-8", "replace")}
        return [world]
    if keyword in ("local", "declare", "typeset") and any(o.startswith("-") and "n" in o for o in options):
        # `local -n out=$1`: `out` names another variable; assignments to it go there
        for c in node.named_children:
            if c.type != "variable_assignment":
                continue
            name_node, value_node = c.child_by_field_name("name"), c.child_by_field_name("value")
            target = self.expand_joined(value_node, world, ps) if value_node is not None else None
            if name_node is None or not isinstance(target, Known) or not re.fullmatch(r"[A-Za-z_]\w*",
                                                                                        target.text):
                continue
            ref_name = name_node.text.decode("utf-8", "replace")
            if world.locals_stack and ref_name not in world.locals_stack[-1]:
                world.locals_stack[-1][ref_name] = world.vars.get(ref_name)
            ref = Variable(world.vars[target.text].scalar() if target.text in world.vars else None, None, False,
                           ps.source.span(c))
            ref.ref = target.text
            world.vars[ref_name] = ref
        return [world]
    computed = [c for c in node.named_children if c.type in ("concatenation", "string", "simple_expansion",
                                                              "expansion", "raw_string", "command_substitution")]
    if computed:
        # `export $gate=1`, `declare -x "$v=warn"`: the name comes from an expansion
        fields = [Known(keyword, ps.source.span(node.children[0]))] + [Known(o) for o in options]
        for c in computed:
            fields.extend(self.expand_fields(c, world, ps))
        unknown = [f for f in fields if isinstance(f, Unknown) and not _assignment_prefix(f)]
        if unknown:
            self.diag("warning", "export-unknown", f"`{keyword}` of names packlint cannot know "
                      f"({unknown[0].reason}); the variables it sets are not seen", ps.source.span(node))
            world.unknown_exports = True
        _b_declare(self, [f for f in fields if f not in unknown], world, ps, ps.source.span(node), None)
    if any(o.startswith("-") and "A" in o for o in options):
        # `declare -A C=([k]=v ...)`: an associative array
        for c in node.named_children:
            if c.type == "variable_assignment":
                name_node, value_node = c.child_by_field_name("name"), c.child_by_field_name("value")
                table: dict = {}
                if value_node is not None and value_node.type == "array":
                    for element in value_node.named_children:
                        text = self.expand_joined(element, world, ps)
                        m = re.fullmatch(r"\[(.*?)\]=(.*)", text.text or "", re.S) if isinstance(text, Known) else None
                        if m:
                            table[m.group(1)] = Known(m.group(2), ps.source.span(element))
                var = Variable(None, None, False, ps.source.span(c))
                var.assoc = table
                if name_node is not None:
                    self.set_var(world, name_node.text.decode("utf-8", "replace"), var, ps.source.span(c))
            elif c.type in ("variable_name", "word") and not c.text.startswith((b"-", b"+")):
                var = Variable(None, None, False, ps.source.span(c))
                var.assoc = {}
                world.vars[c.text.decode("utf-8", "replace")] = var
        return [world]
    integer = any(o.startswith("-") and "i" in o for o in options)
    if integer:  # `declare -i NAME`: later assignments are arithmetic
        for c in node.named_children:
            vname = c.child_by_field_name("name") if c.type == "variable_assignment" else (
                c if c.type in ("variable_name", "word") and not c.text.startswith((b"-", b"+")) else None)
            if vname is not None:
                n = vname.text.decode("utf-8", "replace")
                old = world.vars.get(n)
                marked = old.copy() if old is not None else Variable(None, None, False, ps.source.span(c))
                marked.integer = True
                world.vars[n] = marked
    for c in node.named_children:
        if c.type == "variable_assignment":
            name = self.assign(c, world, ps, export=export and not unexport, local=local,
                               force_array=force_array)
            if name is not None:
                var = world.vars[name]
                if unexport:
                    world.vars[name] = Variable(var.value, var.items, False, var.assigned_at, None, var.source)
                if readonly:
                    var.readonly = True
        elif c.type in ("variable_name", "word") and not c.text.startswith((b"-", b"+")):
            name = c.text.decode("utf-8", "replace")
            if not re.fullmatch(r"[A-Za-z_]\w*", name):
                continue
            span = ps.source.span(c)
            old = world.vars.get(name)
            if local and world.locals_stack:
                frame = world.locals_stack[-1]
                if name not in frame:
                    frame[name] = old
                if old is None or True:
                    world.vars[name] = Variable(None if not force_array else None,
                                                [] if force_array else None, export, span,
                                                span if export else None)
                    continue
            if old is None:
                if export:
                    # `export NAME` before any assignment: marks it; a later assignment keeps the mark
                    self.set_var(world, name, Variable(None, None, True, None, span), span)
                elif force_array:
                    world.vars[name] = Variable(None, [], False, span)
                continue
            new = old.copy()
            if export and not unexport:
                new.exported = True
                new.exported_at = span
                self.set_var(world, name, new, span)
            elif unexport:
                new.exported = False
                world.vars[name] = new
            if readonly:
                new.readonly = True
                world.vars[name] = new
    return [world]


def _s_unset_command(self: Interpreter, node, world, ps):
    functions = any(c.type == "word" and c.text == b"-f" for c in node.named_children)
    for c in node.named_children:
        if c.type in ("raw_string", "string", "word", "concatenation") and b"[" in c.text:
            # unset 'A[2]': a hole in the array
            target = self.expand_joined(c, world, ps)
            m = re.fullmatch(r"([A-Za-z_]\w*)\[(\d+)\]", target.text or "") if isinstance(target, Known) else None
            var = world.vars.get(m.group(1)) if m else None
            if var is not None and var.items is not None and int(m.group(2)) < len(var.items):
                items = list(var.items)
                items[int(m.group(2))] = None
                world.vars[m.group(1)] = Variable(None, items, var.exported, var.assigned_at, var.exported_at)
            continue
        if c.type in ("variable_name", "word") and not c.text.startswith(b"-"):
            name = c.text.decode("utf-8", "replace")
            if functions:
                world.functions.pop(name, None)
            else:
                old = world.vars.get(name)
                if old is not None and old.readonly:
                    continue
                world.vars.pop(name, None)
    return [world]


Interpreter._s_declaration_command = _s_declaration_command
Interpreter._s_unset_command = _s_unset_command
Interpreter._s_command = Interpreter._s_command


# ---------------------------------------------------------------------- helpers
_SCRIPT_DIR = re.compile(
    r"""^\$\(\s*(?:cd\s+(?:--\s+)?)?"?\$\(\s*dirname\s+(?:--\s+)?"?\$(?:\{?0\}?|\{BASH_SOURCE(?:\[0\])?\}|"""
    r"""BASH_SOURCE)"?\s*\)"?\s*(?:(?:&&|;)\s*pwd(?:\s+-P)?\s*)?(?:>\s*/dev/null\s*)?\)$"""
    r"""|^\$\(\s*dirname\s+(?:--\s+)?"?\$(?:\{?0\}?|\{BASH_SOURCE(?:\[0\])?\}|BASH_SOURCE)"?\s*\)$""")


def _raw_operand(raw: str, world, interp, span) -> tuple[str, str] | None:
    """An operand of a raw `${...}`: (its value with quotes removed, the same as a glob pattern in which
    quoted and escaped characters match literally). None when it needs more than plain variables."""
    value, pattern = [], []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and i + 1 < len(raw):
            value.append(raw[i + 1])
            pattern.append(_glob_escape(raw[i + 1]))
            i += 2
        elif c in "'\"":
            j = raw.find(c, i + 1)
            if j == -1:
                return None
            inner = raw[i + 1:j]
            if c == '"' and ("$" in inner or "`" in inner or "\\" in inner):
                return None
            value.append(inner)
            pattern.append(_glob_escape(inner))
            i = j + 1
        elif c == "$":
            m = re.match(r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))", raw[i:])
            if m is None:
                return None
            v = interp._scalar(m.group(1) or m.group(2), world, span)
            if not isinstance(v, Known):
                return None
            value.append(v.text)
            pattern.append(v.text)
            i += m.end()
        elif c == "`":
            return None
        else:
            value.append(c)
            pattern.append(c)
            i += 1
    return "".join(value), "".join(pattern)


def _split_unescaped_slash(raw: str) -> tuple[str, str | None]:
    """`pat/repl` of `${X/pat/repl}`: the first `/` that is not escaped or quoted."""
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\":
            i += 2
            continue
        if c in "'\"":
            j = raw.find(c, i + 1)
            i = len(raw) if j == -1 else j + 1
            continue
        if c == "/":
            return raw[:i], raw[i + 1:]
        i += 1
    return raw, None


def _assignment_prefix(v: Value) -> str | None:
    """`NAME=<unknown>` (a partly unknown word whose known start is an assignment): NAME."""
    if isinstance(v, Unknown) and v.parts:
        head = ""
        for text, _ in v.parts:
            if text is None:
                break
            head += text
        m = re.match(r"([A-Za-z_]\w*)=", head)
        if m:
            return m.group(1)
    return None


def _ends_with_dollar(node) -> bool:
    return node is not None and node.type == "concatenation" and node.child_count > 0 \
        and node.children[-1].type == "$"


def _glued_groups(nodes: list) -> list[list]:
    """Group a word that tree-sitter-bash split after a bare `$` with the word right after it."""
    groups: list[list] = []
    for n in nodes:
        if groups and _ends_with_dollar(groups[-1][-1]) and n.type == "word" \
                and n.start_byte == groups[-1][-1].end_byte:
            groups[-1].append(n)
        else:
            groups.append([n])
    return groups


_GLOB_CHARS = re.compile(r"(?<!\\)[*?]|(?<!\\)\[[^]]+\]")
_BRACE_LIST = re.compile(r"(?<![$\\])\{[^{}\s]*,[^{}\s]*\}")


def _brace_expand(text: str) -> list[str]:
    """`{train,val}.json` -> train.json val.json (comma lists, left to right, nested by recursion)."""
    m = _BRACE_LIST.search(text)
    if m is None:
        return [text]
    head, tail = text[:m.start()], text[m.end():]
    out = []
    for alt in m.group(0)[1:-1].split(","):
        out.extend(_brace_expand(head + alt + tail))
    return out


_UNKNOWN_PART = "__PLPART"
_CLEAR_ENV = "__PL_ENV_CLEARED"
# Commands that take `*.py` or training flags as plain data, never start training (PK903 ignores them).
_NOT_LAUNCHERS = frozenset({
    "echo", "printf", "cat", "ls", "cp", "mv", "rm", "mkdir", "grep", "egrep", "sed", "awk", "tee", "wget",
    "curl", "git", "chmod", "chown", "touch", "ln", "find", "tar", "head", "tail", "wc", "sort", "cut", "tr",
    "scp", "rsync", "pip", "pip3", "test", "[", "basename", "dirname", "realpath", "readlink", "stat", "diff",
    "sha256sum", "md5sum", "zip", "unzip", "du", "df", "file", "wait", "kill", "pkill", "pgrep", "ps",
    "sleep", "cd", "pushd", "popd", "true", "false", ":", "exit", "logger", "less", "more", "vim", "nano",
    "code", "open", "rg", "jq", "yq", "envsubst", "hostname", "date", "nvidia-smi", "ray", "docker",
    "kubectl", "gsutil", "aws", "hdfs", "ossutil", "coscmd", "huggingface-cli", "modelscope", "apt", "apt-get",
    "yum", "conda", "uv", "pytest", "ruff", "black", "isort", "flake8", "mypy", "pre-commit", "python-config"})
# Flags that only a training program takes (Megatron spellings): a command given one is a launch.
_TRAINING_FLAGS = frozenset({
    "--micro-batch-size", "--global-batch-size", "--tensor-model-parallel-size", "--pipeline-model-parallel-size",
    "--context-parallel-size", "--expert-model-parallel-size", "--seq-length", "--num-layers", "--hidden-size",
    "--num-attention-heads", "--train-iters", "--train-samples", "--lr-decay-style", "--tokenizer-type",
    "--data-path", "--sequence-parallel", "--use-distributed-optimizer", "--reset-position-ids",
    "--reset-attention-mask", "--micro_batch_size", "--per_device_train_batch_size",
    "--gradient_accumulation_steps", "--deepspeed"})
_PACKING_GATE = re.compile(r"PACK")
# Launchers that hand their command to another shell (interpret.py runs it there; see _run_submitted).
_SUBMITTERS = frozenset({"sbatch", "ssh", "pdsh", "ray job submit"})
_SRUN_TASK_ENV = ("SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_JOB_ID", "SLURM_JOBID",
                  "SLURM_NTASKS", "SLURM_NNODES", "SLURM_JOB_NODELIST", "SLURM_STEP_ID",
                  "SLURM_JOB_NUM_NODES", "SLURM_GPUS_ON_NODE", "SLURM_CPUS_ON_NODE")
_NEWLINE = re.compile(rb"(?<!\\)\n")


def _crlf_tail(node, ps: ParsedScript, pieces: list) -> None:
    """A word that ends right before a CR gets the CR, as in bash (tree-sitter skips it as a blank)."""
    if ps.source.data[node.end_byte:node.end_byte + 1] == b"\r":
        pieces.append(Piece("\r", span=ps.source.span(node)))


def _join_worlds(worlds: list[World], depends_on: str, span: Span) -> World:
    """One world standing for several: what they agree on stays, what differs becomes unknown."""
    first = worlds[0]
    if len(worlds) == 1:
        return first
    joined = first.fork()
    reason = f"depends on {depends_on}"
    for name in dict.fromkeys(n for w in worlds for n in w.vars):
        found = [w.vars.get(name) for w in worlds]
        v0 = found[0]
        if all(v is v0 for v in found):
            continue
        present = [v for v in found if v is not None]
        if len(present) == len(found) and all(
                v.items is None and v0.items is None and isinstance(v.value, Known)
                and isinstance(v0.value, Known) and v.value.text == v0.value.text
                and v.exported == v0.exported for v in present):
            continue
        exported = any(v.exported for v in present)
        if any(v.items is not None for v in present):
            joined.vars[name] = Variable(None, [Unknown(reason, span)], exported, span, span if exported else None)
        else:
            joined.vars[name] = Variable(Unknown(reason, span), None, exported, span, span if exported else None)
    if any(len(w.positional) != len(first.positional) or any(
            not (a is b or (isinstance(a, Known) and isinstance(b, Known) and a.text == b.text))
            for a, b in zip(w.positional, first.positional)) for w in worlds[1:]):
        joined.positional = [Unknown(reason, span)]
    for w in worlds[1:]:
        for fname, fdef in w.functions.items():
            joined.functions.setdefault(fname, fdef)
    common = set(first.when)
    for w in worlds[1:]:
        common &= set(w.when)
    joined.when = tuple(c for c in first.when if c in common)
    joined.allexport = any(w.allexport for w in worlds)
    return joined


# Diagnostics that mean "launches may be missing from here on" (the PK902 rule reports them).
STOP_CODES = frozenset({"too-complex", "too-deep"})
_LAUNCH_WORD = re.compile(
    rb"(?<![\w./-])(?:[\w./-]*/)?(?:torchrun|deepspeed|accelerate|srun|sbatch|mpirun|mpiexec|python[\d.]*|"
    rb"uv|conda|micromamba|mamba|pixi|poetry|pipenv|hatch|pdsh|ray|llamafactory-cli|swift|megatron|tune|"
    rb"composer|colossalai|lightning|bash|sh|eval|source|\.)(?![\w-])")


def _may_launch_after(ps: ParsedScript, start: int, launches: list, where: Span | None) -> bool:
    """Whether a launch may lie in the part of the script the analysis did not finish: a launcher word
    in the text from the construct that stopped to the end (functions it calls included), or a launch
    already seen inside that construct (its later iterations)."""
    if any(where is not None and l.span.file == where.file and l.span.line >= where.line for l in launches):
        return True
    if _LAUNCH_WORD.search(ps.source.data, start):
        return True
    return any(_LAUNCH_WORD.search(f.text) for f in _function_nodes(ps.root))


def _function_nodes(node) -> list:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if n.type == "function_definition":
            out.append(n)
        else:
            stack.extend(n.named_children)
    return out


def _runnable(ps: ParsedScript, statements: list) -> list:
    """bash reads and runs a script one complete top-level command at a time: with a syntax error at
    line L, the commands that end before L still run, and nothing from L on."""
    lines = [p.span.line - ps.source.line_base for p in ps.problems if p.severity == "error" and p.code == "syntax"]
    if not lines:
        return statements
    stop = min(lines)
    return [s for s in statements if s.end_point[0] + 1 < stop and not s.has_error]


def _snippet(node, limit=80) -> str:
    if node is None:
        return ""
    text = node.text.decode("utf-8", "replace")
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _common_prefix(a: tuple, b: tuple) -> tuple:
    """Conditions two merged worlds share (order kept)."""
    bs = set(b)
    return tuple(c for c in a if c in bs)


def _value_pieces(v: Value, quoted: bool, span: Span) -> list[Piece]:
    """A value as pieces; a partly unknown value keeps its known parts, so word splitting and
    `bash -c "$X ..."` still see them."""
    if isinstance(v, Unknown) and v.parts:
        return [Piece(t, split=not quoted, span=v.span or span, reason=r or "") for t, r in v.parts] or \
            [_value_piece(v, quoted, span)]
    return [_value_piece(v, quoted, span)]


def _value_piece(v: Value, quoted: bool, span: Span) -> Piece:
    if isinstance(v, Known):
        return Piece(v.text, split=not quoted, span=v.span or span, origin=v.origin)
    return Piece(None, split=not quoted, span=v.span or span, reason=v.reason)


def _items_pieces(items: list[Value], quoted: bool, span: Span, star: bool = False,
                  sep: str = " ") -> list[Piece]:
    """"${A[@]}" -> one field per item; "${A[*]}" -> items joined by the first character of IFS;
    unquoted -> split. Holes of a sparse array (None) are skipped."""
    items = [i for i in items if i is not None]
    if quoted and star:
        if any(not isinstance(i, Known) for i in items):
            reason = next(i.reason for i in items if isinstance(i, Unknown))
            return [Piece(None, span=span, reason=reason)]
        return [Piece(sep.join(i.text for i in items), span=span)]
    if not items:
        return [Piece("", vanish=True, span=span)] if quoted else []
    out = []
    for n, item in enumerate(items):
        pieces = _value_pieces(item, quoted, span)
        pieces[0].boundary = n > 0
        out.extend(pieces)
    return out


def _pieces_empty(pieces: list[Piece]) -> bool:
    return all(p.text == "" for p in pieces)


_IFS = re.compile(r"[ \t\n]+")


def _sub_span(span: Span | None, text: str, start: int, end: int) -> Span | None:
    """The span of text[start:end] when `span` covers exactly `text` on one line (a literal without
    escapes), so a flag found inside a string (`GPT_ARGS="--micro-batch-size=2 ..."`) points at itself."""
    if span is None or span.line != span.end_line or span.end_column - span.column != len(text):
        return None
    return Span(span.file, span.line, span.column + start, span.line, span.column + end)


def _ifs_sep(world: World) -> str:
    ifs = _ifs(world)
    return " " if ifs is None else ifs[:1]


def _ifs(world: World) -> str | None:
    """The IFS in effect when known and not the default (None: split on blanks)."""
    var = world.vars.get("IFS")
    if var is None:
        return None
    v = var.scalar()
    if not isinstance(v, Known) or v.text == " \t\n":
        return None
    return v.text


def _ifs_splitter(ifs: str | None):
    """The regex bash's word splitting uses for this IFS (None: the default blank characters)."""
    if ifs is None:
        return _IFS
    blanks = "".join(c for c in ifs if c in " \t\n")
    others = "".join(c for c in ifs if c not in " \t\n")
    parts = []
    if others:
        parts.append(f"[{re.escape(blanks)}]*[{re.escape(others)}][{re.escape(blanks)}]*" if blanks
                     else f"[{re.escape(others)}]")
    if blanks:
        parts.append(f"[{re.escape(blanks)}]+")
    return re.compile("|".join(parts)) if parts else None


def _assemble(pieces: list[Piece], word_span: Span, ifs: str | None = None) -> list[Value]:
    """Pieces -> fields, with word splitting of unquoted expansion results (on IFS)."""
    splitter = _ifs_splitter(ifs) if ifs is not None else _IFS
    fields: list[Value] = []
    cur: list[Piece] = []
    started = False

    def finish():
        nonlocal cur, started
        if started:
            fields.append(_field_value(cur, word_span))
        cur, started = [], False

    for p in pieces:
        if p.boundary:
            finish()
        if p.vanish:
            continue
        if p.text is None:
            cur.append(p)
            started = True
            continue
        if p.split:
            parts = splitter.split(p.text) if splitter is not None else [p.text]
            if len(parts) == 1:
                if p.text:
                    cur.append(p)
                    started = True
                continue
            offset = 0
            for k, part in enumerate(parts):
                if k > 0:
                    finish()
                start = p.text.find(part, offset) if part else offset
                offset = start + len(part)
                if part:
                    cur.append(Piece(part, span=_sub_span(p.span, p.text, start, offset) or p.span,
                                     origin=p.origin))
                    started = True
            continue
        cur.append(p)
        started = True
    finish()
    return fields


def _field_value(parts: list[Piece], word_span: Span) -> Value:
    unknown = next((p for p in parts if p.text is None), None)
    if unknown is not None:
        known_tail = ""
        for p in reversed(parts):
            if p.text is None:
                break
            known_tail = p.text + known_tail
        reason = unknown.reason
        if known_tail.startswith("/") and len(parts) > 1:
            reason = f"partly unknown: {unknown.reason}; tail={known_tail.lstrip('/')}"
        return Unknown(reason, word_span, tuple((p.text, p.reason) for p in parts),
                       any(p.text is None and p.split for p in parts))
    text = "".join(p.text for p in parts)
    if len(text) > MAX_VALUE_CHARS:
        return Unknown("value too long to track", word_span)
    nonempty = [p for p in parts if p.text]
    span = nonempty[0].span if len(nonempty) == 1 and nonempty[0].span is not None else word_span
    origin = "caller" if nonempty and all(p.origin == "caller" for p in nonempty) else None
    return Known(text, span, origin)


def _join(pieces: list[Piece], word_span: Span) -> Value:
    """Pieces -> one value, no splitting; array items are joined by a space as in assignments."""
    out: list[Piece] = []
    for p in pieces:
        if p.vanish:
            continue
        if p.boundary:
            out.append(Piece(" ", span=p.span))
        out.append(Piece(p.text, span=p.span, reason=p.reason))
    if not out:
        return Known("", word_span)
    return _field_value(out, word_span)


def _concat(a: Value, b: Value, span: Span) -> Value:
    if isinstance(a, Known) and isinstance(b, Known):
        return Known(a.text + b.text, span if a.text else b.span)
    return Unknown(a.reason if isinstance(a, Unknown) else b.reason, span)


def _unescape_unquoted(text: str) -> str:
    if "\\" not in text:
        return text
    return re.sub(r"\\(\n|.)", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _unescape_dquote(text: str) -> str:
    if "\\" not in text:
        return text
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _glob_escape(text: str) -> str:
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


def _unescape_pattern(text: str) -> str:
    return text


def _glob_match(text: str, pattern: str) -> bool:
    try:
        return re.fullmatch(_glob_regex(pattern), text, re.S) is not None
    except re.error:
        return fnmatch.fnmatchcase(text, pattern)


def _remove_affix(text: str, pattern: str, op: str) -> str:
    rx = _glob_regex(pattern)
    n = len(text)
    if op in ("#", "##"):
        rng = range(0, n + 1) if op == "#" else range(n, -1, -1)
        for k in rng:
            if re.fullmatch(rx, text[:k], re.S):
                return text[k:]
        return text
    rng = range(n, -1, -1) if op == "%" else range(0, n + 1)
    for k in rng:
        if re.fullmatch(rx, text[k:], re.S):
            return text[:k]
    return text


def _replace(text: str, pattern: str, repl: str, op: str) -> str:
    rx = _glob_regex(pattern)
    if not pattern:
        return text
    if op == "/#":
        m = re.match(rx, text, re.S)
        return repl + text[m.end():] if m else text
    if op == "/%":
        for k in range(0, len(text) + 1):
            if re.fullmatch(rx, text[k:], re.S):
                return text[:k] + repl
        return text
    return re.sub(rx, lambda m: repl, text, count=0 if op == "//" else 1, flags=re.S)


def _parse_int(text: str) -> int | Unknown:
    text = text.strip()
    try:
        if "#" in text:
            base, digits = text.split("#", 1)
            return int(digits, int(base))
        if text.lower().startswith(("0x", "-0x")):
            return int(text, 16)
        if len(text) > 1 and text.startswith("0") and text.isdigit():
            return int(text, 8)
        return int(text)
    except ValueError:
        return Unknown(f"{text!r} is not an integer")


def _to_int(text: str, interp: Interpreter, world: World, ps) -> int | Unknown:
    """bash evaluates a variable's text as an arithmetic expression: plain integers, empty -> 0,
    names -> their values (one level deep), simple `a OP b`."""
    t = text.strip()
    if t == "":
        return 0
    v = _parse_int(t)
    if not isinstance(v, Unknown):
        return v
    if re.fullmatch(r"[A-Za-z_]\w*", t):
        var = world.vars.get(t)
        if var is None:
            return 0
        s = var.scalar()
        if not isinstance(s, Known):
            return Unknown(s.reason if s is not None else "unset")
        inner = _parse_int(s.text) if s.text.strip() else 0
        return inner
    m = re.fullmatch(r"\s*(-?\w+)\s*([-+*/%])\s*(-?\w+)\s*", t)
    if m:
        a = _to_int(m.group(1), interp, world, ps)
        b = _to_int(m.group(3), interp, world, ps)
        if isinstance(a, Unknown) or isinstance(b, Unknown):
            return a if isinstance(a, Unknown) else b
        return _binop(m.group(2), a, b)
    return Unknown(f"{t!r} is not an integer")


def _unary(op: str, v: int) -> int | Unknown:
    return {"-": -v, "+": v, "!": int(not v), "~": ~v}.get(op, Unknown(f"operator {op}"))


def _binop(op: str, a: int, b: int) -> int | Unknown:
    if op in ("/", "%") and b == 0:
        return Unknown("division by zero")
    if op == "/":
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    if op == "%":
        r = abs(a) % abs(b)
        return r if a >= 0 else -r
    if op == "**":
        if b < 0 or b > 256:
            return Unknown("exponent out of range")
        return a ** b
    table = {"+": a + b, "-": a - b, "*": a * b, "<<": a << b if 0 <= b < 64 else 0,
             ">>": a >> b if 0 <= b < 64 else 0, "&": a & b, "|": a | b, "^": a ^ b,
             "<": int(a < b), ">": int(a > b), "<=": int(a <= b), ">=": int(a >= b),
             "==": int(a == b), "!=": int(a != b), "-eq": int(a == b), "-ne": int(a != b),
             "-lt": int(a < b), "-gt": int(a > b), "-le": int(a <= b), "-ge": int(a >= b)}
    if op not in table:
        return Unknown(f"operator {op}")
    r = table[op]
    return ((r + (1 << 63)) % (1 << 64)) - (1 << 63)


def _compare(op: str, a: str, b: str, world, interp) -> bool | None:
    if op in ("=", "=="):
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a < b
    if op == ">":
        return a > b
    if op in ("-eq", "-ne", "-lt", "-gt", "-le", "-ge"):
        x, y = _parse_int(a or "0"), _parse_int(b or "0")
        if isinstance(x, Unknown) or isinstance(y, Unknown):
            return None
        return bool(_binop(op, x, y))
    return None


def _posix_test(words: list[str], interp) -> bool | None:
    n = len(words)
    if n == 0:
        return False
    if n == 1:
        return words[0] != ""
    if words[0] == "!" and n <= 4:
        r = _posix_test(words[1:], interp)
        return None if r is None else not r
    if n == 2:
        op, v = words
        if op == "-z":
            return v == ""
        if op == "-n":
            return v != ""
        # a file test (the cluster's file system is unknown), or "unary operator expected": status 2
        return None if re.fullmatch(r"-[a-zA-Z]", op) else False
    if n == 3 and words[1] in ("=", "==", "!=", "<", ">"):
        return _compare(words[1], words[0], words[2], None, interp)
    if n == 3 and words[1] in ("-eq", "-ne", "-lt", "-gt", "-le", "-ge"):
        if not all(re.fullmatch(r"\s*[-+]?\d+\s*", w) for w in (words[0], words[2])):
            return False  # "integer expression expected": status 2
        return _compare(words[1], words[0].strip(), words[2].strip(), None, interp)
    if n == 3 and words[1] in ("-nt", "-ot", "-ef"):
        return None
    if n == 3 and words[0] == "(" and words[2] == ")":
        return words[1] != ""
    for sep, combine in (("-o", "or"), ("-a", "and")):
        if sep in words[1:-1]:
            k = words.index(sep, 1)
            a, b = _posix_test(words[:k], interp), _posix_test(words[k + 1:], interp)
            if combine == "and":
                return False if (a is False or b is False) else (None if None in (a, b) else True)
            return True if (a is True or b is True) else (None if None in (a, b) else False)
    if "(" in words or ")" in words:
        return None
    return False  # "binary operator expected" / "too many arguments": status 2


def interpret_file(path: str, display: str, *, text: bytes | None, env, args, known_env,
                   cwd: str | None = None) -> tuple[Interpreter, ParsedScript]:
    """Read, parse and interpret one script; the interpreter holds the launches and diagnostics."""
    source = prepare(text, display) if text is not None else load(path, display)
    ps = parse(source)
    interp = Interpreter(env=env, args=args, known_env=known_env, cwd=cwd)
    real = path if path and Path(path).is_file() else None
    interp.run(ps, real)
    return interp, ps


__all__ = ["Interpreter", "LaunchInstance", "Diagnostic", "interpret_file", "shlex"]
