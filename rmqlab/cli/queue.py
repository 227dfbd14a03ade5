"""``rmqlab queue STORE --topic T --queue-id Q`` — the consume-queue entries of one queue.

Lists the units RocketMQ serves (a batch queue's, queue.type=BatchCQ, one per record
with the queue offsets it covers): those pointing at or past the end of the log (a crash
dispatched them; RocketMQ's recovery cuts them) are left out with one warning, and the
exit status is then 1.
"""

from __future__ import annotations

import argparse
import sys

from .. import lookup
from ..errors import StoreLayoutError
from ..format.consumequeue import EXT_MAX_ADDR
from ..store.batch_consume_queue import BatchConsumeQueue
from .common import add_store_options, open_from_args, print_json
from . import HELP


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("queue", help=HELP["queue"], description=__doc__)
    add_store_options(p)
    p.add_argument("--topic", required=True, help="the queue's topic")
    p.add_argument("--queue-id", type=int, required=True, help="the queue's id (its directory under consumequeue/TOPIC/)")
    p.add_argument("--json", action="store_true", help="one JSON object per entry")
    return p


def _batch_units(args, store, cq) -> int:
    """A batch queue (queue.type=BatchCQ): its units, each covering batchSize offsets."""
    lo, hi = cq.valid_range()
    end = store.commitlog.served_end()
    past = 0
    if not args.json:
        print(f"{args.topic}/{args.queue_id}: offsets [{lo}, {hi}), {cq.describe()}")
        print(f"{'msg_base_offset':>15}  {'batch_size':>10}  {'commitlog_offset':>16}  {'size':>8}  {'tags_code':>20}  store_timestamp")
    for u in cq.iter_units():
        if u.commitlog_offset >= end:  # dispatched before a crash cut the log: RocketMQ's recovery cuts the unit
            past += 1
            continue
        if args.json:
            print_json(u.to_dict())
        else:
            print(f"{u.msg_base_offset:>15}  {u.batch_size:>10}  {u.commitlog_offset:>16}  {u.size:>8}  {u.tags_code:>20}  {u.store_timestamp}")
    if past:
        print(f"rmqlab queue: {past} unit(s) of {args.topic}/{args.queue_id} point at or past the end of the log ({end}) and are not listed: "
              "a crash dispatched them, RocketMQ's recovery cuts them", file=sys.stderr)
        return 1
    return 0


def run(args) -> int:
    with open_from_args(args) as store:
        cq = store.consume_queue(args.topic, args.queue_id)
        if isinstance(cq, BatchConsumeQueue):
            return _batch_units(args, store, cq)
        lo, hi = cq.valid_range(store.commitlog.min_offset)
        entries = cq.iter_entries(store.commitlog.min_offset)  # a file's chunk at a time: any queue in bounded memory
        end = store.commitlog.served_end()
        past = lookup.entries_past_the_log(store, args.topic, args.queue_id)
        if not args.json:
            print(f"{args.topic}/{args.queue_id}: offsets [{lo}, {hi}), {cq.describe()}")
            print(f"{'queue_offset':>12}  {'commitlog_offset':>16}  {'size':>8}  {'tags_code':>20}")
        ext = store.consume_queue_ext(args.topic, args.queue_id)  # enableConsumeQueueExt: tagsCodes as ext addresses
        kept = 0  # units past the end of the log that the writer's start keeps (StoreReader.queues_truncated)
        for e in entries:
            if e.queue_offset >= hi - past:  # the suffix RocketMQ's truncateDirtyLogicFiles cuts
                break
            kept += e.commitlog_offset >= end
            d = e.to_dict()
            if e.tags_code <= EXT_MAX_ADDR:
                if ext is None:
                    raise StoreLayoutError(cq.directory, None, f"entry {e.queue_offset}'s tagsCode {e.tags_code} is an ext address and there is no ext directory to read it from")
                d["ext_tags_code"] = ext.unit(e.tags_code).tags_code  # ConsumeQueueExt.get
            if args.json:
                print_json(d)
            else:
                tags = f"{e.tags_code} (ext: {d['ext_tags_code']})" if "ext_tags_code" in d else str(e.tags_code)
                print(f"{e.queue_offset:>12}  {e.commitlog_offset:>16}  {e.size:>8}  {tags:>20}")
    if past:
        print(f"rmqlab queue: {past} unit(s) of {args.topic}/{args.queue_id} point at or past the end of the log ({end}) and are not listed: "
              f"a crash dispatched them, RocketMQ's recovery cuts them (the queue then ends at {hi - past})", file=sys.stderr)
        return 1
    if kept:
        print(f"rmqlab queue: {kept} unit(s) of {args.topic}/{args.queue_id} point at or past the end of the log ({end}): the next start keeps "
              "them (it truncates the queues only where its lowest dispatch progress reaches the end), and a pull of them finds no message",
              file=sys.stderr)
        return 1
    return 0
