"""The run state of one analysis and its driver: statements dispatched by node type, worlds merged."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from packlint import evidence, regex_guard
from packlint.parse import ParsedScript
from packlint.source import SourceFile
from packlint.values import Known, Span, Unknown, Value, Variable

if TYPE_CHECKING:
    from tree_sitter import Node
from packlint.interpret import builtins, commands, declarations, loops, nested_code, statements
from packlint.interpret.bash_tables import LAUNCH_WORD, PACKING_GATE
from packlint.interpret.limits import (
    MAX_NESTING,
    MAX_WORK,
    MAX_WORLDS,
    RECURSION_LIMIT,
    STOP_CODES,
    WORK_BYTES,
    OutOfWork,
)
from packlint.interpret.syntax import bytes_of, child_statements, function_nodes, inside_error, runnable, text_of
from packlint.interpret.world import Diagnostic, LaunchInstance, World, common_prefix, join_worlds


class Interpreter:
    """One analysis: the run state (limits spent, call/source stacks, what was found) and the driver
    that runs statements, in every world, through the handlers of STATEMENTS."""

    def __init__(
        self,
        *,
        env: dict[str, str] | None = None,
        args: list[str] | None = None,
        known_env: tuple[str, ...] = (),
        cwd: str | None = None,
        max_work: int = MAX_WORK,
    ) -> None:
        self.initial_env = dict(env or {})
        self.args = list(args or [])
        self.known_env = tuple(known_env)
        self.cwd = cwd or os.getcwd()
        self.display = ""  # the script's path as named (through any linked folder), set by interpret_file
        self.diagnostics: list[Diagnostic] = []
        self.launches: list[LaunchInstance] = []
        self.export_events: list[tuple[int, str, Span | None, Variable]] = []
        # (assignment replaced, assignment replacing it) -> what their values were each time the second ran:
        # "same", "differ" or "unknown" (PK105 compares the values bash gives, not the words)
        self.branch_origin: str | None = None  # the premise of the fallback branch being run (fallbacks.py)
        self.replaced_values: dict[tuple[Span, Span], set[str]] = {}
        # the bodies of the branches run (case arms, if/elif/else bodies, the right side of `&&`/`||`), each with
        # what chose it: a flag written inside one over a value given outside it is that branch's own (PK103)
        self.branch_regions: dict[Span, str] = {}
        self._branches_seen: set[tuple[str, int, int, int, int]] = set()
        self.seq = 0
        self.context: list[str] = []
        self.source_stack: list[str] = []
        self.depth = 0
        self.call_depth = 0
        self._diag_seen: set[tuple[str, str, Span | None]] = set()
        self.world_cap_hit = False
        self._here: tuple[Node, ParsedScript] | None = None  # the statement being run
        self.alias_depth = 0
        # outer launchers of `srun bash -c "..."`: (their words, the whole command line, where)
        self.launch_prefix: list[tuple[list[Value], list[Value], Span]] = []
        self.source_calls = 0  # how many `source`s are being executed (for `return`)
        self.error_cut: int | None = None  # byte offset of a parse error inside the current statement
        self.work = 0  # work units spent (see limits.MAX_WORK)
        self.budget = max_work  # grows with the text read (WORK_BYTES)
        self._budgeted: set[str | None] = set()  # files whose size was added to the budget
        self._realpaths: dict[str, str] = {}  # path -> os.path.realpath (a walk of lstat calls)
        self.stop_reported = False  # a STOP_CODES diagnostic was given (PK902: once per file)
        self.unknown_launchers: list[tuple[str, str, Span]] = []  # (command, why, where): see PK903
        self._top_stmt: Node | None = None  # the top-level statement of the script being run
        self.caller_args_hit = False  # the current top-level statement expanded the script's "$@" (issue 27)
        # lone `$NAME` words of variables the script never sets that the current top-level statement dropped (empty)
        self.vanished_hit: list[str] = []
        self.guard_memo: dict[int, tuple[ParsedScript, dict[int, str]]] = {}  # input guards per parse (guards.py)
        # the checkout's scripts that run others with variables set (tree_callers.py)
        self.tree_memo: dict[tuple[str, str], Any] = {}

    def note_branch(self, nodes: list[Node], ps: ParsedScript, label: str | Callable[[], str]) -> None:
        """Remember the region of a branch's body being run (`branch_regions`); a callable `label` is called
        once per region (a branch in a loop or a function runs many times)."""
        if not nodes:
            return
        src = ps.source  # (an eval'd or `bash -c` text has its own base line and length)
        seen = (src.path, src.line_base, len(src.data), nodes[0].start_byte, nodes[-1].end_byte)
        if seen in self._branches_seen:
            return
        self._branches_seen.add(seen)
        first, last = ps.source.span(nodes[0]), ps.source.span(nodes[-1])
        region = Span(first.file, first.line, first.column, last.end_line, last.end_column)
        self.branch_regions.setdefault(
            region, f"{label if isinstance(label, str) else label()} ({first.file}:{first.line})"
        )

    def run(self, ps: ParsedScript, real_path: str | None) -> list[World]:
        regex_guard.reset_budget()  # a new file: its regexes (`=~`, rules' matches()) get their time again
        world = World(
            vars={}, positional=[Known(a, None, "caller") for a in self.args], script=real_path or ps.source.path
        )
        for name, value in self.initial_env.items():
            world.vars[name] = Variable(Known(value), exported=True, source="caller")
        for name in self.known_env:
            if name not in world.vars:
                world.vars[name] = Variable(
                    Unknown(f"${name} is set by the cluster at run time"), exported=True, source="cluster"
                )
        for problem in ps.problems:
            self.diag(problem.severity, problem.code, problem.message, problem.span)
        if real_path:
            self.source_stack.append(self.realpath(real_path))
        self.add_budget(ps.source, real_path)
        nested_code.job_env(world, ps.source.data)  # a Slurm job script: its #SBATCH node/GPU counts
        saved_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(saved_limit, RECURSION_LIMIT))
        try:
            worlds = self.exec_block(runnable(ps, child_statements(ps.root)), [world], ps)
            worlds = self._run_exit_traps(worlds, ps)
            self._no_launch_found(worlds, ps)
            return worlds
        except OutOfWork as stop:
            self.depth = 0
            top = self._top_stmt
            where = ps.source.span(top) if top is not None else stop.span
            if top is not None and not _may_launch_after(ps, top.start_byte, self.launches, where):
                self.diag(
                    "info",
                    "analysis-limit",
                    "analysis stopped here (work budget used up); nothing after this point looks like a launch",
                    where,
                )
            else:
                self.diag(
                    "warning",
                    "too-complex",
                    "analysis stopped in this construct: the script loops or "
                    "branches more than packlint follows (its work budget, well under a second); "
                    "launches from here on are not seen",
                    where,
                )
            return [world]
        except RecursionError:  # a path MAX_NESTING does not count: stop cleanly, keep what was found
            self.depth = 0
            self.diag(
                "error",
                "too-deep",
                "the script nests too deeply to analyse; analysis stopped here (please report this script to packlint)",
                None,
            )
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
            self.diag(
                "info",
                "no-launch-found",
                f"no launch recognised: `{head}` {why}, but packlint does not "
                f"know `{head}` as a launcher{more}; its settings are not checked",
                span,
            )
            return
        gates = sorted(
            {
                n
                for w in worlds
                for n, v in w.vars.items()
                if v.exported and v.source != "caller" and PACKING_GATE.search(n)
            }
        )
        if gates:
            var = next(w.vars[gates[0]] for w in worlds if gates[0] in w.vars)
            self.diag(
                "info",
                "no-launch-found",
                f"the script sets packing settings ({', '.join(gates[:4])}) but "
                "packlint recognises no launch in it; nothing is checked against them",
                var.assigned_at,
            )

    def realpath(self, path: str) -> str:
        """os.path.realpath, once per path for this script's analysis."""
        found = self._realpaths.get(path)
        if found is None:
            found = self._realpaths[path] = os.path.realpath(path)
        return found

    def add_budget(self, src: SourceFile, real_path: str | None) -> None:
        """Each file read (the script, files it sources or runs) adds to the work budget by its size."""
        key = self.realpath(real_path) if real_path else None
        if key is None and self._budgeted:
            return  # code strings (`bash -c`, `eval`) add nothing: a loop could feed them forever
        if key not in self._budgeted:
            self._budgeted.add(key)
            self.budget += len(src.data) // WORK_BYTES

    def diag(
        self, severity: str, code: str, message: str, span: Span | None, evidence: tuple[str, str] | None = None
    ) -> None:
        if code in STOP_CODES:  # PK902 once per file: later stops are noted, not reported again
            if self.stop_reported:
                severity, code = "info", "analysis-limit"
            self.stop_reported = True
        key = (code, message, span)
        if key not in self._diag_seen:
            self._diag_seen.add(key)
            self.diagnostics.append(Diagnostic(severity, code, message, span, None, evidence))

    def exec_block(self, stmts: list[Node], worlds: list[World], ps: ParsedScript) -> list[World]:
        for stmt in stmts:
            active = [w for w in worlds if w.flow is None]
            if not active:
                break
            done = [w for w in worlds if w.flow is not None]
            out: list[World] = []
            for w in active:
                out.extend(self.exec_stmt(stmt, w, ps))
            # merging costs a pass over every variable: only worth it when this statement forked
            worlds = self.merge(done + out) if len(out) > len(active) else done + out
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
                out.extend(builtins.builtin_eval(self, [Known("eval"), code], w, ps, span, None))
            finally:
                self.context.pop()
        return out

    def merge(self, worlds: list[World]) -> list[World]:
        if len(worlds) <= 1:
            return worlds
        self.work += len(worlds) * len(worlds[0].vars) // 32  # comparing states costs about this
        # Same state = same Variable objects (assignments replace them, never mutate them): compare the
        # cheap parts first, then the variable maps as dicts (identity of values, at C speed).
        buckets: dict[tuple[object, ...], list[World]] = {}
        result: list[World] = []
        for w in worlds:
            light = (len(w.vars), w.flow, w.allexport, len(w.locals_stack), tuple(_vkey(p) for p in w.positional))
            for r in buckets.get(light, ()):
                if r.vars == w.vars and r.functions.keys() == w.functions.keys():
                    r.when = common_prefix(r.when, w.when)
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
                self.diag(
                    "info",
                    "too-many-branches",
                    f"more than {MAX_WORLDS} combinations of undecidable branches; the paths beyond "
                    f"the first {MAX_WORLDS - 1} are followed as one, with the values they disagree on "
                    "unknown",
                    here,
                )
            keep = max(1, MAX_WORLDS - len({w.flow for w in result[MAX_WORLDS - 1 :]}))
            rest = result[keep:]
            flows = list(dict.fromkeys(w.flow for w in rest))  # worlds leaving by exit/break stay apart
            result = result[:keep] + [
                join_worlds(
                    [w for w in rest if w.flow == f], "more undecidable branches than packlint follows one by one", here
                )
                for f in flows
            ]
        return result

    def exec_stmt(self, node: Node, world: World, ps: ParsedScript) -> list[World]:
        """Run one statement in one world: the worlds it leads to (forks at undecidable branches)."""
        self._here = (node, ps)
        if self.depth == 0 and not self.source_calls and self.call_depth == 0:
            self._top_stmt = node
            self.caller_args_hit = False
            self.vanished_hit = []
        self.seq += 1
        self.work += 1
        if self.work > self.budget:
            raise OutOfWork(ps.source.span(node))
        self.depth += 1
        try:
            if self.depth > MAX_NESTING:
                self.diag(
                    "warning",
                    "too-deep",
                    "nesting too deep to analyse; the rest of this construct is skipped",
                    ps.source.span(node),
                )
                return [world]
            if node.type == "ERROR" or node.has_error and inside_error(node, ps):
                self.names_unknown(node, world, ps)
                return [world]
            handler = STATEMENTS.get(node.type)
            if handler is None:
                return [world]
            following = node.next_sibling
            if following is not None and following.type == "&":
                # `cmd &` runs in a background subshell: what it launches starts, what it sets or
                # exports never reaches this shell (`export A=1 & export B=1` leaves A unset)
                handler(self, node, world.fork(), ps)
                return [world]
            saved_cut = self.error_cut
            if node.has_error and node.type in (
                "command",
                "declaration_command",
                "variable_assignment",
                "variable_assignments",
                "redirected_statement",
            ):
                cuts = [a for a, b in ps.error_ranges if node.start_byte <= a < node.end_byte]
                if cuts:
                    self.error_cut = min(cuts)
                    self.names_unknown(node, world, ps)
            try:
                return handler(self, node, world, ps)
            finally:
                self.error_cut = saved_cut
        finally:
            self.depth -= 1

    def names_unknown(self, node: Node, world: World, ps: ParsedScript) -> None:
        """A construct packlint could not parse: whatever it assigns becomes unknown."""
        text = text_of(node)
        span = ps.source.span(node)
        for m in re.finditer(r"(?:^|[;\s])(?:export\s+|declare\s+(?:-\w+\s+)*|local\s+)?([A-Za-z_]\w*)\+?=", text):
            name = m.group(1)
            old = world.vars.get(name)
            world.vars[name] = Variable(
                Unknown("could not analyse this line", span),
                None,
                old.exported if old else "export" in m.group(0),
                span,
            )

    def set_var(self, world: World, name: str, var: Variable, span: Span | None) -> None:
        """Every assignment goes through here: `set -a` exports, and exports are recorded in order."""
        if world.allexport and not var.exported and var.source != "unset":
            var.exported = True  # `set -a`: every assignment exports
            var.exported_at = var.exported_at or span
        if var.exported:
            self.export_events.append((self.seq, name, var.exported_at or span, var))
        old = world.vars.get(name)
        if old is not None and old.assigned_at is not None and var.assigned_at is not None:
            self._note_replaced(old, var)
        world.vars[name] = var

    def _note_replaced(self, old: Variable, new: Variable) -> None:
        """Record whether an assignment replaced a value with an equal one (read by PK105's facts)."""
        a, b = old.value, new.value
        if old.items is not None or new.items is not None or a is None or b is None:
            verdict = "unknown"
        elif isinstance(a, Known) and isinstance(b, Known):
            rests = evidence.from_origin(a.origin) or evidence.from_origin(b.origin)
            if not rests:
                verdict = "same" if a.text == b.text else "differ"
            else:
                # read from variables the script never sets (`$PMIX_RANK` then `$PALS_RANKID`): equal only
                # when from the same source; two sources are two settings, the first one lost
                verdict = "same" if a.text == b.text and a.origin == b.origin else "differ"
        else:
            # a value packlint cannot compute (`$(...)`): equal to the same unknown passed on, else undecided
            verdict = "same" if a == b else "unknown"
        if old.assigned_at is None or new.assigned_at is None:
            return
        key = (old.assigned_at, new.assigned_at)
        seen = self.replaced_values.get(key)
        if seen is None:
            if len(self.replaced_values) < 65536:  # bounded whatever the script
                self.replaced_values[key] = {verdict}
        else:
            seen.add(verdict)


def _vkey(v: Value | None) -> tuple[object, ...] | None:
    if v is None:
        return None
    if isinstance(v, Known):
        return ("k", v.text, v.span)
    return ("u", v.reason)


def _may_launch_after(ps: ParsedScript, start: int, launches: list[LaunchInstance], where: Span | None) -> bool:
    """Whether a launch may lie in the part of the script the analysis did not finish: a launcher word
    in the text from the construct that stopped to the end (functions it calls included), or a launch
    already seen inside that construct (its later iterations)."""
    if any(where is not None and x.span.file == where.file and x.span.line >= where.line for x in launches):
        return True
    if LAUNCH_WORD.search(ps.source.data, start):
        return True
    return any(LAUNCH_WORD.search(bytes_of(f)) for f in function_nodes(ps.root))


Handler = Callable[[Interpreter, "Node", World, ParsedScript], "list[World]"]

# What runs a statement, by tree-sitter-bash node type (other node types do nothing).
STATEMENTS: dict[str, Handler] = {
    "program": statements.exec_program,
    "compound_statement": statements.exec_compound,
    "do_group": statements.exec_compound,
    "subshell": statements.exec_subshell,
    "redirected_statement": statements.exec_redirected,
    "pipeline": statements.exec_pipeline,
    "negated_command": statements.exec_negated,
    "list": statements.exec_list,
    "test_command": statements.exec_test,
    "function_definition": statements.exec_function_definition,
    "variable_assignment": statements.exec_assignment,
    "variable_assignments": statements.exec_assignments,
    "if_statement": statements.exec_if,
    "case_statement": statements.exec_case,
    "for_statement": loops.exec_for,
    "c_style_for_statement": loops.exec_c_for,
    "while_statement": loops.exec_while,
    "command": commands.exec_command,
    "declaration_command": declarations.exec_declaration,
    "unset_command": declarations.exec_unset,
}
