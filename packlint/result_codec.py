"""The findings of one script as JSON data and back, for the result cache (packlint.result_cache): only
what `encode_outcome` writes decodes; anything else raises ValueError/KeyError/TypeError (a miss)."""

from __future__ import annotations

from typing import Any


def _loc(loc: Any) -> list:
    return [loc.path, loc.line, loc.column, loc.end_line, loc.end_column]


def encode_outcome(outcome: tuple) -> dict:
    """checking._analyse's (text, model, findings, suppressed, no_launch, main) as JSON data."""
    _text, _model, findings, suppressed, no_launch, main = outcome
    out = []
    for f in findings:
        fix = None
        if f.fix is not None:
            fix = dict(f.fix.__dict__)
            fix["start"], fix["end"] = _loc(f.fix.start), _loc(f.fix.end)
        d = dict(f.__dict__)
        d.update(
            location=_loc(f.location),
            related=[[_loc(r.location), r.message] for r in f.related],
            when=list(f.when),
            premises=[list(p) for p in f.premises],
            fix=fix,
        )
        out.append(d)
    return {"findings": out, "suppressed": suppressed, "no_launch": no_launch, "main": main}


def _s(v: Any, none: bool = False) -> Any:
    if type(v) is str or (none and v is None):
        return v
    raise ValueError("not a string")


def _i(v: Any) -> int:
    if type(v) is int:
        return v
    raise ValueError("not an int")


def _mkloc(v: Any) -> Any:
    from packlint.findings import Location

    if type(v) is not list or len(v) != 5:
        raise ValueError("not a location")
    return Location(_s(v[0]), _i(v[1]), _i(v[2]), _i(v[3]), _i(v[4]))


_FIX_STR = ("kind", "text", "applicability", "title")
_FIX_OPT = ("expect", "key", "value", "format", "dialect", "refused")


def _mkfix(d: Any) -> Any:
    from packlint.findings import FixPlan

    if d is None:
        return None
    if type(d.get("refuse_if_read")) is not bool or len(d) != 2 + len(_FIX_STR) + len(_FIX_OPT) + 1:
        raise ValueError("not a fix")
    kw = {k: _s(d[k]) for k in _FIX_STR}
    kw.update({k: _s(d[k], True) for k in _FIX_OPT})
    return FixPlan(start=_mkloc(d["start"]), end=_mkloc(d["end"]), refuse_if_read=d["refuse_if_read"], **kw)


def _finding(d: Any) -> Any:
    from packlint.findings import Finding, Related

    if type(d) is not dict:
        raise ValueError("not a finding")
    related = tuple(Related(_mkloc(r[0]), _s(r[1])) for r in d["related"] if len(r) == 2)
    if len(related) != len(d["related"]):
        raise ValueError("not a related note")
    premises = tuple((_s(p[0]), _s(p[1])) for p in d["premises"] if len(p) == 2)
    if len(premises) != len(d["premises"]):
        raise ValueError("not a premise")
    return Finding(
        code=_s(d["code"]),
        name=_s(d["name"]),
        severity=_s(d["severity"]),
        message=_s(d["message"]),
        location=_mkloc(d["location"]),
        related=related,
        certainty=_s(d["certainty"]),
        when=tuple(_s(w) for w in d["when"]),
        help=_s(d["help"], True),
        fix=_mkfix(d["fix"]),
        evidence=_s(d["evidence"]),
        premises=premises,
    )


def decode_outcome(d: Any) -> tuple:
    """encode_outcome's inverse; ValueError/KeyError/TypeError for anything it does not write."""
    if type(d) is not dict or type(d["no_launch"]) is not bool:
        raise ValueError("not an outcome")
    findings = [_finding(f) for f in d["findings"]]
    return None, None, findings, _i(d["suppressed"]), d["no_launch"], _s(d["main"])


class LazyRules(dict):
    """CheckResult.rules of a replayed run: the rule tables are loaded when a report first reads it
    (SARIF's rule list, a finding's documentation URL), not for an "All clear"."""

    def __init__(self, table_keys: list[tuple]) -> None:
        super().__init__()
        self._keys: list[tuple] | None = table_keys

    def _fill(self) -> None:
        if self._keys is not None:
            from packlint.rule_table import load_table

            keys, self._keys = self._keys, None
            for key in keys:
                for r in load_table(list(key)).rules:
                    self.setdefault(r.code, r)

    def get(self, *a: Any) -> Any:
        self._fill()
        return super().get(*a)

    def __getitem__(self, k: Any) -> Any:
        self._fill()
        return super().__getitem__(k)

    def __contains__(self, k: object) -> bool:
        self._fill()
        return super().__contains__(k)

    def __iter__(self) -> Any:
        self._fill()
        return super().__iter__()

    def __len__(self) -> int:
        self._fill()
        return super().__len__()

    def keys(self) -> Any:
        self._fill()
        return super().keys()

    def values(self) -> Any:
        self._fill()
        return super().values()

    def items(self) -> Any:
        self._fill()
        return super().items()

    def setdefault(self, k: Any, v: Any = None) -> Any:
        if self._keys is not None:
            self._fill()
        return super().setdefault(k, v)
