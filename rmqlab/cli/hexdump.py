"""``rmqlab hexdump FILE`` — an xxd-style view annotated with the field each byte belongs to."""

from __future__ import annotations

import argparse

from ..forensics.hexview import HexView
from .common import OFFSET, number
from . import HELP


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("hexdump", help=HELP["hexdump"], description=__doc__)
    p.add_argument("file", help="a commitlog, DLedger data, consumequeue, index, checkpoint or timer file")
    p.add_argument("--offset", type=OFFSET, default=0, help="first byte (default 0)")
    p.add_argument("--length", type=number(1, what="a length"), default=256, help="how many bytes (default 256)")
    p.add_argument("--kind", choices=["commitlog", "dledger", "consumequeue", "index", "checkpoint", "timerwheel", "timerlog", "timercheck", "raw"], help="file kind, if not told by its path")
    p.add_argument("--max-hash-slot-num", type=number(1, what="a slot count"), help="for index files with a non-default slot/entry ratio")
    chain = p.add_mutually_exclusive_group()
    chain.add_argument("--slot", type=number(0, what="a slot number"), metavar="N", help="index file: follow hash slot N's chain, entry by entry")
    chain.add_argument("--key", metavar="TOPIC#KEY", help="index file: follow the chain this key hashes to (as queryMessage does)")
    return p


def run(args) -> int:
    if args.slot is not None or args.key is not None:
        return _chain(args)
    view = HexView(args.file, args.offset, args.length, kind=args.kind, max_hash_slot_num=args.max_hash_slot_num)
    print(view.to_text())
    return 0


def _chain(args) -> int:
    """One slot's chain (Java IndexFile.selectPhyOffset's walk), each entry numbered,
    annotated in hex."""
    from pathlib import Path

    from ..errors import RmqlabError
    from ..format.indexfile import HASH_SLOT_SIZE, INDEX_ENTRY_SIZE, INDEX_HEADER_SIZE, entry_position, slot_position
    from ..forensics.hexview import file_kind
    from ..store.index_file import IndexFile
    from ..store.reader import infer_index_sizes

    path = Path(args.file)
    if (args.kind or file_kind(path)) != "index":
        raise RmqlabError(f"{path}: --slot and --key follow an index file's hash chains (this is not an index file; --kind index if it is)")
    size = path.stat().st_size
    if args.max_hash_slot_num:  # the entries are what the file holds after those slots
        slots = args.max_hash_slot_num
        entries = (size - INDEX_HEADER_SIZE - slots * HASH_SLOT_SIZE) // INDEX_ENTRY_SIZE
    else:
        slots, entries = infer_index_sizes(size, path, hint="pass --max-hash-slot-num")
    f = IndexFile(path, slots, entries)
    try:
        if args.key is not None:
            key_hash, slot, steps = f.walk_chain(args.key)
            what = f"key {args.key!r} (keyHash {key_hash})"
        else:
            slot, steps, what = args.slot, f.walk_slot(args.slot), f"slot {args.slot}"
        head = int(f.slots()[slot])
        print(f"{path}: {what}: slot {slot} at byte {slot_position(slot)} holds entry {head}; {len(steps)} entr{'y' if len(steps) == 1 else 'ies'} on its chain")
        for i, s in enumerate(steps):
            mark = "" if args.key is None else ("  (hash matches)" if s.hash_matches else "  (another key's hash: a collision on this slot)")
            print(f"\nstep {i + 1}: entry {s.number} at byte {entry_position(slots, s.number)}, phyOffset {s.phy_offset}, prevIndex {s.prev_index}{mark}")
            print(HexView(path, entry_position(slots, s.number), INDEX_ENTRY_SIZE, kind="index", max_hash_slot_num=slots).to_text())
    finally:
        f.close()
    return 0
