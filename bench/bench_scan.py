"""Scan benchmark: how fast can a captured store be read?

For two generated stores — ~200-byte records and ~4 KiB records — it measures, in one
run on the same files:

1. raw read bandwidth: the commitlog files read into memory (page cache warm);
2. a plain per-record ``struct`` loop (the baseline: unpack every field, slice body,
   topic and properties, one Python tuple per record);
3. rmqlab's single-process bulk decoder (``rmqlab.scan.decode``, Arrow
   batches, CRCs checked), records/s and MB/s, and without CRC checks;
4. Spark ``local[2]`` through ``spark.read.format("rocketmq")``:
   ``groupBy('topic').agg(count('*'), sum('total_size'), sum(length('body')))`` —
   started after 1-3 are measured, so that no JVM shares the cores with them.
   The CPU time of the JVM and of the Python workers is read from ``/proc`` and
   set beside the decoder's (also run on one thread, as each Spark task runs it):
   how much work Spark does per record, and so the best ratio it could reach on
   this machine if that work kept every core busy.

and prints ratios and the goals (decoder ≥ 1,000,000 records/s on ~200-byte records,
≥ 50% of raw read bandwidth on 4 KiB records, Spark local[2] ≥ 1.6× single-process).

    python bench/bench_scan.py                 # 1 GiB stores (generated once, reused)
    python bench/bench_scan.py --quick         # 64 MiB stores, a smoke run
    python bench/bench_scan.py --size 2GiB --workdir /big/disk --no-spark
    python bench/bench_scan.py --store-small S1 --store-large S2   # existing stores

Stores are generated under ``--workdir`` (default ``bench/out/stores``, git-ignored)
and kept for the next run; ``--clean`` deletes them at the end.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import shutil
import struct
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from rmqlab.scan import decode as fd  # noqa: E402
from rmqlab.scan import kernels  # noqa: E402
from rmqlab.lab.generate import parse_size  # noqa: E402
from _stores import generated, spark_cpu  # noqa: E402

WORKLOADS = {
    # name: (body size, description)
    "small": ("24", "~200-byte records"),
    "large": ("3900-4000", "~4 KiB records"),
}


def commitlog_files(store: Path) -> list[Path]:
    d = store / "commitlog"
    return sorted(p for p in d.iterdir() if p.name.isdigit() and p.stat().st_size > 0)


def data_end(path: Path) -> int:
    """Bytes worth reading: a generated last file is sparse past its last record."""
    return path.stat().st_size


def ensure_store(workdir: Path, name: str, size: int, file_size: int) -> Path:
    body, _ = WORKLOADS[name]
    # stop a little short of whole files, so no nearly empty (sparse) last file is scanned
    target = max(size - min(1 << 20, size // 64), 1)
    return generated(workdir / f"{name}-{size}", target, f"body {body}", mapped_file_size=file_size, body_size=body, topics=8, queues=4, seed=1,
                     index=False, consume_queues=False)


def timed(fn, repeat=1, cpu=time.process_time):
    """Best wall time of ``repeat`` runs, the last result, and the CPU seconds of the
    best run (``cpu()`` after minus before; a dict of them is subtracted key by key)."""
    best = best_cpu = None
    out = None
    for _ in range(repeat):
        c = cpu()
        t = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t
        if best is None or dt < best:
            c2 = cpu()
            best, best_cpu = dt, ({k: c2[k] - c[k] for k in c} if isinstance(c, dict) else c2 - c)
    return best, out, best_cpu


# -- 1. raw read ----------------------------------------------------------------------------
def raw_read(files: list[Path]) -> int:
    total = 0
    buf = bytearray(64 << 20)
    view = memoryview(buf)
    for p in files:
        with open(p, "rb", buffering=0) as fh:
            while True:
                n = fh.readinto(view)
                if not n:
                    break
                total += n
    return total


# -- 2. the baseline: a plain struct loop -----------------------------------------------------
_HEAD = struct.Struct(">iIiiiqqiq8sq8siqi")  # V1, IPv4 hosts: totalSize .. bodyLength


def struct_loop(files: list[Path]) -> int:
    """One tuple per record, every field unpacked, body/topic/properties sliced."""
    n = 0
    unpack = _HEAD.unpack_from
    for p in files:
        with open(p, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
            pos, end = 0, len(m)
            while pos + 8 <= end:
                h = unpack(m, pos)
                size, magic = h[0], h[1]
                if magic != 0xDAA320A7:
                    break
                bl = h[-1]
                b0 = pos + 88
                body = m[b0 : b0 + bl]
                tl = m[b0 + bl]
                topic = m[b0 + bl + 1 : b0 + bl + 1 + tl].decode()
                pl = struct.unpack_from(">h", m, b0 + bl + 1 + tl)[0]
                props = m[b0 + bl + 3 + tl : b0 + bl + 3 + tl + pl]
                _row = (h, body, topic, props)
                n += 1
                pos += size
    return n


# -- 3. rmqlab's bulk decoder -----------------------------------------------------------------
QUERY_COLUMNS = ["topic", "total_size", "body"]


def fast_decode(files: list[Path], verify_crc: bool = True, columns=None) -> int:
    n = 0
    for p in files:
        with open(p, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
            for b in fd.decode_file(m, int(p.name), file=str(p), verify_crc=verify_crc, columns=columns):
                n += b.num_rows
    return n


# -- 4. Spark -------------------------------------------------------------------------------
def spark_session():
    from rmqlab.spark.session import local_spark

    return local_spark(2, "bench_scan", shuffle_partitions=2)


def spark_query(spark, store: Path, split_size: int, columns=None):
    from pyspark.sql import functions as F

    reader = spark.read.format("rocketmq").option("splitSize", str(split_size))
    if columns:
        reader = reader.option("columns", ",".join(columns))
    df = reader.load(str(store))
    rows = df.groupBy("topic").agg(F.count("*").alias("n"), F.sum("total_size").alias("bytes"), F.sum(F.length("body")).alias("body")).collect()
    return sum(r["n"] for r in rows if r["topic"] is not None), rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="64 MiB stores (smoke run)")
    ap.add_argument("--size", default=None, help="store size per workload (default 1GiB; --quick 64MiB)")
    ap.add_argument("--file-size", default="1GiB", help="commitlog file size of generated stores (default 1GiB)")
    ap.add_argument("--workdir", default=str(HERE / "out" / "stores"), help="where generated stores live")
    ap.add_argument("--store-small", help="use this existing store for the ~200-byte workload")
    ap.add_argument("--store-large", help="use this existing store for the ~4 KiB workload")
    ap.add_argument("--no-spark", action="store_true", help="skip the Spark measurement")
    ap.add_argument("--repeat", type=int, default=2, help="best of N runs for the single-process figures (default 2)")
    ap.add_argument("--clean", action="store_true", help="delete generated stores at the end")
    args = ap.parse_args(argv)

    size = parse_size(args.size or ("64MiB" if args.quick else "1GiB"))
    file_size = min(parse_size(args.file_size), max(size, 1 << 20))
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    stores = {
        "small": Path(args.store_small) if args.store_small else ensure_store(workdir, "small", size, file_size),
        "large": Path(args.store_large) if args.store_large else ensure_store(workdir, "large", size, file_size),
    }
    results = {}
    for name, store in stores.items():
        files = commitlog_files(store)
        nbytes = sum(p.stat().st_size for p in files)
        mb = nbytes / 1e6
        raw_read(files)  # warm the page cache
        t_raw, _, _ = timed(lambda: raw_read(files), args.repeat)
        t_struct, n_struct, _ = timed(lambda: struct_loop(files), 1)
        t_fast, n, cpu_fast = timed(lambda: fast_decode(files, True), args.repeat)
        t_nocrc, _, _ = timed(lambda: fast_decode(files, False), args.repeat)
        t_narrow, _, _ = timed(lambda: fast_decode(files, True, QUERY_COLUMNS), args.repeat)
        # the decoder on one thread, as each Spark task runs it: what one core does
        before = kernels.set_threads(1)
        try:
            t_one, _, _ = timed(lambda: fast_decode(files, True), args.repeat)
        finally:
            kernels.set_threads(before)
        r = {
            "store": str(store),
            "bytes": nbytes,
            "records": n,
            "avg_record_bytes": round(nbytes / max(n, 1), 1),
            "raw_read_MBps": round(mb / t_raw, 1),
            "struct_loop_recps": round(n_struct / t_struct),
            "decode_recps": round(n / t_fast),
            "decode_MBps": round(mb / t_fast, 1),
            "decode_cpu_s": round(cpu_fast, 2),
            "decode_one_thread_recps": round(n / t_one),
            "decode_nocrc_recps": round(n / t_nocrc),
            "decode_nocrc_MBps": round(mb / t_nocrc, 1),
            "decode_query_columns_recps": round(n / t_narrow),
        }
        r["decode_vs_raw"] = round(r["decode_MBps"] / r["raw_read_MBps"], 3)
        r["decode_vs_struct"] = round(r["decode_recps"] / r["struct_loop_recps"], 2)
        results[name] = r

    # Spark only after the single-process figures: a live JVM (GC, JIT threads) would
    # share the two cores with them
    spark = None if args.no_spark else spark_session()
    # Spark's usual 128 MiB, but at least 2 tasks per core; a task costs ~0.1-0.2 s
    # of fixed overhead (scheduling, Python worker hand-off), so not many more
    split_size = max(4 << 20, min(128 << 20, size // 4))
    if spark is not None:  # warm the JVM and the Python workers
        spark_query(spark, stores["large"], split_size)
    for name, store in stores.items():
        r = results[name]
        mb = r["bytes"] / 1e6
        n = r["records"]
        if spark is not None:
            # best of 2: the first run of a query also pays planning and worker start-up
            t_spark, (n_spark, _rows), cpu = timed(lambda: spark_query(spark, store, split_size), 2, cpu=spark_cpu)
            r["spark_local2_recps"] = round(n_spark / t_spark)
            r["spark_local2_MBps"] = round(mb / t_spark, 1)
            r["spark_vs_single"] = round(r["spark_local2_recps"] / r["decode_recps"], 2)
            r["spark_vs_one_thread"] = round(r["spark_local2_recps"] / r["decode_one_thread_recps"], 2)
            # the JVM's share is reading the workers' Arrow batches and turning every
            # column of every row into Spark rows (the Python Data Source API cannot
            # tell the workers which columns the query needs)
            r["spark_jvm_cpu_s"] = round(cpu["jvm"], 2)
            r["spark_python_cpu_s"] = round(cpu["python"], 2)
            # the most Spark could do on this machine with that much work: every core
            # busy from the first moment to the last, nothing else running
            cores = os.cpu_count() or 1
            best_wall = (r["spark_jvm_cpu_s"] + r["spark_python_cpu_s"]) / min(cores, 2)
            r["spark_ceiling_vs_single"] = round(n / best_wall / r["decode_recps"], 2) if best_wall > 0 else None
            assert n_spark == n, (n_spark, n)
            t_sp2, (n2, _rows), _ = timed(lambda: spark_query(spark, store, split_size, QUERY_COLUMNS), 2)
            r["spark_local2_columns_recps"] = round(n2 / t_sp2)
            r["spark_columns_vs_single_columns"] = round(r["spark_local2_columns_recps"] / r["decode_query_columns_recps"], 2)
            r["spark_columns_vs_single"] = round(r["spark_local2_columns_recps"] / r["decode_recps"], 2)

    print()
    print(f"scan benchmark  (cpus: {os.cpu_count()}, stores of {size >> 20} MiB each)")
    for name, r in results.items():
        print(f"\n[{name}] {WORKLOADS[name][1]}: {r['records']:,} records, {r['bytes'] / 1e6:,.0f} MB, avg {r['avg_record_bytes']} B/record")
        print(f"  raw read into memory       {r['raw_read_MBps']:>10,.0f} MB/s")
        print(f"  plain struct loop          {r['struct_loop_recps']:>10,} rec/s")
        print(f"  rmqlab decode (CRC on)     {r['decode_recps']:>10,} rec/s  {r['decode_MBps']:>8,.0f} MB/s   = {r['decode_vs_raw']:.0%} of raw read, {r['decode_vs_struct']}x struct loop")
        print(f"    CPU {r['decode_cpu_s']:.2f} s in {r['records'] / r['decode_recps']:.2f} s: {r['decode_cpu_s'] * r['decode_recps'] / r['records']:.1f} cores busy")
        print(f"  rmqlab decode, one thread  {r['decode_one_thread_recps']:>10,} rec/s   (as each Spark task runs it)")
        print(f"  rmqlab decode (CRC off)    {r['decode_nocrc_recps']:>10,} rec/s  {r['decode_nocrc_MBps']:>8,.0f} MB/s")
        print(f"  rmqlab decode, 3 columns   {r['decode_query_columns_recps']:>10,} rec/s   (topic, total_size, body: what the query reads)")
        if "spark_local2_recps" in r:
            print(
                f"  Spark local[2] groupBy     {r['spark_local2_recps']:>10,} rec/s  {r['spark_local2_MBps']:>8,.0f} MB/s   = {r['spark_vs_single']}x single-process (all columns), "
                f"{r['spark_vs_one_thread']}x one thread"
            )
            print(
                f"    CPU: JVM {r['spark_jvm_cpu_s']:.2f} s + Python workers {r['spark_python_cpu_s']:.2f} s "
                f"(single-process decode: {r['decode_cpu_s']:.2f} s); with both cores busy throughout, that work allows at most "
                f"{r['spark_ceiling_vs_single']}x single-process"
            )
            print(
                f"  ... with option columns    {r['spark_local2_columns_recps']:>10,} rec/s                 = {r['spark_columns_vs_single']}x single-process (all columns), "
                f"{r['spark_columns_vs_single_columns']}x single-process (3 columns)"
            )
    print("\ngoals:")
    s, lg = results["small"], results["large"]
    goals = [
        ("decode >= 1,000,000 rec/s on ~200-byte records", s["decode_recps"] >= 1_000_000, f"{s['decode_recps']:,} rec/s"),
        ("decode >= 50% of raw read on 4 KiB records", lg["decode_vs_raw"] >= 0.5, f"{lg['decode_vs_raw']:.0%}"),
    ]
    if spark is not None:
        for label, r in (("~200 B", s), ("4 KiB", lg)):
            goals.append((f"Spark local[2] >= 1.6x single-process ({label}, all columns)", r["spark_vs_single"] >= 1.6, f"{r['spark_vs_single']}x"))
            goals.append(
                (f"Spark local[2] >= 1.6x single-process ({label}, option columns vs same columns)", r["spark_columns_vs_single_columns"] >= 1.6, f"{r['spark_columns_vs_single_columns']}x")
            )
    for text, ok, fig in goals:
        print(f"  [{'met' if ok else 'NOT met'}] {text}: {fig}")
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    (out / "bench_scan.json").write_text(json.dumps({"size": size, "results": results}, indent=2))
    print(f"\nfigures written to {out / 'bench_scan.json'}")
    if spark is not None:
        spark.stop()
    if args.clean:
        for name, store in stores.items():
            if str(store).startswith(str(workdir)):
                shutil.rmtree(store, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
