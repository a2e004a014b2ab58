"""Issue 28: every stack's own flags and keys, checked before the queue.

Each case under `tests/fixtures/stack_keys/<case>/` is a small checkout in the shape real repositories
use (an HF Trainer program with its own dataclasses, a TRL CLI recipe, a LLaMA-Factory YAML, verl Hydra
overrides, a vendored verl with its version file, pins in requirements.txt). Its `run.sh` says with
`# expect: CODE SEVERITY SUBJECT` every finding of the issue's codes (PK201, PK202, PK207, PK453) it must
produce, SUBJECT being the first word of the message; the test asserts exactly those. Also: the snapshot
loader, the typing of HfArgumentParser fields, versions from the tree, and the speed contract (a script
naming no stack never loads the snapshots)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from packlint.api import inspect_script
from packlint.codebase import CodeOptions, CodeSession
from packlint.engine import check_model
from packlint.rule_table import load_table

ROOT = Path(__file__).resolve().parent / "fixtures" / "stack_keys"
CASES = sorted(p for p in ROOT.iterdir() if (p / "run.sh").is_file())
CODES = {"PK201", "PK202", "PK207", "PK208", "PK453"}
TABLE = load_table(use_cache=False)


def _expected(script: Path) -> list[tuple[str, str, str]]:
    out = []
    for line in script.read_text().splitlines():
        if line.startswith("# expect:"):
            code, severity, subject = line.split(":", 1)[1].split()
            out.append((code, severity, subject))
    return sorted(out)


def _check(case: Path, tmp_path: Path) -> list:
    where = tmp_path / case.name
    shutil.copytree(case, where)
    (where / ".git").mkdir(exist_ok=True)  # the case is its own checkout: nothing above it is read
    script = where / "run.sh"
    text = script.read_bytes()
    model = inspect_script(str(script), text=text, display_path=str(script))
    session = CodeSession(str(script), CodeOptions(use_cache=False))
    return check_model(model, TABLE.rules, script_text=text, code=session.facts)


@pytest.mark.parametrize("case", CASES, ids=[p.name for p in CASES])
def test_stack_key_case(case: Path, tmp_path: Path) -> None:
    findings = _check(case, tmp_path)
    got = sorted((f.code, f.severity, f.message.split()[0]) for f in findings if f.code in CODES)
    assert got == _expected(case / "run.sh"), [(f.code, f.severity, f.message[:200]) for f in findings]


def test_messages_say_what_and_why(tmp_path: Path) -> None:
    by = {(f.code, f.message.split()[0]): f for f in _check(ROOT / "hf_trainer_pinned", tmp_path)}
    gone = by[("PK201", "--evaluation_strategy")].message
    assert "gone from transformers 4.53.3" in gone and "transformers==4.57.6" in gone
    assert "did you mean --eval_strategy?" in gone and "Some specified arguments are not used" in gone
    assert "did you mean --per_device_train_batch_size?" in by[("PK201", "--per_device_train_bach_size")].message
    trl = {f.message.split()[0]: f for f in _check(ROOT / "trl_cli_pinned", tmp_path / "t")}
    assert "removed in trl 0.20.0" in trl["max_seq_length"].message
    assert "did you mean max_length?" in trl["max_seq_length"].message
    assert trl["max_seq_length"].location.line == 3 and trl["max_seq_length"].location.path.endswith("sft.yaml")
    lf = {f.message.split()[0]: f for f in _check(ROOT / "llamafactory", tmp_path / "l")}
    assert "did you mean neat_packing?" in lf["neat_pack"].message
    assert "assuming llamafactory's release is one packlint has a snapshot of" in lf["neat_pack"].message
    assert lf["neat_pack"].evidence == "assumed" and lf["neat_pack"].premises  # the assumption is a premise
    verl = [f for f in _check(ROOT / "verl_unpinned", tmp_path / "v") if f.code == "PK207"]
    assert "did you mean actor_rollout_ref.actor.ppo_mini_batch_size?" in verl[0].message


def test_hf_field_typing() -> None:
    from packlint.codebase.hf_fields import own_fields

    src = """
@dataclass
class A:
    a: bool = False
    b: Optional[bool] = None
    c: bool | None = True
    d: Literal["x", "y"] = "x"
    e: list[int] = field(default_factory=list)
    f: Union[str, Mode] = "m1"
    g: int = field(default=1, init=False)
    h: str
    i: Optional[float] = None
"""
    cls = ast.parse(src).body[0]
    assert isinstance(cls, ast.ClassDef)
    got = own_fields(cls, lambda ann: ["m1", "m2"] if ast.unparse(ann) == "Mode" else None)
    assert {k: v[:3] for k, v in got.items()} == {
        "a": ("bool", None, ""),
        "b": ("bool1", None, ""),  # Optional[bool] = None: HfArgumentParser wants one value
        "c": ("bool", None, "T"),
        "d": ("lit", ["x", "y"], ""),
        "e": ("list:int", None, ""),
        "f": ("lit", ["m1", "m2"], ""),
        "h": ("str", None, "r"),
        "i": ("float", None, ""),
    }


def test_field_metadata_reaches_argparse_as_hf_argument_parser_passes_it() -> None:
    """FlagOpen/FlagEmbedding's arguments: `field(metadata={"nargs": "+"})` on a `str` field takes several words
    (HfArgumentParser starts add_argument's keywords from the metadata); a list field's `choices` are its items';
    metadata packlint cannot read, or an own `type`/`action`/`nargs='*'`, leaves the field open."""
    from packlint.codebase.hf_fields import own_fields

    src = """
@dataclass
class EvalArgs:
    dataset_names: str = field(default=None, metadata={"help": "names", "nargs": "+"})
    k_values: int = field(default=None, metadata={"nargs": "+"})
    tasks: List[str] = field(default_factory=coir_tasks, metadata={"choices": ["apps", "cosqa"], "nargs": "+"})
    mode: str = field(default="a", metadata={"choices": ["a", "b"]})
    devices: str = field(default=None, metadata={"nargs": "*"})
    extra: str = field(default=None, metadata=META)
    cast: int = field(default=1, metadata={"type": parse_int})
    plain: str = field(default="x", metadata={"help": "just help"})
"""
    cls = ast.parse(src).body[0]
    assert isinstance(cls, ast.ClassDef)
    got = own_fields(cls, lambda ann: None)
    assert {k: v[:2] for k, v in got.items()} == {
        "dataset_names": ("list:str", None),
        "k_values": ("list:int", None),
        "tasks": ("list:str", None),
        "mode": ("lit", ["a", "b"]),
        "devices": ("open", None),
        "extra": ("open", None),
        "cast": ("open", None),
        "plain": ("str", None),
    }


def test_snapshot_classes_resolve_across_stacks() -> None:
    from packlint.codebase import stack_schemas

    sft = stack_schemas.class_fields("SFTConfig", ("trl", "transformers"))
    assert sft is not None and "learning_rate" in sft and "packing" in sft  # base TrainingArguments + own
    lf = stack_schemas.class_fields("TrainingArguments", ("llamafactory", "transformers"))
    assert lf is not None and "predict_with_generate" in lf  # LLaMA-Factory's alias of Seq2SeqTrainingArguments
    assert stack_schemas.release_mask("trl", "0.24.0") == 1 << stack_schemas.releases("trl").index("0.24.0")
    between = stack_schemas.release_mask("trl", "0.21.0")  # two snapshot releases around it
    assert between is not None and bin(between).count("1") == 2
    assert stack_schemas.first_missing_after("trl", 0b1110) == "0.20.0"


def test_versions_from_the_tree(tmp_path: Path) -> None:
    from packlint.configs.versions import pinned_in_tree, tree_version

    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("torch>=2.1\ntransformers[torch] == 4.46.3  # pinned\n")
    (tmp_path / "environment.yml").write_text("dependencies:\n  - python=3.10\n  - pip:\n    - trl==0.19.1\n")
    (tmp_path / "setup.py").write_text('setup(name="x", install_requires=["llamafactory==0.9.2", "verl>=0.4"])\n')
    assert pinned_in_tree("transformers", str(tmp_path)) == ("4.46.3", str(tmp_path / "requirements.txt"))
    assert pinned_in_tree("trl", str(tmp_path))[0] == "0.19.1"
    assert pinned_in_tree("llamafactory", str(tmp_path))[0] == "0.9.2"
    assert pinned_in_tree("verl", str(tmp_path)) is None  # `>=` names no release
    (tmp_path / "verl" / "version").mkdir(parents=True)
    (tmp_path / "verl" / "version" / "version").write_text("0.2.0.dev\n")
    assert tree_version("verl", "verl", str(tmp_path))["value"] == "0.2.0.dev"


SETUP_DEPS = """
_deps = [
    "accelerate>=1.2.1",
    "deepspeed==0.15.4",
    "lighteval @ git+https://github.com/huggingface/lighteval.git@4f381b3#egg=lighteval[math]",
    "pytest",
    # "transformers @ git+https://github.com/huggingface/transformers.git@336dc69d63d56f232a183a3e7f52790429b871ef",
    "trl==0.14.0",
    "vllm==0.7.2",
]
deps = {b: a for a, b in (re.findall(r"^(([^!=<>~ \\[\\]]+)(?:\\[[^\\]]+\\])?(?:[!=<>~ ].*)?$)", x)[0] for x in _deps)}
extras = {"dev": [deps["pytest"]]}
install_requires = [
    deps["accelerate"],
    deps["deepspeed"],
    # deps["vllm"],
    deps["trl"],
]
setup(name="r1-v", install_requires=list(install_requires), extras_require=extras)
"""


def test_versions_from_a_setup_py_deps_table(tmp_path: Path) -> None:
    """R1-V's and Video-R1's `src/r1-v/setup.py` (transformers' shape, which open-r1 copies): the pins sit in a
    `_deps` table and `install_requires` names them as `deps["trl"]`; a commented-out reference is no pin."""
    from packlint.configs.versions import pinned_in_tree, tree_version

    (tmp_path / ".git").mkdir()
    (tmp_path / "setup.py").write_text(SETUP_DEPS)
    assert tree_version("trl", "trl", str(tmp_path))["value"] == "0.14.0"
    assert pinned_in_tree("deepspeed", str(tmp_path))[0] == "0.15.4"
    assert pinned_in_tree("vllm", str(tmp_path)) is None  # (its reference is commented out)
    assert pinned_in_tree("transformers", str(tmp_path)) is None


def test_unresolved_dataclass_keeps_the_schema_open(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(
        "from transformers import HfArgumentParser\nfrom mylib.args import Args\n"
        "if __name__ == '__main__':\n    HfArgumentParser(Args).parse_args_into_dataclasses()\n"
    )
    (tmp_path / "run.sh").write_text("#!/bin/bash\npython train.py --anything 1 --lerning_rate 2\n")
    findings = _check(tmp_path, tmp_path / "copy")
    assert not [f for f in findings if f.code in CODES]


def test_a_script_naming_no_stack_never_loads_the_snapshots(tmp_path: Path) -> None:
    script = tmp_path / "pretrain.sh"
    script.write_text("#!/bin/bash\nexport NCCL_DEBUG=INFO\ntorchrun --nproc_per_node 8 pretrain_gpt.py --bf16\n")
    code = (
        "import sys; from packlint.cli import main; main(['check', sys.argv[1]]);"
        "import packlint.codebase.stack_schemas as s; print('LOADED' if s._DATA else 'LAZY')"
    )
    out = subprocess.run([sys.executable, "-c", code, str(script)], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().endswith("LAZY"), out.stdout + out.stderr


@pytest.mark.parametrize(
    "word, want",
    [
        ("$P-$M-$D", "a-b-v-1-x"),  # tree-sitter-bash: `$P-$` + `M-$D` (a concatenation)
        ("./ckpt/llava--$P--$M--$D--finetune", "./ckpt/llava--a-b--v-1--x--finetune"),  # LLaVA-NeXT's shape
        ("$P-$M-$D-$P", "a-b-v-1-x-a-b"),
        ("$D/$P.log", "x/a-b.log"),  # `$D/$` + `P.log` (a word)
        ('"$P"-$M-$D', "a-b-v-1-x"),
    ],
)
def test_a_word_split_after_a_bare_dollar_is_one_word(word: str, want: str, tmp_path: Path) -> None:
    """bash expands `$P-$M-$D` to one word; PK202 on an HF Trainer's --output_dir made of three
    variables reported two words (issue 26's three-expansion word, seen in LLaVA-NeXT's scripts)."""
    script = tmp_path / "run.sh"
    script.write_text(f'#!/bin/bash\nM="v-1"\nP="a-b"\nD="x"\nX={word}\npython t.py --out {word} --joined "$X"\n')
    model = inspect_script(str(script), text=script.read_bytes(), display_path=str(script))
    flags = model["launches"][0]["flags"]
    assert flags["--out"][0]["value"] == want and flags["--joined"][0]["value"] == want


def test_a_fork_without_its_code_is_undecided(tmp_path: Path) -> None:
    """Issue 26 item 4: upstream Megatron-LM's asserts (PK308) and flag retirements (PK324) stand for
    upstream code; the scripts of a fork whose code is not in the tree are undecided, with PK206's one
    info per script, not errors. The same script in an upstream checkout keeps PK308 (a warning: the code
    is not there, so upstream's check is assumed)."""
    body = (
        "#!/bin/bash\n"
        "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 30 --pipeline-model-parallel-size 4 \\\n"
        "    --tensor-model-parallel-size 2 --micro-batch-size 1 --global-batch-size 64 --checkpoint-activations\n"
    )
    got = {}
    for name in ("Megatron-DeepSpeed", "Megatron-LM"):
        root = tmp_path / name
        (root / "examples").mkdir(parents=True)
        (root / ".git").mkdir()
        script = root / "examples" / "pretrain.sh"
        script.write_text(body)
        model = inspect_script(str(script), text=script.read_bytes(), display_path=str(script))
        session = CodeSession(str(script), CodeOptions(use_cache=False))
        findings = check_model(model, TABLE.rules, script_text=script.read_bytes(), code=session.facts)
        got[name] = {(f.code, f.severity) for f in findings}
    # (an upstream checkout without pretrain_gpt.py's code: upstream's check still stands, as an assumption
    # the message names, so at most a warning: packlint.evidence.UPSTREAM_MEGATRON)
    assert ("PK308", "warning") in got["Megatron-LM"]
    assert not {c for c, s in got["Megatron-DeepSpeed"] if c in ("PK308", "PK324") and s != "info"}
    assert ("PK206", "info") in got["Megatron-DeepSpeed"]


def test_args_file_flag_is_a_flag(tmp_path: Path) -> None:
    """`parse_args_into_dataclasses(args_file_flag="--args_file")` reads that flag with a parser of its
    own (hf_argparser.py): it is no unknown flag."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(
        "from dataclasses import dataclass\nfrom transformers import HfArgumentParser\n\n\n@dataclass\n"
        "class Args:\n    lr: float = 1e-4\n\n\nif __name__ == '__main__':\n"
        "    (args,) = HfArgumentParser(Args).parse_args_into_dataclasses(args_file_flag='--args_file')\n"
    )
    (tmp_path / "run.sh").write_text("#!/bin/bash\npython train.py --args_file base.args --lr 2e-5 --lrr 1\n")
    got = [(f.code, f.message.split()[0]) for f in _check(tmp_path, tmp_path / "copy") if f.code in CODES]
    assert got == [("PK201", "--lrr")]


def test_a_brace_sequence_with_a_step_is_no_literal_value(tmp_path: Path) -> None:
    """`for i in {0..17000..200}` (open-r1's scripts/pass_rate_filtering/launch_filtering.sh): bash
    generates the words; tree-sitter reads the step form as a plain concatenation, which packlint took
    as the literal text (a false PK202 once the program's TrlParser schema was closed)."""
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\nfor i in {0..17000..200}\ndo\n  python t.py --start $i\ndone\n")
    model = inspect_script(str(script), text=script.read_bytes(), display_path=str(script))
    occ = model["launches"][0]["flags"]["--start"][0]
    assert "value" not in occ or occ["value"] != "{0..17000..200}"


@pytest.mark.parametrize(
    "name, text, command",
    [
        # a TRL recipe read by the repository's own TrlParser program (VLM-R1's grpo_jsonl.py data_file_paths)
        (
            "grpo.yaml",
            "model_name_or_path: Qwen/Qwen2.5-VL-3B-Instruct\nmax_length: 1024\ndata_file_paths: a.jsonl\n",
            "trl sft --config grpo.yaml",
        ),
        # an ms-swift-shaped YAML Megatron-SWIFT reads (`megatron rlhf --config x.yaml`: micro_batch_size)
        ("grpo_swift.yaml", "rlhf_type: grpo\nmodel: Qwen/Qwen2.5-VL-3B-Instruct\nmicro_batch_size: 2\n", ""),
        # LLaMA-Factory's examples/megatron YAML: run with USE_MCA=1 (mcore_adapter's arguments)
        (
            "qwen3_moe_full.yaml",
            "model_name_or_path: Qwen/Qwen3-30B-A3B\nstage: sft\ntensor_model_parallel_size: 2\n",
            "llamafactory-cli train qwen3_moe_full.yaml",
        ),
    ],
)
def test_a_yaml_on_its_own_is_not_judged_against_a_guessed_program(
    name: str, text: str, command: str, tmp_path: Path
) -> None:
    (tmp_path / ".git").mkdir()
    path = tmp_path / name
    path.write_text(text)
    code = "import sys; from packlint.cli import main; main(['check', '--format', 'json', sys.argv[1]])"
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert '"PK207"' not in out.stdout, out.stdout
    # the same keys launched by the stack's own command (without USE_MCA) are judged
    if command:
        (tmp_path / "run.sh").write_text(f"#!/bin/bash\n{command}\n")
        got = {f.code for f in _check_dir(tmp_path)}
        assert "PK207" in got


def _check_dir(where: Path) -> list:
    script = where / "run.sh"
    text = script.read_bytes()
    model = inspect_script(str(script), text=text, display_path=str(script))
    session = CodeSession(str(script), CodeOptions(use_cache=False))
    return check_model(model, TABLE.rules, script_text=text, code=session.facts)


@pytest.mark.parametrize(
    ("name", "text", "want"),
    [
        # a TRL recipe on its own (open-r1 style): the program is assumed to extend TrainingArguments, so even
        # the YAML boolean (an error under a launch) is a warning naming that assumption
        (
            "config_demo.yaml",
            "model_name_or_path: Qwen/Qwen2.5-1.5B-Instruct\ndataset_name: open-r1/OpenR1-Math-220k\n"
            "learning_rate: 5.0e-05\nlr_scheduler_type: cosine_with_min_lr\nsave_strategy: no\n",
            [("PK208", "warning", "save_strategy: false")],
        ),
        # a LLaMA-Factory YAML on its own: assumed to be run by llamafactory-cli train (a warning, named)
        (
            "llama3_lora_sft.yaml",
            "model_name_or_path: meta-llama/Meta-Llama-3-8B-Instruct\nstage: sft\ndo_train: true\n"
            "finetuning_type: lora\nlr_scheduler_type: cosine_warmup\nlearning_rate: 1e-4\neval_strategy: steps\n",
            [("PK208", "warning", "lr_scheduler_type: cosine_warmup")],
        ),
        # another framework's YAML of the same shape (PaddleFormers: `stage: SFT`, its own `optim: adamw`)
        (
            "sft_lora.yaml",
            "model_name_or_path: baidu/ERNIE-4.5-0.3B-Paddle\nstage: SFT\nfine_tuning: LoRA\noptim: adamw\n",
            [],
        ),
        # an axolotl config on its own: `rl: false` (a YAML boolean, meant as "no RL") is no RLType member in any
        # release: pydantic's ValidationError, an error with nothing assumed; `sample_packing: yes` is a bool
        # field's true, `bf16: auto` a value of `Literal["auto"] | bool`
        (
            "qwen3-qlora.yml",
            "base_model: Qwen/Qwen3-8B\nadapter: qlora\nload_in_4bit: true\nrl: false\nsample_packing: yes\n"
            "bf16: auto\ntorch_compile_mode: max-autotune\ndatasets:\n  - path: tatsu-lab/alpaca\n    type: alpaca\n",
            [("PK208", "error", "rl: false")],
        ),
        # the harmless controls: quoted "no", `1e-4` (a str for PyYAML), a Literal of LLaMA-Factory's own
        (
            "qwen_ok.yaml",
            "model_name_or_path: Qwen/Qwen2.5-7B\nstage: sft\nfinetuning_type: lora\nsave_strategy: 'no'\n"
            "learning_rate: 1e-4\nlr_scheduler_type: constant_with_warmup\noptim: ${oc.env:OPTIM}\n",
            [],
        ),
    ],
)
def test_a_yaml_on_its_own_judges_the_enum_values(name: str, text: str, want: list, tmp_path: Path) -> None:
    import json

    (tmp_path / ".git").mkdir()
    path = tmp_path / name
    path.write_text(text)
    code = "import sys; from packlint.cli import main; main(['check', '--no-cache', '--format', 'json', sys.argv[1]])"
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    data = json.loads(out.stdout)
    found = data if isinstance(data, list) else data.get("findings", [])
    got = [(f["code"], f["severity"], f["message"]) for f in found if f["code"] == "PK208"]
    assert [(c, s) for c, s, _m in got] == [(c, s) for c, s, _w in want], got
    for (_c, _s, message), (_c2, _s2, start) in zip(got, want, strict=True):
        assert message.startswith(start), message


def test_a_bad_value_message_names_the_choices_and_the_close_one(tmp_path: Path) -> None:
    findings = [f for f in _check(ROOT / "trl_cli_values", tmp_path) if f.code == "PK208"]
    by = {f.message.split()[0]: f.message for f in findings}
    assert (
        "did you mean cosine?" in by["lr_scheduler_type:"] and "not a valid SchedulerType" in by["lr_scheduler_type:"]
    )
    assert "did you mean adamw_8bit?" in by["--optim"] and "invalid choice" in by["--optim"]
    lf = [f for f in _check(ROOT / "llamafactory_values", tmp_path / "lf") if f.code == "PK208"]
    boolean = next(f for f in lf if f.message.startswith("save_strategy"))
    assert "quote it" in boolean.message
    assert boolean.location.path.endswith("llama3_lora_sft_bad.yaml") and boolean.location.line == 24
    ax = [f for f in _check(ROOT / "axolotl_values", tmp_path / "ax") if f.code == "PK208"]
    rl = next(f for f in ax if f.message.startswith("rl:"))
    assert "did you mean dpo?" in rl.message and "ValidationError" in rl.message
    assert "axolotl's release is one packlint has a snapshot of" in rl.message and rl.location.line == 5


def test_trl_parser_config_keys_follow_the_release(tmp_path: Path) -> None:
    """TrlParser raises on a leftover `--config` key only from TRL 0.19 (trl/scripts/utils.py
    fail_with_unknown_args); before, parse_args_and_config drops it silently. The verdict follows the
    release the checkout pins, and names both behaviours when the release is not known."""
    old = {f.message.split()[0]: f for f in _check(ROOT / "trl_parser_old_pin", tmp_path / "o") if f.code == "PK207"}
    assert "drops it without a word" in old["dataset_configs"].message
    assert "trl 0.14.0" in old["dataset_configs"].message and "Unknown arguments" not in old["dataset_configs"].message
    assert "did you mean dataset_config?" in old["dataset_configs"].message
    git = {f.message.split()[0]: f for f in _check(ROOT / "trl_parser_git_pin", tmp_path / "g") if f.code == "PK207"}
    text = git["num_processes"].message
    assert "from TRL 0.19" in text and "earlier releases drop it" in text and git["num_processes"].severity == "warning"
    pkg = [f for f in _check(ROOT / "trl_parser_package_pin", tmp_path / "p") if f.code == "PK207"]
    assert "trl 0.14.0, the pin trl==0.14.0 in" in pkg[0].message and "src/r1-v/setup.py)" in pkg[0].message
    # transformers==4.49.0 and trl==0.14.0 are pinned there too, releases between two snapshots each: the verdict
    # names that assumption (hsushuai/ms-swift-scripts: a key can live only between two snapshots)
    assert [p[0] for p in pkg[0].premises] == ["assumed"] and "no snapshot of 0.14.0" in pkg[0].premises[0][1]
    new = [f for f in _check(ROOT / "trl_parser_config", tmp_path / "n") if f.code == "PK207"]
    assert new and "raises 'Unknown arguments from config file'" in new[0].message and new[0].severity == "error"


def test_hfarg_fields_agree_with_hf_argument_parser(tmp_path: Path) -> None:
    """The oracle: transformers' own HfArgumentParser on the LLMBox-shaped fixture's dataclass (HfArg with
    `metadata=dict(nargs='*')` and `aliases=`, a `list_field` helper). packlint's reading (own_fields,
    field_aliases) gives every field argparse's number of words and option strings; the open helper field
    is one argparse takes any number of words for."""
    transformers = pytest.importorskip("transformers")
    import importlib.util

    from packlint.codebase.hf_fields import field_aliases, own_fields

    path = ROOT / "hf_trainer_hfarg" / "training" / "train.py"
    spec = importlib.util.spec_from_file_location("llmbox_train_fixture", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    parser = transformers.HfArgumentParser(module.Arguments)
    actions = {a.dest: a for a in parser._actions}
    cls = next(n for n in ast.parse(path.read_text()).body if isinstance(n, ast.ClassDef))
    is_helper = lambda call: ast.unparse(call.func) == "list_field"  # noqa: E731
    ours = own_fields(cls, lambda ann: None, is_helper)
    words = {"open": "*", "str": None, "int": None, "float": None, "list:str": "+"}
    for name, (typ, _choices, _marks, _line) in ours.items():
        if typ == "open":
            assert actions[name].nargs in ("*", "+", "?") or actions[name].type is not None, name
        else:
            assert actions[name].nargs == words[typ], (name, typ, actions[name].nargs)
    assert ours["dataset"][0] == "open" and actions["dataset"].nargs == "*"
    assert set(actions["data_path"].option_strings) == {"--data_path", "--data-path", "--data", "-d"}
    assert field_aliases(cls) == {"data_path": ["--data", "-d"]}
    got = parser.parse_args_into_dataclasses(
        ["--output_dir", str(tmp_path), "--dataset", "a.json", "b.txt", "--dataset_ratio", "0.7", "0.3", "--data", "x"]
    )[0]
    assert got.dataset == ["a.json", "b.txt"] and got.dataset_ratio == [0.7, 0.3] and got.data_path == "x"


@pytest.mark.parametrize(
    "annotation",
    [
        "Optional[Union[int, str]]",
        "Union[str, int, None]",
        "Optional[int]",
        "Union[str, int]",
        "Union[int, str]",
        "Union[int, str, float]",
        "Optional[float]",
        "Union[int, float]",
        "int | None",
    ],
)
def test_union_fields_are_typed_as_hf_argument_parser_types_them(annotation: str) -> None:
    """xuhuizhan5/Inverse-LLaVA llava/train/train.py: `mm_vision_select_layer: Optional[Union[int, str]] = -1` with
    `--mm_vision_select_layer="-1,-2"`: HfArgumentParser keeps the Union's second argument (str), so the value is
    taken (a false PK202 'not an integer'). The installed HfArgumentParser is the oracle."""
    transformers = pytest.importorskip("transformers")
    from packlint.codebase.hf_fields import type_of

    ours = type_of(ast.parse(annotation, mode="eval").body, None, True, lambda _: None)[0]
    import dataclasses
    import typing

    real = eval(annotation, dict(vars(typing)))  # (the test's own literal annotations)
    cls = dataclasses.make_dataclass("A", [("x", real, dataclasses.field(default=None))])
    try:
        action = next(a for a in transformers.HfArgumentParser(cls)._actions if a.dest == "x")
        theirs = getattr(action.type, "__name__", str(action.type))
    except ValueError:  # 'Only Union[X, NoneType] ... is allowed': the program fails whatever the flags
        theirs = "any"
    assert ours == theirs, (annotation, ours, theirs)
