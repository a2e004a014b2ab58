"""Fixes in config files (packlint.configfix; docs/fixes.md "Fixes in config files").

Fixtures: every `tests/fixtures/config_fix/<case>/` holds a launch script and the config file it names,
in the shapes of the stacks' own examples, `case.toml` (the command line, the file, the loader, the key
and its intended value) and `<file>.fixed`, the expected file after `--fix`. Each case is fixed on a copy
and compared byte for byte; the oracle then loads the original and the fixed file with the stack's own
loader (OmegaConf, PyYAML, json) and checks that exactly the intended key changed to the intended typed
value. Refusals (a flow mapping, anchors, a value from the command line, a Hydra-composed file, CR line
ends, a symbolic link, a file that was not checked) each have a test that reads the reason packlint gives.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from packlint.cli import main

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
CASES_DIR = ROOT / "tests" / "fixtures" / "config_fix"
CASES = sorted(p.name for p in CASES_DIR.iterdir() if (p / "case.toml").is_file())


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "rule-cache"))
    monkeypatch.delenv("NO_COLOR", raising=False)


def run(capsys, *argv):
    capsys.readouterr()
    code = main(["check", "--isolated", "--color", "never", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def oracle_load(loader: str, text: str):
    if loader == "json":
        return json.loads(text)
    if loader == "omegaconf":
        from omegaconf import OmegaConf

        return OmegaConf.to_container(OmegaConf.create(text))
    import yaml

    return yaml.safe_load(text)


def flat(value, prefix: str = "", out: dict | None = None) -> dict:
    out = {} if out is None else out
    if isinstance(value, dict) and value:
        for k, v in value.items():
            flat(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif prefix:
        out[prefix] = value
    return out


@pytest.mark.parametrize("case", CASES)
def test_config_fix_fixture(case, capsys, tmp_path, monkeypatch):
    src = CASES_DIR / case
    meta = tomllib.loads((src / "case.toml").read_text())
    work = tmp_path / case
    shutil.copytree(src, work, ignore=shutil.ignore_patterns("*.fixed", "case.toml"))
    (work / ".git").mkdir()
    monkeypatch.chdir(work)
    target = work / meta["file"]
    before = target.read_text()
    diff_args = ["--diff" if a == "--fix" else a for a in meta["args"]]
    code, out, err = run(capsys, *diff_args)
    assert code == 1 and f"+++ b/{meta['file']}" in out, err
    assert target.read_text() == before, "--diff must not write"
    run(capsys, *meta["args"])
    after = target.read_text()
    assert after == (src / (meta["file"] + ".fixed")).read_text()
    # the stack's own loader: exactly the intended key changed, to the intended typed value
    old, new = flat(oracle_load(meta["loader"], before)), flat(oracle_load(meta["loader"], after))
    expected = {k: v for k, v in old.items() if k != meta["key"]}
    if not meta.get("deleted"):
        expected[meta["key"]] = meta["value"]
    assert new == expected
    if not meta.get("deleted"):
        assert type(new[meta["key"]]) is type(meta["value"])
    # a second run changes nothing (a fixed point), and the finding is gone
    run(capsys, *meta["args"])
    assert target.read_text() == after
    code, out, err = run(capsys, *[a for a in meta["args"] if a not in ("--fix", "--unsafe-fixes")])
    assert code == 0, out


def _lf(tmp_path: Path, yaml_text: str, script: str = "llamafactory-cli train sft.yaml\n") -> None:
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "sft.yaml").write_text(yaml_text)
    (tmp_path / "train.sh").write_text("#!/bin/bash\n" + script)


LF = "model_name_or_path: Qwen/Qwen3-4B\nstage: sft\ndo_train: true\npacking: true\ncutoff_len: 2048\n"


def test_safe_only_leaves_an_unsafe_config_fix(capsys, tmp_path, monkeypatch):
    _lf(tmp_path, LF)
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "--diff", ".")
    assert code == 0 and out == "" and "would apply 0 fixes (safe only" in err


def test_refused_flow_mapping(capsys, tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "grpo.yaml").write_text(
        "policy:\n  model_name: Qwen/Qwen2.5-1.5B\n  dynamic_batching: {enabled: true, train_mb_tokens: 4096}\n"
        "  sequence_packing:\n    enabled: true\ncluster:\n  gpus_per_node: 8\n"
    )
    (tmp_path / "run_grpo.py").write_text("import argparse\n")
    (tmp_path / "train.sh").write_text("#!/bin/bash\npython run_grpo.py --config grpo.yaml\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "--diff", "--unsafe-fixes", ".")
    assert out == "" and "PK480 at 3:22: no fix: the key is in a flow mapping" in err


def test_refused_anchors_and_merge_keys(capsys, tmp_path, monkeypatch):
    _lf(tmp_path, "base: &base\n  cutoff_len: 2048\n" + LF.replace("cutoff_len: 2048\n", "<<: *base\n"))
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "--diff", "--unsafe-fixes", ".")
    assert out == "" and "no fix: the file uses anchors, aliases or merge keys" in err


def test_refused_value_set_on_the_command_line(capsys, tmp_path, monkeypatch):
    # packing comes from the command line: the YAML is not where the value was set
    _lf(tmp_path, LF.replace("packing: true\n", ""), "llamafactory-cli train sft.yaml packing=true\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "--diff", "--unsafe-fixes", ".")
    assert "PK400" in run(capsys, ".")[1]
    # (the finding is in the script; its fix is refused there and nothing is edited)
    assert out == ""


def test_refused_key_overridden_on_the_command_line(capsys, tmp_path, monkeypatch):
    _lf(tmp_path, LF, "llamafactory-cli train sft.yaml neat_packing=false\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "--diff", "--unsafe-fixes", ".")
    assert out == "" and "neat_packing is set on the command line (train.sh:2)" in err


def test_command_line_value_is_replaced_in_the_script(capsys, tmp_path, monkeypatch):
    # replace_value on a setting given on the command line edits the word there (a script fix)
    _lf(
        tmp_path,
        LF.replace("packing: true", "neat_packing: true\nflash_attn: fa2"),
        "llamafactory-cli train sft.yaml per_device_train_batch_size=4\n",
    )
    monkeypatch.chdir(tmp_path)
    run(capsys, "--fix", "--unsafe-fixes", ".")
    assert (tmp_path / "train.sh").read_text().endswith("per_device_train_batch_size=1\n")


HYDRA_RULE = """[[rule]]
code = "XX101"
name = "remove-padding-off"
severity = "warning"
summary = "s"
message = "use_remove_padding is off"
when = "setting('actor_rollout_ref.model.use_remove_padding') == 'false'"
report_at = "setting:actor_rollout_ref.model.use_remove_padding"
fix = { kind = "replace_value", value = "true", applicability = "unsafe", title = "turn it on" }
explanation = "e"
"""


def test_refused_hydra_composed_file(capsys, tmp_path, monkeypatch):
    # a fix as a user rule's data: the value comes from verl's Hydra config directory (composed with
    # `defaults:` and packages), which a fix does not edit
    cfg = tmp_path / "verl" / "trainer" / "config"
    cfg.mkdir(parents=True)
    (cfg / "ppo_trainer.yaml").write_text(
        "actor_rollout_ref:\n  model:\n    path: Qwen/Qwen2.5-7B\n    use_remove_padding: false\n"
    )
    (tmp_path / "verl" / "trainer" / "main_ppo.py").write_text("import hydra\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / "rules.toml").write_text(HYDRA_RULE)
    (tmp_path / "train.sh").write_text("#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=8\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "--rule-file", "rules.toml", "--select", "XX101", ".")
    assert "XX101" in out
    code, out, err = run(capsys, "--rule-file", "rules.toml", "--select", "XX101", "--diff", "--unsafe-fixes", ".", "verl")
    assert out == "" and "no fix: verl/trainer/config/ppo_trainer.yaml is composed by Hydra" in err


def test_refused_crlf_and_symlink_and_unchecked(capsys, tmp_path, monkeypatch):
    _lf(tmp_path, LF.replace("\n", "\r\n"))
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "--diff", "--unsafe-fixes", ".")
    assert out == "" and "sft.yaml: not fixed: the file has CR line ends" in err

    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "sft.yaml").write_text(LF)
    os.remove(tmp_path / "sft.yaml")
    os.symlink(shared / "sft.yaml", tmp_path / "sft.yaml")
    code, out, err = run(capsys, "--fix", "--unsafe-fixes", ".")
    assert "sft.yaml: not fixed: a symbolic link is not rewritten" in err
    assert (shared / "sft.yaml").read_text() == LF

    os.remove(tmp_path / "sft.yaml")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "sft.yaml").write_text(LF)
    (tmp_path / "scripts" / "train.sh").write_text("#!/bin/bash\nllamafactory-cli train sft.yaml\n")
    os.remove(tmp_path / "train.sh")
    code, out, err = run(capsys, "--fix", "--unsafe-fixes", "scripts/train.sh")
    assert "sft.yaml: not fixed: it was not among the files checked" in err
    assert (tmp_path / "sft.yaml").read_text() == LF
    # named beside the script: edited
    run(capsys, "--fix", "--unsafe-fixes", "scripts/train.sh", "sft.yaml")
    assert "neat_packing: true" in (tmp_path / "sft.yaml").read_text()


def test_json_and_sarif_carry_the_config_fix(capsys, tmp_path, monkeypatch):
    case = CASES_DIR / "ds_auto"
    shutil.copytree(case, tmp_path / "c", ignore=shutil.ignore_patterns("*.fixed", "case.toml"))
    monkeypatch.chdir(tmp_path / "c")
    code, out, err = run(capsys, "--output-format", "json", "train.sh")
    data = json.loads(out)
    findings = data["findings"] if isinstance(data, dict) else data
    fix = next(f["fix"] for f in findings if f["code"] == "PK611")
    assert fix["applicability"] == "unsafe"
    assert fix["edits"] == [
        {"path": "ds_z2_config.json", "line": 3, "column": 37, "end_line": 3, "end_column": 38, "content": '"auto"'}
    ]
    code, out, err = run(capsys, "--output-format", "sarif", "train.sh")
    result = next(r for r in json.loads(out)["runs"][0]["results"] if r["ruleId"] == "PK611")
    change = result["fixes"][0]["artifactChanges"][0]
    assert change["artifactLocation"]["uri"].endswith("ds_z2_config.json")
    assert change["replacements"][0]["insertedContent"]["text"] == '"auto"'


def test_stdin_config_file_is_fixed(capsys, tmp_path, monkeypatch):
    import io

    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    text = "model_name_or_path: Qwen/Qwen2.5-0.5B\ndataset_name: trl-lib/Capybara\npacking: true\nmax_length: ~\n"
    data = text.encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, err = run(capsys, "--fix", "--unsafe-fixes", "--stdin-filename", "sft.yaml", "-")
    assert out == text.replace("max_length: ~\n", "")


@pytest.mark.parametrize(
    ("fix", "error"),
    [
        ('{ kind = "set_key", value = "true", applicability = "safe", title = "t" }', "needs `key` and `value`"),
        ('{ kind = "replace_value", applicability = "safe", title = "t" }', "needs `value`"),
        ('{ kind = "replace_value", value = "1", text = "1", applicability = "safe", title = "t" }', "not `text`"),
        ('{ kind = "delete_key", value = "1", applicability = "safe", title = "t" }', "takes no `value`"),
        ('{ kind = "replace", key = "a", text = "1", applicability = "safe", title = "t" }', "not `key`"),
        ('{ kind = "set_key", key = "a b", value = "1", applicability = "safe", title = "t" }', "not a dotted key"),
    ],
)
def test_bad_config_fix_entries_are_table_errors(capsys, tmp_path, monkeypatch, fix, error):
    rules = tmp_path / "r.toml"
    rules.write_text(
        f"""[[rule]]
code = "XX001"
name = "x"
severity = "error"
summary = "s"
message = "m"
when = "setting('packing') == 'true'"
report_at = "setting:packing"
fix = {fix}
explanation = "e"
"""
    )
    (tmp_path / "t.sh").write_text("#!/bin/bash\ntrue\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "--rule-file", str(rules), "t.sh")
    assert code == 2 and error in err


# ---------------------------------------------------------------------------------------------- edits
# The edit shapes one by one, on the finding a rule would make (its FixPlan at the reported key), each
# result loaded with PyYAML / json as the oracle.


def _fix(text: str, kind: str, line: int, column: int, *, fmt="yaml", dialect="pyyaml", key=None, value=None):
    from packlint.configfix import config_fix
    from packlint.findings import Finding, FixPlan, Location
    from packlint.fixes import apply_edits

    loc = Location("c." + fmt, line, column, line, column)
    plan = FixPlan(kind, loc, loc, "", "safe", "t", None, True, key, value, fmt, dialect, None)
    fix, why = config_fix(Finding("XX001", "x", "error", "m", loc, fix=plan), "c." + fmt, text)
    return (apply_edits(text, fix.edits) if fix else None), why


def _yaml(text):
    import yaml

    return yaml.safe_load(text)


def test_replace_keeps_the_quoting_style():
    assert _fix('s: "wrapped"  # c\n', "replace_value", 1, 1, value="bfd")[0] == 's: "bfd"  # c\n'
    assert _fix("s: 'wrapped'\n", "replace_value", 1, 1, value="bfd")[0] == "s: 'bfd'\n"
    assert _fix("s: wrapped\n", "replace_value", 1, 1, value="bfd")[0] == "s: bfd\n"
    # a string that would not stay a string unquoted (PyYAML reads `yes` as a boolean) is quoted
    new, _ = _fix("s: wrapped\n", "replace_value", 1, 1, value='"yes"')
    assert new == 's: "yes"\n' and _yaml(new) == {"s": "yes"}
    # a quoted number replaced by a number loses its quotes (it is a number now)
    new, _ = _fix('n: "4"\n', "replace_value", 1, 1, value="1")
    assert new == "n: 1\n" and _yaml(new) == {"n": 1}


def test_replace_refuses_what_it_cannot_edit_in_place():
    assert "block scalar" in _fix("s: |\n  a\n", "replace_value", 1, 1, value="b")[1]
    assert "several lines" in _fix("s: a\n  b\nt: 1\n", "replace_value", 1, 1, value="c")[1]
    assert "a mapping or a list" in _fix("s:\n  a: 1\n", "replace_value", 1, 1, value="c")[1]
    assert "already holds" in _fix("s: c\n", "replace_value", 1, 1, value="c")[1]
    assert "not a key of this file" in _fix("s: c\n", "replace_value", 3, 1, value="d")[1]


def test_set_key_goes_beside_its_sibling_at_its_indentation():
    text = "policy:\n  sequence_packing:\n    enabled: true\n    # the algorithm\n\n  dynamic_batching:\n    enabled: false\n"
    new, why = _fix(text, "set_key", 3, 5, key="policy.sequence_packing.algorithm", value="ffd")
    assert new == text.replace("enabled: true\n", "enabled: true\n    algorithm: ffd\n", 1), why
    # after the reported key when it is a sibling, else after the mapping's last key
    new, _ = _fix("a: 1\nb:\n  c: 2\n  d: 3\n# about e\ne: 4\n", "set_key", 2, 1, key="z", value="true")
    assert new == "a: 1\nb:\n  c: 2\n  d: 3\nz: true\n# about e\ne: 4\n"
    assert _yaml(new)["z"] is True
    new, _ = _fix("a: 1\nb: 2", "set_key", 9, 1, key="c", value="x")  # no newline at the end
    assert new == "a: 1\nb: 2\nc: x\n"
    # a key that is there already: its value is replaced
    assert _fix("a: 1\nb: 2\n", "set_key", 1, 1, key="b", value="3")[0] == "a: 1\nb: 3\n"
    assert "not a mapping" in _fix("a: 1\n", "set_key", 1, 1, key="x.y", value="3")[1]


def test_delete_key_takes_its_lines_and_nothing_else():
    text = "a: 1\nb:\n  c: 2\n  d: 3\n# about e\ne: 4\n"
    assert _fix(text, "delete_key", 2, 1)[0] == "a: 1\n# about e\ne: 4\n"
    assert _fix(text, "delete_key", 6, 1)[0] == "a: 1\nb:\n  c: 2\n  d: 3\n# about e\n"
    # the only key of a nested mapping: the parent would become null, another change: refused
    assert "exactly the intended value" in _fix("a:\n  b: 1\nc: 2\n", "delete_key", 2, 3)[1]
    assert "not a key of this file" in _fix("l:\n  - k: 1\n    j: 2\n", "delete_key", 2, 5)[1]  # (a list item)


def test_json_edits():
    text = '{\n  "a": 1,\n  "b": {"c": 2},\n  "d": 3\n}\n'
    new, _ = _fix(text, "replace_value", 4, 3, fmt="json", dialect="json", value='"auto"')
    assert json.loads(new) == {"a": 1, "b": {"c": 2}, "d": "auto"}
    assert _fix(text, "delete_key", 2, 3, fmt="json", dialect="json")[0] == '{\n  "b": {"c": 2},\n  "d": 3\n}\n'
    assert _fix(text, "delete_key", 4, 3, fmt="json", dialect="json")[0] == '{\n  "a": 1,\n  "b": {"c": 2}\n}\n'
    new, _ = _fix(text, "set_key", 2, 3, fmt="json", dialect="json", key="z", value="true")
    assert new == '{\n  "a": 1,\n  "z": true,\n  "b": {"c": 2},\n  "d": 3\n}\n'
    new, _ = _fix('{"a": 1, "b": 2}', "set_key", 1, 10, fmt="json", dialect="json", key="z", value="0.5")
    assert json.loads(new) == {"a": 1, "b": 2, "z": 0.5}
    # a JSON number replaced inside a one-line object (JSON is flow syntax: allowed)
    new, _ = _fix('{"zero_optimization": {"stage": 3}}', "replace_value", 1, 24, fmt="json", dialect="json", value="2")
    assert json.loads(new) == {"zero_optimization": {"stage": 2}}


def test_omegaconf_typing_decides_the_spelling():
    # OmegaConf reads 1e-5 as a float, PyYAML as a string: each loader gets a spelling it types right
    from omegaconf import OmegaConf

    new, _ = _fix("lr: 1.0e-4\n", "replace_value", 1, 1, dialect="omegaconf", value="1e-5")
    assert OmegaConf.to_container(OmegaConf.create(new)) == {"lr": 1e-5}
    new, why = _fix("lr: 1.0e-4\n", "replace_value", 1, 1, dialect="pyyaml", value="1e-5")
    assert _yaml(new) == {"lr": "1e-5"}, why  # (the value as PyYAML types the rule's text: a string)


INHERIT_RULE = """[[rule]]
code = "XX102"
name = "x-five"
severity = "warning"
summary = "s"
message = "policy.x is 5"
when = "setting('policy.x') == '5'"
report_at = "setting:policy.x"
fix = { kind = "delete_key", applicability = "safe", title = "delete policy.x" }
explanation = "e"
"""


def test_merged_settings_must_change_as_intended(capsys, tmp_path, monkeypatch):
    # NeMo-RL's `defaults: parent.yaml`: deleting policy.x from the child leaves the parent's value in
    # the merged settings (not "gone"): the file-level check passes, the merged one refuses
    (tmp_path / ".git").mkdir()
    (tmp_path / "parent.yaml").write_text("policy:\n  x: 1\n  y: 2\ncluster:\n  gpus_per_node: 8\n")
    child = "defaults: parent.yaml\npolicy:\n  x: 5\n  z: 1\n"
    (tmp_path / "grpo.yaml").write_text(child)
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "run_grpo.py").write_text("import argparse\n")
    (tmp_path / "train.sh").write_text("#!/bin/bash\nuv run python examples/run_grpo.py --config grpo.yaml\n")
    (tmp_path / "rules.toml").write_text(INHERIT_RULE)
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "--rule-file", "rules.toml", "--select", "XX102", "--fix", ".")
    assert "XX102" in out, out + err
    assert "grpo.yaml: not fixed: the edit would not change the run's merged settings exactly as intended" in err
    assert (tmp_path / "grpo.yaml").read_text() == child
    # without the parent's key, the same fix goes through
    (tmp_path / "parent.yaml").write_text("policy:\n  y: 2\ncluster:\n  gpus_per_node: 8\n")
    code, out, err = run(capsys, "--rule-file", "rules.toml", "--select", "XX102", "--fix", ".")
    assert (tmp_path / "grpo.yaml").read_text() == "defaults: parent.yaml\npolicy:\n  z: 1\n"


# ---------------------------------------------------------------------------------------------- property
# Random YAML documents (nested mappings, every scalar style, comments, blank lines): whatever edit a
# fix makes is either refused or, loaded with PyYAML's safe_load / OmegaConf themselves, changes exactly
# the intended key to exactly the intended value (that loader's typing of the rule's value text).

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_SCALARS = st.sampled_from(
    ["true", "false", "yes", "null", "~", "1", "0.5", "1e-5", "1.0e-5", "2048", "'x'", '"y z"', "abc", "a-b",
     "'true'", '"1"', "0o17", "012", "Qwen/Qwen2.5-0.5B", "''"]
)
_VALUES = st.sampled_from(["true", "false", "1", "0", "bfd", '"auto"', "'yes'", "yes", "null", "2.5", "1e-5", "x y"])


@st.composite
def _documents(draw):
    lines: list[str] = []
    keys: list[tuple[int, int]] = []  # (line, column) of each key

    def block(indent: int, depth: int) -> None:
        for i in range(draw(st.integers(1, 4))):
            if draw(st.booleans()) and draw(st.booleans()):
                lines.append(" " * indent + "# a comment")
            if draw(st.booleans()) and draw(st.booleans()):
                lines.append("")
            name = f"k{depth}_{i}"
            keys.append((len(lines) + 1, indent + 1))
            if depth < 2 and draw(st.booleans()) and draw(st.booleans()):
                lines.append(" " * indent + name + ":")
                block(indent + 2, depth + 1)
            else:
                tail = "  # note" if draw(st.booleans()) and draw(st.booleans()) else ""
                lines.append(" " * indent + f"{name}: {draw(_SCALARS)}{tail}")

    block(0, 0)
    return "\n".join(lines) + "\n", keys


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=_documents(), pick=st.integers(0, 99), kind=st.sampled_from(["replace_value", "delete_key", "set_key"]),
       value=_VALUES, dialect=st.sampled_from(["pyyaml", "omegaconf"]))
def test_config_edits_agree_with_the_stacks_loaders(doc, pick, kind, value, dialect):
    text, keys = doc
    line, column = keys[pick % len(keys)]
    key = "new_key" if kind == "set_key" else None
    new, why = _fix(text, kind, line, column, key=key, value=None if kind == "delete_key" else value, dialect=dialect)
    if new is None:
        assert why
        return
    load = (lambda t: oracle_load("omegaconf", t)) if dialect == "omegaconf" else _yaml
    old_flat, new_flat = flat(load(text)), flat(load(new))
    changed = {k for k in old_flat.keys() | new_flat.keys() if k not in old_flat or k not in new_flat
               or type(old_flat[k]) is not type(new_flat[k]) or old_flat[k] != new_flat[k]}
    if kind == "delete_key":  # the key's leaves (a nested mapping has several) are gone, nothing else
        name = text.splitlines()[line - 1].strip().split(":")[0]
        assert changed and all(k not in new_flat and name in k.split(".") for k in changed), (text, new)
        prefixes = {k[: k.index(name) + len(name)] for k in changed}
        assert len(prefixes) == 1
        gone = prefixes.pop()
        assert all(k not in new_flat for k in old_flat if k == gone or k.startswith(gone + "."))
        return
    assert len(changed) == 1, (text, new, changed)
    (k,) = changed
    intended = load("v: " + value)["v"]
    assert type(new_flat[k]) is type(intended) and new_flat[k] == intended, (text, new)
    assert new.count("# a comment") == text.count("# a comment")


# ---------------------------------------------------------------------------------------------- examples
# Every built-in rule with a config-file fix, on its own bad examples: `--fix --unsafe-fixes` either
# mends it (the finding is gone and the config file or the override word changed) or says why not.


def _config_fix_examples():
    from packlint.configfix import CONFIG_KINDS
    from packlint.rule_table import load_table

    return [
        pytest.param(rule.code, ex, id=f"{rule.code}-bad{i}")
        for rule in load_table(use_cache=False).rules
        if rule.fix is not None and rule.fix.kind in CONFIG_KINDS
        for i, ex in enumerate(rule.examples)
        if ex.kind == "bad" and not ex.env and not ex.args
    ]


# the bad examples whose value is written in a config file (the others set it on the command line,
# where a `set_key` is refused or a bool override word is left alone): fixed, not just explained
FIXED_EXAMPLES = {"PK400", "PK401", "PK402", "PK404", "PK411", "PK412", "PK413", "PK414", "PK423", "PK424",
                  "PK425", "PK611"}


@pytest.mark.parametrize(("code", "example"), _config_fix_examples())
def test_config_fixes_mend_their_bad_examples(code, example, capsys, tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    for rel, source in (example.code or {}).items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(source.lstrip("\n"))
    (tmp_path / "example.sh").write_text(example.script.lstrip("\n"))
    monkeypatch.chdir(tmp_path)
    before = {p: p.read_text() for p in tmp_path.rglob("*") if p.is_file()}
    assert code in run(capsys, "--select", code, ".")[1]
    code_, out, err = run(capsys, "--select", code, "--fix", "--unsafe-fixes", ".")
    changed = [p for p, t in before.items() if p.read_text() != t]
    if code in FIXED_EXAMPLES:
        assert code not in out and changed, (out, err)
    else:
        assert code in out and not changed and ("no fix:" in err or "not fixed:" in err), (out, err)


def test_precommit_hook_fixes_a_staged_config_file(capsys, tmp_path, monkeypatch):
    # pre-commit passes the staged files: a config file of a known stack is one of them, so it is edited
    from packlint.precommit_hook import main as hook

    (tmp_path / ".git").mkdir()
    text = (
        "base_model: Qwen/Qwen2.5-0.5B\ndatasets:\n  - path: mhenrichsen/alpaca_2k_test\n    type: alpaca\n"
        "sample_packing: true\npad_to_sequence_len: false  # saves memory?\nflash_attention: true\n"
    )
    (tmp_path / "config.yml").write_text(text)
    (tmp_path / "notes.yaml").write_text("a: 1\n")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    hook(["--isolated", "--fix", "config.yml", "notes.yaml"])
    assert (tmp_path / "config.yml").read_text() == text.replace("len: false  #", "len: true  #")
    assert (tmp_path / "notes.yaml").read_text() == "a: 1\n"


def test_refused_shared_nodes_and_documents():
    shared = "anchors, aliases or merge keys"
    assert shared in _fix("a: &n 1\nb: 2\n", "replace_value", 2, 1, value="3")[1]  # an anchor, not aliased
    assert shared in _fix("a: &n 1\nb: *n\n", "replace_value", 2, 1, value="3")[1]  # an alias
    assert shared in _fix("base: &b\n  x: 1\nc:\n  <<: *b\n  y: 2\n", "replace_value", 5, 3, value="3")[1]
    assert "several YAML documents" in _fix("a: 1\n---\nb: 2\n", "replace_value", 1, 1, value="3")[1]
    # JSON is flow syntax: a flow mapping there is allowed (shown in test_json_edits); in YAML it is not
    assert "flow mapping" in _fix("a: {b: 1, c: 2}\n", "replace_value", 1, 5, value="3")[1]
