"""Durability experiments on the engine: what a put costs when it must be on disk.

Java counterpart: none — these are the measurements behind RocketMQ's flush design
(``CommitLog.GroupCommitService``, ``FlushRealTimeService``), run on this machine's
disk with rmqlab's engine:

* :func:`group_commit` — SYNC_FLUSH with N producer threads: every put waits for a
  force (``fdatasync``) covering its record; producers that arrive while a force runs
  share the next one.  Per-put latency, forces, puts per force.
* :func:`write_patterns` — the disk itself: 4 KiB writes in order and at random
  places, with and without a force after each, as records/s and MB/s.

Both write only under the directory they are given and remove what they wrote.  The
figures are this machine's (its disk, its page cache, its load); what holds anywhere
is their shape, which is what the lesson asserts.
"""

from __future__ import annotations

import os
import random
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..config import SYNC_FLUSH, MessageStoreConfig


@dataclass
class GroupCommitRun:
    """One SYNC_FLUSH run: ``producers`` threads, ``puts`` in all."""

    producers: int
    puts: int
    seconds: float
    forces: int  # fdatasync calls the group commit made
    latencies_ms: np.ndarray = field(repr=False)  # per put: from calling put to its answer
    force_seconds: float | None = None  # time spent inside fdatasync (the C group commit measures it)
    statuses: dict[str, int] = field(default_factory=dict)

    @property
    def puts_per_force(self) -> float:
        return self.puts / max(1, self.forces)

    @property
    def puts_per_second(self) -> float:
        return self.puts / self.seconds

    @property
    def median_ms(self) -> float:
        return float(np.median(self.latencies_ms))

    @property
    def p99_ms(self) -> float:
        return float(np.percentile(self.latencies_ms, 99))

    def row(self) -> dict:
        return {
            "producers": self.producers,
            "puts": self.puts,
            "puts/s": round(self.puts_per_second),
            "forces": self.forces,
            "puts per force": round(self.puts_per_force, 2),
            "median latency (ms)": round(self.median_ms, 3),
            "p99 latency (ms)": round(self.p99_ms, 3),
        }


def group_commit(directory: str | os.PathLike, producers: int, puts: int, *, body_size: int = 256, messages=None, native_put: bool = True, native_group_commit: bool = True) -> GroupCommitRun:
    """Put ``puts`` messages from ``producers`` threads into a new SYNC_FLUSH store
    under ``directory`` (removed afterwards) and time each put.

    ``messages`` (a list of :class:`~rmqlab.engine.message.Message`) replaces the
    default ones (``Durability``, four queues, ``body_size`` bytes)."""
    from ..engine.message import Message
    from ..engine.message_store import MessageStore

    root = Path(directory) / f"group-commit-{producers}"
    if root.exists():
        shutil.rmtree(root)
    per = puts // producers
    if messages is None:
        body = bytes(body_size)
        messages = [Message("Durability", body, {"KEYS": f"k{i}"}, queue_id=i % 4) for i in range(per * producers)]
    messages = messages[: per * producers]
    lat = np.zeros(len(messages))
    statuses: dict[str, int] = {}
    store = MessageStore.open(root, MessageStoreConfig(flush_disk_type=SYNC_FLUSH), native_put=native_put, native_group_commit=native_group_commit)
    try:

        def producer(k: int) -> None:
            put, clock = store.put, time.perf_counter
            for i in range(k, len(messages), producers):
                t = clock()
                r = put(messages[i])
                lat[i] = clock() - t
                name = str(getattr(r.status, "name", r.status))
                statuses[name] = statuses.get(name, 0) + 1

        threads = [threading.Thread(target=producer, args=(k,)) for k in range(producers)]
        t0 = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        store.reput()
        elapsed = time.perf_counter() - t0
        forces = store._group_commit.flushes
        forcing = getattr(store._group_commit, "force_seconds", None)
    finally:
        store.shutdown()
        shutil.rmtree(root, ignore_errors=True)
    return GroupCommitRun(producers, len(messages), elapsed, forces, lat * 1000.0, forcing, statuses)


@dataclass
class WritePattern:
    """``writes`` blocks of ``block`` bytes, ``order`` sequential or random, with or
    without a force after each write."""

    order: str
    fsync: bool
    writes: int
    block: int
    seconds: float

    @property
    def us_per_write(self) -> float:
        return self.seconds / self.writes * 1e6

    @property
    def mb_per_s(self) -> float:
        return self.writes * self.block / self.seconds / 1e6

    def row(self) -> dict:
        return {"order": self.order, "force after each write": self.fsync, "writes": self.writes, "µs per write": round(self.us_per_write, 1), "MB/s": round(self.mb_per_s, 1)}


def write_patterns(directory: str | os.PathLike, *, file_size: int = 64 << 20, block: int = 4096, writes: int = 4096, forced_writes: int = 256, seed: int = 0) -> list[WritePattern]:
    """Sequential and random ``block``-byte writes into a ``file_size`` file under
    ``directory``: ``writes`` of them without a force, ``forced_writes`` with an
    ``fdatasync`` after each (a force costs a disk round trip: fewer of them keep the
    experiment short).  The file is pre-allocated first, as RocketMQ's files are, so
    that no write extends it."""
    path = Path(directory) / "write-patterns.bin"
    data = os.urandom(block)
    blocks = file_size // block
    rng = random.Random(seed)
    out = []
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.ftruncate(fd, file_size)
        for start in range(0, file_size, 1 << 20):  # pre-allocate: real blocks, not a hole
            os.pwrite(fd, bytes(1 << 20), start)
        os.fsync(fd)
        for fsync in (False, True):
            n = forced_writes if fsync else writes
            for order in ("sequential", "random"):
                where = list(range(n)) if order == "sequential" else [rng.randrange(blocks) for _ in range(n)]
                t = time.perf_counter()
                for b in where:
                    os.pwrite(fd, data, (b % blocks) * block)
                    if fsync:
                        os.fdatasync(fd)
                if not fsync:
                    os.fdatasync(fd)  # the same data on disk at the end: one force for all
                out.append(WritePattern(order, fsync, n, block, time.perf_counter() - t))
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    return out
