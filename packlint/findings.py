"""What a check reports: `Finding`s, each with a primary location, related notes and a certainty."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from packlint.records import record

if TYPE_CHECKING:
    from collections.abc import Mapping

# The one severity order (fail-on thresholds, grouping, config validation all use it), lowest first.
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


@record(eq=True)
class Location:
    path: str
    line: int
    column: int
    end_line: int
    end_column: int

    @classmethod
    def from_json(cls, d: Mapping[str, Any] | None) -> Location | None:
        if not d or d.get("line") is None or d.get("file") is None:
            return None
        line = int(d["line"])
        column = int(d.get("column") or 1)
        return cls(str(d["file"]), line, column, int(d.get("end_line") or line), int(d.get("end_column") or column))


@record(eq=True)
class Related:
    location: Location
    message: str


@record(eq=True)
class FixPlan:
    """A rule's fix resolved on one finding, before it is turned into text edits (packlint.fixes does
    that, with the script's syntax tree): `kind` (insert_before | insert_after | insert_line_before |
    insert_line_after | replace | replace_prefix | delete), the span `start`..`end` (Locations; `end`
    may equal `start`),
    the rendered `text`, `applicability` (safe | unsafe), a `title` for editors and an `expect`ed span
    prefix (the edit is dropped when the script text there differs); `refuse_if_read`: a delete is not
    offered when the script reads the variable it assigns; the config-file kinds' fields below."""

    kind: str
    start: Location
    end: Location
    text: str
    applicability: str
    title: str
    expect: str | None = None
    refuse_if_read: bool = True
    # config-file kinds (set_key | replace_value | delete_key, packlint.configfix): the dotted key to
    # set, the value in YAML flow syntax, the file's format and YAML dialect, and why no fix can be
    # offered (a value set on the command line, in a Hydra default, ...) or None
    key: str | None = None
    value: str | None = None
    format: str | None = None
    dialect: str | None = None
    refused: str | None = None


@record(eq=True)
class Finding:
    """One reported problem. `severity`: error | warning | info; `certainty`: certain | possible;
    `when`: for a possible finding, the branch decisions that trigger it; `fix`: a FixPlan or None;
    `evidence`: what it stands on (checkout | assumed | machine, packlint.evidence) and `premises`:
    the assumptions and machine dependences among what its condition read, as (kind, because)."""

    code: str
    name: str
    severity: str
    message: str
    location: Location
    related: tuple[Related, ...] = ()  # tuples (not lists): findings are hashed
    certainty: str = "certain"
    when: tuple[str, ...] = ()
    help: str | None = None
    fix: FixPlan | None = None
    evidence: str = "checkout"
    premises: tuple[tuple[str, str], ...] = ()

    def replace(self, **changes: object) -> Finding:
        """A copy with some fields changed."""
        values = dict(self.__dict__)
        values.update(changes)
        return Finding(**values)

    def sort_key(self) -> tuple:
        loc = self.location
        return (loc.path, loc.line, loc.column, self.code, self.message)

    def bare_message(self) -> str:
        """The message without the words that name its premises (evidence.suffix)."""
        from packlint import evidence

        tail = evidence.suffix(self.premises)
        return self.message[: -len(tail)] if tail and self.message.endswith(tail) else self.message

    def weaker_than(self, other: Finding) -> bool:
        """This finding stands on weaker evidence than `other` (the machine over an assumption over the checkout),
        or on more premises of the same kind: of one finding two analyses reach, the other is kept."""
        from packlint import evidence

        rank = {evidence.CHECKOUT: 0, evidence.ASSUMED: 1, evidence.MACHINE: 2}
        mine, theirs = rank[evidence.basis(self.premises)], rank[evidence.basis(other.premises)]
        return mine > theirs or (mine == theirs and len(self.premises) > len(other.premises))

    def to_json(self) -> dict:
        loc = self.location
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity,
            "message": self.message,
            "path": loc.path,
            "line": loc.line,
            "column": loc.column,
            "end_line": loc.end_line,
            "end_column": loc.end_column,
            "related": [
                {"path": r.location.path, "line": r.location.line, "column": r.location.column, "message": r.message}
                for r in self.related
            ],
            "certainty": self.certainty,
            "when": list(self.when),
            "help": self.help,
            "evidence": self.evidence,
            "premises": [{"kind": k, "because": b} for k, b in self.premises],
        }


class Summary:
    """Counts for the summary line. `suppressed`: findings silenced by `# packlint: disable` comments;
    `baselined`: findings hidden because the baseline file records them."""

    def __init__(
        self,
        files: int = 0,
        errors: int = 0,
        warnings: int = 0,
        infos: int = 0,
        suppressed: int = 0,
        baselined: int = 0,
        no_launch: int = 0,
    ) -> None:
        self.files, self.errors, self.warnings, self.infos = files, errors, warnings, infos
        self.suppressed, self.baselined = suppressed, baselined
        self.no_launch = no_launch  # files in which no launch was recognised

    @classmethod
    def of(
        cls, findings: list[Finding], files: int, *, suppressed: int = 0, baselined: int = 0, no_launch: int = 0
    ) -> Summary:
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
        return {
            "files": self.files,
            "errors": self.errors,
            "warnings": self.warnings,
            "infos": self.infos,
            "suppressed": self.suppressed,
            "baselined": self.baselined,
        }
