"""A standing fault campaign: damaged inputs through every read command, and writers
killed with SIGKILL at random points.

**Mutated inputs.**  Each input is a copy of a store RocketMQ wrote (``crash`` from the
reference stores) with one file damaged one seeded way — bits flipped, a run of bytes
zeroed or randomised, the file cut or extended with garbage, a record's length field
lying, an index hash chain closed into a cycle — across the commitlog, the consume
queues, the index files and the checkpoint.  One read command runs on it, in-process
through ``rmqlab.cli.main`` as a user would run it, in a worker process under a time
bound.  Its outcome is one of:

- ``correct``: exit 0 or 1 with no fault found in its answer;
- ``clean error``: exit 2 with one line on stderr (the project's promise for bad input);
- ``traceback``: any exception out of the command, or a multi-line error;
- ``hang``: the time bound passed;
- ``crash``: the worker process died;
- ``wrong answer``: a key lookup returned a record that does not carry the key;
- ``input changed``: a byte of the store changed.

**Kill points.**  A writer (``MessageStore``, SYNC_FLUSH or ASYNC_FLUSH, one to four
producer threads, single puts or lists) reports every acknowledged put and is killed
with SIGKILL at a seeded moment; the store is then opened again (RocketMQ's recovery)
and every acknowledged message is looked for: by its queue offset (``lost`` if there
is none, ``corrupted`` if the bytes differ) and by its key (``unfindable``).  A process
kill keeps the page cache, so nothing acknowledged may be lost, whatever the flush mode.

A seed names one case; ``scripts/faults.py --seeds N`` reruns it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import random
import shutil
import signal
import struct
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from tests.support import REFERENCE

BASE = REFERENCE / "crash" / "store"
OUTCOMES = ("correct", "clean error", "traceback", "hang", "crash", "wrong answer", "input changed")
MUTATIONS = ("flip", "zero_run", "random_run", "cut", "garbage", "lying_length", "index_cycle")
#: the seconds one command may take on the small store before it counts as a hang
HANG_S = 20


# -- mutated inputs -----------------------------------------------------------------------------
def _targets(root: Path) -> list[Path]:
    files = [p for p in sorted((root / "commitlog").iterdir())]
    files += sorted(p for p in (root / "consumequeue").rglob("*") if p.is_file())
    files += sorted((root / "index").iterdir())
    files.append(root / "checkpoint")
    return files


def mutate(root: Path, seed: int) -> dict:
    """Damage one file of the store at ``root`` the way ``seed`` says; what was done."""
    rng = random.Random(seed)
    kind = MUTATIONS[seed % len(MUTATIONS)]
    files = _targets(root)
    if kind == "index_cycle":
        path = rng.choice(sorted((root / "index").iterdir()))
    elif kind == "lying_length":
        path = rng.choice(sorted((root / "commitlog").iterdir())[:-1])
    else:
        path = rng.choice(files)
    data = bytearray(path.read_bytes())
    n = len(data)
    what = {"seed": seed, "kind": kind, "file": str(path.relative_to(root))}
    if kind == "flip" and n:
        for _ in range(rng.randint(1, 8)):
            at = rng.randrange(n)
            data[at] ^= 1 << rng.randrange(8)
    elif kind in ("zero_run", "random_run") and n:
        at, length = rng.randrange(n), rng.choice([1, 4, 8, 20, 100, 4096])
        run = bytes(min(length, n - at)) if kind == "zero_run" else rng.randbytes(min(length, n - at))
        data[at : at + len(run)] = run
        what.update(at=at, length=len(run))
    elif kind == "cut":
        del data[rng.randrange(n + 1) if n else 0 :]
        what.update(size=len(data))
    elif kind == "garbage":
        data += rng.randbytes(rng.choice([1, 7, 64, 5000]))
    elif kind == "lying_length" and n > 8:
        from rmqlab.scan.acceptance import scan_file

        starts = scan_file(bytes(data), check_crc=False).starts.tolist() or [0]
        at = rng.choice(starts)
        struct.pack_into(">i", data, at, rng.choice([-1, 0, 7, 91, 1 << 20, rng.randrange(-(1 << 31), 1 << 31)]))
        what.update(at=at)
    elif kind == "index_cycle":
        from rmqlab.format.indexfile import IndexEntry, IndexHeader, entry_position
        from rmqlab.format.parse import field_offset
        from rmqlab.store.reader import infer_index_sizes

        slots, _ = infer_index_sizes(n, path)
        count = struct.unpack_from(">i", data, field_offset(IndexHeader, "index_count"))[0]
        if count > 3:
            a, b = sorted(rng.sample(range(1, count), 2))
            # entry a's prevIndex points forward to b, whose chain leads back to a or below
            struct.pack_into(">i", data, entry_position(slots, a) + field_offset(IndexEntry, "prev_index"), b)
            struct.pack_into(">i", data, entry_position(slots, b) + field_offset(IndexEntry, "prev_index"), a)
            what.update(entries=(a, b))
    path.write_bytes(bytes(data))
    return what


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def _commands(root: Path, rng: random.Random, what: dict) -> list[str]:
    target = root / what["file"]
    return rng.choice([
        ["info", str(root)],
        ["verify", str(root), "--json"],
        ["dump", str(root), "--json"],
        ["dump", str(root)],
        ["recover", str(root), "--json"],
        ["salvage", str(root)],
        ["lookup", str(root), "--topic", "TopicA", "--key", rng.choice(["k1", "k2", "k7", "k12", "order-3"]), "--json"],
        ["lookup", str(root), "--queue", f"TopicA:{rng.randrange(4)}:{rng.randrange(12)}", "--json"],
        ["lookup", str(root), "--time", str(1_795_303_736_000 + rng.randrange(6000)), "--topic", "TopicB", "--queue-id", str(rng.randrange(4))],
        ["queue", str(root), "--topic", "TopicB", "--queue-id", str(rng.randrange(4)), "--json"],
        ["hexdump", str(target), "--length", "2048"],
    ])


class _Hang(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Hang()


def run_input(seed: int) -> dict:
    """One mutated input through one command (runs in a worker process)."""
    import json
    import sys

    from rmqlab.cli import main

    work = Path(tempfile.mkdtemp(prefix="rmqlab-fault-"))
    try:
        root = work / "store"
        shutil.copytree(BASE, root)
        what = mutate(root, seed)
        argv = _commands(root, random.Random(seed ^ 0x5EED), what)
        before = _digest(root)
        out, err = io.StringIO(), io.StringIO()
        signal.signal(signal.SIGALRM, _on_alarm)
        signal.alarm(HANG_S)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(argv)
            outcome = "correct" if code in (0, 1) else ("clean error" if code == 2 and err.getvalue().count("\n") == 1 else "traceback")
        except _Hang:
            outcome = "hang"
        except BaseException as exc:  # noqa: BLE001 - every escape is a finding
            outcome, err = "traceback", io.StringIO(f"{type(exc).__name__}: {exc}")
        finally:
            signal.alarm(0)
        if outcome == "correct" and argv[0] == "lookup" and "--key" in argv:
            key = argv[argv.index("--key") + 1]
            for line in out.getvalue().splitlines():
                p = json.loads(line).get("properties") or {}
                if key not in (p.get("KEYS") or "").split() and p.get("UNIQ_KEY") != key:
                    outcome = "wrong answer"
        if _digest(root) != before:
            outcome = "input changed"
        return {"seed": seed, "outcome": outcome, "mutation": what, "argv": [a.replace(str(root), "STORE") for a in argv],
                "error": err.getvalue().strip()[-2000:] if outcome not in ("correct", "clean error") else ""}
    finally:
        shutil.rmtree(work, ignore_errors=True)
        sys.stdout.flush()


def run_inputs(seeds, workers: int = 2) -> tuple[Counter, list[dict]]:
    """Every seed's outcome, counted; the cases that are not ``correct`` or a ``clean
    error``, in full.  A worker that dies counts its input as a ``crash``."""
    counts: Counter = Counter()
    findings: list[dict] = []
    pending = list(seeds)
    while pending:
        with ProcessPoolExecutor(workers) as pool:
            futures = {s: pool.submit(run_input, s) for s in pending}
            pending = []
            broken = False
            for s, fut in futures.items():
                try:
                    r = fut.result(timeout=HANG_S * 3) if not broken else fut.result(timeout=0)
                except BrokenProcessPool:
                    if not broken:  # the first broken future names the input that crashed the worker
                        counts["crash"] += 1
                        findings.append({"seed": s, "outcome": "crash"})
                        broken = True
                        continue
                    pending.append(s)  # not run: try again with a fresh pool
                    continue
                except Exception as exc:  # noqa: BLE001 - the result itself failed
                    r = {"seed": s, "outcome": "traceback", "error": f"{type(exc).__name__}: {exc}"}
                counts[r["outcome"]] += 1
                if r["outcome"] not in ("correct", "clean error"):
                    findings.append(r)
    return counts, findings


# -- kill points -------------------------------------------------------------------------------
def _body(key: str) -> bytes:
    return (key * 8).encode()[: 40 + len(key)]


def _writer_config(seed: int):
    from rmqlab.config import ASYNC_FLUSH, SYNC_FLUSH, MessageStoreConfig

    rng = random.Random(seed)
    return MessageStoreConfig(mapped_file_size_commit_log=64 * 1024, mapped_file_size_consume_queue=20 * 30,
                              max_hash_slot_num=64, max_index_num=256, flush_disk_type=rng.choice([SYNC_FLUSH, ASYNC_FLUSH]))


def _writer(root: str, seed: int, conn) -> None:
    """The writer a kill point kills: puts until it is killed, reporting each
    acknowledged message as (queue id, queue offset, key), or a list's as
    ("batch", [(queue id, key)...])."""
    import threading

    from rmqlab.engine import Message, MessageStore

    rng = random.Random(seed ^ 0xC0FFEE)
    store = MessageStore.open(root, _writer_config(seed))
    lock = threading.Lock()
    batch = rng.random() < 0.3
    limit = rng.randint(20, 600)  # messages per producer: the kill may come before or after the last

    def produce(p: int) -> None:
        i = 0
        while i < limit:
            keys = [f"p{p}-m{i + j}" for j in range(4 if batch else 1)]
            msgs = [Message("TopicK", _body(k), {"KEYS": k}, queue_id=(p + n) % 4) for n, k in enumerate(keys)]
            r = store.put_batch(msgs) if batch else store.put(msgs[0])
            if r.ok:
                with lock:
                    if batch:
                        conn.send(("batch", [(m.queue_id, m.properties["KEYS"]) for m in msgs]))
                    else:
                        conn.send((msgs[0].queue_id, r.queue_offset, keys[0]))
            i += len(msgs)

    threads = [threading.Thread(target=produce, args=(p,), daemon=True) for p in range(rng.randint(1, 4))]
    conn.send("started")  # before any acknowledgement
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    time.sleep(60)  # done: wait, store open, for the kill


def run_kill_point(seed: int, ctx) -> Counter:
    """One writer killed at a seeded moment; its acknowledged messages looked for."""
    from rmqlab import lookup
    from rmqlab.engine import MessageStore

    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="rmqlab-kill-"))
    try:
        root = work / "store"
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_writer, args=(str(root), seed, child))
        proc.start()
        child.close()
        acks = []
        if parent.poll(30) and parent.recv() == "started":
            deadline = time.monotonic() + rng.uniform(0.02, 0.6)
            while time.monotonic() < deadline:
                if parent.poll(0.01):
                    acks.append(parent.recv())
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        while parent.poll():  # acknowledged before the kill, still in the pipe
            try:
                acks.append(parent.recv())
            except EOFError:
                break
        expanded = []
        for a in acks:
            if a[0] == "batch":
                # one queue per message of the list, consecutive offsets per queue
                _, items = a
                expanded += [(q, None, k) for q, k in items]
            else:
                expanded.append(a)
        c = Counter(acknowledged=len(expanded))
        if not root.exists():
            return c
        with MessageStore.open(root, _writer_config(seed), services=False) as store, store.reader() as reader:
            for qid, qoff, key in expanded:
                found = lookup.query_by_key(reader, "TopicK", key).records
                if not found:
                    c["unfindable"] += 1
                if qoff is not None:
                    try:
                        rec = lookup.get_message(reader, "TopicK", qid, qoff)[1]
                    except Exception:  # noqa: BLE001 - nothing at that offset
                        c["lost"] += 1
                        continue
                    if rec.body != _body(key) or rec.properties.get("KEYS") != key:
                        c["corrupted"] += 1
                elif not found:
                    c["lost"] += 1
                elif found[0].body != _body(key):
                    c["corrupted"] += 1
        return c
    finally:
        shutil.rmtree(work, ignore_errors=True)


def kill_context():
    """Writers start from a forkserver that has imported the engine once."""
    import multiprocessing as mp

    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["rmqlab.engine", "tests.faults.campaign"])
    return ctx


def run_kill_points(seeds) -> Counter:
    ctx = kill_context()
    total: Counter = Counter()
    for s in seeds:
        total += run_kill_point(s, ctx)
        total["kill points"] += 1
    return total


def table(inputs: Counter, kills: Counter) -> str:
    lines = ["| inputs | " + " | ".join(OUTCOMES) + " |", "|---|" + "---|" * len(OUTCOMES)]
    lines.append(f"| {sum(inputs.values())} | " + " | ".join(str(inputs.get(o, 0)) for o in OUTCOMES) + " |")
    lines += ["", "| kill points | acknowledged | lost | corrupted | unfindable by key |", "|---|---|---|---|---|"]
    lines.append(f"| {kills.get('kill points', 0)} | {kills.get('acknowledged', 0)} | {kills.get('lost', 0)} | {kills.get('corrupted', 0)} | {kills.get('unfindable', 0)} |")
    return "\n".join(lines)
