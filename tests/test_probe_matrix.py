"""The probe's verdict matrix on CPU: every backend x {correct, leaking, MBS>1}, including the
lengths that made compiled flex report a correct configuration as FAILED (16,24,16,24 at head dim
8). The rule under test: never FAILED on a correct configuration, never PROVEN on a broken one,
and a backend that cannot be trusted here is refused with its reason (exit 2), not run."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from runtime_probe import ProbeSettings, run_probe  # noqa: E402
from runtime_probe.probe import NoBackend  # noqa: E402

CPU_BACKENDS = ["auto", "sdpa", "flex"]
LENGTHS = {"uneven": [16, 24, 9, 31], "issue-9": [16, 24, 16, 24]}


def probe(backend: str, lengths: list[int], **kw):
    base = dict(bmr="1", packed_data="1", mbs=1, lengths=list(lengths), heads=2, head_dim=8, device="cpu",
                backend=backend)
    base.update(kw)
    return run_probe(ProbeSettings(**base))


def statuses(r) -> dict[str, str]:
    return {c.name: c.status for c in r.checks}


@pytest.mark.parametrize("lengths", LENGTHS.values(), ids=LENGTHS.keys())
@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_correct_configuration_is_proven(backend, lengths):
    r = probe(backend, lengths)
    assert r.verdict == "proven" and r.ok and r.exit_code == 0, r.render_text()
    assert r.leakage["abs"] == 0.0
    assert "block" in r.backend_detail and "plain causal" not in r.backend_detail
    text = r.render_text()
    assert text.startswith("PROVEN") and "FAIL " not in text


@pytest.mark.parametrize("lengths", LENGTHS.values(), ids=LENGTHS.keys())
@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_leaking_configuration_fails_with_a_number(backend, lengths):
    r = probe(backend, lengths, packed_data="0")
    assert r.verdict == "failed" and r.exit_code == 1 and r.plain_causal
    assert r.leakage["abs"] > 0.01
    st = statuses(r)
    assert st["gate 2: batch"] == "fail" and st["(ii) leakage"] == "fail"
    # the kernel line says what ran: plain causal, not the block mask it would have used
    assert "plain causal over the whole row" in r.backend_detail and "block-diagonal" not in r.backend_detail
    # no PASS under FAILED that reads like an endorsement: the cross-check is skipped with its reason
    assert all(s != "pass" for n, s in st.items() if n.startswith("second opinion"))
    text = r.render_text()
    assert "OFFLINE_PACKED_DATA='0' (off)" in text


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_mbs_two_fails_on_the_assert_before_any_kernel_runs(backend):
    r = probe(backend, LENGTHS["uneven"], mbs=2)
    assert r.verdict == "failed" and r.exit_code == 1
    st = statuses(r)
    assert st["consumer: MBS assert"] == "fail" and st["forward"] == "skip"


def test_unset_gate_is_rendered_as_unset():
    r = probe("sdpa", LENGTHS["uneven"], packed_data=None, second_opinion=False)
    assert "OFFLINE_PACKED_DATA=unset (off)" in r.render_text()
    assert r.leakage["abs"] > 0


@pytest.mark.parametrize("config", [{}, {"packed_data": "0"}, {"mbs": 2}], ids=["correct", "leaking", "mbs2"])
def test_flex_compiled_is_refused_on_cpu_with_the_reason(config):
    # inductor's C++ flex template returns run-to-run different wrong rows at head dim 8/16 (see
    # runtime_probe/backends.py): refusing is the only verdict that cannot be wrong
    with pytest.raises(NoBackend, match="flex-compiled is refused on CPU.*use --backend sdpa or flex"):
        probe("flex-compiled", LENGTHS["issue-9"], **config)


def test_second_opinion_catches_a_kernel_that_is_consistently_wrong(monkeypatch):
    """(i) and (ii) compare the kernel with itself; a kernel wrong the same way packed and alone
    passes both. The float64 reference is what catches it."""
    from runtime_probe import backends

    real = backends._FACTORIES["sdpa"]

    def skewed(device, dtype):
        b = real(device, dtype)
        attend = b.attend
        b.attend = lambda q, k, v, cu, m: attend(q, k, v, cu, m) * 1.01
        return b

    monkeypatch.setitem(backends._FACTORIES, "sdpa", skewed)
    r = probe("sdpa", LENGTHS["uneven"])
    st = statuses(r)
    assert st["(i) packed == each sub-sample alone"] == "pass" and r.leakage["abs"] == 0.0
    assert [s for n, s in st.items() if n.startswith("second opinion")] == ["fail"]
    assert r.verdict == "failed" and "the kernel is wrong on this machine" in r.render_text()
