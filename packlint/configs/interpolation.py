"""OmegaConf interpolation (`${a.b}`) over a merged configuration's settings, with a budget.

A setting whose value is `${a.b}` takes the referenced setting's value where it is known; `${oc.env:X}`,
relative references (`${.x}`) and unresolvable references make the setting unknown; resolvers never run.
Text with references (`run_${name}_${lr}`) is substituted as OmegaConf renders it.

Bounded by construction (audit R06: ten references per level, eight levels: 583 bytes took 1.1 GB): the
size of each substituted value is predicted before it is built, and one merge may produce at most
MAX_TOTAL_CHARS of substituted text. A value over MAX_VALUE_CHARS, or past the total, is unknown with the
reason, and so is every setting that refers to it (an unknown makes unknown only what it touches).
References resolve in at most MAX_ROUNDS rounds (a chain longer than that is unknown)."""

from __future__ import annotations

from packlint.regex import LazyRegex

_INTERP = LazyRegex(r"\$\{([^${}]*)\}")

MAX_VALUE_CHARS = 1 << 16  # one interpolated value (a path, a run name: a few hundred characters)
MAX_TOTAL_CHARS = 1 << 22  # all the text substituted in one configuration
MAX_ROUNDS = 4  # chains `${a}` -> `${b}`: a few rounds


def _unknown(s: dict, why: str) -> dict:
    return {**{k: x for k, x in s.items() if k != "value"}, "unknown": why}


def _short(v: str) -> str:
    return v if len(v) <= 120 else v[:117] + "..."


def _pending(target: dict | None) -> bool:
    """The referenced setting has no final value yet (another interpolation, or none)."""
    return target is None or "value" not in target or (isinstance(target["value"], str) and "${" in target["value"])


def _target(settings: dict, ref: str) -> dict | None:
    return settings.get(ref) if ":" not in ref and not ref.startswith(".") else None


def _resolve_one(settings: dict, key: str, s: dict, v: str, budget: list[int]) -> bool:
    """Resolve the setting `key` (value `v`, with references) one step; True when it changed."""
    from packlint.configs import render

    m = _INTERP.fullmatch(v)
    if m is not None:  # `${a.b}`: the value itself (no text is built)
        target = _target(settings, m.group(1))
        if target is not None and not _pending(target):
            settings[key] = {**s, "value": target["value"], "interpolation": v}
            return True
        if target is None or "unknown" in target:
            settings[key] = _unknown(s, f"the interpolation {_short(v)} cannot be resolved")
            return True
        return False
    refs = _INTERP.findall(v)
    targets = [_target(settings, ref) for ref in refs]
    if any(_pending(t) for t in targets):
        if all(":" in r or r.startswith(".") or r in settings for r in refs):
            if any(t is not None and "unknown" in t and "packlint's limit" in t["unknown"] for t in targets):
                settings[key] = _unknown(s, f"the interpolation {_short(v)} uses a value over packlint's limit")
                return True
            return False  # waits for another round
        settings[key] = _unknown(s, f"the interpolation {_short(v)} cannot be resolved")
        return True
    size = len(v)
    rendered: list[str] = []
    for t in targets:  # predicted while rendering, before the text is joined
        assert t is not None
        text = render(t["value"])
        size += len(text)
        if size > MAX_VALUE_CHARS or size > budget[0]:
            settings[key] = _unknown(
                s,
                f"the interpolation {_short(v)} expands past packlint's limit "
                f"({MAX_VALUE_CHARS:,} characters a value, {MAX_TOTAL_CHARS:,} a configuration)",
            )
            budget[0] = max(0, budget[0] - size)
            return True
        rendered.append(text)
    budget[0] -= size
    it = iter(rendered)
    settings[key] = {**s, "value": _INTERP.sub(lambda _m: next(it), v), "interpolation": v}
    return True


def resolve_interpolations(settings: dict) -> None:
    """OmegaConf `${a.b}`: the referenced setting's value where it is known, within the budget (module
    doc); `${oc.env:X}`, relative and unresolvable references make the setting unknown."""
    for key, s in list(settings.items()):
        if s.get("value") == "???":  # OmegaConf's MISSING: a mandatory value nobody set
            settings[key] = _unknown(s, "??? (OmegaConf's mandatory value, not set)")
    budget = [MAX_TOTAL_CHARS]
    for _ in range(MAX_ROUNDS):
        changed = False
        for key, s in list(settings.items()):
            v = s.get("value")
            if isinstance(v, str) and "${" in v:
                changed = _resolve_one(settings, key, s, v, budget) or changed
        if not changed:
            break
    for key, s in list(settings.items()):
        v = s.get("value")
        if isinstance(v, str) and _INTERP.search(v):
            settings[key] = _unknown(s, f"the interpolation {_short(v)} cannot be resolved")
