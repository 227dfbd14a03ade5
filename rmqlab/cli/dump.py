"""``rmqlab dump STORE`` — records in commitlog order (text, or one JSON object per line)."""

from __future__ import annotations

import argparse

from ..format.record import Record
from ..render.text import record_line
from .common import add_store_options, open_from_args, print_json


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
        for rec in store.commitlog.iter_records(args.start, args.end, include_blank=True):
            if not selected(rec, args):
                continue
            if args.json:
                print_json(rec.to_dict())
            else:
                print(record_line(rec))
    return 0
