"""Oracle tests (issue 20): for config files shaped like each stack's own examples
(tests/fixtures/configs/oracle/<stack>/), the merged settings packlint shows equal what the stack's own
loader produces: OmegaConf (LLaMA-Factory, Megatron-Bridge, NeMo-RL), Hydra compose (verl), PyYAML's
safe_load (TRL, axolotl, ms-swift, accelerate), HfArgumentParser for command-line flags, json
(DeepSpeed), tomllib (torchtitan). The oracles are imported only here, never by the lint path (the
last test checks sys.modules after a check in a fresh interpreter)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from packlint.api import inspect_script

ORACLE = Path(__file__).parent / "fixtures" / "configs" / "oracle"
omegaconf = pytest.importorskip("omegaconf")
OmegaConf = omegaconf.OmegaConf


def unflatten(settings: dict) -> tuple[dict, set[str]]:
    """packlint's dotted settings as a nested dict (values only), and the keys it says are unknown."""
    out: dict = {}
    unknown: set[str] = set()
    for key, entry in settings.items():
        if "unknown" in entry:
            unknown.add(key)
            continue
        cur = out
        parts = key.split(".")
        for p in parts[:-1]:
            cur = cur.setdefault(p, {})
        cur[parts[-1]] = entry["value"]
    return out, unknown


def packlint_config(case: str, monkeypatch, script: str = "train.sh", launch: int = 0) -> dict:
    monkeypatch.chdir(ORACLE / case)
    model = inspect_script(script)
    return model["launches"][launch]["variants"][0]["config"]


def drop(d: dict, dotted: set[str]) -> dict:
    """A copy of a nested dict without the dotted keys (those packlint leaves unknown)."""
    d = json.loads(json.dumps(d))
    for key in dotted:
        cur = d
        parts = key.split(".")
        for p in parts[:-1]:
            cur = cur.get(p, {})
        cur.pop(parts[-1], None)
    return d


def coerce_flags(settings: dict, types: dict[str, type]) -> None:
    """Command-line flag values are kept as text (the field's type is the program's); type them as the
    program's dataclass does, for comparing with HfArgumentParser's result."""
    for key, t in types.items():
        entry = settings.get(key)
        if entry is not None and entry.get("source") == "flag" and isinstance(entry["value"], str):
            entry["value"] = t(entry["value"])


# ---------------------------------------------------------------------------------------------- stacks


def test_llamafactory_omegaconf_load_and_cli_merge(monkeypatch):
    cfg = packlint_config("llamafactory", monkeypatch)
    got, unknown = unflatten(cfg["settings"])
    # LLaMA-Factory's read_args (parser.py:112-126), as written there: no resolve=True, so `${template}`
    # reaches HfArgumentParser as the text itself
    path = ORACLE / "llamafactory/examples/train_full/qwen2_5_full_sft.yaml"
    argv = ["learning_rate=2e-5", "cutoff_len=4096", "dataset=[a,b]", "output_dir=out/x"]
    expected = OmegaConf.to_container(OmegaConf.merge(OmegaConf.load(path), OmegaConf.from_cli(argv)))
    assert not unknown and got == expected
    assert got["run_name"] == "${template}-full-sft"
    # the DeepSpeed JSON it names, as json.load reads it
    ds, _ = unflatten(cfg["sections"]["deepspeed"])
    assert ds == json.loads((ORACLE / "llamafactory/examples/deepspeed/ds_z3_config.json").read_text())
    # positions: the YAML line of each key
    assert cfg["settings"]["neat_packing"]["line"] == 19 and cfg["settings"]["neat_packing"]["value"] is False


def test_trl_safe_load_then_hf_argument_parser(monkeypatch):
    HfArgumentParser = pytest.importorskip("transformers").HfArgumentParser

    @dataclasses.dataclass
    class Args:  # the fields the command line gives (TrlParser: the YAML sets defaults, flags win)
        per_device_train_batch_size: int = 8
        max_length: int = 1024
        output_dir: str = "x"

    cfg = packlint_config("trl", monkeypatch)
    settings = cfg["settings"]
    coerce_flags(settings, {"per_device_train_batch_size": int, "max_length": int})
    got, unknown = unflatten(settings)
    expected = yaml.safe_load((ORACLE / "trl/sft_config.yaml").read_text())
    (args,) = HfArgumentParser(Args).parse_args_into_dataclasses(
        ["--per_device_train_batch_size", "2", "--max_length", "4096", "--output_dir", "out"]
    )
    expected.update(dataclasses.asdict(args))
    assert not unknown and got == expected


def test_axolotl_safe_load(monkeypatch):
    got, unknown = unflatten(packlint_config("axolotl", monkeypatch)["settings"])
    assert not unknown and got == yaml.safe_load((ORACLE / "axolotl/lora.yml").read_text())


def test_swift_safe_load_and_bool_flag(monkeypatch):
    HfArgumentParser = pytest.importorskip("transformers").HfArgumentParser

    @dataclasses.dataclass
    class Args:
        packing: bool = False

    got, unknown = unflatten(packlint_config("swift", monkeypatch)["settings"])
    expected = yaml.safe_load((ORACLE / "swift/sft.yaml").read_text())
    (args,) = HfArgumentParser(Args).parse_args_into_dataclasses(["--packing", "false"])
    expected["packing"] = args.packing
    assert not unknown and got == expected


def test_verl_hydra_compose(monkeypatch):
    hydra = pytest.importorskip("hydra")
    cfg = packlint_config("verl", monkeypatch)
    got, unknown = unflatten(cfg["settings"])
    overrides = [
        "data.train_batch_size=256",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
        "actor_rollout_ref.actor.optim.lr=1e-6",
        "+trainer.val_before_train=False",
        "~algorithm.lam",
        "trainer.logger=['console']",
        "trainer.n_gpus_per_node=4",
    ]
    with hydra.initialize_config_dir(config_dir=str(ORACLE / "verl/config"), version_base=None):
        composed = hydra.compose(config_name="ppo_trainer", overrides=overrides)
    expected = OmegaConf.to_container(composed, resolve=True)
    assert "incomplete" not in cfg and not unknown
    assert got == expected
    # provenance: a default from the group file, an override from the script
    s = cfg["settings"]
    assert s["actor_rollout_ref.actor.strategy"]["file"].endswith("config/actor/dp_actor.yaml")
    assert s["data.train_batch_size"]["file"] == "train.sh" and s["data.train_batch_size"]["line"] == 3


def _apply_hydra_overrides(conf, overrides: list[str]):
    """Megatron-Bridge / NeMo-RL: Hydra's override grammar applied to an OmegaConf config
    (Megatron-Bridge src/megatron/bridge/training/utils/omegaconf_utils.py:105-163)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    for ov in OverridesParser.create().parse_overrides(overrides):
        key = ov.key_or_group
        if ov.is_delete():
            parent, _, leaf = key.rpartition(".")
            node = OmegaConf.select(conf, parent) if parent else conf
            node.pop(leaf)
        else:
            OmegaConf.update(conf, key, ov.value(), force_add=ov.is_add() or ov.is_force_add())
    return conf


def test_megatron_bridge_config_file_and_overrides(monkeypatch):
    pytest.importorskip("hydra")
    cfg = packlint_config("megatron_bridge", monkeypatch)
    assert cfg["stack"] == "megatron-bridge"
    got, unknown = unflatten(cfg["settings"])
    conf = OmegaConf.load(ORACLE / "megatron_bridge/conf.yaml")
    conf = _apply_hydra_overrides(
        conf, ["dataset.pack_sequences_in_batch=True", "train.micro_batch_size=2", "+logger.log_interval=5"]
    )
    assert not unknown and got == OmegaConf.to_container(conf, resolve=True)


def test_nemo_rl_config_and_overrides_custom_resolver_is_unknown(monkeypatch):
    pytest.importorskip("hydra")
    cfg = packlint_config("nemo_rl", monkeypatch)
    assert cfg["stack"] == "nemo-rl"
    got, unknown = unflatten(cfg["settings"])
    if not OmegaConf.has_resolver("mul"):
        OmegaConf.register_new_resolver("mul", lambda a, b: a * b)  # NeMo-RL registers it
    conf = OmegaConf.load(ORACLE / "nemo_rl/grpo_math_1B.yaml")
    conf = _apply_hydra_overrides(conf, ["policy.model_name=Qwen/Qwen2.5-7B", "cluster.num_nodes=2"])
    expected = OmegaConf.to_container(conf, resolve=True)
    # a custom resolver is the program's own: packlint says unknown, never a guess
    assert unknown == {"policy.sequence_packing.train_mb_tokens"}
    assert got == drop(expected, unknown)


def test_torchtitan_toml_and_dotted_flag(monkeypatch):
    import tomllib

    cfg = packlint_config("torchtitan", monkeypatch, script="run_train.sh")
    assert cfg["stack"] == "torchtitan"
    coerce_flags(cfg["settings"], {"training.steps": int})
    got, unknown = unflatten(cfg["settings"])
    expected = tomllib.loads((ORACLE / "torchtitan/llama3_8b.toml").read_text())
    expected["training"]["steps"] = 10
    assert not unknown and got == expected
    assert cfg["settings"]["optimizer.lr"]["line"] == 18


def test_accelerate_config_section(monkeypatch):
    cfg = packlint_config("accelerate", monkeypatch)
    assert cfg["stack"] == "axolotl"
    got, unknown = unflatten(cfg["sections"]["accelerate"])
    assert not unknown and got == yaml.safe_load((ORACLE / "accelerate/multi_gpu.yaml").read_text())
    main, _ = unflatten(cfg["settings"])
    assert main == yaml.safe_load((ORACLE / "axolotl/lora.yml").read_text())


@pytest.mark.parametrize(
    "text",
    [
        "a: yes\nb: No\nc: on\nd: 1e-5\ne: 1.0e-5\nf: 0x1F\ng: 017\nh: 1_000\ni: ~\nj: 2001-12-14\nk: .inf\nl: '1'\n",
        "m: [1, 2.5, 'x', null, true]\nn: {p: 1, q: [a, b]}\no: !!str 12\nr: |\n  block\n  text\n",
        "base: &B {x: 1, y: 2}\nderived:\n  <<: *B\n  y: 3\n",
    ],
)
@pytest.mark.parametrize("dialect", ["pyyaml", "omegaconf"])
def test_scalar_typing_matches_the_loaders(text, dialect):
    from packlint.configs.files import load_yaml

    got = load_yaml(text, dialect).plain()
    if dialect == "pyyaml":
        expected = yaml.safe_load(text)
    else:
        from omegaconf._utils import get_yaml_loader

        expected = yaml.load(text, Loader=get_yaml_loader())
    # PyYAML makes dates datetime objects; packlint keeps their text (rules compare text)
    expected = json.loads(json.dumps(expected, default=str))
    if "o: !!str 12" in text:
        expected.pop("o"), got.pop("o")  # an explicit tag: not followed (documented)
    assert json.loads(json.dumps(got, default=str)) == expected


def test_the_lint_path_never_imports_the_oracles(tmp_path):
    """A check of scripts naming YAML/JSON/TOML files imports no OmegaConf, Hydra, transformers or torch
    (PyYAML's C composer may compose the node tree; the typing, which these tests check against the
    stacks' loaders, is packlint's own), and a script naming no config file imports no YAML library."""
    code = f"""
import sys, os
os.chdir({str(ORACLE / 'llamafactory')!r})
from packlint.cli import main
main(['check', 'train.sh', '--format', 'json'])
main(['check', {str(ORACLE / 'torchtitan/run_train.sh')!r}, '--format', 'json'])
bad = sorted(m for m in ('omegaconf', 'hydra', 'transformers', 'torch') if m in sys.modules)
print(','.join(bad), file=sys.stderr)
"""
    script = tmp_path / "plain.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --micro-batch-size 1\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stderr.strip().splitlines()[-1:] in ([], [""]), r.stderr
    plain = (
        "import sys\nfrom packlint.cli import main\n"
        f"main(['check', {str(script)!r}, '--format', 'json'])\n"
        "print('ruamel' in ' '.join(sys.modules) or 'yaml' in sys.modules, file=sys.stderr)\n"
    )
    r = subprocess.run([sys.executable, "-c", plain], capture_output=True, text=True, timeout=120)
    assert r.stderr.strip().splitlines()[-1] == "False", r.stderr


def test_nemo_rl_defaults_inheritance(monkeypatch):
    """NeMo-RL's load_config: `defaults: parent.yaml` beside the file is merged first
    (OmegaConf.merge(parent, child)), then the Hydra-style overrides."""
    pytest.importorskip("hydra")
    cfg = packlint_config("nemo_rl", monkeypatch, script="train_8b.sh")
    got, unknown = unflatten(cfg["settings"])
    if not OmegaConf.has_resolver("mul"):
        OmegaConf.register_new_resolver("mul", lambda a, b: a * b)
    child = OmegaConf.load(ORACLE / "nemo_rl/grpo_math_8B.yaml")
    child.pop("defaults")
    conf = OmegaConf.merge(OmegaConf.load(ORACLE / "nemo_rl/grpo_math_1B.yaml"), child)
    conf = _apply_hydra_overrides(conf, ["cluster.num_nodes=4"])
    expected = OmegaConf.to_container(conf, resolve=True)
    assert "incomplete" not in cfg and unknown == {"policy.sequence_packing.train_mb_tokens"}
    assert got == drop(expected, unknown)
    assert cfg["settings"]["policy.model_name"]["file"] == "grpo_math_8B.yaml"
    assert cfg["settings"]["policy.precision"]["file"] == "grpo_math_1B.yaml"


def _as_tuple(node) -> object:
    """A CNode tree as plain data with every position, for comparing two composers."""
    v = node.value
    if isinstance(v, dict):
        v = tuple((k, _as_tuple(x)) for k, x in v.items())
    elif isinstance(v, list):
        v = tuple(_as_tuple(x) for x in v)
    return (v, node.line, node.column, node.end_line, node.end_column)


def test_libyaml_and_ruamel_compose_the_same_tree():
    """Where configs/files.py takes libyaml's tree (PyYAML's C composer), it is the tree ruamel's composer
    gives: the same values and the same positions, for every YAML file of the fixtures and examples, in
    each typing dialect. (Texts libyaml may read otherwise go to ruamel: _compose_libyaml says so.)"""
    from packlint.configs import files

    root = Path(__file__).resolve().parent.parent
    paths = sorted(
        p for d in ("tests/fixtures", "examples") for ext in ("*.yaml", "*.yml") for p in (root / d).rglob(ext)
    )
    assert len(paths) > 40
    taken = 0
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        fast = files._compose_libyaml(text)
        if fast is files._NOT_COMPOSED:
            continue
        try:
            slow = files._yaml().compose(text)
        except Exception:  # noqa: BLE001 - ruamel rejects it: libyaml must not have composed it either
            raise AssertionError(f"libyaml composed {path}, ruamel rejects it") from None
        taken += 1
        for dialect in ("pyyaml", "omegaconf", "yaml12"):
            if fast is None or slow is None:
                assert fast is None and slow is None, path
                continue
            a = _as_tuple(files._convert(fast, dialect, 0, [0]))
            b = _as_tuple(files._convert(slow, dialect, 0, [0]))
            assert a == b, (path, dialect)
    assert taken > len(paths) // 2
