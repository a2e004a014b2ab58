"""Megatron-Bridge's configuration keys (issue 28, PK207): the Hydra overrides (`train.micro_batch_size=4`)
and the `--config-file` YAML keys of a Bridge launch, against the keys of its `ConfigContainer`
(packlint.codebase.bridge_keys: the checkout's own Bridge when vendored, else the release snapshots).

Bridge (training/utils/omegaconf_utils.py `process_config_with_overrides`) merges the YAML into the
recipe's config as a plain OmegaConf dict, then applies the overrides with `OmegaConf.set_struct(cfg,
True)`: an override of a key the config lacks raises `OverridesError` (`+key=value` adds one), so it
stops the job at start. A YAML key the config lacks is merged in, then skipped by `_apply_overrides`
with a logged warning ("Key ... not found in config object ... Skipping"): the run trains without it.
A section whose keys are open (a union of model providers, an Optional section, a class deriving from
Megatron-Core's) is not judged below its name.
"""

from __future__ import annotations

import difflib
import os
from typing import Any

from packlint.caches import memo
from packlint.conditions.tree import EvalContext

_STOPS = (
    ": Bridge applies overrides to a struct config, so Hydra's parser raises OverridesError ('Could not override') "
    "as the job starts; `+key=value` adds a new key"
)
_IGNORED = (
    ": Bridge merges the YAML into the config, then skips a key its ConfigContainer lacks with a logged "
    "warning ('not found in config object'), so the run trains as if the key were not there"
)
_VENDORED: dict[str | None, dict[str, bool] | None] = memo()


def bridge_problems(ctx: EvalContext, cfg: Any, script_dir: str | None) -> tuple[dict[str, str], set[str], bool]:
    """({key: why}, the keys Bridge ignores, whether the verdict assumes the release)."""
    found = _keys(ctx, script_dir)
    if found is None:
        return {}, set(), False
    keys, what, assumed, others = found
    settings = cfg.get("settings") or {}
    if not _is_bridge_launch(ctx, settings, keys):
        return {}, set(), False
    out: dict[str, str] = {}
    ignored: set[str] = set()
    flags = ctx.variant.get("flags") or {}
    in_file: set[str] | None = None
    for name in flags:
        if name.startswith(("+", "~", "-", "hydra.")) or "." not in name or "/" in name or "@" in name:
            continue
        why = _judge(name, keys, what, others)
        if why is None or name not in settings:
            continue
        if in_file is None:  # (read only for an override the schema lacks)
            in_file = _yaml_keys(cfg)
        if in_file is None:
            continue  # the YAML could not be read: it may add the key
        parts = name.split(".")
        if any(".".join(parts[: i + 1]) in in_file for i in range(1, len(parts))):
            out[name] = why + _IGNORED  # the YAML added the key, the override sets it: Bridge skips it
            ignored.add(name)
        elif parts[0] not in in_file or parts[0] in keys:
            out[name] = why + _STOPS
    for name, s in settings.items():
        if s.get("source") != "file" or "unknown" in s or name in out:
            continue
        why = _judge(name, keys, what, others)
        if why is not None:
            out[name] = why + _IGNORED
            ignored.add(name)
    return out, ignored, assumed


def _is_bridge_launch(ctx: EvalContext, settings: dict[str, Any], keys: dict[str, bool]) -> bool:
    """Whether the launch is Megatron-Bridge's: its recipe runner, or a `--config-file` YAML whose top-level
    sections are mostly ConfigContainer's (at least two, and at least half). Other programs take `--config-file` too
    (detectron2's train_net.py, with `MODEL`/`SOLVER` sections): their keys are not Bridge's to judge."""
    from packlint.model_view import program

    prog = (program(ctx.launch, ctx.variant) or "").replace("\\", "/")
    if prog.endswith("scripts/training/run_recipe.py"):
        return True
    sections = {k.split(".", 1)[0] for k in keys}
    tops = {k.split(".", 1)[0] for k, s in settings.items() if isinstance(s, dict) and s.get("source") == "file"}
    shared = len(tops & sections)
    # every one of the YAML's sections is ConfigContainer's (or a misspelling of one): nanotron's `run_train.py
    # --config-file` YAML has `model`, `optimizer`, `tokenizer` among eleven sections of its own (`data_stages`...), and
    # ByteDance-Seed/VeOmni's own trainer `model`, `train` and `data` (Bridge's is `dataset`)
    return shared >= 2 and all(_near_section(t, sections) for t in tops - sections)


def _near_section(name: str, sections: set[str]) -> bool:
    """A section name close to one of ConfigContainer's (`chekpoint`): a misspelling, which Bridge skips (PK207's
    finding), not a section of another program's file (`data`, where Bridge has `dataset`)."""
    import difflib

    return bool(difflib.get_close_matches(name, sorted(sections), n=1, cutoff=0.8))


def _yaml_keys(cfg: Any) -> set[str] | None:
    """Every dotted key (and prefix) of the launch's `--config-file` YAML; None when it cannot be read."""
    main = next((f for f in cfg.get("files") or [] if f.get("role") == "main"), None)
    if main is None:
        return set()
    path = main.get("file")
    if main.get("unknown") or not isinstance(path, str):
        return None
    from packlint.configs import read_config_file

    root, err = read_config_file(path, "yaml", "omegaconf", near=path)
    if err is not None or root is None:
        return None
    out: set[str] = set()

    def walk(d: Any, prefix: str) -> None:
        if isinstance(d, dict):
            for k, v in d.items():
                out.add(prefix + str(k))
                walk(v, f"{prefix}{k}.")

    walk(root.plain(), "")
    return out


def _judge(name: str, keys: dict[str, bool], what: str, others: dict[str, int]) -> str | None:
    parts = name.split(".")
    top = parts[0]
    for k in (top, ".".join(parts[:2])):
        if k not in keys and k in others:  # a key of other releases than the one the checkout runs
            from packlint.codebase import stack_schemas

            return f"{k} is only in {stack_schemas.range_text('megatron-bridge', others[k])}, not in {what}"
    if top not in keys:
        sections = sorted(k for k in keys if "." not in k)
        close = difflib.get_close_matches(top, sections, n=1, cutoff=0.8)
        mean = f" (did you mean {close[0]}?)" if close else ""
        return f"{top} is not a section of {what}{mean}"
    if len(parts) < 2 or f"{top}.*" in keys or ".".join(parts[:2]) in keys:
        return None
    key = ".".join(parts[:2])
    close = difflib.get_close_matches(key, [k for k in keys if k.startswith(top + ".")], n=1, cutoff=0.8)
    mean = f" (did you mean {close[0]}?)" if close else ""
    return f"{key} is not a key of {what}{mean}"


def _keys(ctx: EvalContext, script_dir: str | None) -> tuple[dict[str, bool], str, bool, dict[str, int]] | None:
    """(keys, what they are, assumed, {key: release mask} of the snapshots when a release is applied)
    from the checkout's own Bridge, else the release snapshots."""
    own = _vendored(script_dir)
    if own is not None:
        return own, "the checkout's Megatron-Bridge ConfigContainer", False, {}
    from packlint.codebase import stack_schemas
    from packlint.configs.versions import tree_version

    d = stack_schemas.data() or {}
    snap = (d.get("stacks", {}).get("megatron-bridge") or {}).get("keys")
    if not isinstance(snap, dict) or not snap:
        return None
    rels = stack_schemas.releases("megatron-bridge")
    tv = tree_version("megatron-bridge", "megatron-bridge", script_dir)
    want = stack_schemas.release_mask("megatron-bridge", tv.get("value")) if tv.get("value") else None
    if want:
        keys = {k: True for k, m in snap.items() if m & want}
        return keys, f"Megatron-Bridge {tv['value']}'s ConfigContainer ({tv.get('source')})", False, snap
    what = f"Megatron-Bridge's ConfigContainer in any release packlint has a snapshot of ({rels[0]} to {rels[-1]})"
    return {k: True for k in snap}, what, True, {}


def _vendored(script_dir: str | None) -> dict[str, bool] | None:
    """The ConfigContainer keys of a Megatron-Bridge in the checkout (src/megatron/bridge), or None."""
    if script_dir not in _VENDORED:
        from packlint.codebase.bridge_keys import FILES, container_keys
        from packlint.configs.versions import _read_small, _roots

        keys = None
        for root in _roots(script_dir):
            d = os.path.join(root, "src", "megatron", "bridge")
            if not os.path.isfile(os.path.join(d, "training", "config.py")):
                continue
            files = {}
            for f in FILES:
                text = _read_small(os.path.join(d, f))
                if text is not None:
                    files[f] = text.encode("utf-8")
            keys = container_keys(files)
            break
        _VENDORED[script_dir] = keys
    return _VENDORED[script_dir]


def _prefixes(key: str) -> list[str]:
    parts = key.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]
