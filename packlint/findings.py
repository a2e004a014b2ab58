"""What a check reports: `Finding`s, each with a primary location, related notes and a certainty."""

from __future__ import annotations


class _Value:
    """A small immutable value class (hand-written: dataclass creation costs start-up time)."""

    __slots__ = ()

    def _key(self) -> tuple:
        return tuple(getattr(self, f) for f in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{f}={getattr(self, f)!r}' for f in self.__slots__)})"

# The one severity order (fail-on thresholds, grouping, config validation all use it), lowest first.
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


class Location(_Value):
    __slots__ = ("path", "line", "column", "end_line", "end_column")

    def __init__(self, path: str, line: int, column: int, end_line: int, end_column: int) -> None:
        self.path, self.line, self.column, self.end_line, self.end_column = path, line, column, end_line, end_column

    @classmethod
    def from_json(cls, d: dict | None) -> "Location | None":
        if not d or d.get("line") is None or d.get("file") is None:
            return None
        line = int(d["line"])
        column = int(d.get("column") or 1)
        return cls(str(d["file"]), line, column, int(d.get("end_line") or line),
                   int(d.get("end_column") or column))


class Related(_Value):
    __slots__ = ("location", "message")

    def __init__(self, location: Location, message: str) -> None:
        self.location, self.message = location, message


class Finding(_Value):
    """One reported problem. `severity`: error | warning | info; `certainty`: certain | possible;
    `when`: for a possible finding, the branch decisions that trigger it."""

    __slots__ = ("code", "name", "severity", "message", "location", "related", "certainty", "when", "help")

    def __init__(self, code: str, name: str, severity: str, message: str, location: Location,
                 related: tuple = (), certainty: str = "certain", when: tuple = (),
                 help: str | None = None) -> None:
        self.code, self.name, self.severity, self.message, self.location = code, name, severity, message, location
        self.related, self.certainty, self.when, self.help = tuple(related), certainty, tuple(when), help

    def sort_key(self) -> tuple:
        loc = self.location
        return (loc.path, loc.line, loc.column, self.code, self.message)

    def to_json(self) -> dict:
        loc = self.location
        return {
            "code": self.code, "name": self.name, "severity": self.severity, "message": self.message,
            "path": loc.path, "line": loc.line, "column": loc.column,
            "end_line": loc.end_line, "end_column": loc.end_column,
            "related": [{"path": r.location.path, "line": r.location.line, "column": r.location.column,
                         "message": r.message} for r in self.related],
            "certainty": self.certainty,
            "when": list(self.when),
            "help": self.help,
        }


class Summary:
    """Counts for the summary line. `suppressed`: findings silenced by `# packlint: disable` comments;
    `baselined`: findings hidden because the baseline file records them."""

    def __init__(self, files: int = 0, errors: int = 0, warnings: int = 0, infos: int = 0,
                 suppressed: int = 0, baselined: int = 0, no_launch: int = 0) -> None:
        self.files, self.errors, self.warnings, self.infos = files, errors, warnings, infos
        self.suppressed, self.baselined = suppressed, baselined
        self.no_launch = no_launch  # files in which no launch was recognised

    @classmethod
    def of(cls, findings: list[Finding], files: int, *, suppressed: int = 0, baselined: int = 0,
           no_launch: int = 0) -> "Summary":
        s = cls(files=files, suppressed=suppressed, baselined=baselined, no_launch=no_launch)
        for f in findings:
            if f.severity == "error":
                s.errors += 1
            elif f.severity == "warning":
                s.warnings += 1
            else:
                s.infos += 1
        return s

    def to_json(self) -> dict:
        return {"files": self.files, "errors": self.errors, "warnings": self.warnings, "infos": self.infos,
                "suppressed": self.suppressed, "baselined": self.baselined}
