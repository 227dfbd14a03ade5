"""``rmqlab compaction STORE`` — the compaction store of compacted topics, offline.

Lists each compacted queue (``cleanup.policy=COMPACTION``: ``compaction/compactionLog/``
and ``compactionCq/``) unit by unit with the record of the compaction log it points at:
queue offset, position in the compaction log, size, KEYS, store time — what RocketMQ's
``mqadmin dumpCompactionLog`` prints of a log file, for every queue, read-only (that
tool maps the file for writing).  ``position-checkpoint`` says how far each queue was
compacted.  ``rmqlab verify`` checks the units, the records and the copies against the
commitlog.  Exit status: 0; 1 when the store has no compaction log.
"""

from __future__ import annotations

import argparse
import sys

from .common import print_json
from . import HELP


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("compaction", help=HELP["compaction"], description=__doc__)
    p.add_argument("store", help="the store root")
    p.add_argument("--topic", help="only this topic")
    p.add_argument("--queue-id", type=int, help="only this queue")
    p.add_argument("--json", action="store_true", help="one JSON object per unit")
    return p


def run(args) -> int:
    from ..errors import StoreFormatError
    from ..format.properties import KEYS
    from ..render.text import fmt_time
    from ..store.compaction import CompactionStore

    comp = CompactionStore(args.store)
    qids = [(t, q) for t, q in comp.queue_ids() if (args.topic is None or t == args.topic) and (args.queue_id is None or q == args.queue_id)]
    if not comp.queue_ids():
        print(f"rmqlab compaction: {args.store}: no compaction/compactionLog/ queue: no topic here has cleanup.policy=COMPACTION", file=sys.stderr)
        return 1
    positions = comp.positions()
    for topic, qid in qids:
        Q = comp.queue(topic, qid)
        try:
            if not args.json:
                done = positions.get((topic, qid))
                print(f"{topic}/{qid}: {len(Q.log.queue.files)} log file(s) in {Q.log.directory}" + (f", compacted up to queue offset {done}" if done is not None else ", not compacted yet")
                      + ("".join(f"; under way: {b}" for b in Q.in_progress)))
                if Q.cq is None:
                    print("  no compaction queue: RocketMQ skips this log (compactionLog mismatch with compactionCq)")
                    continue
                print(f"{'queue_offset':>12}  {'log_offset':>10}  {'size':>6}  {'stored':<24}  keys")
            if Q.cq is None:
                continue
            for u in Q.cq.iter_units():
                try:
                    rec = Q.log.read(u.commitlog_offset, check_crc=False)
                    keys, stored = rec.properties.get(KEYS), rec.store_timestamp
                except StoreFormatError as err:
                    keys, stored = None, None
                    print(f"rmqlab compaction: {err}", file=sys.stderr)
                if args.json:
                    print_json({"topic": topic, "queue_id": qid, **u.to_dict(), "keys": keys})
                else:
                    print(f"{u.msg_base_offset:>12}  {u.commitlog_offset:>10}  {u.size:>6}  {fmt_time(stored) if stored else '-':<24}  {keys or ''}")
        finally:
            Q.close()
    return 0
