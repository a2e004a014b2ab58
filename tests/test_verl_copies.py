"""Issue 28 (PK207 on verl): a checkout holding several vendored verl copies (RUCAIBox/Slow_Thinking_with_LLMs
has VERL-STILL/verl and entropy2performance/verl, each sub-project with its own, modified verl). The verl
config a launch composes is the copy nearest the script (the deepest of the script's directories that holds
one); where copies are equally near, which one runs is not known from the tree: a key is judged only when
every copy lacks it, and the rules reading the composed config (PK453, PK455) are undecided on what the
command line does not set."""

from __future__ import annotations

from pathlib import Path

from packlint.api import inspect_script
from packlint.codebase import CodeOptions, CodeSession
from packlint.engine import check_model
from packlint.rule_table import load_table

TABLE = load_table(use_cache=False)

# the shape of verl 0.2's verl/trainer/config/ppo_trainer.yaml (the keys these tests touch)
PPO_TRAINER = """\
data:
  tokenizer: null
  train_files: ~/data/rlhf/gsm8k/train.parquet
  max_prompt_length: 512
  train_batch_size: 1024
{data_extra}actor_rollout_ref:
  hybrid_engine: True
  actor:
    strategy: fsdp
    ppo_mini_batch_size: {mini}
    use_dynamic_bsz: False
    clip_ratio: 0.2
{actor_extra}  rollout:
    n: 1
trainer:
  nnodes: 1
  n_gpus_per_node: 8
  project_name: verl_examples
  experiment_name: gsm8k
  logger: [ 'console', 'wandb' ]
"""

LAUNCH = """\
#!/bin/bash
set -x
python3 -m verl.trainer.main_ppo \\
    data.train_files=$HOME/data/train.parquet \\
    data.train_batch_size={batch} \\
    {extra} \\
    trainer.logger=['console'] $@
"""


def _copy(root: Path, where: str, *, own_keys: bool, mini: int = 256) -> None:
    """A vendored verl at `where` (its package at where/verl/trainer); with own_keys, the sub-project's
    added keys (data.gen_batch_size, actor.clip_ratio_low), as entropy2performance/verl has them."""
    cfg = root / where / "verl" / "trainer" / "config"
    cfg.mkdir(parents=True)
    main = "import hydra\n\n@hydra.main(config_path='config', config_name='ppo_trainer')\ndef main(config): ...\n"
    (cfg.parent / "main_ppo.py").write_text(main)
    data_extra = "  gen_batch_size: ${data.train_batch_size}\n" if own_keys else ""
    actor_extra = "    clip_ratio_low: 0.2\n    clip_ratio_high: 0.28\n" if own_keys else ""
    (cfg / "ppo_trainer.yaml").write_text(PPO_TRAINER.format(data_extra=data_extra, actor_extra=actor_extra, mini=mini))


def _findings(root: Path, script_rel: str, batch: int = 1024, extra: str = "") -> list:
    (root / ".git").mkdir(exist_ok=True)
    script = root / script_rel
    script.parent.mkdir(parents=True, exist_ok=True)
    extra = extra or "data.gen_batch_size=512 actor_rollout_ref.actor.clip_ratio_low=0.2"
    script.write_text(LAUNCH.format(batch=batch, extra=extra))
    text = script.read_bytes()
    model = inspect_script(str(script), text=text, display_path=str(script))
    session = CodeSession(str(script), CodeOptions(use_cache=False))
    return check_model(model, TABLE.rules, script_text=text, code=session.facts)


def _pk207(findings: list) -> list[str]:
    return sorted(f.message.split()[0] for f in findings if f.code == "PK207")


def test_the_scripts_own_sub_project_copy_decides(tmp_path: Path) -> None:
    # Slow_Thinking's shape: a sibling sub-project's older verl one level in (sorts first), the script's
    # own sub-project's verl two levels in: its keys are the ones that count
    _copy(tmp_path, "VERL-STILL", own_keys=False)
    _copy(tmp_path, "entropy2performance/verl", own_keys=True)
    assert _pk207(_findings(tmp_path, "entropy2performance/scripts/low_ppl.sh")) == []


def test_the_nearer_copy_lacking_the_key_is_an_error(tmp_path: Path) -> None:
    # the control: the script's own copy lacks the keys, the sibling's has them -> PK207 from its own copy
    _copy(tmp_path, "A/verl", own_keys=True)
    _copy(tmp_path, "B/verl", own_keys=False)
    found = [f for f in _findings(tmp_path, "B/scripts/run.sh") if f.code == "PK207"]
    want = ["actor_rollout_ref.actor.clip_ratio_low", "data.gen_batch_size"]
    assert sorted(f.message.split()[0] for f in found) == want
    assert all(f.severity == "error" for f in found)
    assert all("verl's ppo_trainer config (verl/trainer/config/ppo_trainer.yaml)" in f.message for f in found)


def test_copies_equally_near_judge_a_key_only_when_every_one_lacks_it(tmp_path: Path) -> None:
    _copy(tmp_path, "A/verl", own_keys=True)
    _copy(tmp_path, "B/verl", own_keys=False)
    # scripts/ at the checkout's top: neither copy is its sub-project's
    assert _pk207(_findings(tmp_path, "scripts/run.sh")) == []
    found = [f for f in _findings(tmp_path, "scripts/run2.sh", extra="data.gen_batch_sise=512") if f.code == "PK207"]
    assert [f.message.split()[0] for f in found] == ["data.gen_batch_sise"]
    assert "in any of the checkout's copies" in found[0].message and "A/verl" in found[0].message
    assert "B/verl" in found[0].message and "did you mean data.gen_batch_size?" in found[0].message


def test_copies_equally_near_leave_the_composed_config_unknown(tmp_path: Path) -> None:
    # with only A's copy the batch 100 is below its mini batch 256 and not divisible by its 8 GPUs (PK453,
    # PK455); with B's copy (mini batch 64) as near as A's, those values are not known from the tree
    one, two = tmp_path / "one", tmp_path / "two"
    _copy(one, "A/verl", own_keys=False)
    alone = {f.code for f in _findings(one, "scripts/run.sh", batch=100, extra="trainer.project_name=p")}
    assert {"PK453", "PK455"} <= alone
    _copy(two, "A/verl", own_keys=False)
    _copy(two, "B/verl", own_keys=False, mini=64)
    both = {f.code for f in _findings(two, "scripts/run.sh", batch=100, extra="trainer.project_name=p")}
    assert not both & {"PK453", "PK455", "PK207"}, both
    model = inspect_script(str(two / "scripts/run.sh"))
    main = next(f for f in model["launches"][0]["config"]["files"] if f.get("role") == "main")
    assert len(main["candidates"]) == 2 and "not known from the tree" in main["unknown"]


def _with_pythonpath(root: Path, script_rel: str, export: str, extra: str = "") -> list[str]:
    _findings(root, script_rel, extra=extra)  # writes the launch
    script = root / script_rel
    script.write_text(f"#!/bin/bash\nexport {export}\n" + script.read_text().split("\n", 1)[1])
    text = script.read_bytes()
    model = inspect_script(str(script), text=text, display_path=str(script))
    session = CodeSession(str(script), CodeOptions(use_cache=False))
    return _pk207(check_model(model, TABLE.rules, script_text=text, code=session.facts))


def test_the_launchs_pythonpath_names_the_copy_first(tmp_path: Path) -> None:
    # equally near copies: the one PYTHONPATH names decides (its keys, not any copy's)
    one, two, three = tmp_path / "one", tmp_path / "two", tmp_path / "three"
    for root in (one, two):
        _copy(root, "A/verl", own_keys=True)
        _copy(root, "B/verl", own_keys=False)
    want = ["actor_rollout_ref.actor.clip_ratio_low", "data.gen_batch_size"]
    assert _with_pythonpath(one, "scripts/run.sh", "PYTHONPATH=B/verl:$PYTHONPATH") == want
    assert _with_pythonpath(two, "scripts/run.sh", "PYTHONPATH=$PYTHONPATH:A/verl") == []
    # ... and over the script's own sub-project's copy
    _copy(three, "A/verl", own_keys=False)
    _copy(three, "B/verl", own_keys=True)
    assert _with_pythonpath(three, "B/scripts/run.sh", "PYTHONPATH=../A/verl") == want


def test_a_sibling_sub_projects_only_copy_is_not_the_launchs(tmp_path: Path) -> None:
    # Light-R1's shape: train-scripts/verl-grpo.sh beside deepscaler-release/ (an evaluation project with its
    # own setup.py and a vendored verl): which verl the training script runs is not known from the tree (the
    # holdout audit read the key as one of the verl the script's data paths point at): its keys are undecided
    light, vendored = tmp_path / "light", tmp_path / "vendored"
    _copy(light, "deepscaler-release/verl", own_keys=False)
    (light / "deepscaler-release" / "setup.py").write_text("from setuptools import setup\nsetup(name='deepscaler')\n")
    found = [f for f in _findings(light, "train-scripts/verl-grpo.sh", batch=100) if f.code == "PK207"]
    assert found == [], [f.message for f in found]
    # third_party/ is no project of its own: its copy is the checkout's verl (errors, PK453 from its config)
    _copy(vendored, "third_party/verl", own_keys=False)
    found = [f for f in _findings(vendored, "scripts/run.sh", batch=100) if f.code in ("PK207", "PK453")]
    assert sorted((f.code, f.severity) for f in found) == [("PK207", "error"), ("PK207", "error"), ("PK453", "warning")]


def test_the_programs_own_hydra_main_names_the_config(tmp_path: Path) -> None:
    """hkust-nlp/Laser: the vendored verl's main_ppo.py has `@hydra.main(config_path='config',
    config_name='lengthy_ppo_trainer')`, whose YAML adds trainer.monitor_freq, data.monitor_files, ...: Hydra
    composes that one, not verl's ppo_trainer (50 false PK207 errors). A typo is still judged against it."""
    _copy(tmp_path, "", own_keys=False)
    trainer = tmp_path / "verl" / "trainer"
    (trainer / "main_ppo.py").write_text(
        "import hydra\n\n\n@hydra.main(config_path='config', config_name='lengthy_ppo_trainer', version_base=None)\n"
        "def main(config): ...\n"
    )
    lengthy = (
        (trainer / "config" / "ppo_trainer.yaml")
        .read_text()
        .replace("  nnodes: 1\n", "  nnodes: 1\n  monitor_freq: -1\n")
    )
    (trainer / "config" / "lengthy_ppo_trainer.yaml").write_text(lengthy)
    found = [
        f
        for f in _findings(tmp_path, "scripts/train.sh", extra="trainer.monitor_freq=20 trainer.nnode=1")
        if f.code == "PK207"
    ]
    assert [f.message.split()[0] for f in found] == ["trainer.nnode"]
    assert "verl's lengthy_ppo_trainer config (verl/trainer/config/lengthy_ppo_trainer.yaml)" in found[0].message
    # a name given by an expression: the config is not known, no key is judged
    (trainer / "main_ppo.py").write_text(
        "import hydra\nNAME = 'x'\n\n@hydra.main(config_path='config', config_name=NAME)\ndef main(c): ...\n"
    )
    assert _pk207(_findings(tmp_path, "scripts/train2.sh", extra="trainer.nnode=1")) == []


RAY_TRAINER = """\
class RayPPOTrainer:
    def _validate_config(self):
        config = self.config
        if not config.actor_rollout_ref.actor.use_dynamic_bsz:
            {hash}assert config.data.train_batch_size >= config.actor_rollout_ref.actor.ppo_mini_batch_size
            pass
"""


def test_a_vendored_copy_decides_the_batch_check_by_its_own_code(tmp_path: Path) -> None:
    """venteuxannie/verl-agent-habitat: its verl (0.3.1.dev) comments out ray_trainer.py's `assert
    config.data.train_batch_size >= ...ppo_mini_batch_size` (its batch counts environment groups), so a batch of 16
    under a mini batch of 256 starts (28 false PK453 errors, judged by released verl's check). With the assert in
    the copy, PK453 stands."""
    for hash_, want in (("# ", set()), ("", {"PK453"})):
        root = tmp_path / ("off" if hash_ else "on")
        _copy(root, "", own_keys=False)
        (root / "verl" / "version").mkdir()
        (root / "verl" / "version" / "version").write_text("0.3.1.dev\n")
        (root / "verl" / "trainer" / "ppo").mkdir()
        (root / "verl" / "trainer" / "ppo" / "ray_trainer.py").write_text(RAY_TRAINER.format(hash=hash_))
        codes = {f.code for f in _findings(root, "examples/run_agent.sh", batch=16, extra="trainer.project_name=p")}
        assert codes & {"PK453"} == want, codes


def test_a_module_the_vendored_copy_lacks_composes_nothing(tmp_path: Path) -> None:
    """kykim0/chess-r1-dev runs `python -m verl.trainer.main_grpo` with keys of its own, a module its vendored verl
    deleted: main_ppo's ppo_trainer config and its checks are not that launch's (a false PK453 error)."""
    _copy(tmp_path, "", own_keys=False)
    (tmp_path / "verl" / "trainer" / "main_generation.py").write_text("def main(): ...\n")  # the copy's other modules
    script = tmp_path / "scripts" / "grpo_train" / "run.sh"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/bash\npython3 -m verl.trainer.main_grpo data.train_batch_size=128 trainer.nnode=1\n")
    (tmp_path / ".git").mkdir(exist_ok=True)
    text = script.read_bytes()
    model = inspect_script(str(script), text=text, display_path=str(script))
    session = CodeSession(str(script), CodeOptions(use_cache=False))
    codes = {f.code for f in check_model(model, TABLE.rules, script_text=text, code=session.facts)}
    assert not codes & {"PK453", "PK207"}, codes
    main = next(f for f in model["launches"][0]["config"]["files"] if f.get("role") == "main")
    assert "main_grpo.py is not in the checkout's copy" in main["unknown"]


def test_a_copy_three_levels_in_is_the_sub_projects_verl(tmp_path: Path) -> None:
    # dongguanting/Tool-Star's shape: Tool_Star_RL/src/verl/verl/trainer/config/ppo_trainer.yaml (three levels
    # inside the checkout), the launch's PYTHONPATH naming it only through a placeholder: the copy's own keys
    # decide (no PK207 on the keys it adds), and a key that copy lacks is an error from it, not an assumption
    own, lacking = tmp_path / "own", tmp_path / "lacking"
    export = "PYTHONPATH={the_path_of_your_verl}/src/verl:$PYTHONPATH"
    _copy(own, "Tool_Star_RL/src/verl", own_keys=True)
    assert _with_pythonpath(own, "Tool_Star_RL/scripts/train/train.sh", export) == []
    _copy(lacking, "Tool_Star_RL/src/verl", own_keys=False)
    _with_pythonpath(lacking, "Tool_Star_RL/scripts/train/train.sh", export)
    script = lacking / "Tool_Star_RL/scripts/train/train.sh"
    text = script.read_bytes()
    model = inspect_script(str(script), text=text, display_path=str(script))
    session = CodeSession(str(script), CodeOptions(use_cache=False))
    found = [f for f in check_model(model, TABLE.rules, script_text=text, code=session.facts) if f.code == "PK207"]
    assert sorted((f.message.split()[0], f.severity) for f in found) == [
        ("actor_rollout_ref.actor.clip_ratio_low", "error"),
        ("data.gen_batch_size", "error"),
    ]


def test_a_deep_copy_of_a_sibling_project_stays_undecided(tmp_path: Path) -> None:
    # h-verlcopy's rule at any depth: the only copy, inside a sibling sub-project (its own setup.py), is not known
    # to be the launch's verl
    _copy(tmp_path, "eval_project/src/verl", own_keys=False)
    (tmp_path / "eval_project" / "setup.py").write_text("from setuptools import setup\nsetup(name='ev')\n")
    assert _pk207(_findings(tmp_path, "train/scripts/run.sh")) == []


def test_the_vendored_search_is_bounded_and_skips_heavy_directories(tmp_path: Path) -> None:
    from packlint.configs import hydra

    for where in ("a/b/c/verl", "node_modules/x/verl", ".hidden/verl", "venv/verl", "1/2/3/4/5/6/verl"):
        (tmp_path / where / "verl" / "trainer").mkdir(parents=True)
    found = hydra._walk_vendored(str(tmp_path), "verl/trainer")
    assert found == [str(tmp_path / "a/b/c/verl")]


RAY_TRAINER_CHECK = {
    # verl 0.1: no startup check of the rollout batch against the GPU count
    "0.1": "    def _validate_config(self):\n        # TODO: we have to make sure the batch size is divisible by the dp size\n        pass\n",
    # verl 0.2 to 0.5: ray_trainer.py's _validate_config asserts it
    "0.3.1.dev": (
        "    def _validate_config(self):\n"
        "        n_gpus = config.trainer.n_gpus_per_node * config.trainer.nnodes\n"
        "        real_train_batch_size = config.data.train_batch_size * config.actor_rollout_ref.rollout.n\n"
        "        assert real_train_batch_size % n_gpus == 0, \\\n"
        '            f"real_train_batch_size ({real_train_batch_size}) must be divisible by total n_gpus ({n_gpus})."\n'
    ),
}


def test_a_vendored_verl_without_the_gpu_divisibility_check_starts(tmp_path: Path) -> None:
    """Da1yuqin/EviNoteRAG (a Search-R1-style trainer) vendors verl 0.1, whose ray_trainer.py has no
    `assert real_train_batch_size % n_gpus == 0`: a batch of 300 on 7 GPUs is not rejected at startup (2 false
    PK455 errors, judged by released verl's check). A copy with the assert keeps PK455."""
    for version, want in (("0.1", set()), ("0.3.1.dev", {"PK455"})):
        root = tmp_path / version
        _copy(root, "", own_keys=False)
        (root / "verl" / "version").mkdir()
        (root / "verl" / "version" / "version").write_text(version + "\n")
        (root / "verl" / "trainer" / "ppo").mkdir()
        code = "class RayPPOTrainer:\n" + RAY_TRAINER_CHECK[version]
        (root / "verl" / "trainer" / "ppo" / "ray_trainer.py").write_text(code)
        extra = "trainer.n_gpus_per_node=7 actor_rollout_ref.actor.ppo_mini_batch_size=64"
        codes = {f.code for f in _findings(root, "train_grpo_8gpus.sh", batch=300, extra=extra)}
        assert codes & {"PK455"} == want, (version, codes)
