"""`packlint inspect`: print the launch model — exactly what the rules see."""

from __future__ import annotations

import os
import sys

from packlint.errors import PacklintError


def parse_env_pairs(pairs: list[str] | None) -> dict[str, str]:
    env: dict[str, str] = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name or not name.replace("_", "a").isalnum() or name[0].isdigit():
            raise PacklintError(f"--env expects NAME=VALUE, got {pair!r}")
        env[name] = value
    return env


def add_input_arguments(parser) -> None:
    """--env / --inherit-env: the caller's environment the script is assumed to start with."""
    parser.add_argument(
        "--env",
        action="append",
        metavar="NAME=VALUE",
        default=[],
        help="assume the caller's environment has NAME=VALUE (repeatable)",
    )
    parser.add_argument(
        "--inherit-env", action="store_true", help="assume the current environment is the caller's environment"
    )


def add_known_env_argument(parser) -> None:
    parser.add_argument(
        "--known-env",
        action="append",
        default=[],
        metavar="NAME",
        help="a variable the cluster always sets (value unknown to packlint; repeatable)",
    )


def add_arguments(parser) -> None:
    parser.add_argument("script", help="the launch script ('-' reads stdin)")
    parser.add_argument("--format", choices=["text", "json"], default="text")
    parser.add_argument("--stdin-filename", default=None, help="name to report when reading stdin")
    parser.add_argument("--color", choices=["auto", "always", "never"], default="auto")
    add_input_arguments(parser)
    add_known_env_argument(parser)
    from packlint.cli.codebase import add_code_arguments

    add_code_arguments(parser, cache=False)
    parser.epilog = "Arguments after `--` are the script's positional arguments."


def run(args) -> int:
    from packlint.api import inspect_script

    env = parse_env_pairs(args.env)
    text = None
    path = args.script
    display = None
    if path == "-":
        from packlint.safe_io import read_stdin_bounded
        from packlint.source import MAX_SCRIPT_BYTES

        text = read_stdin_bounded(MAX_SCRIPT_BYTES, sys.stdin.buffer)  # (H22: never unbounded)
        display = args.stdin_filename or "<stdin>"
        path = args.stdin_filename or "<stdin>"
    known_env = tuple(n.strip() for v in getattr(args, "known_env", []) or [] for n in v.split(",") if n.strip())
    from packlint import scope

    scope.allow_outside(bool(getattr(args, "allow_outside", False)))
    scope.set_checked([] if text is not None else [path])
    from packlint.cli.codebase import code_settings
    from packlint.configs.hydra import set_code_bases

    named = code_settings(args)[0]
    scope.named_code_bases(named)
    set_code_bases(named)
    try:
        model = inspect_script(
            path,
            env=env,
            inherit_env=args.inherit_env,
            args=args.script_args,
            known_env=known_env,
            text=text,
            display_path=display,
        )
    finally:
        set_code_bases(())
    if not args.no_code_base:
        from packlint.cli.codebase import add_code_resolution, inspect_code_options

        add_code_resolution(model, None if text is not None else path, inspect_code_options(args, path))
    redact_foreign(model)
    if args.format == "json":
        import json

        sys.stdout.write(json.dumps(model, indent=2, ensure_ascii=False) + "\n")  # one write: fast
    else:
        from packlint.reporters.inspect_text import render

        force = {"always": True, "never": False}.get(args.color)
        if force is None:
            force = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        render(model, sys.stdout, color=force)
    return 0


def _rule_setting_names() -> set[str]:
    """The config keys the rule table reads (`setting('KEY')`, `setting_given('KEY')` in rules/*.toml)."""
    import re

    from packlint.rule_table import builtin_rule_files
    from packlint.safe_io import CONFIG_LIMIT, read_regular

    names: set[str] = set()
    for path in builtin_rule_files():
        data = read_regular(path, CONFIG_LIMIT) or b""
        for m in re.finditer(rb"""setting(?:_given)?\(\s*['"](?:(?:main|deepspeed|accelerate):)?([^'"]+)['"]""", data):
            names.add(m.group(1).decode("utf-8", "replace"))
    return names


def redact_foreign(node, names: set[str] | None = None) -> set[str] | None:
    """`inspect` never prints a whole file from outside the checkout (read only with --allow-outside):
    of such a file's settings, only the keys a rule reads are shown; the others are dropped and counted."""
    if isinstance(node, list):
        for item in node:
            names = redact_foreign(item, names)
        return names
    if not isinstance(node, dict):
        return names
    files, settings = node.get("files"), node.get("settings")
    if isinstance(files, list) and isinstance(settings, dict):
        foreign = {f.get("file") for f in files if isinstance(f, dict) and f.get("foreign")}
        if foreign:
            names = _rule_setting_names() if names is None else names
            hidden = [k for k, v in settings.items() if isinstance(v, dict) and v.get("file") in foreign]
            hidden = [k for k in hidden if not any(k == n or k.startswith(n + ".") for n in names)]
            for k in hidden:
                del settings[k]
            if hidden:
                node["not_shown"] = f"{len(hidden)} keys of files outside the checkout that no rule reads"
    for value in node.values():
        if isinstance(value, (dict, list)):
            names = redact_foreign(value, names)
    return names
