"""DeepSpeed batch arithmetic and HF Trainer's DeepSpeed cross-check (issue 20), over the launch's
`deepspeed` config section and its merged settings. Both need no stack knowledge beyond the table.

- `deepspeed_batch(part)`: train / micro / accum / dp as DeepSpeed computes them at startup
  (deepspeedai/DeepSpeed@edaa722126:deepspeed/runtime/config.py:925-985 `_set_batch_related_parameters`:
  with two of the three given the third is derived by floor division, then
  `assert train_batch == micro_batch * grad_acc * world_size`), with `"auto"` filled as HF Trainer
  fills it (transformers 5.24 src/transformers/integrations/deepspeed.py `trainer_config_process`:
  micro <- per_device_train_batch_size, accumulation <- gradient_accumulation_steps, train <- world
  size x both).
- `hf_deepspeed_mismatch()`: the `fill_match` checks of `trainer_config_process` that raise in
  `trainer_config_finalize` ("Please correct the following DeepSpeed config values that mismatch
  TrainingArguments values"): a hard-coded DeepSpeed value that differs from the TrainingArguments
  value the launch gives.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from packlint.caches import run_memo
from packlint.conditions.tree import INT, STR, Builtin, EvalContext, Function, NameLookupError, Unk
from packlint.model_view import config_settings, config_stack, parallel_size, section_unknown, variant_config

if TYPE_CHECKING:
    from packlint.model_types import ConfigJSON, SettingJSON

# stacks whose program runs HF Trainer with the DeepSpeed config (auto values filled from TrainingArguments)
HF_TRAINER_STACKS = {"hf-trainer", "llamafactory", "trl", "axolotl", "swift", "internvl"}
# TrainingArguments names under another key in a stack's own config
ALIASES = {"axolotl": {"per_device_train_batch_size": "micro_batch_size"}}
# fill_match(ds_key, hf value, hf name) in trainer_config_process, in its order (must_match=True ones)
FILL_MATCH: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("train_micro_batch_size_per_gpu", ("per_device_train_batch_size",), "per_device_train_batch_size"),
    ("gradient_accumulation_steps", ("gradient_accumulation_steps",), "gradient_accumulation_steps"),
    ("train_batch_size", ("*train_batch_size",), "train_batch_size (calculated)"),
    ("gradient_clipping", ("max_grad_norm",), "max_grad_norm"),
    ("optimizer.params.lr", ("learning_rate",), "learning_rate"),
    ("optimizer.params.betas", ("adam_beta1", "adam_beta2"), "adam_beta1+adam_beta2"),
    ("optimizer.params.eps", ("adam_epsilon",), "adam_epsilon"),
    ("optimizer.params.weight_decay", ("weight_decay",), "weight_decay"),
    ("scheduler.params.warmup_max_lr", ("learning_rate",), "learning_rate"),
    ("fp16.enabled", ("fp16",), "fp16|fp16_full_eval"),
    ("bf16.enabled", ("bf16",), "bf16|bf16_full_eval"),
)
PARTS = ("train", "micro", "accum", "dp")


def _config(ctx: EvalContext) -> ConfigJSON | None:
    return variant_config(ctx.variant)


def _ds(ctx: EvalContext) -> dict[str, SettingJSON] | Unk:
    cfg = _config(ctx)
    if not cfg:
        return Unk("the launch has no DeepSpeed config", "absent")
    unknown = section_unknown(cfg, "deepspeed")
    if unknown:
        return Unk(f"the DeepSpeed config could not be read ({unknown})", "unknown")
    ds = config_settings(cfg, "deepspeed")
    if ds is None:
        return Unk("the launch has no DeepSpeed config", "absent")
    return ds


def _hf_setting(ctx: EvalContext, name: str) -> Any:
    """A TrainingArguments value the launch gives (config file or flag), typed loosely; Unk absent when
    not given (the program's dataclass default is not assumed: a script may subclass it)."""
    cfg = _config(ctx)
    key = ALIASES.get(config_stack(cfg) or "", {}).get(name, name)
    entry = ((config_settings(cfg) if cfg else None) or {}).get(key)
    if entry is None:
        return Unk(f"{name} is not given", "absent")
    if "unknown" in entry:
        return Unk(f"{key} is unknown ({entry['unknown']})", "unknown")
    return entry.get("value")


def _as_int(v: Any, what: str) -> int | Unk:
    if isinstance(v, Unk):
        return v
    if isinstance(v, bool):
        return Unk(f"{what} is not an integer", "invalid")
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        try:
            return int(v.strip())
        except ValueError:
            return Unk(f"{what} {v!r} is not an integer", "invalid")
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return Unk(f"{what} {v!r} is not an integer", "invalid")


def _world(ctx: EvalContext) -> int | Unk:
    entry = parallel_size(ctx.variant, ctx.launch, "world")
    value = entry.get("value") if entry else None
    if value is None:
        reason = (entry or {}).get("unknown", "not known")
        return Unk(
            f"the world size is unknown ({reason})", "absent" if (entry or {}).get("not_in_script") else "unknown"
        )
    return int(value)


def _world_multiple(ctx: EvalContext) -> int | None:
    """m when the world size is unknown but a multiple of m (`deepspeed --num_gpus 8` on a hostfile's k hosts);
    1 when nothing is known of it but that it is a number of processes (a bare `deepspeed train.py`: every
    GPU of every host of the hostfile), so that numbers no data-parallel size can reconcile are decided."""
    entry = parallel_size(ctx.variant, ctx.launch, "world")
    if entry is None or entry.get("value") is not None:
        return None
    m = entry.get("multiple_of")
    return m if isinstance(m, int) and m > 1 else 1


def _model_parallel(ctx: EvalContext) -> int | Unk:
    """TP x PP x CP of a Megatron(-DeepSpeed) launch (1 where its flags leave them at Megatron's default): the
    engine gets Megatron's mpu (or the PipelineModule's topology), so DeepSpeed's data-parallel size is the
    world divided by it (idriscnrs/JZ-Megatron-DeepSpeed: 1024 processes at TP 4 x PP 16 are 16 replicas)."""
    product = 1
    for key in ("tp", "pp", "cp"):
        entry = parallel_size(ctx.variant, ctx.launch, key) or {}
        if not str(entry.get("source", "")).startswith("-"):
            continue  # not given by a flag of the launch (an HF Trainer launch, `$@` words): no model split
        value = entry.get("value")
        if value is None:
            why = entry.get("unknown", "not known")
            return Unk(f"the model-parallel size {key} is unknown ({why}): DeepSpeed's data-parallel size is not known")
        product *= int(value)
    return product


def _split(ctx: EvalContext) -> int | Unk:
    """The model split DeepSpeed divides the world by: the launch's TP x PP x CP flags, else the split the launched
    code makes (a PipelineModule's stages, _code_topology)."""
    product = _model_parallel(ctx)
    if isinstance(product, Unk) or product > 1:
        return product
    split = _code_topology(ctx)
    if isinstance(split, str):
        return Unk(split, "unknown")
    return split if split is not None else product


def _data_parallel(ctx: EvalContext, world: int | Unk) -> int | Unk:
    product = _split(ctx)
    if isinstance(product, Unk):
        return product
    if product <= 1 or isinstance(world, Unk):
        return world
    if world % product:
        return Unk(f"the world size {world} is not divisible by TP x PP x CP = {product}", "unknown")
    return world // product


# (a subclass counts: Gezy777/distributed_train's `class MyCustomPipelineModule(PipelineModule)`)
_TOPOLOGY = re.compile(r"\w*PipelineModule\s*\(|\bPipeModelDataParallelTopology\s*\(|\bmpu\s*=\s*(?!None\b)\w")
_STAGES = re.compile(r"\bnum_stages\s*=\s*(?:(\d+)|\w+\.(\w+))\s*[,)]")


def _code_topology(ctx: EvalContext) -> int | str | None:
    """The model split the launched code gives DeepSpeed where the launch's flags show none: a PipelineModule's
    `num_stages` (a number, or an option of the program's parser: DeepSpeedExamples' `num_stages=
    args.pipeline_parallel_size` with `-p 2`), which divides the world before the data-parallel size; why it is not
    known (a topology or an `mpu=` packlint does not read, a stage count it cannot tell: Gezy777/distributed_train's
    2 stages on 2 GPUs are one data-parallel replica); None where the code gives no split."""
    import os

    from packlint.conditions.functions.codebase_common import _code, _script_text

    facts = _code(ctx)
    if facts is None or not facts.known:
        return None
    for file in dict.fromkeys(f for f in [facts.resolution.file, *facts.files][:64] if isinstance(f, str)):
        text = _script_text(file)
        m = _TOPOLOGY.search(text)
        if m is None:
            continue
        if "PipelineModule" in m.group(0):
            stages = _STAGES.search(text)  # (the stage count given where the module is made)
            n = _stage_count(ctx, stages) if stages is not None else None
            if n is not None:
                return n
        line = text.count("\n", 0, m.start()) + 1
        return (
            f"the code splits the model for DeepSpeed ({os.path.basename(file)}:{line}: `{m.group(0).strip()}`): "
            "its data-parallel size is the world divided by that split"
        )
    return None


def _stage_count(ctx: EvalContext, stages: re.Match[str]) -> int | None:
    """A PipelineModule's `num_stages`: the number written, or the value of the parser option it is read from (the
    launch's last one, else the option's default)."""
    from packlint.conditions.functions.codebase_common import _schema_view

    if stages.group(1):
        return int(stages.group(1)) or None
    schema = _schema_view(ctx)[0]
    spec = next((s for s in schema.specs() if s.dest == stages.group(2)), None) if schema is not None else None
    if spec is None:
        return None
    flags = ctx.variant.get("flags") or {}
    occs = [o for opt in spec.options for o in flags.get(opt) or ()]
    value = occs[-1].get("value") if occs and isinstance(occs[-1], dict) else spec.default
    return int(value) if isinstance(value, str) and value.isdigit() and int(value) > 0 else None


MAX_HOSTS = 4096  # members 8·k tried for k up to here (a larger k leaves every batch number below 1)


def _derive(t: int | None, m: int | None, g: int | None, dp: int) -> tuple[int, int, int] | None:
    """DeepSpeed's _set_batch_related_parameters for one data-parallel size: (train, micro, accum)."""
    if t is not None and m is not None and g is None:
        g = t // m // dp if m > 0 else None
    elif t is not None and g is not None and m is None:
        m = t // dp // g if g > 0 else None
    elif m is not None and g is not None and t is None:
        t = m * g * dp
    elif t is not None and m is None and g is None:
        g, m = 1, t // dp
    elif m is not None and t is None and g is None:
        g, t = 1, m * dp
    if t is None or m is None or g is None:
        return None
    return t, m, g


def _batch_over_multiples(t: Any, m: Any, g: Any, multiple: int) -> dict[str, int | Unk] | Unk:
    """The world size is multiple·k for an unknown k: decided when DeepSpeed's assertion fails for every
    k (the first member is reported), undecided when some k passes (issue 27: sizes as sets)."""
    vals = [None if isinstance(x, Unk) else x for x in (t, m, g)]
    if any(isinstance(x, Unk) and x.kind != "absent" for x in (t, m, g)) or all(v is None for v in vals):
        return Unk("the world size is unknown", "unknown")
    top = max(v for v in vals if v is not None)
    first = None
    for k in range(1, min(top // multiple + 1, MAX_HOSTS) + 1):
        dp = multiple * k
        got = _derive(vals[0], vals[1], vals[2], dp)
        if got is None:
            return Unk("DeepSpeed needs train_batch_size or train_micro_batch_size_per_gpu", "absent")
        if got[1] > 0 and got[2] > 0 and got[0] == got[1] * got[2] * dp:
            hosts = f" ({k} hosts of {multiple})" if multiple > 1 else ""
            return Unk(f"the batch adds up with {dp} processes{hosts}; the process count is unknown")
        first = first or {"train": got[0], "micro": got[1], "accum": got[2], "dp": dp}
    if first is None:
        return Unk("the world size is unknown", "unknown")
    return {**first, "dp_multiple": multiple}


def _batch(ctx: EvalContext) -> dict[str, int | Unk] | Unk:
    memo = ctx.memo
    if "deepspeed_batch" in memo:
        return memo["deepspeed_batch"]
    out = _compute_batch(ctx)
    memo["deepspeed_batch"] = out
    return out


def _compute_batch(ctx: EvalContext) -> dict[str, int | Unk] | Unk:
    ds = _ds(ctx)
    if isinstance(ds, Unk):
        return ds
    hf = config_stack(_config(ctx)) in HF_TRAINER_STACKS
    world = _world(ctx)
    dp: int | Unk = _data_parallel(ctx, world)
    sp = ds.get("sequence_parallel_size")
    if sp is not None and sp.get("value") not in (None, 1):
        dp = Unk("DeepSpeed sequence parallelism divides the data-parallel size", "unknown")

    def given(key: str) -> Any:
        e = ds.get(key)
        if e is None:
            return None
        if "unknown" in e:
            return Unk(f"deepspeed {key} is unknown", "unknown")
        return e.get("value")

    raw = {
        "train": given("train_batch_size"),
        "micro": given("train_micro_batch_size_per_gpu"),
        "accum": given("gradient_accumulation_steps"),
    }
    hf_micro = _as_int(_hf_setting(ctx, "per_device_train_batch_size"), "per_device_train_batch_size")
    hf_accum = _as_int(_hf_setting(ctx, "gradient_accumulation_steps"), "gradient_accumulation_steps")
    vals: dict[str, Any] = {}
    for part, v in raw.items():
        if v == "auto":
            if not hf:
                return Unk(f"deepspeed {part} batch is 'auto' and no HF Trainer fills it", "unknown")
            if part == "micro":
                v = hf_micro
            elif part == "accum":
                v = hf_accum
            else:
                parts = [world, hf_micro, hf_accum]
                bad = next((p for p in parts if isinstance(p, Unk)), None)
                v = bad if bad is not None else world * hf_micro * hf_accum  # type: ignore[operator]
        elif v is not None:
            v = _as_int(v, f"deepspeed {part}")
        vals[part] = v
    t, m, g = vals["train"], vals["micro"], vals["accum"]
    multiple = _world_multiple(ctx) if isinstance(dp, Unk) and dp is world and sp is None else None
    split = _split(ctx) if multiple is not None else 1
    if multiple is not None and split != 1 and (_model_parallel(ctx) != 1 or multiple % split):  # type: ignore[operator]
        return Unk("the world size is unknown and the model is split over several GPUs", "unknown")
    if multiple is not None and split != 1:  # (a PipelineModule's stages within each host's processes)
        got_split = _batch_over_multiples(t, m, g, multiple // split)  # type: ignore[operator]
        return got_split if isinstance(got_split, Unk) else {**got_split, "dp_split": split}
    # micro and accumulation filled from TrainingArguments are numbers like any other; an `auto`
    # train_batch_size is world x both, which adds up for every world
    if multiple is not None and raw["train"] != "auto":
        return _batch_over_multiples(t, m, g, multiple)
    for x in (t, m, g, dp):
        if isinstance(x, Unk) and x.kind != "absent":
            return x
    t = None if isinstance(t, Unk) else t
    m = None if isinstance(m, Unk) else m
    g = None if isinstance(g, Unk) else g
    if isinstance(dp, Unk):
        return dp
    if dp <= 0:
        return Unk("the world size is not positive", "invalid")
    # deepspeed/runtime/config.py _set_batch_related_parameters
    got = _derive(t, m, g, dp)
    if got is None:
        return Unk("DeepSpeed needs train_batch_size or train_micro_batch_size_per_gpu", "absent")
    return {"train": got[0], "micro": got[1], "accum": got[2], "dp": dp}


def _compile_part(args: list[Any]) -> str:
    if args[0] not in PARTS:
        raise NameLookupError(f"unknown DeepSpeed batch part {args[0]!r} (one of {', '.join(PARTS)})")
    return args[0]


def _f_deepspeed_batch(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    b = _batch(ctx)
    if isinstance(b, Unk):
        return b
    return b[node.static]


def _f_deepspeed_dp_text(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """The data-parallel size as the message says it: `4 = 32` (with the product), or for a world size
    known only as a multiple, `8·k for k hosts (...)`."""
    b = _batch(ctx)
    if isinstance(b, Unk):
        return b
    dp, product = b["dp"], b["micro"] * b["accum"]  # type: ignore[operator]
    multiple = b.get("dp_multiple")
    if multiple is None:
        split = _split(ctx)
        if isinstance(split, int) and split > 1:
            what = "TP x PP x CP" if _model_parallel(ctx) != 1 else "the PipelineModule's stages"
            return f"{dp} ({dp * split} processes / {what} {split}) = {product * dp}"  # type: ignore[operator]
        return f"{dp} = {product * dp}"  # type: ignore[operator]
    if multiple == 1:
        return (
            f"unknown here (the number of hosts and of GPUs on each is not named), and no data-parallel size "
            f"makes {b['micro']} x {b['accum']} x DP equal {b['train']}"
        )
    staged = b.get("dp_split")
    per_host = (
        f"{multiple * staged} processes on each of k hosts, over {staged} pipeline stages"  # type: ignore[operator]
        if staged
        else f"{multiple} processes on each of k hosts"
    )
    return (
        f"{multiple}·k (no hostfile is named: {per_host}), and no k makes "
        f"{b['micro']} x {b['accum']} x {multiple}·k equal {b['train']}"
    )


def _comparable(hf_val: Any) -> bool:
    """A TrainingArguments value packlint can compare: a bool, a number, true/false or numeric text."""
    if isinstance(hf_val, list):
        return all(_comparable(v) for v in hf_val)
    if isinstance(hf_val, (bool, int, float)):
        return True
    if isinstance(hf_val, str):
        if hf_val.strip().lower() in ("true", "false"):
            return True
        try:
            float(hf_val)
            return True
        except ValueError:
            return False
    return False


def _num_equal(ds_val: Any, hf_val: Any) -> bool:
    if isinstance(ds_val, bool) or isinstance(hf_val, bool):
        return bool(ds_val) == (hf_val if isinstance(hf_val, bool) else str(hf_val).lower() in ("true", "1"))
    if isinstance(ds_val, list) and isinstance(hf_val, list):
        return len(ds_val) == len(hf_val) and all(_num_equal(x, y) for x, y in zip(ds_val, hf_val, strict=False))
    try:
        return float(ds_val) == float(hf_val)
    except (TypeError, ValueError):
        return ds_val == hf_val


_HF_TRAINER_USE = re.compile(
    rb"from\s+(?:transformers|trl)[\w.]*\s+import\s+[^\n]*?\w*Trainer\b|\b(?:transformers|trl)\.\w*Trainer\b"
    rb"|from\s+(?:transformers|trl)[\w.]*\s+import\s*\([^)]*?\w*Trainer\b"
)


def _own_trainer(ctx: EvalContext) -> bool:
    """The launched program's code is at hand and no file of its import closure imports a Trainer from
    transformers or TRL (OpenLMLab/LOMO: HfArgumentParser over TrainingArguments, then its own `LOMOTrainer`
    calling `deepspeed.initialize` itself): transformers' mismatch check, in `deepspeed_init`, never runs."""
    try:
        facts = ctx.code_facts()
    except Exception:  # a reader bug must not take the check down
        return False
    if facts is None or not facts.known or not facts.files or facts.skipped:
        return False
    if _own_module_missing(facts):
        return False  # a module of its own packlint did not find may be where the Trainer is built
    from packlint.caches import IN_RUN
    from packlint.safe_io import read_regular

    files = tuple(facts.files)
    if IN_RUN[0] and files in _RUN_OWN_TRAINER:  # (a repository's scripts launch the same few programs)
        return _RUN_OWN_TRAINER[files]
    own = True
    for f in files:
        data = read_regular(f, 2_000_000)
        if data is None or _HF_TRAINER_USE.search(data):
            own = False  # (a file it cannot read may be the one that does)
            break
    if IN_RUN[0]:
        _RUN_OWN_TRAINER[files] = own
    return own


_RUN_OWN_TRAINER = run_memo()  # import closure -> no Trainer imported in it, for one check run


def _own_module_missing(facts: Any) -> bool:
    """An import the code reader did not resolve names a directory or module of the program's own tree (the
    program's directory up to its root): the closure is incomplete. Other unresolved imports are libraries."""
    import os

    res = getattr(facts, "resolution", None)
    start = os.path.dirname(getattr(res, "file", None) or "")
    root = getattr(res, "root", None) or start
    dirs: list[str] = []
    d = start
    for _ in range(12):
        if not d:
            break
        dirs.append(d)
        if d == root or os.path.dirname(d) == d:
            break
        d = os.path.dirname(d)
    for top in {m.split(".", 1)[0] for m in facts.unresolved_imports or ()}:
        if any(os.path.exists(os.path.join(d, top)) or os.path.exists(os.path.join(d, top + ".py")) for d in dirs):
            return True
    return False


def mismatches(ctx: EvalContext) -> list[tuple[str, str]] | Unk:
    """[(ds key, "- ds KEY=V vs hf NAME=W")] as trainer_config_finalize lists them."""
    memo = ctx.memo
    if "hf_ds_mismatch" in memo:
        return memo["hf_ds_mismatch"]
    out: list[tuple[str, str]] | Unk = []
    ds = _ds(ctx)
    if isinstance(ds, Unk):
        out = ds
    elif config_stack(_config(ctx)) not in HF_TRAINER_STACKS:
        out = Unk("the launch does not run HF Trainer", "absent")
    else:
        auto_find = _hf_setting(ctx, "auto_find_batch_size")
        loose_batch = auto_find is True or (isinstance(auto_find, str) and auto_find.lower() == "true")
        undecided: Unk | None = None
        found: list[tuple[str, str]] = []
        for ds_key, hf_names, hf_label in FILL_MATCH:
            entry = ds.get(ds_key)
            if entry is None or ds_key in ("train_micro_batch_size_per_gpu", "train_batch_size") and loose_batch:
                continue
            if "unknown" in entry:
                undecided = Unk(f"deepspeed {ds_key} is unknown", "unknown")
                continue
            ds_val = entry.get("value")
            if ds_val is None or ds_val == "auto":
                continue
            if hf_names == ("*train_batch_size",):
                b_world, b_m, b_g = (
                    _world(ctx),
                    _as_int(_hf_setting(ctx, "per_device_train_batch_size"), "per_device_train_batch_size"),
                    _as_int(_hf_setting(ctx, "gradient_accumulation_steps"), "gradient_accumulation_steps"),
                )
                if isinstance(b_world, Unk) and not isinstance(b_m, Unk) and not isinstance(b_g, Unk):
                    # a world known only as a multiple of M: no member matches a value that is not a
                    # multiple of M x micro x accumulation
                    step, ds_int = (_world_multiple(ctx) or 0) * b_m * b_g, _as_int(ds_val, "train_batch_size")
                    if step > 0 and isinstance(ds_int, int) and ds_int % step != 0:
                        found.append(
                            (
                                ds_key,
                                f"- ds {ds_key}={ds_int} vs hf {hf_label}=world size x {b_m} x {b_g}, "
                                f"a multiple of {step} whatever the world size",
                            )
                        )
                    continue
                if any(isinstance(x, Unk) for x in (b_world, b_m, b_g)):
                    continue
                hf_val: Any = b_world * b_m * b_g  # type: ignore[operator]
            else:
                vals = [_hf_setting(ctx, n) for n in hf_names]
                if any(isinstance(v, Unk) for v in vals):
                    unk = (
                        next(v for v in vals if isinstance(v, Unk) and v.kind == "unknown")
                        if any(isinstance(v, Unk) and v.kind == "unknown" for v in vals)
                        else None
                    )
                    undecided = undecided or unk
                    continue
                hf_val = vals if len(vals) > 1 else vals[0]
            if not _comparable(hf_val):
                # `bf16: auto` (axolotl resolves it from the GPU before TrainingArguments): unknown here
                undecided = undecided or Unk(f"{hf_label} is {hf_val!r}, decided at run time", "unknown")
                continue
            if not _num_equal(ds_val, hf_val):
                from packlint.configs import render

                found.append((ds_key, f"- ds {ds_key}={render(ds_val)} vs hf {hf_label}={render(hf_val)}"))
        out = found if found or undecided is None else undecided
    if out and not isinstance(out, Unk) and _own_trainer(ctx):  # (read only when there is something to report)
        out = Unk("the launched program trains without a transformers/TRL Trainer (its own loop)", "absent")
    memo["hf_ds_mismatch"] = out
    return out


def _f_hf_deepspeed_mismatch(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    m = mismatches(ctx)
    if isinstance(m, Unk):
        return m
    return "; ".join(text for _, text in m)


def _f_hf_deepspeed_mismatch_key(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    m = mismatches(ctx)
    if isinstance(m, Unk) or not m:
        return ""
    return m[0][0]


DEEPSPEED_FUNCTIONS: dict[str, Function] = {
    "deepspeed_batch": Function(
        (STR,),
        (),
        INT,
        _f_deepspeed_batch,
        "DeepSpeed's batch numbers as it computes them at startup: 'train' (train_batch_size), 'micro' "
        "(train_micro_batch_size_per_gpu), 'accum' (gradient_accumulation_steps), 'dp' (the data-parallel "
        "size: the world size); 'auto' filled as HF Trainer fills it, a missing one derived as DeepSpeed "
        "derives it; absent without a DeepSpeed config",
        literal=(0,),
        compile_static=_compile_part,
    ),
    "deepspeed_dp_text": Function(
        (),
        (),
        STR,
        _f_deepspeed_dp_text,
        "the data-parallel size of deepspeed_batch() for a message: 'DP = micro x accum x DP', or "
        "'M·k ...' where the world size is only known to be a multiple of M (no hostfile named)",
    ),
    "hf_deepspeed_mismatch": Function(
        (),
        (),
        STR,
        _f_hf_deepspeed_mismatch,
        "the lines of HF Trainer's 'DeepSpeed config values that mismatch TrainingArguments' error for this "
        "launch ('' when none): a hard-coded DeepSpeed value that differs from the TrainingArguments value",
    ),
    "hf_deepspeed_mismatch_key": Function(
        (),
        (),
        STR,
        _f_hf_deepspeed_mismatch_key,
        "the DeepSpeed key of the first mismatch (for report_at = 'setting:deepspeed:{...}')",
    ),
}
