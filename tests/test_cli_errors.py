"""The CLI turns every failure into one line and a defined exit code, never a traceback."""

from __future__ import annotations

import pytest

from packlint import cli

SCRIPT = "examples/correct_packed_training.sh"


@pytest.fixture(autouse=True)
def _no_debug(monkeypatch):
    monkeypatch.delenv("PACKLINT_DEBUG", raising=False)


def test_internal_error_is_one_line_and_exit_2(monkeypatch, capsys):
    import packlint.api

    def boom(*a, **k):
        raise KeyError("simulated bug")

    monkeypatch.setattr(packlint.api, "inspect_script", boom)
    assert cli.main(["inspect", SCRIPT]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "internal error: KeyError" in err and "please report" in err
    assert "Traceback" not in err


def test_internal_error_traceback_on_request(monkeypatch):
    import packlint.api

    monkeypatch.setattr(packlint.api, "inspect_script", lambda *a, **k: (_ for _ in ()).throw(ValueError("x")))
    monkeypatch.setenv("PACKLINT_DEBUG", "1")
    with pytest.raises(ValueError):
        cli.main(["inspect", SCRIPT])


def test_recursion_error_is_one_line(monkeypatch, capsys):
    import packlint.api

    def deep(*a, **k):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(packlint.api, "inspect_script", deep)
    assert cli.main(["inspect", SCRIPT]) == 2
    assert "nested too deeply" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["inspect"], ["inspect", "--format", "xml", SCRIPT], ["nope"],
                                  ["inspect", SCRIPT, "--env", "NOEQUALS"]])
def test_usage_errors_exit_2(argv, capsys):
    assert cli.main(argv) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_missing_file_exit_2(capsys):
    assert cli.main(["inspect", "does/not/exist.sh"]) == 2
    assert capsys.readouterr().err.strip() == "packlint: error: does/not/exist.sh: no such file"
