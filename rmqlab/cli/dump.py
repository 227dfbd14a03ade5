"""``rmqlab dump STORE`` — records in commitlog order (text, or one JSON object per line)."""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from ..format.record import Record
from ..render.text import record_line
from .common import add_store_options, open_from_args


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("dump", help="records in commitlog order", description=__doc__)
    add_store_options(p)
    p.add_argument("--json", action="store_true", help="one JSON object per record (the keys `rmqlab write` accepts)")
    p.add_argument("--all", action="store_true", help="also print BLANK end-of-file records")
    p.add_argument("--topic", help="only records of this topic")
    p.add_argument("--queue", type=int, metavar="QID", help="only records of this queue id")
    p.add_argument("--from", dest="start", type=int, metavar="OFFSET", help="first physical offset (a record boundary)")
    p.add_argument("--to", dest="end", type=int, metavar="OFFSET", help="stop before this physical offset")
    return p


def selected(rec: Record, args) -> bool:
    if rec.is_blank:
        return bool(args.all) and args.topic is None and args.queue is None
    if args.topic is not None and rec.topic != args.topic:
        return False
    return args.queue is None or rec.queue_id == args.queue


def run(args) -> int:
    with open_from_args(args) as store:
        if args.json:
            return _json(store, args)
        for rec in store.commitlog.iter_records(args.start, args.end, include_blank=True):
            if selected(rec, args):
                print(record_line(rec))
    return 0


def _json(store, args) -> int:
    """The same records, decoded and serialised in bulk (a batch of lines per write)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..scan.decode import KIND_BLANK
    from ..scan.jsonlines import json_lines

    out = sys.stdout.buffer
    filtered = args.topic is not None or args.queue is not None
    for batch in store.commitlog.batches(args.start, args.end):
        blank = np.asarray(pc.equal(batch.column("kind"), KIND_BLANK).to_numpy(zero_copy_only=False), bool)
        if blank.any():  # BLANK rows (one per file) come in batches of their own
            if args.all and not filtered:
                for row in batch.filter(pa.array(blank)).to_pylist():
                    out.write(json.dumps({"physical_offset": row["physical_offset"], "total_size": row["total_size"], "magic": row["magic"], "kind": KIND_BLANK}).encode() + b"\n")
            batch = batch.filter(pa.array(~blank))
        if args.topic is not None:
            batch = batch.filter(pc.equal(batch.column("topic"), args.topic))
        if args.queue is not None:
            batch = batch.filter(pc.equal(batch.column("queue_id"), args.queue))
        out.write(json_lines(batch))
    out.flush()
    return 0
