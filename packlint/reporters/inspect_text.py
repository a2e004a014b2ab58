"""Human view of the launch model (`packlint inspect`): each launch, its env and flags, with file:line."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TextIO

from packlint.model_view import as_model, config_files, config_stack, diagnostics, launches

if TYPE_CHECKING:
    from packlint.model_types import ConfigJSON, SettingJSON, SizeJSON


def _c(text: str, code: str, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color else text


def _where(entry: Mapping[str, Any]) -> str:
    if entry.get("file") is None:
        return ""
    return f"{entry['file']}:{entry['line']}"


def _value(entry: Mapping[str, Any]) -> str:
    if "values" in entry:
        parts = []
        for alt in entry["alternatives"]:
            v = _value(alt)
            when = "; ".join(alt.get("when", [])) or "otherwise"
            parts.append(f"{v!s} [{when}]")
        return "one of: " + " | ".join(parts)
    if "items" in entry:
        return "(" + " ".join(i if isinstance(i, str) else "<unknown>" for i in entry["items"]) + ")"
    if "unknown" in entry:
        return f"<unknown: {entry['unknown']}>"
    value = entry.get("value")
    if value is True:
        return "(set)"
    if isinstance(value, list):
        return " ".join(value)
    return "<unset>" if value is None else repr(value) if value == "" else str(value)


def render(doc: Mapping[str, Any], out: TextIO, color: bool = False) -> None:
    model = as_model(doc)
    w = out.write
    w(_c(f"{model['script']}", "1", color))
    if model.get("args"):
        w(f"  (arguments: {' '.join(model['args'])})")
    w(f"\n{len(model['launches'])} launch(es)\n")
    for launch in launches(model):
        chain = " > ".join(launch["launchers"]) or "?"
        prog = launch.get("program") or "/".join(launch.get("programs", [])) or "<unknown program>"
        w(
            "\n"
            + _c(f"launch #{launch['id']}: {chain} -> {prog}", "1;36", color)
            + f"  ({launch['file']}:{launch['line']})\n"
        )
        for ctx in launch.get("context", []):
            w(f"  via {ctx}\n")
        code = launch.get("code")
        if code:
            if code.get("file"):
                w(f"  code: {code['file']}  {_c('(' + code['detail'] + ')', '2', color)}\n")
            else:
                w(f"  code: not found  {_c('(' + code['detail'] + ')', '2', color)}\n")
        if launch["when"]:
            w(f"  only when: {'; '.join(launch['when'])}\n")
        if len(launch["variants"]) > 1:
            w(f"  {len(launch['variants'])} variants (undecidable branches)\n")
        ws = launch.get("world_size")
        if ws:
            w(f"  world size: {_value(ws)}\n")
        par = launch.get("parallel") or {}
        if par:
            w(f"  parallel: {_sizes(par)}\n")
        sections = (("environment", launch["env"]), ("set but NOT exported", launch["unexported"]))
        for title, entries in sections:
            if not entries:
                continue
            w(_c(f"  {title}:\n", "1", color))
            width = max(len(k) for k in entries)
            for name, entry in entries.items():
                src = entry.get("source", "")
                tag = f" [{src}]" if src and src != "script" else ""
                value = f"{_value(entry)}{tag}{_evidence(entry)}"
                w(f"    {name.ljust(width)} = {value}  {_c(_where(entry), '2', color)}\n")
        if launch["exported_after"]:
            w(_c("  exported only after this launch:\n", "1", color))
            for name, loc in launch["exported_after"].items():
                w(f"    {name}  {_c(_where(loc), '2', color)}\n")
        for title, flags in (("launcher options", launch["launcher_flags"]), ("program flags", launch["flags"])):
            if not flags:
                continue
            w(_c(f"  {title}:\n", "1", color))
            width = max(len(k) for k in flags)
            for name, occs in flags.items():
                for occ in occs:
                    w(f"    {name.ljust(width)} {_value(occ)}{_evidence(occ)}  {_c(_where(occ), '2', color)}\n")
        config = launch.get("config")
        if config is None and any(v.get("config") for v in launch["variants"]):
            w("  configuration: differs between variants (see --format json)\n")
        elif config:
            _render_config(config, w, color)
    if model["diagnostics"]:
        w("\n" + _c("diagnostics:\n", "1", color))
        for d in diagnostics(model):
            where = f"{d['file']}:{d['line']}:{d['column']}: " if d.get("file") else ""
            w(f"  {where}{d['severity']}: {d['message']} [{d['code']}]{_evidence(d)}\n")


def _evidence(entry: Mapping[str, Any]) -> str:
    """` [assumed: the script run without arguments, so $2 is unset]`: how a value is known when not
    from the checkout alone (packlint.evidence); '' for a value read from the checkout."""
    ev = entry.get("evidence")
    if not isinstance(ev, Mapping):
        return ""
    return f" [{ev.get('kind')}: {ev.get('because')}]"


def _size(entry: SizeJSON | None) -> str:
    if entry is None:
        return "?"
    if "values" in entry:
        return "|".join("?" if v is None else str(v) for v in entry["values"])
    if "range" in entry:
        return f"{entry['range'][0]}..{entry['range'][1]}"
    if "unknown" in entry:
        return "?"
    v = entry.get("value")
    return "-" if v is None else str(v)


def _sizes(par: Mapping[str, SizeJSON | None]) -> str:
    """`nodes 2 x 8 per node = world 16; TP 2 PP 1 CP 1 EP 1 VPP - -> DP 8` (`?`: unknown)."""
    return (
        f"nodes {_size(par.get('nodes'))} x {_size(par.get('procs_per_node'))} per node = world "
        f"{_size(par.get('world'))}; TP {_size(par.get('tp'))} PP {_size(par.get('pp'))} "
        f"CP {_size(par.get('cp'))} EP {_size(par.get('ep'))} VPP {_size(par.get('vpp'))} "
        f"-> DP {_size(par.get('dp'))}"
    )


def _setting_text(entry: SettingJSON) -> str:
    if "unknown" in entry:
        return f"<unknown: {entry['unknown']}>"
    from packlint.configs import render

    return render(entry.get("value"))


def _render_config(config: ConfigJSON, w: Callable[[str], Any], color: bool) -> None:
    """The launch's configuration (issue 20): stack and version, the files read, every merged setting
    with the file:line that set it."""
    stack = config_stack(config) or "unknown stack"
    ver = config.get("stack_version") or {}
    version = f" {ver['value']} ({ver.get('source', '')})" if "value" in ver else " (version unknown)"
    w(_c(f"  configuration: {stack}{version if config.get('stack') else ''}\n", "1", color))
    for f in config_files(config):
        where = _where(f.get("named_at") or {})
        state = (
            "not found"
            if f.get("missing")
            else f"unreadable: {f['error']}"
            if f.get("error")
            else f"<unknown: {f['unknown']}>"
            if f.get("unknown")
            else f.get("file", "")
        )
        w(f"    {f.get('role', 'main')} file: {f.get('path', '?')} -> {state}  {_c(where, '2', color)}\n")
    if config.get("incomplete"):
        w(f"    incomplete: {config['incomplete']}\n")
    blocks = [("", config.get("settings") or {})] + [
        (f"{name}:", sec) for name, sec in (config.get("sections") or {}).items()
    ]
    for prefix, settings in blocks:
        if not settings:
            continue
        width = max(len(prefix + k) for k in settings)
        for key, entry in settings.items():
            w(f"    {(prefix + key).ljust(width)} = {_setting_text(entry)}  {_c(_where(entry), '2', color)}\n")
