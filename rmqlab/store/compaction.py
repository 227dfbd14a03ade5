"""The compaction store, read side (Java ``CompactionStore``, topics with
``cleanup.policy=COMPACTION``).

Dispatch copies every record of a compacted topic that has KEYS into a log of its own
(``CommitLogDispatcherCompaction`` → ``CompactionLog.asyncPutMessage``); compaction
later rewrites that log keeping the newest record of each key.  Under the store root::

    compaction/
      compactionLog/<topic>/<queueId>/   records in commitlog layout, each record's
                                         physicalOffset field rewritten to its position
                                         in this log; a file ends with a BLANK
                                         (CompactionAppendMessageCallback.doAppend)
      compactionCq/<topic>/<queueId>/    SparseConsumeQueue: 46-byte batch units (batch
                                         size 1) pointing into the log; files named and
                                         rolled with the log's
      position-checkpoint                CompactionPositionMgr: {"queueOffsetMap":
                                         {"<topic>_<queueId>": offset compacted up to}}
      .../compacting/, .../replicating/  a compaction (or a slave's copy) under way

Only names and read-only maps are used here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import StoreFormatError
from ..format.fastjson import parse_fastjson
from .batch_consume_queue import SparseConsumeQueue
from ..rules import COMPACTION_CQ_DIR, COMPACTION_DIR, COMPACTION_LOG_DIR, COMPACTION_POSITION_FILE
from .commitlog import CommitLog

#: Java CompactionLog.COMPACTING_SUB_FOLDER / REPLICATING_SUB_FOLDER: a compaction or a copy under way
WORK_SUB_FOLDERS = ("compacting", "replicating")


#: MessageStoreConfig.compactionMappedFileSize / compactionCqMappedFileSize defaults
DEFAULT_COMPACTION_MAPPED_FILE_SIZE = 100 * 1024 * 1024
DEFAULT_COMPACTION_CQ_MAPPED_FILE_SIZE = 10 * 1024 * 1024


def compaction_file_sizes(cq_setting: int, log_setting: int) -> tuple[int, int]:
    """``(log file size, queue file size)`` as ``CompactionLog``'s constructor derives
    them from ``compactionMappedFileSize`` and ``compactionCqMappedFileSize``: the queue
    size in whole 46-byte units, the log size a multiple of it (``getCompactionLogSize``:
    at least 5, rounded down when the remainder is under half a queue file, else up —
    an exact multiple gets one more)."""
    from ..format.consumequeue import BCQ_STORE_UNIT_SIZE

    cq = cq_setting // BCQ_STORE_UNIT_SIZE * BCQ_STORE_UNIT_SIZE
    n, m = divmod(log_setting, cq)
    if n < 5:
        return cq * 5, cq
    return (n * cq if 0 < m < (cq >> 1) else (n + 1) * cq), cq


@dataclass
class CompactionQueue:
    """One compacted queue: its log and its sparse queue (None when the directory is
    missing: Java's ``CompactionStore.load`` then skips the log)."""

    topic: str
    queue_id: int
    log: CommitLog
    cq: SparseConsumeQueue | None
    #: sub-folders of a compaction or a copy under way (compacting/, replicating/)
    in_progress: list[str] = field(default_factory=list)

    def close(self) -> None:
        self.log.close()
        if self.cq is not None:
            self.cq.close()


class CompactionStore:
    """``STORE/compaction/`` (Java ``CompactionStore``)."""

    def __init__(self, root: str | os.PathLike):
        self.path = Path(root) / COMPACTION_DIR
        self.log_path = self.path / COMPACTION_LOG_DIR
        self.cq_path = self.path / COMPACTION_CQ_DIR
        self.problems: list[StoreFormatError] = []

    def queue_ids(self) -> list[tuple[str, int]]:
        """Every ``compactionLog/<topic>/<queueId>/`` (Java ``CompactionStore.load``)."""
        if not self.log_path.is_dir():
            return []
        out = []
        for t in self.log_path.iterdir():
            if t.is_dir():
                out += [(t.name, int(q.name)) for q in t.iterdir() if q.is_dir() and q.name.isdigit()]
        return sorted(out)

    def queue(self, topic: str, queue_id: int) -> CompactionQueue:
        d = self.log_path / topic / str(queue_id)
        c = self.cq_path / topic / str(queue_id)
        log = CommitLog(d, strict=False)
        self.problems += log.queue.problems
        # a sparse queue's files are named after the log file they index (SparseConsumeQueue
        # rolls with it): their size is compactionCqMappedFileSize, not the gap between names
        sizes = sorted({p.stat().st_size for p in c.iterdir() if p.is_file()}) if c.is_dir() else []
        cq = SparseConsumeQueue(c, topic, queue_id, sizes[-1] if sizes else None, strict=False, contiguous=False) if c.is_dir() else None
        if cq is not None:
            self.problems += cq.queue.problems
        busy = [f"{x}/{s}" for x in (d, c) for s in WORK_SUB_FOLDERS if (x / s).is_dir()]
        return CompactionQueue(topic, queue_id, log, cq, busy)

    def positions(self) -> dict[tuple[str, int], int]:
        """``CompactionPositionMgr``'s queueOffsetMap: how far each queue was compacted
        (its ``topic_queueId`` keys split at the last ``_``); {} without the file."""
        p = self.path / COMPACTION_POSITION_FILE
        if not p.exists():
            return {}
        doc = parse_fastjson(p.read_text(encoding="utf-8", errors="replace"), p)
        table = doc.get("queueOffsetMap") if isinstance(doc, dict) else None
        if not isinstance(table, dict):
            raise StoreFormatError(p, 0, "no queueOffsetMap object")
        out = {}
        for k, v in table.items():
            topic, sep, qid = str(k).rpartition("_")
            if sep and qid.isdigit() and isinstance(v, int):
                out[(topic, int(qid))] = v
        return out
