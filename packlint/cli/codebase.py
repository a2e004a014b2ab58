"""`packlint code-base DIR [PROGRAM]`: print what packlint learned from the code a launch runs — the
flag schema (every flag with its type, choices and where it is defined; closed or open and why) and
the environment variables the code reads (file:line, how the value is parsed). The way to debug a
code-base finding.

Also the command-line options every command that reads code shares (--code-base, --path-map,
--no-code-base, --no-cache) and the `code` entry `packlint inspect` adds to each launch.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from packlint.errors import PacklintError
from packlint.model_view import as_model, launches

if TYPE_CHECKING:
    from packlint.codebase.model import CodeFacts, ProgramResolution


def add_code_arguments(parser, cache: bool = True) -> None:
    """The options that say where the launched code is (shared by check, run, config, inspect)."""
    parser.add_argument(
        "--code-base",
        action="append",
        default=[],
        metavar="DIR",
        help="a checkout of the code the scripts launch (repeatable; default: the checkout each script lives in)",
    )
    parser.add_argument(
        "--path-map",
        action="append",
        default=[],
        metavar="PREFIX=DIR",
        help="read paths under PREFIX (a container path such as /workspace/PROJ) from DIR (repeatable)",
    )
    parser.add_argument("--no-code-base", action="store_true", help="do not look for or read the launched code")
    parser.add_argument(
        "--allow-outside",
        action="store_true",
        help="read the config and sourced files a launch names outside the checkout (default: they are "
        "named, not read; their values are unknown)",
    )
    if cache:
        parser.add_argument(
            "--no-cache",
            action="store_true",
            help="no cache at all: read the code again (no code-base facts cache) and compile the rule table again",
        )


def parse_path_maps(values: list[str] | None) -> list[tuple[str, str]]:
    maps = []
    for v in values or []:
        prefix, sep, local = v.partition("=")
        if not sep or not prefix or not local:
            raise PacklintError(f"--path-map expects PREFIX=DIR, got {v!r}")
        maps.append((prefix.rstrip("/") or "/", os.path.abspath(local)))
    return maps


def code_settings(args) -> tuple[list[str], list[tuple[str, str]]]:
    """(code-base dirs, path maps) from the command line; a missing directory is a usage error."""
    dirs = []
    for d in getattr(args, "code_base", None) or []:
        if not os.path.isdir(d):
            raise PacklintError(f"--code-base {d}: no such directory")
        dirs.append(os.path.abspath(d))
    return dirs, parse_path_maps(getattr(args, "path_map", None))


def inspect_code_options(args, script_path: str):
    """The code options for `inspect`: command line over the script's configuration file."""
    from packlint.config import CliSettings, Resolver

    code_bases, path_maps = code_settings(args)
    cli = CliSettings(code_bases=code_bases, path_maps=path_maps, code_reading=not args.no_code_base)
    try:
        settings = Resolver(cli).settings_for(script_path if os.path.exists(script_path) else ".")
    except PacklintError:
        from packlint.config import merge

        settings = merge(None, cli)
    return settings.code_options()


def add_code_resolution(model: Mapping[str, Any], script_path: str | None, options) -> None:
    """Add `code` to each launch of an inspect model: how its program was resolved to a source file
    (ProgramResolution.to_json(): program, file, found, how, detail, root, roots, pythonpath)."""
    from packlint.codebase import CodeSession

    session = CodeSession(script_path, options)
    for launch in launches(as_model(model)):
        res = session.resolution(launch)
        if res is not None:
            launch["code"] = res.to_json()


# ---------------------------------------------------------------------------------------------- command


def add_arguments(parser) -> None:
    parser.add_argument("dir", metavar="DIR", help="the code base (a checkout)")
    parser.add_argument(
        "program",
        metavar="PROGRAM",
        nargs="?",
        default=None,
        help="the program as a launch names it (train.py, a/b/train.py, -m pkg.mod, a container "
        "path); default: every top-level *.py of DIR with a __main__ block",
    )
    parser.add_argument("--format", choices=["text", "json"], default="text")
    parser.add_argument(
        "--path-map",
        action="append",
        default=[],
        metavar="PREFIX=DIR",
        help="read paths under PREFIX from DIR (repeatable)",
    )
    parser.add_argument(
        "--pythonpath", action="append", default=[], metavar="DIR", help="a PYTHONPATH entry of the launch (repeatable)"
    )
    parser.add_argument("--no-cache", action="store_true", help="read the code again instead of using the cache")


def _programs_in(root: str) -> list[str]:
    from packlint.codebase.filefacts import MAX_SOURCE_BYTES
    from packlint.safe_io import read_regular

    out: list[str] = []
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return out
    for n in names:
        if n.endswith(".py"):
            data = read_regular(os.path.join(root, n), MAX_SOURCE_BYTES)
            if data is not None and b"__main__" in data:
                out.append(n)
    return out


def run(args) -> int:
    from packlint.codebase import CodeOptions, facts_for_program, resolve_program

    root = args.dir
    if not os.path.isdir(root):
        raise PacklintError(f"{root}: no such directory")
    root = os.path.abspath(root)
    options = CodeOptions([root], parse_path_maps(args.path_map), True, not args.no_cache)
    programs = [args.program] if args.program else _programs_in(root)
    if args.program and not args.program.startswith("-m") and os.path.isfile(args.program):
        programs = [os.path.abspath(args.program)]
    results: list[tuple[str, CodeFacts | None, ProgramResolution]] = []
    for prog in programs:
        pp = [os.path.abspath(p) for p in args.pythonpath]
        res = resolve_program(prog, os.path.join(root, "__packlint__"), options, pp)
        if res.file is None:  # (not res.found)
            results.append((prog, None, res))
            continue
        results.append((prog, facts_for_program(res.file, res.roots, res.pythonpath, options, res), res))
    if args.program and results and results[0][1] is None:
        res = results[0][2]
        if args.format == "json":
            import json

            sys.stdout.write(json.dumps({"root": root, "programs": [{"resolution": res.to_json()}]}, indent=2) + "\n")
        print(f"packlint: error: {args.program}: not found ({res.detail})", file=sys.stderr)
        return 2
    if args.format == "json":
        import json

        doc = {
            "root": root,
            "programs": [f.to_json() if f is not None else {"resolution": r.to_json()} for _, f, r in results],
        }
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        return 0
    out = sys.stdout.write
    if not args.program:
        out(f"{root}: {len(programs)} program(s) with a __main__ block\n")
        for prog, facts, _res in results:
            out(f"  {prog}: {_summary(facts)}\n")
        out("(give PROGRAM for its flags and env reads)\n")
        return 0
    for _prog, facts, _res in results:
        render_text(facts, root, out)
    return 0


def _summary(facts) -> str:
    if facts is None:
        return "not read"
    s = facts.schema
    schema = (
        "no argparse parser found" if s is None else (f"{len(s.specs())} flags, {'closed' if s.closed else 'open'}")
    )
    return f"{schema}; {len(facts.env_names())} env names read; {len(facts.files)} files"


def _rel(path: str | None, root: str) -> str:
    if not path:
        return "?"
    try:
        r = os.path.relpath(path, root)
    except ValueError:
        return path
    return path if r.startswith("..") else r


def render_text(facts, root: str, out) -> None:
    res = facts.resolution
    out(f"program: {_rel(res.file, root)}  ({res.detail})\n")
    if res.pythonpath:
        out(f"PYTHONPATH: {':'.join(res.pythonpath)}\n")
    s = facts.schema
    if s is None:
        out("flag schema: no argparse parser found (no flag can be checked)\n")
    else:
        state = (
            "closed: an unknown flag is an 'unrecognized arguments' error"
            if s.closed
            else "open: " + "; ".join(_relmsg(r, root) for r in s.open_reasons)
        )
        out(f"flag schema: {len(s.specs())} flags, {state}\n")
        out(
            f"  parser: {_relmsg(s.parser_origin or '?', root)}, allow_abbrev={s.allow_abbrev}, "
            f"conflict_handler={s.conflict_handler}\n"
        )
        for n in s.notes:
            out(f"  note: {_relmsg(n, root)}\n")
        for spec in s.specs():
            parts = [", ".join(spec.options)]
            if spec.action != "store":
                parts.append(spec.action)
            elif spec.type != "str":
                parts.append(spec.type)
            if spec.nargs is not None:
                parts.append(f"nargs={spec.nargs}")
            if spec.choices is not None:
                shown = "|".join(spec.choices)
                parts.append("choices=" + (shown if len(shown) <= 60 else shown[:57] + "..."))
            elif spec.choices_note:
                parts.append("choices: computed")
            if spec.default is not None:
                parts.append(f"default={spec.default}")
            line = "  " + "  ".join(parts) + f"  [{_rel(spec.origin_file, root)}:{spec.origin_line}]"
            if spec.generated_from:
                line += f" (from {spec.generated_from.split(':', 1)[-1]})"
            if spec.condition:
                line += f" ({spec.condition})"
            if spec.deprecated:
                line += f" DEPRECATED ({spec.deprecated})"
            out(line + "\n")
    names = facts.env_names()
    computed = [r for r in facts.env_reads if r.computed]
    out(f"env reads: {len(names)} names, {len(computed)} computed-name reads, in {len(facts.files)} files\n")
    by_name: dict[str, list] = {}
    for r in facts.env_reads:
        by_name.setdefault(("*" + r.name + "*") if r.computed else r.name, []).append(r)
    for name in sorted(by_name):
        reads = by_name[name]
        where = ", ".join(f"{_rel(r.file, root)}:{r.line}" + (f" {r.parse}" if r.parse else "") for r in reads[:3])
        more = f" (+{len(reads) - 3} more)" if len(reads) > 3 else ""
        if name.startswith("*"):
            label = f"{name[1:-1]}* (computed name)" if name[1:-1] else "(computed name: any variable)"
        else:
            label = name
        out(f"  {label}  {where}{more}\n")
    if facts.skipped:
        out(f"skipped files ({len(facts.skipped)}):\n")
        for sk in facts.skipped:
            out(f"  {_rel(sk.file, root)}: {sk.reason}\n")
    if facts.unresolved_imports:
        shown = ", ".join(facts.unresolved_imports[:30])
        more = f" (+{len(facts.unresolved_imports) - 30} more)" if len(facts.unresolved_imports) > 30 else ""
        out(f"imports not found on disk (their env reads are not seen): {shown}{more}\n")


def _relmsg(msg: str, root: str) -> str:
    return msg.replace(root + os.sep, "")
