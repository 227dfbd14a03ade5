"""rmqlab's engine beside Apache RocketMQ's own ``DefaultMessageStore``, on the same work, the
same disk, in one run.

    python bench/bench_engine_vs_rocketmq.py [--quick] [--rounds 3] [--dir DIR] [--recovery-size 1GiB]
        [--only puts|recovery] [--recovery-store DIR] [--unwarmed]

RocketMQ 5.3.3's store runs in the project's oracle harness (``tests/oracle/java``, one JVM,
built with Maven as ``make test`` builds it; its side of the work: ``Bench.java``), started
with a broker's JVM settings (:data:`BROKER_JVM`).  Each
workload runs on both, alternating, ``--rounds`` times (the medians are printed; the machine
is noisy), each JVM workload once before it is timed (the JIT's warm-up is not the store's
speed), and both clocks stop at the same two points:

* **put returned** — the last put of the last producer returned;
* **dispatched** — every record is also in its consume queue and the index (RocketMQ:
  ``dispatchBehindBytes() == 0``, its ReputMessageService having run the queue and index
  dispatchers; rmqlab: ``reput()`` done — with the default inline dispatch ``put`` has
  already done it, so both points are one).

Workloads (bench/bench_write.py builds the messages, outside the clock, for both: one topic, 4
queues, TAGS and a unique KEYS on every message, RocketMQ's default file sizes): ASYNC_FLUSH
with one producer at 128 B, 1 KiB and 16 KiB; SYNC_FLUSH with 1 and with 8 producers
(threads; every put returns once a group commit forced it); producer-encoded batches of 128
(``MessageBatch`` / ``MessageExtBatch`` through ``putMessages``); abnormal recovery of a
generated store (``--recovery-size``, 1 KiB records) left by a crash, cold (page cache dropped)
and warm: ``MessageStore.open`` against ``load()`` + ``start()`` until dispatch caught up.
ASYNC 128 B and the batches run a second time with rmqlab's reput in a thread of its own
(``dispatch="background"``), as Java's ReputMessageService runs: a put then returns before its
record is dispatched, on both sides.

Before each put run, on either side, the memory it will write is touched and freed
(:func:`warm_memory`): on a virtual machine that hands freed memory back to its host, a
page written for the first time costs ~10× a page already backed, and without it the side
that ran first wrote into handed-back memory (``--unwarmed`` measures it that way).  The
host takes freed memory back within ~2 s, so a run longer than that writes its last pages
into handed-back memory all the same: the slower side pays more of it.

Where the time goes: each put row also gives both sides' rate at the first point (the puts
alone); the SYNC rows give rmqlab's forces (puts a force, the share of the run spent forcing,
each force's time, and how fast the producers append meanwhile); the recovery rows give rmqlab's plan by its phases (``RecoveryReport.timings``:
the scan of the log, the dispatch plan, applying it) and RocketMQ's ``load()`` (its recovery)
apart from ``start()``.

The ratio printed is rmqlab's rate over RocketMQ's (recovery: RocketMQ's time over rmqlab's,
so > 1 is rmqlab ahead everywhere), with the issue's goals: ≥ 1.0 in every row at both points,
≥ 1.5 for SYNC with 8 producers, recovery in ≤ 0.7 of RocketMQ's time.  Results go to
``bench/out/bench_engine_vs_rocketmq.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_recover import build_store, crash_state, drop_caches, open_crashed  # noqa: E402
from bench_write import BATCH, QUEUES, TOPIC, bench_async, bench_sync  # noqa: E402

from tests.oracle.harness import Oracle, OracleUnavailable, build  # noqa: E402

GOALS = {"sync8": 1.5, "recover": 1 / 0.7}
#: touch the memory a put run writes just before it, for each side (see :func:`warm_memory`;
#: ``--unwarmed`` leaves it as the machine has it)
WARM_MEMORY = True
#: the JVM as a broker runs it (RocketMQ's bin/runbroker.sh: G1 with its settings, a fixed
#: heap; 4 GiB here where runbroker.sh asks 8), not as the oracle's tests run it (768 MiB, serial GC)
BROKER_JVM = ("-server", "-Xms4g", "-Xmx4g", "-XX:+UseG1GC", "-XX:G1HeapRegionSize=16m", "-XX:G1ReservePercent=25",
              "-XX:InitiatingHeapOccupancyPercent=30", "-XX:MaxDirectMemorySize=15g", "-XX:-OmitStackTraceInFastThrow")


def rocketmq_jvm() -> Oracle:
    return Oracle(build("5.3.3", jvm=BROKER_JVM), threads=1)


def rocketmq_put(rmq: Oracle, directory: Path, n: int, size: int, producers: int = 1, batch: int = 0, sync: bool = False) -> dict:
    root = directory / "rocketmq"
    shutil.rmtree(root, ignore_errors=True)
    config = {"flushDiskType": "SYNC_FLUSH"} if sync else {}
    if WARM_MEMORY:
        warm_memory(n, size)
    a = rmq.call({"op": "bench_put", "dir": str(root), "count": n, "bodySize": size, "producers": producers, "queues": QUEUES, "batch": batch,
                  "topic": TOPIC, "config": config}, timeout=1800)
    shutil.rmtree(root, ignore_errors=True)
    assert a["failed"] == 0, a
    return {"put": a["putSeconds"], "dispatched": a["dispatchedSeconds"]}


def warm_memory(n: int, size: int) -> None:
    """Touch about as much memory as a run of ``n`` puts of ``size`` bytes writes (its
    log, queues and index), then free it, just before the run: its page cache is then
    memory the machine already backs, for each side alike.

    Why: a virtual machine that hands freed memory back to its host (free page
    reporting, ~2 s after it is freed) makes every page written for the first time since
    cost the host's fault, ~3 µs a KiB here (340 MB/s, where a page already backed is
    written at 3.4 GB/s).  Without this, which side got backed pages depended on the
    order of the runs: RocketMQ's run, started the moment rmqlab's store was deleted,
    wrote into the pages just freed; rmqlab's, started after the messages were built,
    into pages handed back.  A broker's host writes its page cache into backed memory."""
    import mmap

    want = n * (size + 350) + (64 << 20)
    with open("/proc/meminfo") as f:
        avail = next(int(line.split()[1]) << 10 for line in f if line.startswith("MemAvailable:"))
    m = mmap.mmap(-1, min(want, avail // 2), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        m.madvise(getattr(mmap, "MADV_POPULATE_WRITE", 23))
    except OSError:  # before Linux 5.14: a byte a page
        for i in range(0, len(m), mmap.PAGESIZE):
            m[i] = 1
    m.close()


def rmqlab_put(directory: Path, n: int, size: int, producers: int = 1, batch: int = 0, sync: bool = False, dispatch: str = "inline") -> dict:
    body = bytes((i * 7) & 0xFF for i in range(size))
    if WARM_MEMORY:
        warm_memory(n, size)
    if sync:
        r = bench_sync(directory, n, body, producers)
        # group_commit's run dispatches inline; its forces say where a SYNC put's time goes
        return {"put": r["seconds"], "dispatched": r["seconds"], "forces": r["forces"], "busy": r["busy"]}
    r = bench_async(directory, n, body, batch=batch, encoded=bool(batch), dispatch=dispatch)
    return {"put": r["put_seconds"], "dispatched": r["seconds"]}


def forces_said(runs: list[dict], count: int, producers: int) -> str:
    """Where a SYNC run's time went, from its group commit's forces (medians of the runs):
    puts a force (at most one per producer: each waits for the force that covers it), the
    share of the run the flusher spent forcing, and each force's time, whose sum is the
    floor of the run however fast the rest is."""
    forces = statistics.median(r["forces"] for r in runs)
    seconds = statistics.median(r["put"] for r in runs)
    busy = [r["busy"] for r in runs if r.get("busy") is not None]
    said = f"{count / max(forces, 1):.1f} puts a force (of {producers} producer(s))"
    if busy:
        b = statistics.median(busy)
        force = b * seconds / max(forces, 1)
        said += f", forcing {b:.0%} of the run, {force * 1e3:.2f} ms a force (fdatasync of the log, the disk's latency)"
        if producers > 1:
            # with the flusher nearly always forcing, a force covers what the producers
            # appended while the one before it ran: they take turns on the GIL
            said += f"; meanwhile the producers append one put each {force / max(count / max(forces, 1), 1e-9) * 1e6:.0f} µs (a force over the puts it covers)"
    return said


def recovery(rmq: Oracle, store: Path, cold: bool) -> tuple[float, float, str, dict]:
    """(rmqlab's seconds, RocketMQ's seconds, how the cache was dropped, where each one's
    time went) for one crash each."""
    crash_state(store, False)
    how = drop_caches(store) if cold else "warm"
    ours, rep = open_crashed(store)
    split = {f"rmqlab {k.removesuffix('_s')}": v for k, v in rep.timings.items() if k != "total_s"}
    crash_state(store, False)
    if cold:
        drop_caches(store)
    a = rmq.call({"op": "bench_recover", "dir": str(store), "config": {}}, timeout=1800)
    split.update({"RocketMQ load()": a["loadSeconds"], "RocketMQ start() until dispatched": a["readySeconds"] - a["loadSeconds"]})
    return ours, a["readySeconds"], how, split


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small counts: checks the script, figures are rough")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", help="directory on the disk to measure (default: under bench/out)")
    ap.add_argument("--recovery-size", default=None, help="the recovered store's size (default 1GiB, --quick 128MiB)")
    ap.add_argument("--only", choices=("puts", "sync", "recovery"), help="only the put workloads, only the SYNC ones, or only the recovery rows")
    ap.add_argument("--recovery-store", help="generate the recovered store here and keep it (used again when it is there)")
    ap.add_argument("--unwarmed", action="store_true", help="do not touch the memory a put run writes before it (see warm_memory)")
    args = ap.parse_args()
    global WARM_MEMORY
    WARM_MEMORY = not args.unwarmed
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="bench_engine_", dir=args.dir or out))
    q = args.quick
    n = {128: 50_000 if q else 1_000_000, 1024: 20_000 if q else 500_000, 16384: 4_000 if q else 65_536}
    n_sync = 400 if q else 4_000
    work = [  # key, label, size, producers, batch, sync, count
        ("async128", "ASYNC, 1 producer, 128 B", 128, 1, 0, False, n[128]),
        ("async1k", "ASYNC, 1 producer, 1 KiB", 1024, 1, 0, False, n[1024]),
        ("async16k", "ASYNC, 1 producer, 16 KiB", 16384, 1, 0, False, n[16384]),
        ("async128bg", "ASYNC 128 B, rmqlab's reput in a thread", 128, 1, 0, False, n[128]),
        ("batch128", f"ASYNC, encoded batches of {BATCH}, 128 B", 128, 1, BATCH, False, n[128]),
        ("batch128bg", "batches, rmqlab's reput in a thread", 128, 1, BATCH, False, n[128]),
        ("sync1", "SYNC, 1 producer, 128 B", 128, 1, 0, True, n_sync),
        ("sync8", "SYNC, 8 producers, 128 B", 128, 8, 0, True, n_sync * 2),
    ]
    try:
        rmq = rocketmq_jvm()
    except OracleUnavailable as err:
        raise SystemExit(f"RocketMQ's side needs the oracle harness: {err}")
    rows = []
    try:
        print(f"rmqlab's engine and RocketMQ 5.3.3's DefaultMessageStore, {args.rounds} alternating rounds, medians; disk: {base}")
        print(f"{'workload':<38} {'msgs':>9}  {'rmqlab msg/s':>13} {'RocketMQ msg/s':>15}  {'put returned':>12} {'dispatched':>10}")
        for key, label, size, producers, batch, sync, count in (work if args.only != "recovery" else ()):
            if args.only == "sync" and not sync:
                continue
            rocketmq_put(rmq, base, max(1, count // 10), size, producers, batch, sync)  # the JIT's warm-up
            ours, theirs = [], []
            dispatch = "background" if key.endswith("bg") else "inline"  # Java's ReputMessageService is a thread of its own
            for _ in range(args.rounds):
                ours.append(rmqlab_put(base, count, size, producers, batch, sync, dispatch))
                theirs.append(rocketmq_put(rmq, base, count, size, producers, batch, sync))
            med = {who: {p: statistics.median(r[p] for r in runs) for p in ("put", "dispatched")} for who, runs in (("rmqlab", ours), ("rocketmq", theirs))}
            ratio = {p: med["rocketmq"][p] / med["rmqlab"][p] for p in ("put", "dispatched")}
            goal = GOALS.get(key, 1.0)
            met = "met" if min(ratio.values()) >= goal else "missed"
            print(f"{label:<38} {count:>9,}  {count / med['rmqlab']['dispatched']:>13,.0f} {count / med['rocketmq']['dispatched']:>15,.0f}  "
                  f"{ratio['put']:>11.2f}× {ratio['dispatched']:>9.2f}×  goal ≥ {goal:.1f}×: {met}"
                  + (f"  (puts return at {count / med['rmqlab']['put']:,.0f} / {count / med['rocketmq']['put']:,.0f} msg/s)" if not sync else ""))
            if sync:
                print("    where rmqlab's time goes: " + forces_said(ours, count, producers))
            rows.append({"workload": key, "messages": count, "rmqlab": ours, "rocketmq": theirs, "ratio": ratio, "goal": goal})
        size = args.recovery_size or ("128MiB" if q else "1GiB")
        store = Path(args.recovery_store) if args.recovery_store else base / "recovery"
        info = build_store(store, size) if args.only not in ("puts", "sync") else None
        if info:
            print(f"abnormal recovery of {size} ({info['records']:,} records of 1 KiB), rmqlab's time against RocketMQ's:")
        for cold in ((True, False) if info else ()):
            runs = [recovery(rmq, store, cold) for _ in range(args.rounds)]
            ours, theirs = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
            ratio = theirs / ours
            met = "met" if ratio >= GOALS["recover"] else "missed"
            print(f"  {'cold' if cold else 'warm'} ({runs[0][2]}): rmqlab {ours:.2f} s, RocketMQ {theirs:.2f} s: rmqlab takes {ours / theirs:.2f} of RocketMQ's time"
                  f"  goal ≤ 0.70: {met}")
            split = {k: statistics.median(r[3].get(k, 0.0) for r in runs) for k in runs[0][3]}
            print("    where the time goes (medians): " + ", ".join(f"{k} {v:.2f} s" for k, v in split.items()))
            rows.append({"workload": f"recover_{'cold' if cold else 'warm'}", "rmqlab_s": [r[0] for r in runs], "rocketmq_s": [r[1] for r in runs], "ratio": ratio, "split": split})
    finally:
        rmq.close()
        shutil.rmtree(base, ignore_errors=True)
    (out / "bench_engine_vs_rocketmq.json").write_text(json.dumps({"quick": q, "rounds": args.rounds, "cpus": os.cpu_count(), "warm_memory": WARM_MEMORY, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
