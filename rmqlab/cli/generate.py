"""``rmqlab generate STORE --size 2GiB`` — write a big, realistic store fast (benchmarks, Spark lesson)."""

from __future__ import annotations

import argparse
import sys

from ..lab.generate import generate_store, parse_range, parse_size
from .common import add_progress_option, print_json, progress_bar
from . import HELP


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("generate", help=HELP["generate"], description=__doc__)
    p.add_argument("store", help="new store root (must not hold a commitlog yet)")
    p.add_argument("--size", required=True, type=parse_size, metavar="BYTES", help="commitlog bytes to write: 2GiB, 512MiB, 4096 ...")
    p.add_argument("--topics", type=int, default=4, metavar="N", help="number of topics (default 4; skewed mix)")
    p.add_argument("--queues", type=int, default=4, metavar="N", help="queues per topic (default 4)")
    p.add_argument("--body-size", default="40", type=parse_range, metavar="N|MIN-MAX", help="body bytes, fixed or a range (default 40: ~200-byte records)")
    p.add_argument("--seed", type=int, default=0, help="random seed (same seed, same bytes)")
    p.add_argument("--file-size", default="1GiB", type=parse_size, metavar="BYTES", help="mappedFileSizeCommitLog (default 1GiB)")
    p.add_argument("--start-ms", type=int, default=1_767_225_600_000, help="store time of the first message, ms since epoch")
    p.add_argument("--interval-us", type=int, default=500, help="simulated time between messages, microseconds (default 500)")
    p.add_argument("--duplicates", type=float, default=0.0, metavar="FRACTION", help="fraction of messages re-sent with an earlier UNIQ_KEY")
    p.add_argument("--no-index", action="store_true", help="do not build index files")
    p.add_argument("--no-consumequeue", action="store_true", help="do not build consume queues")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    add_progress_option(p)
    return p


def run(args) -> int:
    try:
        with progress_bar(args, args.size if args.size > 0 else 0, "generate") as bar:
            result = generate_store(
            args.store,
            args.size,
            topics=args.topics,
            queues=args.queues,
            body_size=args.body_size,
            seed=args.seed,
            mapped_file_size=args.file_size,
            start_ms=args.start_ms,
            interval_us=args.interval_us,
            duplicates=args.duplicates,
            index=not args.no_index,
            consume_queues=not args.no_consumequeue,
            progress=bar,
        )
    except ValueError as exc:
        print(f"rmqlab generate: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print_json(result.to_dict())
        return 0
    mb = result.bytes_written / (1 << 20)
    print(f"wrote {result.records} messages, {mb:.1f} MiB of commitlog in {result.files} file(s) to {result.root} in {result.seconds:.1f} s")
    if result.duplicates:
        print(f"  {result.duplicates} messages re-sent with an earlier UNIQ_KEY")
    for topic, n in sorted(result.topics.items()):
        print(f"  {topic}: {n}")
    return 0
