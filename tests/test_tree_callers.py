"""A callee's environment default is not taken over its caller (issue 26, HYGON-AI/Megatron-LM-das).

The shape: examples/<model>/run_<model>.sh runs `mpirun ... -x NNODES=${node_num} ... bash -c 'bash
${TRAIN_SCRIPT} ...'`, and the train script beside it does `NNODES=${NNODES:-1}` and launches torchrun with
TP x PP = 32. The default 1 holds only where nothing sets NNODES; a script of the checkout runs the train
script with it set, so the world size is not known and PK301 is not an error about the checkout. With no
caller in the tree the default stands as shipped (the error stays)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from packlint.cli import main
from packlint.interpret import tree_callers

TRAIN = """#!/bin/bash

for para in $*
do
    if [[ $para == --launch_backend* ]];then
        launch_backend=${para#*=}
    fi
done

export LAUNCH_BACKEND=${launch_backend:-"torchrun"}
MASTER_ADDR=${MASTER_ADDR:-localhost}
MASTER_PORT=${MASTER_PORT:-6000}
NNODES=${NNODES:-1}
NODE_RANK=${NODE_RANK:-0}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}

TP=4
PP=8
TORCH_DISTRIBUTED_ARGS=(
    --nnodes $NNODES
    --node_rank $NODE_RANK
    --master_addr $MASTER_ADDR
    --master_port $MASTER_PORT
    --nproc_per_node $GPUS_PER_NODE
)
if [[ "$LAUNCH_BACKEND" == "torchrun" ]]; then
    torchrun ${TORCH_DISTRIBUTED_ARGS[@]} pretrain_gpt.py \\
        --tensor-model-parallel-size ${TP} --pipeline-model-parallel-size ${PP} \\
        --micro-batch-size 1 --global-batch-size 512
fi
"""

RUN = """#!/bin/bash
hostfile_input=${1}
node_num=${2}
CURRENT_DIR="$( cd "$( dirname "$0" )" && pwd )"
LAUNCHER="torchrun"
TRAIN_SCRIPT=${TRAIN_SCRIPT:-train_mixtral_8x22B.sh}
HOST="$(sed -n "1p" "${hostfile_input}" | awk -F ' ' '{print $1}')"
MPIRUN_NP=${node_num}
torchrun_args=""
if [[ "${LAUNCHER}" == "torchrun" ]]; then
    torchrun_args+="
        -x MASTER_ADDR=${HOST} \\
        -x NNODES=${node_num} \\
        -x GPUS_PER_NODE=8 \\
    "
fi
CMD="mpirun -np ${MPIRUN_NP} --hostfile ${hostfile_input} \\
    ${torchrun_args} \\
    bash -c '
    cd ${CURRENT_DIR} && \\
    bash ${TRAIN_SCRIPT} \\
    --launch_backend=${LAUNCHER}'
"
eval ${CMD}
"""


def check_json(*argv: str) -> dict:
    buf = io.StringIO()
    with redirect_stdout(buf):
        main(["check", "--format", "json", "--exit-zero", "--no-cache", *argv])
    return json.loads(buf.getvalue())


def tree(tmp_path: Path, caller: str | None, caller_name: str = "run_mixtral_8x22B.sh") -> Path:
    (tmp_path / ".git").mkdir()
    d = tmp_path / "examples" / "mixtral"
    d.mkdir(parents=True)
    (d / "train_mixtral_8x22B.sh").write_text(TRAIN)
    if caller is not None:
        (d / caller_name).write_text(caller)
    return d / "train_mixtral_8x22B.sh"


def pk301(result: dict, path: str) -> list[dict]:
    return [f for f in result["findings"] if f["code"] == "PK301" and f["path"].endswith(path)]


def undecided(result: dict) -> list[str]:
    """The infos of the rules the unknown world size leaves undecided (one per launch)."""
    return [f["message"] for f in result["findings"] if "could not decide" in f["message"]]


def test_without_a_caller_in_the_tree_the_default_stands_as_shipped(tmp_path: Path):
    script = tree(tmp_path, None)
    found = pk301(check_json(str(script)), "train_mixtral_8x22B.sh")
    assert [f["severity"] for f in found] == ["error"], found
    assert "world size 8" in found[0]["message"]


def test_a_caller_passing_the_variable_through_mpirun_x_makes_it_unknown(tmp_path: Path):
    script = tree(tmp_path, RUN)
    result = check_json(str(script.parent))
    assert [f for f in result["findings"] if f["code"] == "PK301"] == []
    notes = undecided(result)
    assert any(
        "$NNODES is set by examples/mixtral/run_mixtral_8x22B.sh:13 (`-x NNODES=${node_num}" in m for m in notes
    ), notes


@pytest.mark.parametrize(
    "line",
    [
        "NNODES=4 bash examples/mixtral/train_mixtral_8x22B.sh",  # a prefix assignment, from the root
        "export NNODES=$SLURM_NNODES\nbash $(dirname $0)/train_mixtral_8x22B.sh",  # exported, beside it
        "env NNODES=2 GPUS_PER_NODE=8 bash ./train_mixtral_8x22B.sh",
        "srun --export=ALL,NNODES=$N bash train_mixtral_8x22B.sh",
        "mpiexec -genv NNODES 2 -n 16 bash train_mixtral_8x22B.sh",
        "docker run -e NNODES=2 img bash /workspace/examples/mixtral/train_mixtral_8x22B.sh",
    ],
)
def test_each_way_a_caller_sets_the_variable(tmp_path: Path, line: str):
    script = tree(tmp_path, "#!/bin/bash\n" + line + "\n", "launch.sh")
    result = check_json(str(script))
    assert pk301(result, "train_mixtral_8x22B.sh") == [], line
    assert any("$NNODES is set by examples/mixtral/launch.sh:" in m for m in undecided(result)), line


@pytest.mark.parametrize(
    "line",
    [
        "source train_mixtral_8x22B.sh\nexport NNODES=2",  # sourced: its settings are in its analysis
        "export NNODES=2\nbash other/train_mixtral_8x22B.sh",  # another script of the same name
        "export NODES=2\nbash train_mixtral_8x22B.sh",  # another variable
        "NNODES=1 bash train_mixtral_8x22B.sh",  # the caller's value is the default
    ],
)
def test_what_is_not_a_caller_setting_the_variable(tmp_path: Path, line: str):
    script = tree(tmp_path, "#!/bin/bash\n" + line + "\n", "launch.sh")
    found = pk301(check_json(str(script)), "train_mixtral_8x22B.sh")
    assert [f["severity"] for f in found] == ["error"], (line, found)


def test_the_forms_read_from_a_caller():
    text = (
        "export A=1 B\ndeclare -x C=3\nD=4 E='x y' bash t.sh\nmpirun -x F=${n} -x G -np 8 bash t.sh\n"
        "srun --export=ALL,H=1,I bash t.sh\nenv J=1 python x.py\nK=5\n"
    )
    got = {n: [(s.line, s.value) for s in v] for n, v in tree_callers._settings("c.sh", text).items()}
    assert got == {
        "A": [(1, "1")],
        "B": [(1, None)],
        "C": [(2, "3")],
        "D": [(3, "4")],
        "E": [(3, "'x y'")],
        "F": [(4, "${n}")],
        "G": [(4, None)],
        "H": [(5, "1")],
        "I": [(5, None)],
        "J": [(6, "1")],
    }, got


def _mentions_whole_text(text: str, base: str) -> list[str]:
    """0.3.2's `_mentions`: the pattern over the whole text (the reference the word-by-word search must equal)."""
    import re

    found = []
    for m in re.finditer(rf"""(?<![\w.-])([^\s"'=;|&()<>]*?){re.escape(base)}(?![\w.-])""", text):
        before = text[max(0, m.start() - 12) : m.start()].rstrip(" \t\"'")
        if re.search(r"(?:^|[\s;&|(])(?:source|\.)$", before):
            continue
        head = m.group(1)
        if m.start(1) > 0 and text[m.start(1) - 1] in ")}`":
            head = "$" + head
        found.append(head)
    return found


_MENTION_TEXTS = [
    RUN,
    TRAIN,
    'bash ${CURRENT_DIR}/train.sh; source ./train.sh\n. train.sh && ./xtrain.sh "train.sh"=1 train.sh.bak\n',
    "$(dirname $0)/train.sh `pwd`/train.sh a/train.sh/b -train.sh .train.sh train.sh-x\n",
    "TRAIN_SCRIPT=${TRAIN_SCRIPT:-train.sh}\nmpirun -x A=1 bash -c 'bash /workspace/p/examples/x/train.sh'",
    "train.shtrain.sh train.sh\ttrain.sh\u00a0train.sh\u2003/x/train.sh",
]


@pytest.mark.parametrize("text", _MENTION_TEXTS)
@pytest.mark.parametrize("base", ["train.sh", "train_mixtral_8x22B.sh", "x", "a b.sh", "t(1).sh"])
def test_mentions_equal_the_whole_text_search(text: str, base: str) -> None:
    assert tree_callers._mentions(text, base) == _mentions_whole_text(text, base)


def test_mentions_equal_the_whole_text_search_on_generated_texts() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    pieces = st.sampled_from(
        [
            "train.sh",
            "t.sh",
            "train",
            ".sh",
            "/",
            "$",
            "{",
            "}",
            ")",
            "(",
            "`",
            " ",
            "\t",
            "\n",
            '"',
            "'",
            "=",
            ";",
            "&",
            "|",
            "<",
            ">",
            ".",
            "-",
            "_",
            "x",
            "source ",
            ". ",
            "\u00a0",
            "é",
        ]
    )

    @settings(max_examples=300, deadline=None, database=None)
    @given(st.lists(pieces, max_size=40).map("".join), st.sampled_from(["train.sh", "t.sh", "sh", "a b.sh"]))
    def check(text: str, base: str) -> None:
        assert tree_callers._mentions(text, base) == _mentions_whole_text(text, base)

    check()
