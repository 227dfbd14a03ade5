"""RocksDB consume queues benchmark: what does reading a store whose queues are in
RocksDB (``storeType=defaultRocksDB``) cost against the same store with file queues?

On one generated store (default 512 MiB of ~200-byte records) and a copy whose
``consumequeue/`` is a RocksDB holding the same units (built once with RocksDB itself,
in RocketMQ's key and value layout: :mod:`rmqlab.format.rocksdb_queue`; the units'
store time is the record's), it runs each as its own process, in the same rounds:

* ``verify`` (every check) on both: units/s and the ratio RocksDB / files;
* ``queue --json`` of the largest queue on both;
* the peak *anonymous* memory of each (``RssAnon`` of the process tree, as
  ``bench_forensics.py`` measures it): the RocksDB units are spilled to file-backed
  pages, so the goal is the file queues' figure, not one that grows with the queues.

Every figure is the median of ``--runs`` runs (default 3).

    python bench/bench_rocksdb_queue.py                     # 512 MiB, generated once, reused
    python bench/bench_rocksdb_queue.py --size 128MiB --runs 1
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from rmqlab.lab.generate import parse_size  # noqa: E402
from _stores import derived_copy, generated, store_times  # noqa: E402
from bench_forensics import RMQLAB, _largest_queue, alternate  # noqa: E402


def rocksdb_queues(store: Path, out: Path) -> dict:
    """Give ``out``, a copy of ``store`` without its queues (``derived_copy``), a RocksDB
    ``consumequeue/`` of the same units."""
    import numpy as np
    from rocksdict import Options, Rdict, WriteBatch

    from rmqlab.format.rocksdb_queue import CHECKPOINT_KEY, CQ_VALUE_DTYPE, OFFSET_COLUMN_FAMILY, RocksDBOffsetValue, offset_key, queue_prefix
    from rmqlab.store import open_store

    built = out / "consumequeue"
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.create_missing_column_families(True)
    db = Rdict(str(built), options=opts, column_families={OFFSET_COLUMN_FAMILY: Options(raw_mode=True)})
    offsets = db.get_column_family(OFFSET_COLUMN_FAMILY)
    n = 0
    phy, when = store_times(store)  # every record's store time by physical offset
    with open_store(store) as s:
        top = 0
        for qid in s.queue_ids():
            cq = s.consume_queue(qid.topic, qid.queue_id)
            lo, hi = cq.valid_range()
            prefix = queue_prefix(qid.topic, qid.queue_id)
            for q0, e in cq.parts(lo, hi):
                vals = np.zeros(len(e), CQ_VALUE_DTYPE)
                for f in ("commitlog_offset", "size", "tags_code"):
                    vals[f] = e[f]
                vals["store_timestamp"] = when[np.searchsorted(phy, e["commitlog_offset"].astype(np.int64))]
                keys = np.arange(q0, q0 + len(e), dtype=">i8").tobytes()
                raw = vals.tobytes()
                wb = WriteBatch(raw_mode=True)
                for i in range(len(e)):
                    wb.put(prefix + keys[8 * i : 8 * i + 8], raw[28 * i : 28 * i + 28])
                db.write(wb)
                n += len(e)
            if hi > lo:
                first, last = cq.get(lo), cq.get(hi - 1)
                offsets[offset_key(qid.topic, qid.queue_id, True)] = RocksDBOffsetValue.build(dict(commitlog_offset=last.commitlog_offset, queue_offset=hi - 1))
                offsets[offset_key(qid.topic, qid.queue_id, False)] = RocksDBOffsetValue.build(dict(commitlog_offset=first.commitlog_offset, queue_offset=lo))
                top = max(top, last.commitlog_offset + last.size)
    offsets[CHECKPOINT_KEY] = top.to_bytes(8, "big")
    db.flush()
    db.close()
    (built / "rocksdict-config.json").unlink(missing_ok=True)
    return {"units": n}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="512MiB")
    ap.add_argument("--workdir", type=Path, default=HERE / "out" / "stores")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    size = parse_size(args.size)
    files = generated(args.workdir / f"forensics-{size}", size, "~200-byte records, queues and index", seed=1)
    rocks, made = derived_copy(files, "rocksdb", rocksdb_queues)
    units = made["units"]
    topic, qid = _largest_queue(files)
    stores = {"files": files, "RocksDB": rocks}
    commands = {
        "verify": lambda which: [*RMQLAB, "verify", str(stores[which])],
        "queue --json": lambda which: [*RMQLAB, "queue", str(stores[which]), "--topic", topic, "--queue-id", qid, "--json"],
    }
    print(f"store: {files} ({units} units) and its RocksDB copy; {args.runs} run(s) each, alternating")
    alternate(commands, ("files", "RocksDB"), args.runs, units)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
