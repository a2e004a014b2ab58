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
