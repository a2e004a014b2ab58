"""`packlint probe`: run the runtime probe on a script's launch (or on settings given as flags).

The static rules say a configuration should be right; the probe builds the packed batch the way
the training stack would and runs one real attention forward to show it. torch is imported only
inside `run`, so `packlint check` never pays for it and a missing torch is one line, exit 2.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from packlint.cli.inspect import add_input_arguments, parse_env_pairs
from packlint.errors import EXIT_USAGE

if TYPE_CHECKING:
    from runtime_probe.launches import ModelProbeResult
    from runtime_probe.probe import ProbeReport


def add_arguments(parser) -> None:
    from runtime_probe.cli import add_probe_arguments

    parser.add_argument("script", nargs="?", help="the launch script; without it, give the settings as flags")
    add_input_arguments(parser)
    add_probe_arguments(parser)
    parser.epilog = (
        "Arguments after `--` are the script's positional arguments. Exit 0: proven (or no packing "
        "configured, or not probed); 1: packed samples see each other (or a check failed); 2: usage error "
        "or no usable kernel; 3: packed differs from alone without cross-sample leakage; 4: cannot decide."
    )


def _error(message: str) -> int:
    print(f"packlint: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def run(args) -> int:
    from runtime_probe.cli import emit, overrides_from_args, settings_from_args, write_plots
    from runtime_probe.settings import ProbeUsageError

    result: ModelProbeResult | ProbeReport
    try:
        if args.script:
            if getattr(args, "megatron_gpt", None) is not None:
                return _error("--megatron-gpt probes a tiny GPTModel from flags alone: give it no SCRIPT")
            from packlint.api import inspect_script
            from runtime_probe.launches import probe_model

            overrides = overrides_from_args(args)
            try:
                model = inspect_script(
                    args.script, env=parse_env_pairs(args.env), inherit_env=args.inherit_env, args=args.script_args
                )
            except (NotImplementedError, ImportError) as exc:
                return _error(
                    f"{args.script}: the launch model is not available ({exc}); "
                    "give the settings as flags instead (--bmr, --packed-data, --mbs, ...)"
                )
            result = probe_model(model, **overrides)
        else:
            if args.env or args.inherit_env or args.script_args:
                return _error("--env, --inherit-env and script arguments need a SCRIPT")
            from runtime_probe.launches import run_settings

            result = run_settings(settings_from_args(args))
        plotted = write_plots(result, getattr(args, "plot", None))
    except ProbeUsageError as exc:
        return _error(str(exc))
    emit(result, args.format)
    for line in plotted:
        print(line, file=sys.stderr)
    return result.exit_code
