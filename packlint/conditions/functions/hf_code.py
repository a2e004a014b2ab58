"""Functions over a hand-written HF Trainer / transformers program (issue 21, catalogue rows 9 and 11): what
the launched Python code builds (a `DataCollatorWithFlattening`, the `attn_implementation` and the model it
loads), read with `ast` from the files of the program's import closure (the code reader's `files`), never
imported or run; and what the transformers the launch runs does with packed `position_ids`.

A value the code computes is resolved only when it is a literal, or an attribute `X.name` of the namespace
the program's parser builds (`model_args.attn_implementation`: the launch's `--attn_implementation` word, or
the field's literal default); anything else is unknown, and so is everything when the program's code is not
at hand. A model named on the hub is never fetched: its family is read from a local `config.json` when the
name is a local directory, else from the name alone where the name says it.
"""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any

from packlint.caches import run_memo
from packlint.conditions.tree import BOOL, STR, Builtin, EvalContext, Function, NameLookupError, Unk

if TYPE_CHECKING:
    import ast

MAX_FILE = 1_000_000  # a program file larger than this is not parsed (its facts are unknown)
MAX_CONFIG_JSON = 256 * 1024

# (path) -> (mtime_ns, size, FileCalls | None)
_AST_MEMO: dict[str, tuple[int, int, Any]] = {}

# receivers of `.from_pretrained(...)` that load a tokenizer/config/processor, not the model
_NOT_MODEL = re.compile(r"(Tokenizer|Config|Processor|FeatureExtractor|ImageProcessor|GenerationConfig)")


class _Call:
    __slots__ = ("name", "file", "line", "keywords", "star_kwargs", "args")

    def __init__(
        self, name: str, file: str, line: int, keywords: dict[str, Any], star_kwargs: bool, args: list[Any]
    ) -> None:
        self.name, self.file, self.line = name, file, line
        self.keywords, self.star_kwargs, self.args = keywords, star_kwargs, args


class _FileFacts:
    """The calls of one file (by the callee's last name), the names it defines, and every expression
    given for a keyword/dict key (`attn_implementation=...`, `{"attn_implementation": ...}`)."""

    __slots__ = ("calls", "defined", "given", "imported_from", "fields")

    def __init__(self) -> None:
        self.fields: dict[str, list[Any]] = {}  # class-body `name: T = default` (dataclass fields): defaults
        self.calls: list[_Call] = []
        self.defined: set[str] = set()
        self.given: dict[str, list[tuple[ast.AST, str, int]]] = {}
        self.imported_from: dict[str, str] = {}


def _callee_name(func: ast.AST) -> str | None:
    import ast  # (2 ms at start-up otherwise; only needed once a file is parsed)

    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _receiver(func: ast.AST) -> str:
    import ast  # (2 ms at start-up otherwise; only needed once a file is parsed)

    if isinstance(func, ast.Attribute):
        v = func.value
        if isinstance(v, ast.Name):
            return v.id
        if isinstance(v, ast.Attribute):
            return v.attr
    return ""


def _scan(path: str) -> _FileFacts | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    memo = _AST_MEMO.get(path)
    if memo is not None and memo[0] == st.st_mtime_ns and memo[1] == st.st_size:
        return memo[2]
    facts: _FileFacts | None = None
    if st.st_size <= MAX_FILE:
        import ast

        from packlint.conditions.functions.stack_source import read_stack_text

        text = read_stack_text(path)
        tree = None
        if text is not None:
            try:
                tree = ast.parse(text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                tree = None
        if tree is not None:
            facts = _FileFacts()
            try:
                _walk(tree, path, facts)
            except RecursionError:
                facts = None
    _AST_MEMO[path] = (st.st_mtime_ns, st.st_size, facts)
    return facts


def _walk(tree: ast.AST, path: str, facts: _FileFacts) -> None:
    import ast  # (2 ms at start-up otherwise; only needed once a file is parsed)

    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            facts.defined.add(node.name)
            if isinstance(node, ast.ClassDef):
                for st in node.body:
                    if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                        facts.fields.setdefault(st.target.id, []).append(_field_default(st.value))
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                facts.imported_from[alias.asname or alias.name] = node.module
        elif isinstance(node, ast.Call):
            name = _callee_name(node.func)
            if name is None:
                continue
            kws = {k.arg: k.value for k in node.keywords if k.arg is not None}
            star = any(k.arg is None for k in node.keywords)
            if name == "from_pretrained":
                name = "from_pretrained:" + _receiver(node.func)
            facts.calls.append(_Call(name, path, node.lineno, kws, star, list(node.args)))
            for k, v in kws.items():
                facts.given.setdefault(k, []).append((v, path, node.lineno))
        elif isinstance(node, ast.Dict):
            for dk, dv in zip(node.keys, node.values, strict=True):
                if isinstance(dk, ast.Constant) and isinstance(dk.value, str):
                    facts.given.setdefault(dk.value, []).append((dv, path, getattr(dv, "lineno", 0)))


_NO_DEFAULT = object()


def _field_default(v: ast.AST | None) -> Any:
    """The literal default of a dataclass field (`x: str = "a"`, `x: str = field(default="a")`), else
    _NO_DEFAULT."""
    import ast  # (2 ms at start-up otherwise; only needed once a file is parsed)

    if isinstance(v, ast.Call) and _callee_name(v.func) == "field":
        v = next((k.value for k in v.keywords if k.arg == "default"), None)
    if v is None:
        return _NO_DEFAULT
    try:
        return ast.literal_eval(v)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NO_DEFAULT


# (path) -> (mtime_ns, size, {needle: found or None}): the substring pre-check, remembered per needle (the
# bytes themselves are not kept: a long-running server would hold every program file)
_MENTIONS_MEMO: dict[str, tuple[int, int, dict[bytes, bool | None]]] = {}


def _mentions(path: str, needle: bytes) -> bool | None:
    """Whether the file's bytes contain NEEDLE (no decoding, no parsing: the cheap pass over a Megatron-sized
    import closure); None when the file is not a regular file or is too large to read."""
    import stat

    try:
        st = os.stat(path)
    except OSError:
        return None
    memo = _MENTIONS_MEMO.get(path)
    if memo is None or memo[0] != st.st_mtime_ns or memo[1] != st.st_size:
        memo = _MENTIONS_MEMO[path] = (st.st_mtime_ns, st.st_size, {})
    found = memo[2]
    if needle not in found:
        data: bytes | None = None
        if stat.S_ISREG(st.st_mode) and st.st_size <= MAX_FILE:
            from packlint.safe_io import read_regular

            data = read_regular(path, MAX_FILE)
        found[needle] = None if data is None else needle in data
    return found[needle]


def _program(ctx: EvalContext, needle: str) -> tuple[Any, list[_FileFacts]] | Unk:
    """(the code facts, the parsed files that mention NEEDLE) of the launch's program, or Unk when its code is
    not at hand or a file that mentions NEEDLE cannot be read or parsed. Only those files are parsed: a
    Megatron program's import closure has hundreds of files, and most rules ask about none of them."""
    memo = ctx.memo
    key = "hf_program:" + needle
    if key in memo:
        return memo[key]
    try:
        facts = ctx.code_facts()
    except Exception:  # a reader bug must not take the check down
        facts = None
    out: Any
    if facts is None or not facts.known:
        out = Unk("the launched program's code is not at hand", "unknown")
    else:
        files = _mentioning(tuple(facts.files or ()), needle)
        out = files if isinstance(files, Unk) else (facts, files)
    memo[key] = out
    return out


# (needle, the program's files) -> what `_mentioning` found, for one check run (caches.run_memo): a
# repository's scripts launch the same few programs, each with an import closure of hundreds of files
_RUN_MENTIONING = run_memo()


def _mentioning(files: tuple[str, ...], needle: str) -> list[_FileFacts] | Unk:
    """The parsed files among FILES whose bytes mention NEEDLE, or Unk when one of them cannot be read or parsed."""
    from packlint.caches import IN_RUN

    key = (needle, files)
    if IN_RUN[0] and key in _RUN_MENTIONING:
        return _RUN_MENTIONING[key]
    found: list[_FileFacts] = []
    out: list[_FileFacts] | Unk = found
    want = needle.encode()
    for f in files:
        seen = _mentions(f, want)
        if seen is False:
            continue
        s = _scan(f) if seen else None
        if s is None:
            out = Unk(f"{_shown(f)} of the launched program could not be parsed", "unknown")
            break
        found.append(s)
    if IN_RUN[0]:
        _RUN_MENTIONING[key] = out
    return out


def _shown(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _calls_of(files: list[_FileFacts], name: str) -> list[_Call]:
    """Calls of NAME where NAME is not one of the program's own classes/functions (a project class of the
    same name is not the library's)."""
    if any(name in f.defined for f in files):
        return []
    return [c for f in files for c in f.calls if c.name == name]


def _compile_name(args: list[Any]) -> Any:
    if not all(str(a).isidentifier() for a in args):
        raise NameLookupError(f"code_calls: {args!r} must be Python names")
    return tuple(args) if len(args) > 1 else args[0]


def _f_code_calls(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    prog = _program(ctx, node.static)
    if isinstance(prog, Unk):
        return prog
    return bool(_calls_of(prog[1], node.static))


def _f_code_call_at(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    prog = _program(ctx, node.static)
    if isinstance(prog, Unk):
        return prog
    calls = _calls_of(prog[1], node.static)
    if not calls:
        return Unk(f"the program does not call {node.static}", "absent")
    c = calls[0]
    return f"{_shown(c.file)}:{c.line}"


def _f_code_call_keyword(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """The keyword KW of the calls of NAME: its source text ('' given as a literal empty string), absent
    when no call passes it, unknown when a call passes **kwargs (it may hold KW)."""
    name, kw = node.static
    prog = _program(ctx, name)
    if isinstance(prog, Unk):
        return prog
    calls = _calls_of(prog[1], name)
    for c in calls:
        if kw in c.keywords:
            return _literal_text(c.keywords[kw])
    if any(c.star_kwargs for c in calls):
        return Unk(f"a call of {name} passes **kwargs, which may hold {kw}", "unknown")
    return Unk(f"no call of {name} passes {kw}", "absent")


def _f_code_call_passes(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """Whether a call of NAME passes the keyword KW; unknown when one passes **kwargs instead."""
    name, kw = node.static
    prog = _program(ctx, name)
    if isinstance(prog, Unk):
        return prog
    calls = _calls_of(prog[1], name)
    if any(kw in c.keywords for c in calls):
        return True
    if any(c.star_kwargs for c in calls):
        return Unk(f"a call of {name} passes **kwargs, which may hold {kw}", "unknown")
    return False


def _literal_text(v: ast.AST) -> str:
    import ast  # (2 ms at start-up otherwise; only needed once a file is parsed)

    try:
        lit = ast.literal_eval(v)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ast.unparse(v)
    if lit is True:
        return "true"
    if lit is False:
        return "false"
    return str(lit)


def _resolve(ctx: EvalContext, facts: Any, v: ast.AST, what: str, files: list[_FileFacts] | None = None) -> Any:
    """A value expression of the program: a literal, or `X.dest` of the parser's namespace (the launch's
    flag, else the field's literal default); unknown otherwise."""
    import ast  # (2 ms at start-up otherwise; only needed once a file is parsed)

    if isinstance(v, ast.Constant) and isinstance(v.value, str):
        return v.value
    if isinstance(v, ast.Attribute) and facts.schema is not None:
        from packlint.conditions.functions.startup import is_unknown_value, launch_attrs

        memo = ctx.memo
        if "hf_attrs" not in memo:
            memo["hf_attrs"] = launch_attrs(ctx, facts.schema)
        attrs = memo["hf_attrs"]
        if v.attr in attrs:
            val = attrs[v.attr]
            if is_unknown_value(val) or val is None:
                return Unk(f"{what} comes from --{v.attr}, whose value is not known", "unknown")
            return str(val)
        if _parses_dataclasses(facts):
            return _dataclass_value(ctx, files or [], v.attr, what)
    return Unk(f"{what} is computed by the program ({ast.unparse(v)[:60]})", "unknown")


def _parses_dataclasses(facts: Any) -> bool:
    """The program's parser is HfArgumentParser over dataclasses packlint did not expand into its schema."""
    schema = facts.schema
    return getattr(schema, "kind", None) == "hf" or any(
        "HfArgumentParser" in str(r) for r in (getattr(schema, "open_reasons", None) or [])
    )


def _dataclass_value(ctx: EvalContext, files: list[_FileFacts], attr: str, what: str) -> Any:
    """`args.ATTR` of an HfArgumentParser program: the launch's `--ATTR` word (the last one), else the
    literal default of the program's own dataclass field ATTR; unknown otherwise."""
    from packlint.conditions.functions.core import _free_unknowns

    flags = ctx.variant.get("flags", {})
    occs = [o for spelling in (f"--{attr}", f"--{attr.replace('_', '-')}") for o in flags.get(spelling, []) if o]
    occs.sort(key=lambda o: (o.get("line") or 0, o.get("column") or 0))
    hidden = _free_unknowns(ctx)
    if occs:
        last = occs[-1]
        if "unknown" in last or hidden is not None:
            return Unk(f"{what} comes from --{attr}, whose value is not known", "unknown")
        value = last.get("value")
        return value if isinstance(value, str) else Unk(f"--{attr} has no single value", "unknown")
    if hidden is not None:
        return Unk(f"{what}: --{attr} may be given by {hidden}", "unknown")
    mentioning = _program(ctx, attr)
    if isinstance(mentioning, Unk):
        return mentioning
    defaults = [d for f in mentioning[1] for d in f.fields.get(attr, [])]
    if len(defaults) == 1 and isinstance(defaults[0], str):
        return defaults[0]
    return Unk(f"{what} comes from --{attr}, not given, whose default packlint cannot decide", "unknown")


def _f_code_model_kwarg(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """The value the program gives KEY (`attn_implementation=...` or a dict key) anywhere in its code,
    resolved; absent when never given; unknown when it is computed or the places disagree."""
    key = node.static
    prog = _program(ctx, key)
    if isinstance(prog, Unk):
        return prog
    facts, files = prog
    places = [p for f in files for p in f.given.get(key, [])]
    if not places:
        return Unk(f"the program never passes {key}", "absent")
    values = []
    for v, file, line in places:
        r = _resolve(ctx, facts, v, f"{key} ({_shown(file)}:{line})", files)
        if isinstance(r, Unk):
            return r
        values.append(r)
    if len(set(values)) > 1:
        return Unk(f"the program passes {key} = {' / '.join(sorted(set(values)))} in different places", "unknown")
    return values[0]


def _f_code_model_name(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """The model the program loads: the first argument of its model `from_pretrained` calls (a receiver
    that is not a tokenizer/config/processor), resolved; unknown when computed or when they disagree."""
    prog = _program(ctx, "from_pretrained")
    if isinstance(prog, Unk):
        return prog
    facts, files = prog
    calls = [
        c
        for f in files
        for c in f.calls
        if c.name.startswith("from_pretrained:") and not _NOT_MODEL.search(c.name.split(":", 1)[1])
    ]
    if not calls:
        return Unk("the program loads no model with from_pretrained", "absent")
    names = []
    for c in calls:
        arg = c.args[0] if c.args else c.keywords.get("pretrained_model_name_or_path")
        if arg is None:
            return Unk(f"the model of {_shown(c.file)}:{c.line} is not a positional argument", "unknown")
        r = _resolve(ctx, facts, arg, f"the model ({_shown(c.file)}:{c.line})", files)
        if isinstance(r, Unk):
            return r
        names.append(r)
    if len(set(names)) > 1:
        return Unk(f"the program loads several models ({', '.join(sorted(set(names)))})", "unknown")
    return names[0]


def _model_dirs(ctx: EvalContext, name: str) -> list[str]:
    if os.path.isabs(name):
        return [name]
    roots = []
    script = ctx.model.get("script")
    if script:
        roots.append(os.path.dirname(os.path.abspath(script)))
    roots.append(os.getcwd())
    return [os.path.join(r, name) for r in roots]


def _f_model_config_value(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """KEY of the config.json of the model NAME when NAME is a local directory (read as JSON, bounded);
    unknown for a hub name (never fetched)."""
    name, key = a[0], node.static
    if isinstance(name, Unk):
        return name
    for d in _model_dirs(ctx, name):
        path = os.path.join(d, "config.json")
        if not os.path.isfile(path):
            continue
        from packlint.conditions.functions.stack_source import read_stack_text

        try:
            text = read_stack_text(path) if os.path.getsize(path) <= MAX_CONFIG_JSON else None
        except OSError:
            text = None
        if text is None:
            return Unk(f"{_shown(path)} could not be read", "unknown")
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return Unk(f"{_shown(path)} is not valid JSON", "unknown")
        if not isinstance(data, dict):
            return Unk(f"{_shown(path)} is not a JSON object", "unknown")
        if key not in data:
            return Unk(f"{_shown(path)} has no {key}", "absent")
        v = data[key]
        return "true" if v is True else "false" if v is False else str(v)
    return Unk(f"{name} is not a local model directory (packlint never fetches a hub model)", "unknown")


def _compile_key(args: list[Any]) -> str:
    if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", str(args[-1])):
        raise NameLookupError(f"{args[-1]!r} is not a key name")
    return args[-1]


# ------------------------------------------------------------------------------------------ transformers
# transformers derives a block-diagonal mask from packed position_ids for sdpa/eager/flex in
# masking_utils.find_packed_sequence_indices (PR #39194, first released in 4.53.1); earlier releases have
# no masking_utils.py (4.52) or one without it (4.53.0), and those backends ignore the packing.


def _transformers_dir(ctx: EvalContext) -> tuple[str, str] | None:
    """(the transformers package directory the launch runs, where it was found)."""
    from packlint.conditions.functions.stack_source import locate_stack_file

    init = locate_stack_file(ctx, "transformers/__init__.py")
    if init is None:
        return None
    return os.path.dirname(init), init


def _f_transformers_packed_masks(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """'yes' when the transformers the launch runs derives per-sample masks from packed position_ids for
    sdpa/eager/flex (masking_utils has find_packed_sequence_indices); 'no' when its code (or, without
    the code, its version) predates that; unknown when neither is at hand."""
    from packlint.conditions.functions.stack_source import read_stack_text

    found = _transformers_dir(ctx)
    if found is not None:
        mu = os.path.join(found[0], "masking_utils.py")
        if not os.path.isfile(mu):
            return "no"
        text = read_stack_text(mu)
        if text is None:
            return Unk(f"{_shown(mu)} could not be read", "unknown")
        return "yes" if "def find_packed_sequence_indices" in text else "no"
    v = _f_transformers_version(ctx, node, a)
    if isinstance(v, Unk):
        return v
    from packlint.rule_table import parse_versions, version_in_range

    ok = version_in_range(parse_versions("hf-trainer>=4.53.1")[1], v)
    if ok is None:
        return Unk(f"transformers' version {v!r} has no release number", "unknown")
    return "yes" if ok else "no"


def _f_transformers_version(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """The transformers version of the launch: the `__version__` of the transformers package it runs
    (beside the script, else installed: located without importing), else an HF Trainer launch's stack
    version (which also reads a stack-versions pin); unknown otherwise."""
    from packlint.configs.versions import _VERSION, _read_small, installed_version

    found = _transformers_dir(ctx)
    if found is not None:
        m = _VERSION.search(_read_small(found[1]) or "")
        if m:
            return m.group(1)
    from packlint.conditions.functions.stack import _stack_entry

    cfg = _stack_entry(ctx)
    if cfg and cfg.get("stack") == "hf-trainer":
        v = cfg.get("stack_version") or {}
        if "value" in v:
            return str(v["value"])
    inst = installed_version("transformers")
    if inst is not None:
        return inst
    return Unk("transformers' version is unknown (no code base copy, not installed here, no pin)", "unknown")


HF_CODE_FUNCTIONS: dict[str, Function] = {
    "code_calls": Function(
        (STR,),
        (),
        BOOL,
        _f_code_calls,
        "the launched program's code (its import closure, read with ast) calls NAME (a library class or "
        "function: a class of the program's own with that name does not count); unknown when the code is not "
        "at hand",
        literal=(0,),
        compile_static=lambda args: _compile_name(args),
    ),
    "code_call_at": Function(
        (STR,),
        (),
        STR,
        _f_code_call_at,
        "file:line of the program's first call of NAME (for messages)",
        literal=(0,),
        compile_static=lambda args: _compile_name(args),
    ),
    "code_call_keyword": Function(
        (STR, STR),
        (),
        STR,
        _f_code_call_keyword,
        "the keyword KW of the program's calls of NAME, as text (a literal's value, else its source); absent "
        "when no call passes it; unknown when a call passes **kwargs",
        literal=(0, 1),
        compile_static=lambda args: _compile_name(args),
    ),
    "code_call_passes": Function(
        (STR, STR),
        (),
        BOOL,
        _f_code_call_passes,
        "a call of NAME in the program passes the keyword KW; unknown when a call passes **kwargs instead",
        literal=(0, 1),
        compile_static=lambda args: _compile_name(args),
    ),
    "code_model_kwarg": Function(
        (STR,),
        (),
        STR,
        _f_code_model_kwarg,
        "the value the program passes as KEY (a keyword or a dict key, e.g. attn_implementation), resolved: a "
        "literal, or `args.NAME` as the launch's flags (or the parser's literal default) give it; absent when "
        "never passed; unknown when computed or when two places disagree",
        literal=(0,),
        compile_static=lambda args: _compile_key(args),
    ),
    "code_model_name": Function(
        (),
        (),
        STR,
        _f_code_model_name,
        "the model the program loads: the first argument of its model `from_pretrained` calls, resolved as "
        "code_model_kwarg resolves; unknown when computed or when several models are loaded",
    ),
    "model_config_value": Function(
        (STR, STR),
        (),
        STR,
        _f_model_config_value,
        "KEY of the config.json of a model given as a local directory (relative to the script or the working "
        "directory), read as bounded JSON; unknown for a hub name (never fetched)",
        literal=(1,),
        compile_static=lambda args: _compile_key(args),
    ),
    "transformers_packed_masks": Function(
        (),
        (),
        STR,
        _f_transformers_packed_masks,
        "the transformers the launch runs (its code beside the script or installed, located without "
        "importing; else its version) derives per-sample masks from packed position_ids for sdpa/eager/flex "
        "(masking_utils.find_packed_sequence_indices, from 4.53.1): 'yes' or 'no'; unknown when neither is at hand",
    ),
    "transformers_version": Function(
        (),
        (),
        STR,
        _f_transformers_version,
        "the transformers version of the launch (an HF Trainer launch's stack version, the code base beside "
        "the script, the installed distribution); unknown when none says",
    ),
}
