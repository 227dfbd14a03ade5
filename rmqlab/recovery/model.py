"""The recovery plan's data: what :func:`rmqlab.recovery.recover.plan` decides and
:func:`~rmqlab.recovery.recover.apply` carries out (:class:`RecoveryPlan`), each
queue as its ``recover`` leaves it (:class:`Queue`) and what truncation cuts from it
(:class:`Cut`).  The steps that fill them are :mod:`rmqlab.recovery.queues`,
:mod:`rmqlab.recovery.redispatch` and :mod:`rmqlab.recovery.recover`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..config import MessageStoreConfig
from ..files import MappedFileQueue
from ..files.extent import data_regions
from ..format.consumequeue import BCQ_STORE_UNIT_SIZE, CQ_STORE_UNIT_SIZE
from ..scan.acceptance import FileScan
from ..store.batch_consume_queue import BCQ_DTYPE
from ..store.consume_queue import CQ_DTYPE
from .report import RecoveryReport

#: how the report's log lines name the store root (RocketMQ's lines name its path)
STORE = "<store>"


@dataclass
class Queue:
    """One queue as its ``recover`` leaves it: a consume queue (20-byte entries in
    ``consumequeue/``) or, with ``batch``, a batch queue (46-byte units in
    ``batchconsumequeue/``, ``BatchConsumeQueue``).  Positions are in units: for a
    consume queue a unit's index is its queue offset; a batch unit's queue offsets are
    its msgBaseOffset and the batchSize after it."""

    topic: str
    queue_id: int
    directory: Path
    files: list[tuple[int, Path]]  # (start byte offset, path)
    # the files recover reads (from the third-to-last) and how many valid units each
    # holds from its start; their units are read when asked (:meth:`suffix_from`,
    # :meth:`offsets_from`, :meth:`last_unit`), as are
    # the files before them, which are trusted as they are: a plan holds no queue's
    # units, so its memory does not grow with the number of queues
    read: list[tuple[Path, int]]
    first_queue_offset: int  # the unit index of the first file's first unit
    end: int  # processOffset in bytes (unit index × unit size)
    #: Java getMaxPhysicOffset: a consume queue's offset + size of its last entry, a
    #: batch queue's offset of its last unit (maxMsgPhyOffsetInCommitLog)
    max_physic_offset: int
    deleted: list[Path] = field(default_factory=list)
    created: bool = False
    early: list[Path] = field(default_factory=list)  # the trusted files before those ``read``
    early_count: int = 0  # their units
    file_size: int = 0
    batch: bool = False
    #: Java maxExtAddr: the last valid entry's tagsCode that is an ext address (1: none)
    max_ext_addr: int = 1
    #: ext files ConsumeQueueExt.truncateByMaxAddress deletes (enableConsumeQueueExt)
    ext_deleted: list[Path] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.topic}/{self.queue_id}"

    @property
    def unit(self) -> int:
        return BCQ_STORE_UNIT_SIZE if self.batch else CQ_STORE_UNIT_SIZE

    @property
    def dtype(self) -> np.dtype:
        return BCQ_DTYPE if self.batch else CQ_DTYPE

    @property
    def read_count(self) -> int:
        return sum(n for _, n in self.read)

    @property
    def count(self) -> int:
        """Units from the first file to the end of the queue."""
        return self.early_count + self.read_count

    @property
    def entries_queue_offset(self) -> int:
        """The unit index of the first unit of the files ``read``."""
        return self.first_queue_offset + self.early_count

    def last_unit(self):
        """The last valid unit (a row of ``dtype``), or None."""
        last = next(((p, n) for p, n in reversed(self.read) if n), None)
        if last is not None:
            return read_entries(last[0], self.file_size, self.dtype)[last[1] - 1]
        if self.early:
            return read_entries(self.early[-1], self.file_size, self.dtype)[-1]
        return None

    @property
    def max_offset_in_queue(self) -> int:
        """Java ``getMaxOffsetInQueue``: a consume queue's unit count from offset 0; a
        batch queue's last msgBaseOffset + batchSize (``reviseMaxOffsetInQueue``)."""
        if not self.batch:
            return self.first_queue_offset + self.count
        u = self.last_unit()
        return 0 if u is None else int(u["msg_base_offset"]) + int(u["batch_size"])

    @property
    def physic_end(self) -> int:
        """Where the last unit's record ends in the log (-1: no unit)."""
        if not self.batch:
            return self.max_physic_offset
        u = self.last_unit()
        return -1 if u is None else int(u["commitlog_offset"]) + int(u["size"])

    def queue_offsets(self, e: np.ndarray, first: int) -> np.ndarray:
        """The (first) queue offset of each unit of ``e``, whose first unit is unit ``first``."""
        return e["msg_base_offset"].astype(np.int64) if self.batch else first + np.arange(len(e), dtype=np.int64)

    def messages(self, e: np.ndarray) -> int:
        """How many queue offsets the units ``e`` cover."""
        return int(e["batch_size"].astype(np.int64).sum()) if self.batch else len(e)

    def suffix_from(self, phy_offset: int) -> tuple[np.ndarray, int]:
        """Units and the unit index of the first of them, enough to see every unit of
        the queue's suffix pointing at or past ``phy_offset`` (Java's truncation walks
        back from the last file): the read files from the last back to the first whose
        first unit points below it, and the trusted files before them only when the
        suffix reaches into them."""
        parts, first = [], self.entries_queue_offset + self.read_count
        for p, n in reversed(self.read):
            if not n:
                continue
            e = read_entries(p, self.file_size, self.dtype)[:n]
            parts.insert(0, e)
            first -= n
            if int(e["commitlog_offset"][0]) < phy_offset:
                return np.concatenate(parts), first
        e = np.concatenate(parts) if parts else np.zeros(0, self.dtype)
        if self.early_count:
            return np.concatenate([read_entries(p, self.file_size, self.dtype) for p in self.early] + [e]), self.first_queue_offset
        return e, self.entries_queue_offset

    def offsets_from(self, phy_offset: int) -> np.ndarray:
        """The commitlog offsets (int64) of every unit pointing at or past
        ``phy_offset``, the trusted files read one at a time."""
        parts = []
        for p in self.early:
            o = read_entries(p, self.file_size, self.dtype)["commitlog_offset"].astype(np.int64)
            parts.append(o[o >= phy_offset])
        for p, n in self.read:
            o = read_entries(p, self.file_size, self.dtype)["commitlog_offset"][:n].astype(np.int64)
            parts.append(o[o >= phy_offset])
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def read_entries(p: Path, file_size: int, dtype: np.dtype = CQ_DTYPE) -> np.ndarray:
    """A queue file's units (``file_size`` bytes of them: past a shorter file's end,
    zeros), read straight into the array; holes of a sparse file are zeros without
    reading.  (Read into bytes and copied out, the 10 GiB store's 51 M units cost 1.3 s
    of copying in every plan.)"""
    units = np.zeros(file_size // dtype.itemsize, dtype)  # calloc'd: pages not read stay zero
    raw = units.view(np.uint8)
    fd = os.open(p, os.O_RDONLY)
    try:
        for a, b in data_regions(fd, 0, file_size):
            b = min(b, len(raw))
            while a < b:
                n = os.preadv(fd, [raw[a:b]], a)
                if n <= 0:  # the file's end: shorter than its size says
                    break
                a += n
    finally:
        os.close(fd)
    return units


class Cut(NamedTuple):
    units: int  # units cut
    ranges: list  # (file, offset, length) of their bytes
    messages: int  # queue offsets they covered
    max_offset: int  # the queue's max offset after the cut (getMaxOffsetInQueue)


@dataclass
class RecoveryPlan:
    """What start-up recovery decides for a store, found read-only: the report (what a
    dry run prints) and what applying it needs.  :func:`plan` makes one, :func:`apply`
    carries it out; a plan maps the commitlog files read-only until it is applied or
    :meth:`close` d.

    Java decides all of this inside ``DefaultMessageStore.load`` and ``recover`` while
    it changes the files; here the decisions come first, so that a dry run and an
    applied run are the same decisions, made once.

    >>> from rmqlab.lab.samples import shipped_dir
    >>> from rmqlab.recovery import plan
    >>> p = plan(shipped_dir() / "crashed")
    >>> p.report.mode, p.report.start_file, p.report.commitlog_end, p.report.records_lost
    ('abnormal', '00000000000000262144', 276681, 12)
    >>> p.close()                           # or apply(p, ...): nothing was written
    """

    root: Path
    config: MessageStoreConfig
    report: RecoveryReport
    #: the commitlog files as ``MappedFileQueue.load`` keeps them (mapped read-only)
    commitlog: MappedFileQueue | None = None
    #: an empty last commitlog file: Java's load deletes it
    empty_last: list[Path] = field(default_factory=list)
    #: every index file of the store (``index/`` listed once), and those recovery deletes:
    #: newer than the checkpoint's indexMsgTimestamp (abnormal), or all (``reindex``)
    index_files: list[Path] = field(default_factory=list)
    dropped_index: list[Path] = field(default_factory=list)
    #: endPhyOffset of the newest index file kept (the last record it indexed; -1: no
    #: index file kept): dispatch indexes only records at or past it
    index_end_phy: int = -1
    #: the writer's index safe offset at load (rocketmq-rust: restore_index_safe_offset)
    index_safe_at_load: int = 0
    #: every consume queue as ``ConsumeQueue.recover`` leaves it (and every batch queue,
    #: as ``BatchConsumeQueue.recover`` does)
    queues: dict[tuple[str, int], Queue] = field(default_factory=dict)
    #: the topics whose queues dispatch writes as batch queues (queue.type=BatchCQ)
    batch_topics: set = field(default_factory=set)
    #: enableMultiDispatch / enableLmq: dispatch also puts units in the queues a
    #: record's INNER_MULTI_DISPATCH names (ConsumeQueue.multiDispatchLmqQueue)
    multi_dispatch: bool = False
    enable_lmq: bool = False
    #: enableConsumeQueueExt: every consume queue has ext files, written before each entry
    consume_queue_ext: bool = False
    #: why RocketMQ's load fails in a way no recovery follows (a queue in the directory of
    #: the other queue type than the topic table's, a compaction log whose files do not
    #: pair with its queue's): the broker does not start, and apply refuses
    fails_load: list = field(default_factory=list)
    #: compaction log files CompactionLog's load deletes (past its queue's last unit)
    compaction_deleted: list[Path] = field(default_factory=list)
    #: every queue entry's commitlog offset, sorted, and which queue each is an entry of
    #: (an index into ``queues.values()``): where records are known to start
    hints: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    hint_owner: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    #: the scan: (file index, FileScan) per file scanned, and the records it accepted
    scans: list[tuple[int, FileScan]] = field(default_factory=list)
    positions: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sizes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #: the new end of the log (Java processOffset) and the file the scan started from
    process: int = 0
    start_index: int = 0
    #: where in the start file the walk began (enableAcceleratedRecovery); -1: its first byte
    scan_at: int = -1
    #: the consume queues' max physical offset after recovery, as dispatch and truncation
    #: leave it (with truncation: an upper bound, the new end of the log)
    queues_max_after: int = -1
    #: maxPhyOffsetOfConsumeQueue >= processOffset: truncateDirtyLogicFiles runs
    truncate_cq: bool = False
    #: the RocksDB holding the consume queues (storeType=defaultRocksDB), None: file queues
    rocksdb_dir: Path | None = None
    #: rocksdbstore/'s writers dispatch feeds (5.4+: "index", "trans" -> on), and whether
    #: dispatch writes index files too (indexFileWriteEnable)
    message_rocksdb: dict = field(default_factory=dict)
    #: the RocksDB copy beside file queues (rocksdbCQDoubleWriteEnable), None: none; what
    #: start-up does to each of its queues, and those start() re-initialises (queue ->
    #: the file queue's max offset)
    rocksdb_copy_dir: Path | None = None
    copy_changes: list = field(default_factory=list)
    copy_reinit: dict = field(default_factory=dict)
    #: queues whose re-initialisation races with the copy's group commit in Java
    copy_racy: dict = field(default_factory=dict)
    index_files_written: bool = True
    #: no commitlog file at all: every consume queue is deleted
    wipe_queues: bool = False
    #: commitlog files that start after the new end (deleted)
    delete_commitlog: list = field(default_factory=list)
    #: what re-dispatch hands the dispatcher: DispatchColumns, or a list of DispatchRequests
    dispatch_records: object = ()  # a redispatch.DispatchChunks once planned
    #: applying would build an index file whose size nothing says (why, or "")
    index_size_unknown: str = ""
    #: ``reindex``: every index file is rebuilt, from these record positions before the
    #: start file and every record the scan accepted
    reindex: bool = False
    reindex_positions: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def files(self) -> list:
        return self.commitlog.files if self.commitlog is not None else []

    def handed_to_dispatch(self) -> np.ndarray:
        """The positions recovery hands to dispatch, in log order (Java: abnormal,
        every record scanned; normal, those past the queues' max physical offset;
        ``reindex``, every record of the log), before dispatch skips what its queue
        and the index already hold.  The record that starts exactly at that offset is
        handed on as the writer does (:attr:`rmqlab.releases.Release.lowest_dispatch_progress`):
        Java's recoverNormally leaves it out, rocketmq-rust's reput takes it."""
        from ..releases import release

        if self.reindex:
            return np.concatenate([self.reindex_positions, self.positions])
        if self.report.mode == "normal":
            if release(self.report.release).lowest_dispatch_progress:
                return self.positions[self.positions >= self.report.dispatch_from]
            return self.positions[self.positions > self.report.dispatch_from]
        return self.positions

    @property
    def rocksdb_beside(self) -> bool:
        """A RocksDB dispatch writes beside the file queues (their copy, rocksdbstore/'s
        keys or transactions): re-dispatch hands on every record, not only what the
        files lack."""
        return self.rocksdb_copy_dir is not None or bool(self.message_rocksdb)

    @property
    def changes_store(self) -> bool:
        """Whether applying it would change any file (else a start needs no recovery)."""
        r = self.report
        return bool(r.cut_bytes or r.deleted_commitlog_files or r.changed_queues or r.index or r.records_redispatched or self.compaction_deleted)

    def close(self) -> None:
        """Unmap the commitlog files (apply does it before it changes them)."""
        if self.commitlog is not None:
            self.commitlog.close()
