"""Dispatch (reput): from a CommitLog record to consume-queue and index entries.

Java: ``DefaultMessageStore.doDispatch`` with its two dispatchers
``CommitLogDispatcherBuildConsumeQueue`` and ``CommitLogDispatcherBuildIndex``, fed
by ``ReputMessageService`` with ``DispatchRequest``s that
``CommitLog.checkMessageAndReturnSize`` builds from the record bytes.

What a record becomes::

    record ──► DispatchRequest(topic, queueId, offset, size, tagsCode, storeTimestamp,
                               queueOffset, keys, uniqKey, sysFlag)
        ├─► ConsumeQueue  topic/queueId  entry #queueOffset = (offset, size, tagsCode)
        │      only NOT and COMMIT transactions; PREPARED and ROLLBACK get none;
        │      a queue.type=BatchCQ topic's go to its BatchConsumeQueue instead (one
        │      46-byte unit: + storeTimestamp, msgBaseOffset, batchSize)
        └─► IndexFile     "topic#UNIQ_KEY", then "topic#k" for each KEYS token
               not for ROLLBACK; not for records below the last file's endPhyOffset

``tagsCode`` is Java ``String.hashCode`` of TAGS (0 without), except on
``SCHEDULE_TOPIC_XXXX`` where a ``DELAY`` level makes it the delivery time:
``storeTimestamp + delay(level)`` (Java ``computeDeliverTimestamp``).

Dispatch is idempotent: a consume-queue entry at or below what its queue already
holds is skipped (Java ``ConsumeQueue.putMessagePositionInfo``), and so are index
keys of records below the last index file's ``endPhyOffset`` (Java
``IndexService.buildIndex``) — so recovery can re-dispatch a tail safely.

Usage (what recovery does after cutting the log)::

    d = CommitLogDispatcher(root, config)
    d.truncate_dirty(end_of_log)
    for rec in reader.commitlog.walk(start):
        if not rec.is_blank:
            d.dispatch(rec)
    d.flush(); d.close()

Three ways in, one set of rules: :meth:`~CommitLogDispatcher.dispatch` (one record),
:meth:`~CommitLogDispatcher.dispatch_batch` (a list of requests: index keys hashed
together) and :meth:`~CommitLogDispatcher.dispatch_columns` (a
:class:`DispatchColumns` built from :mod:`rmqlab.scan.decode` batches: no
Python work per record; what recovery uses to re-dispatch a whole log).  They give
the same bytes (tests/recovery/test_bulk_dispatch.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ..releases import DEFAULT_RELEASE, release as release_named
from ..config import MessageStoreConfig
from ..format.record import Record
from .. import rules
from ..rules import BATCH_CONSUMEQUEUE_DIR, CONSUMEQUEUE_DIR, CONSUMEQUEUE_EXT_DIR, INDEX_DIR, parse_delay_levels
from .batch_consume_queue_writer import BatchConsumeQueueWriter
from .clock import SystemClock
from .consume_queue_ext_writer import ConsumeQueueExtWriter
from .consume_queue_writer import ConsumeQueueWriter, QueueFilesWriter
from ..scan.dispatch_request import (
    DispatchColumns,
    DispatchRequest,
    queue_groups,
    request_from_record,
)
from ..scan.hashes import index_key_hashes
from .index_writer import IndexServiceWriter



def ext_file_size(config: MessageStoreConfig, ext_dir: Path) -> int:
    """``mappedFileSizeConsumeQueueExt``: the config's, else the size of the first ext
    file under ``ext_dir``, else RocketMQ's default."""
    from ..format.consumequeue import DEFAULT_MAPPED_FILE_SIZE_CONSUME_QUEUE_EXT

    given = config.extra.get("mappedFileSizeConsumeQueueExt")
    if given is not None:
        return int(given)
    if ext_dir.is_dir():
        for p in sorted(ext_dir.glob("*/*/*")):
            if p.is_file() and p.name.isdigit() and p.stat().st_size:
                return p.stat().st_size
    return DEFAULT_MAPPED_FILE_SIZE_CONSUME_QUEUE_EXT


class CommitLogDispatcher:
    """Consume queues and index of one store root, fed record by record or in batches.

    Opening loads what is there: every consume queue's write position is recovered
    as Java ``ConsumeQueue.recover`` does (files past the first invalid entry are
    deleted), index files are opened as they are.  Nothing is deleted for being
    newer than the checkpoint — that is recovery's decision.

    ``batch_topics``: the topics whose queue type is BatchCQ (Java: the broker's topic
    table, which ``ConsumeQueueStore.findOrCreateConsumeQueue`` asks); None reads them
    from the root's ``config/topics.json``.  Queues already in ``batchconsumequeue/``
    are batch queues whatever it says (``ConsumeQueueStore.load`` loads both directories).

    ``multi_dispatch`` (Java ``enableMultiDispatch``) and ``enable_lmq``: a record put
    into a consume queue also gets a unit in each queue its INNER_MULTI_DISPATCH names
    (``ConsumeQueue.multiDispatchLmqQueue``, :func:`rmqlab.rules.multi_dispatch_targets`);
    None takes them from the config's ``enableMultiDispatch`` / ``enableLmq``.

    ``consume_queue_ext`` (Java ``enableConsumeQueueExt``; None: the config's): every
    consume queue keeps ext files in ``consumequeue_ext/T/Q/`` of
    ``mappedFileSizeConsumeQueueExt`` bytes (the config's, else the size of the files
    there, else RocketMQ's default).

    ``release``: whose dispatch rules (:mod:`rmqlab.releases`); 5.4+ also indexes each
    record's TAGS (``topic#T#tags``).  The engine writes as 5.3.3 does; recovery passes
    the release it follows.

    ``message_rocksdb``: a :class:`~rmqlab.writers.message_rocksdb_writer.MessageRocksDBWriter`
    when the broker keeps keys or transactions in ``rocksdbstore/`` (5.4+): each batch
    goes there too (``CommitLogDispatcherBuildIndex`` / ``CommitLogDispatcherBuildTransIndex``).
    ``write_index_files=False``: no index file is written (Java ``indexFileWriteEnable=false``,
    keys only in RocksDB).

    ``rocksdb_copy``: the same kind of writer for the RocksDB copy a broker keeps beside
    its file queues (``rocksdbCQDoubleWriteEnable``): every unit goes to both.

    ``rocksdb_queues``: a :class:`~rmqlab.writers.rocksdb_consume_queue_writer.RocksDBConsumeQueueWriter`
    when the store's queues are RocksDB's (``storeType=defaultRocksDB``): units go there
    (``RocksDBConsumeQueueStore.putMessagePositionInfoWrapper``), no file queue is opened,
    and the checkpoint's logics fields do not move (only file queues set them).

    The consume queues and index of a store rebuilt from its commitlog alone:

    >>> import shutil, tempfile
    >>> from pathlib import Path
    >>> from rmqlab import open_store
    >>> from rmqlab.engine import CommitLogDispatcher
    >>> from rmqlab.lab.samples import shipped_dir
    >>> root = Path(tempfile.mkdtemp())
    >>> _ = shutil.copytree(shipped_dir() / "clean" / "commitlog", root / "commitlog")
    >>> with open_store(shipped_dir() / "clean") as original:
    ...     config = original.config.replace(store_path_root_dir=str(root))
    ...     dispatcher = CommitLogDispatcher(root, config)
    ...     print(dispatcher.dispatch_records(original.commitlog.walk()))
    904
    >>> dispatcher.flush(); dispatcher.close()
    >>> with open_store(root, config) as rebuilt:
    ...     print(rebuilt.consume_queue("Orders", 1).valid_range(), rebuilt.index.query_offset("Orders", "order-1"))
    (0, 125) [0]
    """

    def __init__(self, root: str | os.PathLike, config: MessageStoreConfig | None = None, *, clock=None, on_index_file_full=None,
                 batch_topics=None, multi_dispatch: bool | None = None, enable_lmq: bool | None = None, consume_queue_ext: bool | None = None,
                 release: str = DEFAULT_RELEASE, index_before: int | None = None, rocksdb_queues=None, message_rocksdb=None, write_index_files: bool = True,
                 rocksdb_copy=None):
        self.root = Path(root)
        #: the RocksDB every unit goes to (the store's queues, or their copy), and whether
        #: file queues are written too (not when RocksDB holds the store's queues)
        self.rocksdb = rocksdb_queues if rocksdb_queues is not None else rocksdb_copy
        self.file_queues = rocksdb_queues is None
        self.message_rocksdb = message_rocksdb
        self.config = config or MessageStoreConfig()
        self.clock = clock or SystemClock()
        self.delay_levels = parse_delay_levels(self.config.message_delay_level)
        self.cq_dir = self.root / CONSUMEQUEUE_DIR
        self.bcq_dir = self.root / BATCH_CONSUMEQUEUE_DIR
        if batch_topics is None:
            from ..store.metadata import batch_topics as read_batch_topics

            batch_topics = read_batch_topics(self.root)[0]
        self.batch_topics = frozenset(batch_topics or ())
        cfg = self.config
        self.multi_dispatch = cfg.extra_flag("enableMultiDispatch", False) if multi_dispatch is None else multi_dispatch
        self.enable_lmq = cfg.extra_flag("enableLmq", False) if enable_lmq is None else enable_lmq
        self.consume_queue_ext = cfg.extra_flag("enableConsumeQueueExt", False) if consume_queue_ext is None else consume_queue_ext
        self.ext_dir = self.root / CONSUMEQUEUE_EXT_DIR
        self.ext_file_size = ext_file_size(self.config, self.ext_dir) if self.consume_queue_ext else 0
        self.queues: dict[tuple[str, int], QueueFilesWriter] = {}
        self.index = IndexServiceWriter(
            self.root / INDEX_DIR, self.config.max_hash_slot_num, self.config.max_index_num, self.clock, on_full=on_index_file_full
        )
        #: index files written: messageIndexEnable and (5.4+) indexFileWriteEnable
        self.index_on = self.config.message_index_enable and write_index_files
        self.logics_msg_timestamp = 0  # Java StoreCheckpoint.logicsMsgTimestamp (of the last entry)
        self.logics_physical_offset = 0  # Java StoreCheckpoint.logicsPhysicalOffset (5.5+: its record's offset)
        #: IndexService.buildIndex puts topic#T#tags too (5.4+)
        self.index_tags = release_named(release).index_tags
        #: the writer's UNIQ_KEY form (rocketmq-rust: topic#U#uniq)
        self.uniq_type = release_named(release).uniq_index_type
        #: records at or past this offset get no index entry (rocketmq-rust's recovery,
        #: where its index build stops: Release.index_rebuild_contiguous); None: none
        self.index_before = index_before
        self._tags_cache: dict[str, int] = {}
        if self.file_queues:
            self._load_queues()

    # -- consume queues ---------------------------------------------------------------------------
    def _writer(self, topic: str, queue_id: int, batch: bool, *, loaded: bool) -> QueueFilesWriter:
        """A queue's writer; ``loaded``: one the store's load opens (its directory is there),
        else one dispatch creates (Java loads no ext file for it)."""
        if batch:
            return BatchConsumeQueueWriter(self.bcq_dir / topic / str(queue_id), topic, queue_id, self.config.mapper_file_size_batch_consume_queue)
        ext = ConsumeQueueExtWriter(self.ext_dir / topic / str(queue_id), self.ext_file_size, load=loaded) if self.consume_queue_ext else None
        return ConsumeQueueWriter(self.cq_dir / topic / str(queue_id), topic, queue_id, self.config.mapped_file_size_consume_queue, ext=ext)

    def _load_queues(self) -> None:
        """Java ``ConsumeQueueStore.load``: consumequeue/, then batchconsumequeue/."""
        for base, batch in ((self.cq_dir, False), (self.bcq_dir, True)):
            if not base.is_dir():
                continue
            for tdir in sorted(base.iterdir()):
                if not tdir.is_dir():
                    continue
                for qdir in sorted(tdir.iterdir()):
                    if qdir.is_dir() and qdir.name.isdigit():
                        self.queues[(tdir.name, int(qdir.name))] = self._writer(tdir.name, int(qdir.name), batch, loaded=True)

    def consume_queue(self, topic: str, queue_id: int) -> QueueFilesWriter:
        """Java ``ConsumeQueueStore.findOrCreateConsumeQueue``: the queue's writer,
        created on first use as the topic's queue type says."""
        key = (topic, queue_id)
        q = self.queues.get(key)
        if q is None:
            q = self.queues[key] = self._writer(topic, queue_id, topic in self.batch_topics, loaded=False)
        return q

    @property
    def max_physic_offset(self) -> int:
        """Java ``ConsumeQueueStore.getMaxPhyOffsetInConsumeQueue``: the max of every
        queue's ``getMaxPhysicOffset`` (a consume queue's ``offset + size`` of its last
        entry, a batch queue's last unit's offset), -1 when none has entries; RocksDB's
        queues: dispatch's progress (``RocksDBConsumeQueueOffsetTable.getMaxPhyOffset``)."""
        if not self.file_queues:
            return self.rocksdb.max_phy_offset()
        return max((q.max_physic_offset for q in self.queues.values()), default=-1)

    # -- dispatch -------------------------------------------------------------------------------
    def dispatch(self, record: Record) -> None:
        """Java ``doDispatch`` for one decoded MESSAGE record."""
        if record.is_blank:
            return
        self.dispatch_request(request_from_record(record, self.delay_levels))

    def dispatch_request(self, req: DispatchRequest) -> None:
        if self.rocksdb is not None or self.message_rocksdb is not None:
            self.dispatch_batch([req])
            return
        if rules.goes_to_consume_queue(req.sys_flag):
            q = self.consume_queue(req.topic, req.queue_id)
            q.put_request(req)
            self.logics_msg_timestamp = req.store_timestamp
            self.logics_physical_offset = req.commitlog_offset
            if self.multi_dispatch and req.multi_dispatch is not None and isinstance(q, ConsumeQueueWriter):
                self._put_multi([(req, t, qid, off) for t, qid, off in rules.multi_dispatch_targets(
                    req.topic, req.queue_id, req.multi_dispatch, req.multi_queue_offset, enable_lmq=self.enable_lmq)])
        if self.index_on:
            self._build_index(req)

    def _build_index(self, req: DispatchRequest) -> None:
        """Java ``IndexService.buildIndex``."""
        if req.commitlog_offset < self.index.end_phy_offset:
            return
        if not rules.goes_to_index(req.sys_flag) or (self.index_before is not None and req.commitlog_offset >= self.index_before):
            return
        for key in rules.index_keys(req.topic, req.uniq_key, req.keys, req.tags if self.index_tags else None, self.uniq_type):
            self.index.put_key(key, req.commitlog_offset, req.store_timestamp)

    def dispatch_records(self, records: Iterable[Record]) -> int:
        """Dispatch many decoded records (BLANKs skipped) with the batch path."""
        reqs = [request_from_record(r, self.delay_levels) for r in records if not r.is_blank]
        self.dispatch_batch(reqs)
        return len(reqs)

    def dispatch_batch(self, reqs: Sequence[DispatchRequest]) -> None:
        """The same as :meth:`dispatch_request` for each, in order, but with the index
        keys hashed and written as one numpy batch (requests out of commitlog order make
        the index take the exact per-request path)."""
        if not reqs:
            return
        # one pass: consume-queue entries grouped by queue, index keys in order
        if self.message_rocksdb is not None:
            self.message_rocksdb.dispatch(reqs)
        groups: dict[tuple[str, int], list] = {}
        index_on = self.index_on
        end_phy = self.index.end_phy_offset if index_on else 0
        keys: list[str] = []
        offsets: list[int] = []
        times: list[int] = []
        prev_off = -1
        ordered = True
        last_logics = last_logics_offset = None
        goes_to_consume_queue, goes_to_index, index_keys = rules.goes_to_consume_queue, rules.goes_to_index, rules.index_keys
        index_tags, uniq_type = self.index_tags, self.uniq_type
        index_before = self.index_before if self.index_before is not None else 1 << 62
        for req in reqs:
            sf = req[9]
            if goes_to_consume_queue(sf):
                key = (req[0], req[1])
                g = groups.get(key)
                if g is None:
                    groups[key] = [req]
                else:
                    g.append(req)
                last_logics = req[5]
                last_logics_offset = req[2]
            if not index_on:
                continue
            off = req[2]
            if off < prev_off:
                ordered = False  # not in commitlog order: the index takes the exact path below
            prev_off = off
            if off < end_phy or not goes_to_index(sf) or off >= index_before:
                continue
            rk = index_keys(req[0], req[8], req[7], req.tags if index_tags else None, uniq_type)
            if rk:
                keys += rk
                offsets += [off] * len(rk)
                times += [req[5]] * len(rk)
                end_phy = off  # once a key of this record is indexed, endPhyOffset is its offset
        multi = []
        if self.rocksdb is not None:
            cq = sorted((r for g in groups.values() for r in g), key=lambda r: r.commitlog_offset)
            if cq:
                cols = DispatchColumns.from_requests(cq)
                self._put_rocksdb(cols, np.arange(len(cols)))
            if not self.file_queues:
                groups = {}
                last_logics = None
        for (topic, qid), g in groups.items():
            q = self.queues.get((topic, qid))
            if q is None:
                q = self.consume_queue(topic, qid)
            q.put_requests(g)
            if self.multi_dispatch and isinstance(q, ConsumeQueueWriter):
                multi += [(r, t, i, off) for r in g if r.multi_dispatch is not None
                          for t, i, off in rules.multi_dispatch_targets(r.topic, r.queue_id, r.multi_dispatch, r.multi_queue_offset, enable_lmq=self.enable_lmq)]
        if multi:
            multi.sort(key=lambda m: m[0].commitlog_offset)
            self._put_multi(multi)
        if last_logics is not None:
            self.logics_msg_timestamp, self.logics_physical_offset = last_logics, last_logics_offset
        if not index_on:
            return
        if ordered:
            self._flush_keys(keys, offsets, times)
        else:
            for req in reqs:
                self._build_index(req)

    def dispatch_columns(self, cols: DispatchColumns) -> None:
        """:meth:`dispatch_batch` for a columnar batch, with the same rules, vectorised:
        consume-queue entries only for NOT and COMMIT (queue by queue, each with its
        writer's ``put_rows``, Java's repeat guards included); index
        keys ``topic#UNIQ_KEY`` then ``topic#k`` per non-empty KEYS token, not for
        ROLLBACK, not below the last index file's ``endPhyOffset``.  Rows out of
        commitlog order take :meth:`dispatch_batch` as requests."""
        n = len(cols)
        if n == 0:
            return
        off = cols.commitlog_offset
        index_on = self.index_on
        if index_on and n > 1 and not (off[1:] >= off[:-1]).all():
            self.dispatch_batch(cols.requests())
            return
        if self.message_rocksdb is not None:
            self.message_rocksdb.dispatch(cols.requests())
        cq_rows = np.flatnonzero(rules.goes_to_consume_queue(cols.sys_flag))
        if self.rocksdb is not None:
            self._put_rocksdb(cols, cq_rows)
        if self.file_queues and len(cq_rows):
            simple = np.zeros(n, bool)  # rows put into a consume queue (multi-dispatch follows those)
            for rows in queue_groups(cols.topic_code[cq_rows], cols.queue_id[cq_rows]):
                rows = cq_rows[rows]
                r0 = rows[0]
                q = self.consume_queue(cols.topic_of(r0), int(cols.queue_id[r0]))
                q.put_rows(cols, rows)
                simple[rows] = isinstance(q, ConsumeQueueWriter)
            self.logics_msg_timestamp = int(cols.store_timestamp[cq_rows[-1]])
            self.logics_physical_offset = int(cols.commitlog_offset[cq_rows[-1]])
            if self.multi_dispatch:
                self._put_multi_rows(cols, [m for m in cols.multi_dispatches(enable_lmq=self.enable_lmq) if simple[m[0]]])
        if not index_on:
            return
        # index: records at or past endPhyOffset, not rolled back (in commitlog order
        # endPhyOffset only moves to the record being indexed, so one cut is exact)
        eligible = (off >= self.index.end_phy_offset) & rules.goes_to_index(cols.sys_flag)
        if self.index_before is not None:
            eligible &= off < self.index_before
        rows = np.flatnonzero(eligible)
        if not len(rows):
            return
        rec, hashes = cols.index_key_hashes(rows, tags=self.index_tags, uniq_type=self.uniq_type)
        if len(rec):
            self.index.put_many(hashes, off[rec], cols.store_timestamp[rec])

    def _put_rocksdb(self, cols: DispatchColumns, rows: np.ndarray) -> None:
        """The consume-queue units of ``rows`` into RocksDB, as one batch."""
        if len(rows):
            self.rocksdb.put(cols.topics, cols.topic_code[rows], cols.queue_id[rows], cols.consume_queue_offset[rows], cols.commitlog_offset[rows],
                             cols.msg_size[rows], cols.tags_code[rows], cols.store_timestamp[rows])

    def _put_multi(self, targets) -> None:
        """The multi-dispatch units ``(request, topic, queueId, queue offset)``, in
        commitlog order: Java ``doDispatchLmqQueue`` → ``ConsumeQueue.putMessagePositionInfo``
        with the parent's offset, size and tagsCode (its repeat guards apply)."""
        for req, topic, qid, off in targets:
            q = self.consume_queue(topic, qid)
            if isinstance(q, ConsumeQueueWriter):  # Java casts to ConsumeQueue: a batch topic named here throws
                q.put(req.commitlog_offset, req.msg_size, req.tags_code, off)

    def _put_multi_rows(self, cols: DispatchColumns, targets) -> None:
        """The same for ``(row, topic, queueId, queue offset)`` of a columnar batch, queue by queue."""
        by_queue: dict[tuple[str, int], list[tuple[int, int]]] = {}
        for row, topic, qid, off in targets:
            by_queue.setdefault((topic, qid), []).append((row, off))
        for (topic, qid), got in by_queue.items():
            rows = np.asarray([r for r, _ in got], np.int64)
            q = self.consume_queue(topic, qid)
            if not isinstance(q, ConsumeQueueWriter):
                continue
            # (a queue fed both directly and by multi-dispatch gets its units in two runs
            # here, interleaved in Java: only LMQ names, the case brokers use, are apart)
            q.put_columns(cols.commitlog_offset[rows], cols.msg_size[rows], cols.tags_code[rows], np.asarray([o for _, o in got], np.int64))

    def _flush_keys(self, keys: list[str], offsets: list[int], times: list[int]) -> None:
        if keys:
            self.index.put_many(index_key_hashes(keys), np.asarray(offsets, dtype=np.int64), np.asarray(times, dtype=np.int64))

    # -- maintenance ------------------------------------------------------------------------------
    def truncate_dirty(self, phy_offset: int, *, zero_tail: bool = True) -> int:
        """Java ``truncateDirtyLogicFiles``: cut consume-queue entries pointing at or past
        ``phy_offset`` in every queue; returns how many entries were cut."""
        return sum(q.truncate_dirty(phy_offset, zero_tail=zero_tail) for q in self.queues.values())

    def correct_min_offsets(self) -> None:
        """Java ``ConsumeQueueStore.recoverOffsetTable`` → ``ConsumeQueue.correctMinOffset``
        as 5.5.1 runs it after recovery (``Release.empty_queue_resets_max``): a consume
        queue with no file left reports maxPhysicOffset -1 (and minLogicOffset 0)."""
        from .consume_queue_writer import ConsumeQueueWriter

        for q in self.queues.values():
            if isinstance(q, ConsumeQueueWriter) and not q.files:
                q.max_physic_offset = -1
                q.min_logic_offset = 0

    def flush_queues(self) -> None:
        """Force the consume queues written since the last flush (Java
        ``FlushConsumeQueueService``)."""
        for q in list(self.queues.values()):
            if q.dirty:
                q.flush()

    def flush(self) -> None:
        """Force consume queues and index files to disk."""
        self.flush_queues()
        self.index.flush()

    def close(self) -> None:
        for q in self.queues.values():
            q.close()
        self.queues = {}
        self.index.close()

    def __enter__(self) -> "CommitLogDispatcher":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["CommitLogDispatcher"]
