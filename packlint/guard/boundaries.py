"""Where the first batch says one sample ends and the next begins, read from each thing that carries it.

Every reader returns the *cuts*: the flattened token indices (row r, column i -> r * L + i) at which a new
sample starts, without 0 and without the end. Two carriers agree when their cuts are the same set.
Called only inside the training process, where torch is already imported.
"""

from __future__ import annotations

from typing import Any


def _rows(t: Any) -> list[list[int]]:
    return t.detach().to("cpu").reshape(t.shape[0], -1).tolist()


def position_cuts(position_ids: Any, batch: int, length: int, mask2d: Any = None) -> set[int] | None:
    """A new sample starts where a position is not the previous one plus 1 (transformers'
    masking_utils.find_packed_sequence_indices and modeling_flash_attention_utils._is_packed_sequence read
    position_ids the same way). Only a step between two real tokens counts (`mask2d`, nonzero = real: a
    2-D mask or a 4-D mask's diagonal), so padding is no sample. None: no usable position_ids
    (none, or multimodal RoPE positions [3|4, B, L] whose image tokens do not step by 1)."""
    if position_ids is None or not hasattr(position_ids, "dim"):
        return None
    if position_ids.dim() == 3:
        if position_ids.shape[0] != 4:  # Qwen2-VL style [3, B, L]: not text positions
            return None
        position_ids = position_ids[0]  # [4, B, L]: the first is the text positions
    if position_ids.dim() == 1:
        position_ids = position_ids[None]
    rows = _rows(position_ids)
    if len(rows) == 1 and batch > 1:
        rows = rows * batch
    keep = _rows(mask2d) if mask2d is not None else None
    cuts: set[int] = set()
    for r, row in enumerate(rows[:batch]):
        for i in range(1, min(len(row), length)):
            # padding -> real token (left padding) is not a boundary between two samples
            if row[i] != row[i - 1] + 1 and (keep is None or (keep[r][i] != 0 and keep[r][i - 1] != 0)):
                cuts.add(r * length + i)
    return cuts


def cu_cuts(cu: Any, total: int) -> set[int]:
    """The inner entries of a cu_seqlens vector (flattened over the batch, as the varlen kernels read it)."""
    flat = [int(x) for x in cu.detach().to("cpu").reshape(-1).tolist()]
    return {x for x in flat if 0 < x < total}


def seq_idx_cuts(seq_idx: Any, length: int) -> set[int]:
    """DataCollatorWithFlattening(return_seq_idx=True): the sample index of each token."""
    cuts: set[int] = set()
    for r, row in enumerate(_rows(seq_idx)):
        cuts.update(r * length + i for i in range(1, len(row)) if row[i] != row[i - 1])
    return cuts


def segment_id_cuts(mask2d: Any, length: int) -> set[int] | None:
    """A 2-D attention_mask that holds sample numbers (1, 1, 2, 2, 2, 3 ...: axolotl's multipack and
    LLaMA-Factory's packing) rather than 0/1. None when it holds only 0 and 1."""
    rows = _rows(mask2d)
    if max((max(r) for r in rows if r), default=0) <= 1:
        return None
    cuts: set[int] = set()
    for r, row in enumerate(rows):
        cuts.update(r * length + i for i in range(1, len(row)) if row[i] != row[i - 1] and row[i] != 0)
    return cuts


def allowed_from_mask(mask: Any, true_means_masked: bool = False) -> Any:
    """[B, T, T] booleans, True where query i may attend key j: transformers' 4-D masks are additive
    (0 = attend, a large negative number = not) or boolean (True = attend); Megatron's are boolean with
    True = masked out. The first head is read."""
    import torch

    m = mask[:, 0] if mask.dim() == 4 else mask
    if m.dtype == torch.bool:
        return ~m if true_means_masked else m
    return m == 0


def mask4d_cuts(allowed: Any, length: int) -> tuple[set[int], list[str]]:
    """(cuts, problems) of a 4-D mask: a sample starts at token i when i may not see i - 1; a problem is any
    query that may see a key outside its own block, or a later key (the mask is not block-diagonal
    causal). Rows that attend nothing (padding) are left out."""
    import torch

    cuts: set[int] = set()
    problems: list[str] = []
    for r in range(allowed.shape[0]):
        a = allowed[r].to("cpu")
        t = a.shape[-1]
        live = a.diagonal()
        begins = torch.zeros(t, dtype=torch.bool)
        begins[1:] = live[1:] & ~a.diagonal(offset=-1)  # a[i, i - 1]: may i see the token before it?
        cuts.update(r * length + int(i) for i in begins.nonzero().reshape(-1).tolist())
        seg = begins.long().cumsum(0)
        expected = (seg[:, None] == seg[None, :]) & torch.ones(t, t, dtype=torch.bool).tril()
        wrong = (a != expected) & live[:, None]
        if bool(wrong.any()):
            i, j = (int(x) for x in wrong.nonzero()[0])
            what = "may attend" if a[i, j] else "may not attend"
            problems.append(f"row {r}: query {i} {what} key {j} (not block-diagonal causal)")
    return cuts, problems


def separator_cuts(input_ids: Any, separators: tuple[int, ...], mask2d: Any = None) -> set[int]:
    """A sample starts right after a separator (end-of-sequence) token that is followed by a real token:
    not another separator, not padding. Only a hint: a multi-turn chat template may end each turn with it."""
    if not separators or input_ids is None:
        return set()
    rows = _rows(input_ids)
    keep = _rows(mask2d) if mask2d is not None else None
    length = len(rows[0]) if rows else 0
    seps = set(separators)
    cuts: set[int] = set()
    for r, row in enumerate(rows):
        for i in range(len(row) - 1):
            real = keep is None or (keep[r][i] != 0 and keep[r][i + 1] != 0)  # padding ends no sample
            if row[i] in seps and row[i + 1] not in seps and real:
                cuts.add(r * length + i + 1)
    return cuts


def short(cuts: set[int] | list[int], limit: int = 10) -> str:
    xs = sorted(cuts)
    if len(xs) <= limit:
        return "[" + ", ".join(map(str, xs)) + "]"
    return "[" + ", ".join(map(str, xs[:limit])) + f", ... ({len(xs)} in all)]"
