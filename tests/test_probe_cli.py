"""`packlint probe` and `python -m runtime_probe`: exit codes, one-line errors, reading the launch
model (settings_from_variant, launch/variant selection), and the SCRIPT path end to end."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from packlint.cli import main as packlint_main
from runtime_probe import ProbeUsageError, select_targets, settings_from_variant

SMALL = ["--lengths", "16,24,9,31", "--heads", "2", "--head-dim", "8", "--device", "cpu"]


def run_cli(capsys, *argv):
    code = packlint_main(["probe", *argv])
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------------------ exit codes

def test_correct_flags_exit_0(capsys):
    code, out, err = run_cli(capsys, "--bmr", "1", "--packed-data", "1", "--mbs", "1", *SMALL)
    assert code == 0, out + err
    assert out.startswith("PROVEN") and "cu_seqlens: [0, 16, 40, 49, 80]" in out


def test_leak_exits_1_with_the_number_in_json(capsys):
    code, out, _ = run_cli(capsys, "--bmr", "1", "--packed-data", "0", *SMALL, "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["exit_code"] == 1 and doc["leakage"]["abs"] > 0
    assert any(c["name"] == "(ii) leakage" and c["status"] == "fail" for c in doc["checks"])


def test_mbs_assert_exits_1_not_a_traceback(capsys):
    code, out, err = run_cli(capsys, "--bmr", "1", "--packed-data", "1", "--mbs", "2", *SMALL)
    assert code == 1 and "micro-batch-size must be 1 for packing" in out and "Traceback" not in out + err


@pytest.mark.parametrize("argv,message", [
    (["--lengths", "5,x"], "'x' is not an integer"),
    (["--lengths", "5"], "at least 2 sub-samples"),
    (["--lengths", "5,-3"], "positive"),
    (["--mbs", "two"], "--mbs 'two': expected an integer"),
    (["--tp", "0"], "--tp 0: must be at least 1"),
    (["--cu-seqlens", "0,a"], "--cu-seqlens"),
    (["--backend", "flash-attn", "--device", "cpu"], "no usable attention backend: flash-attn: flash-attn needs a CUDA device"),
    (["--env", "A=1"], "need a SCRIPT"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run_cli(capsys, "--bmr", "1", "--packed-data", "1", *argv)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("packlint: error: ") and message in lines[0], err


def test_no_script_and_no_gates_is_a_usage_error(capsys):
    code, out, err = run_cli(capsys, "--mbs", "1")
    assert code == 2 and "nothing to probe: give a SCRIPT" in err


def test_argparse_rejections_are_exit_2(capsys):
    code, _, err = run_cli(capsys, "--device", "tpu")
    assert code == 2 and "invalid choice" in err


def test_missing_torch_names_the_extra(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    code, out, err = run_cli(capsys, "--bmr", "1", "--packed-data", "1")
    assert code == 2 and out == ""
    assert err.strip() == "packlint: error: the probe needs torch: pip install 'packlint[probe] @ git+https://github.com/packlint/packlint'"


def test_packlint_imports_no_torch_until_probe_runs():
    code = ("import sys, packlint.cli as c; c.build_parser(); import packlint.cli.probe, runtime_probe;"
            "from runtime_probe import settings_from_variant; settings_from_variant({});"
            "assert 'torch' not in sys.modules, 'torch imported'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr


def test_lint_path_never_imports_torch_or_transformers(tmp_path):
    """`packlint check` of an HF-stack launch (and picking its probe targets, which reads settings
    only) imports neither torch nor transformers: they belong to the probe's forward alone."""
    script = tmp_path / "sft.sh"
    script.write_text(
        "#!/bin/bash\naccelerate launch trl/scripts/sft.py --model_name_or_path Qwen/Qwen2-0.5B "
        "--attn_implementation sdpa --packing --padding_free True\n"
    )
    code = (
        "import sys\n"
        "from packlint.cli import main\n"
        f"rc = main(['check', '--no-cache', {str(script)!r}])\n"
        "from packlint.api import inspect_script\n"
        "from runtime_probe.launches import select_targets\n"
        f"targets, _ = select_targets(inspect_script({str(script)!r}))\n"
        "assert targets and type(targets[0].settings).__name__ == 'HFProbeSettings', targets\n"
        "bad = sorted(m for m in ('torch', 'transformers') if m in sys.modules)\n"
        "assert not bad, f'imported on the lint path: {bad}'\n"
        "print('rc', rc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and "\nrc 0" in out.stdout, out.stdout + out.stderr


def test_python_dash_m_runtime_probe():
    base = [sys.executable, "-m", "runtime_probe", "--bmr", "1", "--mbs", "1", *SMALL, "--no-second-opinion"]
    ok = subprocess.run(base + ["--packed-data", "1"], capture_output=True, text=True, timeout=600)
    assert ok.returncode == 0 and ok.stdout.startswith("PROVEN"), ok.stdout + ok.stderr
    bad = subprocess.run(base + ["--packed-data", "1", "--lengths", "3"], capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and bad.stderr.startswith("runtime_probe: error:") and "Traceback" not in bad.stderr


# ------------------------------------------------------------------------------ reading a variant

def _flag(value, line=1):
    return [{"value": value, "line": line, "file": "t.sh"}]


def test_settings_from_variant_reads_gates_and_flags():
    variant = {
        "env": {"OFFLINE_PACKING_BMR": {"value": "1", "exported": True},
                "OFFLINE_PACKED_DATA": {"value": "1", "exported": True}},
        "flags": {"--micro-batch-size": _flag("4") + _flag("1", 9),  # last occurrence wins
                  "--seq-length": _flag("8192"), "--tensor-model-parallel-size": _flag("2"),
                  "--context-parallel-size": _flag("2"), "--sequence-parallel": _flag(True),
                  "--packing-sft-data": _flag(True), "--data-path": _flag(["a", "b"])},
    }
    s = settings_from_variant(variant, device="cpu", lengths=[3, 4])
    assert (s.bmr, s.packed_data, s.mbs, s.seq_length, s.tp, s.cp) == ("1", "1", 1, 8192, 2, 2)
    assert s.sequence_parallel and s.packing_flag == "--packing-sft-data"
    assert s.device == "cpu" and s.lengths == [3, 4] and s.notes == []


def test_settings_from_variant_unknowns_fall_back_with_notes():
    variant = {
        "env": {"OFFLINE_PACKING_BMR": {"unknown": "command substitution $(cat f)", "exported": True},
                "OFFLINE_PACKED_DATA": {"value": "1", "exported": False}},
        "flags": {"--micro-batch-size": [{"unknown": "positional $4", "line": 3}],
                  "--seq-length": _flag("lots"),
                  "--tensor-model-parallel-size": _flag(["2", "4"])},
    }
    s = settings_from_variant(variant)
    assert s.bmr is None and s.packed_data is None and s.mbs == 1 and s.seq_length is None and s.tp == 4
    text = " | ".join(s.notes)
    assert "OFFLINE_PACKING_BMR: value unknown" in text and "not exported" in text
    assert "--micro-batch-size: value unknown" in text and "'lots' is not an integer" in text


def test_settings_from_variant_empty_and_bad_override():
    s = settings_from_variant({})
    assert (s.bmr, s.packed_data, s.mbs, s.sequence_parallel, s.packing_flag) == (None, None, 1, False, None)
    with pytest.raises(TypeError):
        settings_from_variant({}, nonsense=1)


def _launch(i, env, flags, variants=None, program="pretrain.py"):
    ln = {"id": i, "file": "t.sh", "line": 10 + i, "launcher": "torchrun", "program": program,
          "env": env, "flags": flags}
    ln["variants"] = variants if variants is not None else [{"when": [], "env": env, "flags": flags}]
    return ln


GATES_ON = {"OFFLINE_PACKING_BMR": {"value": "1", "exported": True},
            "OFFLINE_PACKED_DATA": {"value": "1", "exported": True}}
BMR_ONLY = {"OFFLINE_PACKING_BMR": {"value": "1", "exported": True}}


def test_select_targets_probes_distinct_variants_of_training_launches():
    model = {"script": "t.sh", "launches": [
        _launch(0, GATES_ON, {"--out": _flag("x")}, program="tools/prep.py"),  # inherits the gates only
        _launch(1, GATES_ON, {"--micro-batch-size": _flag("1")}, variants=[
            {"when": ["t.sh:3: `[[ $M == a ]]` is true"], "env": GATES_ON, "flags": {"--micro-batch-size": _flag("1")}},
            {"when": ["t.sh:3: `[[ $M == a ]]` is false"], "env": BMR_ONLY, "flags": {"--micro-batch-size": _flag("1")}},
            {"when": ["t.sh:5: x"], "env": GATES_ON, "flags": {"--micro-batch-size": _flag("1")}},  # same as 1st
        ]),
        _launch(2, GATES_ON, {"--micro-batch-size": _flag("1")}),  # same settings as launch 1 variant 1
    ]}
    targets, notes = select_targets(model, lengths=[3, 4])
    assert [(t.launch, t.variant) for t in targets] == [(1, 0), (1, 1)]
    assert "variant 2 of 3 when t.sh:3" in targets[1].label()
    assert any("launch(es) [0]" in n for n in notes)
    assert sum("not probed twice" in n for n in notes) == 2


def test_select_targets_falls_back_to_gate_env_and_refuses_non_training():
    model = {"launches": [_launch(0, BMR_ONLY, {})]}
    targets, _ = select_targets(model)
    assert len(targets) == 1 and targets[0].settings.bmr == "1"
    with pytest.raises(ProbeUsageError, match="no launch looks like training"):
        select_targets({"script": "x.sh", "launches": [_launch(0, {}, {"--out": _flag("x")})]})


def test_script_path_with_a_mocked_launch_model(capsys, monkeypatch):
    """The probe reads only the launch model's values: a hand-written model is enough."""
    import packlint.api

    model = {"script": "mock.sh", "launches": [
        _launch(0, GATES_ON, {"--micro-batch-size": _flag("1")}, variants=[
            {"when": ["a"], "env": GATES_ON, "flags": {"--micro-batch-size": _flag("1")}},
            {"when": ["b"], "env": BMR_ONLY, "flags": {"--micro-batch-size": _flag("1")}}])]}
    seen = {}

    def fake_inspect(path, **kw):
        seen.update(kw, path=path)
        return model

    monkeypatch.setattr(packlint.api, "inspect_script", fake_inspect)
    code, out, _ = run_cli(capsys, "mock.sh", "--env", "X=1", "--inherit-env", *SMALL, "--", "a", "b")
    assert seen == {"path": "mock.sh", "env": {"X": "1"}, "inherit_env": True, "args": ["a", "b"]}
    assert code == 1
    assert "== launch 0 (t.sh:10, torchrun pretrain.py), variant 1 of 2 when a\nPROVEN" in out
    assert "variant 2 of 2 when b\nFAILED" in out


def test_script_path_when_the_launch_model_is_unavailable(capsys, monkeypatch):
    import packlint.api

    def not_yet(path, **kw):
        raise NotImplementedError("interpreter not ready")

    monkeypatch.setattr(packlint.api, "inspect_script", not_yet)
    code, out, err = run_cli(capsys, "x.sh")
    assert code == 2 and "launch model is not available (interpreter not ready)" in err


# ------------------------------------------------------------------------------ real scripts

def _script(tmp_path, body: str):
    p = tmp_path / "train.sh"
    p.write_text(textwrap.dedent(body))
    return str(p)


def test_script_gates_and_mbs_come_from_the_launch(capsys, tmp_path):
    path = _script(tmp_path, """\
        #!/bin/bash
        export OFFLINE_PACKING_BMR='1'
        export OFFLINE_PACKED_DATA="${PACKED:-0}"
        MBS="${1:-1}"
        python tools/convert.py --in a --out b
        torchrun --nproc_per_node 8 pretrain.py --micro-batch-size ${MBS} --seq-length 512 \\
            --tensor-model-parallel-size 2 --sequence-parallel
        """)
    code, out, _ = run_cli(capsys, path, *SMALL)
    assert code == 1 and "FAILED: gate 2: batch" in out and "(ii) leakage" in out
    assert "tools/convert.py" not in out.split("note:")[0]  # only the training launch is probed

    code, out, _ = run_cli(capsys, path, "--env", "PACKED=1", *SMALL, "--format", "json")
    doc = json.loads(out)
    rep = doc["probes"][0]["report"]
    assert code == 0 and rep["verdict"] == "proven"
    assert rep["settings"]["tp"] == 2 and rep["settings"]["sequence_parallel"] and rep["settings"]["seq_length"] == 512
    assert rep["padding"] == 0 and rep["cu_seqlens"] == [0, 16, 40, 49, 80]

    code, out, _ = run_cli(capsys, path, "--env", "PACKED=1", *SMALL, "--", "2")
    assert code == 1 and "micro-batch-size must be 1 for packing" in out


def test_script_without_a_training_launch_is_a_usage_error(capsys, tmp_path):
    path = _script(tmp_path, "#!/bin/bash\necho hello\npython tools/x.py --a 1\n")
    code, out, err = run_cli(capsys, path)
    assert code == 2 and "no launch looks like training" in err
