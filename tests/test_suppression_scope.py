"""Suppressions with ShellCheck's scope (issue 31): a `# packlint: disable=CODE` comment alone on a line
covers the whole command below it (a command continued with backslashes, a multi-line array, a
here-document, a block), and the editor offers "packlint: disable CODE for this command", which writes one.
A directive still covers nothing beyond that command."""

from __future__ import annotations

import json
import os

import pytest

from packlint.cli import main
from packlint.suppressions import command_ends, command_start

HEAD = "#!/bin/bash\nset -euo pipefail\nexport OFFLINE_PACKING_BMR=1 OFFLINE_PACKED_DATA=1\n"
DIRECTIVE = "# packlint: disable=PK003 -- our fork's loader handles micro-batches > 1\n"
# each: a launch whose PK003 (micro-batch > 1 with packing) is reported on a line below the command's first
CONTINUED = """torchrun --nproc_per_node 8 pretrain_gpt.py \\
    --tensor-model-parallel-size 2 \\
    --seq-length 8192 \\
    --micro-batch-size 4 \\
    --global-batch-size 256
"""
ARRAY = """TRAINING_ARGS=(
    --seq-length 8192
    --micro-batch-size 4
    --global-batch-size 256
)
torchrun --nproc_per_node 8 pretrain_gpt.py "${TRAINING_ARGS[@]}"
"""
SBATCH_HEREDOC = """sbatch <<EOF
#!/bin/bash
#SBATCH -N 2
export OFFLINE_PACKING_BMR=1 OFFLINE_PACKED_DATA=1
srun torchrun pretrain_gpt.py --seq-length 8192 \\
    --micro-batch-size 4
EOF
"""
FORMS = {"continued": CONTINUED, "array": ARRAY, "heredoc": SBATCH_HEREDOC}


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "rule-cache"))


def check(capsys, tmp_path, text):
    p = tmp_path / "train.sh"
    p.write_text(text)
    capsys.readouterr()
    main(["check", "--isolated", "--no-code-base", "--format", "json", str(p)])
    doc = json.loads(capsys.readouterr().out)
    return [(f["code"], f["line"]) for f in doc["findings"]], doc["summary"]["suppressed"]


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_directive_above_covers_every_line_of_the_command(form, capsys, tmp_path):
    body = FORMS[form]
    found, _ = check(capsys, tmp_path, HEAD + body)
    pk003 = [line for code, line in found if code == "PK003"]
    first = HEAD.count("\n") + 1
    assert pk003 and all(line > first for line in pk003), found  # reported below the command's first line
    found, suppressed = check(capsys, tmp_path, HEAD + DIRECTIVE + body)
    assert found == [] and suppressed == len(pk003)  # suppressed, and the directive is used (no PK901)


def test_the_scope_ends_with_the_command(capsys, tmp_path):
    found, suppressed = check(capsys, tmp_path, HEAD + DIRECTIVE + "echo start\n" + CONTINUED)
    assert suppressed == 0
    assert {code for code, _ in found} == {"PK003", "PK901"}
    capsys.readouterr()
    main(["check", "--isolated", "--no-code-base", str(tmp_path / "train.sh")])
    assert "suppresses nothing in the next command" in capsys.readouterr().out


def test_a_block_is_one_command_and_its_commands_are_commands_too():
    text = (
        "#!/bin/bash\n"  # 1
        'if [ -n "$X" ]; then\n'  # 2
        "    torchrun a.py \\\n"  # 3
        "        --x 1\n"  # 4
        "    echo done\n"  # 5
        "fi\n"  # 6
        "cat > c.yaml <<END\n"  # 7
        "a: 1\n"  # 8
        "END\n"  # 9
    )
    end = command_ends(text)
    assert (end(2), end(3), end(5), end(7), end(1)) == (6, 4, 5, 9, 1)
    assert [command_start(text, n) for n in (2, 3, 4, 5, 6, 8)] == [2, 3, 3, 5, 2, 7]


# ----------------------------------------------------------------------------------------------- editor


def test_editor_offers_disable_for_this_command(tmp_path):
    pytest.importorskip("pygls")
    from test_server import Client, apply

    (tmp_path / ".git").mkdir()
    loop = "".join("    " + line + "\n" for line in CONTINUED.splitlines())
    text = HEAD + "for seq in 4096 8192; do\n" + loop + "done\n"
    path = tmp_path / "train.sh"
    path.write_text(text)
    uri = path.as_uri()
    c = Client(tmp_path)
    try:
        c.request("initialize", {"processId": os.getpid(), "rootUri": tmp_path.as_uri(), "capabilities": {}})
        c.notify("initialized", {})
        c.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "shellscript", "version": 1, "text": text}},
        )
        pk003 = next(d for d in c.diagnostics(uri) if d["code"] == "PK003")
        assert pk003["range"]["start"]["line"] > 4  # on a continuation line
        actions = c.request(
            "textDocument/codeAction",
            {"textDocument": {"uri": uri}, "range": pk003["range"], "context": {"diagnostics": [pk003]}},
        )
        (disable,) = [a for a in actions if a["title"] == "packlint: disable PK003 for this command"]
        edited = apply(text, disable["edit"]["changes"][uri])
        # above the torchrun command inside the loop, indented like it
        assert edited == text.replace("    torchrun", "    # packlint: disable=PK003\n    torchrun", 1)
        c.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": edited}]},
        )
        assert all(d["code"] != "PK003" for d in c.diagnostics(uri))
    finally:
        c.close()
