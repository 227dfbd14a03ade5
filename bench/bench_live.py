"""Following a live broker: what it costs and how far behind it is (measured against a
real Apache RocketMQ 5.3.3 broker on loopback, tests/oracle/broker.py ``LiveBroker``).

In one run:

1. the broker's put latency as the client sees it (send to acknowledgement, p50/p99),
   ``--messages`` messages with no follower (the baseline), then as many with
   ``rmqlab tail`` following the store;
2. the time from the client's acknowledgement to the line ``tail`` printed (p50/p99);
3. on the store the two phases left, a Spark streaming query from ``earliest`` (all in
   micro-batches of ``maxRecordsPerTrigger``) against the batch source reading the same
   bytes (``local[2]``, the same columns): records/s of each.

    python bench/bench_live.py                  # 20,000 messages a phase
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from _stores import save_results  # noqa: E402


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


def phase(lb, topic: str, n: int, follow: bool) -> dict:
    tail, printed, reader = None, [], None
    if follow:
        tail = subprocess.Popen([sys.executable, "-m", "rmqlab", "tail", str(lb.store), "--json", "--topic", topic, "--from", "latest", "--interval", "0.02", "--idle-exit", "6"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

        def read():
            for line in tail.stdout:
                printed.append((time.time() * 1000, json.loads(line)["msg_id"]))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        time.sleep(1.5)  # its start (imports) before the first send
    client = lb.stream(topic, n, pause_ms=1, body=200)
    client.wait()
    acks = [json.loads(line) for line in client.acks_path.read_text().splitlines() if line.startswith("{")]
    put = [a["ackAt"] - a["sentAt"] for a in acks]
    out = {"messages": len(acks), "put_p50_ms": pct(put, 0.5), "put_p99_ms": pct(put, 0.99), "put_mean_ms": statistics.mean(put)}
    if follow:
        tail.wait()
        reader.join(10)
        at = {m: t for t, m in printed}
        lag = [at[a["offsetMsgId"]] - a["ackAt"] for a in acks if a["offsetMsgId"] in at]
        out.update(printed=len(lag), print_p50_ms=pct(lag, 0.5), print_p99_ms=pct(lag, 0.99))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=20000)
    ap.add_argument("--workdir", default=str(HERE / "out" / "live-bench"))
    a = ap.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import shutil

    from tests.oracle.broker import LiveBroker
    from tests.oracle.harness import build

    work = Path(a.workdir)
    shutil.rmtree(work, ignore_errors=True)
    with LiveBroker(work / "broker", build("5.3.3"), {"mappedFileSizeCommitLog": str(16 << 20)}) as lb:
        base = phase(lb, "BenchA", a.messages, follow=False)
        followed = phase(lb, "BenchB", a.messages, follow=True)
        store = lb.store
        print(f"\nlive-follow benchmark (cpus: {os.cpu_count()}, {a.messages} messages a phase, 200-byte bodies, 1 ms apart)")
        print(f"  put latency, no follower (baseline)  p50 {base['put_p50_ms']:.0f} ms  p99 {base['put_p99_ms']:.0f} ms  mean {base['put_mean_ms']:.2f} ms")
        print(f"  put latency, rmqlab tail following   p50 {followed['put_p50_ms']:.0f} ms  p99 {followed['put_p99_ms']:.0f} ms  mean {followed['put_mean_ms']:.2f} ms"
              f"  ({followed['put_mean_ms'] / base['put_mean_ms']:.2f}x the baseline's mean)")
        print(f"  acknowledgement to tail's line       p50 {followed['print_p50_ms']:.0f} ms  p99 {followed['print_p99_ms']:.0f} ms  ({followed['printed']} of {followed['messages']} matched)")

        from pyspark.sql import SparkSession

        import rmqlab.spark

        spark = SparkSession.builder.master("local[2]").appName("bench-live").config("spark.ui.enabled", "false").getOrCreate()
        rmqlab.spark.register(spark)
        cols = "physical_offset,topic,total_size,store_timestamp"
        spark.read.format("rocketmq").option("columns", cols).load(str(store)).count()  # the workers started first
        t = time.perf_counter()
        n_batch = spark.read.format("rocketmq").option("columns", cols).load(str(store)).where("topic IS NOT NULL").count()
        batch_s = time.perf_counter() - t
        t = time.perf_counter()
        q = (spark.readStream.format("rocketmq").option("startingOffsets", "earliest").option("maxRecordsPerTrigger", "10000").option("columns", cols)
             .load(str(store)).writeStream.format("noop").trigger(processingTime="0 seconds").start())
        q.processAllAvailable()
        stream_s = time.perf_counter() - t
        rows = [p["numInputRows"] for p in q.recentProgress]
        q.stop()
        spark.stop()
        n_stream = sum(rows)
        print(f"  batch source, {n_batch:,} records         {batch_s:6.2f} s  {n_batch / batch_s:>10,.0f} rec/s (baseline)")
        print(f"  streaming query, {n_stream:,} records in {len([r for r in rows if r])} micro-batches of <= 10,000  {stream_s:6.2f} s  {n_stream / stream_s:>10,.0f} rec/s"
              f"  ({(n_stream / stream_s) / (n_batch / batch_s):.2f}x)")
        save_results("bench_live", {"no_follower": base, "tail": followed, "batch": {"records": n_batch, "seconds": batch_s},
                                    "stream": {"records": n_stream, "seconds": stream_s, "batches": rows}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
