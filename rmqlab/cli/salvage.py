"""``rmqlab salvage FILE_OR_STORE`` — records RocketMQ's recovery throws away.

Scans the bytes for message magic codes and keeps a candidate only when its size, its
self-recorded physical offset and its CRC agree.  By default prints the records past
the point where RocketMQ's walk stops (``after-cut``); ``--all`` prints every record
found.  Output: one JSON object per line (the keys of ``rmqlab dump --json`` plus a
``salvage`` object: file, file_offset, confidence, where, reason).  Read-only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..forensics.salvage import iter_salvage
from ..rules import COMMITLOG_DIR
from .common import COMMITLOG_FILE_SIZE, add_progress_option, progress_bar


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("salvage", help="recover records that recovery would throw away", description=__doc__)
    p.add_argument("path", metavar="FILE_OR_STORE", help="a commitlog file, a commitlog/ directory or a store root")
    p.add_argument("--out", metavar="RECORDS_JSONL", help="write the records here instead of stdout")
    p.add_argument("--all", action="store_true", help="also the records RocketMQ's walk keeps (in-log)")
    p.add_argument("--weak", action="store_true", help="also candidates whose size and offset agree but whose CRC fails")
    p.add_argument("--commitlog-file-size", type=COMMITLOG_FILE_SIZE, metavar="BYTES", help="mappedFileSizeCommitLog (else inferred)")
    p.add_argument("--commitlog-dir", action="append", default=[], metavar="DIR", help="another directory of a log spread over several (storePathCommitLog); repeat it for each")
    add_progress_option(p)
    return p


def run(args) -> int:
    found = iter_salvage(args.path, include_weak=args.weak, include_in_log=args.all, mapped_file_size=args.commitlog_file_size, more_dirs=tuple(args.commitlog_dir))
    out = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
    by: dict[tuple[str, str], int] = {}
    n = 0
    # progress: bytes of the commitlog passed (a record found tells how far the scan is)
    path = Path(args.path)
    files = [path] if path.is_file() else sorted(p for d in [path / COMMITLOG_DIR if (path / COMMITLOG_DIR).is_dir() else path, *map(Path, args.commitlog_dir)]
                                                 for p in d.iterdir() if p.name.isdigit())
    total = sum(p.stat().st_size for p in files)
    base = int(files[0].name) if files and files[0].name.isdigit() else 0
    try:
        with progress_bar(args, total, "salvage") as bar:
            for s in found:  # written as found: a capture of any size in bounded memory
                out.write(json.dumps(s.to_dict(), ensure_ascii=False) + "\n")
                by[(s.where, s.confidence)] = by.get((s.where, s.confidence), 0) + 1
                n += 1
                if bar is not None and n % 4096 == 1:
                    bar.update(s.record.physical_offset - base, n)
    finally:
        if args.out:
            out.close()
    summary = ", ".join(f"{k} {c} {w}" for (w, c), k in sorted(by.items())) or "nothing"
    print(f"salvage: {n} record(s): {summary}", file=sys.stderr)
    return 0
