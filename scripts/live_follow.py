"""The long run of following a live Apache RocketMQ broker (the short one is
tests/oracle/test_live_broker.py).

    .venv/bin/python scripts/live_follow.py --messages 20000 --kills 3 --cleanup

A name server and a 5.3.3 broker on loopback (small commitlog files, so the log rolls
often; with ``--cleanup`` the broker's clean-up deletes every file but the one being
written, as soon as it may: ``fileReservedTime=0``, every hour a deletion hour), RocketMQ's
Java client sending a steady stream, the broker SIGKILLed ``--kills`` times and restarted
on the same store, while ``rmqlab tail --json`` and a Spark streaming query
(``failOnDataLoss=false``) follow it.  Prints, for each follower: messages acknowledged,
seen, seen twice, missing (and of those, in files the clean-up deleted before they were
read, as the follower said), torn; and the time from the client's acknowledgement to
the line ``tail`` printed (p50, p99).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.oracle.broker import LiveBroker  # noqa: E402
from tests.oracle.harness import build  # noqa: E402


def read_lines(stream, into: list) -> threading.Thread:
    """Each line of ``stream`` with the time it arrived (ms), in a thread."""

    def run():
        for line in stream:
            into.append((time.time() * 1000, line))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def tally(name: str, rows: list[dict], acks: list[dict], skipped: int) -> dict:
    ids = [r["msg_id"] for r in rows]
    seen = {r["msg_id"]: int(dict(r["properties"])["seq"]) for r in rows}
    missing = [a for a in acks if seen.get(a["offsetMsgId"]) != a["seq"]]
    return {"follower": name, "acknowledged": len(acks), "seen": sum(1 for a in acks if seen.get(a["offsetMsgId"]) == a["seq"]),
            "twice": len(ids) - len(set(ids)), "missing": len(missing), "skipped_said": skipped, "torn": sum(1 for r in rows if not r["crc_ok"])}


def percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=20000)
    ap.add_argument("--kills", type=int, default=3)
    ap.add_argument("--cleanup", action="store_true", help="the broker's clean-up deletes files as soon as it may")
    ap.add_argument("--pause-ms", type=int, default=1)
    ap.add_argument("--file-size", type=int, default=256 << 10)
    ap.add_argument("--workdir", default=str(ROOT / "bench" / "out" / "live"))
    a = ap.parse_args(argv)

    import shutil

    from pyspark.sql import SparkSession

    import rmqlab.spark

    work = Path(a.workdir)
    shutil.rmtree(work, ignore_errors=True)
    settings = {"mappedFileSizeCommitLog": str(a.file_size)}
    if a.cleanup:
        settings.update({"fileReservedTime": "0", "deleteWhen": ";".join(f"{h:02d}" for h in range(24)), "cleanResourceInterval": "2000",
                         "deleteCommitLogFilesInterval": "10", "destroyMapedFileIntervalForcibly": "1000"})
    spark = (SparkSession.builder.master("local[2]").appName("live-follow").config("spark.ui.enabled", "false").getOrCreate())
    rmqlab.spark.register(spark)
    command = build("5.3.3")
    t0 = time.time()
    with LiveBroker(work / "broker", command, settings) as lb:
        client = lb.stream("LiveT", a.messages, pause_ms=a.pause_ms, body=200)
        while not ((lb.store / "commitlog").is_dir() and any((lb.store / "commitlog").iterdir())):
            time.sleep(0.2)
        tail = subprocess.Popen([sys.executable, "-m", "rmqlab", "tail", str(lb.store), "--json", "--topic", "LiveT", "--interval", "0.02", "--idle-exit", "15"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        printed: list = []
        reader = read_lines(tail.stdout, printed)
        query = (spark.readStream.format("rocketmq").option("startingOffsets", "earliest").option("failOnDataLoss", "false")
                 .option("columns", "physical_offset,topic,msg_id,properties,crc_ok").load(str(lb.store)).where("topic = 'LiveT'")
                 .writeStream.format("parquet").option("path", str(work / "stream")).option("checkpointLocation", str(work / "ckpt"))
                 .trigger(processingTime="500 milliseconds").start())
        acks_path = client.acks_path
        for k in range(a.kills):
            target = (k + 1) * a.messages // (a.kills + 1)
            while len(acks_path.read_text().splitlines()) < target and client.poll() is None:
                time.sleep(0.2)
            lb.kill()
            time.sleep(2)
            lb.restart()
            print(f"  kill {k + 1}: after {target} acknowledgements, broker restarted", flush=True)
        client.wait()
        tail_err = tail.communicate()[1]
        reader.join(30)
        query.processAllAvailable()
        query.stop()
        files_left = len(list((lb.store / "commitlog").iterdir()))
    acks = [json.loads(line) for line in acks_path.read_text().splitlines() if line.startswith("{")]
    rows = [json.loads(line) for _, line in printed]
    stream_rows = [r.asDict() for r in spark.read.parquet(str(work / "stream")).collect()]
    spark.stop()
    skipped = tail_err.count("skipped")
    results = [tally("rmqlab tail", rows, acks, skipped), tally("Spark stream", stream_rows, acks, 0)]
    by_id = {json.loads(line)["msg_id"]: at for at, line in printed}
    lat = [by_id[x["offsetMsgId"]] - x["ackAt"] for x in acks if x["offsetMsgId"] in by_id]
    print(f"\n{a.messages} messages, {a.kills} broker kills, clean-up {'on' if a.cleanup else 'off'}, {files_left} commitlog files left, {time.time() - t0:.0f} s")
    print("| follower | acknowledged | seen | seen twice | missing | torn |\n|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['follower']} | {r['acknowledged']} | {r['seen']} | {r['twice']} | {r['missing']} | {r['torn']} |")
    print(f"tail said 'skipped' {skipped} time(s); acknowledgement to tail's line: p50 {percentile(lat, 0.5):.0f} ms, p99 {percentile(lat, 0.99):.0f} ms (n={len(lat)})")
    (work / "results.json").write_text(json.dumps({"results": results, "latency_ms": {"p50": percentile(lat, 0.5), "p99": percentile(lat, 0.99)}}, indent=1))
    return 0 if all(r["twice"] == 0 and r["torn"] == 0 and (a.cleanup or r["missing"] == 0) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
