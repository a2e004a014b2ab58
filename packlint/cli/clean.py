"""`packlint clean`: remove packlint's caches (the rule table, the stacks table, the code-base facts)
from the cache directory, and say what was removed. Files packlint did not name are left alone
(packlint.caches.clean)."""

from __future__ import annotations

import sys


def add_arguments(parser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="say where the caches are and how big, remove nothing")


def run(args) -> int:
    from packlint import caches

    base = caches.location()
    if args.dry_run:
        entries = caches._entries(base, temps=True)  # noqa: SLF001 - the same listing clean() removes
        size = sum(n for _, n, _ in entries)
        sys.stdout.write(f"{base}: {len(entries)} cache files, {size / caches.MiB:.1f} MiB (nothing removed)\n")
        return 0
    files, size, kinds = caches.clean(base)
    if not files:
        sys.stdout.write(f"{base}: no packlint cache to remove\n")
        return 0
    s = "" if files == 1 else "s"
    what = ", ".join(kinds)
    sys.stdout.write(f"{base}: removed {files} cache file{s} ({size / caches.MiB:.1f} MiB: {what})\n")
    return 0
