"""Property-based robustness: random bytes, random shell-ish text and mutated real fixture scripts never
make the analysis raise anything but PacklintError; the launch model is JSON that round-trips with
every location at line/column >= 1; `check --format json|sarif` always prints a valid document.

Bounded for CI: modest example counts, no deadline; the whole file runs in well under a minute.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from packlint.api import inspect_script
from packlint.errors import PacklintError

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted(p for p in (ROOT / "tests" / "fixtures").rglob("*.sh")) + sorted((ROOT / "examples").glob("*.sh"))
SARIF_SCHEMA = ROOT / "tests" / "sarif-schema-2.1.0.json"

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                       HealthCheck.function_scoped_fixture])

TOKENS = [
    "export", "OFFLINE_PACKING_BMR=1", "OFFLINE_PACKED_DATA='1'", "MBS=${4:-1}", "A=(", ")", "A+=(", "--micro-batch-size",
    "${MBS}", '"$MBS"', "${A[@]}", '"${A[@]}"', "$(", "$((", "))", "`", "'", '"', "\\", "{", "}", "(", "[[", "]]",
    "[", "]", "if", "then", "elif", "else", "fi", "for", "in", "do", "done", "while", "until", "case", "esac", ";;",
    "function", "f()", "f", "local", "declare", "-x", "readonly", "unset", "set", "--", "shift", "eval", "source",
    ".", "bash", "-c", "torchrun", "python", "-m", "torch.distributed.run", "deepspeed", "srun", "mpirun", "-x",
    "accelerate", "launch", "env", "nohup", "exec", "time", "train.py", "--packing-sft-data", "|", "||", "&&", "&",
    ";", "\n", "\n", "\n", " ", " ", "\t", "<<EOF", "EOF", "<<-'X'", "X", ">", "2>&1", "<(", "#", "$1", "$@", "$#",
    "$?", "$$", "${X:-$(hostname)}", "${X%/*}", "${#X}", "${X:1:2}", "${X/a/b}", "!", "=", "==", "=~", "-f", "-z",
    "1", "0", "-1", "8", "$RANDOM", "~", "*", "?", "{1..3}", "\r\n", "\ufeff", "é", "\x00", "\xff",
]


def check_model(model: dict) -> None:
    """JSON-serialisable, round-trips, and every location is 1-based."""
    text = json.dumps(model, ensure_ascii=False)
    assert json.loads(text) == model
    assert model["version"] == 1
    stack = [model]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "line" in node and node["line"] is not None:
                assert isinstance(node["line"], int) and node["line"] >= 1, node
                assert node.get("file") or node.get("path"), node
            if "column" in node and node["column"] is not None:
                assert isinstance(node["column"], int) and node["column"] >= 1, node
            if node.get("end_line") is not None:
                assert node["end_line"] >= node["line"], node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def analyse(data: bytes, tmp: Path, name: str = "fuzz.sh") -> dict | None:
    try:
        model = inspect_script(tmp / name, text=data, display_path=name)
    except PacklintError as exc:
        assert exc.message and "\n" not in exc.one_line()
        return None
    check_model(model)
    return model


# ---------------------------------------------------------------- (a) random input

@settings(max_examples=60, **SETTINGS)
@given(data=st.binary(max_size=2000))
def test_random_bytes_never_raise(data, tmp_path):
    analyse(data, tmp_path)


@settings(max_examples=80, **SETTINGS)
@given(tokens=st.lists(st.sampled_from(TOKENS), max_size=120), glue=st.sampled_from([" ", "", "\n", ";"]))
def test_random_shellish_text_never_raises(tokens, glue, tmp_path):
    text = glue.join(tokens)
    analyse(text.encode("utf-8", "surrogatepass"), tmp_path)


@settings(max_examples=40, **SETTINGS)
@given(text=st.text(max_size=600))
def test_random_unicode_never_raises(text, tmp_path):
    analyse(text.encode("utf-8", "surrogatepass"), tmp_path)
    analyse(b"\xff\xfe" + text.encode("utf-16-le", "surrogatepass"), tmp_path)


# ---------------------------------------------------------------- (b) mutated fixtures

def mutate(lines: list[bytes], rnd: random.Random, steps: int) -> bytes:
    lines = list(lines)
    for _ in range(steps):
        op = rnd.randrange(7)
        if not lines:
            lines = [b""]
        i = rnd.randrange(len(lines))
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[rnd.randrange(len(lines))])
        elif op == 2:
            j = rnd.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 3:
            line = lines[i]
            k = rnd.randrange(len(line) + 1)
            lines[i] = line[:k] + rnd.choice([b"'", b'"', b"{", b"}", b"(", b")", b"$(", b"`", b"\\", b"[[", b"]]",
                                              b"${", b"$((", b"<<EOF", b"#", b"\xff", b"\r"]) + line[k:]
        elif op == 4:
            lines = lines[:i]  # truncate
        elif op == 5:
            line = lines[i]
            k = rnd.randrange(len(line) + 1)
            lines[i] = line[:k]
        else:
            lines.insert(i, lines[i] * rnd.randrange(1, 4))
    return b"\n".join(lines)


@pytest.mark.skipif(not FIXTURES, reason="no fixture scripts")
@settings(max_examples=120, **SETTINGS)
@given(index=st.integers(min_value=0), seed=st.integers(min_value=0, max_value=2**32),
       steps=st.integers(min_value=1, max_value=6))
def test_mutated_fixtures_never_raise(index, seed, steps, tmp_path):
    path = FIXTURES[index % len(FIXTURES)]
    data = mutate(path.read_bytes().split(b"\n"), random.Random(seed), steps)
    # analysed as if it were the fixture (so `source` resolves beside it) but from the mutated text
    try:
        model = inspect_script(path, text=data, display_path=path.name)
    except PacklintError:
        return
    check_model(model)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_fixture_gives_a_valid_model(path):
    try:
        model = inspect_script(path)
    except PacklintError:
        return
    check_model(model)


# ---------------------------------------------------------------- `check` documents

def _check_doc(paths: list[str], fmt: str, cwd: Path, monkeypatch, capsys):
    from packlint.cli import main

    monkeypatch.chdir(cwd)
    monkeypatch.delenv("PACKLINT_DEBUG", raising=False)
    rc = main(["check", "--format", fmt, "--color", "never", *paths])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert rc in (0, 1, 2)
    return rc, json.loads(captured.out), captured.err


def _fuzz_inputs(rnd: random.Random, n: int) -> list[bytes]:
    out = []
    for _ in range(n):
        kind = rnd.randrange(3)
        if kind == 0 and FIXTURES:
            src = FIXTURES[rnd.randrange(len(FIXTURES))]
            out.append(mutate(src.read_bytes().split(b"\n"), rnd, rnd.randrange(1, 6)))
        elif kind == 1:
            out.append(" ".join(rnd.choice(TOKENS) for _ in range(rnd.randrange(60))).encode("utf-8", "surrogatepass"))
        else:
            out.append(bytes(rnd.randrange(256) for _ in range(rnd.randrange(300))))
    return out


@settings(max_examples=25, **SETTINGS)
@given(seed=st.integers(min_value=0, max_value=2**32))
def test_check_json_is_always_a_valid_document(seed, tmp_path_factory, monkeypatch, capsys):
    tmp = tmp_path_factory.mktemp("check")
    names = []
    for i, data in enumerate(_fuzz_inputs(random.Random(seed), 4)):
        (tmp / f"s{i}.sh").write_bytes(data)
        names.append(f"s{i}.sh")
    rc, doc, err = _check_doc(names, "json", tmp, monkeypatch, capsys)
    assert doc["version"] == 1
    assert {"findings", "summary"} <= set(doc)
    for f in doc["findings"]:
        assert {"code", "severity", "message", "path", "line", "column"} <= set(f)
        assert f["line"] >= 1 and f["column"] >= 1
    refused = len([line for line in err.splitlines() if line.startswith("packlint: error: ")])
    assert doc["summary"]["files"] + refused >= len(names) or rc == 2
    assert (rc == 2) == bool(refused)


@pytest.mark.skipif(not SARIF_SCHEMA.exists(), reason="SARIF schema not in tests/ yet")
@settings(max_examples=15, **SETTINGS)
@given(seed=st.integers(min_value=0, max_value=2**32))
def test_check_sarif_is_always_valid(seed, tmp_path_factory, monkeypatch, capsys):
    import jsonschema

    from packlint.cli.check import add_arguments  # noqa: F401  (sarif must be a --format choice)

    schema = json.loads(SARIF_SCHEMA.read_text())
    tmp = tmp_path_factory.mktemp("sarif")
    names = []
    for i, data in enumerate(_fuzz_inputs(random.Random(seed), 3)):
        (tmp / f"s{i}.sh").write_bytes(data)
        names.append(f"s{i}.sh")
    rc, doc, err = _check_doc(names, "sarif", tmp, monkeypatch, capsys)
    jsonschema.validate(doc, schema)


_CALL_PIECES = ["get_env", "os.getenv", "(", ")", "'", '"', "NAME_1", "X", "r", "u", " ", "\n", "_", "9", "é", "İ", "a(",
                "1x"]


_CALLS = st.builds(
    lambda name, space, prefix, quote, arg, close: f"{name}({space}{prefix}{quote}{arg}{close}",
    st.sampled_from(["get_env", "f", "_x", "x9", "9", "1x", "é", "İ", "aé", "", "a.b", " "]),
    st.sampled_from(["", " ", "\n", "\t "]),
    st.sampled_from(["", "r", "u", "R", "b", "f"]),
    st.sampled_from(["'", '"']),
    st.sampled_from(["NAME_1", "X", "x", "A", "A-B", ""]),
    st.sampled_from(["'", '"', "", ")"]),
)


@settings(max_examples=300, **SETTINGS)
@given(pieces=st.lists(st.one_of(st.sampled_from(_CALL_PIECES), _CALLS), max_size=30))
def test_candidate_calls_find_what_the_named_pattern_found(pieces):
    """The wrapper calls a file's facts list (`get_env("NAME"`) are found from their parenthesis; they are exactly what
    the pattern with the function's name in front finds (the old, slower search)."""
    import re

    from packlint.codebase.filefacts import candidate_calls

    text = "".join(pieces)
    named = re.compile(r"\b([A-Za-z_]\w*)\(\s*[rRuU]?['\"]([A-Z][A-Z0-9_]+)['\"]")
    assert candidate_calls(text) == [(m[1], m[2], text.count("\n", 0, m.start()) + 1) for m in named.finditer(text)]


_PIN_NAMES = ["trl", "TRL", "Trl", "megatron-core", "Megatron_Core", "megatron..core", "MEGATRON.core", "k", "x_y", "x-y"]
_PIN_PIECES = ["==", ">=", "0.15.0", "*", " ", "[vllm]", ";", "python_version>'3.9'", "'", '"', "(", ")", "#", "- ", "é",
               "İ", "K", "/", "@", ","]


@st.composite
def _pin_lines(draw):
    """Requirement lines as files spell them (a pin, a range, quoted in setup.py, a YAML list item), with noise."""
    head = draw(st.sampled_from(["", "- ", "  ", '"', "'", "install_requires=['", "#", "x"]))
    name = draw(st.sampled_from(_PIN_NAMES))
    extras = draw(st.sampled_from(["", "[vllm]", " "]))
    spec = draw(st.sampled_from(["==0.15.0", ">=0.15", "==0.15.*", " (==0.15.0)", "===1", "", "==", "@ git+x"]))
    tail = draw(st.sampled_from(["", "; python_version>'3.9'", " # pinned", "',", '",', "'", ","]))
    noise = draw(st.lists(st.sampled_from(_PIN_PIECES), max_size=3))
    return head + name + extras + spec + tail + "".join(noise)


@settings(max_examples=500, deadline=None)
@given(_pin_lines(), st.sampled_from(["trl", "megatron-core", "k", "x-y"]))
def test_a_line_without_the_name_pins_nothing(line, want):
    """versions._line_pin looks for the name before parsing (packaging's import and PEP 508 parser only where a line
    names the distribution): the same pins as parsing every line."""
    from packlint.configs.versions import _line_pin, _parsed_pin

    assert _line_pin(line, want) == _parsed_pin(line, want)
