"""Derived values (issue 12): parallel sizes, program settings under all their spellings, and the
small helpers the Megatron pack's conditions need (count, choose, float_lt)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from packlint import evidence
from packlint.conditions.functions.core import _entry_value, _free_unknowns, _is_unk, _loc_of, _occurrences
from packlint.conditions.tree import BOOL, INT, STR, Builtin, EvalContext, Function, NameLookupError, Unk, _pick
from packlint.model_view import config_settings, parallel_size, section_unknown, variant_config

if TYPE_CHECKING:
    from packlint.conditions.compile import Scope
    from packlint.model_types import FlagEntryJSON, SettingJSON

# Issue 12: parallel sizes (from the launch model's `parallel` block: world from the launcher, TP/PP/CP/
# EP/VPP from the flags, DP derived) and *settings* — one program setting under all its spellings
# (`--micro-batch-size 2`, Megatron-Bridge's `train.micro_batch_size=2`) with the default the table's
# [defaults] gives. Arithmetic over them (`*`, `/`, `%`) is the language's own; these functions give it
# typed values, and say "unknown" (rule undecided) rather than guess.

SIZE_NAMES = ("nodes", "procs_per_node", "world", "tp", "pp", "cp", "ep", "vpp", "dp")


class Setting:
    """One entry of [defaults]: the flag spellings of a setting and the value used when none is given
    (None: the program has no default; the setting is absent)."""

    __slots__ = ("name", "flags", "default")

    def __init__(self, name: str, flags: tuple[str, ...], default: str | None) -> None:
        self.name, self.flags, self.default = name, flags, default

    def __reduce__(self) -> tuple[type[Setting], tuple[str, tuple[str, ...], str | None]]:
        return (Setting, (self.name, self.flags, self.default))


def _compile_size(args: list[Any]) -> str:
    if args[0] not in SIZE_NAMES:
        raise NameLookupError(f"unknown size {args[0]!r} (one of {', '.join(SIZE_NAMES)})")
    return args[0]


class ConfigKey:
    """A key of the launch's merged configuration (issue 20): `train.micro_batch_size` in the main
    settings; `deepspeed:train_batch_size` / `accelerate:num_processes` in a nested file's section;
    `main:KEY` forces the main settings for a name that a table's [defaults] also defines."""

    __slots__ = ("section", "key")

    def __init__(self, section: str, key: str) -> None:
        self.section, self.key = section, key

    def __reduce__(self) -> tuple[type[ConfigKey], tuple[str, str]]:
        return (ConfigKey, (self.section, self.key))

    def __repr__(self) -> str:
        return f"ConfigKey({self.section!r}, {self.key!r})"

    @property
    def label(self) -> str:
        return self.key if self.section == "main" else f"{self.section}:{self.key}"


CONFIG_SECTIONS = ("main", "deepspeed", "accelerate")


def _compile_setting(args: list[Any], scope: Scope) -> Setting | ConfigKey:
    name = args[0]
    found = scope.settings.get(name)
    if found is not None:
        return found
    section, sep, key = name.partition(":")
    if not sep:
        section, key = "main", name
    if section not in CONFIG_SECTIONS or not key or any(not part for part in key.split(".")):
        raise NameLookupError(
            f"setting {name!r}: a configuration key is `KEY`, `a.b.c` or `SECTION:KEY` with SECTION one of "
            f"{', '.join(CONFIG_SECTIONS)}"
        )
    return ConfigKey(section, key)


def _f_size(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    name = node.static
    entry = parallel_size(ctx.variant, ctx.launch, name)
    label = {"procs_per_node": "processes per node", "world": "the world size"}.get(name, name.upper())
    if entry is None:
        return Unk(f"{label} is not in the launch model", "unknown")
    loc = _loc_of(entry)
    if "unknown" in entry:
        # the world size is wrong (PK301's finding), or the script does not say it (a hostfile, the
        # allocation): no "could not decide" info, which the user could not settle with --env anyway
        kind = "invalid" if entry.get("not_divisible") else "absent" if entry.get("not_in_script") else "unknown"
        return Unk(f"{label} is unknown ({entry['unknown']})", kind, loc)
    if "range" in entry:
        lo, hi = entry["range"]
        return Unk(f"{label} is an elastic range {lo}..{hi}", "unknown", loc)
    if "values" in entry:
        return Unk(f"{label} differs between branches", "unknown", loc)
    value = entry.get("value")
    if value is None:
        return Unk(f"{label} is not set", "absent", loc)
    source = entry.get("source")
    if name not in ("world", "procs_per_node", "nodes") and not (isinstance(source, str) and source.startswith("-")):
        # a program's size no flag gives (its default) while a word packlint cannot know may give it
        # (`--fp16 ${GLM_ARGS}`, the sizes in a file sourced from $1): unknown, not the default
        hidden = _free_unknowns(ctx)
        if hidden is not None:
            return Unk(f"{label} may be given by {hidden}", "unknown", loc)
    evidence.record(ctx, entry)
    if isinstance(source, str) and source.startswith("-"):  # a size given by a flag: that flag's evidence
        occ = _occurrences(ctx, "flags", source)
        if occ:
            evidence.record(ctx, occ[-1])
    unread = _unread_defaults(ctx, name)
    return unread if unread is not None else int(value)


# the sizes a parallel size is computed from (data parallel: world / (TP x PP x CP))
_SIZE_PARTS = {"dp": ("tp", "pp", "cp"), "tp": ("tp",), "pp": ("pp",), "cp": ("cp",), "ep": ("ep",)}


def _unread_defaults(ctx: EvalContext, name: str) -> Unk | None:
    """A parallel size no flag gives is the program's default; where packlint found the launched program but not
    its parser (PK206: it imports a Megatron the checkout does not hold), that default is not known: zzhx1/
    Hetaceso-ModelLink's Aceso `flexpipe` fork takes its layout from a `--flexpipe-config` file, and no TP/PP flag
    is given (issue 26: an unknown parser makes unknown what it decides)."""
    sizes = [
        k
        for k in _SIZE_PARTS.get(name, ())
        if str((parallel_size(ctx.variant, ctx.launch, k) or {}).get("source") or "").startswith("default")
    ]
    if not sizes:
        return None
    from packlint.conditions.functions.codebase_common import _code

    facts = _code(ctx)
    if facts is None or not facts.known or facts.schema is not None:
        return None
    given = " x ".join(k.upper() for k in sizes)
    return Unk(
        f"{given} {'are' if len(sizes) > 1 else 'is'} not given, and the launched program's parser, whose default "
        "decides, is not in the checkout",
        "unknown",
    )


def schema_default(ctx: EvalContext, setting: Setting) -> str | None:
    """The value the program uses when the script gives none of the setting's flags. Today the
    table's [defaults]; the code-base flag schema (when the launched code is read) will answer here."""
    return setting.default


def _setting_occurrence(ctx: EvalContext, setting: Setting) -> tuple[str, FlagEntryJSON] | None:
    """The occurrence the program keeps: the last one written, over all spellings."""
    best = None
    for flag in setting.flags:
        for occ in _occurrences(ctx, "flags", flag):
            key = (occ.get("line") or 0, occ.get("column") or 0)
            if best is None or key >= best[0]:
                best = (key, flag, occ)
    return None if best is None else (best[1], best[2])


def config_entry(ctx: EvalContext, ck: ConfigKey) -> SettingJSON | Unk:
    """The merged configuration's entry for a key (a SETTING dict: `value` + location), or Unk:
    absent when the configuration is completely known and does not set it, unknown otherwise."""
    cfg = variant_config(ctx.variant)
    label = ck.label
    if cfg is None:
        return Unk(f"{label}: the launch's configuration is unknown (no known stack, no config file)", "unknown")
    settings = config_settings(cfg, ck.section)
    if settings is None:
        return Unk(f"{label}: the launch has no {ck.section} config", "absent")
    entry = settings.get(ck.key)
    if entry is not None:
        if "unknown" in entry:
            return Unk(f"{label} is unknown ({entry['unknown']})", "unknown", _loc_of(dict(entry)))
        if ck.section == "main" and cfg.get("stack") is not None:
            hidden = _free_unknowns(ctx)
            if hidden is not None:  # a word packlint cannot know may override it on the command line
                return Unk(f"{label} may be overridden by {hidden}", "unknown", _loc_of(dict(entry)))
        return entry.copy()
    prefix = ck.key + "."
    children = {k[len(prefix) :]: dict(e) for k, e in settings.items() if k.startswith(prefix)}
    if children:
        value: dict[str, Any] = {}
        first = None
        for sub, e in children.items():
            if "unknown" in e:
                return Unk(f"{label}.{sub} is unknown ({e['unknown']})", "unknown", _loc_of(e))
            first = first or e
            cur = value
            parts = sub.split(".")
            for p in parts[:-1]:
                nxt = cur.setdefault(p, {})
                if not isinstance(nxt, dict):
                    break
                cur = nxt
            else:
                cur[parts[-1]] = e.get("value")
        return cast("SettingJSON", {**(first or {}), "value": value})
    why = section_unknown(cfg, ck.section)
    if why:
        return Unk(f"{label} is not in what packlint could read ({why})", "unknown")
    if ck.section == "main":
        hidden = _free_unknowns(ctx)
        if hidden is not None:
            return Unk(f"{label} may be given by {hidden}", "unknown")
    return Unk(f"{label} is not set", "absent")


def _config_value(ctx: EvalContext, ck: ConfigKey) -> Any:
    from packlint.configs import render

    entry = config_entry(ctx, ck)
    if isinstance(entry, Unk):
        return entry
    value = entry.get("value")
    if value is None:
        return Unk(f"{ck.label} is null", "absent", _loc_of(entry))
    return render(value)


_FALSE_WORDS = {"false", "0", "no", "off", ""}


def _config_enabled(ctx: EvalContext, ck: ConfigKey) -> Any:
    entry = config_entry(ctx, ck)
    if isinstance(entry, Unk):
        return False if entry.kind == "absent" else entry
    value = entry.get("value")
    if isinstance(value, str):
        low = value.strip().lower()
        if low in _TRUE_WORDS:
            return True
        if low in _FALSE_WORDS:
            return False
        return Unk(f"{ck.label} = {value!r} is not a boolean", "invalid", _loc_of(entry))
    return bool(value)


def _bridge_file_value(ctx: EvalContext, setting: Setting) -> Any:
    """Megatron-Bridge merges the recipe, then the `--config-file` YAML over it, then the overrides: a
    key the YAML sets is the YAML's value (not the recipe's) unless an override gives it. None: the
    launch reads no such YAML, or it does not set the key (the recipe decides)."""
    cfg = variant_config(ctx.variant)
    if cfg is None or cfg.get("stack") != "megatron-bridge":
        return None
    settings = config_settings(cfg, "main") or {}
    for flag in setting.flags:
        entry = settings.get(flag)
        if entry is None or flag.startswith("-"):
            continue
        if "unknown" in entry:
            return Unk(f"{flag} is unknown ({entry['unknown']})", "unknown", _loc_of(dict(entry)))
        value = entry.get("value")
        if value is None:
            return Unk(f"{flag} is null", "absent", _loc_of(dict(entry)))
        from packlint.configs import render

        return render(value)
    return None


def _hydra_overrides(ctx: EvalContext) -> bool:
    """Whether the variant passes `a.b=v` words (Hydra overrides), once per variant (every setting not given asks)."""
    found = ctx.memo.get(("hydra_overrides",))
    if found is None:
        found = ctx.memo[("hydra_overrides",)] = any(
            not f.startswith("-") and "." in f for f in ctx.variant.get("flags", {})
        )
    return found


def _f_setting(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    setting = node.static
    if isinstance(setting, ConfigKey):
        return _config_value(ctx, setting)
    found = _setting_occurrence(ctx, setting)
    if found is not None:
        evidence.record(ctx, found[1])
        return _entry_value(found[1], found[0])
    hidden = _free_unknowns(ctx)
    if hidden is not None:
        return Unk(f"{setting.flags[0]} may be given by {hidden}", "unknown")
    from_file = _bridge_file_value(ctx, setting)
    if from_file is not None:
        return from_file
    if _hydra_overrides(ctx):
        # Hydra overrides (Megatron-Bridge): what is not overridden comes from the recipe, not argparse
        return Unk(f"{setting.flags[0]} is not overridden: the recipe's config decides it", "unknown")
    from_checkpoint = _from_checkpoint(ctx, setting)
    if from_checkpoint is not None:
        return from_checkpoint
    default = schema_default(ctx, setting)
    if default is None:
        return Unk(f"{setting.flags[0]} is not given and has no default", "absent")
    return _release_default(ctx, setting, default)


# what Megatron's load_args_from_checkpoint sets from the checkpoint's saved arguments with
# --use-checkpoint-args (megatron/training/checkpointing.py `_set_arg`; LLM360/crystalcoder-train's
# vendored copy: checkpointing.py:490-519): the model's shape and its parallel layout
_CHECKPOINT_ARGS = frozenset(
    [
        "num_layers",
        "hidden_size",
        "ffn_hidden_size",
        "seq_length",
        "num_attention_heads",
        "num_query_groups",
        "group_query_attention",
        "kv_channels",
        "max_position_embeddings",
        "position_embedding_type",
        "add_position_embedding",
        "use_rotary_position_embeddings",
        "rotary_base",
        "rotary_percent",
        "rotary_interleaved",
        "add_bias_linear",
        "add_qkv_bias",
        "swiglu",
        "squared_relu",
        "untie_embeddings_and_output_weights",
        "apply_layernorm_1p",
        "normalization",
        "tokenizer_type",
        "tokenizer_model",
        "padded_vocab_size",
        "apply_query_key_layer_scaling",
        "num_experts",
        "tensor_model_parallel_size",
        "pipeline_model_parallel_size",
        "virtual_pipeline_model_parallel_size",
        "num_layers_per_virtual_pipeline_stage",
        "expert_model_parallel_size",
    ]
)


def _from_checkpoint(ctx: EvalContext, setting: Setting) -> Unk | None:
    """A Megatron setting the launch does not give, with `--use-checkpoint-args`: the checkpoint's value
    (load_args_from_checkpoint runs before validate_args), not the parser's default."""
    from packlint.launch_model import FROM_CHECKPOINT_FLAGS

    flags = ctx.variant.get("flags") or {}
    ckpt = next((f for f in FROM_CHECKPOINT_FLAGS if f in flags), None)
    if ckpt is None or setting.name.replace("-", "_") not in _CHECKPOINT_ARGS:
        return None
    return Unk(f"{setting.flags[0]} is not given, and {ckpt} takes it from the checkpoint --load names", "unknown")


def _release_default(ctx: EvalContext, setting: Setting, default: Any) -> Any:
    """A Megatron launch's default that is a release's choice (a word: `transformer_engine`, `adam`; not a
    switch's false or a number) is upstream Megatron-LM's current one: with the launched code not at hand
    it is an assumption (issue 26), and on a fork (`megatron_fork`) it is not known at all."""
    text = str(default).strip().lower()
    if text in _TRUE_WORDS or text in _FALSE_WORDS or python_float(text) is not None:
        return default
    from packlint.conditions.functions.codebase_common import _code, megatron_fork, megatron_style, patched_by_adaptor
    from packlint.model_view import program

    if not megatron_style(program(ctx.launch, ctx.variant), list(ctx.variant.get("flags") or {})):
        return default
    facts = _code(ctx)
    # (the code at hand decides, unless it imports a package that patches Megatron at import: MindSpeed/ModelLink)
    why = patched_by_adaptor(facts) if facts is not None and facts.known else megatron_fork(ctx)
    if why is None and facts is not None and facts.known:
        return default
    if why is not None:
        why = f"{setting.flags[0]} is not given, and the launched program's default is not known ({why})"
        return Unk(why, "unknown")
    evidence.note(ctx, (evidence.ASSUMED, f"{evidence.UPSTREAM_MEGATRON}, so {setting.flags[0]} defaults to {default}"))
    return default


_TRUE_WORDS = {"true", "1", "yes", "on"}


def _f_enabled(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    if isinstance(node.static, ConfigKey):
        return _config_enabled(ctx, node.static)
    v = _f_setting(ctx, node, a)
    if isinstance(v, Unk):
        return False if v.kind == "absent" else v
    return v.strip().lower() in _TRUE_WORDS


def _f_enabled_or(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """`enabled(KEY)`, or where the stack's configuration is not at hand and the launch does not give KEY, the
    default every release of the stack has (the second argument), as a named assumption: at most a warning."""
    v = _f_enabled(ctx, node, a[:1])
    if isinstance(v, Unk) and v.kind == "unknown" and not _is_unk(a[1]):
        from packlint import evidence

        evidence.note(
            ctx, (evidence.ASSUMED, f"{a[0]} is {a[1]}, its default in every release (the config is not at hand)")
        )
        return str(a[1]).strip().lower() in _TRUE_WORDS
    return v


def _f_setting_given(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    if isinstance(node.static, ConfigKey):
        entry = config_entry(ctx, node.static)
        if isinstance(entry, Unk):
            return False if entry.kind == "absent" else entry
        return True
    return _setting_occurrence(ctx, node.static) is not None


def python_float(text: str) -> float | None:
    """What Python's `float(text)` returns (learning rates are floats: `1e-4`), or None where it raises."""
    try:
        return float(text)
    except (ValueError, TypeError):
        return None


def _f_float_lt(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    if _is_unk(*a):
        return _pick(*a)
    x, y = python_float(a[0]), python_float(a[1])
    if x is None or y is None:
        return Unk(f"{a[0] if x is None else a[1]!r} is not a number", "invalid")
    return x < y


def _f_choose(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    return a[0] if isinstance(a[0], Unk) else (a[1] if a[0] else a[2])


DERIVED_FUNCTIONS: dict[str, Function] = {
    "count": Function(
        (BOOL,),
        (),
        INT,
        lambda c, n, a: a[0] if isinstance(a[0], Unk) else int(a[0]),
        "1 when the condition holds, else 0 (to add flags that count as a layer, say)",
    ),
    "choose": Function(
        (BOOL, STR, STR),
        (),
        STR,
        _f_choose,
        "the second argument when the condition holds, else the third (for messages)",
    ),
    "float_lt": Function(
        (STR, STR), (), BOOL, _f_float_lt, "both values read with Python float() (`1e-4`), the first is smaller"
    ),
    "size": Function(
        (STR,),
        (),
        INT,
        _f_size,
        "a parallel size of the launch: 'world', 'nodes', 'procs_per_node' (from the launcher), "
        "'tp', 'pp', 'cp', 'ep', 'vpp' (from the flags, with defaults), 'dp' = world / "
        "(tp x pp x cp); unknown for an elastic range or a size packlint cannot know",
        literal=(0,),
        compile_static=_compile_size,
    ),
    "setting": Function(
        (STR,),
        (),
        STR,
        _f_setting,
        "a program setting from [defaults] under any of its spellings (argparse flag, Hydra "
        "override), the last one given; else its default; absent when it has none. Any other KEY "
        "(`a.b.c`, `deepspeed:KEY`, `accelerate:KEY`, `main:KEY`) is the launch's merged configuration "
        "value as the stack types it, as text (true/false, str() of numbers, compact JSON of lists and "
        "mappings); absent when the configuration does not set it; unknown when it cannot be read",
        literal=(0,),
        compile_static=_compile_setting,
        scoped=True,
    ),
    "enabled": Function(
        (STR,),
        (),
        BOOL,
        _f_enabled,
        "a boolean setting is on: given as a store-true flag or with the value true/1/yes/on; for a "
        "configuration KEY, its merged value is truthy as the stack types it",
        literal=(0,),
        compile_static=_compile_setting,
        scoped=True,
    ),
    "enabled_or": Function(
        (STR, STR),
        (),
        BOOL,
        _f_enabled_or,
        "enabled(KEY), or, where the stack's configuration is not at hand and the launch does not give KEY, the "
        "default every release has (DEFAULT: 'true'/'false'), as a named assumption",
        literal=(0, 1),
        compile_static=_compile_setting,
        scoped=True,
    ),
    "setting_given": Function(
        (STR,),
        (),
        BOOL,
        _f_setting_given,
        "the script gives the setting under one of its spellings (defaults do not count); for a "
        "configuration KEY, a config file or a command-line override sets it",
        literal=(0,),
        compile_static=_compile_setting,
        scoped=True,
    ),
}
