"""Typed accessors over the launch model (its shape: packlint.model_types), for every consumer: the
engine and the condition functions, the reporters, the editor server and the runtime probe.

The model is a plain dict at run time (`packlint inspect --format json`); these functions give mypy
its declared shape, so `flag_occurrences(variant, "flags", name)` is checked end to end where an
unchecked chain of `.get()` was not. They are plain functions over the dict as it is: no copy, no
validation, nothing imported at run time but `typing` (the probe and the hot path both read through
here). A single read of a declared key (`variant.get("env", {})` on a `VariantJSON`) is typed by
mypy directly; the accessors cover the reads that take more than one step, and the places where a
dict from outside (a `to_json()`, a cache, a JSON file) enters as the declared shape (`as_model`).

Which accessor reads what: docs/launch-model.md#reading-the-model-in-code."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from collections.abc import Mapping

    from packlint.model_types import (
        ConfigFileJSON,
        ConfigJSON,
        DiagnosticJSON,
        EnvEntryJSON,
        FlagEntryJSON,
        LaunchJSON,
        LocationJSON,
        ScriptModelJSON,
        SettingJSON,
        SizeJSON,
        ValueJSON,
        VariantJSON,
    )

SECTIONS = ("main", "deepspeed", "accelerate")

# ---------------------------------------------------------------------------------------------- entry points


def as_model(doc: Mapping[str, Any]) -> ScriptModelJSON:
    """A launch model from outside the type system (`ScriptModel.to_json()`, a cache, `json.load`)."""
    return cast("ScriptModelJSON", doc)


def as_diagnostic(doc: Mapping[str, Any]) -> DiagnosticJSON:
    return cast("DiagnosticJSON", doc)


# ---------------------------------------------------------------------------------------------- launches


def launches(model: ScriptModelJSON) -> list[LaunchJSON]:
    return model.get("launches", [])


def diagnostics(model: ScriptModelJSON) -> list[DiagnosticJSON]:
    return model.get("diagnostics", [])


def variants(launch: LaunchJSON) -> list[VariantJSON]:
    """The launch's variants; a launch without any stands for its only variant (it has every key a
    variant has, merged)."""
    return launch.get("variants") or [cast("VariantJSON", launch)]


def program(launch: LaunchJSON, variant: VariantJSON) -> str | None:
    """The program a variant runs: the variant's own where it stands for a launch without variants
    (or a hand-built model gives one), else the launch's."""
    return cast("Mapping[str, Any]", variant).get("program") or launch.get("program")


def launchers(launch: LaunchJSON, variant: VariantJSON) -> list[str]:
    return cast("Mapping[str, Any]", variant).get("launchers") or launch.get("launchers") or []


def launch_argv(launch: LaunchJSON, variant: VariantJSON) -> list[str | dict[str, str]] | None:
    """The program's arguments in the variant (the launch's merged ones when the variant has none);
    None only when neither has them. An unknown word is `{"unknown": reason}`."""
    found = cast("Mapping[str, Any]", variant).get("argv")  # (absent from a script rule's empty variant)
    if found is None:
        found = launch.get("argv")
    return cast("list[str | dict[str, str]] | None", found)


def world_size(launch: LaunchJSON, variant: VariantJSON) -> ValueJSON | None:
    return variant.get("world_size") or launch.get("world_size")


def parallel_sizes(launch: LaunchJSON, variant: VariantJSON) -> Mapping[str, SizeJSON | None]:
    """`parallel` of the variant, else of the launch (`{}` when neither has one)."""
    return variant.get("parallel") or launch.get("parallel") or {}


def parallel_size(variant: VariantJSON, launch: LaunchJSON, name: str) -> SizeJSON | None:
    return parallel_sizes(launch, variant).get(name)


# ---------------------------------------------------------------------------------------------- entries


def env_entry(variant: VariantJSON, name: str) -> EnvEntryJSON | None:
    """What the launched process inherits for a variable (None: not in its environment)."""
    return variant.get("env", {}).get(name)


def shell_entry(variant: VariantJSON, name: str) -> EnvEntryJSON | None:
    """A shell variable at the launch: the unexported one, else the exported one."""
    return variant.get("unexported", {}).get(name) or variant.get("env", {}).get(name)


def flag_occurrences(variant: VariantJSON, key: str, name: str) -> list[FlagEntryJSON]:
    """Every occurrence of a program flag (`key` = "flags") or a launcher option ("launcher_flags"),
    in order (`[]`: not given)."""
    table = variant.get("flags", {}) if key == "flags" else variant.get("launcher_flags", {})
    return table.get(name, [])


def entry_location(entry: Mapping[str, Any] | None) -> LocationJSON | None:
    """The LOCATION an entry (ENV_ENTRY, FLAG_ENTRY, SETTING, a size, a diagnostic) carries, or None."""
    if not entry or entry.get("line") is None or entry.get("file") is None:
        return None
    return cast("LocationJSON", {k: entry.get(k) for k in ("file", "line", "column", "end_line", "end_column")})


# ---------------------------------------------------------------------------------------------- config


def variant_config(variant: VariantJSON | None) -> ConfigJSON | None:
    """The variant's configuration block, or None (no known stack, no config file)."""
    return variant.get("config") if variant else None


def launch_config(launch: LaunchJSON) -> ConfigJSON | None:
    """The launch's configuration: its own (the variants agree), else the first variant's."""
    return launch.get("config") or next(
        (v.get("config") for v in launch.get("variants") or [] if v.get("config")), None
    )


def config_stack(cfg: ConfigJSON | None) -> str | None:
    """The stack a configuration block names (None: no block, or no known stack)."""
    return cfg.get("stack") if cfg else None


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
