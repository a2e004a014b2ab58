"""Code run by another shell: `bash -c`, `bash file`, `eval`, `sbatch`, `ssh`, `pdsh`, `ray job submit`,
`gantry run`, and the command after `--` of a submission wrapper (`python mason.py [opts] -- CMD`)."""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING

from packlint import evidence
from packlint import launchers as L
from packlint.errors import PacklintError
from packlint.interpret import commands, expansion, sourcing
from packlint.interpret.bash_tables import UNKNOWN_PART
from packlint.interpret.syntax import bytes_of, child_statements, runnable
from packlint.interpret.words import ORIGIN_NOTE, Piece, carried, join_pieces
from packlint.interpret.world import World
from packlint.launchers.tables import PYTHON_NAME
from packlint.parse import ParsedScript, parse
from packlint.source import SourceFile, load
from packlint.values import Known, Span, Unknown, Value, Variable, as_arguments

if TYPE_CHECKING:
    from tree_sitter import Node

    from packlint.interpret.run import Interpreter


def submitted_world(
    interp: Interpreter,
    world: World,
    prefix_env: dict[str, Variable],
    *,
    remote: bool,
    export: tuple[bool, dict[str, Value | None]] | None = None,
) -> World:
    """The shell a submitted command runs in: a fresh process. A remote one (ssh, pdsh, ray) starts
    from that machine's environment, which the script cannot see: nothing of ours reaches it."""
    child = world.fork()
    inherit = not remote and (export is None or export[0])
    env = {k: v for k, v in world.vars.items() if v.exported and v.items is None} if inherit else {}
    if inherit:
        env.update({k: v for k, v in prefix_env.items() if v.source != "unset"})
    for name, value in export[1].items() if export else ():
        if value is None:
            old = prefix_env.get(name) or world.vars.get(name)
            if old is not None and old.exported:
                env[name] = old
        else:
            env[name] = Variable(value, None, True, value.span, value.span, "prefix")
    child.vars = env
    child.vars.update(_code_parts(world))
    child.functions = {}
    child.locals_stack = []
    child.positional = []
    child.script_args = False
    child.flow = None
    return child


def run_submitted(
    interp: Interpreter,
    launcher: str,
    fields: list[Value],
    prefix_env: dict[str, Variable],
    world: World,
    ps: ParsedScript,
    span: Span,
    node: Node,
) -> list[World]:
    """Commands that hand a command to another shell: `sbatch --wrap`, a job script (`sbatch job.sh`,
    `sbatch <<EOF`), `ssh HOST CMD`, `pdsh -w HOSTS CMD`, `ray job submit -- CMD`. What that shell
    launches is analysed with the environment it gets (see docs/launch-forms.md)."""
    spec = L.LAUNCHERS[launcher]
    interp.context.append(f"run by `{launcher}` at {span.short()}")
    try:
        if launcher in ("ray job submit", "gantry run"):
            opts, k, _ = L._split_options(spec, fields, spec.words)
            if k < len(fields):
                child = submitted_world(interp, world, prefix_env, remote=True)
                for opt in opts:  # `gantry run --env NAME=VALUE`: set for the command on the cluster
                    value = opt.args[0] if opt.name in spec.env_options and opt.args else None
                    if isinstance(value, Known) and "=" in value.text:
                        name, _, text = value.text.partition("=")
                        at = value.span
                        child.vars[name] = Variable(Known(text, at), None, True, at, at, "prefix")
                    secret = opt.args[0] if opt.name == "--env-secret" and opt.args else None
                    if isinstance(secret, Known) and "=" in secret.text:  # its value: the secret's, unknown
                        name = secret.text.partition("=")[0]
                        at = secret.span
                        why = f"${name} is the Beaker secret {secret.text.partition('=')[2]}"
                        child.vars[name] = Variable(Unknown(why, at), None, True, at, at, "prefix")
                commands.run_command(interp, list(fields[k:]), {}, child, ps, span, node)
            return [world]
        string = L.command_string(fields)
        if string is not None:
            spec, _, words = string
            export = None
            if launcher == "sbatch":
                opts, _, _ = L._split_options(spec, fields, 1)
                export = L.export_option(opts)
            child = submitted_world(interp, world, prefix_env, remote=spec.remote, export=export)
            code = code_text(interp, words, child)
            if code is None:
                interp.diag("info", "unanalysed", f"the command `{launcher}` runs is unknown; not analysed", span)
                return [world]
            exec_source(interp, embedded_source(ps, code.text, code.span or span), child, None)
            return [world]
        run_job_script(interp, fields, prefix_env, world, ps, span, node)
        return [world]
    finally:
        interp.context.pop()


SHELL_OPERATORS = frozenset({"&&", "||", ";", "|"})


def run_after_dashdash(
    interp: Interpreter,
    fields: list[Value],
    prefix_env: dict[str, Variable],
    world: World,
    ps: ParsedScript,
    span: Span,
    node: Node,
) -> None:
    r"""A submission wrapper, `python mason.py [opts] -- CMD` (a Python tool whose arguments end with
    `--` and a command): CMD is a launch of its own. The wrapper's launch is recorded as it is (its
    flags stop at `--`, as argparse's do); CMD runs with the script's environment plus the wrapper's
    `--env NAME=VALUE` options. Words that are shell operators (`\&\&` in the script: mason joins the
    words and runs them in a shell) make CMD a shell command string; otherwise CMD is run as words."""
    parts = L.split_launch(fields)
    if not parts.launchers or not PYTHON_NAME.match(parts.launchers[-1]) or parts.program is None:
        return
    args = parts.program_args
    k = next((i for i, a in enumerate(args) if isinstance(a, Known) and a.text == "--"), None)
    if k is None or k + 1 >= len(args):
        return
    rest = list(args[k + 1 :])
    is_code = any(isinstance(a, Known) and a.text in SHELL_OPERATORS for a in rest)
    if not is_code and L.launcher_name(rest) is None:
        return  # `train.py -- --foo`: arguments for the program itself, not a command
    child = world.fork()
    env = dict(prefix_env)
    for opt, val in zip(args[:k], args[1:k], strict=False):
        if isinstance(opt, Known) and opt.text == "--env" and isinstance(val, Known) and "=" in val.text:
            name, _, text = val.text.partition("=")
            env[name] = Variable(Known(text, val.span), None, True, val.span, val.span, "prefix")
    interp.context.append(f"run by `{parts.program}` after `--` at {span.short()}")
    try:
        if not is_code:
            commands.run_command(interp, rest, env, child, ps, span, node)
            return
        for name, var in env.items():
            child.vars[name] = var
        words = [
            Known(shlex.quote(a.text), a.span) if isinstance(a, Known) and a.text not in SHELL_OPERATORS else a
            for a in rest
        ]
        code = code_text(interp, words, child)
        if code is not None:
            # the words were joined: findings inside point at the wrapper's command, as for `eval "$CMD"`
            data = code.text.encode("utf-8", "surrogateescape")
            src = SourceFile(ps.source.path, data, line_base=span.line - 1, column_base=span.column - 1, pinned=span)
            exec_source(interp, src, child, None)
    finally:
        interp.context.pop()


def run_job_script(
    interp: Interpreter,
    fields: list[Value],
    prefix_env: dict[str, Variable],
    world: World,
    ps: ParsedScript,
    span: Span,
    node: Node,
) -> None:
    """`sbatch [options] job.sh ARGS` or `sbatch <<EOF`: the job script runs with its `#SBATCH`
    headers and the environment `--export` gives it."""
    job = L.job_script(fields)
    if job is None:
        return
    opts, k = job
    export = L.export_option(opts)
    child = submitted_world(interp, world, prefix_env, remote=False, export=export)
    if k < len(fields):
        target = fields[k]
        path = sourcing.resolve_path(interp, target.text, world) if isinstance(target, Known) else None
        if path is None:
            return
        try:
            sf = load(path, display=sourcing.display_path(interp, path))
        except PacklintError as exc:
            interp.diag("warning", "source-unreadable", exc.one_line(), span)
            return
        child.positional = as_arguments(list(fields[k + 1 :]))
        job_env(child, sf.data)
        exec_source(interp, sf, child, path)
        return
    src = heredoc_source(interp, node, world, ps)
    if src is not None:
        job_env(child, src.data)
        exec_source(interp, src, child, None)


def job_env(child: World, data: bytes) -> None:
    """A job script's `#SBATCH` headers: Slurm sets the job's node/task/GPU counts from them."""
    if b"#SBATCH" not in data:
        return
    text = data.decode("utf-8", "replace")
    for name, value in L.sbatch_header_env(text).items():
        old = child.vars.get(name)
        if old is None or (old.source == "cluster" and not isinstance(old.value, Known)):
            child.vars[name] = Variable(Known(value), exported=True, source="cluster")
    if L.has_sbatch_headers(text):  # inside the job Slurm sets its id (`srun --jobid $SLURM_JOBID ...`)
        for name in ("SLURM_JOB_ID", "SLURM_JOBID"):
            if name not in child.vars:
                why = f"${name} is set by Slurm in the job at run time"
                child.vars[name] = Variable(Unknown(why), exported=True, source="cluster")


def heredoc_source(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> SourceFile | None:
    """The here-document fed to a command (`sbatch <<EOF ... EOF`), expanded as bash does (not
    when the delimiter is quoted), as a script of its own at its place in the file."""
    found = heredoc_text(interp, node, world, ps)
    return None if found is None else embedded_source(ps, found[0], found[2])


def heredoc_text(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> tuple[str, bool, Span] | None:
    """(the here-document's text as bash feeds it, whether its delimiter is quoted, where its body is)."""
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
    raw = ps.source.data[body.start_byte : body.end_byte]
    if start is not None and any(q in bytes_of(start) for q in (b"'", b'"', b"\\")):
        return raw.decode("utf-8", "surrogateescape"), True, bspan
    value = expansion.expand_joined(interp, body, world, ps)
    code = code_text(interp, [value], world) if not isinstance(value, Known) else value
    if code is None:
        return None
    return code.text, False, bspan


_HEREDOC_EXPANSIONS = frozenset({"simple_expansion", "expansion", "command_substitution", "arithmetic_expansion"})


def heredoc_expanded(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> Value:
    """The body of an unquoted here-document as bash feeds it: `$X`, `${X}`, `$(...)`, `$((...))` expanded,
    `\\$` `\\\\` `\\``` unescaped, the rest as written."""
    parent = node.parent if node is not None else None
    redirect = next((c for c in parent.children if c.type == "heredoc_redirect"), None) if parent is not None else None
    body = next((c for c in redirect.named_children if c.type == "heredoc_body"), None) if redirect else None
    if body is None:
        return Known("")
    data = ps.source.data
    pieces: list[Piece] = []
    pos = body.start_byte

    def literal(end: int) -> None:
        raw = data[pos:end].decode("utf-8", "surrogateescape")
        pieces.append(Piece(re.sub(r"\\([$`\\])", r"\1", raw)))

    for child in body.children:
        if child.type in _HEREDOC_EXPANSIONS:
            literal(child.start_byte)
            pieces.extend(expansion.word_pieces(interp, child, world, ps, quoted=True))
            pos = child.end_byte
    literal(body.end_byte)
    return join_pieces(pieces, ps.source.span(body))


def read_heredoc(interp: Interpreter, fields: list[Value], worlds: list[World], ps: ParsedScript, node: Node) -> None:
    """`read -r -d '' NAME <<EOF ... EOF`: with an empty delimiter `read` takes the whole here-document
    (or here-string) into NAME, trimmed of IFS whitespace (OpenRLHF's examples keep their training
    command so, then run `deepspeed --module $training_commands`)."""
    args = fields[1:]
    raw_mode, delim_empty, names, i = False, False, [], 0
    while i < len(args):
        t = args[i].text if isinstance(args[i], Known) else None
        if t is None:
            return
        if t.startswith("-") and len(t) > 1:
            raw_mode = raw_mode or "r" in t
            if t.endswith("d") and i + 1 < len(args):
                nxt = args[i + 1]
                delim_empty = isinstance(nxt, Known) and nxt.text == ""
                i += 2
                continue
            if any(c in t for c in "anNptu"):
                return  # an array, a count, a prompt, a timeout: not this form
            i += 1
            continue
        names.append(t)
        i += 1
    if not delim_empty or len(names) != 1 or not re.fullmatch(r"[A-Za-z_]\w*", names[0]):
        return
    for world in worlds:
        found = heredoc_text(interp, node, world, ps)
        if found is None:
            continue
        text, quoted, _ = found
        if not quoted:
            value = heredoc_expanded(interp, node, world, ps)
            if not isinstance(value, Known):
                span = ps.source.span(node)
                world.vars[names[0]] = Variable(Unknown(value.reason, span), assigned_at=span)
                continue
            text = value.text.replace("\\\n", "")  # an unquoted here-document drops backslash-newline
        if not raw_mode:
            text = re.sub(r"\\(.)", r"\1", text.replace("\\\n", ""), flags=re.S)
        span = ps.source.span(node)
        world.vars[names[0]] = Variable(Known(text.strip(" \t\n"), span), assigned_at=span)


def embedded_source(ps: ParsedScript, text: str, at: Span) -> SourceFile:
    """Code written inside the script (a `-c` string, a job script's here-doc) as a text of its own
    whose spans point back into the script, where the code starts (`at`)."""
    return SourceFile(
        path=ps.source.path,
        data=text.encode("utf-8", "surrogateescape"),
        line_base=at.line - 1,
        column_base=at.column,
    )


def run_shell(
    interp: Interpreter,
    fields: list[Value],
    prefix_env: dict[str, Variable],
    world: World,
    ps: ParsedScript,
    span: Span,
    node: Node,
) -> list[World]:
    """`bash -c '...'` is analysed as a script of its own; `bash other.sh args` follows the file."""
    args = fields[1:]
    i = 0
    while i < len(args):
        arg = args[i]
        if not isinstance(arg, Known) or not arg.text.startswith("-") or L.is_shell_c(arg):
            break
        i += 1
    child = world.fork()
    child.vars = {k: v for k, v in world.vars.items() if v.exported}
    child.vars.update(_code_parts(world))
    child.vars.update(prefix_env)
    child.functions = {n: f for n, f in world.functions.items() if n in world.exported_functions}
    child.locals_stack = []
    if i < len(args) and L.is_shell_c(args[i]):
        if i + 1 >= len(args):
            return [world]
        code_arg = args[i + 1]
        code = code_text(interp, [code_arg], child)
        if code is None:
            assert isinstance(code_arg, Unknown), "code_text gives every known string back"
            interp.diag(
                "info",
                "unanalysed",
                f"`{L.basename(fields[0])} -c` with an unknown command string ({code_arg.reason}) is not analysed",
                span,
            )
            return [world]
        child.positional = as_arguments(list(args[i + 3 :]))
        # `bash -c CODE NAME ARGS`: NAME becomes $0 (bash's own name when absent)
        name_arg = args[i + 2] if len(args) > i + 2 else fields[0]
        child.script = name_arg.text if isinstance(name_arg, Known) else "bash"
        exec_source(interp, embedded_source(ps, code.text, code.span or span), child, None)
        return [world]
    if i < len(args):
        target = args[i]
        if isinstance(target, Known):
            path = sourcing.resolve_path(interp, target.text, world)
            if path is not None:
                child.positional = as_arguments(list(args[i + 1 :]))
                child.script = target.text  # `bash FILE`: a new bash whose $0 is FILE as written (AlexJJ009/dpo-exp)
                try:
                    sf = load(path, display=sourcing.display_path(interp, path))
                except PacklintError as exc:
                    interp.diag("warning", "source-unreadable", exc.one_line(), span)
                    return [world]
                exec_source(interp, sf, child, path)
    return [world]


def _code_parts(world: World) -> dict[str, Variable]:
    """The variables that stand for the unknown parts of a code string (code_text): text the parent already expanded
    (`ssh host "bash -c 'cd $WORK_HOME; bash run.sh $WORK_HOME ...'"`, WORK_HOME=$PWD), not the environment, so a shell
    the string runs in, here or on another machine, sees them too (dropped, the word vanished and shifted the child's
    positional arguments: MooreThreads/MT-MegatronLM)."""
    return {k: v for k, v in world.vars.items() if k.startswith(UNKNOWN_PART)}


def code_text(interp: Interpreter, values: list[Value], world: World) -> Known | None:
    """The text of code given as a string (`bash -c`, `eval`), words joined by spaces. A partly
    unknown string keeps its known parts; each unknown part becomes a variable of `world` that
    holds an unknown value, so the code around it is still analysed. None: nothing is known.
    The words' origins go with their text (a marked origin: evidence.MARKS)."""
    text: list[str] = []
    ranges: list[tuple[int, int, str]] = []
    at = 0
    known_any = False

    def add(piece: str) -> None:
        nonlocal at
        text.append(piece)
        at += len(piece)

    for n, v in enumerate(values):
        if n:
            add(" ")
        if isinstance(v, Known):
            if v.origin and carried(v.origin):
                ranges += evidence.part_marks(v.origin, at, len(v.text))
            add(v.text)
            known_any = True
            continue
        if not v.parts:
            return None
        for piece, reason in v.parts:
            if piece is None:
                name = f"{UNKNOWN_PART}{len(world.vars)}_{len(text)}"
                world.vars[name] = Variable(Unknown(reason, v.span))
                add("${" + name + "}")
            else:
                if reason.startswith(ORIGIN_NOTE):
                    ranges += evidence.part_marks(reason[len(ORIGIN_NOTE) :], at, len(piece))
                add(piece)
                known_any = known_any or bool(piece.strip())
    if not known_any:
        return None
    first = values[0]
    return Known("".join(text), first.span, evidence.marked(ranges))


def byte_marks(code: Known) -> tuple[tuple[int, int, str], ...]:
    """A marked code text's marks as byte ranges of its UTF-8 data (SourceFile.marks)."""
    out = []
    for a, b, o in evidence.marks(code.origin):
        if 0 <= a <= b <= len(code.text):
            start = len(code.text[:a].encode("utf-8", "surrogateescape"))
            out.append((start, start + len(code.text[a:b].encode("utf-8", "surrogateescape")), o))
    return tuple(out)


def exec_source(interp: Interpreter, src: SourceFile, world: World, real_path: str | None) -> list[World]:
    """Parse and run code from another file or string in `world` (its parse problems reported)."""
    if real_path:
        interp.add_budget(src, real_path)
    ps = parse(src)
    for problem in ps.problems:
        interp.diag(problem.severity, problem.code, problem.message, problem.span)
    if real_path:
        interp.source_stack.append(interp.realpath(real_path))
    try:
        return interp.exec_block(runnable(ps, child_statements(ps.root)), [world], ps)
    finally:
        if real_path:
            interp.source_stack.pop()
