"""The interpreter's state records: worlds (one per feasible path), launches seen, diagnostics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from packlint.parse import ParsedScript
from packlint.records import factory, record
from packlint.values import Condition, Known, Span, Unknown, Value, Variable

if TYPE_CHECKING:
    from tree_sitter import Node


@record(eq=True)
class Diagnostic:
    severity: str  # error | warning | info
    code: str
    message: str
    span: Span | None
    related: Span | None = None  # a second place the diagnostic is about (a fix may edit it)
    # what it stands on besides the checkout (packlint.evidence): ("machine", "bash looks NAME up in PATH")
    evidence: tuple[str, str] | None = None

    def to_json(self) -> dict[str, object]:
        d: dict[str, object] = {"severity": self.severity, "code": self.code, "message": self.message}
        if self.span is not None:
            d.update(file=self.span.file, line=self.span.line, column=self.span.column)
        if self.related is not None:
            d["related"] = [self.related.to_json()]
        if self.evidence is not None:
            d["evidence"] = {"kind": self.evidence[0], "because": self.evidence[1]}
        return d


@record
class LaunchInstance:
    """One launch as seen in one world: what the interpreter hands to the launch model."""

    span: Span
    context: tuple[str, ...]  # function calls / loop iterations that led here
    seq: int  # execution order, to tell "exported after the launch"
    fields: list[Value]  # the command line from the outermost launcher on
    env: dict[str, Variable]  # exported variables + prefix/wrapper assignments
    unexported: dict[str, Variable]  # set, not exported
    when: tuple[Condition, ...]
    command: list[Value] | None = None  # what bash executes, when it differs (`srun ... bash -c "..."`)
    caller_args: bool = False  # the statement passed the script's own arguments on ("$@", `${@:2}`)
    # the positional arguments a caller the analysis followed passed in (`bash train.sh --lr 1e-4`, a
    # function call): a flag among them that reaches the argv is the caller's override (PK103)
    passed: tuple[str, ...] = ()
    # variables the script never sets whose lone unquoted `$NAME` words gave no word in this statement (bash drops an
    # empty unquoted expansion): the environment the script runs in may give words there
    vanished: tuple[str, ...] = ()


@record
class World:
    vars: dict[str, Variable]
    positional: list[Value]
    script: str
    functions: dict[str, tuple[Node, ParsedScript]] = factory(dict)  # name -> (body, its script)
    when: tuple[Condition, ...] = ()
    flow: str | None = None  # exit | return | break | continue
    locals_stack: list[dict[str, Variable | None]] = factory(list)
    allexport: bool = False  # `set -a` is on
    exported_functions: frozenset[str] = frozenset()  # `export -f NAME`: visible to child bash processes
    unknown_exports: bool = False  # `export $(...)`: names packlint cannot know were exported
    exit_trap: tuple[Value, Span] | None = None  # `trap '...' EXIT`: (code, where) run when the script ends
    nullglob: bool = False  # `shopt -s nullglob`
    aliases: dict[str, tuple[str, Span | None]] | None = None  # `alias NAME=...`: NAME -> (text, where)
    expand_aliases: bool = False  # `shopt -s expand_aliases`: scripts expand aliases only then
    # the positional parameters are the script's own arguments (not a function's, not `set --`): past
    # the ones packlint was given they are empty only on an assumption (packlint.evidence.NO_ARGUMENTS)
    script_args: bool = True
    # `source` of a file packlint could not read or follow: a variable the script has not set may be set there
    unread_source: str | None = None

    def fork(self) -> World:
        return World(
            dict(self.vars),
            list(self.positional),
            self.script,
            dict(self.functions),
            self.when,
            self.flow,
            [dict(f) for f in self.locals_stack],
            self.allexport,
            self.exported_functions,
            self.unknown_exports,
            self.exit_trap,
            self.nullglob,
            None if self.aliases is None else dict(self.aliases),
            self.expand_aliases,
            self.script_args,
            self.unread_source,
        )


def join_worlds(worlds: list[World], depends_on: str, span: Span | None) -> World:
    """One world standing for several: what they agree on stays, what differs becomes unknown."""
    first = worlds[0]
    if len(worlds) == 1:
        return first
    joined = first.fork()
    reason = f"depends on {depends_on}"
    for name in dict.fromkeys(n for w in worlds for n in w.vars):
        found = [w.vars.get(name) for w in worlds]
        v0 = found[0]
        if all(v is v0 for v in found):
            continue
        present = [v for v in found if v is not None]
        if (
            v0 is not None
            and len(present) == len(found)
            and all(
                v.items is None
                and v0.items is None
                and isinstance(v.value, Known)
                and isinstance(v0.value, Known)
                and v.value.text == v0.value.text
                and v.exported == v0.exported
                for v in present
            )
        ):
            continue
        exported = any(v.exported for v in present)
        # exported on some of the joined paths only: whether the launch gets it at all is unknown
        partly = len(present) < len(found) or not all(v.exported for v in present)
        source = "branches" if exported and (partly or any(v.source == "branches" for v in present)) else "script"
        if any(v.items is not None for v in present):
            joined.vars[name] = Variable(
                None, [Unknown(reason, span)], exported, span, span if exported else None, source=source
            )
        else:
            joined.vars[name] = Variable(
                Unknown(reason, span), None, exported, span, span if exported else None, source=source
            )
    if any(
        len(w.positional) != len(first.positional)
        or any(
            not (a is b or (isinstance(a, Known) and isinstance(b, Known) and a.text == b.text))
            for a, b in zip(w.positional, first.positional, strict=False)
        )
        for w in worlds[1:]
    ):
        joined.positional = [Unknown(reason, span)]
    for w in worlds[1:]:
        for fname, fdef in w.functions.items():
            joined.functions.setdefault(fname, fdef)
    common = set(first.when)
    for w in worlds[1:]:
        common &= set(w.when)
    joined.when = tuple(c for c in first.when if c in common)
    joined.allexport = any(w.allexport for w in worlds)
    joined.unread_source = next((w.unread_source for w in worlds if w.unread_source), None)
    return joined


def common_prefix(a: tuple[Condition, ...], b: tuple[Condition, ...]) -> tuple[Condition, ...]:
    """Conditions two merged worlds share (order kept)."""
    bs = set(b)
    return tuple(c for c in a if c in bs)


# What a command reports as its exit status, world by world (None: unknown), when it decides itself.
StatusOut = list[tuple[World, "bool | None"]]


def reassigned(world: World, name: str, value: Value | None, span: Span | None) -> Variable:
    """NAME's new value from a `for`/`read` loop, `let` or `${NAME:=...}`: like every bash assignment it
    keeps the variable's export attribute (`export BS=8; for BS in 8 32` passes each value to the
    launches in the loop)."""
    old = world.vars.get(name)
    return Variable(value, None, old.exported if old else False, span, old.exported_at if old else None)
