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
releases the GIL: producers keep appending while it runs.
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
        self.error: BaseException | None = None

    def wakeup(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop_evt.set()
        self._wake.set()
        if self.is_alive():
            self.join(timeout)


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
            if self.dirty_bytes() > 0:
                self.flush()  # Java: the shutdown flush
        except BaseException as exc:  # pragma: no cover - surfaced by the store
            self.error = exc


class GroupCommitService(FlushService):
    """Java ``GroupCommitService`` (SYNC_FLUSH): waiting puts share one force.

    Producers wait on one condition (``done``), the flusher on another (``work``)
    over the same lock, so a new request wakes the flusher only, never the other
    waiting producers.

    One refinement over Java, in the spirit of PostgreSQL's ``commit_delay`` /
    ``commit_siblings``: when the previous force released several waiting producers,
    the next force waits up to ``linger_s`` for about as many requests to arrive
    before it starts.  Python threads wake one at a time (they take turns on the
    GIL), so without it a force would start as soon as the first of them is back and
    the rest would wait for the next one.  A lone producer never lingers.
    """

    def __init__(self, flush: Callable[[], int], flushed_where: int, linger_s: float = 0.0005):
        super().__init__("GroupCommitService")
        self.flush = flush
        self.lock = threading.Lock()
        self.done = threading.Condition(self.lock)  # producers wait here
        self.work = threading.Condition(self.lock)  # the flusher waits here
        self.cond = self.done  # (kept for callers that waited on the old single condition)
        self.requested = flushed_where
        self.flushed = flushed_where
        self.flushes = 0  # forces done (group commits)
        self.linger_s = linger_s
        self.waiting: list[int] = []  # offsets the blocked producers wait for
        self.last_group = 1  # producers the previous force released

    def wakeup(self) -> None:
        with self.lock:
            self.work.notify()

    def wait_for(self, offset: int, timeout_s: float) -> bool:
        """Block until everything below ``offset`` is on disk; ``False`` on timeout
        (Java ``GroupCommitRequest.future().get(syncFlushTimeout)``)."""
        with self.lock:
            if self.flushed >= offset:
                return True
            if offset > self.requested:
                self.requested = offset
            self.waiting.append(offset)
            self.work.notify()
            try:
                deadline = time.monotonic() + timeout_s
                while self.flushed < offset:
                    left = deadline - time.monotonic()
                    if left <= 0 or self.error is not None:
                        return self.flushed >= offset
                    self.done.wait(left)
                return True
            finally:
                self.waiting.remove(offset)

    def _new_waiters(self) -> int:
        flushed = self.flushed
        return sum(1 for o in self.waiting if o > flushed)

    def stop(self, timeout: float = 10.0) -> None:
        self._stop_evt.set()
        with self.lock:
            self.work.notify_all()
        if self.is_alive():
            self.join(timeout)

    def run(self) -> None:
        try:
            while True:
                with self.lock:
                    while self.requested <= self.flushed and not self._stop_evt.is_set():
                        self.work.wait(0.01)
                    if self._stop_evt.is_set() and self.requested <= self.flushed:
                        break
                    if self.last_group > 1:
                        deadline = time.monotonic() + self.linger_s
                        while self._new_waiters() < self.last_group:
                            left = deadline - time.monotonic()
                            if left <= 0:
                                break
                            self.work.wait(left)
                    group = self._new_waiters()
                # force outside the lock: producers keep appending and queueing
                done = self.flush()
                with self.lock:
                    self.flushes += 1
                    self.flushed = max(self.flushed, done)
                    self.last_group = max(1, group)
                    self.done.notify_all()
        except BaseException as exc:  # pragma: no cover
            self.error = exc
            with self.lock:
                self.done.notify_all()


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
