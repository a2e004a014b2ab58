"""Typed accessors over the launch model (packlint.model_types) for the condition functions.

The model is a plain dict at run time; these functions give mypy its declared shape, so a consumer
reads `variant_config(ctx.variant)["settings"]` instead of an unchecked chain of `.get()`. (Types only:
packlint.model_types is imported for type checking, never at run time.) Issue 20's functions read the
`config` block through here; the older functions still read by string key (see the report of i20)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from packlint.model_types import ConfigFileJSON, ConfigJSON, SettingJSON, SizeJSON

SECTIONS = ("main", "deepspeed", "accelerate")


def variant_config(variant: Any) -> ConfigJSON | None:
    """The variant's configuration block, or None (no known stack, no config file)."""
    return cast("ConfigJSON | None", variant.get("config") if variant else None)


def config_settings(cfg: ConfigJSON, section: str = "main") -> dict[str, SettingJSON] | None:
    """A section's settings (`main`: the merged configuration); None when the section was not read."""
    if section == "main":
        return cfg.get("settings") or {}
    return (cfg.get("sections") or {}).get(section)


def section_unknown(cfg: ConfigJSON, section: str) -> str | None:
    """Why keys the section does not hold are unknown (None: absent keys are absent)."""
    if section == "main":
        return cfg.get("incomplete")
    return (cfg.get("unknown_sections") or {}).get(section)


def config_files(cfg: ConfigJSON | None) -> list[ConfigFileJSON]:
    return list(cfg.get("files") or []) if cfg else []


def parallel_size(variant: Any, launch: Any, name: str) -> SizeJSON | None:
    return cast("SizeJSON | None", (variant.get("parallel") or launch.get("parallel") or {}).get(name))
