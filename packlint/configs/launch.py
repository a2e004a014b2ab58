"""One launch's `config` block: which stack, which files it names, read and merged (see
packlint/configs/__init__.py and docs/config-files.md)."""

from __future__ import annotations

import os
import re
from typing import Any

from packlint.configs import (
    _NEAR,
    _over_limits,
    _search_dirs,
    _shown,
    match_program,
    read_config_file,
    resolve_path,
    table,
)
from packlint.configs.interpolation import resolve_interpolations
from packlint.configs.merge import _apply_overrides, _loc, _span_loc, flatten
from packlint.regex import LazyRegex
from packlint.values import Known, Unknown


def _stack_by_keys(flag: str | None, flags: dict, first: Any, script_dir: str | None) -> dict | None:
    """The stacks.toml entry of the stack a config file belongs to, recognised by its keys
    (packlint.configs.standalone.recognise), or None."""
    from packlint.configs.files import format_of
    from packlint.configs.standalone import recognise

    word = None
    if flag is not None:
        occ = flags[flag][-1]
        word = occ.args[0] if occ.args else None
    elif first is not None:
        word = first
    if not isinstance(word, Known):
        return None
    found = resolve_path(word.text, _search_dirs(script_dir))
    if found is None:
        return None
    fmt = format_of(found)
    root, err = read_config_file(found, fmt, "pyyaml", near=script_dir or "")
    if err is not None or root is None:
        return None
    stack = recognise(root.plain(), fmt)
    return next((e for e in table()["program"] if e["stack"] == stack), None) if stack else None


def _file_word(entry_file: dict, flags: dict, positionals: list) -> tuple[str | None, Any, Any]:
    """(how it is named, the Value naming the file, the flag occurrence) or (None, None, None)."""
    suffixes = tuple(entry_file.get("suffixes", ()))
    for name in entry_file.get("flags", []):
        occs = flags.get(name)
        if occs:
            occ = occs[-1]
            v = occ.args[0] if occ.args else None
            if suffixes and isinstance(v, Known) and not v.text.lower().endswith(suffixes):
                continue  # `--config configs/7B_sft.py` (InternEvo's Python config): not a file of this kind
            return name, v, occ
    pos = entry_file.get("positional")
    if pos is not None and len(positionals) > pos:
        v = positionals[pos]
        if isinstance(v, Unknown):
            return "positional", v, None
        if not suffixes or v.text.lower().endswith(suffixes):
            return "positional", v, None
    return None, None, None


def _entry_of(
    program: str | None, launchers: list[str], flags: dict, launcher_flags: dict, positionals: list, script_dir
) -> tuple[dict | None, dict | None, bool]:
    """(the stacks.toml entry, the generic entry, whether the launch has a configuration at all)."""
    entry = match_program(program, launchers, flags)
    file_flags = entry.get("file", {}).get("flags", ()) if entry is not None else ()
    if entry is not None and entry.get("only_with_file") and not any(f in flags for f in file_flags):
        return None, None, False
    if entry is not None:
        return entry, None, True
    g = table()["generic"]
    named = next((f for f in g["flags"] if f in flags), None)
    first = positionals[0] if positionals else None
    by_position = isinstance(first, Known) and first.text.lower().endswith(tuple(g["suffixes"]))
    by_launcher = any(n in launcher_flags for n in ("--config_file", "--config-file"))
    if named is None and not by_position and not by_launcher:
        return None, None, False
    # a program packlint does not know given a config file of a stack it recognises by its keys
    # (`python src/train.py x.yaml` in a LLaMA-Factory checkout): that stack's reading of it
    known = _stack_by_keys(named, flags, first if by_position else None, script_dir)
    if (
        known is None
        and named is None
        and not by_launcher
        and isinstance(first, Known)
        and first.text.lower().endswith(".json")
    ):
        # a JSON word given to a program of no stack, under no config flag, is data as often as a config
        # (microsoft/LoRA's `python src/format_converting_dart.py data/dart/x.json out.jsonl` converts a
        # data set): the program opens it (a missing one is still PK601's), but its content is no config
        return None, {**g, "data": True}, True
    if known is None:
        return None, g, True
    if named is not None:
        return {**known, "file": {"flags": [named]}, "by_keys": True}, None, True
    return {**known, "file": {"positional": 0, "suffixes": list(g["suffixes"])}, "by_keys": True}, None, True


def launch_config(
    program: str | None,
    launchers: list[str],
    flags: dict,
    launcher_flags: dict,
    positionals: list,
    script_dir: str | None,
    pins: dict[str, str] | None = None,
    script: Any = None,
    pythonpath: tuple[str, ...] = (),
) -> dict | None:
    """The `config` block of one launch variant, or None for a launch of no known stack that names
    no config file (the common case: nothing is read)."""
    entry, generic, has_config = _entry_of(program, launchers, flags, launcher_flags, positionals, script_dir)
    if not has_config:
        return None
    cfg: dict[str, Any] = {"stack": entry["stack"] if entry else None, "files": [], "settings": {}, "sections": {}}
    if entry is not None and entry.get("by_keys"):
        # the program is not the stack's own: the file's keys named the stack, and the program's own parser
        # (its code, when packlint reads it) decides which keys it takes (conditions: stack_config_keys)
        cfg["recognised_by"] = "keys"
    if entry is not None:
        from packlint.configs.versions import stack_version

        cfg["stack_version"] = stack_version(entry["stack"], entry.get("dist"), script_dir, pins)
    else:
        cfg["stack_version"] = {"unknown": "the stack is not known"}
    dirs = _search_dirs(script_dir)
    global _SCRIPT, _PROGRAM_DIRS, _STACK_NAMES, _ARGS
    _SCRIPT = script
    _PROGRAM_DIRS = (program, dirs)
    _ARGS = (flags, positionals)
    # (a stack run by its own command or program, whose repository a README clones to work in; not a library
    # recognised by a flag: `--deepspeed ds.json` of a program that merely uses transformers)
    own = entry is not None and not entry.get("by_keys") and any(map(entry.get, ("launcher", "module", "program")))
    _STACK_NAMES = (entry["stack"], entry.get("dist") or "") if own and entry is not None else ()
    _NEAR[0] = script_dir
    incomplete: list[str] = []
    settings: dict = cfg["settings"]
    _read_main(cfg, entry, generic, flags, positionals, dirs, incomplete, program, pythonpath)
    if generic is not None:
        _generic_flags_unknown(settings, flags, generic, program)
    # files named inside the merged settings (`deepspeed: ds.json`)
    dialect = (entry or generic or {}).get("yaml", "pyyaml")
    for key, sec in ((entry or {}).get("nested") or {}).items():
        s = settings.get(key)
        if s is None:
            continue
        if "unknown" in s:
            cfg["sections"][sec] = {}
            cfg.setdefault("unknown_sections", {})[sec] = s["unknown"]
            continue
        if isinstance(s.get("value"), str) and s["value"].lower().endswith((".json", ".yaml", ".yml")):
            _read_nested(cfg, sec, s, dirs, dialect)
    _read_launcher_file(cfg, launchers, launcher_flags, dirs)
    cfg.pop("_inherit", None)
    cfg.pop("_hydra", None)
    if incomplete:
        cfg["incomplete"] = "; ".join(incomplete)
    if not cfg["sections"]:
        del cfg["sections"]
    return cfg


def _read_main(cfg, entry, generic, flags, positionals, dirs, incomplete: list, program, pythonpath=()) -> None:
    """The launch's own file (or Hydra composition), then its command-line overrides, as its stack merges."""
    if entry is not None:
        spec: dict = entry.get("file", {})
    else:
        g = generic or {}
        spec = {"flags": g.get("flags", []), "positional": 0, "suffixes": g.get("suffixes", [])}
    dialect = (entry or generic or {}).get("yaml", "pyyaml")
    section = entry.get("section", "main") if entry else "main"
    config_flags: set[str] = set(spec.get("flags", []))
    settings = cfg["settings"]
    target = settings if section == "main" else cfg["sections"].setdefault(section, {})
    if entry is not None and entry.get("inherit_defaults"):
        cfg["_inherit"] = True
    file_named = False
    if spec.get("hydra"):
        cfg["_hydra"] = True
        from packlint.configs.hydra import compose_hydra

        compose_hydra(cfg, spec, flags, dirs, target, incomplete, program, pythonpath=pythonpath)
        config_flags |= {"--config-path", "--config-name", "--config-dir", "-cp", "-cn"}
    else:
        how, word, occ = _file_word(spec, flags, positionals)
        file_named = how is not None
        if how is not None:
            fmt = entry.get("format") if entry and entry.get("format") else None
            problems = incomplete if section == "main" else []
            data = bool(generic and generic.get("data"))
            _read_into(cfg, section, how, word, occ, fmt, dialect, dirs, target, problems, section, data)
            if problems and section != "main":
                cfg.setdefault("unknown_sections", {})[section] = "; ".join(problems)
    if entry is not None and "none" in entry.get("overrides", ["none"]) and flags:
        # the program's own flags are settings packlint does not map to configuration keys
        incomplete.append(f"{entry['stack']}'s command-line flags are not read as configuration keys")
    if entry is not None and section == "main":
        _apply_overrides(entry, cfg, flags, config_flags, settings, file_named)
        if dialect == "omegaconf" and entry.get("resolve", True):
            resolve_interpolations(settings)


def _generic_flags_unknown(settings: dict, flags: dict, generic: dict, program) -> None:
    """How a program packlint does not know merges its command line over the file is unknown: what it
    names is unknown."""
    config_flags = set(generic.get("flags", []))
    for name in flags:
        if name in config_flags:
            continue
        key = name.lstrip("-+~")
        for k in [k for k in settings if k == key or k.startswith(key + ".") or k.replace("_", "-") == key]:
            settings[k] = {
                **{x: y for x, y in settings[k].items() if x != "value"},
                "unknown": f"the command line gives {name}; how {program} merges it over the file is unknown",
            }


def _read_launcher_file(cfg: dict, launchers: list[str], launcher_flags: dict, dirs: list[str]) -> None:
    """The launcher's own config (`accelerate launch --config_file`)."""
    launcher = launchers[-1] if launchers else None
    lf = table().get("launcher_files", {}).get(launcher or "")
    if lf is None:
        return
    occ = next((launcher_flags[f][-1] for f in lf["flags"] if launcher_flags.get(f)), None)
    if occ is None:
        return
    word = occ.args[0] if occ.args else None
    sec_settings = cfg["sections"].setdefault(lf["section"], {})
    _read_into(cfg, lf["section"], "launcher", word, occ, None, lf["yaml"], dirs, sec_settings, [], lf["section"])
    for key, sec in (lf.get("nested") or {}).items():
        s = sec_settings.get(key)
        if s is not None and isinstance(s.get("value"), str):
            _read_nested(cfg, sec, s, dirs, "pyyaml")


def _not_found(record: dict[str, Any], how: str, path_text: str, word: Any, dirs: list[str], incomplete: list) -> None:
    """A config file the launch names that is not found: made by the script, the machine's, or missing."""
    writer = _why_not_missing(path_text, word, dirs)
    if writer is not None:
        # `cat <<EOT > $DS_CONFIG` before the launch (Megatron-DeepSpeed's scripts): not missing
        said = (
            writer[3:]
            if writer.startswith("it ")
            else writer
            if writer.startswith("runs ")
            else f"writes it itself ({writer})"
        )
        record["unknown"] = f"{path_text} is not found, but the script {said}"
        incomplete.append(record["unknown"])
        return
    record["missing"] = True
    _note_machine(record, path_text, dirs)
    # (a word given to it positionally, or any config of a program the checkout lacks: GIGABYTE's mlperf folder runs
    # `"${CMD[@]}" tools/train_mlperf.py --config-file configs/x.yaml` inside NVIDIA's container, whose tree has both)
    named = how == "positional" or (_program_absent() and not _top_folder_held(path_text, dirs))
    unseen = _program_unseen() if named and "evidence" not in record else None
    if unseen is not None:
        # a word given to a program the checkout does not hold (huawei-noah's `python ../cmrc2018_evaluate.py
        # ../data/cmrc/dev.json ...`, a script and a data set the README says to fetch; Anogibot/PRPO's
        # `python "$TEMP_SCRIPT" "$INPUT_DATASET"`, a program the script writes to /tmp): what it is, and where
        # it comes from, is the machine's
        from packlint import evidence

        record["evidence"] = evidence.to_json((evidence.MACHINE, f"{unseen}: what it reads is made at set-up"))
    incomplete.append(f"the config file {path_text} was not found")


def _name_unknown(word: Any) -> str | None:
    """Why the config file's name is not known, or None. A part from a variable the script never sets (`--config
    configs/${config}.yml` with config set only in a comment, voletiv/mcvd-pytorch) gives bash `configs/.yml` here
    and the caller's environment anything: the file named is not known."""
    from packlint.evidence import marks

    if word is None or isinstance(word, Unknown):
        return word.reason if isinstance(word, Unknown) else "not given"
    origin = getattr(word, "origin", None) or ""
    parts = [o for _a, _b, o in marks(origin)] or [origin]
    unset = next((o[len("unset:") :] for o in parts if o.startswith("unset:")), None)
    return f"built from ${unset}, which the script never sets" if unset is not None else None


def _read_into(
    cfg, section, how, word, occ, fmt, dialect, dirs, target: dict, incomplete: list, role: str, data: bool = False
) -> None:
    from packlint.configs.files import format_of

    named = _span_loc(getattr(word, "span", None) or (occ.span if occ is not None else None))
    reason = _name_unknown(word)
    if reason is not None:
        cfg["files"].append({"role": role, "unknown": f"the config file's name is {reason}", "named_at": named or None})
        incomplete.append(f"the {role} config file's name is {reason}")
        return
    path_text = word.text
    fmt = fmt or format_of(path_text)
    found = resolve_path(path_text, dirs)
    record: dict[str, Any] = {"role": role, "path": path_text, "format": fmt, "named_at": named or None}
    cfg["files"].append(record)
    if found is None:
        _not_found(record, how, path_text, word, dirs, incomplete)
        if data and record.get("missing"):
            # a JSON word a program of no stack may take as data (PK601's condition asks the program's parser)
            record["data"] = True
        return
    shown = _shown(found)
    record["file"] = shown
    rewrite = _rewritten_before(path_text, occ.span if occ is not None and occ.span is not None else word)
    if rewrite is not None:
        # the script writes the file before the launch reads it: the checked-in content is not what runs
        record["unknown"] = f"the script writes {path_text} before the launch (`{rewrite}`): its values are unknown"
        incomplete.append(record["unknown"])
        return
    if data:  # a data file the program reads (a JSON list converted by the checkout's own script)
        record["data"] = True
        incomplete.append(f"{path_text} is read by a program of no stack: its content is not a config packlint reads")
        return
    from packlint.scope import outside

    if outside(found, _NEAR[0], quote=True) is not None:  # (read with --allow-outside: inspect shows
        record["foreign"] = True  # only the keys the rules read, never the whole file)
    root, err = read_config_file(found, fmt, dialect)
    if err is not None and _over_limits(err):  # the stack reads it; packlint's budget does not: unknown
        record["unknown"] = f"over packlint's limits: {err.message}"
        incomplete.append(f"{path_text} is over packlint's limits ({err.message}): its values are unknown")
        return
    if err is not None and err.unread:  # (outside the checkout, a FIFO, ...: its values are unknown)
        record["unknown"] = f"{path_text}{' is' if err.message.startswith('outside') else ':'} {err.message}"
        record["not_read"] = err.message
        incomplete.append(record["unknown"])
        return
    if err is not None:
        record["error"] = err.message
        record["error_at"] = {
            "file": shown,
            "line": err.line,
            "column": err.column,
            "end_line": err.line,
            "end_column": err.column,
        }
        incomplete.append(f"{path_text} could not be read ({err.message})")
        return
    if root.value is not None and not isinstance(root.value, dict) and cfg.get("stack") is None:
        # a program of no known stack loads its own `--config` (reasoning-gym's eval.py iterates a JSON list of
        # dataset configs): what shape it wants is that program's business, no stack loader's
        record["data"] = True
        incomplete.append(f"{path_text} is read by a program of no known stack, and its top level is not a mapping")
        return
    if root.value is not None and not isinstance(root.value, dict):
        record["error"] = "the file's top level is not a mapping"
        record["error_at"] = _loc(shown, root)
        incomplete.append(f"{path_text} is not a mapping")
        return
    body = root.value or {}
    if role == "main" and "defaults" in body and not cfg.get("_hydra"):
        if cfg.get("_inherit"):
            # NeMo-RL's load_config: `defaults: parent.yaml` (or a list), beside the file, merged first
            _inherit(found, root, dialect, target, incomplete, 0)
            return
        # a `defaults:` key this program gives its own meaning: what it pulls in is unknown
        incomplete.append(f"{path_text} has a `defaults:` key that packlint does not follow for this program")
    flatten(root, shown, "", target)


def _rewritten_before(path_text: str, where: Any) -> str | None:
    """The write of the script, before the line of the launch's flag that names the file (`where`: its span, or
    the file's word), that replaces a file the checkout holds."""
    span = getattr(where, "span", where)
    script_path = getattr(_SCRIPT, "path", None)
    if span is None or not span.file or not script_path:
        return None
    if os.path.abspath(span.file) != os.path.abspath(script_path):
        return None
    return _written_by_script(path_text, span.line)


def _inherit(path: str, root, dialect: str, target: dict, incomplete: list, depth: int) -> None:
    from packlint.configs.files import CNode

    body = dict(root.value or {})
    parents = body.pop("defaults", None)
    names: list | None = []
    if parents is not None:
        pv = parents.value
        if isinstance(pv, str):
            names = [pv]
        elif isinstance(pv, list) and all(isinstance(n.value, str) for n in pv):
            names = [n.value for n in pv]
        else:
            names = None
    if names is None or depth > 8:
        incomplete.append(f"{_shown(path)}: its `defaults:` is not followed")
    else:
        for name in names:
            parent = os.path.join(os.path.dirname(path), name)
            proot, err = read_config_file(parent, "yaml", dialect) if os.path.isfile(parent) else (None, None)
            if proot is None or not isinstance(proot.value, (dict, type(None))):
                incomplete.append(f"the parent config {name} of {_shown(path)} is not at hand")
                continue
            _inherit(parent, proot, dialect, target, incomplete, depth + 1)
    own: dict = {}
    flatten(CNode(body, root.line, root.column, root.end_line, root.end_column), _shown(path), "", own)
    for k, v in own.items():  # the child overrides what its parents set (OmegaConf.merge)
        for old in [o for o in target if o.startswith(k + ".") or k.startswith(o + ".")]:
            del target[old]
        target[k] = v


_SCRIPT: Any = None
_REDIRECT = LazyRegex(r"""(?:>>?|\btee\s+(?:-a\s+)?|\b(?:cp|mv|ln)\s+(?:-\S+\s+)*\S+\s+)\s*["']?([^\s;|&<>"']+)""")
_ASSIGN = LazyRegex(r"^\s*(?:export\s+|local\s+|declare\s+\S+\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.M)


_CD = LazyRegex(r"(?:^|[;&|(]|\bthen|\bdo)\s*(?:cd|pushd)\s", re.M)


_PROGRAM_DIRS: tuple[str | None, list[str]] = (None, [])
_ARGS: tuple[Any, Any] = ({}, [])  # the launch's flags and positionals, as its config is read


def _launch_words() -> list[str]:
    """The launch's words with known text: its flags' values and its positionals (read only for a missing file)."""
    flags, positionals = _ARGS
    values = [a for occs in flags.values() for o in occs for a in o.args]
    return [a.text for a in [*values, *positionals] if isinstance(getattr(a, "text", None), str)]


def _absent_data_folder(path_text: str, dirs: list[str]) -> tuple[str, str] | None:
    """The path lies in a top-level folder the checkout lacks, from which the same launch reads other files too
    (EnronMusk/generative-adapter: `--deepspeed $ROOT/data/deepspeed/stage2.json --train_data $ROOT/data/sft/...`,
    data/ cloned at set-up): a folder made on the machine, so its files are the machine's."""
    from packlint import evidence
    from packlint.configs.elsewhere import checkout_root

    root = checkout_root(dirs)
    if root is None or os.path.isabs(path_text):
        return None
    words = _launch_words()
    cwd = _program_cwd(dirs)
    if cwd is not None:
        hit = _absent_beside_program(path_text, cwd, root, words)
        if hit is not None:
            return hit
    for d in dirs:
        rel = os.path.relpath(os.path.normpath(os.path.join(d, path_text)), root)
        top = rel.split(os.sep, 1)[0]
        if rel.startswith("..") or top == rel or os.path.exists(os.path.join(root, top)):
            continue
        inside = os.path.join(root, top) + os.sep
        others = [
            w
            for w in words
            if w != path_text
            and not os.path.isabs(w)
            and any(os.path.normpath(os.path.join(e, w)).startswith(inside) for e in dirs)
        ]
        if others:
            return (
                evidence.MACHINE,
                f"{top}/ is not in the checkout, and the launch reads {others[0]} from it too: a folder made when "
                "the job is set up",
            )
    return None


def _program_cwd(dirs: list[str]) -> str | None:
    """The directory a relative `.py` program is run from, when that is the only one of `dirs` that holds it
    (duterscmy/JustGRPO: `python exp_backward_digits.py` beside bwd_verifier/'s scripts, none at the root): the
    job starts there, so the launch's other relative paths are relative to it too."""
    program = _PROGRAM_DIRS[0]
    if not program or os.path.isabs(program) or not program.endswith(".py") or "$" in program:
        return None
    holding = [d for d in dirs if os.path.isfile(os.path.join(d, program))]
    return holding[0] if len(holding) == 1 else None


def _absent_beside_program(path_text: str, cwd: str, root: str, words: list[str]) -> tuple[str, str] | None:
    """As `_absent_data_folder`, from the directory the program runs in: the first folder of the path that is
    not there, when the launch reads or writes other files in it too (bwd_verifier/data/, while the checkout's
    root holds an unrelated data/ package)."""
    from packlint import evidence

    cur = cwd
    for comp in os.path.normpath(path_text).split(os.sep)[:-1]:
        if comp in ("", ".", ".."):
            return None
        cur = os.path.join(cur, comp)
        if not os.path.isdir(cur):
            break
    else:
        return None
    inside = cur + os.sep
    others = [
        w
        for w in words
        if w != path_text and not os.path.isabs(w) and os.path.normpath(os.path.join(cwd, w)).startswith(inside)
    ]
    if not others:
        return None
    shown = os.path.relpath(cur, root)
    return (
        evidence.MACHINE,
        f"{shown}/ is not in the checkout, and the launch, run from {os.path.relpath(cwd, root)}/ where its program "
        f"is, reads or writes {others[0]} there too: a folder made when the job runs or is set up",
    )


# the launch's stack and its distribution's name (a README's clone of it: packlint.configs.elsewhere)
_STACK_NAMES: tuple[str, ...] = ()


def _why_not_missing(path_text: str, word: Any, dirs: list[str]) -> str | None:
    """Why a config file not found is not missing (the script writes it, or where it is looked up is not
    known), or None: it is missing."""
    from packlint.configs.launch_premises import other_engine

    writer = _written_by_script(path_text) or _named_by_caller(word) or _under_an_output_dir(path_text, word)
    writer = writer or other_engine(word, _ARGS[0])
    if writer is None and not os.path.isabs(path_text) and _changes_directory():
        writer = "it changes directory before the launch, so the relative path is relative to an unknown place"
    if writer is None and not os.path.isabs(path_text) and _program_elsewhere(path_text, dirs):
        # LLaVA-pp: `deepspeed llava/train/train_mem.py --deepspeed ./scripts/zero2.json`, a script its README
        # copies into the LLaVA checkout (a submodule) and runs there: neither path is this checkout's
        writer = (
            f"runs {_PROGRAM_DIRS[0]}, which is not found either: it runs from a directory this checkout "
            "does not hold, where the relative path may be"
        )
    if writer is None and os.path.dirname(path_text) in ("", "."):
        # a bare name is looked up in the job's working directory, which packlint does not know (a
        # previous run's output: Megatron-DeepSpeed's ds_evalharness.sh names the training run's
        # ds_config_<run>.json); a path with a directory names a file of the checkout
        writer = "it names a bare file, looked up in the job's working directory, which is not known"
    return writer


def _program_unseen() -> str | None:
    """Why the program a positional word is given to is not one of the checkout: a relative `.py` not found, a
    program packlint cannot name, or an absolute path outside the checkout; None for one it holds."""
    program = _PROGRAM_DIRS[0]
    if _program_absent():
        return f"{program} is not in the checkout"
    if not program or "$" in str(program):
        return "the program the launch runs is not known"
    if os.path.isabs(program) and program.endswith(".py"):
        from packlint.configs.elsewhere import checkout_root

        root = checkout_root(_PROGRAM_DIRS[1])
        if root is None or not program.startswith(root.rstrip("/") + "/"):
            return f"{program} is not in the checkout"
    return None


def _top_folder_held(path_text: str, dirs: list[str]) -> bool:
    """The first folder of a relative path is one the checkout holds (`benchmarks/` of `benchmarks/X/y.json`): the
    path addresses the checkout, whatever program opens it."""
    if os.path.isabs(path_text):  # (`${SCRIPT_DIR}/configs/x.yaml`: made from the script's own folder)
        norm = os.path.normpath(path_text)
        return any(norm.startswith(os.path.normpath(d).rstrip("/") + "/") for d in dirs)
    parts = [p for p in path_text.split("/") if p not in ("", ".")]
    if len(parts) < 2 or parts[0] == "..":
        return False
    return any(os.path.isdir(os.path.join(d, parts[0])) for d in dirs)


def _program_absent() -> bool:
    """The launch runs a relative `.py` program that is not found (beside the script, up to its checkout)."""
    program, program_dirs = _PROGRAM_DIRS
    if program and program.startswith("-m ") and not _STACK_NAMES:
        # `python -m src.maxdiffusion.models.train CONFIG` (mlcommons' maxdiffusion runs, inside a clone the README
        # makes): a module of no stack packlint knows that the checkout lacks
        module = program[3:].strip().split(" ", 1)[0]
        if not re.fullmatch(r"[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*", module):
            return False
        stem = module.replace(".", "/")
        return all(resolve_path(p, program_dirs) is None for p in (stem + ".py", stem + "/__main__.py"))
    if not program or os.path.isabs(program) or not program.endswith(".py") or "$" in program:
        return False
    return resolve_path(program, program_dirs) is None


def _program_elsewhere(path_text: str, dirs: list[str]) -> bool:
    """The launch runs a relative `.py` program that neither it nor its directory is found beside the
    script, up to its checkout root, or in the working directory: the directory it runs from is not one
    packlint looked in. (A program whose directory is there, `src/sft_gqa.py` beside `src/open_r1/`, is
    one the checkout lacks: the directory holds, and the config path is judged from it.) A config path
    that a directory of the checkout holds is the machine's to decide (packlint.configs.elsewhere)."""
    program, program_dirs = _PROGRAM_DIRS
    if not program or os.path.isabs(program) or not program.endswith(".py") or "$" in program:
        return False
    if resolve_path(program, program_dirs) is not None:
        return False
    parent = os.path.dirname(os.path.normpath(program))
    if parent and parent != "." and any(os.path.isdir(os.path.join(d, parent)) for d in program_dirs):
        return False
    from packlint.configs.elsewhere import missing_premise

    return missing_premise(path_text, dirs) is None


def _changes_directory() -> bool:
    return _SCRIPT is not None and hasattr(_SCRIPT, "script_text") and _CD.search(_SCRIPT.script_text()) is not None


def _written_by_script(path_text: str, before_line: int | None = None) -> str | None:
    """The redirection (or cp/mv/ln) in the script that writes the file, directly or through a
    variable assigned a value naming it; None when the script does not write it. A redirection to a
    computed name of the same kind (`sed ... > ${config_json}` with `config_json="ds_config_${NAME}.json"`,
    Megatron-DeepSpeed's shape) may write it too. With `before_line` (a file the checkout holds, named on
    that line): only a write on an earlier line that names the file itself, or a variable assigned its
    name, counts (idriscnrs/JZ-Megatron-DeepSpeed rewrites the checked-in ds_config.json with
    `cat <<EOT > $DS_CONFIG` before the launch)."""
    if _SCRIPT is None or not hasattr(_SCRIPT, "script_text"):
        return None
    text = _SCRIPT.script_text()
    base = os.path.basename(path_text)
    if not base:
        return None
    end = len(text)
    if before_line is not None:
        end = sum(len(line) + 1 for line in text.split("\n")[: max(before_line - 1, 0)])
    ext = os.path.splitext(base)[1]
    assigned = [(m.group(1), m.group(2)) for m in _ASSIGN.finditer(text, 0, end)]
    names_of_file = {n for n, v in assigned if base in v}
    computed = {n for n, v in assigned if "$" in v and ext and ext in v} if before_line is None else set()
    for m in _REDIRECT.finditer(text, 0, end):
        target = m.group(1)
        if base in target:
            return m.group(0).strip()
        for name in re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", target):
            if name in names_of_file or name in computed:
                return m.group(0).strip()
        if before_line is None and "$" in target and ext and target.endswith(ext):
            return m.group(0).strip()
    return None


# an output flag (`--output_dir D`, `--results-path=D`, `--save D`, `-o D`): the command writes files under D.
# (`mkdir -p D` alone is not counted: it makes D, not the file; a config named under it is still missing)
_FOR_IN = LazyRegex(r"^[ \t]*for[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]+in[ \t]+([^;\n]{1,400})", re.M)
_OUTPUT_DIR = LazyRegex(
    r"""(?<![\w-])(?:--?[\w-]{0,40}?(?:output|out|save|results?|dump)[\w-]{0,40}|-o)(?:=|[ \t]{1,40})"""
    r"""["']?([^\s;|&<>"'\\]{1,4096})"""
)


def _under_an_output_dir(path_text: str, word: Any) -> str | None:
    """The file lies under a directory an earlier command of the script is told to write (its output
    flag): the previous step's result (OFA's evaluate_caption.sh scores
    `../../results/caption/test_predict.json` after `evaluate.py --results-path=${result_path}` wrote
    it). Variables in the directory's word are read from the script's own assignments."""
    if _SCRIPT is None or not hasattr(_SCRIPT, "script_text"):
        return None
    text = _SCRIPT.script_text()
    span = getattr(word, "span", None)
    before = len(text)
    if span is not None and span.line > 1:
        lines = text.split("\n")
        before = sum(len(line) + 1 for line in lines[: span.line - 1])
    values: dict[str, list[str]] = {}
    for m in _ASSIGN.finditer(text):
        values.setdefault(m.group(1), []).append(m.group(2).strip().strip("'\""))
    for m in _FOR_IN.finditer(text):  # `for scale in tiny base; do`: each word a value of the loop's variable
        values.setdefault(m.group(1), []).extend(_loop_words(m.group(2), values))
    target = os.path.normpath(path_text)
    for m in _OUTPUT_DIR.finditer(text, 0, before):
        for d in _spellings(m.group(1), values):
            d = os.path.normpath(d)
            if d not in (".", "/", "..") and "$" not in d and target.startswith(d.rstrip("/") + "/"):
                return f"runs an earlier command that writes under {d} (`{m.group(0).strip()}`)"
    return None


def _loop_words(words: str, values: dict[str, list[str]]) -> list[str]:
    """The words of a `for` loop's list, an array's items for `${NAME[@]}` (BiomedGPT's `declare -a Scale=('tiny'
    'medium' 'base')`), at most 8."""
    import shlex

    out: list[str] = []
    for w in words.split()[:8]:
        m = re.fullmatch(r"""["']?\$\{([A-Za-z_][A-Za-z0-9_]*)\[[@*]\]\}["']?""", w)
        items = values.get(m.group(1), []) if m else []
        array = next((v for v in items if v.startswith("(") and v.endswith(")")), None)
        if array is not None:
            try:
                out += shlex.split(array[1:-1])[:8]
            except ValueError:
                continue
        else:
            out.append(w.strip("'\""))
    return out[:8]


def _spellings(word: str, values: dict[str, list[str]], depth: int = 0) -> list[str]:
    """The word with `$NAME`/`${NAME}` replaced by each value the script assigns NAME, three levels deep
    (`result_path=./results/${scale}` with `scale=tiny`: BiomedGPT's evaluate scripts)."""
    names = re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", word)
    if not names:
        return [word]
    out = [word]
    for name in names:
        pattern = re.compile(r"\$\{?" + name + r"\b\}?")
        out = [pattern.sub(v.replace("\\", "\\\\"), w) for w in out for v in values.get(name, [])[:4]]
    out = out[:16]
    if depth < 2 and any("$" in w for w in out):
        out = [x for w in out for x in _spellings(w, values, depth + 1)][:16]
    return out


def _named_by_caller(word: Any) -> str | None:
    """The file's name is built from the script's positional arguments (`file=./train/$1.py`, checked
    without arguments, where `$1` is empty): it is the caller's file, not a missing one."""
    span = getattr(word, "span", None)
    if span is None or _SCRIPT is None or not hasattr(_SCRIPT, "script_text"):
        return None
    from packlint.interpret.guards import from_caller_arguments

    if from_caller_arguments(_SCRIPT.script_text(), span.line - 1, max(span.end_line, span.line) - 1):
        return "it names the file from the caller's arguments"
    return None


def _read_nested(cfg: dict, sec: str, s: dict, dirs: list[str], dialect: str) -> None:
    from packlint.evidence import UNSET
    from packlint.values import Span

    span = Span(s["file"], s["line"], s["column"], s["end_line"], s["end_column"]) if s.get("file") else None
    because = (s.get("evidence") or {}).get("because") if isinstance(s.get("evidence"), dict) else None
    unset = because[1 : -len(UNSET)] if isinstance(because, str) and because.endswith(UNSET) else None
    word = Known(s["value"], span, f"unset:{unset}" if unset else None)  # (`zero${STAGE}.json`: _name_unknown)
    target = cfg["sections"].setdefault(sec, {})
    sub: list[str] = []
    _read_into(cfg, sec, "nested", word, None, None, dialect, dirs, target, sub, sec)
    if sub:
        cfg.setdefault("unknown_sections", {})[sec] = "; ".join(sub)


def _note_machine(record: dict[str, Any], path_text: str, dirs: list[str]) -> None:
    """A missing file the machine may hold (packlint.configs.elsewhere): its evidence, for PK601's cap."""
    from packlint.configs.elsewhere import missing_premise, stack_clone_premise
    from packlint.configs.launch_premises import datasets_elsewhere, placeholder
    from packlint.evidence import to_json

    premise = missing_premise(path_text, dirs) or stack_clone_premise(path_text, dirs, _STACK_NAMES)
    if premise is None:
        premise = _climbs_out(path_text, dirs) or _absent_data_folder(path_text, dirs) or placeholder(path_text, dirs)
    if premise is None and "llamafactory" in _STACK_NAMES:
        premise = datasets_elsewhere(path_text, dirs, _ARGS[0])
    if premise is not None:
        record["evidence"] = to_json(premise)


def _climbs_out(path_text: str, dirs: list[str]) -> tuple[str, str] | None:
    """A relative path whose base is the machine's: the launch's program is an absolute path outside the checkout,
    or the path climbs out of the checkout from where the launch must run (its program `train/sft.py`
    is found only from the checkout's root, and from there `../examples/ds.json` is a file beside the checkout
    (IsTianSheng/LONG1k-32B, meant to sit in a LLaMA-Factory tree): the machine's, as an absolute path outside is."""
    import os

    from packlint import evidence
    from packlint.configs.elsewhere import checkout_root

    program = _PROGRAM_DIRS[0]
    root = checkout_root(dirs)
    outside = bool(program and root and os.path.isabs(program)) and not str(program).startswith(
        str(root).rstrip("/") + "/"
    )
    if outside and not os.path.isabs(path_text):
        # (orange-city/llama_factory_nli: `torchrun /data/.../LLaMA-Factory/src/llamafactory/launcher.py ...
        # --deepspeed examples/deepspeed/ds_z3_config.json`: the job starts in that tree, not in this checkout)
        return (
            evidence.MACHINE,
            f"the launch runs {program}, outside the checkout, so {path_text} is relative to a directory of the "
            "machine it runs on",
        )
    if not path_text.startswith("../") or not program or os.path.isabs(program) or not root:
        return None
    # the folders the launch can run from: where its program is found (the checkout's root, the script's own)
    starts = [d for d in dict.fromkeys([root, *dirs[:1]]) if os.path.isfile(os.path.join(d, program))]
    inside = str(root).rstrip("/") + "/"
    if not starts or any(os.path.normpath(os.path.join(d, path_text)).startswith(inside) for d in starts):
        return None
    where = "the checkout's root" if starts == [root] else "the script's folder" if root not in starts else "there"
    return (
        evidence.MACHINE,
        f"the launch runs from {where} (where {program} is), and {path_text} from there is outside the "
        "checkout, on the machine it runs on",
    )
