"""The third holdout's false findings of the code reading (issues 26/28), one mechanism each:

- a sub-project's own package (src layout or flat) is on the program's import path: microsoft/LoRA's and
  QingruZhang/AdaLoRA's vendored transformers 4.4.2 (`NLU/setup.py`, `package_dir={"": "src"}`), alibaba/ROLL's
  `mcore_adapter/src` (pyproject `where = ["src"]`, requirements `./mcore_adapter`), aws-neuron's `nemo/nemo`;
- a parser whose dataclasses packlint cannot read never hands the verdict to another parser of the program.

Each case under `tests/fixtures/subprojects/<case>/` is a checkout in the shape of the repository it stands for;
every `*.sh` in it states with `# expect: CODE SEVERITY SUBJECT` each PK201/PK202/PK207 it must produce."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from packlint.api import inspect_script
from packlint.codebase import CodeOptions, CodeSession
from packlint.codebase.subprojects import package_dirs, requirement_dirs, subproject_paths
from packlint.engine import check_model
from packlint.rule_table import load_table

ROOT = Path(__file__).resolve().parent / "fixtures" / "subprojects"
SCRIPTS = sorted(ROOT.rglob("*.sh"))
CODES = {"PK201", "PK202", "PK207"}
TABLE = load_table(use_cache=False)


def _expected(script: Path) -> list[tuple[str, str, str]]:
    out = []
    for line in script.read_text().splitlines():
        if line.startswith("# expect:"):
            code, severity, subject = line.split(":", 1)[1].split()
            out.append((code, severity, subject))
    return sorted(out)


def _copy(case: str, tmp_path: Path) -> Path:
    where = tmp_path / case
    shutil.copytree(ROOT / case, where)
    (where / ".git").mkdir(exist_ok=True)  # the case is its own checkout: nothing above it is read
    return where


def _check(script: Path) -> list:
    text = script.read_bytes()
    model = inspect_script(str(script), text=text, display_path=str(script))
    session = CodeSession(str(script), CodeOptions(use_cache=False))
    return check_model(model, TABLE.rules, script_text=text, code=session.facts)


@pytest.mark.parametrize("script", SCRIPTS, ids=[str(p.relative_to(ROOT)) for p in SCRIPTS])
def test_case(script: Path, tmp_path: Path) -> None:
    case = script.relative_to(ROOT).parts[0]
    where = _copy(case, tmp_path)
    findings = _check(where / script.relative_to(ROOT / case))
    got = sorted((f.code, f.severity, f.message.split()[0]) for f in findings if f.code in CODES)
    assert got == _expected(script), [(f.code, f.severity, f.message[:200]) for f in findings]


def test_vendored_transformers_fields_come_from_the_copy(tmp_path: Path) -> None:
    where = _copy("vendored_transformers", tmp_path)
    session = CodeSession(str(where / "NLU/scripts/run.sh"), CodeOptions(use_cache=False))
    facts = session.facts({"program": "examples/run.py"})
    assert facts is not None and facts.schema is not None and facts.schema.closed
    spec = facts.schema.flags["--root_output_dir"]
    assert spec.origin_file == str(where / "NLU/src/transformers/training_args.py")
    assert "transformers" not in facts.unresolved_imports


def test_flat_subproject_package_is_read(tmp_path: Path) -> None:
    """nemo/setup.py with find_packages(): the package nemo/nemo is imported as `nemo`; its env reads are seen."""
    where = _copy("nemo_flat", tmp_path)
    session = CodeSession(str(where / "scripts/run.sh"), CodeOptions(use_cache=False))
    facts = session.facts({"program": "nemo/examples/nlp/megatron_gpt_pretraining.py"})
    assert facts is not None and "nemo" not in facts.unresolved_imports
    assert str(where / "nemo/nemo/utils/exp_manager.py") in facts.files
    # exp_manager.py reads os.environ.get(NEMO_ENV_VARNAME_VERSION), a constant of nemo/constants.py
    reads = {(r.name, r.computed, r.line) for r in facts.env_reads}
    assert ("NEMO_EXPM_VERSION", False, 9) in reads and ("NEMO_TESTING", False, 7) in reads, reads


def test_declared_package_dirs(tmp_path: Path) -> None:
    (tmp_path / "a/src/pkg").mkdir(parents=True)
    (tmp_path / "a/setup.py").write_text('setup(name="x", package_dir={"": "src"}, packages=find_packages("src"))\n')
    assert package_dirs(str(tmp_path / "a")) == [str(tmp_path / "a/src")]
    (tmp_path / "b/python/pkg").mkdir(parents=True)
    (tmp_path / "b/pyproject.toml").write_text('[tool.setuptools.packages.find]\nwhere = ["python"]\n')
    assert package_dirs(str(tmp_path / "b")) == [str(tmp_path / "b/python")]
    (tmp_path / "c/pkg").mkdir(parents=True)
    (tmp_path / "c/setup.py").write_text("setup(name='c', packages=find_packages())\n")
    assert package_dirs(str(tmp_path / "c")) == [str(tmp_path / "c")]  # flat layout: the directory itself
    (tmp_path / "d").mkdir()
    assert package_dirs(str(tmp_path / "d")) == []  # no packaging file: nothing is installed from it


def test_requirements_name_local_projects(tmp_path: Path) -> None:
    (tmp_path / "mcore_adapter").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "requirements_common.txt").write_text(
        "torch==2.5\n./mcore_adapter\n-e ./other  # editable\n../outside\nhttps://x/y.whl\n"
    )
    assert requirement_dirs(str(tmp_path)) == [str(tmp_path / "mcore_adapter"), str(tmp_path / "other")]


def test_nearest_subproject_first_and_root_excluded(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("setup()\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "sub/src").mkdir(parents=True)
    (tmp_path / "sub/pyproject.toml").write_text('[tool.setuptools.packages.find]\nwhere = ["src"]\n')
    (tmp_path / "sub/inner/lib").mkdir(parents=True)
    (tmp_path / "sub/inner/setup.py").write_text("setup(packages=find_packages())\n")
    prog = tmp_path / "sub/inner/examples/run.py"
    prog.parent.mkdir(parents=True)
    prog.write_text("")
    got = subproject_paths(str(prog), [str(tmp_path)])
    assert got == [str(tmp_path / "sub/inner"), str(tmp_path / "sub/src")]
    assert subproject_paths(str(prog), []) == []  # outside every root: nothing climbed


def test_own_yaml_parser_with_unread_classes_decides_nothing(tmp_path: Path) -> None:
    """The same launch, the program's dataclasses extending a class packlint cannot read: the keys the program
    takes are unknown, so no key of the file is reported (before: every key LLaMA-Factory lacks, as errors)."""
    where = _copy("g2s_own_yaml", tmp_path)
    args = where / "src/args.py"
    args.write_text(args.read_text().replace("from llamafactory import hparams", "from g2s_private import hparams"))
    findings = _check(where / "run.sh")
    assert [f for f in findings if f.code == "PK207"] == [], [f.message for f in findings]
