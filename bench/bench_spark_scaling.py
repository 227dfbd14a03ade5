"""Spark scaling benchmark: what more cores buy, and where a row's time goes
(``spark.verify``: bench_spark_verify.py).

On one generated store (default 1 GiB, 256 MiB commitlog files, ~400-byte records,
consume queues and index), measured in one run:

1. the baseline: rmqlab's single-process decoder on one thread (as each Spark task
   runs it), records/s, for the narrow query's columns and for all columns;
2. ``spark.read.format("rocketmq")`` on ``local[1]``, ``local[2]`` and a standalone
   cluster of two one-core workers (started here from the pyspark package, as the
   tests start it), for a narrow query (``columns=topic,total_size``, count and sum
   per topic) and an all-column one (every column decoded, bodies summed);
3. Spark's floor in the same process: the narrow query over a data source that hands
   out ready-made Arrow batches of the same columns, rows, splits and batch size (no
   decoding): what Arrow's transfer into the JVM and Spark's operators cost alone; the
   all-column query over the store's own first batch of every column, handed out the
   same way; and the narrow source with one row per split: what Spark costs per task,
   whatever it reads;
4. the narrow query with 64 MiB splits (the source's default is 256 MiB): what more
   tasks cost;
5. for every query, the CPU seconds of the JVM and of the Python workers (``/proc``,
   as bench_scan.py reads them) against its wall seconds: how many cores it kept busy.

The sessions run their Python workers as :func:`rmqlab.spark.session.local_spark` does
(``WORKER_SETTINGS``: over Unix sockets, rmqlab's worker daemon).

Each Spark measurement runs in its own process (one SparkContext per process), best
of ``--repeat`` timings after a warm-up; peak RSS is the driver process's.  It prints
records/s, the ratios ``local[2]``/``local[1]`` (goal ≥ 1.8×) and Spark per core
against the decoder on one thread (goals ≥ 0.6× narrow, ≥ 0.4× all columns), what that
predicts for a 16-core worker, and per core where a row's time goes, narrow and all
columns: the source's time per row against the floor's (goal ≤ 1.3×).

    python bench/bench_spark_scaling.py                 # 1 GiB store (generated once, reused)
    python bench/bench_spark_scaling.py --size 128MiB   # a quicker run
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from _stores import child, save_results, spark_cpu  # noqa: E402
from rmqlab.lab.generate import parse_size  # noqa: E402

QUERIES = ("narrow", "all")


def ensure_store(workdir: Path, size: int) -> Path:
    from _stores import generated

    return generated(workdir / f"scaling-{size}", size, "body 250-300, queues and index", mapped_file_size=256 << 20, body_size="250-300",
                     topics=8, queues=4, seed=7)


# -- measurements, each in a process of its own ---------------------------------------------
def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure_decoder(store: str, repeat: int) -> dict:
    from rmqlab.scan import decode as fd, kernels

    kernels.set_threads(1)
    import mmap

    maps = []
    for p in sorted(p for p in (Path(store) / "commitlog").iterdir() if p.name.isdigit()):
        with open(p, "rb") as fh:
            maps.append((int(p.name), mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)))
    out = {}
    for query, cols in (("narrow", ["topic", "total_size"]), ("all", None)):
        best = None
        for _ in range(repeat + 1):  # the first run warms the page cache
            t = time.perf_counter()
            n = sum(b.num_rows for base, mm in maps for b in fd.decode_file(mm, base, columns=cols))
            dt = time.perf_counter() - t
            best = dt if best is None else min(best, dt)
        out[query] = {"records": n, "seconds": best}
    return out


def _floor_source():
    """``rmqlab_bench_floor``: ``rows`` rows of (topic, total_size) in ``partitions``
    splits, as Arrow batches of the commitlog source's size, built once per split and
    handed out again and again (no decoding at all).  With the option ``store``, the
    rows are every column of the commitlog source, the batch the source's own first
    batch of that store (real topics, bodies and properties)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from rmqlab.spark.commitlog_source import DEFAULT_BATCH_ROWS, SCHEMA, CommitLogReader

    class Reader(DataSourceReader):
        def __init__(self, options):
            self.rows, self.parts = int(options["rows"]), int(options["partitions"])
            self.store = options.get("store")

        def partitions(self):
            share = -(-self.rows // self.parts)
            return [InputPartition(min(share, self.rows - i * share)) for i in range(self.parts) if self.rows > i * share]

        def read(self, part):
            import numpy as np
            import pyarrow as pa

            if self.store:
                # the source's first rows, repeated if the store has fewer than a batch
                source, got, n = CommitLogReader({"path": self.store}), [], 0
                for b in source.read(source.partitions()[0]):
                    got.append(b)
                    n += b.num_rows
                    if n >= DEFAULT_BATCH_ROWS:
                        break
                rows = pa.Table.from_batches(got)
                rows = pa.concat_tables([rows] * -(-DEFAULT_BATCH_ROWS // max(rows.num_rows, 1)))
                batch = rows.slice(0, DEFAULT_BATCH_ROWS).combine_chunks().to_batches()[0]
            else:
                topics = pa.array([f"Topic{i}" for i in range(8)])
                rng = np.random.default_rng(7)
                batch = pa.RecordBatch.from_arrays(
                    [topics.take(pa.array(rng.integers(0, 8, DEFAULT_BATCH_ROWS))), pa.array(rng.integers(300, 420, DEFAULT_BATCH_ROWS).astype(np.int32))],
                    names=["topic", "total_size"])
            left = part.value
            while left > 0:
                yield batch if left >= DEFAULT_BATCH_ROWS else batch.slice(0, left)
                left -= DEFAULT_BATCH_ROWS

    class Floor(DataSource):
        @classmethod
        def name(cls):
            return "rmqlab_bench_floor"

        def schema(self):
            return SCHEMA if "store" in self.options else "topic string, total_size int"

        def reader(self, schema):
            return Reader(self.options)

    return Floor


def measure_spark(store: str, master: str, repeat: int) -> dict:
    from pyspark.sql import SparkSession, functions as F

    import rmqlab.spark
    from rmqlab.spark.session import WORKER_SETTINGS

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    b = (SparkSession.builder.master(master).appName("bench-scaling").config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
         .config(map=WORKER_SETTINGS))  # the workers as local_spark runs them
    if master.startswith("spark://"):
        b = b.config("spark.executor.cores", "1").config("spark.executor.memory", "2g")
    else:
        b = b.config("spark.driver.memory", "2g")
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    rmqlab.spark.register(spark)

    def narrow(split_size=None):
        r = spark.read.format("rocketmq").option("columns", "topic,total_size")
        df = (r.option("splitSize", split_size) if split_size else r).load(store)
        return df.groupBy("topic").agg(F.count("*").alias("n"), F.sum("total_size")).collect()

    def all_columns(df=None):
        df = spark.read.format("rocketmq").load(store) if df is None else df
        return df.groupBy("topic").agg(F.count("*").alias("n"), F.sum("total_size"), F.sum(F.length("body")), F.count("properties")).collect()

    # Spark's floor: the narrow query over ready-made Arrow batches of the same columns,
    # rows, splits and batch size — all that is left is Arrow's transfer into the JVM and
    # Spark's own operators
    rows = sum(r["n"] for r in narrow())
    splits = spark.read.format("rocketmq").option("columns", "topic,total_size").load(store).rdd.getNumPartitions()
    spark.dataSource.register(_floor_source())

    def floor(rows=rows, parts=splits):
        df = spark.read.format("rmqlab_bench_floor").option("rows", rows).option("partitions", parts).load()
        return df.groupBy("topic").agg(F.count("*").alias("n"), F.sum("total_size")).collect()

    def floor_all():
        return all_columns(spark.read.format("rmqlab_bench_floor").option("rows", rows).option("partitions", splits).option("store", store).load())

    out = {"splits": splits}
    queries = (("narrow", narrow), ("all", all_columns), ("floor", floor), ("floor_all", floor_all), ("tasks", lambda: floor(4 * splits, 4 * splits)), ("one_task", lambda: floor(1, 1)), ("narrow_64MiB", lambda: narrow("64MiB")))
    # warm-up: every query twice before any is timed (workers started, page cache warm,
    # the JVM's code compiled for all of them: timed right after its own one warm-up, the
    # narrow query ran at 1.59 / 1.78 M rows/s on local[1] / local[2], and at 2.03 / 2.66
    # when other queries had run before it)
    for _ in range(2):
        for _query, fn in queries:
            fn()
    for query, fn in queries:
        best, n = None, 0
        # CPU seconds of the JVM and of the Python workers over the timed runs: whether
        # a query waits, or keeps the cores busy
        cpu0, t0 = spark_cpu(), time.perf_counter()
        for _ in range(repeat):
            t = time.perf_counter()
            n = sum(r["n"] for r in fn())
            dt = time.perf_counter() - t
            best = dt if best is None else min(best, dt)
        cpu1, wall = spark_cpu(), time.perf_counter() - t0
        out[query] = {"records": n, "seconds": best, "wall_each": wall / repeat,
                      "cpu_jvm": (cpu1["jvm"] - cpu0["jvm"]) / repeat, "cpu_python": (cpu1["python"] - cpu0["python"]) / repeat}
    spark.stop()
    out["peak_rss_mib"] = _peak_rss_mib()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1GiB", help="store size (default 1GiB)")
    ap.add_argument("--workdir", default=str(HERE / "out" / "stores"))
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--no-cluster", action="store_true", help="skip the standalone cluster")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        what, store, *rest = a.child
        fn = {"decoder": lambda: measure_decoder(store, a.repeat), "spark": lambda: measure_spark(store, rest[0], a.repeat)}[what]
        print(json.dumps(fn()))
        return 0

    size = parse_size(a.size)
    store = str(ensure_store(Path(a.workdir), size))
    print(f"\nSpark scaling benchmark  (cpus: {os.cpu_count()}, store {store}, {size >> 20} MiB)", flush=True)
    res = {"decoder": child(__file__, ["decoder", store])}
    for master in ("local[1]", "local[2]"):
        res[master] = child(__file__, ["spark", store, master])
    if not a.no_cluster:
        sys.path.insert(0, str(ROOT))
        from tests.spark.cluster import StandaloneCluster

        with tempfile.TemporaryDirectory(prefix="rmqlab-bench-cluster-") as d:
            cluster = StandaloneCluster(Path(d))
            try:
                res["cluster"] = child(__file__, ["spark", store, cluster.url])
            finally:
                cluster.stop()

    rate = lambda m, q: res[m][q]["records"] / res[m][q]["seconds"]  # noqa: E731
    print(f"\n{'':24}{'narrow (topic,total_size)':>28}{'all columns':>22}")
    rows = [("decoder, 1 thread", "decoder")] + [(m, m) for m in ("local[1]", "local[2]")] + ([("cluster, 2 workers x 1", "cluster")] if "cluster" in res else [])
    for label, key in rows:
        print(f"{label:24}{rate(key, 'narrow'):>22,.0f} rec/s{rate(key, 'all'):>16,.0f} rec/s")
    print()
    for q in QUERIES:
        two = rate("local[2]", q) / rate("local[1]", q)
        per_core = rate("local[2]", q) / 2 / rate("decoder", q)
        line = f"{q:7} local[2]/local[1] {two:.2f}x (goal >= 1.8x)   Spark per core / decoder 1 thread {per_core:.2f}x" + (" (goal >= 0.6x)" if q == "narrow" else " (goal >= 0.4x)")
        if "cluster" in res:
            line += f"   cluster/local[2] {rate('cluster', q) / rate('local[2]', q):.2f}x"
        print(line)
        print(f"        a 16-core worker at this per-core rate: ~{rate('local[2]', q) / 2 * 16:,.0f} rec/s")
    # where a row's time goes, per core: the decoder's share, and Spark's own (its
    # floor: the same query over ready-made batches)
    us = lambda r: 1e6 / r  # noqa: E731
    for q, fl in (("narrow", "floor"), ("all", "floor_all")):
        print(f"\nSpark's floor (ready-made Arrow batches, {q} query): " + ", ".join(
            f"{m} {rate(m, fl):,.0f} rec/s, per core {rate(m, fl) / cores / rate('decoder', q):.2f}x the decoder" for m, cores in (("local[1]", 1), ("local[2]", 2))))
        print(f"{'per row, per core (us)':24}{'decoder':>10}{'source':>10}{'floor':>10}{'source-floor':>14}{'source/floor':>20}")
        for m, cores in (("local[1]", 1), ("local[2]", 2)):
            src, flo = us(rate(m, q) / cores), us(rate(m, fl) / cores)
            print(f"{m:24}{us(rate('decoder', q)):>10.3f}{src:>10.3f}{flo:>10.3f}{src - flo:>14.3f}{src / flo:>18.2f}x (goal <= 1.3x)")
    # CPU: how many of the cores each query kept busy (JVM threads and Python workers)
    print("\nCPU seconds a query (JVM + Python workers) in its wall seconds: cores busy")
    for m in ("local[1]", "local[2]"):
        print(f"{m:10}" + "   ".join(f"{q} {res[m][q]['cpu_jvm']:.2f} + {res[m][q]['cpu_python']:.2f} in {res[m][q]['wall_each']:.2f} s: "
                                    f"{(res[m][q]['cpu_jvm'] + res[m][q]['cpu_python']) / res[m][q]['wall_each']:.2f}"
                                    for q in ("narrow", "floor", "all", "floor_all")))
    # Spark's own cost per task: the floor's source with one row per partition, 4 x the
    # splits partitions against one (per core: local[2] runs two at a time)
    per_task = {m: (res[m]["tasks"]["seconds"] - res[m]["one_task"]["seconds"]) / (4 * res[m]["splits"] - 1) * cores for m, cores in (("local[1]", 1), ("local[2]", 2))}
    print("Spark's own cost per Python task, per core (one-row tasks): " + ", ".join(f"{m} {t * 1000:.0f} ms" for m, t in per_task.items())
          + f"; the source's {res['local[1]']['splits']} splits of the narrow query: {per_task['local[1]'] * res['local[1]']['splits']:.2f} s of its "
          + f"{res['local[1]']['narrow']['seconds']:.2f} s on local[1]")
    print("narrow query, 64 MiB splits against the default's: " + ", ".join(
        f"{m} {rate(m, 'narrow_64MiB'):,.0f} rec/s ({rate(m, 'narrow_64MiB') / rate(m, 'narrow'):.2f}x)" for m in ("local[1]", "local[2]")))
    print(f"Spark driver peak RSS: local[1] {res['local[1]']['peak_rss_mib']:.0f} MiB, local[2] {res['local[2]']['peak_rss_mib']:.0f} MiB")
    save_results("bench_spark_scaling", res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
