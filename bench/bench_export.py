"""Export benchmark: the records as a Parquet dataset (``rmqlab export``,
``rmqlab.spark.export``), and Spark's own Parquet reader on it, against the decoder on one
thread in the same run.

On the scaling benchmark's generated store (default 1 GiB, 2.4 M records of ~400 bytes),
measured in one run, each in a process of its own:

1. the baseline: the decoder on one thread, all columns (what an export decodes) and the
   narrow query's columns (``topic,total_size``), records/s;
2. ``rmqlab export`` (one process) and ``rmqlab.spark.export`` on ``local[1]`` and
   ``local[2]`` into a fresh directory (Spark: a first call in a fresh SparkContext,
   whose Python workers start inside it, and a second into another fresh directory):
   records/s, and per core against the all-column decoder (goal ≥ 0.5×);
3. ``spark.read.parquet(OUT)`` on ``local[2]``, the narrow query (count and sum of
   ``total_size`` per topic), best of ``--repeat`` after a warm-up: per core against the
   narrow decoder (goal ≥ 3×), and against the commitlog source's same query; and the
   same query with a filter that every row group's statistics rule out: what a query
   costs Spark before it reads a row.

The three exports must hold the same rows (counted per topic), or the run says so.

    python bench/bench_export.py                 # 1 GiB store (generated once, reused)
    python bench/bench_export.py --size 256MiB   # a quicker run
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from _stores import child, save_results  # noqa: E402
from rmqlab.lab.generate import parse_size  # noqa: E402


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _session(master: str):
    from pyspark.sql import SparkSession

    import rmqlab.spark
    from rmqlab.spark.session import WORKER_SETTINGS

    spark = (SparkSession.builder.master(master).appName("bench-export").config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
             .config(map=WORKER_SETTINGS).getOrCreate())  # the workers as local_spark runs them
    rmqlab.spark.register(spark)
    return spark


def _per_topic(out: str) -> dict:
    import pyarrow.dataset as ds

    t = ds.dataset(out, format="parquet", partitioning="hive", exclude_invalid_files=True).to_table(columns=["topic"])
    counts = t.group_by("topic").aggregate([("topic", "count")])
    return dict(zip(counts.column("topic").to_pylist(), counts.column("topic_count").to_pylist()))


def measure_cli(store: str, out: str) -> dict:
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rmqlab", "export", store, out, "--json"], capture_output=True, text=True)
    dt = time.perf_counter() - t
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return {"seconds": dt, "rows": json.loads(done.stdout)["rows"], "per_topic": _per_topic(out)}


def measure_spark_export(store: str, out: str, cores: int) -> dict:
    import rmqlab.spark

    t0 = time.perf_counter()
    spark = _session(f"local[{cores}]")
    session = time.perf_counter() - t0
    t = time.perf_counter()
    run, _ = rmqlab.spark.export(spark, store, out)
    dt = time.perf_counter() - t
    # again into a fresh directory: the workers started
    t = time.perf_counter()
    rmqlab.spark.export(spark, store, out + "-again")
    warm = time.perf_counter() - t
    spark.stop()
    return {"seconds": dt, "warm": warm, "session": session, "rows": sum(n for _, n in run.files), "per_topic": _per_topic(out), "peak_rss_mib": _peak_rss_mib()}


def measure_parquet_read(store: str, out: str, repeat: int) -> dict:
    from pyspark.sql import functions as F

    spark = _session("local[2]")

    def timed(df):
        best = None
        for _ in range(repeat + 1):  # the first warms the workers and the page cache
            t = time.perf_counter()
            rows = df.groupBy("topic").agg(F.count("*"), F.sum("total_size")).collect()
            dt = time.perf_counter() - t
            best = dt if best is None else min(best, dt)
        return best, sorted(tuple(r) for r in rows)

    pq, pq_rows = timed(spark.read.parquet(out).select("topic", "total_size"))
    # what the query costs Spark whatever it reads: the same query with a filter every row
    # group's statistics rule out (no record is smaller than its header)
    fixed, none = timed(spark.read.parquet(out).select("topic", "total_size").where("total_size < 0"))
    src, src_rows = timed(spark.read.format("rocketmq").option("columns", "topic,total_size").load(store).where("topic IS NOT NULL"))
    spark.stop()
    return {"parquet": pq, "parquet_fixed": fixed, "fixed_rows": len(none), "source": src, "same": pq_rows == src_rows, "records": sum(r[1] for r in pq_rows)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1GiB", help="store size (default 1GiB)")
    ap.add_argument("--workdir", default=str(HERE / "out" / "stores"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        what, store, out, *rest = a.child
        if what == "decoder":
            from bench_spark_scaling import measure_decoder

            print(json.dumps(measure_decoder(store, int(rest[0]))))
        elif what == "cli":
            print(json.dumps(measure_cli(store, out)))
        elif what == "spark":
            print(json.dumps(measure_spark_export(store, out, int(rest[0]))))
        else:
            print(json.dumps(measure_parquet_read(store, out, int(rest[0]))))
        return 0

    from bench_spark_scaling import ensure_store

    size = parse_size(a.size)
    store = str(ensure_store(Path(a.workdir), size))
    tmp = Path(tempfile.mkdtemp(prefix="bench-export-", dir=str(HERE / "out")))
    print(f"\nexport benchmark  (cpus: {os.cpu_count()}, store {store}, {size >> 20} MiB)", flush=True)
    try:
        dec = child(__file__, ["decoder", store, "-", str(a.repeat)])
        n_all, n_narrow = dec["all"]["records"], dec["narrow"]["records"]
        base_all, base_narrow = n_all / dec["all"]["seconds"], n_narrow / dec["narrow"]["seconds"]
        print(f"  decoder, one thread (baseline)   all columns {base_all:>12,.0f} rec/s   narrow {base_narrow:>12,.0f} rec/s")
        runs = {"cli": child(__file__, ["cli", store, str(tmp / "cli")])}
        for cores in (1, 2):
            runs[f"local[{cores}]"] = child(__file__, ["spark", store, str(tmp / f"spark{cores}"), str(cores)])
        same = len({json.dumps(r["per_topic"], sort_keys=True) for r in runs.values()}) == 1
        for label, m in runs.items():
            cores = 1 if label == "cli" else int(label[6])
            rate = m["rows"] / m["seconds"]
            print(f"  export, {label:9} {m['seconds']:6.1f} s  {m['rows']:,} rows  {rate:>12,.0f} rec/s   per core / decoder {rate / cores / base_all:.2f}x (goal >= 0.5x)"
                  + (f"   second call {m['warm']:.1f} s: {m['rows'] / m['warm'] / cores / base_all:.2f}x per core (the session's start before: {m['session']:.1f} s)" if "session" in m else ""))
        print(f"  the three exports hold the same rows per topic: {same}")
        rd = child(__file__, ["read", store, str(tmp / "spark2"), str(a.repeat)])
        pq_rate, src_rate = rd["records"] / rd["parquet"], rd["records"] / rd["source"]
        print(f"  narrow query, local[2]: Spark's Parquet reader on the export {rd['parquet']:.2f} s {pq_rate:>12,.0f} rec/s; "
              f"the commitlog source {rd['source']:.2f} s {src_rate:>12,.0f} rec/s; the same answer: {rd['same']}")
        print(f"  Parquet per core / decoder on one thread {pq_rate / 2 / base_narrow:.2f}x (goal >= 3x);  Parquet / commitlog source {pq_rate / src_rate:.1f}x")
        beyond = rd["parquet"] - rd["parquet_fixed"]
        print(f"  of which Spark's cost per query (the same query, every row group ruled out by its statistics, {rd['fixed_rows']} rows): {rd['parquet_fixed']:.2f} s;"
              f" the rows beyond it: {beyond:.2f} s = {rd['records'] / beyond / 2 / base_narrow:.2f}x the decoder per core" if beyond > 0 else "")
        save_results("bench_export", {"decoder": dec, "exports": runs, "read": rd, "same_rows": same})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
