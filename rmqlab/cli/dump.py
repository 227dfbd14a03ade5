"""``rmqlab dump STORE`` — records in commitlog order (text, or one JSON object per line).

Lists what RocketMQ serves: the log up to where the store's next start ends it.
``--dead`` lists the readable records after that end too, marked DEAD (``"dead": true``
in JSON): bytes RocketMQ no longer serves.  ``dump FILE`` lists one commitlog file's
record chain as it lies (no store: what the next start does is not known).  Exit
status: 0; 1 when non-zero bytes follow the end of the log (one warning names the file,
offset, byte count and the readable records among them: ``rmqlab salvage`` gives them
back), when damage before the end of the log was stepped over (a warning each: RocketMQ
keeps the records after it, and the listing goes on at the next record carved after
it), or when --topic / --queue match no record; 2 when the store cannot be read.
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
from .tail import FOLLOW_DEFAULTS, add_follow_options, follow
from .common import OFFSET, add_progress_option, add_store_options, commitlog_bytes, open_from_args, progress_bar, write_bytes
from . import HELP


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("dump", help=HELP["dump"], description=__doc__)
    add_store_options(p, store_help="store root directory (holds commitlog/, consumequeue/, index/ ...), or one commitlog file")
    p.add_argument("--json", action="store_true", help="one JSON object per record (the keys `rmqlab write` accepts; the body in base64)")
    p.add_argument("--body", choices=["text", "hex", "base64"], help="print each record's body under its line: as UTF-8 text (bytes that are not, escaped), hex or base64")
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
    if not args.follow:
        given = [k for k, default in FOLLOW_DEFAULTS.items() if getattr(args, k) != default]
        if given:
            flag = "--follow-progress" if given[0] == "follow_progress" else "--" + given[0].replace("_", "-")
            raise RmqlabError(f"{flag} says how to follow the log: it needs --follow (without it, dump lists the log as it is and stops; "
                              "--from / --to choose a range)")
    if args.body and args.json:
        raise RmqlabError("--json keeps each body in base64 (its `body` key): --body is for the text listing")
    if Path(args.store).is_file():
        if args.follow:
            raise RmqlabError(f"{args.store}: --follow follows a store's log; give the store root")
        return _dump_file(args)
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
        # RocketMQ serves the log up to where its next start ends it (the recovery plan,
        # rmqlab.recovery.next_start): what lies after is not listed
        end = store.commitlog.served_end()
        return _list(store, args, end, progress), end


def _list(store, args, end: int, progress) -> int:
    """List the records up to ``end`` (or ``--to``); the exit status.  Damage before the
    end of the log (in a file the next start does not walk, so RocketMQ keeps the records
    after it and serves those its queues point at) is stepped over with a warning, the
    listing going on at the next record carved after it."""
    stop = end if args.end is None else min(args.end, end)
    listed, start, stepped = 0, args.start, 0
    base = store.commitlog.min_offset
    while True:
        try:
            if args.json:
                listed += _json(store, args, stop, progress, start)
            else:
                for n, rec in enumerate(store.commitlog.iter_records(start, stop, include_blank=True)):
                    if selected(rec, args):
                        _print(rec, args)
                        listed += not rec.is_blank
                    if n % 4096 == 0:
                        progress.update(rec.physical_offset - base, n)
            break
        except RecordError as err:
            at = int(Path(err.file).name) + (err.offset or 0)
            if store.dead_past(at):
                # the end of the log, as RocketMQ's walk finds it: what follows is dead bytes
                print(f"rmqlab dump: the log ends at {at} ({err.file} @ {err.offset}); the bytes after it are dead "
                      "(a clean exit, and no queue or index entry points there: see `rmqlab verify`)", file=sys.stderr)
                return 1
            start = _resume_after(store, at, stop)
            stepped += 1
            print(f"rmqlab dump: {err}; the log goes on to {end} (the next start does not read this damage): "
                  + (f"listing again from {start}, the next record carved after it" if start is not None else "no record after it before the end"),
                  file=sys.stderr)
            if start is None:
                break
    return _nothing_matched(args, listed) or _after_the_end(store, end, args) or (1 if stepped else 0)


def _resume_after(store, at: int, stop: int) -> int | None:
    """Where the listing goes on after damage at ``at``: the next record carved after it
    (:mod:`rmqlab.scan.carve`: size, own offset and CRC agree) before ``stop``, or None."""
    from ..scan.carve import carve_past

    nxt = next(carve_past(store.commitlog.queue.files, at + 1), None)
    return nxt.record.physical_offset if nxt is not None and nxt.record.physical_offset < stop else None


def _print(rec, args) -> None:
    print(record_line(rec))
    if args.body and not rec.is_blank:
        print(body_text(rec.body or b"", args.body))


def body_text(body: bytes, how: str) -> str:
    """A body under its record's line, indented: UTF-8 text (undecodable bytes and
    control characters escaped), hex, or base64."""
    import base64

    if how == "hex":
        text = body.hex()
    elif how == "base64":
        text = base64.b64encode(body).decode()
    else:
        text = body.decode("utf-8", errors="backslashreplace")
        text = "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)
    return "    " + text


def _nothing_matched(args, listed: int) -> int:
    """1 and a line on stderr when --topic / --queue matched no record; else 0."""
    if listed or (args.topic is None and args.queue is None):
        return 0
    what = " and ".join(w for w in (f"topic {args.topic}" if args.topic is not None else "", f"queue id {args.queue}" if args.queue is not None else "") if w)
    print(f"rmqlab dump: no record of {what} in the log" + (" in the range asked" if args.start is not None or args.end is not None else ""), file=sys.stderr)
    return 1


def _dump_file(args) -> int:
    """One commitlog file given alone: its record chain from its first byte (or --from,
    a log offset inside it), as the file's name places it (0 where it is no offset).
    No store: the end of the log is not known, so the chain's own end is reported."""
    from ..files import MappedFile
    from ..store.commitlog import walk_file

    path = Path(args.store)
    base = int(path.name) if path.name.isdigit() and len(path.name) == 20 else 0
    mf = MappedFile(path, base)
    listed, status = 0, 0
    try:
        pos = 0 if args.start is None else args.start - base
        if not 0 <= pos <= len(mf.buf):
            raise RmqlabError(f"--from {args.start} is not inside {path} (offsets [{base}, {base + len(mf.buf)}))")
        for rec in walk_file(mf.buf, file=str(path), file_base=base, start=pos, end=args.end):
            if isinstance(rec, RecordError):
                print(f"rmqlab dump: {rec}; the file's record chain ends here (`rmqlab salvage {path}` reads the records after it)", file=sys.stderr)
                status = 1
            elif selected(rec, args):
                if args.json:
                    write_bytes(json.dumps(rec.to_dict(), ensure_ascii=False).encode() + b"\n")
                else:
                    _print(rec, args)
                listed += not rec.is_blank
    finally:
        mf.close()
    return _nothing_matched(args, listed) or status


def _after_the_end(store, end: int, args) -> int:
    """0 when the log ends cleanly (zeros after its end); else one warning naming the
    file, offset, byte count and the readable records the next start cuts there (the
    records ``rmqlab salvage`` gives back, found by the same carver), and 1.  With
    ``--dead`` those records are listed, marked (the same selection as the live ones)."""
    from ..files.extent import nonzero_past
    from ..scan.carve import carve_past

    past = list(nonzero_past(store.commitlog.queue.files, end))
    if not past:
        return 0
    readable = 0
    for c in carve_past(store.commitlog.queue.files, end):
        readable += 1
        if args.dead and selected(c.record, args) and (args.end is None or c.record.physical_offset < args.end):
            if args.json:
                write_bytes(json.dumps(dict(c.record.to_dict(), dead=True), ensure_ascii=False).encode() + b"\n")
            else:
                print("DEAD " + record_line(c.record))
    f, at, (lo, hi) = past[0]
    more = sum(b - start for _, start, (_, b) in past)  # as recover counts its cut ranges
    print(f"rmqlab dump: the log ends at {end} ({f.path} @ {at}); {more} byte(s) follow up to the last non-zero one (" + (f"byte {hi} of that file" if len(past) == 1 else f"in {len(past)} files") + ")"
          + f", {readable} readable record(s) among them, cut by the next start (`rmqlab salvage` gives them back)", file=sys.stderr)
    return 1


def _json(store, args, stop: int, progress, start: int | None = None) -> int:
    """The same records from ``start`` (default --from), decoded and serialised in bulk (a
    batch of lines per write); how many message records were written.  Raises the
    :class:`RecordError` of damage after writing the records before it."""
    import pyarrow.compute as pc

    from ..scan.ahead import read_ahead
    from ..scan.decode import KIND_BLANK
    from ..scan.jsonlines import LineBuffer, json_line_pieces

    filtered = args.topic is not None or args.queue is not None
    base, records, written = store.commitlog.min_offset, 0, 0
    lines = LineBuffer()  # each batch's lines are written out before the next batch's are made
    for batch in read_ahead(store.commitlog.batches(args.start if start is None else start, stop)):
        records += batch.num_rows
        progress.update(batch.column("physical_offset")[-1].as_py() - base, records)
        if args.topic is not None:
            batch = batch.filter(pc.equal(batch.column("topic"), args.topic))
        if args.queue is not None:
            batch = batch.filter(pc.equal(batch.column("queue_id"), args.queue))
        blank = np.flatnonzero(np.asarray(pc.equal(batch.column("kind"), KIND_BLANK).fill_null(False).to_numpy(zero_copy_only=False), bool))
        written += batch.num_rows - len(blank)
        start = 0
        for b in blank.tolist() + [batch.num_rows]:  # a file's BLANK between its records and the next file's
            for piece in json_line_pieces(batch.slice(start, b - start), lines):
                write_bytes(piece)
            if b < batch.num_rows and args.all and not filtered:
                row = batch.slice(b, 1).to_pylist()[0]
                write_bytes(json.dumps({"physical_offset": row["physical_offset"], "total_size": row["total_size"], "magic": row["magic"], "kind": KIND_BLANK}).encode() + b"\n")
            start = b + 1
    return written
