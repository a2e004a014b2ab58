"""The runtime probe's whole matrix in one command: every attention backend x {correct, leaking} x dtype,
the Megatron-Core layer, the Megatron-Core GPTModel (THD packed) and LLaVAModel (collapsed/expanded
cu_seqlens; real model and re-enacted), the HF-stack mode (each attn_implementation x collator mode)
and a hybrid linear-attention model (qwen3_next) packed with position_ids. Writes a JSON file and a markdown table.

    python benchmarks/probe_gpu.py                  # on a CUDA machine: the full matrix
    python benchmarks/probe_gpu.py --cpu            # smoke mode on CPU (small sizes; what the tests run)
    python benchmarks/probe_gpu.py --only hf --backends sdpa,eager   # a part of it
    python benchmarks/probe_gpu.py --out DIR        # where probe_gpu-<device>.json / .md go (default benchmarks/out)

Every cell is a real probe (runtime_probe's own entry points). A backend that is not installed or
cannot run here (flash-attn, Transformer Engine, flash_attention_2 without flash-attn) is listed as
skipped with the reason, and the rest still runs: on a GPU without flash-attn or TE that is aten
flash, compiled flex and SDPA. A cell passes when its verdict is the one the configuration implies:
PROVEN for a correct one, a leak > 0 for a leaking one. The exit status is 1 if any cell that ran
disagrees, else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _cells(cpu: bool):
    """(kind, name, config, dtype, expected, settings) for every cell of the matrix."""
    from runtime_probe.backends import CPU_ORDER, GPU_ORDER
    from runtime_probe.gpt_settings import GPTProbeSettings
    from runtime_probe.hf_settings import HFProbeSettings
    from runtime_probe.settings import ProbeSettings

    device = "cpu" if cpu else "cuda"
    dtypes = ["float32"] if cpu else ["bfloat16", "float16", "float32"]
    backends = list(CPU_ORDER) if cpu else list(GPU_ORDER)
    small = {"lengths": [16, 24, 9, 31], "heads": 2, "head_dim": 16} if cpu else {}
    gates = {"correct": ("1", "1"), "leaking": ("1", "0")}
    for dtype in dtypes:
        for b in backends:
            for config, (bmr, packed) in gates.items():
                s = ProbeSettings(bmr=bmr, packed_data=packed, backend=b, device=device, dtype=dtype, **small)
                s.second_opinion = cpu
                yield "kernel", b, config, dtype, "proven" if config == "correct" else "leak", s
    layer_backend = "sdpa" if cpu else "auto"
    for config, (bmr, packed) in gates.items():
        s = ProbeSettings(bmr=bmr, packed_data=packed, backend=layer_backend, device=device, dtype=dtypes[0], **small)
        s.megatron_layer = True
        yield "megatron-layer", layer_backend, config, dtypes[0], "proven" if config == "correct" else "leak", s
    gpt_small = (
        {"lengths": [6, 4, 7], "image_tokens": 4} if cpu else {"lengths": [300, 120, 520, 260], "image_tokens": 64}
    )
    gpt_cases = (
        ("packed", False, "correct"),
        ("llava-expanded", False, "correct"),  # the real LLaVAModel: vision encoder, projector, _preprocess_data
        ("llava-collapsed", False, "leaking"),
        ("llava-expanded", True, "correct"),  # the expansion re-enacted on GPTModel (the fallback)
        ("llava-collapsed", True, "leaking"),
    )
    for case, reenact, config in gpt_cases:
        s = GPTProbeSettings(
            case=case, device=device, dtype=dtypes[0], backend=layer_backend, reenact=reenact, **gpt_small
        )
        name = case if case == "packed" else f"{case} ({'re-enacted' if reenact else 'LLaVAModel'})"
        yield "megatron-gpt", name, config, dtypes[0], "proven" if config == "correct" else "leak", s
    attns = ["sdpa", "eager", "flex_attention"] + ([] if cpu else ["flash_attention_2", "flash_attention_3"])
    hf_modes = {"position_ids": "correct", "block4d": "correct", "position_ids+mask": "leaking", "concat": "leaking"}
    hf_small = {"lengths": [9, 5, 12, 7]} if cpu else {"lengths": [130, 70, 190, 110]}
    for dtype in dtypes:
        for attn in attns:
            for mode, config in hf_modes.items():
                if cpu and attn == "flex_attention" and mode in ("block4d", "concat"):
                    continue  # uncompiled flex on CPU is slow; the two position_ids modes show both verdicts
                s = HFProbeSettings(
                    mode=mode, attn_implementation=attn, device=device, dtype=dtype, use_cache="false", **hf_small
                )
                yield "hf", f"{attn} ({mode})", config, dtype, "proven" if config == "correct" else "leak", s
    # a hybrid linear-attention model (Gated DeltaNet + full attention) packed with position_ids resets:
    # the mask isolates the attention layers, but no cu_seqlens reach the Gated DeltaNet layers in this
    # mode, so their state runs across the row (docs/probe.md, "Hybrid linear-attention models")
    for attn in ["sdpa"] + ([] if cpu else ["flash_attention_2"]):
        s = HFProbeSettings(
            mode="position_ids",
            attn_implementation=attn,
            model_type="qwen3_next",
            device=device,
            dtype=dtypes[0],
            use_cache="false",
            **hf_small,
        )
        yield "hf", f"{attn} (position_ids, qwen3_next)", "leaking", dtypes[0], "leak", s


def _run(settings):
    import torch

    from runtime_probe.launches import run_settings

    # each cell compiles its own kernels: one process running the whole matrix otherwise reaches dynamo's
    # recompile limit (8) part-way and the later "compiled" flex cells silently run uncompiled
    torch.compiler.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_settings(settings)


def run_matrix(cpu: bool, only: list[str] | None = None, backends: list[str] | None = None, progress=None) -> dict:
    """The matrix; `progress(doc)` after each cell (the files stay current if the run is cut off)."""
    import torch

    from runtime_probe.settings import ProbeUsageError

    rows: list[dict] = []
    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(0) if not cpu and torch.cuda.is_available() else "cpu",
        "mode": "cpu smoke" if cpu else "gpu",
    }
    for mod in ("transformers", "megatron.core", "flash_attn", "transformer_engine"):
        try:
            m = __import__(mod, fromlist=["__version__"])
            env[mod] = getattr(m, "__version__", "?")
        except Exception:  # noqa: BLE001 - not installed is a fact to record
            env[mod] = None
    doc = {"env": env, "rows": rows}
    for kind, name, config, dtype, expected, s in _cells(cpu):
        if (only and kind not in only) or (backends and not any(b in name for b in backends)):
            continue
        row = {"kind": kind, "backend": name, "config": config, "dtype": dtype, "expected": expected}
        t = time.perf_counter()
        try:
            r = _run(s)
        except ProbeUsageError as exc:
            row.update(status="skipped", reason=str(exc))
            rows.append(row)
            progress and progress(doc)
            continue
        except Exception as exc:  # noqa: BLE001 - one broken cell must not hide the others
            row.update(status="error", reason=f"{type(exc).__name__}: {exc}", trace=traceback.format_exc(limit=3))
            rows.append(row)
            progress and progress(doc)
            continue
        got = "proven" if r.verdict == "proven" else ("leak" if r.leakage and r.leakage["abs"] > 0 else r.verdict)
        err = next((c.value for c in r.checks if c.name.startswith("(i)") and isinstance(c.value, dict)), {})
        row.update(
            status="pass" if got == expected else "FAIL",
            verdict=r.verdict,
            ran=r.backend,
            leakage=(r.leakage or {}).get("abs"),
            max_error=err.get("max_error"),
            tokens=r.tokens,
            forward_s=r.timings_s.get("forward"),
            cell_s=time.perf_counter() - t,
            notes=[n for n in r.notes if n.startswith("backend")],
        )
        per_layer = next((c.value for c in r.checks if c.name == "(iii) per layer"), None)
        if per_layer:  # which modules mix samples, each fed its own packed input (HF mode)
            tol = err.get("tolerance") or 0.0
            row["mixing"] = [
                f"layer {d['layer']} {d['module']} ({d['class']})" for d in per_layer if d["own_leak"] > tol
            ]
            row["notes"].append("mixing: " + (", ".join(row["mixing"]) or "none"))
        rows.append(row)
        progress and progress(doc)
    return doc


def _fmt(x) -> str:
    if x is None:
        return ""
    if isinstance(x, float):
        return "0" if x == 0 else f"{x:.3g}"
    return str(x)


def markdown(doc: dict) -> str:
    env = doc["env"]
    lines = [
        f"Probe matrix ({env['mode']}): {env['device']}, torch {env['torch']}, CUDA {env['cuda']}, "
        f"transformers {env['transformers']}, megatron-core {env['megatron.core']}, flash-attn {env['flash_attn']}, "
        f"TE {env['transformer_engine']}",
        "",
        "| kind | backend | config | dtype | status | verdict | leakage | max err | forward s | note |",
        "|---|---|---|---|---|---|---:|---:|---:|---|",
    ]
    for r in doc["rows"]:
        note = r.get("reason") or "; ".join(r.get("notes") or [])
        note = note.replace("|", "/")[:140]
        lines.append(
            f"| {r['kind']} | {r['backend']} | {r['config']} | {r['dtype']} | {r['status']} | {_fmt(r.get('verdict'))} "
            f"| {_fmt(r.get('leakage'))} | {_fmt(r.get('max_error'))} | {_fmt(r.get('forward_s'))} | {note} |"
        )
    ran = [r for r in doc["rows"] if r["status"] in ("pass", "FAIL")]
    skipped = [r for r in doc["rows"] if r["status"] == "skipped"]
    bad = [r for r in doc["rows"] if r["status"] in ("FAIL", "error")]
    lines += ["", f"{len(ran)} cells ran, {len(skipped)} skipped (not installed / cannot run here), {len(bad)} failed."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpu", action="store_true", help="smoke mode on CPU (small sizes)")
    ap.add_argument("--only", metavar="KINDS", help="comma list of kinds: kernel, megatron-layer, megatron-gpt, hf")
    ap.add_argument("--backends", metavar="NAMES", help="comma list: keep cells whose backend contains one of these")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out"), help="directory for the JSON and markdown")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if not args.cpu:
        import torch

        if not torch.cuda.is_available():
            print("probe_gpu: no CUDA device here; use --cpu for the CPU smoke run", file=sys.stderr)
            return 2
    split = lambda v: [x.strip() for x in v.split(",") if x.strip()] if v else None  # noqa: E731
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "probe_gpu-cpu" if args.cpu else "probe_gpu-cuda"

    def write(doc: dict) -> None:
        for suffix, text in ((".json", json.dumps(doc, indent=2, default=str)), (".md", markdown(doc))):
            tmp = out / f".{stem}{suffix}.tmp"
            tmp.write_text(text)
            os.replace(tmp, out / f"{stem}{suffix}")

    doc = run_matrix(args.cpu, split(args.only), split(args.backends), progress=write)
    write(doc)
    md = markdown(doc)
    print(md)
    print(f"wrote {out / (stem + '.json')} and {out / (stem + '.md')}")
    return 1 if any(r["status"] in ("FAIL", "error") for r in doc["rows"]) else 0


if __name__ == "__main__":
    raise SystemExit(main())
