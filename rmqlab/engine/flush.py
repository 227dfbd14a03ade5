"""Flushing the CommitLog to disk (Java ``CommitLog.FlushRealTimeService`` and
``CommitLog.GroupCommitService``) and the consume queues / index (Java
``FlushConsumeQueueService``).

* ``ASYNC_FLUSH`` — :class:`FlushRealTimeService`: a background thread wakes every
  ``flushIntervalCommitLog`` ms and forces the commitlog when at least
  ``flushCommitLogLeastPages`` pages (4 KiB) are dirty, or everything every
  ``flushCommitLogThoroughInterval`` ms.  A put returns as soon as its bytes are in
  the page cache.
* ``SYNC_FLUSH`` — :class:`GroupCommitService`: a put returns only after a force
  that covers its record.  Producers that arrive while a force is running wait for
  the next one, which covers all of them: one ``fdatasync`` per group, not per put
  (group commit).  A put whose force does not complete within ``syncFlushTimeout``
  ms answers ``FLUSH_DISK_TIMEOUT`` (its record is written, not known durable).

The force itself is ``os.fdatasync`` on the file (see :mod:`.mapped_file`), which
releases the GIL: producers keep appending while it runs.  When the C module
:mod:`rmqlab.engine._group_commit` is built, the store uses its ``GroupCommit``
instead of :class:`GroupCommitService`: the same protocol (``start``, ``wait_for``,
``request``, ``stop``, ``halt``, ``flushes``) with a flusher thread that never takes
the GIL, so a force is not held up behind the producers' appends.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

PAGE_SIZE = 4096  # Java OS_PAGE_SIZE


class FlushService(threading.Thread):
    """Common loop: ``do_flush()`` is called by the thread; ``stop()`` ends it after a
    last flush (Java ``ServiceThread.shutdown`` + the final "retry" flushes)."""

    def __init__(self, name: str):
        super().__init__(name=name, daemon=True)
        self._stop_evt = threading.Event()
        self._wake = threading.Event()
        self._halted = False  # stopped as by kill -9: no last flush
        self.error: BaseException | None = None

    def wakeup(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop_evt.set()
        self._wake.set()
        if self.is_alive():
            self.join(timeout)

    def halt(self, timeout: float = 5.0) -> None:
        """Stop as a killed process would: no last flush (see ``MessageStore.crash``)."""
        self._halted = True
        self.stop(timeout)


class FlushRealTimeService(FlushService):
    """Java ``FlushRealTimeService`` (ASYNC_FLUSH)."""

    def __init__(self, flush: Callable[[], None], dirty_bytes: Callable[[], int], interval_ms: int, least_pages: int, thorough_interval_ms: int):
        super().__init__("FlushRealTimeService")
        self.flush = flush
        self.dirty_bytes = dirty_bytes
        self.interval = max(1, interval_ms) / 1000.0
        self.least_bytes = max(0, least_pages) * PAGE_SIZE
        self.thorough = thorough_interval_ms / 1000.0
        self.last_thorough = time.monotonic()
        self.flushes = 0

    def run(self) -> None:
        try:
            while not self._stop_evt.is_set():
                self._wake.wait(self.interval)
                self._wake.clear()
                now = time.monotonic()
                dirty = self.dirty_bytes()
                thorough = now - self.last_thorough >= self.thorough
                if dirty > 0 and (thorough or dirty >= self.least_bytes):
                    self.flush()
                    self.flushes += 1
                if thorough:
                    self.last_thorough = now
            if not self._halted and self.dirty_bytes() > 0:
                self.flush()  # Java: the shutdown flush
        except BaseException as exc:  # pragma: no cover - surfaced by the store
            self.error = exc


class GroupCommitService(FlushService):
    """Java ``GroupCommitService`` (SYNC_FLUSH): waiting puts share one force.

    As Java completes one ``CompletableFuture`` per ``GroupCommitRequest``, every
    waiting producer blocks on a lock of its own, which the flusher releases once a
    force covers its offset.  (Waiting on one shared condition instead makes all the
    woken producers queue for that condition's lock, one after the other, before any
    of them can return: a convoy that costs more than the force.)  The flusher waits
    on a condition that only producers notify.

    One refinement over Java, in the spirit of PostgreSQL's ``commit_delay`` /
    ``commit_siblings``: when the previous force released several waiting producers,
    the next force waits up to ``linger_s`` for half as many requests to arrive
    before it starts.  Python threads wake one at a time (they take turns on the
    GIL), so without it a force would start as soon as the first of them is back and
    carry one record; waiting for all of them would leave the disk idle while they
    append one after the other.  With half, the producers settle into two groups:
    one appends while the other's force runs (the force releases the GIL).  Measured
    with 8 producers: ~1.3x the throughput of waiting for all.  A lone producer
    never lingers.
    """

    def __init__(self, flush: Callable[[], int], flushed_where: int, linger_s: float = 0.0005):
        super().__init__("GroupCommitService")
        self.flush = flush
        self.lock = threading.Lock()
        self.work = threading.Condition(self.lock)  # the flusher waits here
        self.requested = flushed_where
        self.flushed = flushed_where
        self.flushes = 0  # forces done (group commits)
        self.linger_s = linger_s
        self.waiting: list[tuple[int, object]] = []  # (offset, held lock) of every blocked producer
        self.last_group = 1  # producers the previous force released
        # waiters the flusher is waiting for: producers wake it only when there are as
        # many (each needless wake-up of a Python thread costs a GIL hand-over)
        self._need = 1

    def wakeup(self) -> None:
        with self.lock:
            self.work.notify()

    def request(self, offset: int, store_timestamp: int = 0) -> None:
        """Ask for a force covering ``offset`` without waiting for it (a put with
        ``WAIT=false``).  (``store_timestamp`` is for the C service's interface: here
        the flush callable reads the newest record's timestamp itself and hands it to
        the commitlog with the force.)"""
        with self.lock:
            if offset > self.requested:
                self.requested = offset
            self.work.notify()

    def wait_for(self, offset: int, timeout_s: float, store_timestamp: int = 0) -> bool:
        """Block until everything below ``offset`` is on disk; ``False`` on timeout
        (Java ``GroupCommitRequest.future().get(syncFlushTimeout)``)."""
        with self.lock:
            if self.flushed >= offset:
                return True
            if self.error is not None:
                return False
            if offset > self.requested:
                self.requested = offset
            mine = threading.Lock()
            mine.acquire()
            self.waiting.append((offset, mine))
            if len(self.waiting) >= self._need:
                self.work.notify()
        if mine.acquire(timeout=timeout_s):
            return self.flushed >= offset
        with self.lock:  # timed out: stop waiting (unless released just now)
            try:
                self.waiting.remove((offset, mine))
            except ValueError:
                pass
            return self.flushed >= offset

    def stop(self, timeout: float = 10.0) -> None:
        self._stop_evt.set()
        with self.lock:
            self.work.notify_all()
        if self.is_alive():
            self.join(timeout)

    def _release(self, everyone: bool = False) -> int:
        """Release the producers the last force covers (all of them on error)."""
        with self.lock:
            flushed = self.flushed
            ready = [w for w in self.waiting if everyone or w[0] <= flushed]
            if ready:
                self.waiting = [w for w in self.waiting if not (everyone or w[0] <= flushed)]
        for _, lk in ready:
            lk.release()
        return len(ready)

    def run(self) -> None:
        try:
            while True:
                with self.lock:
                    self._need = 1
                    while self.requested <= self.flushed and not self._stop_evt.is_set():
                        self.work.wait(0.01)
                    if self._halted or (self._stop_evt.is_set() and self.requested <= self.flushed):
                        break
                    target = (self.last_group + 1) // 2
                    if target > 1:
                        self._need = target
                        deadline = time.monotonic() + self.linger_s
                        while len(self.waiting) < target:
                            left = deadline - time.monotonic()
                            if left <= 0:
                                break
                            self.work.wait(left)
                    self._need = 1 << 30  # forcing: arrivals wait for the next round
                # force outside the lock: producers keep appending and queueing
                done = self.flush()
                with self.lock:
                    self.flushes += 1
                    self.flushed = max(self.flushed, done)
                self.last_group = max(1, self._release())
        except BaseException as exc:  # pragma: no cover
            self.error = exc
            self._release(everyone=True)


class PeriodicService(FlushService):
    """Run ``task()`` every ``interval_ms`` (Java's scheduled services: consume-queue
    flush, reput, clean)."""

    def __init__(self, name: str, task: Callable[[], None], interval_ms: int, final: bool = False):
        super().__init__(name)
        self.task = task
        self.interval = max(1, interval_ms) / 1000.0
        self.final = final

    def run(self) -> None:
        try:
            while not self._stop_evt.is_set():
                self._wake.wait(self.interval)
                self._wake.clear()
                if self._stop_evt.is_set():
                    break
                self.task()
            if self.final:
                self.task()
        except BaseException as exc:  # pragma: no cover
            self.error = exc
