"""Fuzzing the new surfaces (issue 29): generated config files (YAML, JSON, TOML), Hydra config trees and
Python files next to the scripts that launch them, with the constructs the second audit found explosive
mixed in (interpolation chains, alias and merge bombs, deep nesting, long dotted TOML keys, integers of
thousands of digits, huge flow lists, `'x' * n` and power towers in `validate_args`, call trees in the
argparse code, regexes with nested repeats in the script).

Each example writes one small repository (a script of five launches: LLaMA-Factory, DeepSpeed,
torchtitan, verl's Hydra tree, NeMo-RL's OmegaConf YAML, each naming its generated files) and runs
`packlint check --format json DIR` in a subprocess under RLIMIT_AS and RLIMIT_CPU (tests/limited.py): no
traceback, no internal error, an exit code in {0, 1, 2}, valid JSON. No wall-clock assertion.

CI runs a small derandomized set (FUZZ_EXAMPLES, a few seconds); a longer local run:
    PACKLINT_FUZZ_EXAMPLES=200 python -m pytest -q tests/test_fuzz_configs.py
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from limited import assert_clean, run_limited

FUZZ_EXAMPLES = int(os.environ.get("PACKLINT_FUZZ_EXAMPLES", "2"))
PHASES = (Phase.explicit, Phase.reuse, Phase.generate) + (
    (Phase.shrink,) if os.environ.get("PACKLINT_FUZZ_SHRINK") else ()
)
MEMORY = 1536 << 20

keys = st.sampled_from(["stage", "packing", "neat_packing", "cutoff_len", "lr", "model", "bf16", "train_batch_size"])
scalars = st.one_of(
    st.sampled_from(["true", "false", "1", "2048", "1e-4", "null", "sft", "''", "'${oc.env:HOME}'", "???"]),
    st.integers(1, 12).map(lambda n: "9" * (n * 500)),  # past Python's 4,300-digit int() limit
    st.text(alphabet="ab._-/ ", max_size=12).map(json.dumps),
)


@st.composite
def yaml_bomb(draw) -> str:
    kind = draw(st.sampled_from(["aliases", "merge", "nested", "interp", "flow", "keys", "none"]))
    n = draw(st.integers(1, 12))
    if kind == "aliases":
        lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
        lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, n)]
        return "\n".join(lines)
    if kind == "merge":
        lines = ["m0: &m0 {k: 1}"] + [f"m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}], k{i}: {i}}}" for i in range(1, n)]
        return "\n".join(lines)
    if kind == "nested":
        depth = draw(st.integers(1, 120))
        return "deep: " + "[" * depth + "]" * depth
    if kind == "interp":
        lines = ["i0: xxxxxxxxxx"] + [f'i{i}: "' + f"${{i{i - 1}}}" * 10 + '"' for i in range(1, n)]
        return "\n".join(lines)
    if kind == "flow":
        return "items: [" + ", ".join(["1"] * (n * 4000)) + "]"
    if kind == "keys":
        return "\n".join(f"k{i}: {i}" for i in range(n * 3000))
    return ""


@st.composite
def yaml_file(draw) -> str:
    lines = [f"{draw(keys)}: {draw(scalars)}" for _ in range(draw(st.integers(0, 6)))]
    return "stage: sft\nmodel_name_or_path: m\n" + "\n".join(lines) + "\n" + draw(yaml_bomb()) + "\n"


@st.composite
def json_file(draw) -> str:
    parts = [
        f'"{draw(keys)}": {v}'
        for v in draw(st.lists(st.sampled_from(["1", '"auto"', "true", "1e400", "NaN"]), max_size=5))
    ]
    kind = draw(st.sampled_from(["plain", "bigint", "deep", "wide"]))
    if kind == "bigint":
        parts.append('"train_micro_batch_size_per_gpu": ' + "7" * draw(st.integers(4000, 6000)))
    elif kind == "deep":
        d = draw(st.integers(10, 3000))
        parts.append('"zero_optimization": ' + "[" * d + "]" * d)
    elif kind == "wide":
        parts.append('"x": [' + ",".join(["{}"] * draw(st.integers(10, 50_000))) + "]")
    return "{" + ", ".join(parts) + "}\n"


@st.composite
def toml_file(draw) -> str:
    kind = draw(st.sampled_from(["plain", "dotted", "bigint", "tables", "inline"]))
    body = "[training]\nsteps = 10\nseq_len = 2048\n"
    if kind == "dotted":
        body += ".".join(["a"] * draw(st.integers(2, 20_000))) + " = 1\n"
    elif kind == "bigint":
        body += "local_batch_size = " + "9" * draw(st.integers(4000, 6000)) + "\n"
    elif kind == "tables":
        body += "".join(f"[t{i}]\nx = {i}\n" for i in range(draw(st.integers(1, 5000))))
    elif kind == "inline":
        body += (
            "x = {" + ", ".join(f"{'.'.join(['b'] * draw(st.integers(1, 300)))}{i} = {i}" for i in range(20)) + "}\n"
        )
    return body


@st.composite
def hydra_tree(draw) -> dict[str, str]:
    fanout = draw(st.integers(1, 6))
    depth = draw(st.integers(1, 8))
    files = {"config/ppo_trainer.yaml": "defaults:\n  - actor: a0\n  - _self_\ndata:\n  train_batch_size: 256\n"}
    for level in range(depth):
        nxt = [f"  - actor@sub{j}: a{level + 1}" for j in range(fanout)] if level + 1 < depth else []
        interp = f'  ref: "${{data.train_batch_size}}-{level}"\n' if draw(st.booleans()) else ""
        files[f"config/actor/a{level}.yaml"] = ("defaults:\n" + "\n".join(nxt) + "\n" if nxt else "") + (
            f"ppo_micro_batch_size_per_gpu: {draw(scalars)}\n" + interp
        )
    if draw(st.booleans()):  # a cycle
        files["config/actor/a0.yaml"] = "defaults:\n  - actor@loop: a0\n" + files["config/actor/a0.yaml"]
    return files


@st.composite
def python_file(draw) -> str:
    checks = draw(
        st.lists(
            st.sampled_from(
                [
                    "assert len('x' * (args.num_layers * 10**9)) > 0, 'rep'",
                    "assert len((0,) * (args.num_layers * 10**8)) > 0, 'tuple'",
                    "assert (((args.num_layers + 1) ** 63) ** 63) ** 63 > 0, 'power'",
                    "assert args.num_layers % args.pipeline_model_parallel_size == 0, 'split'",
                    "assert str(10 ** 5000), 'digits'",
                    "args.x = 'y' * 10**10",
                ]
            ),
            max_size=4,
        )
    )
    funcs = draw(st.integers(1, 12))
    body = ["import argparse", ""]
    for i in range(funcs):
        body.append(f"def f{i}(p):")
        body += [f"    v{j} = {j} * 2" for j in range(draw(st.integers(1, 60)))]
        body += [f"    f{i + 1}(p)"] * 3 if i < funcs - 1 else ["    p.add_argument('--late', type=int)"]
    body += ["", "def validate_args(args, defaults={}):"] + ["    " + c for c in checks] + ["    return args", ""]
    body += ["def main():", "    p = argparse.ArgumentParser()", "    p.add_argument('--num-layers', type=int)"]
    body += ["    p.add_argument('--pipeline-model-parallel-size', type=int, default=1)", "    f0(p)"]
    body += ["    validate_args(p.parse_args())", "", "if __name__ == '__main__':", "    main()", ""]
    return "\n".join(body)


@st.composite
def repository(draw) -> dict[str, str]:
    files = {
        "x.yaml": draw(yaml_file()),
        "ds.json": draw(json_file()),
        "t.toml": draw(toml_file()),
        "grpo.yaml": "policy:\n  model_name: m\n" + draw(yaml_bomb()) + "\n",
        "train.py": draw(python_file()),
        **draw(hydra_tree()),
    }
    regex = draw(st.sampled_from(["^(a{1,16}){1,16}b", "(a|aa)+$", "^[a-Z]+", "(x)\\1", "^a+$"]))
    files["train.sh"] = (
        "#!/bin/bash\n"
        f"X={'a' * draw(st.integers(0, 80))}\n"
        f"if [[ $X =~ {regex} ]]; then export OFFLINE_PACKING_BMR=1; fi\n"
        "Y=${X%%[a-Z]*}\n"
        "llamafactory-cli train x.yaml\n"
        "deepspeed train.py --deepspeed ds.json --num-layers 32 --bogus $Y\n"
        "torchrun -m torchtitan.train --job.config_file t.toml\n"
        "python3 -m verl.trainer.main_ppo --config-path config --config-name ppo_trainer data.train_batch_size=8\n"
        "uv run python examples/run_grpo_math.py --config grpo.yaml\n"
    )
    return files


@given(repo=repository())
@settings(
    max_examples=FUZZ_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    phases=PHASES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
def test_generated_config_files_and_code_are_read_within_bounds(repo):
    with tempfile.TemporaryDirectory(prefix="packlint-fuzz-cfg-") as tmp:
        d = Path(tmp)
        for name, text in repo.items():
            (d / name).parent.mkdir(parents=True, exist_ok=True)
            (d / name).write_text(text)
        rc, out, err = run_limited(["check", "--no-cache", "--format", "json", "."], d, memory=MEMORY)
        assert_clean(rc, out, err)
        assert rc in (0, 1), err
        assert isinstance(json.loads(out)["findings"], list)
