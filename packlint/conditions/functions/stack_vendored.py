"""The stack's own code in the checkout (issue 26, "versions from the tree"): where a vendored LLaMA-Factory, TRL,
axolotl or ms-swift is (beside the script, the launched program or the launch's working directory, else the one
sub-project holding it), its argument dataclasses, the classes its parser lists, and the names its code quotes. The
keys a launch gives are judged by them (stack_config_keys) instead of the release snapshots."""

from __future__ import annotations

import os
from typing import Any

from packlint.caches import memo
from packlint.regex import LazyRegex

_ARG_FILES = {
    "axolotl": ("utils/schemas/*.py", "utils/config/models/input/*/*.py"),
    "llamafactory": ("hparams/*.py",),
    "trl": ("trainer/*config*.py", "scripts/*.py"),
    "swift": (
        "llm/utils/argument.py",
        "llm/argument/*.py",
        "llm/argument/base_args/*.py",
        "arguments/*.py",
        "arguments/base_args/*.py",
        "trainers/arguments.py",
        "rlhf_trainers/arguments.py",
        "rlhf_trainers/*mixin*.py",
        "trainers/*mixin*.py",
        "ray_utils/arguments.py",
        "ray/arguments.py",
    ),
}
_LOCAL: dict[tuple[str, str | None, str | None], dict[str, Any]] = memo()


def _vendored_classes(stack: str, script_dir: str | None, workdir: str | None = None) -> dict[str, Any]:
    """The argument dataclasses of the stack's code in the checkout (a vendored LLaMA-Factory or TRL):
    the keys it takes are its own, whatever release the snapshots know. Empty when not vendored."""
    key = (stack, script_dir, workdir)
    if key not in _LOCAL:
        import glob

        from packlint.codebase.hf_fields import read_classes
        from packlint.configs.versions import _read_small

        files: dict[str, bytes] = {}
        for d in _package_dirs(stack, script_dir, workdir):
            if files:
                break
            for pattern in _ARG_FILES.get(stack, ()):
                for path in sorted(glob.glob(os.path.join(glob.escape(d), pattern)))[:200]:
                    text = _read_small(path)
                    if text is not None:
                        files[os.path.relpath(path, d)] = text.encode("utf-8")
        _LOCAL[key] = read_classes(files) if files else {}
    return _LOCAL[key]


class _Open(Exception):
    """A base class of the vendored stack's arguments that packlint did not read."""


def _local_fields(name: str, local: dict[str, Any], stack: str, depth: int) -> dict[str, list[Any]] | None:
    """field -> rows of a class of the vendored code, its bases through the vendored classes, then the
    snapshots (transformers' Seq2SeqTrainingArguments): rows of the checkout's code have no stack."""
    from packlint.codebase import stack_schemas

    cls = local.get(name)
    if depth > 12:
        raise _Open(name)
    if cls is None:
        if depth == 0:  # a root class the vendored code lacks (elided, or of another major release): the snapshots
            return stack_schemas.class_fields(name, (stack, "transformers"))
        # a base outside the vendored stack: transformers' (from the snapshots); never another release of
        # the vendored stack, whose fields would count as removed from this one
        found = stack_schemas.class_fields(name, ("transformers",))
        if found is None:
            raise _Open(name)
        return found
    out: dict[str, list[Any]] = {}
    for b in cls.get("bases", []):
        # a base named as the class is the package's class it wraps (ms-swift's Seq2SeqTrainingArguments)
        own = b == name
        sub = stack_schemas.class_fields(b, ("transformers",)) if own else _local_fields(b, local, stack, depth + 1)
        if sub is None:
            raise _Open(b)
        for f, rows in sub.items():
            out.setdefault(f, []).extend(rows)
    for f, (typ, choices, marks) in cls.get("fields", {}).items():
        out.setdefault(f, []).append((None, typ, choices, marks, 0))
    return out


_ARG_LISTS = LazyRegex(r"(?m)^_(?:TRAIN|INFER|EVAL)_ARGS\s*=\s*[\[(]([^\])]*)[\])]")


def _listed_roots(package: str | None) -> tuple[str, ...] | None:
    """The argument classes a vendored LLaMA-Factory's hparams/parser.py parses with (`_TRAIN_ARGS = [ModelArguments,
    MoEArguments, ...]`: 12345ljx/HeterExpert's fork adds its MoEArguments), () when it has no such list, None when a
    list holds something other than class names (built at run time: not read)."""
    from packlint.configs.versions import _read_small

    text = _read_small(os.path.join(package, "hparams", "parser.py")) if package else None
    out: list[str] = []
    for m in _ARG_LISTS.finditer(text or ""):
        names = [n.strip() for n in m.group(1).replace("\n", " ").split(",") if n.strip()]
        if not all(n.isidentifier() for n in names):
            return None
        out += [n for n in names if n not in out]
    return tuple(out)


def _vendored_dir(stack: str, script_dir: str | None, workdir: str | None = None) -> str | None:
    """The stack's package directory in the checkout (`src/axolotl`), or None when it is not vendored (a
    folder of configs named after the stack, `ft/config/axolotl/`, is no package: no Python file in it or in
    its subfolders, `monkeypatch/x.py`)."""
    from packlint.conditions.functions.stack_config_workdir import holds_python

    return next((d for d in _package_dirs(stack, script_dir, workdir) if holds_python(d)), None)


def _package_dirs(stack: str, script_dir: str | None, workdir: str | None) -> list[str]:
    """The stack's package directories in the checkout: beside the script or the launch's working directory and up
    to the checkout's root, else in the one sub-project of the checkout that holds it (dgme-syz/global_attention's
    LLaMA-Factory/src/llamafactory, `cd LLaMA-Factory && pip install -e .` in its README, launched with
    `llamafactory-cli` from scripts/: the copy that runs; as configs.versions.version_in_code reads its version)."""
    from packlint.configs.versions import PACKAGE_DIRS, _roots

    roots = _roots(script_dir, workdir)
    out = [d for root in roots for pkg in PACKAGE_DIRS.get(stack, ()) if os.path.isdir(d := os.path.join(root, pkg))]
    if out or not roots or not os.path.exists(os.path.join(roots[-1], ".git")):
        return out
    from packlint.codebase.subprojects import subprojects_holding

    top = PACKAGE_DIRS.get(stack, ("",))[-1]  # (a top-level package's own name: llamafactory)
    subs = subprojects_holding(roots[-1], top) if top and "/" not in top else []
    return [os.path.join(subs[0], top)] if len(subs) == 1 else []


def _vendored_quoted(stack: str, script_dir: str | None, workdir: str | None = None) -> frozenset[str]:
    """The names the stack's own code in the checkout quotes (LLaMA-Factory reads `kt_config` from the
    training arguments an installed extension adds): such a key is not judged."""
    from packlint.conditions.functions.codebase_env import _quoted_names

    found = _package_dirs(stack, script_dir, workdir)
    return _quoted_names(found[0]) if found else frozenset()
