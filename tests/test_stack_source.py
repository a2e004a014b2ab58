"""stack_source_found / stack_source_has (issue 21): a stack's source read as text from a code base of the
launch or the installed distribution, never imported; unknown when not at hand."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from packlint.api import inspect_script
from packlint.codebase import CodeOptions, CodeSession
from packlint.conditions.functions.stack_source import _installed_file, locate_stack_file
from packlint.conditions.tree import EvalContext, Unk
from packlint.engine import check_model
from packlint.errors import PacklintError
from packlint.rule_table import load_table

TABLE = """
[[rule]]
code = "XX001"
name = "has-check"
severity = "error"
summary = "s"
explanation = "e"
when = "stack_source_has('fakestack/checks.py', 'bsz should be 1')"
message = "found in {stack_source_file('fakestack/checks.py')}"
[[rule.example]]
kind = "bad"
script = "python train.py"
[[rule.example]]
kind = "good"
script = "python train.py"
"""


def _table(where, text):
    path = where / "t.toml"
    path.write_text(text)
    return load_table([path], builtin=False, use_cache=False)


def _check(tmp_path, files: dict[str, str]):
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(textwrap.dedent(text))
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\npython train.py --x 1\n")
    (tmp_path / "train.py").write_text(
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--x')\np.parse_args()\n"
    )
    table = _table(tmp_path, TABLE)
    model = inspect_script(str(script))
    session = CodeSession(str(script), CodeOptions(use_cache=False))
    return check_model(model, table.rules, script_text=script.read_bytes(), code=session.facts)


def test_found_under_src_and_matches(tmp_path):
    found = _check(tmp_path, {"src/fakestack/checks.py": "assert bsz == 1, 'bsz should be 1 for neat packing'\n"})
    assert [(f.code, f.severity) for f in found] == [("XX001", "error")]
    assert "src/fakestack/checks.py" in found[0].message


def test_found_but_check_gone(tmp_path):
    found = _check(tmp_path, {"fakestack/checks.py": "# the assert was removed in this release\n"})
    assert found == []


def test_not_at_hand_is_undecided(tmp_path):
    found = _check(tmp_path, {})
    # unknown never fires: one info that says what could not be decided
    assert [(f.code, f.severity) for f in found] == [("XX001", "info")]
    assert "not at hand" in found[0].message


def test_installed_lookup_never_imports():
    # megatron-core is installed in the project's venv; locating a file inside it must not import it
    code = (
        "import sys\n"
        "from packlint.conditions.functions.stack_source import _installed_file\n"
        "p = _installed_file('megatron/core/datasets/gpt_dataset.py')\n"
        "print(p is not None, any(m == 'megatron' or m.startswith('megatron.') for m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[1] == "False"
    assert _installed_file("no_such_stack_pkg/x.py") is None


def test_bad_path_fails_the_load(tmp_path):
    import pytest

    with pytest.raises(PacklintError):
        _table(tmp_path, TABLE.replace("fakestack/checks.py', 'bsz", "../etc/passwd', 'bsz"))


def test_memo_per_context(tmp_path):
    (tmp_path / "fakestack").mkdir()
    (tmp_path / "fakestack" / "a.py").write_text("x = 1\n")
    ctx = EvalContext({"script": str(tmp_path / "run.sh")}, {"id": 0}, {}, code=lambda launch, variant: None)
    assert locate_stack_file(ctx, "fakestack/a.py") == str(tmp_path / "fakestack" / "a.py")
    assert not isinstance(ctx.memo["stack_file:fakestack/a.py"], Unk)


PY_TABLE = """
[[rule]]
code = "XX002"
name = "py-config"
severity = "error"
summary = "s"
explanation = "e"
when = "py_config_value('use_varlen_attn') == 'false'"
message = "m"
[[rule.example]]
kind = "bad"
script = "xtuner train cfg.py"
[[rule.example]]
kind = "good"
script = "xtuner train cfg.py"
"""


def _check_py(tmp_path, config: str, line: str):
    (tmp_path / "cfg.py").write_text(config)
    script = tmp_path / "run.sh"
    script.write_text(f"#!/bin/bash\n{line}\n")
    model = inspect_script(str(script))
    session = CodeSession(str(script), CodeOptions(use_cache=False))
    table = _table(tmp_path, PY_TABLE)
    return [
        (f.code, f.severity)
        for f in check_model(model, table.rules, script_text=script.read_bytes(), code=session.facts)
    ]


def test_py_config_literal_and_override(tmp_path):
    cfg = "use_varlen_attn = False\npack_to_max_length = True\n"
    assert _check_py(tmp_path, cfg, "xtuner train cfg.py") == [("XX002", "error")]
    assert _check_py(tmp_path, cfg, "xtuner train cfg.py --cfg-options use_varlen_attn=True") == []


def test_py_config_never_executes_and_unknowns(tmp_path):
    marker = tmp_path / "executed"
    # an expression is not evaluated: unknown (an info), and the file's code never runs
    cfg = f"open({str(marker)!r}, 'w').write('x')\nuse_varlen_attn = bool(0)\n"
    assert _check_py(tmp_path, cfg, "xtuner train cfg.py") == [("XX002", "info")]
    assert not marker.exists()
    # a name the base configs may set is unknown, not absent
    cfg = "from mmengine.config import read_base\nwith read_base():\n    from .base import *\n"
    assert _check_py(tmp_path, cfg, "xtuner train cfg.py") == [("XX002", "info")]


def test_a_fifo_at_a_stack_source_path_never_blocks(tmp_path):
    """A hostile repository plants a FIFO where the stack's source would be: it is neither located (only
    regular files are) nor read (safe_io.read_bounded never blocks), so the check ends and the rule is
    undecided, as when the source is not at hand. Run in a subprocess with a timeout: a hang fails it."""
    import os

    (tmp_path / "fakestack").mkdir()
    os.mkfifo(tmp_path / "fakestack" / "checks.py")
    code = (
        "import sys\nsys.path.insert(0, sys.argv[1])\n"
        "from tests.test_stack_source import _check\nfrom pathlib import Path\n"
        "print([(f.code, f.severity) for f in _check(Path(sys.argv[2]), {})])\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run(
        [sys.executable, "-c", code, root, str(tmp_path)], capture_output=True, text=True, timeout=60, cwd=root
    )
    assert proc.returncode == 0, proc.stderr[-800:]
    assert "('XX001', 'error')" not in proc.stdout
