"""What a check reports: `Finding`s, each with a primary location, related notes and a certainty."""

from __future__ import annotations

from dataclasses import dataclass, field

SEVERITIES = ("error", "warning", "info")
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


@dataclass(frozen=True, slots=True)
class Location:
    path: str
    line: int
    column: int
    end_line: int
    end_column: int

    @classmethod
    def from_json(cls, d: dict | None) -> "Location | None":
        if not d or d.get("line") is None or d.get("file") is None:
            return None
        line = int(d["line"])
        column = int(d.get("column") or 1)
        return cls(str(d["file"]), line, column, int(d.get("end_line") or line),
                   int(d.get("end_column") or column))


@dataclass(frozen=True, slots=True)
class Related:
    location: Location
    message: str


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    name: str
    severity: str                 # error | warning | info
    message: str
    location: Location
    related: tuple[Related, ...] = ()
    certainty: str = "certain"    # certain | possible
    when: tuple[str, ...] = ()    # for a possible finding: the branch decisions that trigger it
    help: str | None = None

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


@dataclass
class Summary:
    files: int = 0
    errors: int = 0
    warnings: int = 0
    infos: int = 0
    by_severity: dict = field(default_factory=dict)

    @classmethod
    def of(cls, findings: list[Finding], files: int) -> "Summary":
        s = cls(files=files)
        for f in findings:
            if f.severity == "error":
                s.errors += 1
            elif f.severity == "warning":
                s.warnings += 1
            else:
                s.infos += 1
        return s

    def to_json(self) -> dict:
        return {"files": self.files, "errors": self.errors, "warnings": self.warnings, "infos": self.infos}
