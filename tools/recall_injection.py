"""Recall on real files (issue 27): take a public repository's own launch script and config files, inject
one mistake from docs/stack-rules.md's catalogue (a find/replace described in a data file), run `packlint
check` on the script, and see whether the rule for that mistake fires. Controls (harmless changes: a
learning rate, a run name, a logging interval) must add no warning or error.

    python tools/recall_injection.py benchmarks/recall/cases.toml [--mirror DIR] [--work DIR] [--only ID]
                                     [--json OUT] [--verbose] [--packlint TREE]

The data file lists `[[repo]]` (name, commit) and `[[case]]` entries:

    [[case]]
    id = "simplerl-grpo-mini-batch"       # unique
    repo = "hkust-nlp/simpleRL-reason"    # a [[repo]] name; read from its mirror (`fetch`), at its commit
    script = "train_grpo_math_tune_ray.sh"  # the launch packlint checks, as the repository ships it
    stack = "verl"                        # for the per-stack table
    row = "24"                            # the catalogue row (docs/stack-rules.md), "control" for a control
    expect = "PK453"                      # the code that must fire; "clean" for a control
    severity = "warning"                  # lowest severity that counts (default warning; "info" for info rules)
    edits = [{ file = "...", find = "...", replace = "...", count = 1 }]

Each repository is extracted once (`git archive` of the mirror at the commit, into --work) with a `.git`
marker so packlint sees a checkout; each case edits its files, checks, and restores them. A case is caught
when its code fires after the edit and did not fire (as often) before; a control is clean when the set of
warning/error codes is the one the unedited checkout has. Nothing from the repositories is executed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
RANK = {"info": 0, "warning": 1, "error": 2}


KEEP = (".sh", ".bash", ".slurm", ".yaml", ".yml", ".json", ".toml", ".py", ".cfg", ".txt")
MAX_BYTES = 2 * 1024 * 1024


def extract(mirror: Path, name: str, commit: str, work: Path) -> Path:
    """The repository's text files (scripts, configs, Python) at the commit, under work/owner+name/; blobs
    a partial mirror lacks, and large or binary files, are left out (packlint reads none of them)."""
    dest = work / name.replace("/", "+")
    marker = dest / ".recall-commit"
    if marker.is_file() and marker.read_text() == commit:
        return dest
    git_dir = str(mirror / name.replace("/", "+") / "repo")
    listing = subprocess.run(
        ["git", "--git-dir", git_dir, "ls-tree", "-r", "-l", "-z", commit], check=True, capture_output=True
    ).stdout.decode("utf-8", "replace")
    wanted = []
    for entry in listing.split("\0"):
        if not entry:
            continue
        meta, path = entry.split("\t", 1)
        _mode, kind, sha, size = meta.split()
        if kind == "blob" and path.lower().endswith(KEEP) and size.isdigit() and int(size) <= MAX_BYTES:
            wanted.append((sha, path))
    batch = subprocess.run(
        ["git", "--git-dir", git_dir, "cat-file", "--batch"],
        input="".join(f"{sha}\n" for sha, _ in wanted).encode(),
        check=True,
        capture_output=True,
    ).stdout
    pos = 0
    for _sha, path in wanted:
        end = batch.index(b"\n", pos)
        header = batch[pos:end].split()
        pos = end + 1
        if len(header) < 3 or header[1] == b"missing":
            continue
        size = int(header[2])
        data = batch[pos : pos + size]
        pos += size + 1
        target = dest / path
        if ".." in Path(path).parts:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    (dest / ".git").mkdir(parents=True, exist_ok=True)  # a checkout root, as packlint looks for one
    marker.write_text(commit)
    return dest


PACKLINT_ROOT = ROOT  # --packlint DIR: another tree's packlint (to compare with an earlier release)


def check(root: Path, script: str) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(PACKLINT_ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "packlint", "check", "--isolated", "--no-cache", "--format", "json", script],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"packlint exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()[:300]}")
    return json.loads(proc.stdout)["findings"]


def counted(findings: list[dict], least: str) -> Counter:
    return Counter(
        f["code"]
        for f in findings
        if RANK[f["severity"]] >= RANK[least] and not f["message"].startswith("could not decide")
    )


def apply(root: Path, edits: list[dict]) -> dict[Path, bytes]:
    saved: dict[Path, bytes] = {}
    for e in edits:
        path = root / e["file"]
        if path not in saved:
            saved[path] = path.read_bytes()
        text = path.read_text()
        if e["find"] not in text:
            raise ValueError(f"{e['file']}: {e['find']!r} not found")
        path.write_text(text.replace(e["find"], e["replace"], e.get("count", 1)))
    return saved


def run_case(case: dict, root: Path, baselines: dict) -> dict:
    least = case.get("severity", "warning")
    key = (str(root), case["script"])
    if key not in baselines:
        baselines[key] = check(root, case["script"])
    before = baselines[key]
    saved = apply(root, case.get("edits", []))
    try:
        after = check(root, case["script"])
    finally:
        for path, data in saved.items():
            path.write_bytes(data)
    b, a = counted(before, least), counted(after, least)
    out = {"id": case["id"], "stack": case.get("stack"), "expect": case["expect"], "row": case.get("row")}
    if case["expect"] == "clean":
        b_all, a_all = counted(before, "warning"), counted(after, "warning")
        new = sorted(c for c in a_all if a_all[c] > b_all.get(c, 0))
        out.update(ok=not new, new=new)
    else:
        code = case["expect"]
        out.update(ok=a.get(code, 0) > b.get(code, 0), fired=sorted(a), before=sorted(b))
        if not out["ok"]:
            out["why"] = [f["message"][:200] for f in after if f["code"] == code][:2]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases")
    ap.add_argument("--mirror", default="/work/.mirror")
    ap.add_argument("--work", default="/tmp/packlint-recall")
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--json")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--packlint", help="the packlint source tree to run (default: this one)")
    args = ap.parse_args(argv)
    global PACKLINT_ROOT
    if args.packlint:
        PACKLINT_ROOT = Path(args.packlint).resolve()
    data = tomllib.loads(Path(args.cases).read_text())
    repos = {r["name"]: r["commit"] for r in data["repo"]}
    work = Path(args.work)
    roots = {}
    results = []
    baselines: dict = {}
    for case in data["case"]:
        if args.only and case["id"] not in args.only:
            continue
        name = case["repo"]
        if name not in roots:
            roots[name] = extract(Path(args.mirror), name, repos[name], work)
        try:
            r = run_case(case, roots[name], baselines)
        except (ValueError, RuntimeError, subprocess.TimeoutExpired) as exc:
            r = {"id": case["id"], "stack": case.get("stack"), "expect": case["expect"], "ok": False, "error": str(exc)}
        results.append(r)
        if args.verbose or not r["ok"]:
            print(("ok   " if r["ok"] else "MISS ") + json.dumps(r), flush=True)
    cases = [r for r in results if r["expect"] != "clean"]
    controls = [r for r in results if r["expect"] == "clean"]
    caught = sum(r["ok"] for r in cases)
    clean = sum(r["ok"] for r in controls)
    by_stack: dict[str, list[int]] = {}
    for r in cases:
        s = by_stack.setdefault(r["stack"] or "?", [0, 0])
        s[0] += r["ok"]
        s[1] += 1
    print(f"\ncases: {caught} of {len(cases)} caught ({100 * caught / max(len(cases), 1):.0f}%)")
    print(f"controls: {clean} of {len(controls)} clean")
    print(f"repositories: {len({c['repo'] for c in data['case'] if not args.only or c['id'] in args.only})}")
    for stack, (k, n) in sorted(by_stack.items()):
        print(f"  {stack:16} {k}/{n}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0 if caught == len(cases) and clean == len(controls) else 1


if __name__ == "__main__":
    sys.exit(main())
