"""Who reads a configuration file whose keys look like a stack's: the stack, or the checkout's own code.

A YAML of axolotl's shape given to the checkout's own trainer (PrasannS/corpus-reasoning: `train_chunked_fast.py
cfg.yml`, `yaml.safe_load` then `cfg.get("query_position")`) is that trainer's file: the stack's rule on its keys
("axolotl ignores it") has no subject. Read from the launched program's import closure, and, for a file checked on
its own, from the keys the checkout's Python code reads by name."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from packlint.caches import memo
from packlint.model_view import variant_config

if TYPE_CHECKING:
    from packlint.conditions.tree import EvalContext

# the packages a stack's own reader of a config file lives in (its import names)
_STACK_PACKAGES = {
    "axolotl": ("axolotl",),
    "llamafactory": ("llamafactory", "llmtuner"),
    "trl": ("trl",),
    "swift": ("swift",),
    "megatron-swift": ("swift",),
    "openrlhf": ("openrlhf",),
    "xtuner": ("xtuner",),
}


def never_imports_stack(facts: Any, stack: str) -> bool:
    """The launched program is read whole and nothing it imports is the stack's package: the file is that
    program's, and the stack's rules on its keys have no subject."""
    tops = _STACK_PACKAGES.get(stack)
    if not tops or facts is None or not getattr(facts, "known", False) or getattr(facts, "skipped", None):
        return False
    imported = {str(m).split(".", 1)[0] for m in getattr(facts, "unresolved_imports", None) or ()}
    read = {part for f in getattr(facts, "files", None) or () for part in str(f).replace(os.sep, "/").split("/")}
    return not any(t in imported or t in read for t in tops)


def program_keys(ctx: EvalContext, found: dict[str, str]) -> dict[str, str]:
    """A file whose keys only looked like the stack's (config `recognised_by: keys`), read by the program's own
    HfArgumentParser (G2S-TKG-forecasting: `parse_yaml_file` over classes extending LLaMA-Factory's): only the
    keys the program's own dataclasses lack stand; none when those are not all read."""
    cfg: Any = variant_config(ctx.variant) or {}
    if not found or cfg.get("recognised_by") != "keys":
        return found
    from packlint.codebase.argparse_reader import file_keys
    from packlint.conditions.functions.codebase_common import _code

    facts = _code(ctx)
    schema = getattr(facts, "schema", None)
    parses, keys = file_keys(schema)
    if (not parses or schema is None) and never_imports_stack(facts, str(cfg.get("stack") or "")):
        return {}  # the program's own code reads the file: the stack whose shape it has never does
    if not parses or schema is None:
        return found
    return {
        k: f"{k} is not a field of the dataclasses the program's own HfArgumentParser ({schema.parser_origin}) "
        "reads this file with: it raises 'Some keys are not used by the HfArgumentParser' as the job starts"
        for k in found
        if keys is not None and k not in keys
    }


# `cfg.get("key"`, `cfg["key"]`, `config.get('key'`: a key read by name
_READ = re.compile(rb"""(?:\.get\(\s*|\[\s*)["']([A-Za-z_][\w]*)["']""")
_MAX_FILES, _MAX_BYTES = 4000, 256 << 10
_READS: dict[str, frozenset[str]] = memo()


def without_own_reads(config: str, found: dict[str, str]) -> dict[str, str]:
    """For a file checked on its own (the stand-in launch guesses the stack from its keys): the keys the
    checkout's own Python code reads by name are dropped, since a program of the checkout may be the file's
    reader (corpus-reasoning's generated configs, launched through `$CONFIG`, read by its own trainer)."""
    from packlint.codebase.resolve import checkout_root

    root = checkout_root(os.path.dirname(os.path.abspath(config)))[0]
    if root is None:
        return found
    reads = _READS.get(root)
    if reads is None:
        reads = _READS[root] = _own_reads(root)
    return {k: v for k, v in found.items() if k.split(".", 1)[0] not in reads}


def _own_reads(root: str) -> frozenset[str]:
    """The keys the checkout's Python files read by name (bounded: the first 4,000 files of the checkout's listing,
    256 KiB each; vendored copies of the stacks left out)."""
    from packlint.configs.elsewhere import listed
    from packlint.safe_io import read_regular

    vendored = {t for tops in _STACK_PACKAGES.values() for t in tops}
    files = [r for r in listed(root) if r.endswith(".py") and not vendored & set(r.split("/")[:-1])]
    out: set[str] = set()
    for rel in files[:_MAX_FILES]:
        data = read_regular(os.path.join(root, rel), _MAX_BYTES)
        if data:
            out.update(m.group(1).decode("ascii") for m in _READ.finditer(data))
    return frozenset(out)
