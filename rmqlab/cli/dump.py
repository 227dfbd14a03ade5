"""``rmqlab dump STORE`` — records in commitlog order (text, or one JSON object per line).

Lists what RocketMQ serves: the log up to where its recovery ends it.  ``--dead`` lists
the readable records after that end too, marked DEAD (``"dead": true`` in JSON): bytes
RocketMQ no longer serves.  Exit status: 0; 1 when non-zero bytes follow the end of the
log (one warning names the file, offset, byte count and the readable records among
them: ``rmqlab salvage`` gives them back); 2 when the store cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from ..errors import RmqlabError

from ..format.record import Record, RecordError
from ..render.text import record_line
from ..progress import Silent
from .tail import add_follow_options, follow
from .common import OFFSET, add_progress_option, add_store_options, commitlog_bytes, open_from_args, progress_bar, write_bytes


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("dump", help="records in commitlog order", description=__doc__)
    add_store_options(p)
    p.add_argument("--json", action="store_true", help="one JSON object per record (the keys `rmqlab write` accepts)")
    p.add_argument("--all", action="store_true", help="also print BLANK end-of-file records")
    p.add_argument("--topic", help="only records of this topic")
    p.add_argument("--queue", type=int, metavar="QID", help="only records of this queue id")
    p.add_argument("--from", dest="start", type=OFFSET, metavar="OFFSET", help="first physical offset (a record boundary)")
    p.add_argument("--to", dest="end", type=OFFSET, metavar="OFFSET", help="stop before this physical offset")
    p.add_argument("--dead", action="store_true", help="also list the readable records after the end of the log, marked DEAD")
    p.add_argument("--follow", action="store_true", help="then print records as the broker appends them (as `rmqlab tail --from` the end)")
    add_follow_options(p, "--follow-progress")
    add_progress_option(p)
    return p


def selected(rec: Record, args) -> bool:
    if rec.is_blank:
        return bool(args.all) and args.topic is None and args.queue is None
    if args.topic is not None and rec.topic != args.topic:
        return False
    return args.queue is None or rec.queue_id == args.queue


def run(args) -> int:
    if args.start is not None and args.end is not None and args.end <= args.start:
        raise RmqlabError(f"--to {args.end} is not after --from {args.start}: nothing to dump")
    if args.follow and (args.end is not None or args.dead):
        raise RmqlabError("--follow prints what is appended after the end of the log: it does not go with --to or --dead")
    status, end = _dump(args)
    if not args.follow or status == 2:
        return status
    # from the end the listing stopped at, not the log's end now: what a broker appended
    # while the listing ran is followed, not skipped
    return follow(args.store, end, args)


def _dump(args) -> tuple[int, int]:
    """(exit status, the end of the log the listing stopped at)."""
    with open_from_args(args) as store, progress_bar(args, commitlog_bytes(args.store, store.config), "dump") as bar:
        progress = bar or Silent()
        # RocketMQ serves the log up to where its recovery ends it (the last file's chain,
        # up to its first record that fails its CRC): what lies after is not listed
        end = store.commitlog.served_end()
        return _list(store, args, end, progress), end


def _list(store, args, end: int, progress) -> int:
    """List the records up to ``end`` (or ``--to``); the exit status."""
    stop = end if args.end is None else min(args.end, end)
    try:
        if args.json:
            _json(store, args, stop, progress)
            return _after_the_end(store, end, args)
        base = store.commitlog.min_offset
        for n, rec in enumerate(store.commitlog.iter_records(args.start, stop, include_blank=True)):
            if selected(rec, args):
                print(record_line(rec))
            if n % 4096 == 0:
                progress.update(rec.physical_offset - base, n)
    except RecordError as err:
        at = int(Path(err.file).name) + (err.offset or 0)
        if not store.dead_past(at):
            raise
        # the end of the log, as RocketMQ's walk finds it: what follows is dead bytes
        print(f"rmqlab dump: the log ends at {at} ({err.file} @ {err.offset}); the bytes after it are dead "
              "(a clean exit, and no queue or index entry points there: see `rmqlab verify`)", file=sys.stderr)
        return 1
    return _after_the_end(store, end, args)


def _after_the_end(store, end: int, args) -> int:
    """0 when the log ends cleanly (zeros after its end); else one warning naming the
    file, offset, byte count and the readable records there, and 1.  With ``--dead``
    those records are listed, marked (the same selection as the live ones)."""
    from ..files.extent import nonzero_extent
    from ..forensics.salvage import AFTER_CUT, iter_salvage

    f = store.commitlog.queue.find(end) or (store.commitlog.queue.files[-1] if store.commitlog.queue.files else None)
    if f is None or end - f.file_from_offset >= f.file_size:
        return 0
    ext = nonzero_extent(f.path, end - f.file_from_offset)
    if ext is None:
        return 0
    readable = 0
    for s in iter_salvage(f.path):
        if s.where != AFTER_CUT or s.record.physical_offset < end:
            continue
        readable += 1
        if args.dead and selected(s.record, args) and (args.end is None or s.record.physical_offset < args.end):
            if args.json:
                write_bytes(json.dumps(dict(s.record.to_dict(), dead=True), ensure_ascii=False).encode() + b"\n")
            else:
                print("DEAD " + record_line(s.record))
    print(f"rmqlab dump: the log ends at {end} ({f.path} @ {end - f.file_from_offset}); {ext[1] - ext[0]} non-zero byte(s) follow up to byte {ext[1]}, "
          f"{readable} readable record(s) among them, not served by RocketMQ (`rmqlab salvage` gives them back)", file=sys.stderr)
    return 1


def _json(store, args, stop: int, progress) -> None:
    """The same records, decoded and serialised in bulk (a batch of lines per write)."""
    import pyarrow.compute as pc

    from ..scan.decode import KIND_BLANK
    from ..scan.jsonlines import json_lines

    filtered = args.topic is not None or args.queue is not None
    base, records = store.commitlog.min_offset, 0
    for batch in store.commitlog.batches(args.start, stop):
        records += batch.num_rows
        progress.update(batch.column("physical_offset")[-1].as_py() - base, records)
        if args.topic is not None:
            batch = batch.filter(pc.equal(batch.column("topic"), args.topic))
        if args.queue is not None:
            batch = batch.filter(pc.equal(batch.column("queue_id"), args.queue))
        blank = np.flatnonzero(np.asarray(pc.equal(batch.column("kind"), KIND_BLANK).fill_null(False).to_numpy(zero_copy_only=False), bool))
        start = 0
        for b in blank.tolist() + [batch.num_rows]:  # a file's BLANK between its records and the next file's
            write_bytes(json_lines(batch.slice(start, b - start)))
            if b < batch.num_rows and args.all and not filtered:
                row = batch.slice(b, 1).to_pylist()[0]
                write_bytes(json.dumps({"physical_offset": row["physical_offset"], "total_size": row["total_size"], "magic": row["magic"], "kind": KIND_BLANK}).encode() + b"\n")
            start = b + 1
