"""`source FILE` / `. FILE`: finding the file and running it in the current shell."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from itertools import islice
from typing import TYPE_CHECKING

from packlint import evidence
from packlint.caches import run_memo
from packlint.errors import PacklintError
from packlint.interpret import nested_code
from packlint.interpret.limits import MAX_SOURCE_DEPTH
from packlint.interpret.world import World
from packlint.parse import ParsedScript
from packlint.source import load
from packlint.values import Known, Span, Value, as_arguments

if TYPE_CHECKING:
    from packlint.interpret.run import Interpreter


def display_path(interp: Interpreter, path: str) -> str:
    try:
        rel = os.path.relpath(path, interp.cwd)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def resolve_path(interp: Interpreter, text: str, world: World) -> str | None:
    """Find a sourced or run file: beside the script, beside the current file, in the working directory."""
    if text.startswith("~"):
        return None
    candidates = []
    if os.path.isabs(text):
        candidates.append(text)
    else:
        if interp.source_stack:
            candidates.append(os.path.join(os.path.dirname(interp.source_stack[0]), text))
            candidates.append(os.path.join(os.path.dirname(interp.source_stack[-1]), text))
            named = os.path.dirname(os.path.join(interp.cwd, interp.display)) if interp.display else ""
            if named and os.path.islink(named):
                # a script named through a linked folder (wenet's recipes link `tools -> ../../../tools` and run
                # `tools/x.sh` from the recipe folder): its `./path.sh` is the folder that holds the link
                candidates.append(os.path.join(os.path.dirname(named), text))
        candidates.append(os.path.join(interp.cwd, text))
    for c in candidates:
        # not only regular files: `source /dev/zero` or a FIFO is then refused by load() with its reason
        if os.path.exists(c) and not os.path.isdir(c):
            return os.path.normpath(c)
    return None


def _command_word(fields: list[Value]) -> str:
    """The command as written: `source` or `.`."""
    head = fields[0]
    return head.text if isinstance(head, Known) else "source"


FILE_TESTS = re.compile(r"(?:^|\s)-[efrs]\s")  # `[ -f x ]`, `[[ -e x ]]`, `test -r x`, `[ -s x ]`
# files a set-up step makes: `python -m venv X` / `uv venv X` / virtualenv / conda (`X/bin/activate`,
# `Scripts/activate`), conda's shell hook (`.../etc/profile.d/conda.sh`)
_SETUP_MADE = re.compile(r"(?:^|/)(?:bin|Scripts)/activate(?:\.(?:sh|bash))?$|(?:^|/)etc/profile\.d/conda\.sh$")


def gitignored(interp: Interpreter, text: str) -> tuple[str, str] | None:
    """The checkout's `.gitignore` ignores the sourced path, by git's own rules (packlint.discover's
    matcher: wildcards, anchors, the deepest file deciding): a file each user makes at set-up
    (Megatron-LM-AutoTuner's `source .secrets/env.sh` with `.secrets/env.*` ignored and
    `.secrets/env_sample.sh` committed). Whether it exists rests on the machine (a premise of
    packlint.evidence). None: no .gitignore of the checkout ignores it."""
    from packlint.codebase.resolve import script_checkout_dirs
    from packlint.configs.elsewhere import _ignored_by_checkout

    script = interp.source_stack[0] if interp.source_stack else None
    dirs = script_checkout_dirs(script) if script else []
    if not dirs or not text or "$" in text or "`" in text:
        return None
    return _ignored_by_checkout(text, [*dirs, interp.cwd], dirs[-1])


def missing_in_checkout(interp: Interpreter, text: str, world: World) -> bool:
    """The sourced path surely names a missing file of the script's own checkout: a relative path (or
    an absolute one inside the checkout, `$(dirname $0)/env.sh`) found neither beside the script, in
    the working directory, nor under any directory from the script's up to its checkout root; and not
    sourced under a file test (`[ -f x ] && source x`) or an unknown condition about the file. Paths of
    the cluster's machines (`/opt/...`, `~/.bashrc`, `/usr/local/Ascend/.../set_env.sh`) are never
    missing: only their machine knows."""
    from packlint.codebase.resolve import script_checkout_dirs

    if not text or text.startswith("~") or "$" in text or _under_file_test(world):
        return False
    if _SETUP_MADE.search(text):
        return False  # a virtual environment's or conda's activation script: made at set-up, never committed
    script = interp.source_stack[0] if interp.source_stack else None
    if script is None:
        return False
    dirs = script_checkout_dirs(script)
    if not dirs:
        return False
    root = dirs[-1]
    # (a path the checkout's .gitignore ignores is missing here too: the premise gitignored() gives caps it)
    if os.path.isabs(text):
        norm = os.path.normpath(text)
        return norm.startswith(root.rstrip("/") + "/") and not os.path.exists(norm)
    if not any(_inside(os.path.join(d, text), root) for d in dirs):
        return False  # (`../../env.sh` from the checkout's root: a file above the clone, the machine's)
    return not any(os.path.exists(os.path.join(d, text)) for d in dirs)


def _inside(path: str, root: str) -> bool:
    return os.path.normpath(path).startswith(root.rstrip("/") + "/")


def _above_checkout(interp: Interpreter, text: str) -> tuple[str, str] | None:
    """`source ../../conda_env_cuda12.4.sh` in a script at the checkout's root (mr-d-self-driving/DrivePI's sbatch
    scripts): from every folder bash may resolve it in, the path climbs above the checkout's root, to a file kept
    beside the clone on the author's machine: whether it exists is the machine's, never the checkout's."""
    from packlint.codebase.resolve import script_checkout_dirs

    script = interp.source_stack[0] if interp.source_stack else None
    if not text or os.path.isabs(text) or "$" in text or script is None:
        return None
    dirs = script_checkout_dirs(script)
    if not dirs or any(_inside(os.path.join(d, text), dirs[-1]) for d in dirs):
        return None
    return (evidence.MACHINE, f"{text} climbs above the checkout's root: a file beside the clone, on the machine")


# files a set-up step makes that a checkout does not hold: a husky hook's helper (`husky install`
# writes `.husky/_/husky.sh`), a `.env` file of each user's settings
_MADE_AT_SETUP = re.compile(r"(?:^|/)\.husky/_/[^/]+$|(?:^|/)\.env(?:\.[\w.-]+)?$")


def machine_dependence(text: str) -> tuple[str, str] | None:
    """Why whether a sourced file exists depends on the machine, not the checkout (a premise of
    packlint.evidence): `source NAME` without a slash is looked up in PATH first (conda's `source
    activate ENV`), and files made at set-up are absent from any checkout. None: the checkout decides."""
    if "/" not in text:
        return (
            evidence.MACHINE,
            f"`{text}` has no slash, so bash looks it up in PATH before the current directory",
        )
    if _MADE_AT_SETUP.search(text):
        return (evidence.MACHINE, f"{text} is made at set-up, not kept in a checkout")
    name = text.rsplit("/", 1)[-1]
    if name.startswith(".") and name not in (".", ".."):
        # a dot-file is each user's set-up (`. ./config/.sft_env` beside a gitignored `.env`: lintangsutawika/lang_boot;
        # `.secrets`, `.envrc`): a missing one is the machine's, never the checkout's
        return (evidence.MACHINE, f"{text} is a hidden file: each user's set-up, not kept in a checkout")
    return None


def _unset_dependence(target: Value) -> tuple[str, str] | None:
    """`source ./config_${DGXSYSTEM}.sh` with DGXSYSTEM never set by the script (mlcommons' run_and_time.sh, whose
    caller exports it): the name read as empty is the one packlint can check, not the one a run sources: which file
    it is depends on the environment the script is run in (the machine's, a premise of packlint.evidence)."""
    origin = evidence.whole_origin(getattr(target, "origin", None))
    if not origin or not origin.startswith("unset:"):  # (parameters.UNSET_PREFIX)
        return None
    name = origin[len("unset:") :]
    because = f"${name} is never set by the script: the file sourced depends on the environment it runs in"
    return (evidence.MACHINE, because)


def _caller_dependent(ps: ParsedScript, span: Span, world: World) -> bool:
    """The `source` line names a file from positional arguments the script was not given (PK106 must
    not call the caller's file missing): guards.from_caller_arguments."""
    if world.positional:
        return False
    from packlint.interpret.guards import from_caller_arguments

    first = span.line - 1 - ps.source.line_base
    return from_caller_arguments(ps.source.data.decode("utf-8", "replace"), first, first + span.end_line - span.line)


# a command that puts a file in place: cp/mv/ln/install (the last operand, or into a directory), touch and
# tee (each operand), and an output redirection (`cat > F <<EOF`, `echo x >> F`)
_PLACES = frozenset({"cp", "mv", "ln", "install"})
_OUTPUT = re.compile(r"""(?:^|[^<>&\d])\d?>>?\|?(?!&)\s*([^\s;|&<>()]+)""")
_SEGMENTS = re.compile(r"&&|\|\||[;|&\n]")


def _written_paths(segment: str) -> tuple[list[str], list[str]]:
    """The paths one simple command writes, as written (unexpanded), and the operands cp/mv/ln/install
    copy from."""
    out = [m.group(1).strip("\"'") for m in _OUTPUT.finditer(segment)]
    try:
        words = shlex.split(_OUTPUT.sub(" ", segment), comments=True)
    except ValueError:
        words = segment.split()
    while words and words[0] in ("sudo", "command", "builtin"):
        words = words[1:]
    if not words:
        return out, []
    head, operands = os.path.basename(words[0]), [w for w in words[1:] if not w.startswith("-")]
    if head in ("touch", "tee"):
        out.extend(operands)
    elif head in _PLACES and operands:
        if "-t" in words[1:] or any(w.startswith("--target-directory") for w in words):
            return out + [os.path.join(operands[0], os.path.basename(o)) for o in operands[1:]], operands[1:]
        dest = operands[-1] if len(operands) > 1 else "."
        out.append(dest)
        out.extend(os.path.join(dest, os.path.basename(o)) for o in operands[:-1])
        return out, operands[:-1] if len(operands) > 1 else operands
    return out, []


def _names_it(written: str, text: str) -> bool:
    """`written` (a path a command writes) names the sourced `text`: the same path, or, when either is
    computed (`$DIR/env.local.sh`), the same file name."""
    a, b = os.path.normpath(written), os.path.normpath(text)
    if a == b or (os.path.isabs(a) and not os.path.isabs(b) and a.endswith("/" + b)):
        return True
    return ("$" in written or "`" in written) and os.path.basename(a) == os.path.basename(b)


def made_before(ps: ParsedScript, span: Span, text: str) -> tuple[int, str] | None:
    """The line and command of the same file that writes, copies, moves or links the sourced file into
    place before the `source` line (verl-tool's `cp env.example.sh env.local.sh` then `source env.local.sh`):
    the file is made by the script, not missing. None: nothing before it makes it."""
    lines = ps.source.data.decode("utf-8", "replace").splitlines()
    first = span.line - 1 - ps.source.line_base
    if not 0 <= first < len(lines):
        return None
    before = lines[:first] + [lines[first][: max(span.column - 1, 0)]]
    # the word as written (`source $NEW_ENV_SHELL` after `print_env_shell > $NEW_ENV_SHELL`: llm-jp/scripts)
    as_written = lines[first][max(span.column - 1, 0) :].split()[1:2]
    for i in range(len(before) - 1, -1, -1):
        for segment in _SEGMENTS.split(before[i]):
            written, copied = _written_paths(segment)
            if any(os.path.normpath(c) == os.path.normpath(text) for c in copied):
                continue  # `cp env.local.sh "$BACKUP/"`: copied away, not into place
            if any(
                _names_it(w, text) or ("$" in w and [w] == [a.strip("\"'") for a in as_written]) for w in written if w
            ):
                return i + 1 + ps.source.line_base, segment.strip()
    return None


def _submodule_dependence(interp: Interpreter, text: str) -> tuple[str, str] | None:
    """A sourced path under a git submodule that is not checked out here (packlint.discover)."""
    from packlint.codebase.resolve import script_checkout_dirs
    from packlint.configs.elsewhere import checkout_root, submodule_premise

    script = interp.source_stack[0] if interp.source_stack else None
    dirs = script_checkout_dirs(script) if script else []
    root = checkout_root(dirs)
    if root is None or not text or "$" in text:
        return None
    return submodule_premise(text, [*dirs, interp.cwd], root)


_CD = re.compile(
    r"""(?:^\s*|[;&|(]\s*|\b(?:then|do|else)\s+|\{\s+)(?:builtin\s+)?(?:cd|pushd)\s+(?:-[LPe@]+\s+|--\s+)*["']?([^\s;&|"'()]+)"""
)
_NAME_REF = re.compile(r"\$\{?([A-Za-z_]\w*)\}?")


def _cd_elsewhere(interp: Interpreter, text: str, world: World, ps: ParsedScript, span: Span) -> tuple[str, str] | None:
    """A relative sourced path after the same file `cd`s or `pushd`es into an absolute directory outside its
    checkout (NVIDIA/DeepLearningExamples Kaldi: `pushd $KALDI_ROOT/egs/librispeech/s5; . ./cmd.sh`, with
    KALDI_ROOT=/opt/kaldi/, a directory of the container): bash looks for it there, on the machine."""
    if os.path.isabs(text):
        return None
    from packlint.codebase.resolve import script_checkout_dirs
    from packlint.configs.elsewhere import checkout_root

    lines = ps.source.data.decode("utf-8", "replace").splitlines()
    first = min(max(span.line - 1 - ps.source.line_base, 0), len(lines))
    # the source's own line up to it first (`if ...; then cd /home/x/other; source ./gen.sh; fi`: geodesic-gpt-neox)
    texts = [(first, lines[first][: max(span.column - 1, 0)])] if first < len(lines) else []
    texts += [(i, lines[i]) for i in range(first - 1, -1, -1)]
    for i, text_before in texts:
        m = _CD.search(text_before.split("#", 1)[0])
        if m is None:
            continue
        target = _NAME_REF.sub(lambda n: _known_text(world, n.group(1)), m.group(1))
        lead = _NAME_REF.match(m.group(1).strip("\"'"))
        if lead is not None and lead.group(1) not in world.vars:
            # `cd $HOME` (azurehpc's io500 test, whose tutorials clone the repository there): a folder named by a
            # variable the script never sets is the environment's
            line = i + 1 + ps.source.line_base
            why = f"the script changes to ${lead.group(1)} at line {line}, which it never sets: a folder of the machine"
            return (evidence.MACHINE, why)
        if not target.startswith("/") and "$" not in target:
            return _cd_absent(interp, target.strip("\"'"), i + 1 + ps.source.line_base)
        if not target.startswith("/") or "$" in target:
            return None  # the script's own directory, or one packlint cannot tell: the checkout's rule stands
        script = interp.source_stack[0] if interp.source_stack else None
        root = checkout_root(script_checkout_dirs(script)) if script else None
        if root is not None and os.path.normpath(target).startswith(os.path.normpath(root) + os.sep):
            return None
        line = i + 1 + ps.source.line_base
        return (
            evidence.MACHINE,
            f"the script changes to {os.path.normpath(target)} at line {line}, a directory of the machine",
        )
    return None


def _cd_absent(interp: Interpreter, target: str, line: int) -> tuple[str, str] | None:
    """A relative `cd` into a folder the checkout does not hold, beside the script, in the working directory or at
    the checkout's root (saurabhbajaj123/GNN_minibatch_vs_fullbatch's vendored torch-quiver: `git clone .../KungFu.git;
    cd KungFu; . ./scripts/utils/measure.sh`): the folder is made when the script runs or at set-up, and what is
    sourced there is the machine's. None where the folder is there (the checkout's rule stands)."""
    if target in ("", "-", "~", ".", "..") or target.startswith("~"):
        return None
    from packlint.codebase.resolve import script_checkout_dirs
    from packlint.configs.elsewhere import checkout_root

    script = interp.source_stack[0] if interp.source_stack else None
    here = os.path.dirname(interp.source_stack[-1]) if interp.source_stack else interp.cwd
    root = checkout_root(script_checkout_dirs(script)) if script else None
    if any(os.path.isdir(os.path.join(d, target)) for d in (here, interp.cwd, root) if d):
        return None
    why = f"the script changes to {target} at line {line}, a folder the checkout does not hold (made when it runs)"
    return (evidence.MACHINE, why)


def _after_relative_cd(interp: Interpreter, text: str, world: World, ps: ParsedScript, span: Span) -> str | None:
    """A relative sourced path after the same file `cd`s into a relative directory (training_results'
    `cd ../pytorch` then `source configs/config_X.sh`): bash looks for it there. The `cd`s before it are
    joined back to an absolute one, one packlint cannot tell (`cd "$(dirname "$0")"`) or the file's start,
    from the file's own directory (the script run from its own directory, as such scripts are)."""
    if os.path.isabs(text) or not interp.source_stack:
        return None
    lines = ps.source.data.decode("utf-8", "replace").splitlines()
    first = min(max(span.line - 1 - ps.source.line_base, 0), len(lines))
    texts = [lines[first][: max(span.column - 1, 0)]] if first < len(lines) else []
    texts += [lines[i] for i in range(first - 1, -1, -1)]
    steps: list[str] = []
    for text_before in texts:
        for m in reversed(list(_CD.finditer(text_before.split("#", 1)[0]))):
            target = _NAME_REF.sub(lambda n: _known_text(world, n.group(1)), m.group(1))
            if target.startswith("/") and "$" not in target:
                steps.append(target)  # an absolute directory: the chain starts there
                return _existing(os.path.join(*reversed(steps), text))
            if "$" in target or target in ("-", "~") or target.startswith("~"):
                return _relative_to(interp, steps, text)
            steps.append(target)
    return _relative_to(interp, steps, text)


def _relative_to(interp: Interpreter, steps: list[str], text: str) -> str | None:
    if not steps:
        return None
    rel = os.path.join(*reversed(steps), text)
    here = os.path.dirname(interp.source_stack[-1])
    return _existing(os.path.join(here, rel)) or _existing(os.path.join(interp.cwd, rel))


def _existing(path: str) -> str | None:
    return os.path.normpath(path) if os.path.exists(path) and not os.path.isdir(path) else None


_COPIES: dict[tuple[str, str], str | None] = run_memo()
MAX_COPY_DIRS = 2000  # directories of the checkout listed looking for a sourced file's template


def _copied_at_setup(interp: Interpreter, text: str) -> tuple[str, str] | None:
    """The sourced path is missing as written, but its last two parts are a file elsewhere in the checkout
    (llm-jp/scripts: jobs `source environment/scripts/environment.sh`, which the installer's
    `cp -a $INSTALLER_DIR/scripts .` puts in place from pretrain/installers/v3/scripts/): a copy made when the job
    is set up, which rests on the machine."""
    from packlint.codebase.resolve import script_checkout_dirs

    script = interp.source_stack[0] if interp.source_stack else None
    dirs = script_checkout_dirs(script) if script else []
    parts = [p for p in os.path.normpath(text).split(os.sep) if p not in ("", ".", "..")]
    if not dirs or len(parts) < 2 or "$" in text or any(os.path.exists(os.path.join(d, text)) for d in dirs):
        return None
    root, tail = dirs[-1], os.path.join(*parts[-2:])
    if (root, tail) not in _COPIES:
        _COPIES[(root, tail)] = _find_tail(root, tail)
    found = _COPIES[(root, tail)]
    if found is None:
        return None
    return (evidence.MACHINE, f"the checkout holds {found}, which the job's set-up copies into place")


def _made_by_checkout(interp: Interpreter, text: str) -> tuple[str, str] | None:
    """The checkout's own set-up writes the missing file, or the sourcing file is a record copy of a file beside which
    it exists (setup_files)."""
    from packlint.codebase.resolve import script_checkout_dirs
    from packlint.interpret import setup_files

    script = interp.source_stack[0] if interp.source_stack else None
    dirs = script_checkout_dirs(script) if script else []
    if not dirs or "$" in text:
        return None
    return setup_files.written_by_checkout(dirs[-1], text) or setup_files.record_copy(
        dirs[-1], interp.source_stack[-1], text
    )


def _unbounded_checkout(interp: Interpreter, text: str) -> tuple[str, str] | None:
    """No VCS marker bounds the script's checkout (a tree copied without its `.git`), and the relative path exists
    from a folder above the one packlint took for its root (`. scripts/setup_cori.sh` run from the project folder
    above `scripts/`): where the script runs from decides, which the tree does not say."""
    from packlint.codebase.resolve import checkout_of, never_roots

    script = interp.source_stack[0] if interp.source_stack else None
    dirs, why = checkout_of(script) if script else ([], "")
    if not dirs or why not in ("script-dir", "requirements") or os.path.isabs(text):
        return None
    d, stop = os.path.dirname(dirs[-1]), never_roots()
    for _ in range(4):
        if d in stop or d == os.path.dirname(d):
            break
        if os.path.isfile(os.path.join(d, text)):
            return (
                evidence.MACHINE,
                f"no VCS marker bounds the checkout, and {text} exists from {d}, a folder above it the script may "
                "run from",
            )
        d = os.path.dirname(d)
    return None


def _find_tail(root: str, tail: str) -> str | None:
    """A file of the checkout (breadth first, at most MAX_COPY_DIRS directories) whose path ends in `tail`."""
    level, listed = [root], 0
    while level and listed < MAX_COPY_DIRS:
        below = []
        for d in level[: MAX_COPY_DIRS - listed]:
            listed += 1
            if os.path.isfile(os.path.join(d, tail)):
                return os.path.relpath(os.path.join(d, tail), root)
            try:
                with os.scandir(d) as it:  # (bounded: at most MAX_COPY_DIRS entries of one directory)
                    below += sorted(
                        e.path
                        for e in islice(it, MAX_COPY_DIRS)
                        if e.is_dir(follow_symlinks=False) and e.name != ".git"
                    )
            except OSError:
                continue
        level = below
    return None


def _known_text(world: World, name: str) -> str:
    var = world.vars.get(name)
    value = getattr(var, "value", None) if var is not None else None
    return value.text if isinstance(value, Known) else "$" + name


def _not_found(
    interp: Interpreter, fields: list[Value], text: str, guessed: bool, world: World, ps: ParsedScript, span: Span
) -> None:
    """The sourced file is not found: made by the script before (unknown), missing from the checkout
    (PK106), or the machine's (PATH, set-up, an unfetched submodule)."""
    made = None if guessed else made_before(ps, span, text)
    if made is not None:  # the script makes it itself: what it sets is unknown, it is not missing
        interp.diag(
            "info",
            "source-not-found",
            f"sourced file not found: {text} (the script makes it at line {made[0]}: `{made[1]}`); "
            "settings it makes are not seen",
            span,
        )
        return
    bare = text.rstrip("\r")
    machine = (
        _unset_dependence(fields[1])
        or machine_dependence(bare)
        or gitignored(interp, bare)
        or _submodule_dependence(interp, bare)
        or _cd_elsewhere(interp, bare, world, ps, span)
        or _copied_at_setup(interp, bare)
        or _above_checkout(interp, bare)
    )
    if bare != text:
        if not guessed and not _caller_dependent(ps, span, world) and not _under_file_test(world):
            _carriage_return(interp, fields, bare, machine, world, span)
        machine = None  # the CR decides, whatever the machine holds
    elif (
        not guessed
        and not _caller_dependent(ps, span, world)
        and not _optional(ps, span)
        and missing_in_checkout(interp, text, world)
    ):
        # PK106: a file of the script's own checkout that is not there, sourced unconditionally (the searches of the
        # whole checkout only here: what they read is every script's input that reaches them)
        machine = machine or _made_by_checkout(interp, text) or _unbounded_checkout(interp, text)
        then = (
            "and the command after `&&` does not run"  # (rosieyzh/openrlhf-pretrain: `source x.sh && torchrun ...`)
            if _AND_AFTER.match(_rest_of_line(ps, span))
            else "and goes on without the settings it makes (under `set -e` it stops there)"
        )
        interp.diag(
            "warning",
            "source-missing",
            f"`{_command_word(fields)} {text}` sources a file that does not exist in this checkout "
            f"(looked beside the script, in the working directory and up to the checkout root): bash "
            f"prints 'No such file or directory' {then}",
            span,
            machine,
        )
    interp.diag(
        "warning",
        "source-not-found",
        f"sourced file not found: {text} (looked beside the script and in the working "
        "directory); settings it makes are not seen",
        span,
        machine,
    )


_OR_AFTER = re.compile(r"^[ \t]*(?:\d?>[ \t]*/dev/null[ \t]*|&>[ \t]*/dev/null[ \t]*)*\|\|")
_AND_AFTER = re.compile(r"^[ \t]*(?:\d?>[ \t]*/dev/null[ \t]*|&>[ \t]*/dev/null[ \t]*)*&&")


def _rest_of_line(ps: ParsedScript, span: Span) -> str:
    """The text of the command's last line after it."""
    lines = ps.source.data.decode("utf-8", "replace").splitlines()
    row = span.end_line - 1 - ps.source.line_base
    return lines[row][max(span.end_column - 1, 0) :] if 0 <= row < len(lines) else ""


def _optional(ps: ParsedScript, span: Span) -> bool:
    """The source is written optional: `source X 2>/dev/null || true` (safety-research/talkative-probes'
    submit_eval.sh): its failure is the author's to ignore, as with `[ -f X ] && source X`."""
    return _OR_AFTER.match(_rest_of_line(ps, span)) is not None


def _under_file_test(world: World) -> bool:
    return any(FILE_TESTS.search(c.text) for c in world.when)


def _carriage_return(
    interp: Interpreter,
    fields: list[Value],
    bare: str,
    machine: tuple[str, str] | None,
    world: World,
    span: Span,
) -> None:
    """PK106 for `source X\\r` (a CRLF file, sunblaze-ucb/Intuitor's `source openr1/bin/activate\\r`): bash
    keeps the carriage return in the word and looks for a file whose name ends in it, which neither the
    checkout nor a set-up step makes: it fails on every machine. The message names the CR as the cause
    (PK904 reports the line endings); what the path without it would be is said too."""
    if machine is None and _SETUP_MADE.search(bare):
        machine = (evidence.MACHINE, f"{bare} is made at set-up, not kept in a checkout")
    # (whether the path without the CR exists is not said: a file sourced from scripts in other directories
    # resolves it differently, and one defect would be reported twice with two texts: microsoft/unilm)
    without = f"without the CR, on the machine: {machine[1]}" if machine is not None else f"without the CR: {bare}"
    interp.diag(
        "warning",
        "source-missing",
        f"`{_command_word(fields)} {bare}` ends in a carriage return (the file has CRLF line endings, "
        f"PK904): bash looks for a file named `{bare}\\r`, which does not exist ({without}), prints "
        "'No such file or directory' and goes on without the settings it makes (under `set -e` it stops there)",
        span,
    )


def source_file(interp: Interpreter, fields: list[Value], world: World, ps: ParsedScript, span: Span) -> list[World]:
    """`source FILE ARGS`: run the file in this shell (cycles, depth and unknown paths reported)."""
    if len(fields) < 2:
        return [world]
    target = fields[1]
    guessed = False
    if isinstance(target, Known):
        text = target.text
    elif target.reason.startswith("partly unknown:") and "tail=" in target.reason:
        text = target.reason.split("tail=", 1)[-1]
        guessed = True
    else:
        interp.diag(
            "warning",
            "source-unknown",
            f"cannot follow `source`: the path is unknown ({target.reason}); settings it makes are not seen",
            span,
        )
        world.unread_source = world.unread_source or f"`source` at line {span.line} (its path is unknown)"
        return [world]
    path = resolve_path(interp, text, world) or _after_relative_cd(interp, text, world, ps, span)
    if path is None:
        _not_found(interp, fields, text, guessed, world, ps, span)
        return [world]
    real = interp.realpath(path)
    if real in interp.source_stack:
        interp.diag("info", "source-cycle", f"`source {text}` would include itself again (cycle); not followed", span)
        return [world]
    if len(interp.source_stack) >= MAX_SOURCE_DEPTH:
        interp.diag(
            "warning", "source-depth", f"sourced files nest deeper than {MAX_SOURCE_DEPTH}; {text} not followed", span
        )
        return [world]
    if guessed:
        interp.diag(
            "info", "source-guessed", f"sourced path partly unknown; assumed it is {text} beside the script", span
        )
    from packlint.scope import outside

    away = outside(path, interp.source_stack[0] if interp.source_stack else None)
    if away is not None:  # (named, not read: a file of the machine, never quoted in a report)
        interp.diag("info", "source-unreadable", f"{text}: {away}; settings it makes are not seen", span)
        return [world]
    try:
        sf = load(path, display=display_path(interp, path))
    except PacklintError as exc:
        interp.diag("warning", "source-unreadable", exc.one_line(), span)
        return [world]
    saved, saved_script_args = world.positional, world.script_args
    if len(fields) > 2:
        world.positional = as_arguments(list(fields[2:]))
        world.script_args = False
    saved_frames = len(world.locals_stack)
    cwd_relative = _cwd_relative(ps, span, text)
    before = {k: (v.value, v.items) for k, v in world.vars.items()} if cwd_relative else {}
    interp.source_calls += 1
    try:
        out = nested_code.exec_source(interp, sf, world, path)
    finally:
        interp.source_calls -= 1
    if cwd_relative:
        word = _command_word(fields)
        origin = evidence.origin_of(evidence.ASSUMED, f"{_run_from(interp, text, path)} (`{word} {text}`)")
        for w in out:
            _mark_assumed(w, before, origin)
    for w in out:
        if len(fields) > 2:
            w.positional, w.script_args = saved, saved_script_args
        if w.flow == "return" and len(w.locals_stack) == saved_frames:
            w.flow = None
    return interp.merge(out)


def _run_from(interp: Interpreter, text: str, path: str) -> str:
    """Where the script must run for bash to find a cwd-relative sourced path where packlint found it: the checkout's
    root, or its own directory, or the directory packlint runs in (princeton-nlp/LESS: `source
    less/scripts/train/base_training_args.sh` names a path from the checkout's root, not from the script's folder)."""
    here = os.path.dirname(interp.source_stack[0]) if interp.source_stack else None
    for where in (here, interp.cwd):
        if where and os.path.normpath(os.path.join(where, text)) == path:
            if os.path.exists(os.path.join(where, ".git")):
                return "the script run from the checkout's root"
            return evidence.OWN_DIRECTORY if where == here else f"the script run from {where}/"
    return evidence.OWN_DIRECTORY


def _cwd_relative(ps: ParsedScript, span: Span, text: str) -> bool:
    """`source ../setup.sh`, `. ./common/model_${SIZE}.sh`: a relative path with a directory part, not
    anchored by a leading variable or command substitution (`$(dirname $0)/../setup.sh`, `$SCRIPT_DIR/env.sh`).
    Bash resolves it against the working directory; packlint found it beside the script."""
    if os.path.isabs(text) or "/" not in text:
        return False
    lines = ps.source.data.decode("utf-8", "replace").splitlines()
    first = span.line - 1 - ps.source.line_base
    raw = " ".join(lines[max(first, 0) : first + span.end_line - span.line + 1]).lstrip()
    head, _, rest = raw.partition(" ")
    word = rest.lstrip().lstrip("\"'")
    return head in ("source", ".") and bool(word) and not word.startswith(("$", "`", "~", "/"))


def _mark_assumed(w: World, before: Mapping[str, tuple[object, object]], origin: str) -> None:
    """The variables the sourced file set (new, or given another value) rest on where it was found."""
    for name, var in w.vars.items():
        old = before.get(name)
        if old is not None and old[0] is var.value and old[1] is var.items:
            continue
        if isinstance(var.value, Known) and var.value.origin is None:
            var.value = Known(var.value.text, var.value.span, origin)
        if var.items:
            var.items = [
                Known(v.text, v.span, origin) if isinstance(v, Known) and v.origin is None else v for v in var.items
            ]


def display_source(interp: Interpreter, real: str, world: World) -> str:
    if interp.source_stack and real == interp.source_stack[0]:
        return world.script
    return display_path(interp, real)
