"""A store being written, to watch it grow (lesson 11, ``LiveStoreWatcher``).

RocketMQ's broker appends on the producer's thread, and three of its own threads catch
up behind it: ``ReputMessageService`` dispatches what was appended to the consume queues
and the index, ``FlushRealTimeService`` forces the CommitLog to disk, and
``FlushConsumeQueueService`` the queues and the checkpoint.  :class:`LiveStore` runs
rmqlab's engine with those steps done when asked (:meth:`put`, :meth:`dispatch`,
:meth:`flush`) and a clock that moves one millisecond per record, so a lesson shows the
same positions on every run; a :class:`~rmqlab.store.follow.LogFollower` reads the log
as another process would (``rmqlab tail``).  :meth:`kill` stops the engine as
``kill -9`` does, :meth:`restart` opens the store again (its recovery runs).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..config import MessageStoreConfig
from ..engine import Message, MessageStore
from ..engine.results import PutMessageStatus
from ..errors import RmqlabError
from ..format.record import Record
from ..store.follow import LogFollower
from ..writers.clock import ManualClock

#: small files, so that a few dozen puts roll the log
FILE_SIZE = 16 << 10
START_MS = 1_800_000_000_000


@dataclass(frozen=True)
class Positions:
    """Where each part of a live store is, in the log's physical offsets (Java names:
    ``getMaxPhyOffset``, ``flushedWhere``, ``reputFromOffset``) and in records."""

    written: int  # the end of what was appended (the page cache holds it)
    flushed: int  # forced to disk up to here
    dispatched: int  # the consume queues and the index have the records before here
    followed: int | None  # a follower reading the log has given out the records before here
    dispatch_behind: int  # records appended, not dispatched yet
    queue_units: dict = field(default_factory=dict)  # "topic/queue" -> units the consume queue holds
    index_entries: int = 0
    files: int = 0

    def rows(self) -> list[tuple[str, int]]:
        out = [("written (page cache)", self.written), ("flushed (on disk)", self.flushed), ("dispatched (queues, index)", self.dispatched)]
        if self.followed is not None:
            out.append(("followed (rmqlab tail)", self.followed))
        return out


class LiveStore:
    """``LiveStore(directory).put(20).dispatch(12)`` — see the module docs."""

    def __init__(self, directory: str | os.PathLike, *, file_size: int = FILE_SIZE):
        self.root = Path(directory) / "store"
        self.config = MessageStoreConfig(mapped_file_size_commit_log=file_size)
        self.clock = ManualClock(START_MS, tick_ms=1)
        self.store = self._open()
        self.running = True  # False between kill and restart
        self.follower = LogFollower(self.root)
        self.followed: list[Record] = []
        self.events: list = []  # what the follower said besides records
        self.puts = 0

    @classmethod
    def scratch(cls, **kwargs) -> "LiveStore":
        """In a new temporary directory (removed with the process)."""
        d = tempfile.mkdtemp(prefix="rmqlab-live-")
        return cls(d, **kwargs)

    def _open(self) -> MessageStore:
        store = MessageStore(self.root, self.config, clock=self.clock, services=False, dispatch="manual")
        store.start()
        return store

    # -- the broker's side -----------------------------------------------------------------
    def put(self, n: int = 1, topic: str = "Orders") -> "LiveStore":
        """Append ``n`` messages (on the producer's thread, as ``CommitLog.putMessage``)."""
        if not self.running:
            raise RmqlabError(f"{self.root}: the store was killed; restart it before putting")
        for _ in range(n):
            i = self.puts
            r = self.store.put(Message(topic, b"order %d " % i + b"." * (40 + 13 * (i % 7)), {"KEYS": f"order-{i}", "seq": str(i)}, queue_id=i % 2))
            if r.status != PutMessageStatus.PUT_OK:
                raise RmqlabError(f"{self.root}: put {i} refused: {r.status.name}")
            self.puts += 1
        return self

    def dispatch(self, n: int | None = None) -> "LiveStore":
        """Dispatch the records appended since the last time (or the first ``n``) to the
        consume queues and the index (``ReputMessageService.doReput``)."""
        self.store.reput(n)
        return self

    def flush(self) -> "LiveStore":
        """Force the CommitLog, then the queues and the checkpoint (the flush services)."""
        self.store.flush_commitlog()
        self.store.flush_logics()
        return self

    def kill(self) -> "LiveStore":
        """Stop as ``kill -9`` does: nothing flushed or dispatched on the way out; what
        was appended stays in the page cache (the machine did not lose power)."""
        self.store.crash()
        self.running = False
        return self

    def restart(self) -> "LiveStore":
        """Open the store again: its recovery runs (abnormal after :meth:`kill`) and
        dispatches what the queues lack.  Its report: :attr:`recovery`.  A running
        store is shut down first (a clean restart)."""
        if self.running:
            self.store.shutdown()
        self.store = self._open()
        self.running = True
        return self

    @property
    def recovery(self):
        return self.store.recovery_report

    # -- a reader's side -------------------------------------------------------------------
    def follow(self) -> list[Record]:
        """What a follower of the log (``rmqlab tail``) reads now: the new records."""
        got = self.follower.poll()
        recs = [x for x in got if isinstance(x, Record)]
        self.events += [x for x in got if not isinstance(x, Record)]
        self.followed += recs
        return recs

    def positions(self) -> Positions:
        s = self.store
        d = s.dispatcher
        units = {f"{t}/{q}": w.max_offset_in_queue for (t, q), w in sorted(d.queues.items())} if d is not None else {}
        idx = sum(f.index_count - 1 for f in d.index.files) if d is not None else 0
        return Positions(s.max_phy_offset, s.flushed_where, s.reput_from_offset, self.follower.position, s.dispatch_behind, units, idx,
                         len(list((self.root / "commitlog").iterdir())))

    def close(self) -> None:
        self.follower.close()
        self.store.shutdown()
