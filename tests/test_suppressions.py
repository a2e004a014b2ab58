"""`# packlint: disable=...` comments: forms, scopes, the comment scanner, and PK901 (unused-suppression)."""

from __future__ import annotations

import json

import pytest

from packlint.cli import main
from packlint.suppressions import find_comments, parse_directives

VQA_LINE = "export OFFLINE_PACKING_VQA=1"
CLEAN_HEAD = "#!/bin/bash\nexport OFFLINE_PACKING_BMR=1 OFFLINE_PACKED_DATA=1\n"
LAUNCH = "torchrun train.py --micro-batch-size 1\n"


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "rule-cache"))


def check(capsys, tmp_path, text, *opts, name="t.sh"):
    p = tmp_path / name
    p.write_text(text)
    capsys.readouterr()
    code = main(["check", "--isolated", "--no-code-base", "--format", "json", *opts, str(p)])
    doc = json.loads(capsys.readouterr().out)
    return code, [(f["code"], f["line"]) for f in doc["findings"]], doc


def test_same_line_suppresses_and_counts(capsys, tmp_path):
    _, found, doc = check(capsys, tmp_path, CLEAN_HEAD + VQA_LINE + "  # packlint: disable=PK004\n" + LAUNCH)
    assert found == []
    assert doc["summary"]["suppressed"] == 1


def test_line_above_alone_and_stacked(capsys, tmp_path):
    text = CLEAN_HEAD + "# packlint: disable=PK004 -- our fork reads it\n" + VQA_LINE + "\n" + LAUNCH
    assert check(capsys, tmp_path, text)[1] == []
    stacked = (CLEAN_HEAD + "# packlint: disable=PK004\n# packlint: disable=PK003\n"
               "export OFFLINE_PACKING_VQA=1 MBS=2\n" + "torchrun train.py --micro-batch-size $MBS\n")
    # PK003 is reported at the value `MBS=2` (line 5): both stacked directives apply to it
    _, found, doc = check(capsys, tmp_path, stacked)
    assert found == [] and doc["summary"]["suppressed"] == 2


def test_line_above_must_be_directly_above_and_alone(capsys, tmp_path):
    text = CLEAN_HEAD + "# packlint: disable=PK004\n\n" + VQA_LINE + "\n" + LAUNCH
    assert ("PK004", 5) in check(capsys, tmp_path, text)[1]
    trailing = CLEAN_HEAD + "echo hi  # packlint: disable=PK004\n" + VQA_LINE + "\n" + LAUNCH
    assert ("PK004", 4) in check(capsys, tmp_path, trailing)[1]


def test_file_level_prefixes_names_and_all(capsys, tmp_path):
    body = CLEAN_HEAD + VQA_LINE + "\n" + LAUNCH
    for directive in ("PK004", "PK0", "pk004", "dead-packing-vqa", "all", "PK001, PK004"):
        text = body + f"# packlint: disable-file={directive}\n"
        _, found, _ = check(capsys, tmp_path, text)
        assert [c for c, _ in found if c != "PK901"] == [], directive
    # an unrelated disable-file leaves the finding
    assert ("PK004", 3) in check(capsys, tmp_path, body + "# packlint: disable-file=PK001\n")[1]


def test_quoted_and_heredoc_text_is_not_a_directive(capsys, tmp_path):
    text = (CLEAN_HEAD + 'echo "# packlint: disable-file=PK004"\n'
            "echo '# packlint: disable-file=PK004'\n"
            "cat <<EOF\n# packlint: disable-file=PK004\nEOF\n"
            + VQA_LINE + "\n" + LAUNCH)
    assert ("PK004", 8) in check(capsys, tmp_path, text)[1]


def test_comment_scanner():
    text = ("a=1 # one\n"
            "b='# no' c=\"# no\" d=$'# no' # two\n"
            "echo ${#x} $# x#y\n"
            "cat <<-'END' # three\n\t# no\n\tEND\n"
            "e=\\#no\n"
            "  # four\n")
    found = [(c.line, c.text, c.alone) for c in find_comments(text)]
    assert found == [(1, "# one", False), (2, "# two", False), (4, "# three", False), (8, "# four", True)]


def test_directive_parsing():
    [d] = parse_directives("x=1  # packlint: disable=PK001,PK004 -- because reasons\n", "t.sh")
    assert (d.kind, d.selectors, d.reason, d.line, d.column) == ("line", ["PK001", "PK004"], "because reasons", 1, 6)
    [d] = parse_directives("# PACKLINT: Disable-File = all\n", "t.sh")
    assert (d.kind, d.selectors, d.alone) == ("file", ["all"], True)
    [d] = parse_directives("# packlint: disabel=PK001\n", "t.sh")
    assert d.kind == "malformed"
    assert parse_directives("# packlint is great\n", "t.sh") == []


def test_pk901_reports_unused_unknown_and_malformed(capsys, tmp_path):
    text = (CLEAN_HEAD + "X=1  # packlint: disable=PK004\n" + "Y=1  # packlint: disable=PK777\n"
            "# packlint: disabel=PK003\n" + LAUNCH)
    code, found, doc = check(capsys, tmp_path, text)
    assert found == [("PK901", 3), ("PK901", 4), ("PK901", 5)]
    msgs = [f["message"] for f in doc["findings"]]
    assert "PK004 suppresses nothing on this line" in msgs[0]
    assert "PK777 is not a rule" in msgs[1]
    assert "not a packlint directive" in msgs[2]
    assert code == 0                               # PK901 is a warning: below the default --fail-on
    assert doc["findings"][0]["column"] == 6


def test_pk901_respects_selection_and_partial_use(capsys, tmp_path):
    text = CLEAN_HEAD + VQA_LINE + "  # packlint: disable=PK004,PK001\n" + LAUNCH
    _, found, doc = check(capsys, tmp_path, text)
    assert found == [("PK901", 3)] and "PK001 suppresses nothing" in doc["findings"][0]["message"]
    # a rule that is not enabled is not judged
    text2 = CLEAN_HEAD + "X=1  # packlint: disable=PK004\n" + LAUNCH
    assert check(capsys, tmp_path, text2, "--ignore", "PK004")[1] == []
    assert check(capsys, tmp_path, text2, "--ignore", "PK901")[1] == []
    # PK901 itself can be silenced by naming it
    text3 = CLEAN_HEAD + "X=1  # packlint: disable=PK004 -- keep\n# packlint: disable-file=PK901\n" + LAUNCH
    assert check(capsys, tmp_path, text3)[1] == []


def test_no_pk901_when_the_script_does_not_parse(capsys, tmp_path):
    text = "#!/bin/bash\nX=1  # packlint: disable=PK004\nCHECKPOINT=<path>\n" + LAUNCH
    assert [c for c, _ in check(capsys, tmp_path, text)[1]] == ["PK900"]


def test_sourced_file_suppressions(capsys, tmp_path):
    (tmp_path / "env.sh").write_text("export OFFLINE_PACKING_VQA=1  # packlint: disable=PK004\n")
    text = CLEAN_HEAD + 'source "$(dirname "$0")/env.sh"\n' + LAUNCH
    _, found, doc = check(capsys, tmp_path, text)
    assert found == [] and doc["summary"]["suppressed"] == 1
    # a disable-file in the checked script covers findings located in files it sources
    (tmp_path / "env.sh").write_text("export OFFLINE_PACKING_VQA=1\n")
    _, found, _ = check(capsys, tmp_path, text + "# packlint: disable-file=PK004\n")
    assert found == []
    _, found, doc = check(capsys, tmp_path, text)
    assert [(f["code"], f["path"].endswith("env.sh")) for f in doc["findings"]] == [("PK004", True)]


def test_suppressed_info_and_multi_line_finding(capsys, tmp_path):
    text = ("#!/bin/bash\nexport OFFLINE_PACKING_BMR=1 OFFLINE_PACKED_DATA=1\n"
            "torchrun train.py \\\n  --micro-batch-size 2  # packlint: disable=PK003\n")
    _, found, _ = check(capsys, tmp_path, text)
    assert found == []


def test_text_summary_mentions_suppressed(capsys, tmp_path):
    p = tmp_path / "t.sh"
    p.write_text(CLEAN_HEAD + VQA_LINE + "  # packlint: disable=PK004\n" + LAUNCH)
    capsys.readouterr()
    main(["check", "--isolated", "--no-code-base", "--color", "never", str(p)])
    assert "All clear: no findings in 1 file (1 suppressed by comments)." in capsys.readouterr().out
