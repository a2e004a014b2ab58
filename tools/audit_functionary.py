"""Audit of the guard on MeetKai/functionary's own packing (docs/accuracy.md, "The guard on a repository's
own packing code"): `pack_data_points_FA` packs the samples of a group into one row whose attention_mask
holds sample numbers (1, 1, ..., 2, 2, ..., 0 padding) and passes no position_ids.

Run from a directory holding functionary's `functionary/train/packing/packed_dataset.py` (copied out of a
checkout or mirror; it is not shipped here):  python /path/to/packlint/tools/audit_functionary.py
Needs torch, transformers and accelerate (packlint[probe]).
"""

import pathlib
import sys
import tempfile
import types

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), "."]

import test_guard as tg  # noqa: E402  (the tests' tiny Llama and one-step Trainer run)
import torch  # noqa: E402
import transformers  # noqa: E402
from packed_dataset import pack_data_points_by_length, pack_data_points_FA  # noqa: E402  (functionary's)
from transformers.masking_utils import create_causal_mask  # noqa: E402


def main() -> None:
    tok = types.SimpleNamespace(pad_token_id=0, padding_side="right")
    g = torch.Generator().manual_seed(1)
    points = [
        {"input_ids": [1, *torch.randint(3, 64, (n,), generator=g).tolist(), 2]} for n in (7, 5, 9, 6, 8, 4, 10, 3)
    ]
    for p in points:
        p["labels"] = list(p["input_ids"])
    groups = pack_data_points_by_length([len(p["input_ids"]) for p in points], 40)
    packed = [pack_data_points_FA([points[i] for i in grp], tok, 40) for grp in groups]
    print("transformers", transformers.__version__, "groups", groups)
    print("attention_mask row 0", packed[0]["attention_mask"].tolist())
    tg.samples = lambda: packed
    for attn in ("sdpa", "eager"):
        data, _, _ = tg.train_one_step(pathlib.Path(tempfile.mkdtemp()), tg_collate, attn, mode="warn")
        print(
            f"{attn}: {data['verdict']} leakage {data['leakage']:.3g} (tolerance {data['measured']['tolerance']:.2g})"
        )
    model = tg.tiny()
    model.config._attn_implementation = "flash_attention_2"
    for name, am in (
        ("padded", packed[0]["attention_mask"][None]),
        ("full row", packed[0]["attention_mask"][None].clamp(min=1)),
    ):
        got = create_causal_mask(
            config=model.config,
            inputs_embeds=torch.zeros(1, am.shape[1], 32),
            attention_mask=am,
            past_key_values=None,
            position_ids=torch.arange(am.shape[1])[None],
        )
        print(
            f"flash_attention_2, {name}: the attention path gets",
            None if got is None else (got.dtype, got.unique().tolist()),
        )


def tg_collate(features):
    return {k: torch.stack([f[k] for f in features]) for k in features[0]}


if __name__ == "__main__":
    main()
