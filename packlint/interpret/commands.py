"""Simple commands: prefix assignments, wrappers peeled, aliases, functions, launches recorded."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Container
from typing import TYPE_CHECKING

from packlint import launchers as L
from packlint.interpret import assignment, builtins, expansion, nested_code
from packlint.interpret.bash_tables import (
    CLEAR_ENV,
    NOT_LAUNCHERS,
    SRUN_TASK_ENV,
    SUBMITTERS,
    TRAINING_FLAGS,
    UNKNOWN_PART,
)
from packlint.interpret.limits import MAX_CALL_DEPTH, MAX_WORDS
from packlint.interpret.syntax import child_statements, escaped_blanks, glue_chain, glued_groups
from packlint.interpret.words import capped_words
from packlint.interpret.world import LaunchInstance, StatusOut, World
from packlint.parse import ParsedScript
from packlint.values import ARGS_ORIGIN, Known, Span, Unknown, Value, Variable, as_arguments

if TYPE_CHECKING:
    from tree_sitter import Node

    from packlint.interpret.run import Interpreter


def _words_after_redirects(node: Node) -> list[Node]:
    """Words written after a redirection (`torchrun x.py --a <A> \\ --b 1`: bash redirects from `A` and to
    `--b`, and `1` stays an argument): tree-sitter-bash makes them extra destinations of the statement's
    last file redirection; each redirection takes one word, the rest are the command's arguments."""
    parent = node.parent
    if parent is None or parent.type != "redirected_statement" or parent.child_by_field_name("body") != node:
        return []
    out: list[Node] = []
    for r in parent.children_by_field_name("redirect"):
        if r.type == "file_redirect":
            dest = r.children_by_field_name("destination")
            # the target is the first word: nodes glued to it without a blank are part of it
            # (`> $LOG/$SAVE.log`: tree-sitter-bash splits after the `$`)
            k = 1
            while k < len(dest) and dest[k].start_byte == dest[k - 1].end_byte:
                k += 1
            out += dest[k:]
    return out


def _stdin_from_elsewhere(interp: Interpreter, node: Node, ps: ParsedScript) -> str | None:
    """`python run_benchmark.py --model <model name> \\` (a placeholder left in DeepSpeedExamples' run_aml.sh):
    bash opens `<model` before it runs the command, and the command runs only if a file `model` exists where
    the script is started. The redirection's literal file when the checkout does not hold it (beside the
    script or at the checkout's root), else None."""
    parent = node.parent
    if parent is None or parent.type != "redirected_statement" or parent.child_by_field_name("body") != node:
        return None
    for r in parent.children_by_field_name("redirect"):
        if r.type != "file_redirect" or not any(c.type == "<" for c in r.children if not c.is_named):
            continue
        dest = r.children_by_field_name("destination")
        if not dest or dest[0].type != "word":
            continue
        name = ps.source.data[dest[0].start_byte : dest[0].end_byte].decode("utf-8", "replace")
        if not name or name.startswith(("$", "~")) or os.path.isabs(name) or name.startswith("/dev/"):
            continue
        from packlint.scope import checkout_of

        script = interp.source_stack[-1] if interp.source_stack else None
        where = [os.path.dirname(script), checkout_of(script)] if script else []
        if not any(os.path.exists(os.path.join(d, name)) for d in where):
            return name
    return None


def _resting_on(fields: list[Value], because: str) -> list[Value]:
    """The command's words, each resting on the machine (`because`): what is decided from them is an info."""
    from packlint import evidence

    origin = evidence.origin_of(evidence.MACHINE, because)
    return [
        Known(f.text, f.span, origin) if isinstance(f, Known) and f.origin in (None, ARGS_ORIGIN) else f for f in fields
    ]


def _io_number(node: Node, last: Node) -> bool:
    """tree-sitter-bash reads `--x "a"\\` + newline + `  2>&1 | tee log` as the argument `2` and the redirection
    `>&1`: a number the command ends on that touches the redirection after the command is the redirection's file
    descriptor, as bash reads it (nauyan/PathologyVLM)."""
    if last.type != "number" or node.parent is None or node.parent.type != "redirected_statement":
        return False
    redirect = node.next_sibling
    return (
        redirect is not None
        and redirect.type == "file_redirect"
        and redirect.start_byte == last.end_byte
        and redirect.child_by_field_name("descriptor") is None
    )


def exec_command(
    interp: Interpreter, node: Node, world: World, ps: ParsedScript, status_out: StatusOut | None = None
) -> list[World]:
    """A simple command: prefix assignments (`A=1 cmd`) hold for the command only, alone they assign."""
    name_node = node.child_by_field_name("name")
    prefix: list[Node] = []
    if name_node is not None:
        name_start = name_node.start_byte
        prefix = [c for c in node.children if c.type == "variable_assignment" and c.start_byte < name_start]
    arg_nodes = node.children_by_field_name("argument")
    words = (
        [name_node]
        + [a for a in arg_nodes if a.type not in ("herestring_redirect", "file_redirect", "heredoc_redirect")]
        if name_node is not None
        else []
    )
    if words:
        words += _words_after_redirects(node)
        if _io_number(node, words[-1]):
            words.pop()
    glue_tail = None
    if prefix and words:
        # `A=$D/$T.log` read by tree-sitter as `A=$D/$` + command `T.log` (and `x$a-y$b-z$c-v` split twice)
        glue_tail = glue_chain(prefix[-1].child_by_field_name("value"), prefix[-1].end_byte, words) or None
        if glue_tail:
            del words[: len(glue_tail)]
            name_node = words[0] if words else None
    if name_node is None:
        for n, a in enumerate(prefix):
            assignment.assign(interp, a, world, ps, glue_tail=glue_tail if n == len(prefix) - 1 else None)
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
            assignment.assign(interp, a, world, ps)
        prefix = prefix[split_at:]
    first = prefix[0] if prefix else name_node
    span = ps.source.span(node) if first is items[0] else ps.source.span_of_points(first.start_point, node.end_point)
    fields = capped_words(command_fields(interp, words, world, ps, span), span)
    missing = _stdin_from_elsewhere(interp, node, ps)
    if missing is not None:
        fields = _resting_on(
            fields,
            f"the command runs only if `{missing}` exists where the script starts (bash opens `<{missing}` first)",
        )
    prefix_env: dict[str, Variable] = {}
    for n, a in enumerate(prefix):
        name, var = assignment.assignment_value(
            interp, a, world, ps, glue_tail=glue_tail if n == len(prefix) - 1 else None
        )
        if name is not None:
            prefix_env[name] = Variable(var.value, var.items, True, var.assigned_at, var.assigned_at, "prefix")
    return run_command(interp, fields, prefix_env, world, ps, span, node, status_out)


def command_fields(interp: Interpreter, words: list[Node], world: World, ps: ParsedScript, span: Span) -> list[Value]:
    """The fields of a command's words, with the words of escaped blanks between them that
    tree-sitter-bash skips as space (`--max_len 200 \\ \\` + newline: bash passes a word ` `)."""
    data = ps.source.data
    fields: list[Value] = []
    groups = glued_groups(words)
    prev_n = 0
    gone: tuple[int, str] | None = None  # a word of a variable the script never sets, taken as empty: no field
    for k, group in enumerate(groups):
        new = expansion.expand_group(interp, group, world, ps)
        if not new and (name := _unset_word(group, world)) is not None:
            interp.vanished_hit.append(name)  # (the launch model's `vanished`: the environment may give words here)
            if gone is None:
                gone = (len(fields), name)
        gap = escaped_blanks(data, groups[k - 1][-1].end_byte, group[0].start_byte) if k else None
        if gap is not None:
            new = _with_blanks(fields, prev_n, gap, new, span)
        fields.extend(new)
        prev_n = len(new)
        if len(fields) > MAX_WORDS:
            return fields
    if words:  # `python x.py \ ` at the end of the line
        end = words[-1].end_byte
        eol = data.find(b"\n", end)
        tail = escaped_blanks(data, end, len(data) if eol < 0 else eol)
        if tail is not None:
            fields.extend(_with_blanks(fields, prev_n, (tail[0], tail[1], False), [], span))
    if gone is not None and _runs_script(fields, world):
        # the called script's `$1`, `$2`... after it are where they are only if it is empty
        fields[gone[0] :] = [_resting_on_unset(v, gone[1]) for v in fields[gone[0] :]]
    return fields


def _runs_script(fields: list[Value], world: World) -> bool:
    """The command runs a script or function that reads its words as positional arguments (`bash x.sh ...`,
    `source x.sh ...`, `./x.sh ...`, a function): where each word stands is what it reads."""
    head = fields[0] if fields else None
    if not isinstance(head, Known):
        return False
    name = os.path.basename(head.text)
    return name in ("bash", "sh", "source", ".", "sbatch") or name.endswith(".sh") or head.text in world.functions


_LONE_NAME = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


def _unset_word(group: list[Node], world: World) -> str | None:
    """NAME when the word is a lone unquoted `$NAME` (`${NAME}`) of a variable the script never sets: packlint takes it
    as empty, so it gives no field, and where the words after it stand (a called script's `$2`, `$3`...) rests on that
    (omron-sinicx/WhereIsTheAnswer: `bash run_train.sh 8 $PATH_TO_SAVE_MODEL ./ds.json ...`, the user's export)."""
    if len(group) != 1 or group[0].type not in ("simple_expansion", "expansion"):
        return None
    m = _LONE_NAME.fullmatch((group[0].text or b"").decode("utf-8", "replace"))
    return m.group(1) if m is not None and m.group(1) not in world.vars else None


def _resting_on_unset(v: Value, name: str) -> Value:
    if isinstance(v, Known) and not v.origin:
        # (the environment's: where the words after it stand is the machine's, packlint.evidence)
        return Known(v.text, v.span, f"machine:${name}, which the script never sets, gave no word before it", v.segs)
    return v


def _with_blanks(
    fields: list[Value], prev_n: int, gap: tuple[bool, list[str], bool], new: list[Value], span: Span
) -> list[Value]:
    """`new` with the escaped-blank words before it; one that touches the word before or after joins it
    (the field before is taken off `fields`)."""
    before, blanks, after = gap
    words: list[Value] = [Known(b, span) for b in blanks]
    if before:
        words[0] = _join(fields.pop() if prev_n else None, words[0], span)
    if after:
        words[-1] = _join(words[-1], new[0] if new else None, span)
        new = new[1:]
    return words + new


def _join(a: Value | None, b: Value | None, span: Span) -> Value:
    if isinstance(a, Known | None) and isinstance(b, Known | None):
        return Known((a.text if a else "") + (b.text if b else ""), span)
    return Unknown("a word joined to an escaped blank (`\\ `)", span)


def run_command(
    interp: Interpreter,
    fields: list[Value],
    prefix_env: dict[str, Variable],
    world: World,
    ps: ParsedScript,
    span: Span,
    node: Node,
    status_out: StatusOut | None = None,
) -> list[World]:
    """Run one expanded command line: wrappers peeled, then an alias, a function, a container, a
    submitted or launched command, a nested shell, a builtin, or an unknown command (in that order)."""
    if not fields:
        return [world]
    fields, exec_replaces = peel_wrappers(fields, prefix_env)
    if not fields:
        return [world]
    head = fields[0]
    name = head.text if isinstance(head, Known) else None
    if name is not None and world.expand_aliases and world.aliases and name in world.aliases and interp.alias_depth < 8:
        words = alias_words(world.aliases[name])
        if words:
            interp.alias_depth += 1
            try:
                return run_command(interp, words + fields[1:], prefix_env, world, ps, span, node, status_out)
            finally:
                interp.alias_depth -= 1
    if name is not None and "/" not in name and name in world.functions:
        return call_function(interp, name, fields[1:], prefix_env, world, span)
    container = L.split_container(fields)
    if container is not None:
        return run_in_container(interp, fields, container, prefix_env, world, ps, span, node)
    launcher = L.launcher_name(fields)
    if launcher in SUBMITTERS:
        return nested_code.run_submitted(interp, launcher, fields, prefix_env, world, ps, span, node)
    if launcher is not None:
        run_launcher(interp, launcher, fields, prefix_env, world, ps, span, node)
        if exec_replaces:
            world.flow = "exit"
        return [world]
    base = os.path.basename(name) if name else None
    if base in ("bash", "sh", "zsh", "dash"):
        return nested_code.run_shell(interp, fields, prefix_env, world, ps, span, node)
    if name is not None and "/" in name and name.endswith(".sh"):
        # `./torchrun.sh --nproc_per_node 8 train.py`: a script of the checkout run by its path, followed as
        # `bash ./torchrun.sh ...` is (a repository's own wrapper ending in `torchrun "$@"`)
        shell = [Known("bash", head.span), *fields]
        return nested_code.run_shell(interp, shell, prefix_env, world, ps, span, node)
    handler = builtins.BUILTINS.get(name) if name else None
    if handler is not None:
        out = handler(interp, fields, world, ps, span, status_out)
        if name == "read":
            nested_code.read_heredoc(interp, fields, out, ps, node)
        return out
    note_unknown_command(interp, fields, span, ps)
    return [world]


def peel_wrappers(fields: list[Value], prefix_env: dict[str, Variable]) -> tuple[list[Value], bool]:
    """`env A=1 nohup exec time CMD`: the command the wrappers run, with what `env` sets or unsets
    added to prefix_env; True when `exec` replaces the shell."""
    exec_replaces = False
    while fields:
        head = L.basename(fields[0])
        if head not in L.WRAPPERS:
            break
        if head == "exec":
            exec_replaces = True
        value_opts, n_pos = L.WRAPPERS[head]
        i, xargs_token = _wrapper_options(head, value_opts, fields, prefix_env)
        i += n_pos
        fields = fields[i:]
        if xargs_token:
            fields = [
                Unknown(f"replaced by xargs input ({xargs_token})", v.span)
                if isinstance(v, Known) and xargs_token in v.text
                else v
                for v in fields
            ]
    return fields, exec_replaces


def _wrapper_options(
    head: str, value_opts: Container[str], fields: list[Value], prefix_env: dict[str, Variable]
) -> tuple[int, str | None]:
    """Read the options of one wrapper (`env -u X A=1`, `xargs -I{}`, `nsys profile -o f`): the index
    of the first word after them, and the placeholder `xargs -I` replaces (None: none)."""
    xargs_token = None
    i = 1
    while i < len(fields):
        f = fields[i]
        if not isinstance(f, Known):
            name = assignment.assignment_prefix(f) if head == "env" else None
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
            prefix_env[CLEAR_ENV] = Variable(None, None, False, f.span, None, "unset")
            i += 1
            continue
        if head == "xargs" and f.text.startswith("-I"):
            # `xargs -I{} cmd ... {}`: the placeholder is replaced by input at run time
            following = fields[i + 1] if i + 1 < len(fields) else None
            token = f.text[2:] or (following.text if isinstance(following, Known) else None)
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
    return i, xargs_token


def alias_words(alias: tuple[str, Span | None]) -> list[Value]:
    """The words `alias NAME=...` stands for (empty when its text does not split as shell words)."""
    value, aspan = alias
    try:
        return [Known(w, aspan) for w in shlex.split(value)]
    except ValueError:
        return []


def run_launcher(
    interp: Interpreter,
    launcher: str,
    fields: list[Value],
    prefix_env: dict[str, Variable],
    world: World,
    ps: ParsedScript,
    span: Span,
    node: Node,
) -> None:
    """A launcher (torchrun, srun, deepspeed ...): recorded as a launch, or, when it runs a shell
    (`srun ... bash -c "torchrun ..."`), the launches inside that shell are recorded under it."""
    prefix_env = launcher_env(interp, fields, prefix_env, world, span)
    inner = L.inner_shell_command(fields)
    if inner is None:
        record_launch(interp, fields, prefix_env, world, span)
        nested_code.run_after_dashdash(interp, fields, prefix_env, world, ps, span, node)  # `tool.py -- CMD`
        return
    interp.launch_prefix.append((fields[:inner], list(fields), span))
    task_env = dict(prefix_env)
    if launcher == "srun":
        for name in SRUN_TASK_ENV:
            if name not in world.vars:
                task_env[name] = Variable(
                    Unknown(f"${name} is set by srun for each task"), exported=True, source="cluster"
                )
    before = len(interp.launches)
    try:
        nested_code.run_shell(interp, fields[inner:], task_env, world, ps, span, node)
    finally:
        interp.launch_prefix.pop()
    if len(interp.launches) == before:
        # nothing we know runs inside: the launcher still starts the command it is given
        record_launch(interp, fields, prefix_env, world, span)


def note_unknown_command(interp: Interpreter, fields: list[Value], span: Span, ps: ParsedScript) -> None:
    """A command packlint does not know that looks like it starts training (a `*.py` program or
    Megatron-style flags among its words): named by PK903 when the file has no launch at all."""
    if len(interp.unknown_launchers) >= 8:
        return
    head = L.basename(fields[0])
    if head is None:  # `${LAUNCH_SCRIPT} train.py`: a command whose name is not known statically
        at = fields[0].span
        word = ""
        if at is not None and at.line == at.end_line and at.file == ps.source.path:
            word = ps.source.line_text(at.line - 1 - ps.source.line_base)[at.column - 1 : at.end_column - 1]
        head = word.strip() or "(a command whose name is unknown)"
    if head in NOT_LAUNCHERS:
        return
    why = None
    for f in fields[1:]:
        if isinstance(f, Known):
            if f.text.endswith(".py") and not f.text.startswith("-"):
                why = f"runs `{f.text}`"
                break
            if f.text.split("=")[0] in TRAINING_FLAGS:
                why = f"is given `{f.text.split('=')[0]}`"
                break
    if why is not None:
        interp.unknown_launchers.append((head, why, span))


def run_in_container(
    interp: Interpreter,
    fields: list[Value],
    container: tuple[L.ContainerSpec, list[L.Option], int],
    prefix_env: dict[str, Variable],
    world: World,
    ps: ParsedScript,
    span: Span,
    node: Node,
) -> list[World]:
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
    interp.context.append(f"inside `{L.basename(fields[0])} {fields[1].text}` at {span.short()}")
    try:
        run_command(interp, fields[k:], {}, inside, ps, span, node)
    finally:
        interp.context.pop()
    return [world]


def launcher_env(
    interp: Interpreter, fields: list[Value], prefix_env: dict[str, Variable], world: World, span: Span
) -> dict[str, Variable]:
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
        env = {CLEAR_ENV: Variable(None, None, False, span, None, "unset")}
    for name, value in added.items():
        if value is None:
            old = prefix_env.get(name) or world.vars.get(name)
            if old is not None and old.exported and old.value is not None and old.items is None:
                env[name] = old
        else:
            env[name] = Variable(value, None, True, value.span, value.span, "prefix")
    return env


def call_function(
    interp: Interpreter, name: str, args: list[Value], prefix_env: dict[str, Variable], world: World, span: Span
) -> list[World]:
    """Call a shell function: positional arguments, prefix variables and `local`s restored afterwards."""
    body, fps = world.functions[name]
    if interp.call_depth >= MAX_CALL_DEPTH:
        interp.diag(
            "warning",
            "recursion",
            f"function `{name}` calls nest deeper than {MAX_CALL_DEPTH}; not followed further",
            span,
        )
        return [world]
    saved_positional, saved_script_args = world.positional, world.script_args
    world.positional = as_arguments(list(args))
    world.script_args = False
    saved_prefix = {}
    for k, v in prefix_env.items():
        saved_prefix[k] = world.vars.get(k)
        world.vars[k] = v
    world.locals_stack.append({})
    interp.call_depth += 1
    interp.context.append(f"{name}() called at {span.short()}")
    try:
        out = interp.exec_block(child_statements(body) if body.type == "compound_statement" else [body], [world], fps)
    finally:
        interp.call_depth -= 1
        interp.context.pop()
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
        w.positional, w.script_args = saved_positional, saved_script_args
        if w.flow == "return":
            w.flow = None
    return interp.merge(out)


def record_launch(
    interp: Interpreter, fields: list[Value], prefix_env: dict[str, Variable], world: World, span: Span
) -> None:
    # bash exports scalars only: arrays and names marked for export but never set stay behind
    """Record a launch: the environment the process gets (exported scalars, prefix variables, `mpirun -x`)."""
    env = {k: v for k, v in world.vars.items() if v.exported and v.items is None and v.value is not None}
    unexported = {
        k: v
        for k, v in world.vars.items()
        if (not v.exported or v.items is not None) and k not in prefix_env and not k.startswith(UNKNOWN_PART)
    }
    if CLEAR_ENV in prefix_env:
        env = {}
    for k, v in prefix_env.items():
        if v.source == "unset":
            env.pop(k, None)
        else:
            env[k] = v
    if L.basename(fields[0]) in ("mpirun", "mpiexec"):
        # `mpirun -x NAME=VALUE` sets NAME for the ranks it starts
        for opt, val in zip(fields, fields[1:], strict=False):
            if isinstance(opt, Known) and opt.text == "-x" and isinstance(val, Known) and "=" in val.text:
                name, _, text = val.text.partition("=")
                env[name] = Variable(Known(text, val.span), None, True, val.span, val.span, "prefix")
    command = None
    if interp.launch_prefix:
        # the process runs under the outer launcher(s); bash itself executes the outer command
        fields = [f for prefix, _, _ in interp.launch_prefix for f in prefix] + list(fields)
        _, command, span = interp.launch_prefix[0]
    interp.launches.append(
        LaunchInstance(
            span,
            tuple(interp.context),
            interp.seq,
            list(fields),
            env,
            unexported,
            world.when,
            command,
            interp.caller_args_hit,
            tuple(v.text for v in world.positional if isinstance(v, Known) and v.origin == ARGS_ORIGIN),
            tuple(dict.fromkeys(interp.vanished_hit))[:16],
        )
    )


_NEWLINE = re.compile(rb"(?<!\\)\n")
# `key=v \  # note`: an escaped blank after the last word, before a comment or the line's end, is a word
# of its own in bash (` `); tree-sitter-bash leaves it out of the command (verl's run_deepseek7b_llm_pfppo.sh)
