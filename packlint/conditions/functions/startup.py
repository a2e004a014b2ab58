"""Built-in functions over the program's own startup checks (issue 18): Megatron's `validate_args`
and what runs before it, read from the launched code (packlint.codebase.startup_checks) and evaluated
over the launch's known values.

The launch's values: every option of the program's flag schema, from the script's flags (the last
occurrence wins, argparse's conversion by the flag's type) or, when the script does not give it, the
schema's default. A flag's value is unknown when the script's word is unknown, when an argument
packlint cannot see may hold the flag, or when the default is not a literal. `WORLD_SIZE` is what the
launcher sets (torchrun, deepspeed, `python -m torch.distributed.run`): the launch's world size."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from packlint.caches import run_memo
from packlint.conditions.functions.core import _free_unknowns, _is_unk
from packlint.conditions.tree import BOOL, STR, Builtin, EvalContext, Function, Unk
from packlint.model_view import env_entry, launch_argv, launchers, parallel_size, parallel_sizes
from packlint.regex import BoundedRegex, LazyRegex, Undecided

if TYPE_CHECKING:
    from packlint.model_types import SizeJSON

# launchers that set WORLD_SIZE in every process they start
_SETS_WORLD_SIZE = ("torchrun", "deepspeed", "torch.distributed.run", "torch.distributed.launch")


def _facts(ctx: EvalContext) -> Any:
    try:
        facts = ctx.code_facts()
    except Exception:  # a reader bug must not take the check down
        return None
    return facts if facts is not None and facts.known else None


def startup_view(ctx: EvalContext) -> dict[str, Any] | None:
    """{'results': [...], 'patched': [...], 'startup': data} for this variant, or None when the
    launch's code or its validation was not found (memoised per variant)."""
    memo = ctx.memo
    if "startup_view" not in memo:
        memo["startup_view"] = _startup_view(ctx)
    elif memo["startup_view"] is not None:
        _facts(ctx)  # (what the code found rests on, another machine's path taken as this checkout's: a premise too)
    return memo["startup_view"]


def _startup_view(ctx: EvalContext) -> dict[str, Any] | None:
    facts = _facts(ctx)
    if facts is None or not getattr(facts, "startup", None):
        return None
    data = facts.startup
    view: dict[str, Any] = {"startup": data, "patched": list(data.get("patches") or []), "results": [], "skipped": None}
    if view["patched"]:
        view["skipped"] = "the launched code patches the validation or the parser"
        return view
    if facts.schema is None:
        view["skipped"] = "the program's parser was not read"
        return view
    flags = ctx.variant.get("flags", {})
    if any(not f.startswith("-") and "." in f for f in flags):
        view["skipped"] = "the launch configures the program with Hydra overrides"
        return view
    attrs = launch_attrs(ctx, facts.schema)
    env = {}
    world = _world(ctx)
    if world is not None:
        env["WORLD_SIZE"] = str(world)
    view["results"] = _evaluate(data, attrs, env)
    return view


# (the program's startup data, the launch's values) -> the results, for one check run (caches.run_memo):
# the launches of a repository's scripts run the same few programs with the same values again and again
_RUN_RESULTS = run_memo()
_ABSENT = "no flag of the program's parser sets it"


class _NoKey(Exception):
    pass


def _evaluate(data: dict[str, Any], attrs: dict[str, Any], env: dict[str, str]) -> list[dict[str, Any]]:
    """The startup checks' results over these values: evaluated once per distinct (program, values) in a run.
    The evaluator reads nothing but its arguments, so the same arguments give the same results."""
    from packlint.caches import IN_RUN
    from packlint.codebase.startup_checks import Evaluator, unknown

    key: tuple[Any, ...] | None = None
    if IN_RUN[0]:
        try:
            key = (id(data), tuple((k, _value_key(v)) for k, v in attrs.items()), tuple(env.items()))
        except _NoKey:
            key = None
        hit = _RUN_RESULTS.get(key) if key is not None else None
        if hit is not None and hit[0] is data:
            return hit[1]
    ev = Evaluator(data, attrs, env, unknown(_ABSENT))
    try:
        results = ev.run()
    except RecursionError:
        results = []
    if key is not None:
        _RUN_RESULTS[key] = (data, results)  # (data kept: its id stays its own while the entry lives)
    return results


def _value_key(v: Any) -> tuple[Any, ...]:
    """A value of the args namespace as a key that tells apart what `==` does not (True and 1, 0.0 and -0.0)."""
    from packlint.codebase.startup_checks import is_unknown

    t = type(v)
    if t is tuple:
        return ("tuple", *(_value_key(x) for x in v))
    if v is None or t in (str, int, bool):
        return (t.__name__, v)
    if t is float:
        return ("float", repr(v))
    if is_unknown(v):
        return ("?", v.why)
    raise _NoKey


def _world(ctx: EvalContext) -> int | None:
    names = launchers(ctx.launch, ctx.variant)
    env = env_entry(ctx.variant, "WORLD_SIZE")
    value = env.get("value") if isinstance(env, dict) and "unknown" not in env else None
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    if not any(any(k in str(lname) for k in _SETS_WORLD_SIZE) for lname in names):
        return None
    entry: SizeJSON = parallel_size(ctx.variant, ctx.launch, "world") or {}
    v = entry.get("value")
    if isinstance(v, int) and "unknown" not in entry and "range" not in entry and "values" not in entry:
        return v
    return None


def launch_attrs(ctx: EvalContext, schema: Any) -> dict[str, Any]:
    """The args namespace argparse would build for this launch: dest -> value or unknown."""
    from packlint.codebase.startup_checks import unknown

    given: dict[str, list[Any]] = {}
    stray: dict[str, str] = {}  # dest -> an option the parser does not define that may set it (an open parser)
    for opt, occs in ctx.variant.get("flags", {}).items():
        if not opt.startswith("-"):
            continue
        spec = schema.lookup(opt)
        if spec is None:
            if not schema.closed:  # (vLLM's FlexibleArgumentParser takes `--input_len` for `--input-len`)
                stray.setdefault(opt.lstrip("-").split("=", 1)[0].replace("-", "_"), opt)
            continue
        for i, occ in enumerate(occs):
            if occ is None:  # (a model not of the declared shape)
                continue  # type: ignore[unreachable]
            key = (occ.get("line") or 0, occ.get("column") or 0, i)
            given.setdefault(spec.dest, []).append((key, opt, occ, spec))
    hidden = _free_unknowns(ctx)
    argv = launch_argv(ctx.launch, ctx.variant) or []
    last_unknown = max((i for i, w in enumerate(argv) if isinstance(w, dict)), default=-1) if hidden else -1
    attrs: dict[str, Any] = {}
    for spec in schema.specs():
        dest = spec.dest
        if dest in attrs:
            continue
        if dest in given:
            kept = sorted(given[dest], key=lambda t: t[0])
            if hidden is not None and _last_index(argv, {o[1] for o in kept}) < last_unknown:
                # argparse keeps the last occurrence: a word packlint cannot see after it may repeat it
                attrs[dest] = unknown(f"{kept[-1][1]} may be given again by {hidden}")
                continue
            attrs[dest] = _given_value(kept)
        elif hidden is not None:
            attrs[dest] = unknown(f"{spec.options[0]} may be given by {hidden}")
        elif dest in stray:
            attrs[dest] = unknown(f"{stray[dest]}, an option the parser read does not define, may set {dest}")
        elif spec.condition:
            attrs[dest] = unknown(f"{spec.options[0]} is defined {spec.condition}")
        else:
            attrs[dest] = _default(spec)
    return attrs


_LITERAL_MEMO: dict[str, Any] = {}
_NOT_LITERAL = object()


def _last_index(argv: list[Any], options: set[str]) -> int:
    """The position of the last word of argv that is one of `options` (or `option=value`); -1 if none."""
    for i in range(len(argv) - 1, -1, -1):
        w = argv[i]
        if isinstance(w, str) and (w in options or w.split("=", 1)[0] in options):
            return i
    return -1


def _default(spec: Any) -> Any:
    from packlint.codebase.startup_checks import unknown

    text = spec.default
    if text is None:
        return {"store_true": False, "store_false": True}.get(spec.action)
    value = _LITERAL_MEMO.get(text, _LITERAL_MEMO)
    if value is _LITERAL_MEMO:
        try:
            import ast  # (2 ms: only for a launch whose program's startup checks are evaluated)

            value = _freeze(ast.literal_eval(text))
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            value = _NOT_LITERAL
        _LITERAL_MEMO[text] = value
    if value is _NOT_LITERAL:
        return unknown(f"the default of {spec.options[0]} is {text}, which packlint does not evaluate")
    return value


def _freeze(v: Any) -> Any:
    return tuple(_freeze(x) for x in v) if isinstance(v, list) else v


def _convert(spec: Any, word: Any) -> Any:
    from packlint.codebase.startup_checks import unknown

    if not isinstance(word, str):
        return unknown(f"the value of {spec.options[0]} is not known")
    t = spec.type or "str"
    try:
        if t == "int":
            return int(word)
        if t == "float":
            return float(word)
    except ValueError:
        return unknown(f"{word!r} is not a valid {t} for {spec.options[0]}")
    if t == "str":
        return word
    return unknown(f"{spec.options[0]} converts its value with {t}")


def is_unknown_value(v: Any) -> bool:
    from packlint.codebase.startup_checks import is_unknown

    return is_unknown(v)


def _given_value(occs: list[Any]) -> Any:
    from packlint.codebase.startup_checks import unknown

    _, opt, occ, spec = occs[-1]
    action = spec.action
    if "unknown" in occ:
        return unknown(f"the value of {opt} is {occ['unknown']}")
    if action == "store_true":
        return True
    if action == "store_false":
        return False
    if action == "BooleanOptionalAction":
        return not opt.startswith("--no-")
    if action == "count":
        return len(occs)
    if action not in ("store", "append", "extend"):
        return unknown(f"{opt} has the action {action}")
    out = []
    for _, o, oc, sp in occs if action in ("append", "extend") else occs[-1:]:
        v = oc.get("value")
        words = None if v is True or v is None else (v if isinstance(v, list) else [v])
        if words is None:
            return unknown(f"{o} is given without a value")
        vals = [_convert(sp, w if isinstance(w, str) else None) for w in words]
        if sp.nargs is None and action == "store":
            if len(vals) != 1:
                return unknown(f"{o} is given {len(vals)} words")
            return vals[0]
        out.append(tuple(vals) if sp.nargs is not None else vals[0])
    if action == "store":
        return out[-1]
    start = _default(spec)  # argparse appends to (a copy of) the default list
    if is_unknown_value(start):
        return start
    prefix = tuple(start) if isinstance(start, (tuple, list)) else ()
    return prefix + tuple(x for item in out for x in (item if action == "extend" else (item,)))


def _results(ctx: EvalContext) -> list[dict[str, Any]]:
    view = startup_view(ctx)
    return view["results"] if view else []


def check_id(r: dict[str, Any]) -> str:
    return f"{r['file']}:{r['line']}"


def startup_items(ctx: EvalContext) -> list[str]:
    """The ids (file:line) of the checks that certainly fail in this variant (for_each = startup_checks)."""
    return sorted({check_id(r) for r in _results(ctx) if r["status"] == "fails"})


def _result(ctx: EvalContext, ident: Any) -> Any:
    if _is_unk(ident):
        return ident
    for r in _results(ctx):
        if check_id(r) == ident and r["status"] == "fails":
            return r
    return Unk(f"no failing startup check at {ident}", "absent")


def _f_fails(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    r = _result(ctx, a[0])
    return r if isinstance(r, Unk) and r.kind != "absent" else not isinstance(r, Unk)


def _f_message(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    r = _result(ctx, a[0])
    if isinstance(r, Unk):
        return r
    if r["kind"] == "assert":
        head = f"asserts `{r['test']}`"
        msg = r.get("message")
        return f"{head}: {msg!r}" if msg else head
    msg = r.get("message")
    if msg == "exit()":
        return "calls exit() (status 0, before the first iteration)"
    return f"raises {msg!r}" if msg else "raises"


def _f_where(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    r = _result(ctx, a[0])
    if isinstance(r, Unk):
        return r
    from packlint.codebase.startup_checks import _short

    return f"{_short(r['file'])}:{r['line']}"


def _f_values(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    r = _result(ctx, a[0])
    if isinstance(r, Unk):
        return r
    vals = r.get("values") or {}
    if not vals:
        guards = r.get("guards") or []
        return f"reached because {' and '.join(guards)}" if guards else "reached on every launch"
    return ", ".join(f"{k} = {v!r}" for k, v in vals.items())


def _f_flag(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """The flag as written in the script that sets the first value the check reads (to point at)."""
    r = _result(ctx, a[0])
    if isinstance(r, Unk):
        return r
    facts = _facts(ctx)
    schema = facts.schema if facts is not None else None
    if schema is None:
        return Unk("no schema", "absent")
    dests = [k.split(".", 1)[1] for k in (r.get("values") or {}) if k.startswith("args.")]
    flags = ctx.variant.get("flags", {})
    for dest in dests:
        for opt in flags:
            spec = schema.lookup(opt) if opt.startswith("-") else None
            if spec is not None and spec.dest == dest:
                return opt
    return Unk("no flag of the script sets what the check reads", "absent")


def _guard_attrs(texts: list[str]) -> set[str]:
    import ast

    out: set[str] = set()
    for t in texts:
        try:
            tree = ast.parse(t, mode="eval")
        except SyntaxError:
            out.add("?")
            continue
        for sub in ast.walk(tree):
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name):
                out.add(sub.attr)
    return out


_UPSTREAM: list[Any] = []


def _upstream_dests() -> set[str] | None:
    """The destinations of upstream Megatron-LM's flags (the newest release snapshot), once per process."""
    if not _UPSTREAM:
        from packlint.codebase.snapshots import snapshot_for

        snap = snapshot_for("pretrain_gpt.py", None)
        _UPSTREAM.append(None if snap is None else {s.dest for s in snap.schema.specs()})
    return _UPSTREAM[0]


_PATTERN_MEMO: dict[str, BoundedRegex] = {}


def _f_code_checks(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """Whether the launched code still makes the check a hand-written rule stands for (a regex over
    the check's test and message).

    True: the code was not found or its validation was not read (the rule's release-snapshot
    semantics apply), or the code makes such a check and the evaluator could not decide it while every
    condition on the way to it reads only settings upstream Megatron-LM has (the rule models those).
    False: the code makes no such check (a fork removed or replaced it), or the evaluator decided it:
    it passes, is not reached, or fails (then PK330 reports it with the code's own message, and the
    rule does not repeat it). Undecided: the launched code patches the validation, or the check sits
    behind a condition on a setting upstream does not have (a fork's own flag)."""
    if _is_unk(a[0]):
        return a[0]
    if bridge_launch(ctx):
        return Unk(
            "a Megatron-Bridge launch: Bridge builds and validates a ConfigContainer (recipe, YAML, overrides), "
            "Megatron-LM's validate_args does not check it",
            "unknown",
        )
    view = startup_view(ctx)
    if view is None:
        return _no_validation(ctx)
    if view["skipped"] is not None and view["patched"]:
        p = view["patched"][0]
        from packlint.codebase.startup_checks import _short

        return Unk(f"{_short(p['file'])}:{p['line']} {p['what']}", "unknown")
    pat = _PATTERN_MEMO.setdefault(a[0], BoundedRegex(a[0]))  # the rule's pattern: bounded (regex_guard)
    exclude = None
    if len(a) > 1 and a[1]:
        if _is_unk(a[1]):
            return a[1]
        exclude = _PATTERN_MEMO.setdefault(a[1], BoundedRegex(a[1]))
    data = view["startup"]
    try:
        matching = _matching_checks(data, pat, exclude)
    except Undecided as exc:
        return Unk(f"the code's checks: {exc}", "unknown")
    if not matching:
        return False
    if view["skipped"] is not None:
        return True  # no schema / Hydra: the rule's own modelling decides
    if any(m.startswith("set:") for m in matching):
        return True  # an assignment the rule stands for (PK310): the evaluator does not report those
    results = {check_id(r): r for r in view["results"]}
    undecided = None
    for ident in matching:
        r = results.get(ident)
        if r is None:
            continue  # not reached: an earlier branch skipped it
        if r["status"] == "undecided":
            undecided = r
    if undecided is None:
        return False
    upstream = _upstream_dests()
    gattrs = _guard_attrs([g for g in undecided.get("guards") or [] if g != "a loop or try block"])
    if upstream is not None and gattrs <= upstream and "a loop or try block" not in (undecided.get("guards") or []):
        return True
    return Unk(f"the code's check at {check_id(undecided)} sits behind {' and '.join(undecided['guards'])}", "unknown")


def _no_validation(ctx: EvalContext) -> Any:
    """code_checks when no validation was read: true without code (the rule's release semantics);
    true when the program imports `megatron` from outside the code base (an installed Megatron-LM:
    its checks are the release's); false when the launched code was read whole and validates nothing
    (a program with its own parser that is not Megatron's: a DeepSpeed or Hugging Face trainer that
    happens to take --micro-batch-size and --save)."""
    facts = _facts(ctx)
    if facts is None or not facts.known:
        # issue 26: upstream Megatron-LM's checks stand for upstream code only; a fork's program whose code
        # is not at hand is undecided (PK206 says so once per script)
        from packlint.conditions.functions.codebase_common import megatron_fork

        why = megatron_fork(ctx)
        if why is not None:
            why = f"not upstream Megatron-LM ({why}) and its code is not at hand: upstream's checks may not be its"
            return Unk(why, "unknown")
        from packlint import evidence

        evidence.note(ctx, (evidence.ASSUMED, evidence.UPSTREAM_MEGATRON))  # (the rule's release semantics)
        return True
    if facts.schema is None:
        # the program's parser was not read: Megatron's only where the program imports an installed `megatron`
        # (LorrinWWW/Quick_Deployment_HELM's serving_dist_glm.py parses with SwissArmyTransformer's get_args, whose
        # --model-parallel-size is live)
        if "megatron" in (facts.unresolved_imports or []):
            old = _pre_core_import(facts)
            if old is not None:
                why = f"the program imports {old}, a Megatron-LM older than every release packlint models"
                return Unk(why, "unknown")
            from packlint import evidence

            evidence.note(ctx, (evidence.ASSUMED, evidence.UPSTREAM_MEGATRON))
            return True
        return Unk("the program's parser was not read, and the program does not import Megatron-LM", "unknown")
    old = _pre_core_megatron(facts)
    if old is not None:
        # YaLM-100B vendors Megatron-LM 1.1.5: `--model-parallel-size` and `--checkpoint-activations` are its
        # current flags; the release checks the rules model came years later
        return Unk(f"the launched code is Megatron-LM {old}, older than every release packlint models", "unknown")
    # an installed `megatron` the closure imports validates the launch's arguments only when its parser parses them:
    # a program whose own parser packlint read whole (DeepSpeedExamples' 2019 Megatron-LM layout, `from arguments
    # import get_args`, with DeepSpeed's code importing megatron elsewhere) is not checked by it
    own_parser = bool(getattr(facts.schema, "closed", False))
    return ("megatron" in (facts.unresolved_imports or []) and not own_parser) or bool(facts.skipped)


# modules of Megatron-LM's layout before Megatron-Core moved them (megatron/schedules.py, megatron/mpu/, ...: gone
# from every release packlint has snapshots of), and names its old `megatron/__init__.py` exported
_OLD_LAYOUT = re.compile(
    r"^[ \t]*(?:from[ \t]+(megatron\.(?:schedules|mpu|arguments|initialize|global_vars|checkpointing|model|"
    r"p2p_communication|microbatches|memory|optimizer_param_scheduler|text_generation_utils|timers))\b"
    r"|from[ \t]+megatron[ \t]+import[ \t]+[^\n]*?\b(mpu|get_args|print_rank_0|get_timers|get_tokenizer)\b)",
    re.M,
)


def _pre_core_import(facts: Any) -> str | None:
    """`megatron.schedules` (or another module of the old layout) when the launched program imports one from a
    Megatron-LM outside the checkout (DS3Lab/Decentralized_FM_alpha: `sys.path.append('../Megatron-LM')`, then
    `from megatron.schedules import ...`): that Megatron predates every snapshot release."""
    path = getattr(getattr(facts, "resolution", None), "file", None)
    if not path:
        return None
    from packlint.configs.versions import _read_small

    m = _OLD_LAYOUT.search(_read_small(path) or "")
    if m is None:
        return None
    return m.group(1) or f"megatron's {m.group(2)}"


def _pre_core_megatron(facts: Any) -> str | None:
    """The version of a Megatron-LM from before Megatron-Core (no `megatron/core/`, a `megatron/package_info.py`
    of its own: `MAJOR = 1`, `MINOR = 1.5`) that the launched program's root holds, or None."""
    import os

    root = getattr(getattr(facts, "resolution", None), "root", None)
    if not root or os.path.isdir(os.path.join(root, "megatron", "core")):
        return None
    path = os.path.join(root, "megatron", "package_info.py")
    if not os.path.isfile(path):
        return None
    from packlint.configs.versions import _read_small

    text = _read_small(path) or ""
    major = re.search(r"^\s*MAJOR\s*=\s*(\d+)", text, re.M)
    minor = re.search(r"^\s*MINOR\s*=\s*([0-9][0-9.]*)", text, re.M)
    if major is None:
        return None
    return f"{major.group(1)}.{minor.group(1)}" if minor else major.group(1)


def _matching_checks(data: dict[str, Any], pat: BoundedRegex, exclude: BoundedRegex | None = None) -> list[str]:
    """The ids of the checks (and assignments) the pattern matches; with `exclude`, a check inside an
    `if` branch whose condition (`TEST`, or `not (TEST)` for the else branch) the pattern matches is left
    out: it stands for a case the rule does not model (PK308's even split vs an interleaved-only check)."""
    out: list[str] = []

    def walk(steps: list[Any]) -> None:
        for s in steps:
            k = s[0]
            if k == "if" and exclude is not None:
                if not exclude.search(s[3]):
                    for sub in s[4]:
                        if sub[0] == "raise" and pat.search(f"{s[3]} {sub[3] or ''}"):
                            out.append(f"{sub[1]}:{sub[2]}")
                    walk(s[4])
                if not exclude.search(f"not ({s[3]})"):
                    walk(s[5])
                continue
            if k == "assert":
                if pat.search(f"{s[3]} {s[4] or ''}"):
                    out.append(f"{s[1]}:{s[2]}")
            elif k == "raise":
                if pat.search(s[3] or ""):
                    out.append(f"{s[1]}:{s[2]}")
            elif k == "set":
                if pat.search(f"args.{s[3]} = {s[4]}"):
                    out.append(f"set:{s[1]}:{s[2]}")
            elif k == "if":
                # a raise's condition is its guard: match on it too
                for sub in s[4]:
                    if sub[0] == "raise" and pat.search(f"{s[3]} {sub[3] or ''}"):
                        out.append(f"{sub[1]}:{sub[2]}")
                walk(s[4])
                walk(s[5])
            elif k == "opaque":
                walk(s[3])

    walk(data.get("prelude", []))
    walk(data.get("body", []))
    return list(dict.fromkeys(out))


def _f_patched(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    view = startup_view(ctx)
    if view is None or not view["patched"]:
        return Unk("no patch of the validation", "absent")
    from packlint.codebase.startup_checks import _short

    p = view["patched"][0]
    more = f" (and {len(view['patched']) - 1} more)" if len(view["patched"]) > 1 else ""
    return f"{_short(p['file'])}:{p['line']} {p['what']}{more}"


def _f_validation(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    view = startup_view(ctx)
    if view is None:
        return Unk("no validation read", "absent")
    from packlint.codebase.startup_checks import _short

    v = view["startup"].get("validate")
    if not v:
        return "validate_args (not in the code base)"
    return f"{v['name']} ({_short(v['file'])}:{v['line']})"


def bridge_launch(ctx: EvalContext) -> bool:
    """The launch configures Megatron-Bridge (its stack, or Hydra-style `section.key=value` overrides)."""
    from packlint.model_view import variant_config

    cfg = variant_config(ctx.variant)
    if cfg is not None and cfg.get("stack") == "megatron-bridge":
        return True
    return any(not f.startswith("-") and "." in f for f in ctx.variant.get("flags", {}))


def _f_may_be_given(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """`setting_given`, three-valued: when the script does not give the setting but an argument
    packlint cannot see may (`$(cat extra_args.txt)`), undecided rather than "not given" (issue 18:
    PK312 fired a certain error from an unknown value)."""
    from packlint.conditions.functions.derived import _setting_occurrence

    if _setting_occurrence(ctx, node.static) is not None:
        return True
    hidden = _free_unknowns(ctx)
    if hidden is not None:
        return Unk(f"{node.static.flags[0]} may be given by {hidden}", "unknown")
    from packlint.conditions.functions.derived import _from_checkpoint

    from_checkpoint = _from_checkpoint(ctx, node.static)  # (`--use-checkpoint-args`: the checkpoint's args)
    if from_checkpoint is not None:
        return from_checkpoint
    bridge_keys = [f for f in node.static.flags if not f.startswith("-") and "." in f]
    if bridge_keys and bridge_launch(ctx):
        # Megatron-Bridge: the recipe sets what no override (nor the YAML) gives (issue 27: merged as Bridge does)
        from packlint.conditions.functions.derived import _bridge_file_value

        if _bridge_file_value(ctx, node.static) is not None:
            return True
        return Unk(f"{bridge_keys[0]} is not overridden: the recipe's config decides it", "unknown")
    return False


_HETERO_SCRIPT = LazyRegex(r"^\s*#SBATCH\s+(hetjob|packjob)\b|--(het|pack)-group\b|\bhetjob\b", re.M)
_NODE_IDENTITY = LazyRegex(
    r"\b(NODE_RANK|NODE_ID|NODEID|SLURM_NODEID|SLURM_PROCID|PMI_RANK|OMPI_COMM_WORLD_RANK|RANK|HOSTNAME|"
    r"hostname|node_rank|MASTER_ADDR|POD_NAME|INDEX)\b"
)
_HETERO_WORDS = ("hetjob", "packjob", "het-group", "pack-group")
_HETERO_MEMO: dict[str, bool] = {}


def _f_heterogeneous_job(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """Undecided when the job's nodes may run different process counts (PK301: heterogeneous jobs are
    not errors): a Slurm heterogeneous job (`#SBATCH hetjob`, `--het-group`), or processes per node /
    nodes that differ between branches decided by which node runs the script (`NODE_RANK`, the host
    name: a cloud/edge split). False otherwise."""
    files = [ctx.model.get("script")] + [f for f in ctx.model.get("files", []) if isinstance(f, str)]
    for f in files:
        if not f:
            continue
        if f not in _HETERO_MEMO:
            from packlint.safe_io import read_regular
            from packlint.source import MAX_SCRIPT_BYTES

            data = read_regular(f, MAX_SCRIPT_BYTES)
            text = data.decode("utf-8", "replace") if data is not None else ""
            # (each branch of the pattern holds one of these words: the search, tried at every character, runs
            # only on the rare script that has one)
            _HETERO_MEMO[f] = any(w in text for w in _HETERO_WORDS) and _HETERO_SCRIPT.search(text) is not None
        if _HETERO_MEMO[f]:
            return Unk("a Slurm heterogeneous job: the world is the sum of its components", "unknown")
    variants = ctx.launch.get("variants") or []
    if len(variants) > 1:
        counts = set()
        for v in variants:
            sizes = v.get("parallel") or {}
            counts.add(tuple((sizes.get(k) or {}).get("value") for k in ("nodes", "procs_per_node")))
        whens = " ".join(str(w) for v in variants for w in (v.get("when") or []))
        if len(counts) > 1 and _NODE_IDENTITY.search(whens):
            return Unk("the process count depends on which node runs the script (heterogeneous nodes)", "unknown")
    par = parallel_sizes(ctx.launch, ctx.variant)
    if "values" in (par.get("procs_per_node") or {}) or "values" in (par.get("nodes") or {}):
        whens = " ".join(str(w) for w in (ctx.launch.get("when") or []))
        if _NODE_IDENTITY.search(whens):
            return Unk("the process count depends on which node runs the script (heterogeneous nodes)", "unknown")
    return False


def _compile_setting(args: list[Any], scope: Any) -> Any:
    from packlint.conditions.functions.derived import _compile_setting as compile_setting

    return compile_setting(args, scope)


STARTUP_FUNCTIONS: dict[str, Function] = {
    "heterogeneous_job": Function(
        (),
        (),
        BOOL,
        _f_heterogeneous_job,
        "undecided when the job's nodes may run different process counts (Slurm hetjob / --het-group, "
        "per-node counts chosen by node rank or host name); false otherwise",
    ),
    "may_be_given": Function(
        (STR,),
        (),
        BOOL,
        _f_may_be_given,
        "the script gives the setting (true), or an argument packlint cannot see may give it "
        "(undecided); false only when neither",
        literal=(0,),
        compile_static=_compile_setting,
        scoped=True,
    ),
    "startup_check_fails": Function(
        (STR,), (), BOOL, _f_fails, "the program's startup check at file:line certainly fails for this launch"
    ),
    "startup_check_message": Function(
        (STR,), (), STR, _f_message, "what the failing check asserts or raises, with the code's own message"
    ),
    "startup_check_where": Function((STR,), (), STR, _f_where, "the failing check's file:line (for messages)"),
    "startup_check_values": Function(
        (STR,), (), STR, _f_values, "the known values the failing check read (args.x = 1, ...)"
    ),
    "startup_check_flag": Function(
        (STR,), (), STR, _f_flag, "the script's flag that sets the first value the failing check read"
    ),
    "startup_validation": Function(
        (), (), STR, _f_validation, "the validation function read from the launched code (name and file:line)"
    ),
    "startup_patched": Function(
        (), (), STR, _f_patched, "where the launched code patches its validation or parser (absent: nowhere)"
    ),
    "code_checks": Function(
        (STR,),
        (STR,),
        BOOL,
        _f_code_checks,
        "the launched code still makes the check a hand-written rule stands for (a regex over the "
        "check's test and message); true without code; false when the code dropped it or the "
        "startup-check evaluator decided it; the optional second regex leaves out checks inside an `if` "
        "branch whose condition it matches (a case the rule does not model)",
    ),
}
