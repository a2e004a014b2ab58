"""Values the interpreter computes, each carrying where in the source it came from.

A shell value is either known text (`Known`) or something packlint cannot know without running the
script (`Unknown`, with the reason). Branch-dependence is not a value type: the interpreter forks
whole worlds at undecidable branches, so inside one world every value is Known or Unknown, and
correlated settings (both gates set in the same branch) stay correlated.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Span:
    """A 1-based source range; columns count characters."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "column": self.column,
                "end_line": self.end_line, "end_column": self.end_column}

    def short(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True, slots=True)
class Known:
    """Exact text; `span` is where the text was written (the literal, or the default in `${4:-2}`)."""

    text: str
    span: Span | None = None

    @property
    def is_known(self) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class Unknown:
    """Text packlint cannot know statically, e.g. `$(hostname -I)`; never guessed."""

    reason: str
    span: Span | None = None
    # for a word only partly unknown: its pieces as (text or None, reason), so that `bash -c "$X ..."`
    # can still be analysed around the unknown part
    parts: tuple = field(default=(), compare=False)

    @property
    def is_known(self) -> bool:
        return False

    @property
    def text(self) -> None:
        return None


Value = Known | Unknown


def same_value(a: Value | None, b: Value | None) -> bool:
    """Equality of what a value *is*, ignoring where it came from."""
    if a is None or b is None:
        return a is b
    if isinstance(a, Known) and isinstance(b, Known):
        return a.text == b.text
    if isinstance(a, Unknown) and isinstance(b, Unknown):
        return a.reason == b.reason
    return False


@dataclass(frozen=True, slots=True)
class Condition:
    """One undecidable branch decision a world took, e.g. `[[ $MODE == sft ]]` is true at line 12."""

    text: str
    outcome: str  # "true" / "false" / "case arm `sft)`" / "loop body runs" ...
    span: Span

    def describe(self) -> str:
        return f"{self.span.short()}: `{self.text}` {self.outcome}"


@dataclass(slots=True)
class Variable:
    """A shell variable in one world: a scalar or an array of values, plus its attributes."""

    value: Value | None = None            # scalar value (None when the variable is an array)
    items: list[Value] | None = None      # array items
    exported: bool = False
    assigned_at: Span | None = None       # where its current value was assigned
    exported_at: Span | None = None       # where the export happened (may equal assigned_at)
    source: str = "script"                # script | caller | prefix | cluster
    readonly: bool = False
    history: list[Span] = field(default_factory=list)

    def copy(self) -> "Variable":
        return Variable(self.value, None if self.items is None else list(self.items), self.exported,
                        self.assigned_at, self.exported_at, self.source, self.readonly, list(self.history))

    def scalar(self) -> Value | None:
        """`$A` of an array is its first item, as in bash."""
        if self.items is not None:
            return self.items[0] if self.items else Known("", self.assigned_at)
        return self.value
