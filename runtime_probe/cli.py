"""`python -m runtime_probe` and the options `packlint probe` shares with it.

Argument parsing imports no torch: a bad --lengths or a missing torch is reported in one line
(exit 2) before anything heavy loads.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from runtime_probe.gpt_settings import GPT_CASES, GPTProbeSettings
from runtime_probe.hf_settings import HF_MODES, HF_STACKS, HFProbeSettings
from runtime_probe.settings import (
    BACKENDS,
    DEVICES,
    DTYPES,
    ProbeSettings,
    ProbeUsageError,
    parse_int_list,
    parse_lengths,
)

EXIT_USAGE = 2


def add_probe_arguments(parser: argparse.ArgumentParser) -> None:
    """The probe's own options. Every default is None so that only what the user typed overrides
    what the script says."""
    g = parser.add_argument_group("configuration (without a script, or overriding the script)")
    g.add_argument("--bmr", metavar="VALUE", help="OFFLINE_PACKING_BMR as the process sees it (Gate 1)")
    g.add_argument("--packed-data", metavar="VALUE", help="OFFLINE_PACKED_DATA as the process sees it (Gate 2)")
    g.add_argument(
        "--packing-pretrain-data",
        action="store_const",
        const="--packing-pretrain-data",
        dest="packing_flag",
        help="online packing flag (opens Gate 2)",
    )
    g.add_argument(
        "--packing-sft-data",
        action="store_const",
        const="--packing-sft-data",
        dest="packing_flag",
        help="online packing flag (opens Gate 2, forces MBS to 1)",
    )
    g.add_argument("--mbs", "--micro-batch-size", dest="mbs", metavar="N", help="micro-batch size")
    g.add_argument(
        "--lengths", metavar="L1,L2,...", help="true sub-sample lengths (default: 8 uneven sub-samples, 4096 tokens)"
    )
    g.add_argument("--seq-length", metavar="N", help="--seq-length of the run (the row may not exceed it)")
    g.add_argument("--tp", metavar="N", help="tensor model parallel size")
    g.add_argument("--cp", metavar="N", help="context parallel size")
    g.add_argument(
        "--sequence-parallel", action="store_const", const=True, default=None, help="re-enact sequence-parallel padding"
    )
    g.add_argument(
        "--cu-seqlens",
        metavar="C0,C1,...",
        help="hand the kernel these boundaries instead of the re-enacted ones (tests a pipeline's own)",
    )
    h = parser.add_argument_group("HF stacks (TRL, LLaMA-Factory, axolotl, ms-swift, OpenRLHF, verl)")
    h.add_argument("--stack", choices=HF_STACKS, help="probe an HF-stack launch of this stack")
    h.add_argument(
        "--hf-mode",
        dest="mode",
        choices=HF_MODES,
        help="how the collator packs: position_ids (reset, no mask), position_ids+mask, block4d, concat, none",
    )
    h.add_argument(
        "--attn-implementation",
        dest="attn_implementation",
        metavar="NAME",
        help="sdpa, eager, flex_attention, flash_attention_2 (default: what the launch says, else sdpa)",
    )
    _add_hf_model_arguments(parser, h)
    m = parser.add_argument_group("Megatron-Core real model")
    m.add_argument(
        "--megatron-gpt",
        dest="megatron_gpt",
        nargs="?",
        const="packed",
        choices=GPT_CASES,
        help="a tiny Megatron-Core GPTModel: THD packed vs alone (packed, the default), or the LLaVA "
        "image-expansion case with cu_seqlens in collapsed or expanded space",
    )
    m.add_argument("--image-tokens", metavar="N", help="LLaVA case: embeddings per image placeholder (default 8)")
    k = parser.add_argument_group("kernel")
    k.add_argument("--device", choices=DEVICES, help="where to run (default auto: cuda if available)")
    k.add_argument("--backend", choices=BACKENDS, help="attention kernel (default auto)")
    k.add_argument("--dtype", choices=DTYPES + ("float64",), help=_DTYPE_HELP)
    k.add_argument("--heads", metavar="N", help="attention heads (default 4)")
    k.add_argument("--head-dim", metavar="N", help="head dimension (default 64)")
    k.add_argument("--seed", metavar="N", help="random seed (default 0)")
    k.add_argument(
        "--megatron-layer",
        action="store_const",
        const=True,
        default=None,
        help="run a real Megatron-Core TransformerLayer thd path around the kernel",
    )
    k.add_argument(
        "--no-second-opinion",
        dest="second_opinion",
        action="store_const",
        const=False,
        default=None,
        help="on CPU, skip the float64 reference-attention cross-check",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")


_DTYPE_HELP = "default: bfloat16 on cuda, float32 on cpu (HF probe: float64 on cpu; its verdict is always float64)"


def _add_hf_model_arguments(parser: argparse.ArgumentParser, h) -> None:
    """The HF probe's model (--model, --model-type), --use-cache (which settings the verdict covers)
    and --plot (the leakage matrix as an image)."""
    h.add_argument("--model", dest="model_path", metavar="PATH", help="model path (a local dir's config.json is read)")
    h.add_argument("--model-type", dest="model_type", metavar="TYPE", help="architecture, e.g. llama, qwen2")
    h.add_argument(
        "--use-cache",
        dest="use_cache",
        choices=("auto", "false", "true", "both"),
        help="the use_cache the verdict covers (default auto: false for a stack's training forward, both for "
        "--stack transformers); both settings are always measured",
    )
    parser.add_argument(
        "--plot",
        metavar="FILE",
        help="HF probe: write the sample x sample leakage matrix as an image (.svg, or .png)",
    )


def _int(value: Any, flag: str, minimum: int = 1) -> int:
    try:
        v = int(str(value))
    except ValueError:
        raise ProbeUsageError(f"{flag} {value!r}: expected an integer") from None
    if v < minimum:
        raise ProbeUsageError(f"{flag} {v}: must be at least {minimum}")
    return v


def overrides_from_args(args: argparse.Namespace) -> dict:
    """The settings the user typed, validated into ProbeSettings field values."""
    o: dict[str, Any] = {}
    for name in (
        "bmr",
        "packed_data",
        "packing_flag",
        "device",
        "backend",
        "dtype",
        "sequence_parallel",
        "megatron_layer",
        "second_opinion",
        "stack",
        "mode",
        "attn_implementation",
        "model_path",
        "model_type",
        "use_cache",
    ):
        v = getattr(args, name, None)
        if v is not None:
            o[name] = v
    ints = {
        "mbs": "--mbs",
        "seq_length": "--seq-length",
        "tp": "--tp",
        "cp": "--cp",
        "heads": "--heads",
        "head_dim": "--head-dim",
    }
    for name, flag in ints.items():
        v = getattr(args, name, None)
        if v is not None:
            o[name] = _int(v, flag, 2 if name == "seq_length" else 1)
    if getattr(args, "seed", None) is not None:
        o["seed"] = _int(args.seed, "--seed", 0)
    if getattr(args, "lengths", None) is not None:
        o["lengths"] = parse_lengths(args.lengths)
    if getattr(args, "cu_seqlens", None) is not None:
        o["cu_seqlens"] = parse_int_list(args.cu_seqlens, "--cu-seqlens")
    return o


def is_hf(args: argparse.Namespace) -> bool:
    names = ("stack", "mode", "attn_implementation", "model_path", "model_type", "use_cache")
    return any(getattr(args, n, None) is not None for n in names)


def hf_settings_from_args(args: argparse.Namespace) -> HFProbeSettings:
    """An HF-stack probe from flags alone (--stack/--hf-mode/--attn-implementation ...)."""
    o = overrides_from_args(args)
    s = HFProbeSettings()
    if o.get("stack") and not o.get("mode"):
        raise ProbeUsageError("--stack without --hf-mode: say how the collator packs (or give a SCRIPT)")
    for k in (
        "stack",
        "mode",
        "attn_implementation",
        "model_path",
        "model_type",
        "device",
        "dtype",
        "seed",
        "lengths",
        "use_cache",
    ):
        if o.get(k) is not None:
            setattr(s, k, o[k])
    s.validate()
    return s


def gpt_settings_from_args(args: argparse.Namespace) -> GPTProbeSettings:
    """The Megatron-Core GPTModel probe from flags (--megatron-gpt [CASE])."""
    o = overrides_from_args(args)
    s = GPTProbeSettings(case=args.megatron_gpt)
    if getattr(args, "image_tokens", None) is not None:
        s.image_tokens = _int(args.image_tokens, "--image-tokens", 2)
    for k in ("lengths", "backend", "device", "dtype", "seed", "heads", "head_dim"):
        if o.get(k) is not None:
            setattr(s, k, o[k])
    s.validate()
    return s


def settings_from_args(args: argparse.Namespace) -> ProbeSettings | HFProbeSettings | GPTProbeSettings:
    """Settings from flags alone. Without any gate there is nothing to probe: say so rather than
    report "not packed" for a configuration the user never described."""
    if getattr(args, "megatron_gpt", None) is not None:
        return gpt_settings_from_args(args)
    if is_hf(args):
        return hf_settings_from_args(args)
    if all(getattr(args, n, None) is None for n in ("bmr", "packed_data", "packing_flag")):
        raise ProbeUsageError(
            "nothing to probe: give a SCRIPT, or the gates with --bmr/--packed-data "
            "(or --packing-pretrain-data/--packing-sft-data), or an HF stack's --hf-mode/--attn-implementation"
        )
    s = ProbeSettings()
    for k, v in overrides_from_args(args).items():
        if k in ("stack", "mode", "attn_implementation", "model_path", "model_type", "use_cache"):
            continue
        setattr(s, k, v)
    s.validate()
    return s


def write_plots(result, path: str | None) -> list[str]:
    """--plot FILE: each HF probe's leakage matrix as an image (FILE, or FILE-2.svg ... for a script
    with several probes). Returns what was written, for the report's last lines."""
    if not path:
        return []
    from runtime_probe.leak_plot import write_plot

    reports = [rep for _, rep in result.probes] if hasattr(result, "probes") else [result]
    done = []
    k = 0
    for rep in reports:
        lk = rep.leakage or {}
        if not lk.get("matrix"):
            continue
        k += 1
        root, ext = os.path.splitext(path)
        target = path if k == 1 else f"{root}-{k}{ext}"
        try:
            how = write_plot(target, lk["matrix"], lk.get("bound") or 0.0, (rep.headline or rep.verdict)[:90])
        except (OSError, ValueError) as exc:
            raise ProbeUsageError(f"--plot: {exc}") from None
        done.append(f"leakage matrix written to {target} ({how})")
    if not done:
        done.append(f"--plot {path}: no leakage matrix to draw (only the HF probe measures one)")
    return done


def emit(result, fmt: str) -> None:
    """Print a ProbeReport or ModelProbeResult in the requested format."""
    import json

    if fmt == "json":
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(result.render_text())


def main(argv: list[str] | None = None, prog: str = "runtime_probe") -> int:
    """`python -m runtime_probe --bmr 1 --packed-data 1 --mbs 1 [--lengths ...]`: probe one
    configuration given on the command line. Exit 0 proven, 1 a check failed, 2 usage/no kernel."""
    parser = argparse.ArgumentParser(
        prog=prog, description="Prove (or refute with a number) that packed attention is block-diagonal causal."
    )
    add_probe_arguments(parser)
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:
        return EXIT_USAGE if exc.code not in (0, None) else 0
    try:
        settings = settings_from_args(args)
        from runtime_probe.launches import run_settings

        report = run_settings(settings)
        plotted = write_plots(report, args.plot)
    except ProbeUsageError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    emit(report, args.format)
    for line in plotted:
        print(line, file=sys.stderr)
    return report.exit_code
