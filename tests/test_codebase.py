"""The code-base reader (packlint.codebase): the static flag schema must equal the real argparse parser of
each fixture code base (tests/fixtures/codebase/, plain argparse: importing them is cheap and runs no
training code), env reads, program resolution, the cache, and `packlint code-base` snapshots.

Regenerate the snapshots: PACKLINT_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_codebase.py
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import os
import shutil
import sys
from contextlib import contextmanager, redirect_stdout
from pathlib import Path

import pytest

from packlint.codebase import CodeOptions, facts_for_launch, facts_for_program, resolve_program
from packlint.codebase.model import CodeFacts

FIX = Path(__file__).parent / "fixtures" / "codebase"
UPDATE = os.environ.get("PACKLINT_UPDATE_SNAPSHOTS") == "1"
OWNED = ("megatron", "aiak_training_llm")


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache"))


@contextmanager
def fixture_on_path(*dirs: Path):
    """Import a fixture code base (its top-level packages shadow the installed megatron-core)."""
    saved_path = list(sys.path)
    saved = {k: v for k, v in sys.modules.items() if k.split(".")[0] in OWNED}
    for k in saved:
        del sys.modules[k]
    sys.path[:0] = [str(d) for d in dirs]
    try:
        yield
    finally:
        for k in [k for k in sys.modules if k.split(".")[0] in OWNED]:
            del sys.modules[k]
        sys.modules.update(saved)
        sys.path[:] = saved_path


def megatron_like_parser():
    from megatron.training.arguments import build_parser
    from megatron.training.extras import add_extra_args

    return build_parser(add_extra_args)


def ov_like_parser():
    from aiak_training_llm.train.arguments import build_parser

    return build_parser()


CASES = {
    "megatron_like": ("pretrain_gpt.py", [], megatron_like_parser),
    "ov_like": ("aiak_training_llm/train.py", ["aiak_megatron"], ov_like_parser),
}
ACTIONS = {
    "_StoreAction": "store",
    "_StoreTrueAction": "store_true",
    "_StoreFalseAction": "store_false",
    "_StoreConstAction": "store_const",
    "_AppendAction": "append",
    "_CountAction": "count",
    "_HelpAction": "help",
    "BooleanOptionalAction": "BooleanOptionalAction",
    "_VersionAction": "version",
}


def read(name: str, **kw) -> CodeFacts:
    program, pp, _ = CASES[name]
    root = FIX / name
    return facts_for_program(str(root / program), [str(root)], [str(root / p) for p in pp], CodeOptions(**kw))


@pytest.mark.parametrize("name", sorted(CASES))
def test_static_schema_equals_the_real_parser(name):
    program, pp, build = CASES[name]
    root = FIX / name
    with fixture_on_path(root, *(root / p for p in pp)):
        parser: argparse.ArgumentParser = build()
    real = {tuple(a.option_strings): a for a in parser._actions if a.option_strings}
    schema = read(name).schema
    assert schema is not None and schema.closed, schema and schema.open_reasons
    assert schema.allow_abbrev is parser.allow_abbrev
    assert schema.conflict_handler == parser.conflict_handler
    static = {s.options: s for s in schema.specs()}
    # flags defined only under a condition the real import did not meet (HAVE_KITCHEN) are extra, and say so
    extra = set(static) - set(real)
    assert all(static[o].condition for o in extra), extra
    assert set(real) <= set(static), set(real) - set(static)
    compared_defaults = 0
    for opts, action in real.items():
        spec = static[opts]
        assert spec.dest == action.dest, opts
        assert spec.action == ACTIONS[type(action).__name__], opts
        nargs = spec.nargs if spec.nargs is not None or not action.nargs == 0 else 0
        assert nargs == action.nargs, (opts, spec.nargs, action.nargs)
        if action.choices is None:
            assert spec.choices is None, opts
        elif spec.choices is None:
            assert spec.choices_note, opts  # computed at run time: open, and said so
        else:
            assert list(spec.choices) == [str(getattr(c, "name", c)) for c in action.choices], opts
        if action.type in (int, float):
            assert spec.type == action.type.__name__, opts
        try:
            default = ast.literal_eval(spec.default) if spec.default is not None else None
        except (ValueError, SyntaxError):
            continue  # `AttnBackend.auto`, a default_factory: source text only
        assert default == action.default, (opts, spec.default, action.default)
        compared_defaults += 1
    assert compared_defaults >= len(real) // 2


def test_megatron_like_details():
    schema = read("megatron_like").schema
    spec = schema.lookup("--no-add-bias-linear")
    assert spec is schema.lookup("--disable-add-bias-linear")
    assert spec.generated_from == "ArgumentGroupFactory:TransformerConfig.add_bias_linear" and spec.action == "store_false"
    assert schema.lookup("--norm-epsilon").dest == "layernorm_epsilon"  # argparse_meta arg_names
    assert schema.lookup("--layernorm-epsilon") is None
    assert schema.lookup("--gradient-accumulation-fusion") is None  # excluded at the call site
    assert schema.lookup("--no-gradient-accumulation-fusion") is None
    assert schema.lookup("--timers") is None  # field(init=False)
    assert schema.lookup("--attention-backend").choices == ("flash", "fused", "unfused", "local", "auto")
    assert schema.lookup("--kitchen-recipe-number").condition == "only if HAVE_KITCHEN"
    assert "HAVE_EXTRAS" in schema.lookup("--export-quant-cfg").condition
    assert "deprecated" in schema.lookup("--batch-size").deprecated
    assert schema.lookup("--micro-batch-sizes") is None
    assert schema.lookup("--micro-batch") is None  # allow_abbrev=False: no prefix matching
    assert any("parse_known_args" in n for n in schema.notes)
    assert schema.lookup("--data-path").nargs == "+" and not schema.lookup("--bf16").takes_value


def test_ov_like_details():
    facts = read("ov_like")
    schema = facts.schema
    tok = schema.lookup("--tokenizer-type")
    assert tok.choices == ("NullTokenizer", "HFTokenizer") and tok.origin_file.endswith("train/arguments.py")
    model = schema.lookup("--model-name")
    assert model.choices is None and "computed" in model.choices_note
    assert schema.lookup("--no-freeze-lm") is schema.lookup("--freeze-lm")
    assert schema.lookup("--training-phase").choices == ("pretrain", "sft")
    assert schema.lookup("--image-resolution").nargs == 2
    if sys.version_info < (3, 12):
        assert [Path(s.file).name for s in facts.skipped] == ["new_syntax.py"]
        assert "SyntaxError" in facts.skipped[0].reason


def test_sys_path_edit_finds_the_fork():
    root = FIX / "ov_like"
    # PYTHONPATH has the checkout (for `aiak_training_llm`), not the fork: train.py's sys.path.append finds it
    facts = facts_for_program(str(root / "aiak_training_llm/train.py"), [], [str(root)], CodeOptions())
    assert facts.schema is not None and facts.schema.lookup("--num-layers") is not None
    # without any path to `aiak_training_llm` the program would not start: no schema, the import unresolved
    alone = facts_for_program(str(root / "aiak_training_llm/train.py"), [], [], CodeOptions())
    assert alone.schema is None and "aiak_training_llm" in alone.unresolved_imports


@pytest.mark.parametrize(
    "program, closed, reason",
    [
        ("hf_train.py", True, None),
        ("hf_unresolved.py", False, "HfArgumentParser"),
        ("known.py", False, "parse_known_args"),
        ("closed.py", True, None),
    ],
)
def test_open_and_closed_schemas(program, closed, reason):
    root = FIX / "open_cases"
    schema = facts_for_program(str(root / program), [str(root)], [], CodeOptions()).schema
    assert schema.closed is closed
    if reason:
        assert any(reason in r for r in schema.open_reasons), schema.open_reasons
    elif program.startswith("hf_"):  # HfArgumentParser's flags: the dataclass fields (issue 28)
        assert schema.kind == "hf" and schema.lookup("--lr").type == "float" and schema.lookup("-h") is not None
    else:
        assert schema.lookup("-l") is schema.lookup("--lr") and schema.lookup("-h") is None  # add_help=False
        assert schema.lookup("--mo") is schema.lookup("--mode")  # allow_abbrev defaults to True


def test_env_reads():
    facts = read("megatron_like")
    assert facts.env_names() == sorted(
        [
            "CUDA_DEVICE_MAX_CONNECTIONS",
            "MEGATRON_LOGGING_LEVEL",
            "NCCL_DEBUG",
            "NVTE_FUSED_ATTN",
            "PACKLINT_FIXTURE_REQUIRED",
            "RANK",
            "WORLD_SIZE",
        ]
    )
    assert facts.reads("NCCL_DEBUG") is True
    assert facts.reads("NVTE_ANYTHING") is None  # the computed `"NVTE_" + name`: undecidable
    assert facts.reads("OFFLINE_PACKING_VQA") is False
    (fused,) = facts.reads_of("NVTE_FUSED_ATTN")
    assert fused.parse == "int(...) == 1" and fused.form == "os.getenv" and fused.default == "'0'"
    (wrapped,) = facts.reads_of("MEGATRON_LOGGING_LEVEL")
    assert wrapped.form == "get_env()" and wrapped.file.endswith("initialize.py")
    assert facts.reads_of("NCCL_DEBUG")[0].form == "in os.environ"
    assert facts.reads_of("PACKLINT_FIXTURE_REQUIRED")[0].form == "os.environ[]"
    assert "kitchen" in facts.unresolved_imports


# ---------------------------------------------------------------------------------------------- resolution


@pytest.fixture
def ov_checkout(tmp_path):
    repo = tmp_path / "OV2"
    shutil.copytree(FIX / "ov_like", repo)
    (repo / ".git").mkdir()
    return repo


def test_container_path_resolves_in_the_scripts_checkout(ov_checkout):
    script = ov_checkout / "examples/quick_start/stage_1.sh"
    res = resolve_program(
        "/workspace/LLaVA-OneVision-2/aiak_training_llm/train.py",
        str(script),
        CodeOptions(),
        ["/workspace/LLaVA-OneVision-2/aiak_megatron", "/workspace/LLaVA-OneVision-2"],
    )
    assert res.found and res.how == "script-checkout"
    assert res.file == str(ov_checkout / "aiak_training_llm/train.py")
    assert "aiak_training_llm/train.py" in res.detail
    assert res.pythonpath == [str(ov_checkout / "aiak_megatron"), str(ov_checkout)]


def test_path_map_module_and_not_found(ov_checkout, tmp_path):
    opts = CodeOptions(path_maps=[("/workspace/LLaVA-OneVision-2", str(ov_checkout))])
    res = resolve_program("/workspace/LLaVA-OneVision-2/aiak_training_llm/train.py", str(tmp_path / "x.sh"), opts)
    assert res.how == "path-map" and res.found
    mod = resolve_program(
        "-m aiak_training_llm.data", str(tmp_path / "x.sh"), CodeOptions(code_bases=[str(ov_checkout)])
    )
    assert mod.found and mod.file == str(ov_checkout / "aiak_training_llm/data.py")
    # `python -m pkg` runs pkg/__main__.py; the package `aiak_training_llm.train` has none
    assert not resolve_program("-m aiak_training_llm.train", None, CodeOptions(code_bases=[str(ov_checkout)])).found
    missing = resolve_program(
        "/workspace/Other/train_x.py", str(ov_checkout / "examples/quick_start/s.sh"), CodeOptions()
    )
    assert not missing.found and missing.how == "not-found" and "--code-base" in missing.detail
    assert resolve_program(None, None, CodeOptions()).how == "no-program"
    assert resolve_program("train.py", None, CodeOptions(enabled=False)).how == "disabled"


def inspect_json(script: Path, *extra: str) -> dict:
    from packlint.cli import main

    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = main(["inspect", str(script), "--format", "json", *extra])
    assert rc == 0
    return json.loads(buf.getvalue())


def test_inspect_shows_the_resolution_and_facts_for_launch(ov_checkout):
    script = ov_checkout / "examples/quick_start/stage_1.sh"
    model = inspect_json(script)
    launch = model["launches"][0]
    code = launch["code"]
    assert code["found"] and code["how"] == "script-checkout"
    assert code["file"] == str(ov_checkout / "aiak_training_llm/train.py")
    assert "code" not in inspect_json(script, "--no-code-base")["launches"][0]
    facts = facts_for_launch(launch, str(script), CodeOptions())
    assert facts.schema.closed and facts.schema.lookup("--model-name") is not None
    assert facts.reads("OFFLINE_PACKED_DATA") is True and facts.reads("OFFLINE_PACKING_VQA") is False


def test_check_runs_with_code_reading(ov_checkout, capsys):
    from packlint.cli import main

    script = ov_checkout / "examples/quick_start/stage_1.sh"
    assert main(["check", str(script), "--format", "json"]) in (0, 1)
    assert main(["check", str(script), "--code-base", str(ov_checkout / "missing")]) == 2
    assert "no such directory" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- cache


def test_cache_is_used_and_invalidated(tmp_path, monkeypatch):
    from packlint.codebase import reader

    root = tmp_path / "cb"
    shutil.copytree(FIX / "open_cases", root)
    prog = root / "closed.py"
    first = facts_for_program(str(prog), [str(root)])
    calls = []
    real_build = reader.build_facts
    monkeypatch.setattr(reader, "build_facts", lambda *a, **k: calls.append(1) or real_build(*a, **k))
    again = facts_for_program(str(prog), [str(root)])
    assert calls == [] and again.to_json() == first.to_json()
    prog.write_text(prog.read_text().replace('"--mode"', '"--mode", "--run-mode"'))
    changed = facts_for_program(str(prog), [str(root)])
    assert calls == [1] and changed.schema.lookup("--run-mode") is not None
    facts_for_program(str(prog), [str(root)], options=CodeOptions(use_cache=False))
    assert calls == [1, 1]


def test_cache_key_covers_every_reader_module():
    """A change to any module of the code reader, sub-packages included (argparse_reader/), must
    invalidate cached facts: the digest reads every one of them."""
    from packlint.codebase import reader

    package = Path(reader.__file__).parent
    every = sorted(str(p) for p in package.rglob("*.py"))
    assert sorted(reader.reader_sources()) == every
    assert str(package / "argparse_reader" / "interpreter.py") in every


# ---------------------------------------------------------------------------------------------- snapshots


SNAPSHOTS = [
    ("megatron_like", "pretrain_gpt.py"),
    ("ov_like", "aiak_training_llm/train.py"),
    ("open_cases", "known.py"),
    ("open_cases", None),
]


def _normalise(text: str, root: Path) -> str:
    text = text.replace(str(root) + os.sep, "").replace(str(root), ".")
    # the checkout holding the fixtures is a root too (walked up from the script): its path varies per clone
    text = text.replace(str(Path(__file__).resolve().parents[1]), "<checkout>")
    # the 3.12-only file parses on 3.12+: keep the snapshot independent of the Python version
    return "\n".join(ln for ln in text.split("\n") if "new_syntax" not in ln and not ln.startswith("skipped files"))


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize("name, program", SNAPSHOTS, ids=[f"{a}-{b}" for a, b in SNAPSHOTS])
def test_code_base_command_snapshot(name, program, fmt, monkeypatch):
    from packlint.cli import main

    root = FIX / name
    monkeypatch.chdir(root)
    argv = ["code-base", ".", *([program] if program else []), "--format", fmt]
    if name == "ov_like":
        argv += ["--pythonpath", "aiak_megatron"]
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(argv) == 0
    got = _normalise(buf.getvalue(), root.resolve())
    if fmt == "json":
        doc = json.loads(got)
        for p in doc["programs"]:
            p.pop("skipped", None)
        got = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    snap = FIX / f"{name}.{(program or 'all').replace('/', '_')}.expected.{'txt' if fmt == 'text' else 'json'}"
    if UPDATE:
        snap.write_text(got, encoding="utf-8")
        return
    assert got == snap.read_text(encoding="utf-8"), f"snapshot {snap.name} changed (PACKLINT_UPDATE_SNAPSHOTS=1)"


def test_code_base_command_errors(capsys):
    from packlint.cli import main

    assert main(["code-base", str(FIX / "nope")]) == 2
    assert main(["code-base", str(FIX / "open_cases"), "missing_prog.py"]) == 2
    assert "not found" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- real code

MIRROR = Path("/work/.mirror")
REAL = [  # (repository, revision, program, PYTHONPATH, flags, of them conditional) — see docs/codebase.md
    ("NVIDIA+Megatron-LM", "main", "pretrain_gpt.py", [], 861, 22),
    ("NVIDIA+Megatron-LM", "core_v0.16.0", "pretrain_gpt.py", [], 670, 18),
    ("EvolvingLMMs-Lab+LLaVA-OneVision-2", "HEAD", "aiak_training_llm/train.py", ["aiak_megatron"], 532, 0),
]


@pytest.mark.slow
@pytest.mark.parametrize("repo, rev, program, pp, flags, conditional", REAL, ids=[f"{r[0]}@{r[1]}" for r in REAL])
def test_real_checkouts(repo, rev, program, pp, flags, conditional, tmp_path_factory):
    import subprocess
    import tarfile

    git_dir = MIRROR / repo / "repo"
    if not git_dir.exists():
        pytest.skip(f"{git_dir} is not here")
    root = tmp_path_factory.mktemp(repo.split("+")[1])
    archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", rev], capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(root, filter="data") if sys.version_info >= (3, 12) else tar.extractall(root)
    facts = facts_for_program(
        str(root / program), [str(root)], [str(root / p) for p in pp], CodeOptions(use_cache=False)
    )
    schema = facts.schema
    assert schema.closed and not schema.allow_abbrev, schema.open_reasons
    specs = schema.specs()
    assert len(specs) == flags
    assert sum(1 for s in specs if s.condition) == conditional
    assert facts.skipped == [] or all("SyntaxError" in s.reason for s in facts.skipped)
    if "Megatron" in repo:
        assert schema.lookup("--no-initialization").generated_from == "ArgumentGroupFactory:TransformerConfig.perform_initialization"
        assert facts.reads("CUDA_DEVICE_MAX_CONNECTIONS") is True
    else:
        assert schema.conflict_handler == "resolve" and schema.lookup("--model-name").choices is None


def test_config_keys_code_base_and_path_map(ov_checkout, tmp_path, capsys):
    from packlint.cli import main

    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "run.sh").write_text("torchrun /workspace/LLaVA-OneVision-2/aiak_training_llm/train.py --num-layers 2\n")
    (scripts / "packlint.toml").write_text(f'[path-map]\n"/workspace/LLaVA-OneVision-2" = "{ov_checkout}"\n')
    code = inspect_json(scripts / "run.sh")["launches"][0]["code"]
    assert code["how"] == "path-map" and code["file"] == str(ov_checkout / "aiak_training_llm/train.py")
    (scripts / "packlint.toml").write_text('code-base = ["missing-dir"]\n')
    assert main(["check", str(scripts / "run.sh")]) == 2
    err = capsys.readouterr().err
    assert "packlint.toml:1: code-base" in err and "not found" in err
