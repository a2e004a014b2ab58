"""Whether the checkout a launch lives in patches a stack's function at run time (issue 26: a rule that
models upstream's check must not judge code that replaces it).

`tree_patches('TransformerConfig.__post_init__')` is true when a Python file of the script's checkout names
that function as a patch target: a string literal ending in it (MindSpeed's
`patch_manager.register_patch("megatron.core.transformer.transformer_config.TransformerConfig.__post_init__",
...)`, the plugin that runs inside a Megatron-LM checkout and relaxes the divisibility checks under its own
flags), or an assignment to it (`TransformerConfig.__post_init__ = new_post_init`). The text is searched,
never parsed or run; bounded like the env-read search (packlint.codebase.search_budget)."""

from __future__ import annotations

import os
import re
from typing import Any

from packlint.caches import run_memo
from packlint.conditions.tree import BOOL, STR, Builtin, EvalContext, Function, NameLookupError, Unk

# (checkout root, target) -> the answer, for one check run (the tree does not change under it); a Memo, so a
# script answered from it still records the files the search read (the result cache's per-script inputs)
_MEMO: dict[tuple[str, str], bool | None] = run_memo()
_MAX_FILES = 20000


def _target(args: list[Any]) -> str:
    name = args[0]
    if not re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", name or ""):
        raise NameLookupError(f"patch target {name!r} must be a dotted name (Class.method)")
    return name


def _checkout_root(ctx: EvalContext) -> str | None:
    from packlint.codebase.resolve import script_checkout_dirs
    from packlint.configs.elsewhere import checkout_root

    script = ctx.model.get("script")
    return checkout_root(script_checkout_dirs(os.path.abspath(script))) if script else None


def _patched(root: str, target: str) -> bool | None:
    """True/False: a file under `root` names `target` as a patch target or not; None: over the bounds."""
    key = (root, target)
    if key in _MEMO:
        return _MEMO[key]
    from packlint.conditions.functions.codebase_env import python_texts
    from packlint.result_cache import depends_on_tree

    depends_on_tree([root], ".py")
    needle = target.encode()
    pattern = re.compile(
        rb"""['"][\w.]*\b""" + re.escape(needle) + rb"""['"]|\b""" + re.escape(needle) + rb"""\s*=[^=]"""
    )
    found: bool | None = False
    for data in python_texts(root, _MAX_FILES):
        if data is None:
            found = None  # (over the bound: not known)
            break
        if needle in data and pattern.search(data):
            found = True
            break
    _MEMO[key] = found
    return found


def _f_tree_patches(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    root = _checkout_root(ctx)
    if root is None:
        return False  # (no checkout: nothing of the tree patches it)
    found = _patched(root, a[0])
    if found is None:
        return Unk(f"the checkout is too large to tell whether it patches {a[0]}", "unknown")
    return found


PATCH_FUNCTIONS: dict[str, Function] = {
    "tree_patches": Function(
        (STR,),
        (),
        BOOL,
        _f_tree_patches,
        "a Python file of the script's checkout names the function (`Class.method`) as a patch target: a "
        "string literal ending in it (a patch registry) or an assignment to it; read as text, never run",
        literal=(0,),
        compile_static=_target,
    ),
}


# A use of the name outside a comment: `TransformerConfig(`, `from megatron.core... import TransformerConfig`
_CODE_LINE_NAME = r"(?m)^[^#\n]*\b{}\b"
# The packages that build megatron-core's model config for a program that imports them (not found on disk: an
# installed Megatron-LM/megatron-core, or NeMo 2/Megatron-Bridge built on it)
_MEGATRON_IMPORTS = ("megatron", "nemo", "megatron_bridge")


def _closure_names(facts: Any, name: str) -> bool | None:
    """True/False: a file of the program's import closure names `name` outside a comment; None: a file of
    it could not be read."""
    from packlint.codebase.filefacts import MAX_SOURCE_BYTES
    from packlint.safe_io import read_regular

    pattern = re.compile(_CODE_LINE_NAME.format(re.escape(name)).encode())
    needle = name.encode()
    for path in [*facts.files, *(s.file for s in facts.skipped)]:
        data = read_regular(path, MAX_SOURCE_BYTES)
        if data is None:
            return None
        if needle in data and pattern.search(data):
            return True
    return False


def _has_megatron_package(files: list[str]) -> bool:
    """A file of the closure is in a top-level `megatron` package (its parent directory is no package): a
    Megatron-LM fork whose model code checks the split itself (bigscience Megatron-DeepSpeed's mpu.divide asserts on
    heads % TP), unlike a NeMo subpackage named megatron (nemo/collections/nlp/modules/common/megatron/)."""
    for f in files:
        parts = f.replace("\\", "/").split("/")
        if "megatron" not in parts[:-1]:
            continue
        i = len(parts) - 2 - parts[-2::-1].index("megatron")
        if not os.path.isfile("/".join(parts[:i] + ["__init__.py"])):
            return True
    return False


def _f_code_names(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """Whether the launched code may build the named class (megatron-core's TransformerConfig, whose
    __post_init__ makes PK303/PK304's checks): true where the code is not at hand (the rule's upstream
    semantics), imports a Megatron package packlint did not find on disk (an installed Megatron builds it) or is a
    Megatron-LM fork (a top-level megatron package: its own split check);
    false where the program's whole import closure is read and no file of it names the class (a NeMo 1 fork
    whose model code is its own: aws-neuron/neuronx-nemo-megatron's Falcon splits heads with round())."""
    from packlint.conditions.functions.codebase_common import _code

    facts = _code(ctx)
    if facts is None or not facts.known:
        return True
    if any(m in _MEGATRON_IMPORTS for m in facts.unresolved_imports) or _has_megatron_package(facts.files):
        return True
    found = _closure_names(facts, a[0])
    if found is None:
        return Unk(f"a file of the program's code could not be read: it may use {a[0]}", "unknown")
    return found


PATCH_FUNCTIONS["code_names"] = Function(
    (STR,),
    (),
    BOOL,
    _f_code_names,
    "the launched code may use the named class: its import closure names it outside a comment, or imports a "
    "Megatron package not found on disk; true where the code is not at hand",
)


# (program file, mtime_ns, size) -> the line of its bulk replacement of parsed arguments, or 0
_REPLACES_MEMO: dict[tuple[str, int, int], int] = run_memo()


def _bulk_setattr_line(tree: Any) -> int:
    """The line of a `setattr(ns, k, ...)` whose name `k` is the variable of an enclosing `for` loop (`for k, v in
    vars(cp_args).items(): setattr(args, k, v)`), 0 when the file has none."""
    import ast

    for node in ast.walk(tree):
        if not isinstance(node, (ast.For, ast.AsyncFor)):
            continue
        loop_vars = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        for sub in ast.walk(node):
            if (
                isinstance(sub, ast.Call)
                and isinstance(sub.func, ast.Name)
                and sub.func.id == "setattr"
                and len(sub.args) == 3
                and isinstance(sub.args[1], ast.Name)
                and sub.args[1].id in loop_vars
            ):
                return sub.lineno
    return 0


def _replacement_line(path: str) -> int | None:
    """The line where the program file replaces parsed arguments in bulk; 0: it does not; None: not readable."""
    import ast
    import warnings

    from packlint.codebase.filefacts import MAX_SOURCE_BYTES
    from packlint.safe_io import read_regular

    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (path, st.st_mtime_ns, st.st_size)
    if key in _REPLACES_MEMO:
        return _REPLACES_MEMO[key]
    data = read_regular(path, MAX_SOURCE_BYTES)
    if data is None:
        return None
    if b"setattr" not in data:
        line = 0
    else:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                line = _bulk_setattr_line(ast.parse(data))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    _REPLACES_MEMO[key] = line
    return line


def _f_code_replaces_args(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """file:line where the launched program itself sets its parsed arguments from another namespace, by names it
    iterates over (bigscience Megatron-DeepSpeed tasks/eval_harness/evaluate.py override_args: every argument of
    the checkpoint's but a skip list replaces the command line's: `--seq-length -1`, a documented dummy, is never
    used); absent when it does not, or its code is not at hand."""
    from packlint.conditions.functions.codebase_common import _code

    facts = _code(ctx)
    res = getattr(facts, "resolution", None) if facts is not None else None
    file, root = getattr(res, "file", None), getattr(res, "root", None)
    if not file:
        return Unk("the program's code is not at hand", "absent")
    line = _replacement_line(file)
    if line is None:
        return Unk("the program's file could not be read", "unknown")
    if not line:
        return Unk("the program does not replace its parsed arguments in bulk", "absent")
    shown = os.path.relpath(file, root) if root else os.path.basename(file)
    return f"{shown}:{line}"


PATCH_FUNCTIONS["code_replaces_args"] = Function(
    (),
    (),
    STR,
    _f_code_replaces_args,
    "file:line where the launched program's own file sets its parsed arguments by the names a loop iterates over "
    "(`for k, v in vars(ckpt_args).items(): setattr(args, k, v)`): a value the command line gives may be replaced; "
    "absent where it does not or its code is not at hand",
)
