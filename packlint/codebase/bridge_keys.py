"""The keys of Megatron-Bridge's `ConfigContainer` (issue 28), read with `ast` from Bridge's
`training/config.py` and the modules its section classes live in: the sections (`train`, `model`,
`checkpoint`, ...) and, for a section whose class is one of Bridge's own dataclasses (with every base
read), that class's fields. A section typed as a union (`model: GPTModelProvider | T5ModelProvider |
MambaModelProvider`), an `Optional[...]` (set or not by the recipe) or a class with a base outside the
files read (`optimizer: OptimizerConfig(MCoreOptimizerConfig)`) is **open**: its keys are not judged.

Bridge turns the recipe's ConfigContainer into an OmegaConf dict of its dataclass fields
(`dataclasses.fields`, so `init=False` fields too), merges the `--config-file` YAML into it and applies
the Hydra overrides in struct mode (training/utils/omegaconf_utils.py `parse_hydra_overrides`), so the
keys of the dict are the fields. Used by tools/stack_schemas.py for the release snapshots and by the
check for a Bridge vendored in the checkout.
"""

from __future__ import annotations

import ast

# the files of Bridge (paths in the package, from `megatron/bridge/`) that hold ConfigContainer's section classes
FILES = (
    "training/config.py",
    "training/tokenizers/config.py",
    "training/comm_overlap.py",
    "training/mixed_precision.py",
    "training/utils/config_utils.py",
)
_PLAIN = {"object", "ABC", "abc.ABC"}
OPEN = "*"


def _field_names(node: ast.ClassDef) -> list[str]:
    out = []
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if ast.unparse(stmt.annotation).startswith(("ClassVar", "typing.ClassVar", "InitVar")):
                continue
            out.append(stmt.target.id)
    return out


def _classes(files: dict[str, bytes]) -> dict[str, ast.ClassDef]:
    out: dict[str, ast.ClassDef] = {}
    for name in sorted(files):
        if not name.endswith(".py"):
            continue
        try:
            tree = ast.parse(files[name])
        except (SyntaxError, ValueError):
            continue
        aliases = {}
        for node in tree.body:
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if a.asname:
                        aliases[a.asname] = a.name
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name not in out:
                # (a base named through an import alias: `_ConfigContainerBase as Container`)
                node.bases = [ast.Name(aliases.get(ast.unparse(b), ast.unparse(b))) for b in node.bases]
                out[node.name] = node
    return out


def _fields(name: str, classes: dict[str, ast.ClassDef], depth: int = 0) -> list[str] | None:
    """The fields of a dataclass with its bases; None when a base is not among the classes read."""
    node = classes.get(name.split(".")[-1])
    if node is None or depth > 12:
        return None
    out: list[str] = []
    for b in node.bases:
        text = ast.unparse(b)
        if text in _PLAIN or text.startswith(("Generic[", "typing.Generic[")):
            continue
        sub = _fields(text, classes, depth + 1)
        if sub is None:
            return None
        out += sub
    return out + _field_names(node)


def _section_class(ann: ast.expr) -> str | None:
    """The one class a section is typed as, None for a union, an Optional, a subscript or a string."""
    if isinstance(ann, ast.Name):
        return ann.id
    if isinstance(ann, ast.Attribute):
        return ann.attr
    return None


def container_keys(files: dict[str, bytes]) -> dict[str, bool] | None:
    """{'train': True, 'train.micro_batch_size': True, 'model': True, 'model.*': True, ...}: every key
    Bridge's ConfigContainer takes, with `section.*` for a section whose keys are open; None when the
    files have no ConfigContainer."""
    classes = _classes(files)
    root = classes.get("ConfigContainer")
    if root is None:
        return None
    sections: list[tuple[str, ast.expr | None]] = []
    for b in root.bases:  # (the base's own fields are sections too)
        base = classes.get(ast.unparse(b))
        if base is not None:
            sections += [(n, None) for n in _field_names(base)]
    for stmt in root.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            sections.append((stmt.target.id, stmt.annotation))
    out: dict[str, bool] = {}
    for sec, ann in sections:
        out[sec] = True
        cls = _section_class(ann) if ann is not None else None
        fields = _fields(cls, classes) if cls else None
        if fields is None:
            out[f"{sec}.{OPEN}"] = True
        else:
            for f in fields:
                out[f"{sec}.{f}"] = True
    return out
