"""packlint.globs: the one glob translator behind bash pattern matching (`[[ == ]]`, `case`,
`${x#pat}`) and the configuration's path globs. Bracket expressions follow POSIX and bash; each bash
case is also checked against real bash where it exists."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from packlint.globs import bash_pattern_regex, path_glob_regex

# (pattern, text, matches) — what `[[ $text == $pattern ]]` says in bash
BASH_CASES = [
    ("[]a]", "]", True), ("[]a]", "a", True), ("[]a]", "b", False),
    ("[]-a]", "^", True),                      # a range from ] to a
    ("[!]a]", "]", False), ("[!]a]", "b", True), ("[!]a]", "a", False),
    ("[^]a]", "]", False), ("[^]a]", "b", True),
    ("[!abc]x", "dx", True), ("[!abc]x", "ax", False),
    ("[^abc]x", "dx", True), ("[^abc]x", "bx", False),
    ("[a-c]", "b", True), ("[a-c]", "d", False), ("[a-]", "-", True), ("[-a]", "-", True),
    ("[[:digit:]]*", "7b", True), ("[[:digit:]]*", "b7", False),
    ("[![:alpha:]]", "1", True), ("[![:alpha:]]", "q", False),
    ("[[:upper:][:digit:]]", "Q", True), ("[[:upper:][:digit:]]", "q", False),
    ("[\\]]", "]", True), ("[\\]]", "\\", False),
    ("[", "[", True), ("[a", "[a", True), ("a]", "a]", True), ("[]", "[]", True), ("[!]", "[!]", True),
    ("x[ab", "x[ab", True),
    ("*.sh", "dir/a.sh", True), ("a?c", "a/c", True),   # bash patterns: * and ? match / too
    ("\\*", "*", True), ("\\*", "a", False), ("a\\[b]", "a[b]", True),
    ("[.]x", ".x", True), ("[&&]", "&", True), ("[~~]", "~", True), ("[|]", "|", True),
]


@pytest.mark.parametrize("pattern,text,hit", BASH_CASES)
def test_bash_pattern(pattern, text, hit):
    assert (re.fullmatch(bash_pattern_regex(pattern), text, re.S) is not None) is hit


BASH = shutil.which("bash")


@pytest.mark.skipif(BASH is None, reason="bash not available")
def test_bash_agrees():
    script = 'while IFS= read -r p && IFS= read -r t; do if [[ $t == $p ]]; then echo 1; else echo 0; fi; done'
    stdin = "".join(f"{p}\n{t}\n" for p, t, _ in BASH_CASES)
    out = subprocess.run([BASH, "-c", script], input=stdin, capture_output=True, text=True,
                         env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"}).stdout.split()
    assert [o == "1" for o in out] == [hit for _, _, hit in BASH_CASES]


# (pattern, path relative to the config file, matches)
PATH_CASES = [
    ("*.sh", "a.sh", True), ("*.sh", "d/a.sh", False), ("legacy/*.sh", "legacy/a.sh", True),
    ("legacy/*.sh", "legacy/x/a.sh", False), ("legacy/**/*.sh", "legacy/x/y/a.sh", True),
    ("legacy/**/*.sh", "legacy/a.sh", True), ("legacy", "legacy/a.sh", True), ("a?c", "a/c", False),
    ("[]x]*.sh", "]a.sh", True), ("[]x]*.sh", "xa.sh", True), ("[]x]*.sh", "ya.sh", False),
    ("[!t]*.sh", "train.sh", False), ("[!t]*.sh", "eval.sh", True),
    ("[^t]*.sh", "train.sh", False), ("[^t]*.sh", "eval.sh", True),
    ("run[0-9].sh", "run3.sh", True), ("run[0-9].sh", "runx.sh", False),
    ("[", "[", True), ("a\\b", "a\\b", True),      # a backslash is an ordinary character in path globs
]


@pytest.mark.parametrize("pattern,path,hit", PATH_CASES)
def test_path_glob(pattern, path, hit):
    assert bool(path_glob_regex(pattern).match(path)) is hit
