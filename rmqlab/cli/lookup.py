"""``rmqlab lookup STORE`` — find records by key, msgId, physical offset, queue offset or time.

Exit status: 0 when a record was found (``--time`` always answers), 1 when none was
(nothing found is not an error), 2 when the store or the request is wrong.
"""

from __future__ import annotations

import argparse
import sys

from .. import lookup as lk
from ..errors import RmqlabError
from ..releases import release
from ..store.release import tell_release
from ..render.text import fmt_time, record_detail
from .common import OFFSET, add_release_option, add_store_options, number, open_from_args, print_json, store_time
from . import HELP


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("lookup", help=HELP["lookup"], description=__doc__)
    add_store_options(p)
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--key", help="a KEYS token or UNIQ_KEY (needs --topic)")
    how.add_argument("--msg-id", help="a message ID: the offset msgId (store host + physical offset) or the client's message ID "
                     "(UNIQ_KEY, as producers, consoles and traces show it; looked up in the index under --topic, else every topic of the store)")
    p.add_argument("--max", type=number(1, what="a count"), metavar="N", help="--key: answer at most N index hits (default RocketMQ's maxMsgsNumBatch, 64)")
    p.add_argument("--index", choices=["files", "rocksdb"], help="--key: look in the index files or in 5.4+'s RocksDB keys (rocksdbstore/); "
                   "default where the broker looks: the index files unless indexFileReadEnable=false and indexRocksDBEnable=true, "
                   "or, settings not given, the RocksDB keys when there are no index files")
    how.add_argument("--offset", type=OFFSET, help="a physical commitlog offset")
    how.add_argument("--queue", metavar="TOPIC:QID:OFFSET", help="a consume-queue position")
    how.add_argument("--time", type=store_time, metavar="TIME", help="store time, epoch ms or ISO 8601 (2026-01-01T10:00:01Z; no zone: UTC): "
                     "the queue offset stored then (needs --topic, --queue-id)")
    p.add_argument("--index-type", choices=list(lk.INDEX_TYPES), help="--key: a typed query, as Java 5.4+'s and rocketmq-rust's queryMessage take one: "
                   "U looks topic#U#key up (how rocketmq-rust indexes a UNIQ_KEY), T topic#T#key (a record's TAGS, 5.4+); default: topic#key")
    p.add_argument("--topic", help="the topic: with --key (its index entries are topic#key) and with --time")
    p.add_argument("--queue-id", type=int, help="the queue id, with --time")
    p.add_argument("--boundary", choices=["LOWER", "UPPER"], default="LOWER", help="with --time: first at/after (LOWER) or last at/before (UPPER)")
    add_release_option(p)
    p.add_argument("--raw", action="store_true", help="the raw view: every property pair as on disk (RocketMQ's map drops empty values); with --key also the raw index answer (hash matches, collisions included)")
    p.add_argument("--decompress", action="store_true", help="show a compressed body (sysFlag COMPRESSED) inflated")
    p.add_argument("--json", action="store_true", help="print matching records as JSON lines (the keys of `dump --json`)")
    return p


def _served(store, topic: str, queue_id: int, queue_offset: int):
    """The record a queue unit serves (RocketMQ's getMessage), with a warning on stderr
    when it is another queue's."""
    entry, rec = lk.get_message(store, topic, queue_id, queue_offset)
    note = lk.foreign_record_note(store, topic, queue_id, queue_offset, rec)
    if note:
        print(f"warning: {note}", file=sys.stderr)
    served = lk.served_note(entry, rec)
    if served:
        print(f"warning: {rec.file} @ {rec.file_offset}: {served}", file=sys.stderr)
    inner = lk.batch_note(store, topic, queue_id, queue_offset)
    if inner:
        print(f"note: {inner}", file=sys.stderr)
    return rec


def run(args) -> int:
    with open_from_args(args) as store:
        records = []
        if args.key is not None:
            if not args.topic:
                raise RmqlabError("--key needs --topic (the index key is topic#key)")
            cap = args.max if args.max is not None else store.config.max_msgs_num_batch
            source = {"files": lk.INDEX_FILES, "rocksdb": lk.ROCKSDB_KEYS}.get(args.index)
            writer = release(tell_release(store.root, store.config, told=args.rocketmq_version).candidates[0])
            res = lk.query_by_key(store, args.topic, args.key, cap, source=source, index_type=args.index_type, uniq_type=writer.uniq_index_type)
            records = res.records
            if writer.uniq_index_type and not args.index_type:
                typed = lk.query_by_key(store, args.topic, args.key, cap, source=source, index_type="U", uniq_type=writer.uniq_index_type)
                if typed.records:
                    print(f"note: {writer.title} wrote this store and indexes a UNIQ_KEY as {args.topic}#U#{args.key}: a Java broker's queryMessage "
                          f"(this answer, {args.topic}#{args.key}) finds {len(res.records)} record(s) by it, rocketmq-rust's query by unique key "
                          f"(--index-type U) {len(typed.records)}", file=sys.stderr)
            for p in store.index.problems if res.source == lk.INDEX_FILES else []:
                print(f"warning: {p} (this file is left out of the key lookup)", file=sys.stderr)
            if len(res.raw_offsets) >= cap:
                print(f"note: the answer is capped at {cap} index hit(s) (RocketMQ's maxMsgsNumBatch caps queryMessage so; --max N to see more)", file=sys.stderr)
            if not args.json:
                what = "hash collision(s)" if res.source == lk.INDEX_FILES else "entry(ies) of another key sharing its prefix"
                print(f"{res.topic}#{res.key} ({res.source}): {len(res.raw_offsets)} index hit(s), {len(res.records)} record(s) carry the key, {len(res.collisions)} {what}")
                if res.past_end:
                    print(f"  {len(res.past_end)} hit(s) point past the end of the log (bytes a recovery cut; RocketMQ serves none): {res.past_end}")
                if args.raw:
                    print(f"  raw index answer ({'newest first' if res.source == lk.INDEX_FILES else 'by hour, then key'}): {res.raw_offsets}")
        elif args.msg_id is not None:
            writer = release(tell_release(store.root, store.config, told=args.rocketmq_version).candidates[0])
            found = lk.look_by_any_message_id(store, args.msg_id, topic=args.topic, uniq_type=writer.uniq_index_type)
            print(f"note: {found.note}", file=sys.stderr)
            records = found.records
        elif args.offset is not None:
            records = [store.commitlog.read(args.offset)]
        elif args.queue is not None:
            try:
                topic, qid, qoff = args.queue.rsplit(":", 2)
                qid, qoff = int(qid), int(qoff)
            except ValueError:
                raise RmqlabError(f"--queue wants TOPIC:QID:OFFSET, got {args.queue!r}") from None
            records = [_served(store, topic, qid, qoff)]
        else:
            if args.topic is None or args.queue_id is None:
                raise RmqlabError("--time needs --topic and --queue-id")
            off = lk.offset_by_time(store, args.topic, args.queue_id, args.time, args.boundary)
            cq = store.consume_queue(args.topic, args.queue_id)
            lo, hi = cq.valid_range(store.commitlog.min_offset)
            if not args.json:
                print(f"{args.topic}/{args.queue_id} at {args.time} ({fmt_time(args.time)}, {args.boundary}): queue offset {off}" + ("" if lo <= off < hi else f" (past the last entry; queue holds [{lo}, {hi}))"))
                dead = lk.entries_past_the_log(store, args.topic, args.queue_id)
                if dead:
                    print(f"  the queue's last {dead} unit(s) point at or past the end of the log (a crash; not recovered yet): "
                          f"RocketMQ's recovery cuts them, and then the queue holds [{lo}, {hi - dead}) and answers from that", file=sys.stderr)
            if lo <= off < hi:
                records = [_served(store, args.topic, args.queue_id, off)]
        for rec in records:
            if args.json:
                print_json(rec.to_dict())
            else:
                print(record_detail(rec, raw=args.raw, decompress=args.decompress))
                print()
    return 0 if records or args.time is not None else 1
