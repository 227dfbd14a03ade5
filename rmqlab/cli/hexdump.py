"""``rmqlab hexdump FILE`` — an xxd-style view annotated with the field each byte belongs to."""

from __future__ import annotations

import argparse

from ..forensics.hexview import HexView
from .common import OFFSET, number


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("hexdump", help="annotated hex view of a store file", description=__doc__)
    p.add_argument("file", help="a commitlog, consumequeue, index or checkpoint file")
    p.add_argument("--offset", type=OFFSET, default=0, help="first byte (default 0)")
    p.add_argument("--length", type=number(1, what="a length"), default=256, help="how many bytes (default 256)")
    p.add_argument("--kind", choices=["commitlog", "consumequeue", "index", "checkpoint", "raw"], help="file kind, if not told by its path")
    p.add_argument("--max-hash-slot-num", type=number(1, what="a slot count"), help="for index files with a non-default slot/entry ratio")
    return p


def run(args) -> int:
    view = HexView(args.file, args.offset, args.length, kind=args.kind, max_hash_slot_num=args.max_hash_slot_num)
    print(view.to_text())
    return 0
