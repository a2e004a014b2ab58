"""The typed, compiled tree of a condition and what it evaluates against.

Values are Python bool/int/str or `Unk` (the three kinds of "packlint does not have this value", see
packlint.conditions). Compiled expressions are small objects with `eval(ctx)`; they pickle (the rule
table cache stores them), so their classes keep these module paths. A `Builtin` looks its function up
by name in FUNCTIONS at run time: the registry is declared here and filled by
packlint.conditions.functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from packlint.regex import LazyRegex

if TYPE_CHECKING:
    from packlint.model_types import DiagnosticJSON, LaunchJSON, LocationJSON, ScriptModelJSON, VariantJSON

BOOL, INT, STR = "bool", "int", "str"

# ---------------------------------------------------------------------------------------------- values

_KIND_RANK = {"unknown": 3, "invalid": 2, "absent": 1}


# Integers the conditions compute: past this many bits a result is undecided (no count is that large).
MAX_INT_BITS = 256


class Unk:
    """A value the rule cannot use: `reason` says why, `kind` is unknown | invalid | absent, `loc`
    (a LOCATION dict) says where it came from. (Plain classes here: dataclass creation costs start-up.)"""

    __slots__ = ("reason", "kind", "loc")

    def __init__(self, reason: str, kind: str = "unknown", loc: LocationJSON | None = None) -> None:
        self.reason, self.kind, self.loc = reason, kind, loc

    def __repr__(self) -> str:
        return f"Unk({self.reason!r}, {self.kind!r})"


def _pick(*vals: Any) -> Unk:
    """The most informative of several unknowns (an undetermined value beats an invalid or absent one)."""
    best = None
    for v in vals:
        if isinstance(v, Unk) and (best is None or _KIND_RANK[v.kind] > _KIND_RANK[best.kind]):
            best = v
    assert best is not None
    return best


# ---------------------------------------------------------------------------------------------- typed tree


class Expr:
    __slots__ = ("type",)
    type: str

    def eval(self, ctx: EvalContext) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


class Const(Expr):
    __slots__ = ("value",)

    def __init__(self, value: Any, type_: str) -> None:
        self.value = value
        self.type = type_

    def eval(self, ctx: EvalContext) -> Any:
        return self.value


class Var(Expr):
    """A name bound by `for_each` or a predicate parameter."""

    __slots__ = ("ident",)

    def __init__(self, ident: str, type_: str) -> None:
        self.ident = ident
        self.type = type_

    def eval(self, ctx: EvalContext) -> Any:
        return ctx.bindings[self.ident]


class PredicateCall(Expr):
    """A named predicate from the table, with arguments bound to its parameters."""

    __slots__ = ("name", "params", "args", "body")

    def __init__(self, name: str, params: list[str], args: list[Expr], body: PredicateBody) -> None:
        self.name = name
        self.params = params
        self.args = args
        self.body = body
        self.type = body.type

    def eval(self, ctx: EvalContext) -> Any:
        if not self.params:
            if ctx.item is not None:
                return self.body.expr.eval(ctx)
            # without parameters it reads only the context: once per variant for all the rules that ask
            key = ("predicate", self.name)
            memo = ctx.memo
            if key not in memo:
                return _memoised(ctx, key, self.body.expr)
            if ctx.memo_premises:
                ctx.premises.extend(ctx.memo_premises.get(key, ()))
            return memo[key]
        values = [a.eval(ctx) for a in self.args]
        saved = ctx.bindings
        ctx.bindings = {**saved, **dict(zip(self.params, values, strict=True))}
        try:
            return self.body.expr.eval(ctx)
        finally:
            ctx.bindings = saved


def _memoised(ctx: EvalContext, key: tuple[str, str], expr: Expr) -> Any:
    """Evaluate and memoise a predicate without parameters, keeping the premises it read."""
    premises = ctx.premises
    n = len(premises)
    value = ctx.memo[key] = expr.eval(ctx)
    if len(premises) > n:
        ctx.memo_premises[key] = premises[n:]
    return value


class PredicateBody:
    """Filled in after type-checking, so predicates may refer to each other in any order."""

    __slots__ = ("expr", "type")

    def __init__(self) -> None:
        # set by compile_table before anything evaluates it (None only while the table compiles)
        self.expr: Expr = None  # type: ignore[assignment]
        self.type = ""


_UNSET = object()  # (a memo entry not computed yet: a computed value may be None)


class Builtin(Expr):
    """A call of a built-in function (see FUNCTIONS); `static` holds literal arguments compiled at load
    time (e.g. a regex)."""

    __slots__ = ("func", "args", "static", "memo_key")

    def __init__(self, func: str, args: list[Expr], type_: str, static: Any = None) -> None:
        self.func = func
        self.args = args
        self.type = type_
        self.static = static
        # a call on literals reads only the context (`setting('tp')`, `size('world')`): its value is kept
        # in the context and shared by every rule of the variant that makes the same call
        self.memo_key: tuple[Any, ...] | None = None
        if all(type(a) is Const for a in args):
            key: tuple[Any, ...] | None = (func, *(a.value for a in args))  # type: ignore[attr-defined]
            try:
                hash(key)
            except TypeError:
                key = None
            self.memo_key = key

    def eval(self, ctx: EvalContext) -> Any:
        key = self.memo_key
        if self.func == "certainly":
            # a prerequisite that does not hold for certain is false whatever it read: an undecided argument
            # gives the same false, so what the argument rested on is no premise of the rule's verdict
            n = len(ctx.premises)
            value = FUNCTIONS[self.func].impl(ctx, self, [a.eval(ctx) for a in self.args])
            if value is False:
                del ctx.premises[n:]
            return value
        if key is None or ctx.item is not None:
            return FUNCTIONS[self.func].impl(ctx, self, [a.eval(ctx) for a in self.args])
        memo = ctx.memo
        value = memo.get(key, _UNSET)
        if value is _UNSET:
            premises = ctx.premises
            n = len(premises)
            value = memo[key] = FUNCTIONS[self.func].impl(ctx, self, [a.eval(ctx) for a in self.args])
            if len(premises) > n:  # (the premises it read come back with the memoised value)
                ctx.memo_premises[key] = premises[n:]
        elif ctx.memo_premises:
            ctx.premises.extend(ctx.memo_premises.get(key, ()))
        return value


class Not(Expr):
    __slots__ = ("operand",)

    def __init__(self, operand: Expr) -> None:
        self.operand = operand
        self.type = BOOL

    def eval(self, ctx: EvalContext) -> Any:
        v = self.operand.eval(ctx)
        return v if isinstance(v, Unk) else not v


class Neg(Expr):
    __slots__ = ("operand",)

    def __init__(self, operand: Expr) -> None:
        self.operand = operand
        self.type = INT

    def eval(self, ctx: EvalContext) -> Any:
        v = self.operand.eval(ctx)
        return v if isinstance(v, Unk) else -v


class _Logical(Expr):
    """Three-valued `and` / `or`: the `decisive` value on either side settles it (False for and, True
    for or); otherwise both sides known give the other value, and an undecided side keeps it undecided."""

    __slots__ = ("left", "right")
    decisive: bool

    def __init__(self, left: Expr, right: Expr) -> None:
        self.left, self.right = left, right
        self.type = BOOL

    def eval(self, ctx: EvalContext) -> Any:
        premises = ctx.premises
        n = len(premises)
        a = self.left.eval(ctx)
        if a is self.decisive:
            return a
        m = len(premises)
        b = self.right.eval(ctx)
        if b is self.decisive:
            if m > n:  # the left side did not decide: what it read is no premise of the result
                del premises[n:m]
            return b
        if a is (not self.decisive) and b is (not self.decisive):
            return a
        return _pick(a, b)


class And(_Logical):
    __slots__ = ()
    decisive = False


class Or(_Logical):
    __slots__ = ()
    decisive = True


def _div(a: int, b: int) -> Any:
    if b == 0:
        return Unk("division by zero", "invalid")
    return a // b


def _mod(a: int, b: int) -> Any:
    if b == 0:
        return Unk("modulo by zero", "invalid")
    return a % b


_BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": _div,
    "%": _mod,
}


class BinOp(Expr):
    __slots__ = ("op", "left", "right")

    def __init__(self, op: str, left: Expr, right: Expr, type_: str) -> None:
        self.op, self.left, self.right = op, left, right
        self.type = type_

    def eval(self, ctx: EvalContext) -> Any:
        a = self.left.eval(ctx)
        b = self.right.eval(ctx)
        if isinstance(a, Unk) or isinstance(b, Unk):
            return _pick(a, b)
        r = _BINOPS[self.op](a, b)
        if type(r) is int and r.bit_length() > MAX_INT_BITS:  # (str() of 4,300 digits raises)
            return Unk(f"an integer of more than {MAX_INT_BITS} bits: too large to track", "unknown")
        return r


class In(Expr):
    __slots__ = ("operand", "items")

    def __init__(self, operand: Expr, items: tuple[Any, ...]) -> None:
        self.operand, self.items = operand, items
        self.type = BOOL

    def eval(self, ctx: EvalContext) -> Any:
        v = self.operand.eval(ctx)
        return v if isinstance(v, Unk) else v in self.items


# ---------------------------------------------------------------------------------------------- built-in functions


# a built-in's implementation: (context, the call node, the evaluated arguments) -> value or Unk
Impl = Callable[["EvalContext", "Builtin", list[Any]], Any]


class Function:
    """A built-in: parameter types (required, then optional), return type, implementation, doc;
    `literal`: argument indexes that must be literals (compiled at load by `compile_static`)."""

    __slots__ = ("params", "optional", "returns", "impl", "doc", "literal", "compile_static", "scoped")

    def __init__(
        self,
        params: tuple[str, ...],
        optional: tuple[str, ...],
        returns: str,
        impl: Impl,
        doc: str,
        literal: tuple[int, ...] = (),
        compile_static: Callable[..., Any] | None = None,
        scoped: bool = False,
    ) -> None:
        self.params, self.optional, self.returns, self.impl, self.doc = params, optional, returns, impl, doc
        self.literal, self.compile_static = literal, compile_static
        self.scoped = scoped  # compile_static also gets the Scope (to resolve names from the table)


class NameLookupError(Exception):
    """A literal name argument that the table does not define (reported at load as a ConditionError)."""


# every built-in of the language by name, in documentation order (filled by packlint.conditions.functions)
FUNCTIONS: dict[str, Function] = {}


# ---------------------------------------------------------------------------------------------- context


class EvalContext:
    """What an expression reads: one variant of one launch (or only the script, for script rules, whose
    launch and variant are empty dicts), typed as packlint.model_types declares them."""

    __slots__ = (
        "model",
        "launch",
        "variant",
        "bindings",
        "item",
        "_bash_rejects",
        "_code",
        "memo",
        "premises",
        "memo_premises",
    )

    def __init__(
        self,
        model: ScriptModelJSON,
        launch: LaunchJSON | None,
        variant: VariantJSON | None,
        bash_rejects: Callable[[], Any] | None = None,
        code: Callable[[LaunchJSON, VariantJSON], Any] | None = None,
    ) -> None:
        self.model = model
        self.launch: LaunchJSON = launch or cast("LaunchJSON", {})
        self.variant: VariantJSON = variant or cast("VariantJSON", {})
        self.bindings: dict[str, Any] = {}
        self.item: DiagnosticJSON | None = None  # the diagnostic a `for_each = "diagnostics"` rule reads
        self._bash_rejects = bash_rejects
        self._code = code  # (launch, variant) -> packlint.codebase.CodeFacts | None, memoised by the caller
        # what depends only on (launch, variant), computed once for all the rules that ask
        self.memo: dict[Any, Any] = {}  # (keys: a name, or a tuple for calls and predicates)
        # what the values read so far stand on besides the checkout (packlint.evidence): the engine
        # empties it before each condition and reads it when the condition fires
        self.premises: list[tuple[str, str]] = []
        self.memo_premises: dict[Any, list[tuple[str, str]]] = {}  # memo key -> the premises it read

    def code_facts(self) -> Any:
        """The facts about the code this launch runs (packlint.codebase.model.CodeFacts), or None when
        no code base is at hand (or code reading is off). Computed on first use by the check's code
        session, so rules that never ask cost nothing."""
        if self._code is None or not self.launch:
            return None
        facts = self._code(self.launch, self.variant)
        guess = _program_guess(facts, self.model.get("script"))
        if guess is not None:
            from packlint import evidence

            evidence.note(self, (evidence.MACHINE, guess))  # the path as written must be on the machine
        mapped = _absolute_guess(facts)
        if mapped is not None and _guard_contradicts(self.launch, facts):
            return None  # (the script's own guard says that folder is not this checkout: its code is not known)
        how = getattr(getattr(facts, "resolution", None), "how", None)
        if mapped is None and how in ("workdir", "script-checkout"):
            from packlint.conditions.functions.stack_config_workdir import launch_workdir

            workdir, why = launch_workdir(self)
            # (`cd /data/me/<checkout>/OpenRLHF`: the checkout's OpenRLHF/; `cd /gpfs/...; python src/x.py`: the
            # checkout's src/x.py taken for the one in that folder)
            mapped = why if how == "workdir" or (workdir is None and _relative_program(facts)) else None
        if mapped is not None:
            from packlint import evidence

            # another machine's path taken as this checkout's file: an assumption where the ends of the paths name
            # the same folder too, the machine's where only the file name matches
            from packlint.codebase.workdir import SETUP_FOLDER

            kind = evidence.MACHINE if _name_only(facts) or mapped.endswith(SETUP_FOLDER) else evidence.ASSUMED
            evidence.note(self, (kind, mapped))
        return facts

    def bash_rejects(self) -> Any:
        return True if self._bash_rejects is None else self._bash_rejects()


def _relative_program(facts: Any) -> bool:
    program = str(getattr(facts.resolution, "program", None) or "")
    return bool(program) and not program.startswith(("/", "-m", "$"))


def _climbing_guess(program: str, file: str, script: str | None, root: str | None) -> str | None:
    """The premise of a `../x.py` program found other than where it names from the script's own directory."""
    import os

    if not script:
        return None
    here = os.path.dirname(os.path.abspath(script)).replace("\\", "/")
    named = os.path.normpath(os.path.join(here, program)).replace("\\", "/")
    if os.path.normpath(file).replace("\\", "/") == named:
        return None
    given = os.path.dirname(script)
    # `python "$(dirname "$0")/../train.py"`: the path starts with the script's folder as the script was named ($0),
    # so it names that folder from where the script was started, wherever that is
    from_start = given and not os.path.isabs(program) and program.startswith(given.rstrip("/") + "/")
    if from_start and os.path.normpath(os.path.abspath(program)) == os.path.normpath(os.path.abspath(file)):
        return None
    shown = os.path.relpath(file, root).replace("\\", "/") if root else ".../" + "/".join(file.split("/")[-3:])
    return (
        f"the launched program is {shown}, found by its name only: {program} from the script's own directory "
        "is not in the checkout, so the job must start in another directory"
    )


_EXISTS_TEST = LazyRegex(r"`\[\[?\s+(!\s+)?-[efd]\s+\"?\$\{?(\w+)\}?\"?\s*\]\]?`\s+is\s+(true|false)")


def _guard_contradicts(launch: Any, facts: Any) -> bool:
    """The launch runs only when a file under the machine folder of its program exists (`[[ ! -f "$SRC" ]] && exit`,
    SRC=$ROOT/backend_branches/...), and that file is not in the checkout the program was mapped to
    (maoulee/RelationRior: `/zhaoshu/subgraph/graph_server.py` taken for the checkout's graph_server.py): the guard
    says the machine's folder is another tree."""
    import os

    res = getattr(facts, "resolution", None)
    program, file, root = (getattr(res, k, None) or "" for k in ("program", "file", "root"))
    rel = os.path.relpath(file, root) if file and root else ""
    if not program.endswith(os.sep + rel) or rel.startswith(".."):
        return False
    prefix = program[: -len(rel)]  # the machine folder taken for the checkout's root (ends with a slash)
    values = {**(launch.get("unexported") or {}), **(launch.get("env") or {})}
    for cond in launch.get("when") or ():
        m = _EXISTS_TEST.search(str(cond))
        if m is None or (m.group(1) is not None) != (m.group(3) == "false"):
            continue  # (not "the file exists": `! -f X` false, or `-f X` true)
        v = values.get(m.group(2))
        path = v.get("value") if isinstance(v, dict) else None
        if (
            isinstance(path, str)
            and path.startswith(prefix)
            and not os.path.exists(os.path.join(root, path[len(prefix) :]))
        ):
            return True
    return False


def _absolute_guess(facts: Any) -> str | None:
    """What code found for an absolute program path of another machine rests on: mapped to the checkout's file by
    the end of the path (behroozazarkhalili/HF-TRL-Slurm: `/project/6014832/ermia/HF-TRL/.claude/skills/.../
    train_sft.py` is the checkout's .claude/skills/.../train_sft.py), that the author's folder is this checkout.
    None when the path is found as written, or mapped by the user (--path-map, --code-base)."""
    import os

    res = getattr(facts, "resolution", None)
    if res is None or getattr(res, "how", None) != "script-checkout":
        return None
    program = getattr(res, "program", None) or ""
    file = getattr(res, "file", None) or ""
    if not program.startswith("/") or not file or os.path.normpath(program) == os.path.normpath(file):
        return None
    root = getattr(res, "root", None)
    shown = os.path.relpath(file, root).replace("\\", "/") if root else file
    why = "only the file names match" if _name_only(facts) else "the ends of the two paths match"
    return f"the path {program} is this checkout's {shown} ({why})"


def _name_only(facts: Any) -> bool:
    """An absolute program path of another machine matched the checkout's file by its file name alone, and the
    folder above it in that path is not named as the checkout (duterscmy/JustGRPO: `/lus/.../dllm/pipelines/llada/
    eval.py`, another project's, taken for the checkout's top-level eval.py): nothing says that folder is this
    checkout; the machine decides."""
    import os

    res = getattr(facts, "resolution", None)
    program = str(getattr(res, "program", None) or "")
    file, root = (str(getattr(res, k, None) or "") for k in ("file", "root"))
    if not program.startswith("/") or not file or not root or os.path.dirname(os.path.relpath(file, root)):
        return False

    def norm(name: str) -> str:
        return name.lower().replace("-", "").replace("_", "").replace(".", "")

    above = os.path.basename(os.path.dirname(program.rstrip("/")))
    return norm(above) != norm(os.path.basename(root.rstrip("/")))


def _program_guess(facts: Any, script: str | None = None) -> str | None:
    """What code found for a relative program path that is not in the checkout as written rests on
    (`examples/detxoify_lm/finetune_gpt.py`, moved since: only a shorter suffix of it exists): that the file
    found is what the launch runs, where the path as written is the machine's. None when it was found as written.
    A path that climbs (`../preprocess_data.py`) is written from the directory the job starts in: found where it
    names from the script's own directory, it is as written; found elsewhere (another directory's file of that
    name: ramanathanlab/Megatron-DeepSpeed megatron/data/test/test_preprocess_data.sh, whose ../preprocess_data.py
    moved to the root), it rests on the machine's working directory."""
    res = getattr(facts, "resolution", None)
    if res is None or getattr(res, "how", None) != "script-checkout":
        return None
    program = (getattr(res, "program", None) or "").replace("\\", "/")
    file = (getattr(res, "file", None) or "").replace("\\", "/")
    if not program or program.startswith(("/", "-")) or not file:
        return None
    written = "/".join(p for p in program.split("/") if p and p not in (".",))
    if ".." in written.split("/"):
        return _climbing_guess(program, file, script, getattr(res, "root", None))
    if file.endswith("/" + written) or file == written:
        return None
    shown = "/".join(file.split("/")[-3:])
    return (
        f"the launched program is .../{shown} (the path as written, {program}, is not in the checkout; "
        "only its end matches)"
    )
