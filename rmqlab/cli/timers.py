"""``rmqlab timers STORE`` — the timer messages of a 5.x store and which are still pending.

Reads the timer topic's queue (``rmq_sys_wheel_timer``), the timer log and wheel and
``config/timercheck`` as ``TimerMessageStore`` would at its next start: a message is
pending when the timer log does not hold it yet or its slot lies at or after the
checkpoint's ``lastReadTimeMs``; fired when its slot lies before it.  Lists the pending
ones (``--all``: every timer message, with its state).  A 5.4+ store keeping its
timers in RocksDB (``timerRocksDBEnable``, ``TimerMessageRocksDBStore``) lists those
instead.  Exit status: 0; 1 when the store has no timer store.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import add_store_options, open_from_args, print_json
from . import HELP


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("timers", help=HELP["timers"], description=__doc__)
    add_store_options(p)
    p.add_argument("--all", action="store_true", help="every timer message, fired ones too")
    p.add_argument("--json", action="store_true", help="one JSON object per timer message")
    return p


def run(args) -> int:
    from ..render.text import fmt_time
    from ..store.timer import PENDING, TimerStore, timer_messages

    with open_from_args(args, strict=False) as store:
        timer = TimerStore.of(store.root, store.config)
        if timer is None:
            db = store.message_rocksdb
            if db is not None and db.has_timers():
                return _rocksdb_timers(args, store, db)
            print(f"rmqlab timers: {args.store}: no timerwheel or timerlog/: this store has no timer store (timerWheelEnable=false, or a 4.x broker)", file=sys.stderr)
            return 1
        try:
            cp = timer.checkpoint()
            messages = timer_messages(store, timer)
            _, log_end = timer.units()
        finally:
            timer.close()
    shown = [m for m in messages if args.all or m.state == PENDING]
    if args.json:
        for m in shown:
            print_json(m.to_dict())
        return 0
    read = cp["last_read_time_ms"] if cp else None
    source = "config/" + Path(cp.get("source", "timercheck")).name if cp else "config/timercheck"
    print(f"timer store {args.store}: the wheel has fired every slot before " + (f"{fmt_time(read)} ({source} lastReadTimeMs {read})" if read else "- (no config/timercheck)"))
    if log_end is not None and log_end.torn:
        print(f"  the timer log ends in a torn unit at {log_end.file} @ {log_end.file_offset}: RocketMQ truncates it there at start")
    counts: dict[str, int] = {}
    for m in messages:
        counts[m.state] = counts.get(m.state, 0) + 1
    print("  " + (", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no timer messages"))
    if shown:
        print(f"{'state':<9} {'deliver at':<25} {'real topic/queue':<32} {'physical':>12}  {'timerlog':>10}  keys")
        for m in shown:
            when = fmt_time(m.deliver_ms) if m.deliver_ms is not None else "-"
            pos = "-" if m.timerlog_position is None else m.timerlog_position
            print(f"{m.state:<9} {when:<25} {f'{m.real_topic}/{m.real_queue_id}':<32} {m.physical_offset:>12}  {pos:>10}  {m.keys or ''}")
    return 0


def _rocksdb_timers(args, store, db) -> int:
    """5.4+ ``timerRocksDBEnable``: the timer messages ``TimerMessageRocksDBStore`` keeps
    in ``rocksdbstore/``'s ``timer`` family, by delivery time (every one listed: the
    family holds only those not delivered yet)."""
    from ..render.text import fmt_time
    from ..store.rocksdb_message import rocksdb_timer_messages

    pending, cps = rocksdb_timer_messages(store), db.timer_checkpoints()
    if args.json:
        for p in pending:
            print_json(p.to_dict())
        return 0
    scan, timeline = cps.get("sys_topic_scan_offset_checkpoint"), cps.get("timeline_checkpoint")
    print(f"timers in RocksDB (timerRocksDBEnable), {args.store}: {len(pending)} timer message(s) waiting; "
          f"the timer topic scanned up to queue offset {scan if scan is not None else '-'}, "
          f"the timeline delivered up to {fmt_time(timeline) if timeline else '- (not checkpointed yet)'}")
    if pending:
        print(f"{'deliver at':<25} {'physical':>12}  {'size':>6}  UNIQ_KEY")
        for p in pending:
            e = p.entry
            print(f"{fmt_time(e.delay_time):<25} {e.offset_py:>12}  {e.size_py:>6}  {e.uniq_key}" + (f"  warning: {p.problem}" if p.problem else ""))
    return 0
