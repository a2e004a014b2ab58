"""Which training stack a launch runs, and its version (issue 20): read from the launch model's
`config` block (packlint.configs: the stack from the launcher/program, the version from the code
base, the installed distribution or a `stack-versions` pin)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, cast

from packlint import evidence
from packlint.caches import memo
from packlint.conditions.tree import BOOL, STR, Builtin, EvalContext, Function, Unk
from packlint.model_view import config_files, launchers, variant_config
from packlint.regex import LazyRegex

if TYPE_CHECKING:
    from collections.abc import Mapping

    from packlint.model_types import ConfigFileJSON, ConfigJSON


def _stack_entry(ctx: EvalContext) -> ConfigJSON | None:
    """The launch's stack: from its `config` block; a launch without one (a Megatron-LM script with no
    --yaml-cfg) is matched against the stacks table here, on first use (a CONFIG with only `stack`
    and `stack_version`)."""
    cfg = variant_config(ctx.variant)
    if cfg is not None:
        return cfg
    memo = ctx.memo
    if "stack_entry" not in memo:
        from packlint.configs import match_program
        from packlint.configs.versions import stack_version

        v = ctx.variant
        own = cast("Mapping[str, Any]", v)  # (a launch without variants stands for its variant: its program)
        entry = match_program(
            own.get("program", ctx.launch.get("program")),
            launchers(ctx.launch, v),
            v.get("flags") or {},
        )
        found = None
        if entry is not None:
            import os

            script = ctx.model.get("script")
            script_dir = os.path.dirname(os.path.abspath(script)) if script and os.path.exists(script) else None
            found = {
                "stack": entry["stack"],
                "stack_version": stack_version(entry["stack"], entry.get("dist"), script_dir, None),
            }
        memo["stack_entry"] = found
    return memo["stack_entry"]


def _f_stack(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    cfg = _stack_entry(ctx)
    stack = cfg.get("stack") if cfg else None
    if stack is None:
        return Unk("the launch's stack is not known", "unknown")
    return stack


def _f_subcommand(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """The stack CLI's subcommand the launch runs (`trl dpo` -> 'dpo', `llamafactory-cli train` ->
    'train'): which trainer a TRL launch builds. Unknown for a launch that is no stack CLI."""
    for launcher in reversed(ctx.launch.get("launchers") or []):
        head, sep, sub = str(launcher).partition(" ")
        if sep and sub:
            return sub
    return Unk("the launch runs no stack command with a subcommand", "unknown")


def _f_stack_version(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    cfg = _stack_entry(ctx)
    if not cfg or cfg.get("stack") is None:
        return Unk("the launch's stack is not known", "unknown")
    v = cfg.get("stack_version") or {}
    if "value" not in v:
        return Unk(v.get("unknown") or f"{cfg['stack']}'s version is unknown", "unknown")
    return str(v["value"])


def _bad_file(ctx: EvalContext, kind: str) -> ConfigFileJSON | None:
    for f in config_files(variant_config(ctx.variant)):
        if kind == "missing" and f.get("missing") and f.get("path"):
            return f.copy()
        if kind == "error" and f.get("error"):
            return f.copy()
        if kind == "unread" and (
            f.get("not_read") or (f.get("file") and str(f.get("unknown", "")).startswith("over packlint's limits"))
        ):
            return f.copy()
    return None


# a condition the launch runs under that says a file does not exist: `[ ! -f X ]` true, `[ -f X ]` false (`||`)
_ABSENT = LazyRegex(
    r"`(?:\[\[?|test)\s+(?:!\s+-[efs]\s+(?P<a>[^\s`\]]+)\s*\]?\]?`\s+is true"
    r"|-[efs]\s+(?P<b>[^\s`\]]+)\s*\]?\]?`\s+(?:is false|fails))"
)


def _made_when_absent(ctx: EvalContext, path: str) -> bool:
    """The launch runs only when `path` does not exist (ianbarber/retrieve-cheaply: `if [ ! -f runs/agent/x.json ];
    then $PY scripts/synth_mf.py runs/agent/x.json ...`): the file is one it makes, not one it reads."""
    import os

    for cond in ctx.launch.get("when") or ():
        for m in _ABSENT.finditer(str(cond)):
            named = (m.group("a") or m.group("b") or "").strip("\"'")
            if named and os.path.normpath(named) == os.path.normpath(path):
                return True
    return False


# `[ -f P ]` / `[[ -e P ]]` / `test -r P` true (or succeeds), `[ ! -f P ]` false: P exists on that path
_PRESENT = LazyRegex(
    r"`(?:\[\[?|test)\s+(?:-[efrs]\s+(?P<a>[^\s`\]]+)\s*\]?\]?`\s+(?:is true|succeeds)"
    r"|!\s+-[efrs]\s+(?P<b>[^\s`\]]+)\s*\]?\]?`\s+(?:is false|fails))"
)


def _present_when_run(ctx: EvalContext, path: str) -> bool:
    """The file is given to the launch only where the script's own test found it (jdchawla29/reinforcesight:
    `if [ -f "$DEEPSPEED_CONFIG" ]; then ... --deepspeed $DEEPSPEED_CONFIG`): on that path it exists, so its
    absence from the checkout cannot fail the launch. The tested word's `$VAR`s take the variant's values."""
    import os

    from packlint.codebase.workdir import _substitute, launch_variables

    conds = [*(ctx.launch.get("when") or ()), *(ctx.variant.get("when") or ())]
    variables = {**launch_variables(ctx.launch), **launch_variables(ctx.variant)}
    for cond in conds:
        for m in _PRESENT.finditer(str(cond)):
            named = _substitute((m.group("a") or m.group("b") or "").replace('"', "").replace("'", ""), variables)
            if named and os.path.normpath(named) == os.path.normpath(path):
                return True
    return False


def _f_config_file_missing(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    f = _bad_file(ctx, "missing")
    if f is not None and _made_when_absent(ctx, str(f["path"])):
        return Unk(f"the launch runs only when {f['path']} does not exist: a file it makes", "unknown")
    if f is not None and _present_when_run(ctx, str(f["path"])):
        return ""  # the script gives it only where its own test found it
    rewritten = _rewritten_by_code(ctx, str(f["path"])) if f is not None else None
    if rewritten is not None:
        return Unk(rewritten, "unknown")
    data = _data_positional(ctx, f) if f is not None and f.get("data") and "evidence" not in f else None
    if data is not None:
        evidence.note(ctx, data)
    elif f is not None and "evidence" in f:  # (a file the machine may hold: packlint.configs.elsewhere)
        evidence.record(ctx, f)
    elif f is not None:
        evidence.note(ctx, _standalone_premise(str(ctx.model.get("script") or ""), str(f["path"])))
    return "" if f is None else f["path"]


_CONFIG_NAMED = LazyRegex(r"conf|cfg", re.IGNORECASE)  # (`configs/gym.json`, `train_config.json`)


def _data_positional(ctx: EvalContext, f: ConfigFileJSON) -> evidence.Premise | None:
    """A missing JSON word that a program of no stack takes as a positional of its own argparse parser: an input
    (JHU-CLSP/verifiable-by-design's `python best_of_n_to_paired_gen.py data/nq/dev_model-..._quip.json`, argparse
    `input_files` nargs='+', the output of its own earlier pipeline steps), not a config. Data is made or fetched
    at set-up: its absence from the checkout depends on the machine. None where the program's parser is not
    read, or is not argparse with positionals (HfArgumentParser takes a JSON word as its config), or where the path
    is named as a config (`configs/gym.json`)."""
    from packlint.conditions.functions.codebase_common import _schema_view

    if _CONFIG_NAMED.search(str(f["path"])):
        return None  # (`configs/gym.json`, `train_config.json`: the checkout's own config, named so)
    schema = _schema_view(ctx)[0]
    if schema is None and _reads_argv_by_position(ctx):
        # thunlp/CSS-LM's `python3 ../code/prep.py ../data/corpus/corpus.json ...`: `open(sys.argv[1])`, no parser
        return (evidence.MACHINE, f"{f['path']} is an input the program reads from sys.argv: data is made at set-up")
    if schema is None or getattr(schema, "kind", "") != "argparse" or not getattr(schema, "positionals", False):
        return None
    return (evidence.MACHINE, f"{f['path']} is an input the program takes as a positional: data is made at set-up")


_ARGV_AT = LazyRegex(r"\bsys\.argv\[\s*[1-9]")


def _reads_argv_by_position(ctx: EvalContext) -> bool:
    """The launched program (no parser read) takes its words by position: `sys.argv[1]` in its own file."""
    from packlint.conditions.functions.codebase_common import _code, _script_text

    facts = _code(ctx)
    file = facts.resolution.file if facts is not None and facts.known else None
    return isinstance(file, str) and _ARGV_AT.search(_script_text(file)) is not None


def _rewritten_by_code(ctx: EvalContext, path: str) -> str | None:
    """The program makes another path of the flag's value before it opens it (AlibabaResearch/DAMO-ConvAI's dial2vec:
    `args.config_file = os.path.join(work_dir, "model", args.config_file)`): the file opened is not the one
    packlint looked for. None where the code is not read or does not reassign the value from itself."""
    import os
    import re

    from packlint.conditions.functions.codebase_common import _code, _script_text

    flags = ctx.variant.get("flags") or {}
    named = [n for n, occs in flags.items() if any(_occ_value(o) == path for o in occs or ())]
    facts = _code(ctx) if named else None
    if facts is None or not facts.known:
        return None
    files = [facts.resolution.file, *facts.files][:64]
    for name in named:
        dest = re.escape(name.lstrip("-").replace("-", "_"))
        again = re.compile(rf"(?m)^[ \t]*\w+\.{dest}[ \t]*=(?!=)[^\n]*\b\w+\.{dest}\b")
        for file in dict.fromkeys(f for f in files if isinstance(f, str)):
            m = again.search(_script_text(file))
            if m is not None:
                return (
                    f"the program makes another path of {name}'s value before it opens it "
                    f"({os.path.basename(file)}: `{m.group(0).strip()[:80]}`)"
                )
    return None


def _occ_value(occ: Any) -> Any:
    args = occ.get("args") if isinstance(occ, dict) else None
    return args[0] if isinstance(args, list) and len(args) == 1 else occ.get("value") if isinstance(occ, dict) else None


_CONFIG_SUFFIXES = (".yaml", ".yml", ".json", ".toml")
_MAX_SCRIPTS = 2000
_PINNED_MEMO: dict[str, bool] = memo()


def _standalone_premise(config: str, path_text: str) -> evidence.Premise | None:
    """A config file checked on its own (`packlint check x.yaml`, a directory walk) names a relative file:
    its stack resolves it against the directory it is started in (LLaMA-Factory: its own checkout, where the
    README copies the config). Unless a launch script of the checkout names this very config (resolved beside
    the script), that directory is not a fact of the checkout: the file's absence depends on the machine."""
    import os

    if not config.lower().endswith(_CONFIG_SUFFIXES) or not path_text or os.path.isabs(path_text):
        return None
    if _pinned_by_a_launch(os.path.abspath(config)):
        return None
    return (
        evidence.MACHINE,
        f"{os.path.basename(config)} is checked on its own and no launch script of the checkout names it: "
        f"{path_text} is relative to the directory its stack is started in, which the checkout does not say",
    )


def _pinned_by_a_launch(config: str) -> bool:
    """A launch script of the config's checkout names it by a path that resolves to it beside the script or
    from the checkout's root (the checkout's scripts read once per process: `_config_words`)."""
    hit = _PINNED_MEMO.get(config)
    if hit is not None:
        return hit
    import os

    from packlint.configs.elsewhere import checkout_root

    d, dirs = os.path.dirname(config), list[str]()
    while d and d != os.path.dirname(d) and len(dirs) < 12:
        dirs.append(d)
        d = os.path.dirname(d)
    root = checkout_root(dirs)
    found = False
    if root is not None:
        for script, word in _config_words(root).get(os.path.basename(config), ()):
            if any(os.path.normpath(os.path.join(b, word)) == config for b in (os.path.dirname(script), root)):
                found = True
                break
    _PINNED_MEMO[config] = found
    return found


_WORDS_MEMO: dict[str, dict[str, list[tuple[str, str]]]] = memo()
_MAX_SCRIPT_BYTES_TOTAL = 64 << 20


def _config_words(root: str) -> dict[str, list[tuple[str, str]]]:
    """config file name -> (script, the word naming it) over the checkout's launch scripts (bounded: the
    first _MAX_SCRIPTS scripts, 1 MiB each, 64 MiB in all)."""
    hit = _WORDS_MEMO.get(root)
    if hit is not None:
        return hit
    import os
    import re

    from packlint.configs.elsewhere import _list
    from packlint.safe_io import read_regular

    words = re.compile(r"[\w./${}-]*\.(?:ya?ml|json|toml)\b")
    out: dict[str, list[tuple[str, str]]] = {}
    budget = _MAX_SCRIPT_BYTES_TOTAL
    from packlint.discover import is_launch_file

    for rel in [f for f in _list(root) if is_launch_file(os.path.join(root, f))][:_MAX_SCRIPTS]:
        script = os.path.join(root, rel)
        data = read_regular(script, 1 << 20)
        if data is None:
            continue
        budget -= len(data)
        if budget < 0:
            break
        for word in words.findall(data.decode("utf-8", "replace")):
            out.setdefault(os.path.basename(word), []).append((script, word))
    _WORDS_MEMO[root] = out
    return out


def _f_config_file_error(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    f = _bad_file(ctx, "error")
    return "" if f is None else f"{f.get('file') or f.get('path')}: {f['error']}"


def _f_config_file_unread(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    f = _bad_file(ctx, "unread")
    return "" if f is None else f"{f.get('path') or f.get('file')}: {f.get('not_read') or f['unknown']}"


def _f_config_ignores_flag(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    cfg = variant_config(ctx.variant)
    if cfg is None or not any(f["name"] == a[0] for f in cfg.get("ignored_flags") or []):
        return False
    if cfg.get("recognised_by") != "keys":
        return True  # the stack's own program (`llamafactory-cli train`, LLaMA-Factory's src/train.py) reads argv
    return _hands_argv_to(ctx, str(cfg.get("stack") or ""))


def _hands_argv_to(ctx: EvalContext, stack: str) -> Any:
    """A program of the checkout whose config file only looked like the stack's (`recognised_by: keys`)
    reads the flags after the file as the stack does only when its code reaches the stack's package
    (SachinKonan/LLaMA-Factory-AutoReviewer: `python scripts/run_tokenization_and_count_overctx.py --config
    x.yaml --dataset d`, the script's own argparse takes --dataset, it never calls LLaMA-Factory's read_args);
    unknown when the program's code is not read."""
    from packlint.conditions.functions.codebase_common import _code
    from packlint.configs.versions import PACKAGE_DIRS

    facts = _code(ctx)
    if facts is None or not facts.known:
        return Unk(f"the program's code is not read: whether it hands its command line to {stack} is unknown")
    packages = {p.rsplit("/", 1)[-1] for p in PACKAGE_DIRS.get(stack, ())}
    origin = str(getattr(facts.schema, "parser_origin", None) or "").replace("\\", "/")
    if origin and not any(part in packages for part in origin.rsplit(":", 1)[0].split("/")[:-1]):
        return False  # the program parses its command line with a parser of its own (it may still use the stack)
    if any(m.split(".", 1)[0] in packages for m in facts.unresolved_imports):
        return True
    return any(part in packages for f in facts.files for part in f.replace("\\", "/").split("/")[:-1])


STACK_FUNCTIONS: dict[str, Function] = {
    "stack": Function(
        (),
        (),
        STR,
        _f_stack,
        "the launch's training stack: llamafactory, trl, axolotl, swift, megatron-swift, hf-trainer, "
        "deepspeed, verl, openrlhf, megatron-bridge, nemo-rl, internvl, xtuner, torchtitan, megatron-lm; "
        "unknown when packlint cannot tell",
    ),
    "subcommand": Function(
        (),
        (),
        STR,
        _f_subcommand,
        "the subcommand of the stack's command line the launch runs (`trl dpo` -> 'dpo'): the trainer a "
        "TRL launch builds; unknown when the launch runs no such command",
    ),
    "stack_version": Function(
        (),
        (),
        STR,
        _f_stack_version,
        "the version of the launch's stack (code base, installed distribution, or the stack-versions "
        "pin); unknown when none says",
    ),
    "config_ignores_flag": Function(
        (STR,),
        (),
        BOOL,
        _f_config_ignores_flag,
        "the launch's stack does not read the program flag NAME as an override once it has read its "
        "config file (LLaMA-Factory: `llamafactory-cli train x.yaml` takes only key=value)",
    ),
    "config_file_missing": Function(
        (),
        (),
        STR,
        _f_config_file_missing,
        "the path of the first config file the launch names that packlint did not find ('' when all were "
        "found); the stack refuses to start without it",
    ),
    "config_file_error": Function(
        (),
        (),
        STR,
        _f_config_file_error,
        "'FILE: problem' for the first config file the launch names that is not valid YAML/JSON/TOML "
        "(or over the size bound); '' when none",
    ),
    "config_file_unread": Function(
        (),
        (),
        STR,
        _f_config_file_unread,
        "'FILE: why' for the first config file the launch names that packlint did not read (outside the "
        "checkout, a file of /proc, a FIFO or device, or over packlint's own reading limits); '' when none",
    ),
}
