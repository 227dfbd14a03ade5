"""``rmqlab salvage FILE_OR_STORE`` — the records RocketMQ's next start throws away.

Carves the bytes for records (a candidate is kept only when its size, its self-recorded
physical offset and its CRC agree) and says of each what the next start does with it.
By default prints exactly the readable records the next start cuts (``cut``: at or past
the end of the log, as ``rmqlab recover`` counts them); ``--past-damage`` adds the
records after damage the next start never reads but keeps (it serves them where a queue
points at them), ``--all`` every record found.  For one commitlog file given alone, the
records past where the file's own chain stops (``past-walk``).

Output: one JSON object per line: the keys of ``rmqlab dump --json`` plus a ``salvage``
object (file, file_offset, confidence, where, reason; flushed: stored before the
checkpoint's last flush; acknowledged: whether its producer was told it was stored,
under the flush mode --config gives, else RocketMQ's default ASYNC_FLUSH; consumed_by and
pending_for: the consumer groups past it and not).  Read-only.  Re-sending the ``cut``
records does not duplicate what RocketMQ still serves; the how-to says how to leave out
what consumers already processed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..config import MessageStoreConfig
from ..forensics.salvage import CUT, EVERYWHERE, IN_LOG, PAST_DAMAGE, PAST_WALK, iter_salvage
from ..rules import COMMITLOG_DIR
from .common import COMMITLOG_FILE_SIZE, add_progress_option, add_release_option, progress_bar
from . import HELP


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("salvage", help=HELP["salvage"], description=__doc__)
    p.add_argument("path", metavar="FILE_OR_STORE", help="a commitlog file, a commitlog/ directory or a store root")
    p.add_argument("--out", metavar="RECORDS_JSONL", help="write the records here instead of stdout")
    p.add_argument("--past-damage", action="store_true", help="also the records after damage the next start never reads, which RocketMQ keeps (past-damage)")
    p.add_argument("--all", action="store_true", help="every record found: also those RocketMQ keeps and serves (in-log, past-damage)")
    p.add_argument("--weak", action="store_true", help="also candidates whose size and offset agree but whose CRC fails")
    p.add_argument("--config", metavar="BROKER_CONF", help="broker.conf-style properties file: the store's sizes, flushDiskType and brokerRole")
    p.add_argument("--commitlog-file-size", type=COMMITLOG_FILE_SIZE, metavar="BYTES", help="mappedFileSizeCommitLog (else inferred)")
    p.add_argument("--commitlog-dir", action="append", default=[], metavar="DIR", help="another directory of a log spread over several (storePathCommitLog); repeat it for each")
    add_release_option(p)
    add_progress_option(p)
    return p


def run(args) -> int:
    where = EVERYWHERE if args.all else (CUT, PAST_DAMAGE) if args.past_damage else None
    config = MessageStoreConfig.from_properties(args.config) if args.config else None
    found = iter_salvage(args.path, where=where, include_weak=args.weak, mapped_file_size=args.commitlog_file_size, more_dirs=tuple(args.commitlog_dir),
                         config=config, rocketmq_version=getattr(args, "rocketmq_version", None))
    out = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
    by: dict[str, dict[str, int]] = {}
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
                c = by.setdefault(s.where, {})
                c[s.confidence] = c.get(s.confidence, 0) + 1
                n += 1
                if bar is not None and n % 4096 == 1:
                    bar.update(s.record.physical_offset - base, n)
    finally:
        if args.out:
            out.close()
    print(f"salvage: {summary(n, by, path.is_file())}", file=sys.stderr)
    return 0


#: what each ``where`` means, in the summary line
_SAID = {CUT: "the next start cuts", PAST_DAMAGE: "after damage the next start never reads (RocketMQ keeps them)",
         IN_LOG: "RocketMQ keeps and serves", PAST_WALK: "past where the file's own chain stops"}


def summary(n: int, by: dict[str, dict[str, int]], one_file: bool) -> str:
    """``N record(s): K the next start cuts (certain K), …``."""
    if not n:
        return "no record found" + ("" if one_file else ": the next start cuts no readable record")
    parts = [f"{sum(c.values())} {_SAID[w]} (" + ", ".join(f"{k} {conf}" for conf, k in sorted(c.items())) + ")" for w, c in sorted(by.items(), key=lambda kv: EVERYWHERE.index(kv[0]))]
    return f"{n} record(s): " + "; ".join(parts)
