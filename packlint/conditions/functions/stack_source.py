"""Functions over a training stack's own source (issue 21): whether a check or a behaviour a stack rule
depends on still exists in the code the launch will run.

`stack_source_found('llamafactory/data/collator.py')` / `stack_source_has(PATH, REGEX)` look for the file
PATH (a path relative to a package root, as in the stack's repository under `src/` or in site-packages)
in, in order:

1. the launch's code bases: the program's root and the launch's PYTHONPATH, the checkout the script
   lives in (its directory up to the repository root), the `--code-base` roots; each as `ROOT/PATH`
   and `ROOT/src/PATH`;
2. the installed distribution: the top-level package of PATH located on `sys.path` with
   `importlib.machinery.PathFinder.find_spec`, which searches the directories and never imports
   (`importlib.util.find_spec('a.b')` would import `a`: not used).

The file is read as text (at most MAX_BYTES), never imported or executed. Three-valued: when no such file
is at hand, `stack_source_has` is unknown (the rule is undecided); a rule that should run on the
catalogue's knowledge when the code is not at hand says `not stack_source_found(P) or stack_source_has(P, R)`.
"""

from __future__ import annotations

import os
from typing import Any

from packlint.caches import memo
from packlint.conditions.tree import BOOL, STR, Builtin, EvalContext, Function, NameLookupError, Unk
from packlint.model_view import launch_argv, program
from packlint.regex import BoundedRegex, Undecided

MAX_BYTES = 2_000_000  # the largest stack file read (sft_trainer.py is ~110 kB; config.py of Bridge ~90 kB)

# (absolute path) -> (mtime_ns, size, text): one read per file and process
_TEXT_MEMO: dict[str, tuple[int, int, str | None]] = {}


def _compile_path(args: list[Any]) -> str:
    path = args[0]
    if not path or path.startswith("/") or ".." in path.split("/") or "\\" in path:
        raise NameLookupError(f"stack source path {path!r} must be relative, with '/' separators and no '..'")
    return path


def _compile_path_regex(args: list[Any]) -> tuple[str, BoundedRegex]:
    from packlint.regex_guard import rule_pattern

    return _compile_path(args), rule_pattern(args[1])  # a bad or exponential pattern fails the table's load


def _code_search_roots(ctx: EvalContext) -> list[str]:
    """The directories the launch's code is looked up in: the program's root and the launch's PYTHONPATH
    (when the code reader resolved them), the script's checkout (its directory up to the repository
    root, nearest first), then the other roots the code reader searched (`--code-base`)."""
    if ctx._code is None:  # code reading is off: no code base, and no installed distribution either
        return []
    from packlint.codebase.resolve import script_checkout_dirs

    facts = None
    try:
        facts = ctx.code_facts()
    except Exception:  # a reader bug must not take the check down
        facts = None
    res = getattr(facts, "resolution", None)
    roots: list[str] = []
    if res is not None:
        roots += [r for r in [res.root, *(res.pythonpath or [])] if r]
    script = ctx.model.get("script")
    if script:
        roots += script_checkout_dirs(script)
    if res is not None:
        roots += [r for r in (res.roots or []) if r]
    out: list[str] = []
    for r in roots:
        r = os.path.abspath(r)
        if r not in out:
            out.append(r)
    return out


def _installed_file(path: str) -> str | None:
    """PATH inside the installed top-level package, located without importing anything."""
    from importlib.machinery import PathFinder

    top, _, rest = path.partition("/")
    if not top.isidentifier():
        return None
    try:
        spec = PathFinder.find_spec(top)
    except (ImportError, ValueError, OSError):
        return None
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    if not locations:  # a plain module: PATH names it directly
        origin = spec.origin or ""
        return origin if not rest and os.path.isfile(origin) else None
    for loc in locations:
        candidate = os.path.join(loc, rest)
        if os.path.isfile(candidate):
            return candidate
    return None


def locate_stack_file(ctx: EvalContext, path: str) -> str | None:
    """The file the launch would run for PATH: a code base's copy first, else the installed one."""
    memo_key = "stack_file:" + path
    if memo_key in ctx.memo:
        return ctx.memo[memo_key]
    roots = ctx.memo.get("stack_roots")
    if roots is None:
        roots = ctx.memo["stack_roots"] = tuple(_code_search_roots(ctx))
    key = (path, roots, ctx._code is not None)
    if key in _LOCATE_MEMO:  # the same roots for every launch of a script (a run does not change the tree)
        found = _LOCATE_MEMO[key]
    else:
        found = None
        for root in roots:
            for candidate in (os.path.join(root, path), os.path.join(root, "src", path)):
                if os.path.isfile(candidate):
                    found = candidate
                    break
            if found:
                break
        if found is None and ctx._code is not None:
            found = _installed_file(path)
        _LOCATE_MEMO[key] = found
    ctx.memo[memo_key] = found
    return found


_LOCATE_MEMO: dict[tuple[Any, ...], str | None] = memo()


def read_stack_text(file: str) -> str | None:
    """The file's text (None when unreadable or larger than MAX_BYTES), memoised by mtime and size."""
    try:
        st = os.stat(file)
    except OSError:
        return None
    memo = _TEXT_MEMO.get(file)
    if memo is not None and memo[0] == st.st_mtime_ns and memo[1] == st.st_size:
        return memo[2]
    text: str | None
    if st.st_size > MAX_BYTES:
        text = None
    else:
        from packlint.errors import PacklintError
        from packlint.safe_io import read_bounded

        try:  # a regular file only: a FIFO planted at a stack's path in a repository never blocks
            text = read_bounded(file, MAX_BYTES, "stack source").decode("utf-8", errors="replace")
        except (OSError, PacklintError):
            text = None
    _TEXT_MEMO[file] = (st.st_mtime_ns, st.st_size, text)
    return text


def _f_found(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    file = locate_stack_file(ctx, node.static)
    prog = program(ctx.launch, ctx.variant) if file is None else None
    if prog and prog.startswith("-m "):
        from packlint.configs.hydra import partial_package

        partial = partial_package(ctx.memo.get("stack_roots") or (), prog[3:].strip())
        if partial is not None:
            return Unk(partial, "unknown")
    return file is not None and read_stack_text(file) is not None


def _f_has(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    path, regex = node.static
    file = locate_stack_file(ctx, path)
    text = read_stack_text(file) if file else None
    if text is None:
        return Unk(f"the stack's source {path} is not at hand", "unknown")
    try:
        return regex.search(text) is not None
    except Undecided as exc:
        return Unk(f"the stack's source {path}: {exc}", "unknown")


def _f_file(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    file = locate_stack_file(ctx, node.static)
    if file is None:
        return Unk(f"the stack's source {node.static} is not at hand", "absent")
    return file


STACK_SOURCE_FUNCTIONS: dict[str, Function] = {
    "stack_source_found": Function(
        (STR,),
        (),
        BOOL,
        _f_found,
        "the stack's source file PATH (relative to a package root) is at hand: in a code base of the "
        "launch (ROOT/PATH or ROOT/src/PATH) or in the installed distribution (located without "
        "importing); never undecided",
        literal=(0,),
        compile_static=lambda args: _compile_path(args),
    ),
    "stack_source_has": Function(
        (STR, STR),
        (),
        BOOL,
        _f_has,
        "the stack's source file PATH contains a match of REGEX (re.search over its text); unknown when "
        "the file is not at hand",
        literal=(0, 1),
        compile_static=_compile_path_regex,
    ),
    "stack_source_file": Function(
        (STR,),
        (),
        STR,
        _f_file,
        "where the stack's source file PATH was found (for messages); absent when not at hand",
        literal=(0,),
        compile_static=lambda args: _compile_path(args),
    ),
}


# ------------------------------------------------------------------------------------------ Python configs
# xtuner v0.1 (and mmengine-style stacks) take a Python config file: `xtuner train cfg.py --cfg-options k=v`.
# `py_config_value('pack_to_max_length')` is the value of a top-level assignment of that file, read with
# `ast` (never executed): only literals count (True/False/None, numbers, strings); a name assigned from an
# expression, or a file that pulls in base configs (`read_base`, `_base_`) without assigning the name itself,
# is unknown. `--cfg-options NAME=VALUE` words override the file, as mmengine's DictAction does.

MAX_CONFIG_BYTES = 512 * 1024


def _argv_words(ctx: EvalContext) -> list[Any]:
    return list(launch_argv(ctx.launch, ctx.variant) or [])


def _config_arg(ctx: EvalContext) -> tuple[str | None, Any]:
    """(the config word, Unk) of the launch: its first positional argument (`xtuner train CFG`)."""
    for w in _argv_words(ctx):
        if isinstance(w, dict):
            return None, Unk(f"the config argument is unknown ({w.get('unknown', 'unknown word')})", "unknown")
        if w.startswith("-"):
            return None, Unk("the config file is not the first argument", "unknown")
        return w, None
    return None, Unk("the launch names no config file", "absent")


def _resolve_config(ctx: EvalContext, word: str) -> str | None:
    if os.path.isabs(word):
        return word if os.path.isfile(word) else None
    roots = []
    script = ctx.model.get("script")
    if script:
        roots.append(os.path.dirname(os.path.abspath(script)))
    roots += _code_search_roots(ctx)
    roots.append(os.getcwd())
    for r in roots:
        p = os.path.join(r, word)
        if os.path.isfile(p):
            return p
    if not word.endswith(".py"):  # a built-in config name: `xtuner train llama2_7b_qlora_alpaca_e3`
        base = locate_stack_file(ctx, "xtuner/configs/__init__.py")
        if base is not None:
            for dirpath, _dirs, files in os.walk(os.path.dirname(base)):
                if word + ".py" in files:
                    return os.path.join(dirpath, word + ".py")
    return None


def _render_literal(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    return str(value)


def _py_assignments(path: str) -> tuple[dict[str, Any], bool] | None:
    """{name: literal value or Unk} of the file's top-level assignments, and whether it reads base configs."""
    import ast

    text = read_stack_text(path)
    if text is None or len(text) > MAX_CONFIG_BYTES:
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    out: dict[str, Any] = {}
    has_base = "read_base" in text or "_base_" in text
    for node in tree.body:
        targets: list[Any] = []
        value = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        for t in targets:
            if isinstance(t, ast.Name):
                try:
                    out[t.id] = ast.literal_eval(value) if value is not None else None
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    out[t.id] = Unk(f"{t.id} is assigned an expression in the config", "unknown")
    return out, has_base


def _cfg_option(ctx: EvalContext, name: str) -> Any:
    """The value `--cfg-options NAME=VALUE` gives, or None when it does not."""
    words = _argv_words(ctx)
    found = None
    in_opts = False
    for w in words:
        if isinstance(w, dict):
            if in_opts:
                found = Unk(f"--cfg-options holds an unknown word ({w.get('unknown', '')})", "unknown")
            continue
        if w.startswith("--"):
            in_opts = w == "--cfg-options"
            continue
        if in_opts and w.startswith(name + "="):
            found = w.split("=", 1)[1]
    return found


def _f_py_config_value(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    name = node.static
    override = _cfg_option(ctx, name)
    if override is not None:
        return (
            override
            if isinstance(override, Unk)
            else override.strip().lower()
            if override.strip().lower() in ("true", "false")
            else override
        )
    word, unk = _config_arg(ctx)
    if word is None:
        return unk
    path = _resolve_config(ctx, word)
    if path is None:
        return Unk(f"the config {word} is not at hand", "unknown")
    read = _py_assignments(path)
    if read is None:
        return Unk(f"the config {word} could not be read", "unknown")
    values, has_base = read
    if name in values:
        v = values[name]
        return v if isinstance(v, Unk) else _render_literal(v)
    if has_base:
        return Unk(f"{name} may come from the base configs of {word}", "unknown")
    return Unk(f"{word} does not assign {name}", "absent")


def _compile_identifier(args: list[Any]) -> str:
    if not str(args[0]).isidentifier():
        raise NameLookupError(f"py_config_value: {args[0]!r} is not a Python name")
    return args[0]


STACK_SOURCE_FUNCTIONS["py_config_value"] = Function(
    (STR,),
    (),
    STR,
    _f_py_config_value,
    "a top-level literal assignment of the Python config file the launch names first (`xtuner train CFG`; a "
    "built-in config name is looked up under xtuner/configs), read with ast, never executed; "
    "`--cfg-options NAME=VALUE` overrides it; unknown for an expression or a name the base configs may set",
    literal=(0,),
    compile_static=_compile_identifier,
)
