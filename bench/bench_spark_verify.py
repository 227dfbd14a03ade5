"""``rmqlab.spark.verify`` against ``rmqlab verify``, measured in one run.

On one generated store (default 1 GiB, 256 MiB commitlog files, ~400-byte records,
consume queues and index: the store of ``bench_spark_scaling.py``):

1. the baseline: ``rmqlab verify --json`` (one process), records/s;
2. ``rmqlab.spark.verify`` on ``local[1]`` and ``local[2]``, each in a process of its
   own: the first call in a fresh SparkContext (its Python workers start inside the
   timing; the JVM's own start, before it, is printed apart) and a second, warm call.

Prints records/s, spark.verify/``rmqlab verify`` (goal ≥ 0.3× on ``local[2]``),
``local[2]``/``local[1]`` (goal ≥ 1.6×), whether the findings are the same, and peak
RSS (the driver's; ``rmqlab verify``'s counts the store pages it mapped).  The machine is
noisy: ``--runs`` repeats the whole comparison and prints each.

    python bench/bench_spark_verify.py                  # 1 GiB store (generated once, reused)
    python bench/bench_spark_verify.py --size 256MiB --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _stores import child, save_results  # noqa: E402
from rmqlab.lab.generate import parse_size  # noqa: E402


def _findings_key(rows) -> list:
    return sorted(json.dumps([r["kind"], r["severity"], r["file"], r["offset"]]) for r in rows)


def measure_spark(store: str, cores: int) -> dict:
    import rmqlab.spark
    from rmqlab.spark.session import local_spark

    t = time.perf_counter()
    spark = local_spark(cores, "bench-verify", shuffle_partitions=4, driver_memory="2g")
    out = {"session": time.perf_counter() - t}
    for run in ("cold", "warm"):
        t = time.perf_counter()
        rows = [r.asDict() for r in rmqlab.spark.verify(spark, store).collect()]
        out[run] = time.perf_counter() - t
    spark.stop()
    out["findings"] = _findings_key(rows)
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def measure_cli(store: str) -> dict:
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rmqlab", "verify", "--json", store], capture_output=True, text=True)
    dt = time.perf_counter() - t
    report = json.loads(done.stdout)
    return {"seconds": dt, "records": report["stats"]["records"], "findings": _findings_key(report["findings"]),
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1GiB", help="store size (default 1GiB)")
    ap.add_argument("--workdir", default=str(HERE / "out" / "stores"))
    ap.add_argument("--runs", type=int, default=2, help="times the whole comparison is repeated")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        what, store, *rest = a.child
        print(json.dumps(measure_cli(store) if what == "cli" else measure_spark(store, int(rest[0]))))
        return 0

    from bench_spark_scaling import ensure_store

    size = parse_size(a.size)
    store = str(ensure_store(Path(a.workdir), size))
    print(f"\nspark.verify benchmark  (cpus: {os.cpu_count()}, store {store}, {size >> 20} MiB)", flush=True)
    results = []
    for run in range(1, a.runs + 1):
        cli = child(__file__, ["cli", store])
        one, two = child(__file__, ["spark", store, "1"]), child(__file__, ["spark", store, "2"])
        n = cli["records"]
        rate = lambda s: n / s  # noqa: E731
        same = cli["findings"] == one["findings"] == two["findings"]
        print(f"\nrun {run}: {n:,} records, findings {len(cli['findings'])} — the same from all three: {same}")
        print(f"  rmqlab verify (baseline)   {cli['seconds']:6.1f} s  {rate(cli['seconds']):>12,.0f} rec/s   peak RSS {cli['peak_rss_mib']:.0f} MiB")
        for label, m in (("spark.verify local[1]", one), ("spark.verify local[2]", two)):
            print(f"  {label:26} {m['cold']:6.1f} s  {rate(m['cold']):>12,.0f} rec/s   (warm {m['warm']:.1f} s; the session's start before: {m['session']:.1f} s)   driver peak RSS {m['peak_rss_mib']:.0f} MiB")
        ratio, scale = cli["seconds"] / two["cold"], one["cold"] / two["cold"]
        print(f"  local[2] / rmqlab verify {ratio:.2f}x (goal >= 0.3x)   local[2] / local[1] {scale:.2f}x (goal >= 1.6x)"
              f"   warm: {cli['seconds'] / two['warm']:.2f}x, {one['warm'] / two['warm']:.2f}x")
        results.append({"cli": {k: v for k, v in cli.items() if k != "findings"}, "local[1]": {k: v for k, v in one.items() if k != "findings"},
                        "local[2]": {k: v for k, v in two.items() if k != "findings"}, "same_findings": same})
    save_results("bench_spark_verify", results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
