"""``rmqlab offsets STORE [--group G]`` — what each consumer group has not consumed yet.

Reads ``config/consumerOffset.json`` as RocketMQ loads it (or its ``.bak``) and sets
each committed offset beside its queue as the store's next start leaves it: min and max
offset (after that start cuts the units past the end of the log), the lag, the store
time of the next message to consume (an offline ``mqadmin consumerProgress``), and what
the cut takes that the group had not consumed.  A committed offset past a queue's end
(the queue lost messages the group had consumed) shows as a negative lag with a note.
Exit status: 0, or 1 when the store has no offsets file.
"""

from __future__ import annotations

import argparse
import sys

from .common import add_store_options, open_from_args, print_json
from . import HELP


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("offsets", help=HELP["offsets"], description=__doc__)
    add_store_options(p)
    p.add_argument("--group", metavar="G", help="only this consumer group")
    p.add_argument("--json", action="store_true", help="one JSON object per group, topic and queue")
    return p


def run(args) -> int:
    from ..lookup import consumer_progress
    from ..render.text import fmt_time
    from ..store.metadata import read_consumer_offsets

    offsets = read_consumer_offsets(args.store)
    for note in offsets.notes:
        print(f"note: {note}", file=sys.stderr)
    if offsets.source is None:
        print(f"rmqlab offsets: {args.store}: no config/consumerOffset.json (nor its .bak): no group has committed an offset here", file=sys.stderr)
        return 1
    with open_from_args(args, strict=False) as store:
        rows = consumer_progress(store, offsets, args.group)
    if args.json:
        for r in rows:
            print_json(r.to_dict())
        return 0
    if args.group is not None and not rows:
        print(f"no offsets of group {args.group!r} (groups in {offsets.source}: {', '.join(offsets.groups()) or 'none'})")
        return 0
    cut = any(r.units_cut for r in rows)
    print(f"{'group':<24} {'topic':<24} {'queue':>5} {'committed':>10} {'min':>10} {'max':>10} {'lag':>8}" + (f" {'cut':>6}" if cut else "") + "  next message stored")
    for r in rows:
        committed = "-" if r.committed_offset is None else r.committed_offset
        nxt = fmt_time(r.next_store_timestamp) if r.next_store_timestamp is not None else "-"
        print(f"{r.group:<24} {r.topic:<24} {r.queue_id:>5} {committed:>10} {r.min_offset:>10} {r.max_offset:>10} {r.lag:>8}"
              + (f" {r.unconsumed_cut:>6}" if cut else "") + f"  {nxt}" + (f"   ! {r.note}" if r.note else ""))
    total: dict[str, list[int]] = {}
    for r in rows:
        t = total.setdefault(r.group, [0, 0])
        t[0] += max(r.lag, 0)
        t[1] += r.unconsumed_cut
    for g, (n, lost) in total.items():
        print(f"{g}: {n} message(s) not consumed yet" + (f"; {lost} more it had not consumed are cut by the next start (past the end of the log): lost to it" if lost else ""))
    if cut:
        print("max: each queue's end once the next start cuts its units past the end of the log (`rmqlab recover` says why); "
              "cut: of those, the ones the group had not consumed")
    return 0
