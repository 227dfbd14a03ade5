"""``rmqlab transactions STORE`` — the transaction half messages a 5.4+ broker keeps in
RocksDB as not yet committed or rolled back.

With ``transRocksDBEnable`` (Java ``TransMessageRocksDBStore``) a half message put to
``RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC`` gets a key in ``rocksdbstore/``'s ``trans`` family;
its op message (``RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC``, ``TRANS_OFFSET``) deletes it.
What is left is what the broker's check service asks producers about.  Lists each with
the record it names.  Exit status: 0; 1 when the store keeps no transactions in RocksDB.
"""

from __future__ import annotations

import argparse
import sys

from .common import add_store_options, open_from_args, print_json
from . import HELP


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("transactions", help=HELP["transactions"], description=__doc__)
    add_store_options(p)
    p.add_argument("--json", action="store_true", help="one JSON object per half message")
    return p


def run(args) -> int:
    from ..render.text import fmt_time
    from ..store.rocksdb_message import transaction_messages

    with open_from_args(args, strict=False) as store:
        db = store.message_rocksdb
        if db is None or not db.has_transactions():
            print(f"rmqlab transactions: {args.store}: no transactions in RocksDB (rocksdbstore/'s trans family is empty or absent: "
                  "transRocksDBEnable=false, or a broker before 5.4)", file=sys.stderr)
            return 1
        pending = transaction_messages(store)
        last = db.last_offset_py("trans")
    if args.json:
        for p in pending:
            print_json(p.to_dict())
        return 0
    print(f"transactions in RocksDB, {args.store}: {len(pending)} half message(s) not ended; written up to offset {last} (lastOffsetPy)")
    if pending:
        print(f"{'physical':>12}  {'checks':>6}  {'stored at':<25} {'real topic':<28} transaction id / keys")
        for p in pending:
            e, r = p.entry, p.record
            when = fmt_time(r.store_timestamp) if r is not None else "-"
            print(f"{e.offset_py:>12}  {e.check_times:>6}  {when:<25} {e.topic:<28} {e.transaction_id}" + (f"  keys {r.java_properties.get('KEYS')}" if r is not None and r.java_properties.get("KEYS") else ""))
            if p.problem:
                print(f"{'':>12}  warning: {p.problem}")
    return 0
