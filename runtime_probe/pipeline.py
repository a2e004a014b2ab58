"""Re-enact the LLaVA-OneVision2 producer, its two gates and the consumer, as the training stack does.

Each step names the code it mirrors (aiak_training_llm, see /work/shared/seeds 000 and 001):
  Gate 1  data/multimodal/task_encoder.py  encode_sample, PackedCaptioningSample branch (~186-279)
  pack    data/multimodal/task_encoder.py  pack_selected_samples (~401-477): cu_lengths, max_length
  Gate 2  data/multimodal/task_encoder.py  batch() (~359-365): stack, or the dummy [[0]]
  consume train/pretrain/pretrain_llava_onevision2.py (~145-168): shape test, MBS assert, PackedSeqParams
  SP pad  train/pretrain/pretrain_llava_onevision2.py (~171-207): pad, extra dummy sub-sequence
plus Megatron-LM's validate_args, which turns --sequence-parallel off when TP is 1, and the
--packing-sft-data argument check, which forces the micro-batch size to 1.

Nothing here invents tensors the real code would not build: when the real code raises, we record
the exception it would raise and stop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from runtime_probe.report import FAIL, INFO, Check
from runtime_probe.settings import GATE_BMR, GATE_PACKED_DATA, ProbeSettings


@dataclass
class Gate:
    """One env gate as `int(os.environ.get(NAME, 0)) == 1` evaluates it."""

    name: str
    raw: str | None
    on: bool | None = None  # None: evaluating it raises
    error: str | None = None  # the exception the training code would raise

    def to_json(self) -> dict:
        return {"raw": self.raw, "on": self.on, "error": self.error}


def read_gate(name: str, raw: str | None) -> Gate:
    """Evaluate a gate exactly as the training code does: Python's int() on the env string."""
    try:
        return Gate(name, raw, int(raw if raw is not None else 0) == 1)
    except ValueError as exc:
        return Gate(name, raw, None, f"ValueError: {exc}")


@dataclass
class Batch:
    """What reaches attention: the row the kernel sees and the packed params (None = not packed)."""

    lengths: list[int]  # true sub-sample lengths
    tokens: int = 0  # tokens the kernel sees, padding included
    padding: int = 0
    mbs: int = 1
    cu_lengths: Any = None  # batch() output, [MBS, P+1] or the dummy [1, 1]
    max_lengths: Any = None
    packed_seq_params: Any = None  # megatron.core PackedSeqParams or None
    kind: str = "unpacked"  # offline-packed | online-packed | unpacked
    gates: dict = field(default_factory=dict)
    steps: list[str] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)  # failures that stop the run, and info
    notes: list[str] = field(default_factory=list)

    @property
    def stopped(self) -> bool:
        """True when the real run would die (or drop the sample) before attention."""
        return any(c.status == FAIL for c in self.checks)

    def true_bounds(self) -> list[tuple[int, int]]:
        out, a = [], 0
        for n in self.lengths:
            out.append((a, a + n))
            a += n
        return out


def pack_selected_samples(lengths: list[int]) -> tuple[torch.Tensor, int]:
    """task_encoder.pack_selected_samples: cu_lengths = [0, L1, L1+L2, ...] (int32) and the longest
    sub-sample, attached to the packed sample."""
    cu = [0]
    for n in lengths:
        cu.append(cu[-1] + n)
    return torch.tensor(cu, dtype=torch.int32), max(lengths)


def sp_pad_multiple(tp: int, cp: int) -> int:
    """The multiple the row is padded to under sequence parallelism: TP, or TP*CP*2 when CP > 1."""
    return tp * cp * 2 if cp > 1 else tp


def build_batch(s: ProbeSettings, device: torch.device, PackedSeqParams) -> Batch:
    """Run producer -> Gate 1 -> pack -> Gate 2 -> consumer -> SP padding for one probe row."""
    lengths = s.true_lengths()
    b = Batch(lengths=lengths, tokens=sum(lengths), mbs=s.mbs)
    online = s.packing_flag is not None  # energon online packing: task_encoder.is_packing_enabled

    # --packing-sft-data: Megatron argument validation silently forces MBS to 1.
    if s.packing_flag == "--packing-sft-data" and s.mbs != 1:
        b.notes.append(
            f"--packing-sft-data forces --micro-batch-size to 1 (the script asks for {s.mbs}): "
            "throughput from MBS is silently lost; raise --global-batch-size instead"
        )
        b.steps.append(f"argument validation: --packing-sft-data -> micro_batch_size {s.mbs} -> 1")
        b.mbs = 1

    bmr = read_gate(GATE_BMR, s.bmr)
    b.gates[GATE_BMR] = bmr.to_json()
    b.gates[GATE_PACKED_DATA] = read_gate(GATE_PACKED_DATA, s.packed_data).to_json()

    # Which data reaches the encoder: offline-packed shards (what both env gates are about), plain
    # samples packed online by the loader, or no packing at all.
    offline = bmr.on is not False or (
        s.packed_data not in (None, "") and read_gate(GATE_PACKED_DATA, s.packed_data).on is not False
    )
    b.kind = "offline-packed" if offline else ("online-packed" if online else "unpacked")

    # ------------------------------------------------------------------ Gate 1 (encode_sample)
    if b.kind == "offline-packed":
        if bmr.on is None:
            b.checks.append(
                Check(
                    "gate 1: encode",
                    FAIL,
                    f"{GATE_BMR}={s.bmr!r}: encode_sample does int(os.environ.get(...)) and raises "
                    f"{bmr.error} at the first sample",
                    s.bmr,
                )
            )
            b.steps.append(f"encode_sample: int({s.bmr!r}) raises {bmr.error}")
            return b
        if not bmr.on:
            b.checks.append(
                Check(
                    "gate 1: encode",
                    FAIL,
                    f"{GATE_BMR} is not 1: packed sub-samples go to the legacy captioning encoder, which "
                    "LLaVA-OneVision2 removed (2026-01-30); encode_sample raises for every packed sample and "
                    "the data loader's error handler prints and skips it: all packed samples are silently "
                    "dropped (older code instead encoded them with the wrong token layout)",
                )
            )
            b.steps.append(
                "encode_sample: PackedCaptioningSample with BMR off -> legacy CaptioningSample "
                "path -> raises -> sample skipped by the loader"
            )
            return b
        b.steps.append(
            f"encode_sample: {GATE_BMR}=1 -> each of {len(lengths)} sub-samples encoded as a "
            "MultiMixQASample (multi-turn QA layout)"
        )
    elif b.kind == "online-packed":
        b.steps.append(
            f"{s.packing_flag}: the loader packs plain samples online (is_packing_enabled); "
            f"{GATE_BMR} is not read for plain samples"
        )
        if bmr.on is None:
            b.notes.append(
                f"{GATE_BMR}={s.bmr!r} is not an integer: harmless for plain samples, but any "
                "offline-packed shard would crash the loader"
            )

    # ------------------------------------------------------------------ no packing at all
    if b.kind == "unpacked":
        pd = read_gate(GATE_PACKED_DATA, s.packed_data)
        b.gates[GATE_PACKED_DATA] = pd.to_json()
        b.checks.append(
            Check(
                "configuration",
                INFO,
                f"{GATE_BMR} and {GATE_PACKED_DATA} off and no online packing flag: rows are single "
                "samples and plain causal attention is right for them. If the data set is "
                "offline-packed, both gates must be 1 (with BMR off every packed sample is dropped)",
            )
        )
        b.steps.append("batch(): cu_lengths = [[0]] (dummy); consumer: packed_seq_params = None")
        return b

    cu_sample, max_length = pack_selected_samples(lengths)
    b.steps.append(
        f"pack_selected_samples: cu_lengths = {cu_sample.tolist() if len(lengths) <= 10 else '[0, ...]'} "
        f"(int32, {len(lengths) + 1} entries), max_length = {max_length}"
    )

    # ------------------------------------------------------------------ Gate 2 (batch / collate)
    cu_lengths = torch.tensor([[0]], dtype=torch.int32)
    max_lengths = torch.tensor([[0]], dtype=torch.int32)
    if online:  # `self.is_packing_enabled or int(...)`: short-circuits, OFFLINE_PACKED_DATA not read
        gate2, why = True, f"is_packing_enabled ({s.packing_flag})"
        b.gates[GATE_PACKED_DATA] = {**read_gate(GATE_PACKED_DATA, s.packed_data).to_json(), "read": False}
    else:
        pd = read_gate(GATE_PACKED_DATA, s.packed_data)
        b.gates[GATE_PACKED_DATA] = pd.to_json()
        if pd.on is None:
            b.checks.append(
                Check(
                    "gate 2: batch",
                    FAIL,
                    f"{GATE_PACKED_DATA}={s.packed_data!r}: batch() raises {pd.error} at the first batch",
                    s.packed_data,
                )
            )
            return b
        gate2, why = pd.on, f"{GATE_PACKED_DATA}={s.packed_data!r}"
    samples = [(cu_sample, max_length)] * b.mbs  # MBS packed samples; the probe packs the same row
    if gate2:
        cu_lengths = torch.stack([c for c, _ in samples])
        max_lengths = torch.tensor([m for _, m in samples], dtype=torch.int32)
        b.steps.append(f"batch(): gate 2 open ({why}) -> cu_lengths = stack(...) shape {list(cu_lengths.shape)}")
    else:
        b.steps.append(
            f"batch(): gate 2 closed ({why}) -> dummy cu_lengths = [[0]] shape [1, 1]; "
            "the real boundaries are thrown away"
        )
    b.gates["gate2_open"] = gate2
    b.cu_lengths, b.max_lengths = cu_lengths, max_lengths

    # ------------------------------------------------------------------ consumer (get_batch)
    cu_lengths = cu_lengths.to(device)  # the batch is moved to the GPU before the forward
    max_lengths = max_lengths.to(device)
    packed_seq_params = None
    if cu_lengths.shape == torch.Size([1, 1]):
        b.steps.append(
            "consumer: cu_lengths.shape == [1, 1] -> packed_seq_params = None -> plain causal "
            f"attention over the whole row of {b.tokens} tokens"
        )
    else:
        if cu_lengths.shape[0] != 1:
            b.checks.append(
                Check(
                    "consumer: MBS assert",
                    FAIL,
                    f"AssertionError: micro-batch-size must be 1 for packing (cu_lengths shape "
                    f"{list(cu_lengths.shape)}, --micro-batch-size {b.mbs}): the run dies at the first batch. "
                    "Use --micro-batch-size 1 and raise --global-batch-size instead",
                    b.mbs,
                )
            )
            b.steps.append(f"consumer: assert cu_lengths.shape[0] == 1 fails (shape {list(cu_lengths.shape)})")
            return b
        packed_seq_params = PackedSeqParams(
            qkv_format="thd",
            cu_seqlens_q=cu_lengths[0],
            cu_seqlens_kv=cu_lengths[0],
            max_seqlen_q=max_lengths[0].item(),
            max_seqlen_kv=max_lengths[0].item(),
        )
        b.steps.append(
            "consumer: assert cu_lengths.shape[0] == 1 holds -> PackedSeqParams(qkv_format='thd', "
            "cu_seqlens_q=cu_lengths[0], cu_seqlens_kv=cu_lengths[0], "
            f"max_seqlen_q={packed_seq_params.max_seqlen_q})"
        )

    # ------------------------------------------------------------------ sequence-parallel padding
    sp = s.sequence_parallel
    if sp and s.tp == 1:
        b.notes.append(
            "--sequence-parallel with tensor parallel size 1: Megatron's validate_args turns "
            "sequence parallelism off, so no padding is added"
        )
        sp = False
    if sp:
        multiple = sp_pad_multiple(s.tp, s.cp)
        pad = (-b.tokens) % multiple
        b.padding = pad
        b.tokens += pad
        if pad == 0:
            b.steps.append(f"sequence parallel: {sum(lengths)} tokens already a multiple of {multiple}; no padding")
        elif packed_seq_params is None:
            b.steps.append(
                f"sequence parallel: row padded by {pad} to {b.tokens} (multiple of {multiple}); "
                "not packed, so the padding just extends the causal row"
            )
        else:
            p = packed_seq_params
            new_end_q = p.cu_seqlens_q[-1:] + pad
            new_end_kv = p.cu_seqlens_kv[-1:] + pad
            packed_seq_params = PackedSeqParams(
                qkv_format=p.qkv_format,
                cu_seqlens_q=torch.cat([p.cu_seqlens_q, new_end_q]),
                cu_seqlens_kv=torch.cat([p.cu_seqlens_kv, new_end_kv]),
                max_seqlen_q=max(p.max_seqlen_q, pad),
                max_seqlen_kv=max(p.max_seqlen_kv, pad),
            )
            b.steps.append(
                f"sequence parallel: row padded by {pad} to {b.tokens} (multiple of {multiple} = "
                f"{'TP*CP*2' if s.cp > 1 else 'TP'}); padding appended to cu_seqlens as one extra "
                "dummy sub-sequence"
            )
        if s.cp > 1:
            b.notes.append(
                f"context parallel {s.cp}: the probe attends over the whole row on one device, "
                "which is what the CP ranks compute together"
            )

    # ------------------------------------------------------------------ a pipeline's own boundaries
    if s.cu_seqlens is not None:
        if packed_seq_params is None:
            b.notes.append("--cu-seqlens ignored: gate 2 is closed, so no cu_seqlens reach the kernel")
        else:
            given = torch.tensor(s.cu_seqlens, dtype=torch.int32, device=device)
            diffs = [y - x for x, y in zip(s.cu_seqlens, s.cu_seqlens[1:], strict=False)]
            packed_seq_params = PackedSeqParams(
                qkv_format="thd",
                cu_seqlens_q=given,
                cu_seqlens_kv=given,
                max_seqlen_q=max(diffs) if diffs else 0,
                max_seqlen_kv=max(diffs) if diffs else 0,
            )
            b.steps.append(
                f"--cu-seqlens: the kernel is given {s.cu_seqlens} instead of the re-enacted "
                "boundaries (true boundaries still come from --lengths)"
            )

    b.packed_seq_params = packed_seq_params
    return b
