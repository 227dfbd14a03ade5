"""Pushdown benchmark: what a query reads of a 1 GiB capture when its WHERE clause reaches
the commitlog source (``pushdown=true``), against the same query read without it, in one
run.

On a generated store (default 1 GiB, 256 MiB commitlog files, ~400-byte records, index
and consume queues, records 7.5 ms apart so the log spans about five hours), each query
is read through ``spark.read.format("rocketmq")`` on ``local[2]`` with pushdown off (the
baseline: every byte decoded, Spark filters) and on, best of ``--repeat`` after a warm-up:

* one key: ``topic = T AND uniq_key = U`` and ``topic = T AND keys = K`` (goal: ≤ 1% of
  the commitlog's bytes read; the rows are those ``rmqlab lookup --key`` returns);
* one msgId: ``msg_id = M``;
* one topic, one hour: ``topic = T AND store_timestamp in [h, h + 1 h)`` (goal: no
  commitlog file read whose records all lie outside that hour), and the same with
  ``pushdownQueues=true`` (the topic's records read through its consume queues), and
  one topic alone with it.

Bytes read are the plan's (:meth:`CommitLogReader.plan`: ranges whole, records at
positions by their size); the baseline reads every byte.  Each pair must give the same
rows, or the run says so.

    python bench/bench_spark_pushdown.py                 # 1 GiB store (generated once, reused)
    python bench/bench_spark_pushdown.py --size 256MiB   # a quicker run
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from _stores import generated, save_results  # noqa: E402
from rmqlab.lab.generate import parse_size  # noqa: E402

COLUMNS = "physical_offset,total_size,topic,queue_id,store_timestamp,msg_id,keys,uniq_key"
HOUR = 3_600_000


def ensure_store(workdir: Path, size: int) -> Path:
    return generated(workdir / f"pushdown-{size}", size, "body 250-300, 7.5 ms apart, queues and index", mapped_file_size=256 << 20,
                     body_size="250-300", topics=8, queues=4, seed=7, interval_us=7500)


def probes(store: Path) -> tuple[list[tuple[str, str]], dict]:
    """The queries, around a record in the middle of the log, and what the store says
    about them (files, and each file's first and last store time)."""
    import numpy as np

    from _stores import store_times
    from rmqlab.lookup import query_by_key
    from rmqlab.store import open_store

    with open_store(store) as s:
        files = [(f.file_from_offset, f.file_from_offset + f.file_size) for f in s.commitlog.queue.files]
        phy, when = store_times(store)
        mid = s.commitlog.read(int(phy[len(phy) // 2]))
        # a record with KEYS near the middle
        at = len(phy) // 2
        while not mid.java_properties.get("KEYS"):
            at += 1
            mid = s.commitlog.read(int(phy[at]))
        uniq, keys = mid.java_properties["UNIQ_KEY"], mid.java_properties["KEYS"]
        lookup = sorted(r.physical_offset for r in query_by_key(s, mid.topic, uniq).records)
        h = (int(mid.store_timestamp) // HOUR) * HOUR
        in_hour = (when >= h) & (when < h + HOUR)
        hour_files = [b for b, e in files if ((phy >= b) & (phy < e) & in_hour).any()]
        info = {"files": files, "hour_files": hour_files, "lookup": lookup, "hour": h, "records": int(len(phy)),
                "msg_id": mid.msg_id, "topic": mid.topic, "records_in_hour": int(np.count_nonzero(in_hour))}
    t = mid.topic
    return [
        ("one key (UNIQ_KEY)", f"topic = '{t}' AND uniq_key = '{uniq}'"),
        ("one key (KEYS)", f"topic = '{t}' AND keys = '{keys}'"),
        ("one msgId", f"msg_id = '{mid.msg_id}'"),
        ("one topic, one hour", f"topic = '{t}' AND store_timestamp >= {h} AND store_timestamp < {h + HOUR}"),
        ("one topic, one hour, pushdownQueues", f"topic = '{t}' AND store_timestamp >= {h} AND store_timestamp < {h + HOUR}"),
        ("one topic, pushdownQueues", f"topic = '{t}'"),
    ], info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1GiB", help="store size (default 1GiB)")
    ap.add_argument("--workdir", default=str(HERE / "out" / "stores"))
    ap.add_argument("--repeat", type=int, default=3, help="timings per query and setting, after a warm-up")
    a = ap.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    from pyspark.sql import SparkSession

    import rmqlab.spark
    from rmqlab.spark._source import push_filters
    from rmqlab.spark.commitlog_source import CommitLogReader
    from rmqlab.spark.session import WORKER_SETTINGS

    size = parse_size(a.size)
    store = ensure_store(Path(a.workdir), size)
    queries, info = probes(store)
    spark = (SparkSession.builder.master("local[2]").appName("bench-pushdown").config("spark.ui.enabled", "false")
             .config(map=WORKER_SETTINGS).getOrCreate())  # the workers as local_spark runs them
    rmqlab.spark.register(spark)
    log_bytes = sum(e - b for b, e in info["files"])
    print(f"\npushdown benchmark  (cpus: {os.cpu_count()}, store {store}, {size >> 20} MiB, {info['records']:,} records, local[2])", flush=True)

    def read(pushdown: bool, where: str, queues: bool = False):
        # a fresh DataFrame per query (Spark 4.3.0 keeps a pushed read on a DataFrame)
        df = (spark.read.format("rocketmq").option("columns", COLUMNS).option("pushdown", str(pushdown).lower())
              .option("pushdownQueues", str(queues).lower()).load(str(store)).where(where))
        t0 = time.perf_counter()
        rows = sorted(r.physical_offset for r in df.select("physical_offset").collect())
        return time.perf_counter() - t0, rows

    results = []
    for label, where in queries:
        # the plan Spark's partitions() makes, for its byte count and what narrowed it
        queues = "pushdownQueues" in label
        r = CommitLogReader({"path": str(store), "columns": COLUMNS, "pushdownqueues": str(queues).lower()})
        r.pushed, _ = push_filters(_filters(where), r.PUSH_EQUAL, r.PUSH_RANGE)
        plan = r.plan()
        timings = {}
        for on in (False, True):
            read(on, where, queues)  # warm-up
            got = [read(on, where, queues) for _ in range(a.repeat)]
            timings[on] = (statistics.median(t for t, _ in got), min(t for t, _ in got), got[0][1])
        same = timings[False][2] == timings[True][2]
        files_read = sorted({s.file_base for s in plan.splits})
        line = {"query": label, "where": where, "rows": len(timings[True][2]), "same_rows": same,
                "seconds_off": timings[False][0], "seconds_on": timings[True][0], "best_off": timings[False][1], "best_on": timings[True][1],
                "bytes_off": log_bytes, "bytes_on": plan.read_bytes, "plan": plan.describe(), "files_read": files_read}
        print(f"\n{label}: {where}")
        print(f"  rows {line['rows']} — the same with pushdown on and off: {same}")
        print(f"  pushdown off (baseline) {line['seconds_off']:7.2f} s (best {line['best_off']:.2f})   bytes read {log_bytes:>14,}")
        print(f"  pushdown on             {line['seconds_on']:7.2f} s (best {line['best_on']:.2f})   bytes read {plan.read_bytes:>14,}"
              f"   ({100 * plan.read_bytes / log_bytes:.4f}% of the log; {line['seconds_off'] / line['seconds_on']:.1f}x faster)")
        print(f"  plan: {plan.describe()}")
        if label.startswith("one key (UNIQ"):
            line["lookup_equal"] = timings[True][2] == info["lookup"]
            print(f"  the rows rmqlab lookup returns: {line['lookup_equal']}   goal <= 1% of the bytes: {plan.read_bytes <= log_bytes / 100}")
        if label.startswith("one topic, one hour"):
            line["hour_files"] = info["hour_files"]
            outside = [b for b in files_read if b not in info["hour_files"]]
            print(f"  files read {files_read}; files with records in the hour {info['hour_files']}; read outside the hour: {outside or 'none'}")
        results.append(line)
    save_results("bench_spark_pushdown", results)
    spark.stop()
    return 0


def _filters(where: str):
    """The pushed filters Spark makes of ``where`` (a conjunction of comparisons), as the
    source's pushFilters receives them."""
    from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual, LessThan

    out = []
    for part in where.split(" AND "):
        for op, cls in ((">=", GreaterThanOrEqual), ("<", LessThan), ("=", EqualTo)):
            if f" {op} " in part:
                col, val = (x.strip() for x in part.split(f" {op} ", 1))
                out.append(cls((col,), val.strip("'") if val.startswith("'") else int(val)))
                break
    return out


if __name__ == "__main__":
    sys.exit(main())
