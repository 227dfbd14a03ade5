"""Write benchmark for rmqlab's store engine (issue 3).

    python bench/bench_write.py [--quick] [--dir DIR] [--sizes 128,1024,16384]

For 128 B, 1 KiB and 16 KiB bodies (one topic, 4 queues, TAGS and a unique KEYS on
every message, RocketMQ's default file sizes) it measures, in one run:

* ASYNC_FLUSH, one producer calling ``put`` — the clock stops when every record is
  dispatched to its consume queue and indexed; when the C put (``rmqlab.engine._put``)
  is built, the same again with ``MessageStore(native_put=False)``, the Python path;
* ``put_batch`` of a list of ``Message`` s (batches of 128, any queue) — same stopping rule;
* ``put_batch`` of a producer-encoded ``MessageBatch`` (Java ``MessageExtBatch``: one
  topic and queue per batch, the queues taken in turn) of 128 and of 1024 messages
  (fewer when 1024 records would pass Java's batch limit of maxMessageSize + 64 KiB);
  the larger again with ``dispatch="background"``: reput in a thread of its own, as
  Java's ``ReputMessageService`` runs (its decoding loops release the GIL, so it uses
  the second core while the producer's batches are written);
* SYNC_FLUSH with one producer, and with 8 concurrent producers (threads): every
  put returns only after a group commit forced its record (three alternating
  rounds, the median round reported: fsync latency drifts with other disk users);
  when the C group commit (``rmqlab.engine._group_commit``) is built, each round
  also runs the pair with ``MessageStore(native_group_commit=False)``, the Python
  flusher thread;
* the raw sequential write bandwidth of the same disk (1 MiB ``os.write`` calls,
  one ``fsync`` at the end), so every figure is also a ratio.

Message objects are built outside the timed region (they are the producer's, not
the store's), and so are encoded batches: in RocketMQ the client encodes a batch
(``MessageBatch.encode()``) and the store receives its bytes.  Encoding properties
(for ``put`` and lists), validation, CRCs, appending, dispatch and indexing are inside it.  MB/s counts message bodies (10^6 bytes).  Results are
printed and written to ``bench/out/bench_write.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rmqlab.config import MessageStoreConfig  # noqa: E402
from rmqlab.engine import Message, MessageBatch, MessageStore  # noqa: E402
from rmqlab.engine.message_store import _native_group_commit, _native_put  # noqa: E402
from rmqlab.lab.durability import group_commit  # noqa: E402

TOPIC = "BenchTopic"
QUEUES = 4
BATCH = 128
SYNC_ROUNDS = 3
#: Apache RocketMQ 5.3.3's own store on this machine class (from the issue)
ROCKETMQ = {
    ("async", 128): 500_000,
    ("async", 1024): 242_000,
    ("sync1", 128): 6_400,
    ("sync8", 128): 23_000,
}
ROCKETMQ_16K_MBPS = 352
native = _native_put is not None
PUT_KIND = "put in C (rmqlab.engine._put)" if native else "put in Python (rmqlab.engine._put is not built)"
native_gc = _native_group_commit is not None
GC_KIND = "group commit in C (rmqlab.engine._group_commit)" if native_gc else "group commit in Python (rmqlab.engine._group_commit is not built)"
GOALS = "ASYNC 128 B >= 250,000 msg/s; put_batch >= 500,000 msg/s; 16 KiB >= 0.5 of raw disk bandwidth; SYNC 8 producers >= 3.5x one"


def make_messages(start: int, n: int, body: bytes) -> list[Message]:
    return [Message(TOPIC, body, {"TAGS": f"Tag{i % 5}", "KEYS": f"key-{i:010d}"}, queue_id=i % QUEUES) for i in range(start, start + n)]


def chunks(n: int, body: bytes, size: int = 10_000):
    """Messages in chunks built while the clock is paused."""
    for start in range(0, n, size):
        yield make_messages(start, min(size, n - start), body)


class Timer:
    def __init__(self):
        self.elapsed = 0.0
        self._t = None

    def start(self):
        self._t = time.perf_counter()

    def stop(self):
        self.elapsed += time.perf_counter() - self._t


def raw_disk_bandwidth(directory: Path, total: int) -> float:
    """MB/s of sequential 1 MiB writes plus one fsync, on the store's disk."""
    path = directory / "raw.bin"
    block = os.urandom(1 << 20)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        t = time.perf_counter()
        for _ in range(total >> 20):
            os.write(fd, block)
        os.fsync(fd)
        dt = time.perf_counter() - t
    finally:
        os.close(fd)
        path.unlink()
    return (total >> 20) * (1 << 20) / dt / 1e6


def encoded_batches(msgs: list[Message], size: int, first: int) -> list[MessageBatch]:
    """What producers send: one encoded batch per queue in turn (Java ``MessageBatch``)."""
    return [MessageBatch.from_messages(msgs[i : i + size], queue_id=(first + i // size) % QUEUES) for i in range(0, len(msgs), size)]


def bench_async(directory: Path, n: int, body: bytes, batch: int = 0, encoded: bool = False, native_put: bool = True, dispatch: str = "inline") -> dict:
    root = directory / "store"
    store = MessageStore.open(root, MessageStoreConfig(), native_put=native_put, dispatch=dispatch)
    timer = Timer()
    done = 0
    try:
        for msgs in chunks(n, body, max(10_000, batch)):
            count = len(msgs)
            if encoded:
                msgs = encoded_batches(msgs, batch, done // batch)
            done += count
            gc.collect()
            gc.freeze()
            timer.start()
            if encoded:
                for b in msgs:
                    r = store.put_batch(b)
                    assert r.ok, r
            elif batch:
                for i in range(0, len(msgs), batch):
                    r = store.put_batch(msgs[i : i + batch])
                    assert r.ok, r
            else:
                put = store.put
                for m in msgs:
                    put(m)
            timer.stop()
            gc.unfreeze()
        put_seconds = timer.elapsed  # the last put returned
        timer.start()
        store.reput()  # dispatch and indexing finished before the clock stops
        timer.stop()
        t = time.perf_counter()
        store.flush()
        flush_s = time.perf_counter() - t
        assert store.dispatch_behind == 0
    finally:
        store.shutdown()
        shutil.rmtree(root)
    return {"messages": n, "seconds": timer.elapsed, "put_seconds": put_seconds, "final_flush_seconds": flush_s}


def bench_sync(directory: Path, n: int, body: bytes, producers: int, native_put: bool = True, native_group_commit: bool = True) -> dict:
    run = group_commit(directory, producers, n, messages=make_messages(0, n, body), native_put=native_put, native_group_commit=native_group_commit)
    assert set(run.statuses) == {"PUT_OK"}, run.statuses
    busy = run.force_seconds / run.seconds if run.force_seconds is not None else None  # the C group commit measures it
    return {"messages": run.puts, "seconds": run.seconds, "forces": run.forces, "busy": busy}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small counts: validates the script, figures are rough")
    ap.add_argument("--dir", help="directory on the disk to measure (default: a temp dir under bench/out)")
    ap.add_argument("--sizes", default="128,1024,16384")
    args = ap.parse_args()
    out_dir = Path(__file__).resolve().parent / "out"
    out_dir.mkdir(exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="bench_write_", dir=args.dir or out_dir))
    sizes = [int(s) for s in args.sizes.split(",")]
    q = args.quick
    counts = {
        128: (20_000 if q else 1_000_000, 400 if q else 4_000),
        1024: (10_000 if q else 500_000, 400 if q else 4_000),
        16384: (2_000 if q else 65_536, 200 if q else 2_000),
    }
    results: dict = {"put": PUT_KIND, "group_commit": GC_KIND, "quick": q, "python": sys.version.split()[0], "cpus": os.cpu_count(), "rows": []}
    try:
        raw = raw_disk_bandwidth(base, (64 if q else 1024) << 20)
        results["raw_disk_MBps"] = raw
        print(f"raw sequential write bandwidth (1 MiB writes + fsync): {raw:,.0f} MB/s   [{base}]")
        print(f"goals: {GOALS}")
        print(f"{'body':>6} {'scenario':<32} {'msg/s':>11} {'MB/s':>9} {'x raw':>7}  {'RocketMQ 5.3.3':>16}  note")
        for size in sizes:
            body = bytes((i * 7) & 0xFF for i in range(size))
            n_async, n_sync = counts.get(size, (10_000, 400))
            rows = []
            r = bench_async(base, n_async, body)
            with_flush = n_async * size / (r["seconds"] + r["final_flush_seconds"]) / 1e6
            rows.append(("async", "ASYNC put, 1 producer", r, f"{with_flush:,.1f} MB/s = {with_flush / raw:.3f}x raw with a final flush; {PUT_KIND}"))
            if native:
                r = bench_async(base, n_async, body, native_put=False)
                rows.append(("async_py", "ASYNC put, Python path", r, "the same with MessageStore(native_put=False)"))
            r = bench_async(base, n_async, body, batch=BATCH)
            rows.append(("batch", f"put_batch list of {BATCH}", r, "Message objects, any queue"))
            big = min(1024, (4 << 20) // (size + 200))  # within Java's batch limit
            for k in (BATCH, big):
                r = bench_async(base, n_async, body, batch=k, encoded=True)
                rows.append((f"encoded{k}", f"put_batch MessageBatch {k}", r, "producer-encoded, one queue per batch"))
            r = bench_async(base, n_async, body, batch=big, encoded=True, dispatch="background")
            rows.append((f"encoded{big}bg", f"MessageBatch {big}, reput thread", r, "the same, dispatch=\"background\" (Java ReputMessageService)"))
            # fsync latency drifts with whatever else uses the disk: alternate the two
            # SYNC runs and keep the median round (by ratio)
            kinds = [("", True)] + ([("_py", False)] if native_gc else [])
            rounds: dict = {k: [] for k, _ in kinds}
            for _ in range(SYNC_ROUNDS):
                for k, c in kinds:
                    r1 = bench_sync(base, n_sync, body, 1, native_group_commit=c)
                    r8 = bench_sync(base, n_sync * 2, body, 8, native_group_commit=c)
                    rounds[k].append((r8["messages"] / r8["seconds"] / (r1["messages"] / r1["seconds"]), r1, r8))
            for k, c in kinds:
                rr = sorted(rounds[k], key=lambda x: x[0])
                ratio, r1, r8 = rr[len(rr) // 2]
                all_ratios = ", ".join(f"{x[0]:.2f}" for x in rr)
                who = "" if k == "" else ", Python flusher"
                busy = lambda r: f", forcing {r['busy']:.0%} of the time" if r["busy"] is not None else ""  # noqa: E731
                rows.append((f"sync1{k}", f"SYNC, 1 producer{who}", r1, f"{r1['forces']} forces{busy(r1)} (median of {SYNC_ROUNDS} alternating rounds); {GC_KIND if c else 'MessageStore(native_group_commit=False)'}"))
                rows.append((f"sync8{k}", f"SYNC, 8 producers{who}", r8, f"{r8['forces']} forces{busy(r8)}; ratios per round: {all_ratios}"))
            rates = {}
            for key, label, r, note in rows:
                rate = r["messages"] / r["seconds"]
                mbps = rate * size / 1e6
                rates[key] = rate
                ref = ROCKETMQ.get((key, size))
                ref_txt = f"{ref:,} msg/s" if ref else (f"{ROCKETMQ_16K_MBPS} MB/s" if key == "async" and size == 16384 else "")
                if key.startswith("sync8"):
                    note += f"; {rate / rates['sync1' + key[5:]]:.2f}x one producer"
                print(f"{size:>6} {label:<32} {rate:>11,.0f} {mbps:>9,.1f} {mbps / raw:>7.3f}  {ref_txt:>16}  {note}")
                results["rows"].append({"body": size, "scenario": key, "msg_per_s": rate, "MBps": mbps, "ratio_raw": mbps / raw, **r})
    finally:
        shutil.rmtree(base, ignore_errors=True)
    (out_dir / "bench_write.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
