"""Values the interpreter computes, each carrying where in the source it came from.

A shell value is either known text (`Known`) or something packlint cannot know without running the
script (`Unknown`, with the reason). Branch-dependence is not a value type: the interpreter forks
whole worlds at undecidable branches, so inside one world every value is Known or Unknown, and
correlated settings (both gates set in the same branch) stay correlated.
"""

from __future__ import annotations


class Span:
    """A 1-based source range; columns count characters."""

    __slots__ = ("file", "line", "column", "end_line", "end_column")

    def __init__(self, file: str, line: int, column: int, end_line: int, end_column: int) -> None:
        self.file, self.line, self.column, self.end_line, self.end_column = file, line, column, end_line, end_column

    def _key(self) -> tuple:
        return (self.file, self.line, self.column, self.end_line, self.end_column)

    def __eq__(self, other: object) -> bool:
        return type(other) is Span and (
            self.line == other.line
            and self.column == other.column
            and self.end_line == other.end_line
            and self.end_column == other.end_column
            and self.file == other.file
        )

    def __hash__(self) -> int:  # (spans key the launch grouping: hashed often, so written out)
        return hash((self.file, self.line, self.column, self.end_line, self.end_column))

    def __repr__(self) -> str:
        return f"Span({self.file!r}, {self.line}, {self.column}, {self.end_line}, {self.end_column})"

    def __reduce__(self):
        return (Span, self._key())

    def to_json(self) -> dict:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
        }

    def short(self) -> str:
        return f"{self.file}:{self.line}"


class Known:
    """Exact text; `span` is where the text was written (the literal, or the default in `${4:-2}`)."""

    __slots__ = ("text", "span", "origin", "segs")

    def __init__(
        self, text: str, span: Span | None = None, origin: str | None = None, segs: tuple | None = None
    ) -> None:
        # origin "caller": the text came in from outside (the script's positional arguments);
        # segs: for text joined from parts written in different places (`F="$F --firefly"; F="$F --multi"`),
        # ((start, end, Span), ...) in order, so a word split out of it later points where it was written
        self.text, self.span, self.origin, self.segs = text, span, origin, segs

    def __eq__(self, other: object) -> bool:
        return type(other) is Known and self.text == other.text and self.span == other.span

    def __hash__(self) -> int:
        return hash((self.text, self.span))

    def __repr__(self) -> str:
        return f"Known({self.text!r}, {self.span!r})"

    def __reduce__(self):
        return (Known, (self.text, self.span, self.origin, self.segs))


# origin of a word a caller the analysis follows passed in as a positional argument (`bash x.sh ARGS`,
# `sbatch job.sh ARGS`, `source x.sh ARGS`, a function call): what the callee's "$@" hands on is the
# caller's override, given on purpose after the callee's own defaults (PK103 does not count it as a repeat)
ARGS_ORIGIN = "args"


def as_arguments(values: list[Value]) -> list[Value]:
    """The words a caller passes to a script or function it runs, marked as its positional arguments."""
    return [Known(v.text, v.span, ARGS_ORIGIN) if isinstance(v, Known) and v.origin is None else v for v in values]


class Unknown:
    """Text packlint cannot know statically, e.g. `$(hostname -I)`; never guessed."""

    __slots__ = ("reason", "span", "parts", "may_split")
    text = None

    def __init__(self, reason: str, span: Span | None = None, parts: tuple = (), may_split: bool = False) -> None:
        # parts: for a word only partly unknown, its pieces as (text or None, reason), so that
        # `bash -c "$X ..."` can still be analysed around the unknown part (not part of equality);
        # may_split: an unquoted unknown expansion, which bash may split into any number of words
        self.reason, self.span, self.parts, self.may_split = reason, span, parts, may_split

    def __eq__(self, other: object) -> bool:
        return type(other) is Unknown and self.reason == other.reason and self.span == other.span

    def __hash__(self) -> int:
        return hash((self.reason, self.span))

    def __repr__(self) -> str:
        return f"Unknown({self.reason!r}, {self.span!r})"

    def __reduce__(self):
        return (Unknown, (self.reason, self.span, self.parts, self.may_split))


Value = Known | Unknown


class Condition:
    """One undecidable branch decision a world took, e.g. `[[ $MODE == sft ]]` is true at line 12."""

    __slots__ = ("text", "outcome", "span")

    def __init__(self, text: str, outcome: str, span: Span) -> None:
        # outcome: "is true" / "is false" / "matches `sft)`" / "runs its body" ...
        self.text, self.outcome, self.span = text, outcome, span

    def __eq__(self, other: object) -> bool:
        return type(other) is Condition and (self.text, self.outcome, self.span) == (
            other.text,
            other.outcome,
            other.span,
        )

    def __hash__(self) -> int:
        return hash((self.text, self.outcome, self.span))

    def __repr__(self) -> str:
        return f"Condition({self.text!r}, {self.outcome!r}, {self.span!r})"

    def describe(self) -> str:
        return f"{self.span.short()}: `{self.text}` {self.outcome}"


class Variable:
    """A shell variable in one world: a scalar or an array of values, plus its attributes."""

    __slots__ = (
        "value",
        "items",
        "exported",
        "assigned_at",
        "exported_at",
        "source",
        "readonly",
        "history",
        "ref",
        "integer",
        "assoc",
    )

    def __init__(
        self,
        value: Value | None = None,
        items: list[Value | None] | None = None,
        exported: bool = False,
        assigned_at: Span | None = None,
        exported_at: Span | None = None,
        source: str = "script",
        readonly: bool = False,
        history: list[Span] | None = None,
    ) -> None:
        self.value = value  # scalar value (None when the variable is an array)
        self.items = items  # array items
        self.exported = exported
        self.assigned_at = assigned_at  # where its current value was assigned
        self.exported_at = exported_at  # where the export happened (may equal assigned_at)
        self.source = source  # script | caller | prefix | cluster
        self.readonly = readonly
        self.history = history if history is not None else []
        self.ref: str | None = None  # `local -n NAME=TARGET`: a nameref to TARGET
        self.integer = False  # `declare -i`: assignments are evaluated as arithmetic
        self.assoc: dict[str, Value] | None = None  # `declare -A`: key -> Value

    def __repr__(self) -> str:
        return f"Variable({self.value!r}, items={self.items!r}, exported={self.exported})"

    def copy(self) -> Variable:
        new = Variable(
            self.value,
            None if self.items is None else list(self.items),
            self.exported,
            self.assigned_at,
            self.exported_at,
            self.source,
            self.readonly,
            list(self.history),
        )
        new.ref, new.integer = self.ref, self.integer
        new.assoc = None if self.assoc is None else dict(self.assoc)
        return new

    def scalar(self) -> Value | None:
        """`$A` of an array is its first item, as in bash."""
        if self.items is not None:
            return self.items[0] if self.items else Known("", self.assigned_at)
        return self.value
