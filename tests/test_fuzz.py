"""Fuzzing the analysis with generated bash scripts (issue 19): nested braces, pattern substitutions,
arrays and appends, arithmetic, loops, functions, `source` between the generated files, regex tests
and launches, in the shapes launch scripts use, with the constructs the audit found explosive mixed in.

Each example writes a few scripts to a fresh directory and runs `packlint check --format json DIR` and
`packlint inspect --format json FILE` in a subprocess under RLIMIT_AS and RLIMIT_CPU (tests/limited.py):
no traceback, no internal error, an exit code in {0, 1, 2}, valid JSON. No wall-clock assertion.

CI runs a fixed, derandomized set (FUZZ_EXAMPLES, ~20-30 s). For a longer local run:
    PACKLINT_FUZZ_EXAMPLES=500 python -m pytest -q tests/test_fuzz.py

It can fail: on 0.2.0's code (before the caps) the CI set fails with MemoryError under RLIMIT_AS, the
CPU limit's SIGXCPU and `int()`'s 4,300-digit ValueError.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from limited import assert_clean, run_limited

FUZZ_EXAMPLES = int(os.environ.get("PACKLINT_FUZZ_EXAMPLES", "10"))
# No shrinking unless asked: a failing example can run into the CPU limit, and shrinking replays it
# many times (14 minutes on 0.2.0's code). PACKLINT_FUZZ_SHRINK=1 for a minimal example.
PHASES = (Phase.explicit, Phase.reuse, Phase.generate) + (
    (Phase.shrink,) if os.environ.get("PACKLINT_FUZZ_SHRINK") else ()
)
FILES = ("run.sh", "common.sh", "env.sh")  # the scripts of one example (they may source each other)

names = st.sampled_from(["X", "Y", "ARGS", "MODE", "NNODES", "OFFLINE_PACKING_BMR", "MBS", "i"])
flags = st.sampled_from(
    ["--micro-batch-size", "--seq-length", "--num-layers", "--lr", "--name", "--tensor-model-parallel-size"]
)
literals = st.one_of(
    st.sampled_from(["1", "2", "0", "sft", "a", "x/y.json", "", "bf16", "-1", "07", "0x1f", "1e-4"]),
    st.integers(1, 60).map(lambda n: "9" * (n * 100)),  # integers too large for 64 bits (and for str())
    st.text(alphabet="ab/._-", max_size=8),
)


@st.composite
def braces(draw) -> str:
    n = draw(st.integers(1, 40))
    if draw(st.booleans()):
        return "{a,b}" * n
    word = "n"
    for c in "abcdefghijklm"[: draw(st.integers(1, 13))]:
        word = "{" + c + "," + word + "}"
    return word * draw(st.integers(1, 4))


def expansions(name: str) -> st.SearchStrategy[str]:
    return st.sampled_from(
        [
            f"${name}",
            f'"${name}"',
            f"${{{name}:-1}}",
            f"${{{name}//?/${name}${name}}}",
            f"${{{name}//a/bb}}",
            f"${{{name}%%/*}}",
            f"${{{name}#*a}}",
            f"${{{name}%a*b*}}",
            f"${{#{name}}}",
            f'"${{{name}[@]}}"',
            f"${{{name}[*]}}",
            f"$(( {name} * {name} + 1 ))",
            f"$(({name}<<3))",
            f"$(echo {name})",
            f"${{{name}:1:3}}",
            f"${{{name}^^}}",
        ]
    )


words = st.one_of(literals, names.flatmap(expansions), braces(), flags)
word_lists = st.lists(words, max_size=6).map(" ".join)


@st.composite
def simple_statement(draw) -> str:
    n = draw(names)
    kind = draw(st.integers(0, 14))
    if kind == 0:
        return f"{n}={draw(words)}"
    if kind == 1:
        return f"export {n}={draw(words)}"
    if kind == 2:
        return f"{n}+=({draw(word_lists)})"
    if kind == 3:
        return f"{n}=({draw(word_lists)})"
    if kind == 4:
        return f"{n}+={draw(words)}"
    if kind == 5:
        return f"python train.py {draw(word_lists)}"
    if kind == 6:
        return f"torchrun --nnodes {draw(words)} --nproc_per_node {draw(words)} pretrain_gpt.py {draw(word_lists)}"
    if kind == 7:
        return f"srun -N {draw(words)} python -m train {draw(word_lists)}"
    if kind == 8:
        return f"source ./{draw(st.sampled_from(FILES))}"
    if kind == 9:
        return f"set -- {draw(word_lists)}"
    if kind == 10:
        return f"{n}[{draw(st.integers(-2, 5000))}]={draw(words)}"
    if kind == 11:
        return f"declare -i {n}={draw(words)}"
    if kind == 12:
        return f"X=$(( {draw(literals) or '1'} ** 64 ))"
    if kind == 13:
        return f'bash -c "python train.py {draw(flags)} ${n}"'
    return f'eval "{n}={draw(literals)}"'


def block(depth: int) -> st.SearchStrategy[str]:
    if depth <= 0:
        return st.lists(simple_statement(), min_size=1, max_size=4).map("\n".join)
    inner = block(depth - 1)
    compound = st.one_of(
        st.tuples(names, st.sampled_from(["(a|aa)+$", "^[0-9]+$", ".*a.*a.*b", "^sft"]), inner, inner).map(
            lambda t: f"if [[ ${t[0]} =~ {t[1]} ]]; then\n{t[2]}\nelse\n{t[3]}\nfi"
        ),
        st.tuples(names, inner, inner).map(lambda t: f'case "${t[0]}" in\n*a*b*) {t[1]} ;;\n*) {t[2]} ;;\nesac'),
        st.tuples(names, word_lists, inner).map(lambda t: f"for {t[0]} in {t[1]}; do\n{t[2]}\ndone"),
        st.tuples(names, inner).map(lambda t: f'while [ -n "${t[0]}" ]; do\n{t[1]}\nshift\ndone'),
        inner.map(lambda b: f'f() {{\n{b}\n}}\nf a b\nf "$@"'),
        inner.map(lambda b: f"( {b} )"),
    )
    return st.lists(st.one_of(inner, compound), min_size=1, max_size=3).map("\n".join)


scripts = st.lists(block(2), min_size=len(FILES), max_size=len(FILES))


@given(bodies=scripts)
@settings(
    max_examples=FUZZ_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    phases=PHASES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
def test_generated_scripts_are_analysed_within_bounds(bodies):
    with tempfile.TemporaryDirectory(prefix="packlint-fuzz-") as tmp:
        d = Path(tmp)
        for name, body in zip(FILES, bodies, strict=True):
            (d / name).write_text("#!/bin/bash\n" + body + "\n")
        rc, out, err = run_limited(["check", "--format", "json", "."], d)
        assert_clean(rc, out, err)
        if rc in (0, 1):
            doc = json.loads(out)
            assert isinstance(doc["findings"], list)
        rc, out, err = run_limited(["inspect", "--format", "json", FILES[0]], d)
        assert_clean(rc, out, err)
        if rc == 0:
            assert isinstance(json.loads(out)["launches"], list)
