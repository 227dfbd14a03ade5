"""``rmqlab info STORE`` — files, sizes, offset ranges, counts, checkpoint, abort/lock state."""

from __future__ import annotations

import argparse

from ..render.text import fmt_time, short
from ..store.release import ReleaseReading
from ..store.summary import summarize
from ..store.reader import StoreReader
from .common import add_progress_option, add_store_options, commitlog_bytes, next_start_of, print_json, progress_bar, sizes_from_args
from . import HELP


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("info", help=HELP["info"], description=__doc__)
    add_store_options(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-scan", action="store_true", help="do not walk the commitlog (no record counts)")
    add_progress_option(p)
    return p


def run(args) -> int:
    cfg, sources = sizes_from_args(args)
    asked = next_start_of(args, cfg)
    with StoreReader(args.store, cfg, strict=False, log_end=asked.log_end, queues_truncated=asked.queues_truncated) as store, progress_bar(args, 0 if args.no_scan else commitlog_bytes(args.store, cfg), "info") as bar:
        s = summarize(store, scan=not args.no_scan, progress=bar)
        where = (f"DLedger entries in {store.dledger_dir.name}/data/" if store.dledger_dir is not None
                 else ", ".join(str(d) for d in store.commitlog_dirs) if len(store.commitlog_dirs) > 1 else "")
    if args.json:
        print_json(dict(s.to_dict(), size_sources=sources))
        return 0
    print(f"store {s.root}")
    print("  sizes:")
    for k, v in s.config.items():
        print(f"    {k} = {v}  ({sources[k]})")
    if s.load_refused:
        print(f"RocketMQ would refuse to load this store (MappedFileQueue.load): {len(s.load_refused)} commitlog file(s) of the wrong size, listed below")
    print(f"commitlog{f' ({where})' if where else ''}: {len(s.commitlog_files)} file(s), min offset {s.commitlog_min_offset}" + (f", end of log {s.commitlog_end_offset} (where the next start ends it)" if s.commitlog_end_offset is not None else ""))
    for name, size in s.commitlog_files:
        print(f"  {name}  {size:>12} bytes")
    if not args.no_scan:
        print(f"  {s.records} messages, {s.blanks} BLANK end-of-file records, {s.crc_failures} CRC failures")
        if s.stopped_at:
            print(f"  the record chain from the first file breaks at {s.chain_end}, at damage: {s.stopped_at} (the counts are of the records before it)")
        print("  messages per queue:")
        for q, n in s.per_queue.items():
            print(f"    {short(q, 60):<40} {n:>8}")
        if s.features:
            print("  format features seen:")
            for k, n in s.features.items():
                print(f"    {k:<40} {n:>8}")
    print(f"consumequeue: {len(s.consume_queues)} queue(s)")
    for q in s.consume_queues:
        where = "in RocksDB" if q.get("kind") == "RocksDB" else f"{q['files']} file(s)" + (" (batch queue)" if q.get("kind") == "batch queue" else "")
        print(f"  {short(q['queue'], 60):<40} offsets [{q['min_offset']}, {q['max_offset']})  {where}  max physic offset {q['max_physic_offset']}")
    if s.timer:
        t = s.timer
        read = f"{fmt_time(t['last_read_time_ms'])}" if t["last_read_time_ms"] else "- (no config/timercheck)"
        print(f"timer store: {t['timer_log_units']} timer-log unit(s), {t['units_to_fire']} still to fire; the wheel has fired every slot before {read}; "
              f"the timer queue holds {t['timer_queue_max_offset']} message(s), enqueued up to {t['timer_queue_offset_enqueued']} (`rmqlab timers` lists the pending ones)")
    print(f"index: {len(s.index_files)} file(s)")
    for f in s.index_files:
        print(
            f"  {f['file']}  entries {f['index_count'] - 1:>8}  slots used {f['hash_slot_count']:>8}  "
            f"phy [{f['begin_phy_offset']}, {f['end_phy_offset']}]  {fmt_time(f['begin_timestamp'])} .. {fmt_time(f['end_timestamp'])}"
        )
    if s.message_rocksdb:
        m = s.message_rocksdb
        kinds = {"K": "KEYS", "T": "TAGS", "U": "UNIQ_KEY"}
        entries = ", ".join(f"{n} {kinds.get(t, t)}" for t, n in sorted(m["index_entries"].items())) or "none"
        print(f"rocksdbstore/ (5.4+): key entries {entries}, written up to offset {m['index_last_offset_py']}"
              + (f" (last stored {fmt_time(m['index_last_store_timestamp'])})" if m["index_last_store_timestamp"] else ""))
        print(f"  {m['pending_transactions']} transaction half message(s) not ended (`rmqlab transactions`), written up to offset {m['trans_last_offset_py']}; "
              f"{m['timers']} timer message(s) waiting (`rmqlab timers`)")
        for bad in m["malformed"]:
            print(f"  malformed: {bad}")
    if s.checkpoint:
        cp = s.checkpoint
        print("checkpoint:")
        for k, v in cp.items():
            print(f"  {k:<24} {v}" + (f"  ({fmt_time(v)})" if k.endswith("timestamp") and v else ""))
    else:
        print("checkpoint: absent")
    reading = ReleaseReading.from_dict(s.release)
    print(f"written by: {reading.describe()}"
          + ("; their recoveries differ where a start file is decided differently: `rmqlab recover` shows each" if len(reading.candidates) > 1 else ""))
    print("abort: " + ("absent (last exit was clean)" if s.abort is None else f"PRESENT (last exit was not clean; content {s.abort!r})"))
    print(f"lock: {s.lock}")
    print("files of the root (what rmqlab does with each):")
    for part in s.layout:
        print(f"  {part['path']:<34} {part['kind']}: {part['handling']}" + (f" — {part['note']}" if part["note"] else "")
              + (f"; recover: not modelled ({part['recovery']})" if part["recovery"] else f"; recover: modelled ({part['recovered']})" if part.get("recovered") else ""))
    for p in s.problems:
        print(f"problem: {p}")
    return 0
