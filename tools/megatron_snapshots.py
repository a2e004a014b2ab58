#!/usr/bin/env python3
"""Generate rules/megatron_flags.json: the flags of Megatron-LM's root programs in each release.

For each release (by default every `core_vX.Y.Z` tag from core 0.12 on, plus `main`) the script
extracts the release's tree from a Megatron-LM git directory into a temporary directory (`git archive`,
never checking anything out in place), reads each root program (`pretrain_*.py`, `train_rl.py`) with
packlint's own static reader (packlint.codebase: Python `ast`, nothing is imported or executed), and
writes one compact JSON file: per flag, the releases (and, where not all, the programs) it was valid
in, with its action, type, nargs and choices. The JSON is data derived from the code, not code.

    python tools/megatron_snapshots.py --repo /path/to/Megatron-LM/.git [--out rules/megatron_flags.json]
    python tools/megatron_snapshots.py --repo ... --releases core_v0.14.0 core_v0.19.0 main

The file format is described in packlint/codebase/snapshots.py. Run time: a few seconds per release
(the per-file reader cache makes repeated files across programs cheap).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from packlint.codebase import CodeOptions, facts_for_program  # noqa: E402
from packlint.codebase.snapshots import FORMAT, format_ranges  # noqa: E402

PROGRAM_RE = re.compile(r"^(pretrain_[A-Za-z0-9_]+|train_rl)\.py$")
TAG_RE = re.compile(r"^core_v0\.(\d+)\.(\d+)$")
MIN_MINOR = 12


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", repo, *args], check=True, capture_output=True,
                          text=True).stdout


def default_releases(repo: str) -> list[str]:
    tags = []
    for t in git(repo, "tag").split():
        m = TAG_RE.match(t)
        if m and int(m.group(1)) >= MIN_MINOR:
            tags.append((int(m.group(1)), int(m.group(2)), t))
    out = [t for _, _, t in sorted(tags)]
    if git(repo, "rev-parse", "--verify", "--quiet", "main^{commit}").strip():
        out.append("main")
    return out


def extract(repo: str, rev: str, dest: Path) -> list[str]:
    """Extract the parts of `rev` a root program can import; returns the root programs."""
    top = git(repo, "ls-tree", "--name-only", rev).split()
    programs = sorted(p for p in top if PROGRAM_RE.match(p))
    wanted = [p for p in top if p.endswith(".py")] + [d for d in ("megatron", "tasks", "examples", "tools")
                                                        if d in top]
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "--git-dir", repo, "archive", rev, "--", *wanted], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return programs


def spec_key(spec) -> tuple:
    return (spec.action, spec.type, json.dumps(spec.nargs), None if spec.choices is None else tuple(spec.choices),
            spec.dest, spec.deprecated)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", default="/work/.mirror/NVIDIA+Megatron-LM/repo",
                    help="a Megatron-LM git directory (bare or .git)")
    ap.add_argument("--releases", nargs="*", help="revisions to read, oldest first (default: core_v0.12+ and main)")
    ap.add_argument("--out", default=str(ROOT / "rules" / "megatron_flags.json"))
    ap.add_argument("--work", help="directory to extract releases into (default: a temporary one)")
    args = ap.parse_args(argv)

    releases = args.releases or default_releases(args.repo)
    if not releases:
        print("no releases found", file=sys.stderr)
        return 2
    release_meta = []
    # (program, release index) -> {option: spec}; closed flags per program
    flags: dict[str, dict[tuple, set[tuple[str, int]]]] = {}
    have: dict[str, list[int]] = {}
    closed: dict[str, list[int]] = {}
    notes: dict[str, dict[str, list[str]]] = {}
    with tempfile.TemporaryDirectory(prefix="megatron-snapshots-") as tmp:
        work = Path(args.work or tmp)
        for ri, rev in enumerate(releases):
            t0 = time.perf_counter()
            commit = git(args.repo, "rev-parse", f"{rev}^{{commit}}").strip()
            date = git(args.repo, "log", "-1", "--format=%cs", commit).strip()
            release_meta.append({"name": rev, "commit": commit, "date": date})
            dest = work / rev
            programs = extract(args.repo, rev, dest)
            counts = []
            for prog in programs:
                facts = facts_for_program(str(dest / prog), [str(dest)], [], CodeOptions())
                schema = facts.schema
                if schema is None or not schema.flags:
                    notes.setdefault(prog, {})[rev] = ["no parser found"]
                    continue
                have.setdefault(prog, []).append(ri)
                if schema.closed:
                    closed.setdefault(prog, []).append(ri)
                elif schema.open_reasons:
                    notes.setdefault(prog, {})[rev] = [re.sub(re.escape(str(dest)) + "/?", "", r)
                                                        for r in schema.open_reasons][:3]
                for option, spec in schema.flags.items():
                    if not option.startswith("-"):
                        continue
                    flags.setdefault(option, {}).setdefault(spec_key(spec), set()).add((prog, ri))
                counts.append(f"{prog}:{len(schema.specs())}{'' if schema.closed else '(open)'}")
            print(f"{rev} ({date}): {' '.join(counts)} [{time.perf_counter() - t0:.1f}s]", file=sys.stderr)

    # per (release) the programs present: a variant valid for all of them at its releases needs no list
    present: dict[int, set[str]] = {}
    for prog, rels in have.items():
        for ri in rels:
            present.setdefault(ri, set()).add(prog)
    out_flags: dict[str, list[dict]] = {}
    for option in sorted(flags):
        variants = []
        for key, pairs in flags[option].items():
            rels = sorted({ri for _, ri in pairs})
            progs = sorted({p for p, _ in pairs})
            everywhere = all({p for p, r in pairs if r == ri} == present[ri] for ri in rels)
            action, type_, nargs, choices, dest, deprecated = key
            v = {"releases": format_ranges(rels), "programs": None if everywhere else progs, "action": action,
                 "type": type_, "nargs": json.loads(nargs), "choices": None if choices is None else list(choices),
                 "dest": dest}
            if deprecated:
                v["deprecated"] = deprecated
            if not everywhere:
                # keep the exact (program, release) pairs: split per program where release sets differ
                by_prog: dict[str, list[int]] = {}
                for p, r in pairs:
                    by_prog.setdefault(p, []).append(r)
                groups: dict[str, list[str]] = {}
                for p, rs in by_prog.items():
                    groups.setdefault(format_ranges(rs), []).append(p)
                for rr, ps in sorted(groups.items()):
                    variants.append({**v, "releases": rr, "programs": sorted(ps)})
                continue
            variants.append(v)
        variants.sort(key=lambda v: [int(x) for x in re.findall(r"\d+", v["releases"])][:1])
        out_flags[option] = variants
    data = {
        "format": FORMAT,
        "generated_by": "tools/megatron_snapshots.py",
        "source": "NVIDIA/Megatron-LM (flags read statically from each release's code; no code is included)",
        "releases": release_meta,
        "programs": {p: {"releases": format_ranges(have[p]), "closed": format_ranges(closed.get(p, [])),
                         **({"notes": notes[p]} if p in notes else {})} for p in sorted(have)},
        "flags": out_flags,
    }
    Path(args.out).write_text(json.dumps(data, separators=(",", ":"), sort_keys=False) + "\n", encoding="utf-8")
    size = Path(args.out).stat().st_size
    print(f"wrote {args.out}: {len(releases)} releases, {len(have)} programs, {len(out_flags)} flags, "
          f"{size / 1024:.0f} KiB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
