"""Mechanisms the seventh holdout found (issue 26), fixed after its measurement, each in its repository's shape:

- fangfang123gh/LLM-SRL carries the CoNLL-2005 srlconll scripts: `*.sh` files starting `#! /bin/tcsh`. Run as
  programs they are tcsh's; packlint parsed them as bash and said PK900. As ShellCheck (SC1071), a file whose
  shebang names another interpreter is not analysed (an `unanalysed` note in `inspect`), while a sourced file or
  `bash x.sh` (which ignore the shebang) is still bash's.
- Control-derek/ACPO's SynLogic copy: `UNIQUE_SOLUTION=true; if $UNIQUE_SOLUTION; then P=--unique_solution; else
  P=--no-unique_solution; fi`: bash runs the command `true`, the else branch is dead; packlint forked on it and
  reported PK201 on the dead branch.
- XpastaX/PerfCoder's DeepSpeed configs are Git LFS pointers (`*.json filter=lfs` in .gitattributes): their
  content is what git-lfs fetches where the checkout is cloned; packlint read the pointer as JSON (PK602 error)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

from packlint.cli import main
from packlint.interpret import foreign_interpreter

GEN = (
    "import argparse\n\np = argparse.ArgumentParser()\np.add_argument('--n', type=int)\n"
    "p.add_argument('--unique_solution', action='store_true')\np.parse_args()\n"
)


def check_json(*argv: str) -> list[dict]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        main(["check", "--no-cache", "--format", "json", "--exit-zero", *argv])
    return json.loads(buf.getvalue())["findings"]


def test_a_tcsh_script_named_sh_is_not_parsed_as_bash(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / ".git").mkdir()
    tcsh = "#! /bin/tcsh\nset s = 1\nforeach d ( a b )\n  echo $d\nend\nif (! -d X ) then\n  mkdir X\nendif\n"
    (tmp_path / "nb_propsbyfiles.sh").write_text(tcsh)
    (tmp_path / "bash_one.sh").write_text("#!/usr/bin/env bash\nfor d in a b; do echo $d\ndone\n(\n")
    monkeypatch.chdir(tmp_path)
    codes = {(f["path"], f["code"]) for f in check_json(".")}
    assert ("nb_propsbyfiles.sh", "PK900") not in codes, codes
    assert ("bash_one.sh", "PK900") in codes, codes  # a bash script with a real syntax error still is one


def test_which_shebangs_are_bournes() -> None:
    for line in (b"#!/bin/bash\n", b"#! /bin/sh -e\n", b"#!/usr/bin/env bash\n", b"#!/usr/bin/env -S bash -x\n",
                 b"#!/bin/dash\n", b"#!/usr/bin/ksh\n", b"echo hi\n", b""):  # fmt: skip
        assert foreign_interpreter(line) is None, line
    for line, name in ((b"#! /bin/tcsh\n", "tcsh"), (b"#!/bin/csh -f\n", "csh"), (b"#!/usr/bin/env python3\n",
                       "python3"), (b"#!/usr/bin/env zsh\r\n", "zsh")):  # fmt: skip
        assert foreign_interpreter(line) == name, line


def test_if_on_a_variable_holding_true_runs_the_command_true(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "gen.py").write_text(GEN)
    (tmp_path / "run.sh").write_text(
        "UNIQUE_SOLUTION=true\n"
        'if $UNIQUE_SOLUTION; then P="--unique_solution"; else P="--no-unique_solution"; fi\n'
        "python gen.py --n 3 $P\n"
        "STRICT=false\n"
        'if "$STRICT"; then Q="--no-strict"; fi\n'
        "python gen.py --n 3 $Q\n"
        'if $FROM_CALLER; then R="--no-unique"; fi\n'  # never set: both branches, the finding says when
        "python gen.py --n 3 $R\n"
    )
    monkeypatch.chdir(tmp_path)
    found = [(f["line"], f["code"]) for f in check_json("run.sh") if f["code"] == "PK201"]
    assert found == [(7, "PK201")], found


def test_a_git_lfs_pointer_config_is_not_read_as_json(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitattributes").write_text("*.json filter=lfs diff=lfs merge=lfs -text\n")
    (tmp_path / "data" / "ds_config").mkdir(parents=True)
    pointer = "version https://git-lfs.github.com/spec/v1\noid sha256:" + "4d7a" * 16 + "\nsize 1234\n"
    (tmp_path / "data" / "ds_config" / "d2.json").write_text(pointer)
    (tmp_path / "data" / "ds_config" / "d1.json").write_text('{"train_batch_size": 8,,}\n')  # a real broken one
    (tmp_path / "train.py").write_text("import argparse\np = argparse.ArgumentParser()\np.add_argument('--deepspeed')\np.parse_args()\n")
    (tmp_path / "run.sh").write_text(
        "deepspeed train.py --deepspeed data/ds_config/d2.json\ndeepspeed train.py --deepspeed data/ds_config/d1.json\n"
    )
    monkeypatch.chdir(tmp_path)
    findings = check_json("run.sh")
    pk602 = {f["path"] for f in findings if f["code"] == "PK602"}
    assert pk602 == {"data/ds_config/d1.json"}, findings
    assert any(f["code"] == "PK603" and "Git LFS pointer" in f["message"] for f in findings), findings


MEGATRON_ARGUMENTS = '''import argparse


def parse_args(extra_args_provider=None, ignore_unknown_args=False):
    parser = argparse.ArgumentParser(description="Megatron-LM Arguments", allow_abbrev=False)
    parser.add_argument("--num-layers", type=int, default=None)
    parser.add_argument("--tokenizer-type", type=str, default=None, choices=["GPT2BPETokenizer"])
    if extra_args_provider is not None:
        parser = extra_args_provider(parser)
    return parser.parse_args()
'''
ADAPTOR_ARGUMENTS = '''from functools import wraps


def _add_extra(parser):
    group = parser.add_argument_group(title="mindspeed")
    group.add_argument("--tokenizer-name-or-path", type=str, default=None)
    for action in parser._actions:
        if "--tokenizer-type" in action.option_strings:
            action.choices = list(action.choices) + ["PretrainedFromHF"]
    return parser


def parse_args_decorator(parse_args):
    @wraps(parse_args)
    def wrapper(extra_args_provider=None, ignore_unknown_args=False):
        def decorated_provider(parser):
            parser = _add_extra(parser)
            return extra_args_provider(parser) if extra_args_provider is not None else parser
        return parse_args(decorated_provider, ignore_unknown_args)
    return wrapper
'''
ADAPTOR = (
    "import megatron.training.arguments as margs\n\nfrom mindspeed_llm.training.arguments import parse_args_decorator\n\n"
    "margs.parse_args = parse_args_decorator(margs.parse_args)\n"
)


def test_a_vendored_megatron_whose_parser_an_adaptor_wraps_is_not_judged(tmp_path: Path, monkeypatch) -> None:
    """7u5/knowledgelearnLLM and Eutenacity/AGoQ: MindSpeed-LLM forks that vendor megatron/ and import
    `mindspeed_llm.megatron_adaptor`, which wraps megatron's parse_args with its own flags and choices: the parser
    packlint reads is not the one that runs (158 false PK201/PK202). A program that does not import the adaptor
    (AGoQ's pretrain_gpt.py comments it out) still gets the plain parser, and its findings stand."""
    (tmp_path / ".git").mkdir()
    files = {
        "megatron/__init__.py": "",
        "megatron/training/__init__.py": "",
        "megatron/training/arguments.py": MEGATRON_ARGUMENTS,
        "mindspeed_llm/__init__.py": "",
        "mindspeed_llm/training/__init__.py": "",
        "mindspeed_llm/training/arguments.py": ADAPTOR_ARGUMENTS,
        "mindspeed_llm/megatron_adaptor.py": ADAPTOR,
        "pretrain_gpt.py": "from mindspeed_llm import megatron_adaptor  # noqa: F401\n"
        "import megatron.training.arguments as margs\n\nif __name__ == '__main__':\n    print(margs.parse_args())\n",
        "pretrain_plain.py": "# from mindspeed_llm import megatron_adaptor\n"
        "import megatron.training.arguments as margs\n\nif __name__ == '__main__':\n    print(margs.parse_args())\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    words = "--num-layers 2 --tokenizer-type PretrainedFromHF --tokenizer-name-or-path ./tok"
    (tmp_path / "run.sh").write_text(
        f"torchrun --nproc_per_node 1 pretrain_gpt.py {words}\ntorchrun --nproc_per_node 1 pretrain_plain.py {words}\n"
    )
    monkeypatch.chdir(tmp_path)
    found = sorted((f["line"], f["code"]) for f in check_json("run.sh") if f["severity"] in ("error", "warning"))
    assert found == [(2, "PK201"), (2, "PK202")], found


def test_a_container_runner_between_srun_and_torchrun(tmp_path: Path, monkeypatch) -> None:
    """IDEA-Emdoor-Lab/LPO: `srun singularity exec $DOCKER_PATH ${run_cmd}` with run_cmd `torchrun --nproc_per_node 8
    ...` on 2 nodes x 1 task: each task runs the container, the container runs torchrun: the world is 16, not srun's
    2 (10 false PK301). A container that runs python itself per srun task keeps srun's layout."""
    from packlint.api import inspect_script

    (tmp_path / ".git").mkdir()
    head = "#!/bin/bash\n#SBATCH --nodes 2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gres=gpu:8\n"
    sizes = "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 --num-layers 8"
    (tmp_path / "a.sh").write_text(
        head + f'run_cmd="torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py {sizes}"\n'
        "srun singularity exec --nv img.sif ${run_cmd}\n"
    )
    (tmp_path / "b.sh").write_text(head + f"srun apptainer exec img.sif python pretrain_gpt.py {sizes}\n")
    monkeypatch.chdir(tmp_path)
    worlds = {}
    for name in ("a.sh", "b.sh"):
        launch = inspect_script(name)["launches"][0]
        worlds[name] = (launch["launchers"], launch["variants"][0]["parallel"]["world"].get("value"))
    assert worlds == {"a.sh": (["srun", "torchrun"], 16), "b.sh": (["srun", "python"], 2)}, worlds
    assert not [f for f in check_json("a.sh") if f["code"] == "PK301"]


def test_choices_an_extra_args_provider_appends_to_are_not_judged(tmp_path: Path, monkeypatch) -> None:
    """IDEA-Emdoor-Lab/LPO (Pai-Megatron-Patch's megatron_patch/arguments.py): the extra_args_provider walks the
    group's actions and appends `hybridadam` to --optimizer's choices; packlint read choices (adam, sgd) and said
    `--optimizer hybridadam` is not one of them. A program that does not touch choices is still judged."""
    (tmp_path / ".git").mkdir()
    patch = (
        "def get_patch_args(parser):\n    group = parser.add_argument_group(title='patch')\n"
        "    for action in vars(group)['_actions']:\n        if '--optimizer' in action.option_strings:\n"
        "            action.choices.append('hybridadam')\n    return parser\n"
    )
    train = (
        "import argparse\n\n\ndef parse_args(extra_args_provider=None):\n    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--optimizer', default='adam', choices=['adam', 'sgd'])\n"
        "    if extra_args_provider is not None:\n        parser = extra_args_provider(parser)\n"
        "    return parser.parse_args()\n"
    )
    (tmp_path / "patch_args.py").write_text(patch)
    (tmp_path / "arguments.py").write_text(train)
    (tmp_path / "pretrain_qwen.py").write_text(
        "from arguments import parse_args\nfrom patch_args import get_patch_args\n\n"
        "if __name__ == '__main__':\n    parse_args(extra_args_provider=get_patch_args)\n"
    )
    (tmp_path / "pretrain_plain.py").write_text(
        "from arguments import parse_args\n\nif __name__ == '__main__':\n    parse_args()\n"
    )
    (tmp_path / "run.sh").write_text(
        "python pretrain_qwen.py --optimizer hybridadam\npython pretrain_plain.py --optimizer hybridadam\n"
    )
    monkeypatch.chdir(tmp_path)
    found = sorted((f["line"], f["code"]) for f in check_json("run.sh") if f["severity"] in ("error", "warning"))
    assert found == [(2, "PK202")], found


def test_a_value_a_machine_branch_adds_over_the_base_one_is_an_override(tmp_path: Path, monkeypatch) -> None:
    """EDAS-jd/EDAS's verl 0.8 scripts build a base array, then `case "${DEVICE}" in npu)
    TRAINER+=(trainer.n_gpus_per_node=16)`, DEVICE decided by whether torch_npu imports: the branch overrides the
    base value on purpose (9 false PK103). Two values written on every path still are a repeat."""
    (tmp_path / ".git").mkdir()
    cfg = tmp_path / "verl" / "trainer" / "config"
    cfg.mkdir(parents=True)
    (tmp_path / "verl" / "__init__.py").write_text("")
    (tmp_path / "verl" / "trainer" / "__init__.py").write_text("")
    (tmp_path / "verl" / "trainer" / "main_ppo.py").write_text(
        "import hydra\n\n@hydra.main(config_path='config', config_name='ppo_trainer')\ndef main(config): ...\n"
    )
    (cfg / "ppo_trainer.yaml").write_text("trainer:\n  nnodes: 1\n  n_gpus_per_node: 8\n")
    (tmp_path / "run.sh").write_text(
        "#!/bin/bash\n"
        'DEVICE=${DEVICE:-$(python3 -c "import torch_npu" 2>/dev/null && echo npu || echo gpu)}\n'
        "TRAINER=(trainer.n_gpus_per_node=8 trainer.nnodes=1)\n"
        'case "${DEVICE}" in\n    gpu) ;;\n    npu) TRAINER+=(trainer.n_gpus_per_node=16) ;;\nesac\n'
        'python3 -m verl.trainer.main_ppo "${TRAINER[@]}"\n'
        'python3 -m verl.trainer.main_ppo "${TRAINER[@]}" trainer.nnodes=2\n'
    )
    monkeypatch.chdir(tmp_path)
    found = sorted((f["line"], f["code"], f["message"].split()[0]) for f in check_json("run.sh") if f["code"] == "PK103")
    assert [(c, n) for _, c, n in found] == [("PK103", "trainer.nnodes")], found


def test_an_api_key_the_openai_client_reads_is_read(tmp_path: Path, monkeypatch) -> None:
    """RunxinXu/vicuna-generation's fastchat/llm_judge/judge.sh exports OPENAI_API_KEY for gen_judgment.py, whose
    common.py calls `openai.ChatCompletion.create`: the openai package reads it (2 false PK203: "setting it does
    nothing"). The key's value never appears in packlint's output."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "common.py").write_text("import openai\n\ndef judge(q):\n    return openai.ChatCompletion.create(model='gpt-4', messages=q)\n")
    (tmp_path / "gen_judgment.py").write_text("from common import judge\n\nif __name__ == '__main__':\n    judge([])\n")
    (tmp_path / "judge.sh").write_text("export OPENAI_API_KEY=sk-proj-abcdef0123456789\npython gen_judgment.py\n")
    monkeypatch.chdir(tmp_path)
    findings = check_json("judge.sh")
    assert not [f for f in findings if f["code"] in ("PK203", "PK205")], findings
    assert "abcdef0123456789" not in json.dumps(findings)


def test_a_partial_verl_package_is_a_forks_not_a_release(tmp_path: Path, monkeypatch) -> None:
    """AsadalJung/David-GRPO ships `verl/__init__.py` and `verl/models/` only (its README: built on AutoCoA and
    Search-R1, whose verl forks the scripts' keys come from), and its scripts pass keys no verl release has
    (`trainer.use_observation_mask=True`): the verl that runs is the authors' fork (or the import stops), so
    neither released verl's keys (PK207) nor its startup checks (PK453) are judged (3 false warnings). A checkout
    without any verl package still gets the released verl's verdicts, with that assumption named."""
    for name, partial in (("fork", True), ("plain", False)):
        root = tmp_path / name
        (root / ".git").mkdir(parents=True)
        if partial:
            (root / "verl" / "models").mkdir(parents=True)
            (root / "verl" / "__init__.py").write_text("")
            (root / "verl" / "models" / "__init__.py").write_text("")
        (root / "scripts").mkdir()
        (root / "scripts" / "train.sh").write_text(
            "python3 -m verl.trainer.main_ppo \\\n    data.train_batch_size=4 \\\n"
            "    actor_rollout_ref.actor.ppo_mini_batch_size=5 \\\n    trainer.use_observation_mask=True\n"
        )
        monkeypatch.chdir(root)
        codes = {f["code"] for f in check_json("scripts/train.sh") if f["severity"] in ("error", "warning")}
        assert codes == (set() if partial else {"PK207", "PK453"}), (name, codes)


def test_flags_a_helper_adds_when_absent_are_the_parsers(tmp_path: Path, monkeypatch) -> None:
    """Pai-Megatron-Patch's megatron_patch/arguments.py (in IDEA-Emdoor-Lab/LPO): `patch_if_not_exist(group,
    "--kv-lora-rank", ...)` sets `has_keyname = True` inside a loop over the group's actions and adds the flag
    `if not has_keyname`. The reader took the flag as always set and never added it (6 false PK201). A flag no
    code adds is still reported."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "patch_args.py").write_text(
        "import argparse\n\n\n"
        "def patch_if_not_exist(group_or_parser, keyname, type=None, default=None, help=None):\n"
        "    has_keyname = False\n"
        "    for action in vars(group_or_parser)['_actions']:\n"
        "        if isinstance(action, argparse._StoreAction):\n"
        "            if keyname in action.option_strings:\n"
        "                has_keyname = True\n"
        "    if not has_keyname:\n"
        "        return group_or_parser.add_argument(keyname, type=type, default=default, help=help)\n"
        "    return None\n\n\n"
        "def get_patch_args(parser):\n"
        "    group = parser.add_argument_group(title='patch')\n"
        "    patch_if_not_exist(group, '--kv-lora-rank', type=int, default=None)\n"
        "    return parser\n"
    )
    (tmp_path / "convert.py").write_text(
        "import argparse\nfrom patch_args import get_patch_args\n\n"
        "if __name__ == '__main__':\n    parser = argparse.ArgumentParser()\n    parser.add_argument('--num-layers', type=int)\n"
        "    get_patch_args(parser)\n    parser.parse_args()\n"
    )
    (tmp_path / "run.sh").write_text("python convert.py --num-layers 2 --kv-lora-rank 512 --q-lora-rank 1536\n")
    monkeypatch.chdir(tmp_path)
    found = sorted(f["message"].split()[0] for f in check_json("run.sh") if f["code"] == "PK201")
    assert found == ["--q-lora-rank"], found
