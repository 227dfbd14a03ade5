"""``rmqlab tail STORE`` — print records as the broker appends them (``dump --follow``
does the same after listing the log).

Strictly read-only: files are opened and mapped read-only, no lock is taken, nothing is
written — a running broker cannot tell.  A record is printed only when it is whole and
its CRC checks (one still being copied in is waited for); a file rolling is followed
into the next; files the broker's clean-up deleted before they were read are said
(``--fail-on-data-loss``: and the command stops, status 1); a restart whose recovery
cut the log before records already printed is detected (their bytes changed), said,
and the new records from the cut on are printed.  See :mod:`rmqlab.store.follow`.

``--from`` ``earliest`` (the oldest file; the default), ``latest`` (only what is
appended from now) or a physical offset (a record boundary).  ``--progress`` prints
where it is and how far behind the log's written bytes once a second, on stderr.
Ctrl-C ends it (status 0).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from ..render.text import record_line
from .common import OFFSET, number, write_bytes
from . import HELP


def _start(text: str):
    if text in ("earliest", "latest"):
        return text
    try:
        return OFFSET(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"--from takes earliest, latest or an offset, not {text!r}") from None


#: the options of following a live log (their dests) and their defaults: what ``dump``
#: refuses without ``--follow``
FOLLOW_DEFAULTS = {"follow_progress": False, "fail_on_data_loss": False, "interval": 0.2, "settle": 5.0, "idle_exit": None, "max_records": None}


def add_follow_options(p: argparse.ArgumentParser, progress: str = "--progress") -> None:
    """The options of following a live log (``tail``; ``dump --follow``, whose
    ``--progress`` is its listing's, calls this one ``--follow-progress``)."""
    d = FOLLOW_DEFAULTS
    p.add_argument(progress, dest="follow_progress", action="store_true", help="where it is and how far behind, once a second on stderr")
    p.add_argument("--fail-on-data-loss", action="store_true",
                   help="stop (status 1) when files are deleted before they were read, or printed records are cut by a restart's recovery")
    p.add_argument("--interval", type=float, default=d["interval"], metavar="SECONDS", help=f"how often to look for new records (default {d['interval']})")
    p.add_argument("--settle", type=float, default=d["settle"], metavar="SECONDS",
                   help=f"how long a record that does not check may wait, while the log moves on, before it is reported (default {d['settle']:g})")
    p.add_argument("--idle-exit", type=float, metavar="SECONDS", help="stop after this long without a new record (default: never)")
    p.add_argument("--max-records", type=number(1, what="a record count"), metavar="N", help="stop after printing N records")


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("tail", help=HELP["tail"], description=__doc__)
    p.add_argument("store", help="store root directory (or its commitlog/)")
    p.add_argument("--topic", help="only records of this topic")
    p.add_argument("--queue-id", dest="queue", type=number(0, what="a queue id"), metavar="QID", help="only records of this queue id")
    p.add_argument("--from", dest="start", type=_start, default="earliest", metavar="WHERE", help="earliest (default), latest, or an offset")
    p.add_argument("--json", action="store_true", help="one JSON object per record (as dump --json)")
    add_follow_options(p)
    return p


def run(args) -> int:
    return follow(args.store, args.start, args)


def follow(store, start, args) -> int:
    """Print the records of ``store``'s log from ``start`` as they come (see the module)."""
    from ..store.follow import LogFollower, Rewritten, Skipped, Stalled

    printed = 0
    last_progress = 0.0
    with LogFollower(store, start, settle=args.settle) as f:
        try:
            for item in f.follow(args.interval, idle_exit=args.idle_exit, stop=lambda: args.max_records is not None and printed >= args.max_records):
                if isinstance(item, (Skipped, Rewritten, Stalled)):
                    print(f"rmqlab tail: {item}", file=sys.stderr, flush=True)
                    if args.fail_on_data_loss and isinstance(item, (Skipped, Rewritten)):
                        return 1
                    continue
                if (args.topic is not None and item.topic != args.topic) or (args.queue is not None and item.queue_id != args.queue):
                    continue
                if args.json:
                    write_bytes(json.dumps(item.to_dict(), ensure_ascii=False).encode() + b"\n")
                else:
                    write_bytes((record_line(item) + "\n").encode())
                printed += 1
                if args.max_records is not None and printed >= args.max_records:
                    break
                if args.follow_progress and time.monotonic() - last_progress >= 1:
                    last_progress = time.monotonic()
                    _progress(f, printed)
        except KeyboardInterrupt:
            return 0
        if args.follow_progress:
            _progress(f, printed)
    return 0


def _progress(f, printed: int) -> None:
    end = f.log_end()
    behind = "?" if end is None or f.position is None else f"{max(0, end - f.position):,}"
    print(f"rmqlab tail: at {f.position}, {printed} record(s) printed, {behind} byte(s) behind the log's written end", file=sys.stderr, flush=True)

