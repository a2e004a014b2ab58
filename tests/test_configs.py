"""Issue 20: the config files a launch names, merged as its stack merges them, with file:line:col;
the condition functions that read them (setting/enabled/setting_given on any key, stack(),
stack_version()); `versions` ranges; `setting:KEY` locations."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from packlint.api import inspect_script
from packlint.cli import main as packlint_main


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


def config_of(root: Path, script: str, files: dict[str, str] | None = None, launch: int = 0) -> dict:
    write(root, {"train.sh": script, **(files or {})})
    (root / ".git").mkdir(exist_ok=True)
    model = inspect_script(root / "train.sh")
    return model["launches"][launch]["variants"][0]["config"]


def values(cfg: dict, section: str = "main") -> dict:
    settings = cfg["settings"] if section == "main" else cfg["sections"][section]
    return {k: e.get("value", {"unknown": e.get("unknown")}) for k, e in settings.items()}


def check_json(capsys, root: Path, *extra: str) -> list[dict]:
    code = packlint_main(["check", str(root / "train.sh"), "--format", "json", *extra])
    out, err = capsys.readouterr()
    assert code in (0, 1), out + err
    return json.loads(out)["findings"]


# ---------------------------------------------------------------------------------------------- typing


def test_llamafactory_yaml_typed_as_omegaconf_with_dotlist_overrides(tmp_path):
    cfg = config_of(
        tmp_path,
        "llamafactory-cli train examples/sft.yaml learning_rate=2e-5 packing=false\n",
        {
            "examples/sft.yaml": """
            model_name_or_path: Qwen/Qwen2.5-7B
            stage: sft
            packing: yes
            learning_rate: 1e-4
            output_dir: saves/${stage}
            per_device_train_batch_size: 2
            """
        },
    )
    assert cfg["stack"] == "llamafactory"
    v = values(cfg)
    # OmegaConf's loader: `yes` is a YAML 1.1 boolean, 1e-4 a float; `${stage}` kept as written
    # (read_args: OmegaConf.to_container without resolve=True)
    assert v["stage"] == "sft" and v["per_device_train_batch_size"] == 2
    assert v["learning_rate"] == 2e-5 and v["packing"] is False  # the overrides win
    assert v["output_dir"] == "saves/${stage}"
    s = cfg["settings"]
    assert (s["model_name_or_path"]["file"], s["model_name_or_path"]["line"], s["model_name_or_path"]["column"]) == (
        "examples/sft.yaml" if Path.cwd() == tmp_path else s["model_name_or_path"]["file"],
        1,
        1,
    )
    assert s["packing"]["file"].endswith("train.sh") and s["packing"]["source"] == "override"


def test_trl_yaml_is_pyyaml_typed_and_flags_override(tmp_path):
    cfg = config_of(
        tmp_path,
        "trl sft --config sft.yaml --max_length 4096 --packing\n",
        {"sft.yaml": "packing: false\nlearning_rate: 1e-5\nmax_length: 2048\nbf16: on\n"},
    )
    v = values(cfg)
    assert cfg["stack"] == "trl"
    # yaml.safe_load: YAML 1.1 reads `1e-5` as a string (no dot), `on` as true
    assert v["learning_rate"] == "1e-5" and v["bf16"] is True
    assert v["max_length"] == "4096" and v["packing"] is True


def test_deepspeed_json_nested_in_yaml_and_named_by_flag(tmp_path):
    ds = '{\n  "train_batch_size": "auto",\n  "zero_optimization": {"stage": 3},\n  "bf16": {"enabled": true}\n}\n'
    cfg = config_of(
        tmp_path,
        "llamafactory-cli train x.yaml\ndeepspeed --num_gpus 8 train.py --deepspeed ds.json\n",
        {"x.yaml": "stage: sft\ndeepspeed: ds.json\n", "ds.json": ds},
    )
    d = cfg["sections"]["deepspeed"]
    assert d["zero_optimization.stage"]["value"] == 3 and d["zero_optimization.stage"]["line"] == 3
    assert d["train_batch_size"]["value"] == "auto" and d["bf16.enabled"]["value"] is True
    hf = inspect_script(tmp_path / "train.sh")["launches"][1]["variants"][0]["config"]
    assert hf["stack"] == "hf-trainer" and hf["sections"]["deepspeed"]["train_batch_size"]["line"] == 2


def test_missing_file_and_unknown_path_are_never_empty(tmp_path):
    cfg = config_of(tmp_path, 'axolotl train examples/nothere.yml\n')
    assert cfg["files"][0]["missing"] is True and "incomplete" in cfg
    # a bare name is looked up in the job's working directory, which is not known: unknown, not missing
    cfg = config_of(tmp_path, 'axolotl train nothere.yml\n')
    assert "missing" not in cfg["files"][0] and "working directory" in cfg["files"][0]["unknown"]
    cfg = config_of(tmp_path, 'axolotl train "$(ls *.yml)"\n')
    assert "incomplete" in cfg and "unknown" in cfg["files"][0]


def test_invalid_yaml_is_one_finding_with_a_line(tmp_path, capsys):
    write(tmp_path, {"train.sh": "trl sft --config sft.yaml\n", "sft.yaml": "a: 1\nb: [2\n"})
    found = check_json(capsys, tmp_path)
    assert [f["code"] for f in found] == ["PK602"]
    assert found[0]["path"].endswith("sft.yaml") and found[0]["related"][0]["path"].endswith("train.sh")


def test_hydra_overrides_add_delete(tmp_path):
    cfg = config_of(
        tmp_path,
        "python -m verl.trainer.main_ppo --config-path cfg --config-name ppo data.batch=256 +extra.x=1 ~trainer.logger\n",
        {"cfg/ppo.yaml": "data:\n  batch: 64\n  max_len: 1024\ntrainer:\n  logger: [console]\n  nnodes: 1\n"},
    )
    v = values(cfg)
    assert v == {"data.batch": 256, "data.max_len": 1024, "trainer.nnodes": 1, "extra.x": 1}
    assert "incomplete" not in cfg


# ---------------------------------------------------------------------------------------------- conditions

USER_RULES = """
[[rule]]
code = "XX001"
name = "packing-needs-drop-last"
severity = "warning"
summary = "packing in the rollout variant needs packing_drop_last"
when = "enabled('training.packing') and setting('custom.trainer_variant') == 'rollout_matching_sft' and not enabled('training.packing_drop_last')"
message = "training.packing is on with {setting('custom.trainer_variant')}: set training.packing_drop_last: true"
report_at = "setting:training.packing"
explanation = "The rollout-matching SFT variant drops incomplete packs only with packing_drop_last."
related = [ { at = "setting:custom.trainer_variant", message = "the variant is chosen here" } ]
"""


def test_user_rule_reads_yaml_keys_and_reports_in_the_yaml(tmp_path, capsys):
    write(
        tmp_path,
        {
            "train.sh": "python -m mytrainer.sft --config configs/sft.yaml\n",
            "configs/sft.yaml": """
            training:
              packing: true
              per_device_train_batch_size: 1
            custom:
              trainer_variant: rollout_matching_sft
            """,
            "rules.toml": USER_RULES,
        },
    )
    found = check_json(capsys, tmp_path, "--rule-file", str(tmp_path / "rules.toml"), "--select", "XX001")
    assert len(found) == 1
    f = found[0]
    assert f["path"].endswith("configs/sft.yaml") and f["line"] == 2
    related = {(Path(r["path"]).name, r["line"]) for r in f["related"]}
    assert ("sft.yaml", 5) in related and ("train.sh", 1) in related
    # the good case: packing_drop_last set
    (tmp_path / "configs/sft.yaml").write_text(
        "training:\n  packing: true\n  packing_drop_last: true\ncustom:\n  trainer_variant: rollout_matching_sft\n"
    )
    assert check_json(capsys, tmp_path, "--rule-file", str(tmp_path / "rules.toml"), "--select", "XX001") == []


def test_unknown_configuration_never_fires(tmp_path, capsys):
    # the file's name is computed at run time: nothing is known, the rule stays silent
    write(tmp_path, {"train.sh": 'python -m mytrainer.sft --config "$(cat cfg_name)"\n', "rules.toml": USER_RULES})
    found = check_json(capsys, tmp_path, "--rule-file", str(tmp_path / "rules.toml"), "--select", "XX001")
    assert [f["severity"] for f in found] == ["info"] and "could not decide" in found[0]["message"]


@pytest.mark.parametrize(
    "versions,installed,fires,suffix",
    [
        ("trl>=0.19", "0.20.1", True, False),
        ("trl>=0.19,<0.21", "0.21.0", False, False),
        ("trl<0.19", None, True, True),
    ],
)
def test_versions_field(tmp_path, capsys, versions, installed, fires, suffix):
    rules = f"""
    [[rule]]
    code = "XX002"
    name = "trl-packing"
    severity = "warning"
    summary = "s"
    versions = "{versions}"
    when = "stack() == 'trl' and enabled('packing')"
    message = "packing on {{stack()}}"
    report_at = "setting:packing"
    explanation = "x"
    """
    files = {"train.sh": "trl sft --config sft.yaml\n", "sft.yaml": "packing: true\n", "rules.toml": rules}
    if installed:
        files["trl/__init__.py"] = f'__version__ = "{installed}"\n'
    write(tmp_path, files)
    (tmp_path / ".git").mkdir(exist_ok=True)
    found = check_json(capsys, tmp_path, "--rule-file", str(tmp_path / "rules.toml"), "--select", "XX002")
    assert bool(found) == fires
    if fires:
        assert found[0]["path"].endswith("sft.yaml")
        assert ("(assuming " + versions + ": the installed version is unknown)" in found[0]["message"]) == suffix
        assert (found[0]["evidence"] == "assumed") == suffix


def test_stack_version_sources(tmp_path, monkeypatch):
    from packlint.configs import versions

    write(tmp_path, {"src/llamafactory/extras/env.py": 'VERSION = "0.9.4.dev0"\n'})
    (tmp_path / ".git").mkdir()
    assert versions.stack_version("llamafactory", "llamafactory", str(tmp_path), None)["value"] == "0.9.4.dev0"
    versions._CACHE.clear()
    out = versions.stack_version("trl", "trl-not-installed", str(tmp_path / "sub"), {"trl": "0.18"})
    assert out == {"value": "0.18", "source": "packlint configuration (stack-versions)"}
    monkeypatch.delenv("PACKLINT_IGNORE_INSTALLED")
    versions._CACHE.clear()
    assert versions.stack_version("deepspeed", "pytest", None, None)["source"] == "installed distribution pytest"
    # the dist-info scan finds what importlib.metadata finds (without importing it on the lint path)
    from importlib import metadata

    for dist in ("pytest", "jsonschema", "ruamel.yaml", "tree-sitter", "no-such-distribution-xyz"):
        try:
            expected = metadata.version(dist)
        except metadata.PackageNotFoundError:
            expected = None
        assert versions.installed_version(dist) == expected, dist


SEED = Path(__file__).parent / "fixtures" / "configs" / "seed"


def test_seed_user_rule_example(capsys, monkeypatch):
    """docs/rules.md's worked example, run on a fixture: fires on the YAML missing packing_drop_last,
    at its `training.packing` line, with the variant's line and the launch related; not on the good one."""
    doc = (Path(__file__).parent.parent / "docs" / "rules.md").read_text()
    rule = (SEED / "team.toml").read_text().split("[[rule]]", 1)[1].strip()
    assert rule in doc, "team.toml and the docs' example differ"
    monkeypatch.chdir(SEED)
    code = packlint_main(["check", "train.sh", "--rule-file", "team.toml", "--select", "TEAM001", "--format", "json"])
    found = json.loads(capsys.readouterr().out)["findings"]
    assert code == 0  # a warning does not fail the run
    assert [(f["path"], f["line"], f["column"]) for f in found] == [("configs/sft.yaml", 4, 3)]
    assert {(r["path"], r["line"]) for r in found[0]["related"]} == {("configs/sft.yaml", 7), ("train.sh", 3)}


# ---------------------------------------------------------------------------------------------- config files as inputs

DS_BAD = '{\n  "train_micro_batch_size_per_gpu": 4,\n  "train_batch_size": "auto"\n}\n'
LF_YAML = "model_name_or_path: Qwen/Qwen2.5-7B\nstage: sft\ndeepspeed: ds.json\nper_device_train_batch_size: 2\n"


def test_check_a_config_file_directly(tmp_path, capsys):
    write(tmp_path, {"sft.yaml": LF_YAML, "ds.json": DS_BAD, "notes.yaml": "title: x\n"})
    (tmp_path / ".git").mkdir()
    code = packlint_main(["check", str(tmp_path / "sft.yaml"), "--format", "json"])
    found = json.loads(capsys.readouterr().out)["findings"]
    assert code == 1 and [f["code"] for f in found] == ["PK611"]
    assert found[0]["path"].endswith("ds.json") and found[0]["line"] == 2
    # a YAML of no known stack is a one-line error, exit 2
    code = packlint_main(["check", str(tmp_path / "notes.yaml")])
    captured = capsys.readouterr()
    assert code == 2 and "not a launch script, nor a config file of a stack" in captured.err + captured.out


def test_check_config_text_from_stdin_under_its_name(tmp_path, capsys, monkeypatch):
    import io

    write(tmp_path, {"sft.yaml": "model_name_or_path: x\nstage: sft\n", "ds.json": DS_BAD})
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    # the editor's unsaved text (it names the DeepSpeed JSON; the file on disk does not)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(LF_YAML.encode())))
    code = packlint_main(["check", "-", "--stdin-filename", "sft.yaml", "--format", "json"])
    found = json.loads(capsys.readouterr().out)["findings"]
    assert code == 1 and [f["code"] for f in found] == ["PK611"]


def test_precommit_hook_keeps_config_files_of_known_stacks(tmp_path):
    from packlint.precommit_hook import select_argv

    write(tmp_path, {"sft.yaml": LF_YAML, "notes.yaml": "title: x\n", "ds.json": DS_BAD, "pkg.json": "{}\n"})
    files = [str(tmp_path / n) for n in ("sft.yaml", "notes.yaml", "ds.json", "pkg.json")]
    assert select_argv(files) == ["check", str(tmp_path / "sft.yaml"), str(tmp_path / "ds.json")]


def test_editor_server_treats_known_config_files_as_documents(tmp_path):
    pytest.importorskip("pygls")
    from packlint.server import is_shell

    write(tmp_path, {"sft.yaml": LF_YAML})
    uri = (tmp_path / "sft.yaml").as_uri()
    assert is_shell(uri, "yaml", LF_YAML)
    assert not is_shell((tmp_path / "notes.yaml").as_uri(), "yaml", "title: x\n")


def test_a_word_packlint_cannot_know_may_override_a_file_value(tmp_path, capsys):
    rules = """
[[rule]]
code = "XX003"
name = "trl-packing"
severity = "warning"
summary = "s"
explanation = "x"
when = "enabled('packing')"
message = "packing"
report_at = "setting:packing"
undecided = "ignore"
"""
    write(tmp_path, {"train.sh": "trl sft --config sft.yaml\n", "sft.yaml": "packing: true\n", "rules.toml": rules})
    assert len(check_json(capsys, tmp_path, "--rule-file", str(tmp_path / "rules.toml"), "--select", "XX003")) == 1
    (tmp_path / "train.sh").write_text("trl sft --config sft.yaml $(cat extra_args)\n")
    assert check_json(capsys, tmp_path, "--rule-file", str(tmp_path / "rules.toml"), "--select", "XX003") == []


def test_unknown_program_with_a_known_stacks_config_file(tmp_path):
    # LLaMA-Factory's own entry point, `accelerate launch src/train.py x.yaml`: the YAML's keys say the stack
    cfg = config_of(
        tmp_path,
        "accelerate launch --config_file acc.yaml src/train.py sft.yaml\n",
        {"sft.yaml": "model_name_or_path: m\nstage: sft\nlearning_rate: 1e-4\n", "acc.yaml": "num_processes: 8\n"},
    )
    assert cfg["stack"] == "llamafactory"
    assert cfg["settings"]["learning_rate"]["value"] == 1e-4  # OmegaConf's typing, as LLaMA-Factory reads it
    assert cfg["sections"]["accelerate"]["num_processes"]["value"] == 8


def test_hf_mismatch_ignores_values_decided_at_run_time(tmp_path, capsys):
    # axolotl's `bf16: auto` is resolved from the GPU before TrainingArguments (seen in axolotl's own
    # examples with deepspeed_configs/zero3_bf16.json): no PK611; a hard-coded disagreement still fires
    ds = '{\n  "bf16": {"enabled": true},\n  "train_micro_batch_size_per_gpu": "auto"\n}\n'
    write(tmp_path, {"x.yml": "base_model: m\ndatasets: []\nbf16: auto\ndeepspeed: ds.json\n", "ds.json": ds})
    (tmp_path / ".git").mkdir()
    code = packlint_main(["check", str(tmp_path / "x.yml"), "--format", "json", "--select", "PK611"])
    assert json.loads(capsys.readouterr().out)["findings"] == [] and code == 0
    (tmp_path / "x.yml").write_text("base_model: m\ndatasets: []\nbf16: false\ndeepspeed: ds.json\n")
    packlint_main(["check", str(tmp_path / "x.yml"), "--format", "json", "--select", "PK611"])
    found = json.loads(capsys.readouterr().out)["findings"]
    assert [f["code"] for f in found] == ["PK611"] and "bf16.enabled=true vs hf bf16|bf16_full_eval=false" in found[0]["message"]


def test_hydra_string_defaults_with_a_package_and_omegaconf_missing(tmp_path):
    # verl's `- reward_manager@reward_manager` (a config of the same directory at a package) and `???`
    cfg = config_of(
        tmp_path,
        "python -m verl.trainer.main_ppo --config-path cfg --config-name ppo\n",
        {
            "cfg/ppo.yaml": "defaults:\n  - reward_manager@reward_manager\n  - _self_\nmodel:\n  name: ???\n",
            "cfg/reward_manager.yaml": "name: naive\nnum_workers: 4\n",
        },
    )
    assert "incomplete" not in cfg
    assert cfg["settings"]["reward_manager.name"]["value"] == "naive"
    assert "unknown" in cfg["settings"]["model.name"]


def test_hydra_config_path_is_relative_to_the_module(tmp_path, capsys):
    # verl's scripts: `--config-path=config --config-name='ppo_megatron_trainer.yaml'`, relative to the file
    # declaring @hydra.main (verl/trainer/), not to the script: composed, and no PK601
    write(
        tmp_path,
        {
            "examples/run.sh": "python3 -m verl.trainer.main_ppo --config-path=config "
            "--config-name='ppo_megatron_trainer.yaml' data.train_batch_size=8\n",
            "verl/trainer/config/ppo_megatron_trainer.yaml": "data:\n  train_batch_size: 1024\n  max_len: 512\n",
        },
    )
    (tmp_path / ".git").mkdir()
    cfg = inspect_script(tmp_path / "examples/run.sh")["launches"][0]["variants"][0]["config"]
    assert "incomplete" not in cfg and values(cfg) == {"data.train_batch_size": 8, "data.max_len": 512}
    # the package not at hand (verl installed elsewhere): unknown, never "missing"
    (tmp_path / "verl/trainer/config/ppo_megatron_trainer.yaml").unlink()
    (tmp_path / "verl/trainer/config").rmdir()
    code = packlint_main(["check", str(tmp_path / "examples/run.sh"), "--format", "json", "--select", "PK601"])
    assert json.loads(capsys.readouterr().out)["findings"] == [] and code == 0


# ---------------------------------------------------------------------------------------------- accelerate world size

ACC = """
compute_environment: {env}
distributed_type: DEEPSPEED
deepspeed_config:
  deepspeed_config_file: ds.json
machine_rank: 0
num_machines: 2
{procs}
"""
DS = '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4}\n'


@pytest.mark.parametrize(
    ("cli", "env", "procs", "world"),
    [
        ("", "LOCAL_MACHINE", "num_processes: 16", {"value": 16}),  # the file's total, over both machines
        ("--num_processes 4 ", "LOCAL_MACHINE", "num_processes: 16", {"value": 4}),  # the command line wins
        ("", "AMAZON_SAGEMAKER", "num_processes: 16", None),  # not copied into the arguments there
        ("", "LOCAL_MACHINE", "", None),  # the file does not say
        ("", "LOCAL_MACHINE", "num_processes: -1", None),  # accelerate refuses it
        ("", "LOCAL_MACHINE", "num_processes: ${N}", None),  # not a number
    ],
)
def test_accelerate_world_size_from_its_config_file(tmp_path, cli, env, procs, world):
    """accelerate's _validate_launch_command copies the config's num_processes into the arguments the
    command line leaves unset (LOCAL_MACHINE configs): the launch's world size, with the file's line."""
    write(tmp_path, {"acc.yaml": ACC.format(env=env, procs=procs), "ds.json": DS})
    write(tmp_path, {"train.sh": f"accelerate launch --config_file acc.yaml {cli}train.py --deepspeed ds.json\n"})
    (tmp_path / ".git").mkdir()
    launch = inspect_script(tmp_path / "train.sh")["launches"][0]
    got = launch["parallel"]["world"]
    if world is None:
        assert "unknown" in got and launch["world_size"] is None or "unknown" in (launch["world_size"] or {})
    else:
        assert got["value"] == world["value"] and launch["world_size"] == {"value": str(world["value"])}
        if not cli:
            assert got["file"].endswith("acc.yaml") and got["line"] == 7 and got["source"].startswith("accelerate config")


# ---------------------------------------------------------------------------------------------- env-sized tools


@pytest.mark.parametrize(
    ("script", "world"),
    [
        # ms-swift: torchrun when NPROC_PER_NODE or NNODES is set (swift/cli/main.py get_torchrun_args)
        ("NPROC_PER_NODE=4 NNODES=2 swift sft --model m --dataset d\n", 8),
        ("export NPROC_PER_NODE=8\nswift sft --model m --dataset d\n", 8),
        ("NPROC_PER_NODE=8 megatron sft --model m --dataset d\n", 8),
        ("swift sft --model m --dataset d\n", None),  # one process unless the caller sets them
        ("NNODES=$WORLD_SIZE NPROC_PER_NODE=8 swift sft --model m\n", None),  # the platform's count
        ("NPROC_PER_NODE=$(nvidia-smi -L | wc -l) swift sft --model m\n", None),
        ("NPROC_PER_NODE=auto swift sft --model m\n", None),
        # LLaMA-Factory: torchrun when forced (launcher.py:56-66); NPROC_PER_NODE defaults to the device count
        ("FORCE_TORCHRUN=1 NPROC_PER_NODE=4 llamafactory-cli train x.yaml\n", 4),
        ("USE_MCA=1 NNODES=2 NPROC_PER_NODE=8 llamafactory-cli train x.yaml\n", 16),
        ("FORCE_TORCHRUN=1 llamafactory-cli train x.yaml\n", None),  # the device count
        ("NPROC_PER_NODE=4 llamafactory-cli train x.yaml\n", None),  # torchrun only if > 1 device
        ("FORCE_TORCHRUN=$F NPROC_PER_NODE=4 llamafactory-cli train x.yaml\n", None),
    ],
)
def test_world_size_of_tools_sized_by_the_environment(tmp_path, script, world):
    write(tmp_path, {"train.sh": "#!/bin/bash\n" + script, "x.yaml": "stage: sft\nmodel_name_or_path: m\n"})
    (tmp_path / ".git").mkdir()
    launch = inspect_script(tmp_path / "train.sh")["launches"][0]
    got = launch["parallel"]["world"]
    if world is None:
        assert "value" not in got and "value" not in (launch["world_size"] or {}), got
    else:
        assert got["value"] == world and launch["world_size"] == {"value": str(world)}, got


LMMS_TRAIN = """
from dataclasses import dataclass, field
from typing import Optional

import transformers


@dataclass
class ModelArguments:
    model_id: str = field(default="llava-1.5-7b")


@dataclass
class DataArguments:
    data_path: str = field(default=None)


@dataclass
class TrainingArguments(transformers.TrainingArguments):
    model_max_length: int = field(default=1024)
    use_lora: Optional[bool] = field(default=True)


def train():
    parser = transformers.HfArgumentParser((ModelArguments, DataArguments, TrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()


if __name__ == "__main__":
    train()
"""
DS_AUTO = (
    '{\n  "bf16": {"enabled": "auto"},\n  "train_micro_batch_size_per_gpu": "auto",\n  "train_batch_size": "auto",\n'
    '  "gradient_accumulation_steps": "auto",\n  "zero_optimization": {"stage": 2, "overlap_comm": false}\n}\n'
)


def test_a_deepspeed_json_on_its_own_reads_no_program_of_the_checkout(tmp_path, capsys):
    """zjysteven/lmms-finetune's shape: a root `train.py` (HfArgumentParser) and `ds_configs/zero2.json`.
    The JSON checked on its own gets a stand-in launch whose program is a placeholder: the checkout's
    train.py is not judged against the stand-in's own `--deepspeed --deepspeed_config` (once a false
    PK202 'needs a value' and PK201 'not a flag' at the JSON's first line)."""
    write(tmp_path, {"train.py": LMMS_TRAIN, "ds_configs/zero2.json": DS_AUTO, "ds_configs/zero3.json": DS_AUTO})
    (tmp_path / ".git").mkdir()
    for target in (tmp_path, tmp_path / "ds_configs" / "zero2.json"):
        packlint_main(["check", str(target), "--format", "json", "--exit-zero"])
        found = json.loads(capsys.readouterr().out)["findings"]
        assert not [f for f in found if f["code"] in ("PK201", "PK202")], found


LLAVA_PP = "deepspeed llava/train/train_mem.py \\\n    --deepspeed ./scripts/zero2.json \\\n    --model_name_or_path x\n"


def test_a_config_path_of_a_program_run_elsewhere_is_not_missing(tmp_path):
    """mbzuai-oryx/LLaVA-pp's shape: `scripts/LLaMA3-V_pretrain.sh` runs `llava/train/train_mem.py` with
    `./scripts/zero2.json`; its README copies the script into the LLaVA submodule and runs it there. Neither
    the program nor its directory is in the checkout, so the directory the job runs from is not one packlint
    looked in: the relative config path is unknown, not missing (once 6 false PK601 warnings). Where the
    program's directory is there (SliME, a LLaVA fork; VideoChat-R1's `src/sft_gqa.py` beside `src/open_r1/`),
    the path is judged from it: missing."""
    pp = tmp_path / "pp"
    cfg = config_of(pp, LLAVA_PP, {"scripts/zero3.json": "{}\n", "LLaMA-3-V/train.py": "print()\n"})
    assert "missing" not in cfg["files"][0] and "not found either" in cfg["files"][0]["unknown"]
    fork = tmp_path / "fork"
    cfg = config_of(fork, LLAVA_PP, {"llava/train/train_mem.py": "print()\n"})
    assert cfg["files"][0]["missing"] is True
    unreleased = tmp_path / "unreleased"
    script = "torchrun --nproc_per_node=8 src/sft_gqa.py --deepspeed scripts/zero3_offload.json\n"
    cfg = config_of(unreleased, script, {"src/open_r1/grpo.py": "print()\n"})
    assert cfg["files"][0]["missing"] is True
