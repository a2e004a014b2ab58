"""Parallel sizes in the launch model (world from the launcher, TP/PP/CP/EP/VPP from the flags, DP
derived), the condition functions that read them (size, setting, enabled, float_lt, count, choose),
rule version tags, and the env-overwritten facts (PK105) — on real bash text, through the same code
path as `packlint check`."""

from __future__ import annotations

import pytest

from packlint.api import inspect_script
from packlint.conditions import (
    ConditionError,
    EvalContext,
    Scope,
    Setting,
    Unk,
    compile_condition,
)
from packlint.engine import check_model
from packlint.errors import PacklintError
from packlint.rule_table import compile_table, load_table, version_applies

TABLE = load_table(use_cache=False)


def model_of(script: str, **kw) -> dict:
    return inspect_script("t.sh", text=script.lstrip("\n").encode(), display_path="t.sh", **kw)


def sizes(script: str, **kw) -> list[dict]:
    return [launch["parallel"] for launch in model_of(script, **kw)["launches"]]


def value(entry: dict):
    return entry.get("value", entry.get("range", ("unknown", entry.get("unknown"))))


def codes(script: str, **kw) -> list[str]:
    text = script.lstrip("\n").encode()
    m = inspect_script("t.sh", text=text, display_path="t.sh", **kw)
    return sorted(f.code for f in check_model(m, TABLE.rules, script_text=text) if f.severity != "info")


# ---------------------------------------------------------------------------------------------- world size


@pytest.mark.parametrize("launch,nodes,per_node,world", [
    ("torchrun --nproc_per_node 8 --nnodes 2 t.py", 2, 8, 16),
    ("torchrun --nproc-per-node=4 t.py", 1, 4, 4),
    ("python -m torch.distributed.run --nproc_per_node 2 --nnodes 3 t.py", 3, 2, 6),
    ("torchrun --nnodes 1:4 --nproc_per_node 8 t.py", [1, 4], 8, [8, 32]),
    ("srun -N 2 --ntasks-per-node=8 python t.py", 2, 8, 16),
    ("srun -N2-4 python t.py", [2, 4], 1, [2, 4]),
    ("srun --ntasks 12 python t.py", None, 1, 12),
    ("deepspeed --num_nodes 2 --num_gpus 8 t.py", 2, 8, 16),
    ("mpirun -np 16 python t.py", None, None, 16),
    ("accelerate launch --num_processes 8 t.py", None, None, 8),
])
def test_world_from_launcher_options(launch, nodes, per_node, world):
    par = sizes(f"#!/bin/bash\n{launch} --micro-batch-size 1\n")[0]
    got = [value(par["nodes"]), value(par["procs_per_node"]), value(par["world"])]
    want = [nodes, per_node, world]
    for g, w in zip(got, want, strict=True):
        if w is None:
            assert g[0] == "unknown"
        else:
            assert g == w


def test_world_unknown_when_the_cluster_says_it():
    script = """
NNODES=${SLURM_NNODES:-1}
torchrun --nproc_per_node 8 --nnodes $NNODES t.py
torchrun --nproc_per_node 8 --nnodes "$SLURM_JOB_NUM_NODES" t.py
torchrun --nproc_per_node 8 --nnodes ${WORLD_SIZE:-"1"} t.py
"""
    for par in sizes(script):
        assert "unknown" in par["world"] and "unknown" in par["dp"]
    assert "SLURM_NNODES" in sizes(script)[0]["world"]["unknown"]
    # the caller may decide it
    assert [value(p["world"]) for p in sizes(script, env={"SLURM_NNODES": "4", "WORLD_SIZE": "2"})][::2] \
        == [32, 16]


def test_node_list_array_and_positional_defaults():
    par = sizes("""
list_ip=(10.0.0.1 10.0.0.2 10.0.0.3)
NNODES=${#list_ip[@]}
TP="${1:-2}"
PP="${2:-3}"
ARGS=(--tensor-model-parallel-size "$TP")
torchrun --nproc_per_node 8 --nnodes $NNODES t.py "${ARGS[@]}" --pipeline-model-parallel-size=$PP
""")[0]
    assert value(par["world"]) == 24 and value(par["tp"]) == 2 and value(par["pp"]) == 3
    assert value(par["cp"]) == 1 and par["cp"]["source"].startswith("default")
    assert value(par["dp"]) == 4
    assert par["tp"]["line"] == 3  # where the value was written: the default in ${1:-2}


def test_sizes_unknown_when_flags_may_hide_in_unknown_words():
    par = sizes('torchrun --nproc_per_node 8 t.py $EXTRA_ARGS --micro-batch-size 1\n',
                known_env=("EXTRA_ARGS",))[0]
    assert "unknown" in par["tp"] and "unknown" in par["dp"]


def test_hydra_overrides_are_the_flags_and_leave_the_rest_to_the_recipe():
    par = sizes("torchrun --nproc_per_node 8 run_recipe.py model.tensor_model_parallel_size=2 "
                "train.micro_batch_size=1\n")[0]
    assert value(par["tp"]) == 2
    assert "recipe" in par["pp"]["unknown"] and "unknown" in par["dp"]


def test_vpp_and_dp_not_divisible():
    par = sizes("torchrun --nproc_per_node 6 t.py --pipeline-model-parallel-size 4 "
                "--num-virtual-stages-per-pipeline-rank 2\n")[0]
    assert value(par["vpp"]) == 2
    assert par["dp"].get("not_divisible") is True


def test_plain_python_is_not_a_world_of_one_for_the_rules():
    m = model_of("python pretrain_gpt.py --tensor-model-parallel-size 2 --micro-batch-size 1\n")
    launch = m["launches"][0]
    assert launch["world_size"] == {"value": "1"}  # the model's own field keeps its meaning
    assert launch["parallel"]["world"].get("not_in_script") is True


def test_inspect_text_shows_the_sizes(capsys):
    import io

    from packlint.reporters.inspect_text import render

    out = io.StringIO()
    render(model_of("torchrun --nnodes 2 --nproc_per_node 8 t.py --tensor-model-parallel-size 4\n"), out,
           color=False)
    assert "parallel: nodes 2 x 8 per node = world 16; TP 4 PP 1 CP 1 EP 1 VPP - -> DP 4" in out.getvalue()


# ---------------------------------------------------------------------------------------------- functions


def scope_with(**settings):
    return Scope(settings={k: Setting(k, tuple(v[0]), v[1]) for k, v in settings.items()})


def ctx_for(script: str, **kw) -> EvalContext:
    m = model_of(script, **kw)
    launch = m["launches"][0]
    return EvalContext(m, launch, launch["variants"][0])


def ev(text, ctx, scope):
    return compile_condition(text, scope, want=None).eval(ctx)


def test_size_setting_and_arithmetic():
    scope = scope_with(mbs=(["--micro-batch-size", "train.micro_batch_size"], None),
                       gbs=(["--global-batch-size"], None), sp=(["--sequence-parallel"], "false"))
    ctx = ctx_for("torchrun --nproc_per_node 8 --nnodes 11 t.py --micro-batch-size 1 "
                  "--global-batch-size 132 --sequence-parallel\n")
    assert ev("int(setting('gbs')) % (int(setting('mbs')) * size('dp'))", ctx, scope) == 44
    assert ev("size('world') / size('tp')", ctx, scope) == 88
    assert ev("enabled('sp') and setting_given('sp')", ctx, scope) is True
    assert ev("count(enabled('sp')) + count(false)", ctx, scope) == 1
    assert ev("choose(size('tp') == 1, 'one', 'more')", ctx, scope) == "one"
    assert ev("float_lt('1e-5', '1.0e-4')", ctx, scope) is True
    assert isinstance(ev("float_lt('x', '1')", ctx, scope), Unk)


def test_setting_spellings_last_one_wins_and_defaults():
    scope = scope_with(mbs=(["--micro-batch-size", "train.micro_batch_size"], "1"))
    ctx = ctx_for("torchrun t.py --micro-batch-size 2 train.micro_batch_size=4\n")
    assert ev("setting('mbs')", ctx, scope) == "4"
    assert ev("setting('mbs')", ctx_for("torchrun t.py --lr 1\n"), scope) == "1"
    hidden = ev("setting('mbs')", ctx_for("torchrun t.py $X\n", known_env=("X",)), scope)
    assert isinstance(hidden, Unk) and hidden.kind == "unknown"
    absent = ev("setting('mbs')", ctx_for("torchrun t.py --lr 1\n"), scope_with(mbs=(["--micro-batch-size"], None)))
    assert isinstance(absent, Unk) and absent.kind == "absent"


def test_elastic_range_is_undecided():
    ctx = ctx_for("torchrun --nnodes 1:4 --nproc_per_node 8 t.py\n")
    v = ev("size('world') % 16 != 0", ctx, Scope())
    assert isinstance(v, Unk) and "elastic range 8..32" in v.reason


@pytest.mark.parametrize("text,message", [
    ("size('world_size') > 1", "unknown size 'world_size'"),
    # a name no [defaults] defines is a configuration key (issue 20); a malformed one is an error
    ("setting('nosuch:mbs') == '1'", "a configuration key is"),
    ("setting('a..b') == '1'", "a configuration key is"),
    ("size(program()) > 1", "must be a literal"),
    ("setting('micro_batch_size') > 1", "needs a int"),
])
def test_load_time_errors(text, message):
    scope = scope_with(micro_batch_size=(["--micro-batch-size"], None))
    with pytest.raises(ConditionError) as exc:
        compile_condition(text, scope)
    assert message in exc.value.message


def test_defaults_table_is_validated():
    bad = b'[defaults]\nmbs = { flags = [] }\n'
    with pytest.raises(PacklintError, match="defaults"):
        compile_table([("x.toml", bad, False)])
    twice = b'[defaults]\nmbs = { flags = ["--m"] }\n'
    with pytest.raises(PacklintError, match="defined twice"):
        compile_table([("a.toml", twice, False), ("b.toml", twice, False)])


def test_versions():
    assert version_applies("core>=0.8", None)              # unknown version: every rule applies
    assert not version_applies("core>=0.8", "core_v0.7.0")
    assert version_applies("core>=0.12,<0.16", "0.15.3")
    assert not version_applies("core>=0.12,<0.16", "0.16.0")
    rule = TABLE.by_code("PK306")
    assert rule.versions == "core>=0.8"
    script = b"torchrun --nproc_per_node 8 t.py --context-parallel-size 4 --seq-length 8196 --micro-batch-size 1\n"
    m = inspect_script("t.sh", text=script, display_path="t.sh")
    assert [f.code for f in check_model(m, [rule])] == ["PK306"]
    m["code_version"] = "core_v0.7.0"
    assert check_model(m, [rule]) == []


# ---------------------------------------------------------------------------------------------- rules on messy scripts


def test_batch_rule_is_decided_by_the_callers_env():
    script = """
NNODES=${SLURM_NNODES:-1}
torchrun --nproc_per_node 8 --nnodes $NNODES t.py --micro-batch-size 1 --global-batch-size 176
"""
    assert codes(script) == []
    assert codes(script, env={"SLURM_NNODES": "11"}) == []       # DP 88 divides 176
    assert codes(script, env={"SLURM_NNODES": "12"}) == ["PK302"]  # DP 96 does not


def test_sequence_parallel_only_on_the_tp1_path():
    script = """
if [[ "$(hostname)" == big* ]]; then TP=4; else TP=1; fi
torchrun --nproc_per_node 8 t.py --tensor-model-parallel-size $TP --sequence-parallel --micro-batch-size 1
"""
    text = script.lstrip("\n").encode()
    m = inspect_script("t.sh", text=text, display_path="t.sh")
    found = [f for f in check_model(m, TABLE.rules, script_text=text) if f.code == "PK310"]
    assert len(found) == 1 and found[0].certainty == "possible"  # only on the TP=1 path


def test_packing_sft_micro_batch_is_reported_once():
    # --packing-sft-data forces MBS 1: PK003 says so (warning); no Megatron rule repeats it
    script = """
torchrun --nproc_per_node 8 pretrain_llava_onevision2.py --packing-sft-data --micro-batch-size 4
"""
    assert codes(script) == ["PK003"]


# ---------------------------------------------------------------------------------------------- PK105


@pytest.mark.parametrize("script,expected", [
    ("export A=1\nexport A=2\ntorchrun t.py\n", ["PK105"]),
    ("export A=1\nA=2\ntorchrun t.py\n", ["PK105"]),
    ("declare -x A=1\n# comment\nexport B=3 A=2\ntorchrun t.py\n", ["PK105"]),
    ("export A=1\nmkdir -p out\nexport A=2\ntorchrun t.py\n", ["PK105"]),
    ("export A=1\necho \"$A\"\nexport A=2\ntorchrun t.py\n", []),
    ("export A=1\npython prep.py\nexport A=2\ntorchrun t.py\n", []),
    ("export A=x\nexport A=${A},y\ntorchrun t.py\n", []),
    ("export A=1\nexport A=1\ntorchrun t.py\n", []),
    ("if true; then export A=1; else export A=2; fi\ntorchrun t.py\n", []),
    ("f() {\n  export A=1\n  export A=2\n}\nf\ntorchrun t.py\n", ["PK105"]),
])
def test_env_overwritten(script, expected):
    assert [c for c in codes(script) if c == "PK105"] == expected
