"""Dispatch (reput): from a CommitLog record to consume-queue and index entries.

Java: ``DefaultMessageStore.doDispatch`` with its two dispatchers
``CommitLogDispatcherBuildConsumeQueue`` and ``CommitLogDispatcherBuildIndex``, fed
by ``ReputMessageService`` with ``DispatchRequest``s that
``CommitLog.checkMessageAndReturnSize`` builds from the record bytes.

What a record becomes::

    record ──► DispatchRequest(topic, queueId, offset, size, tagsCode, storeTimestamp,
                               queueOffset, keys, uniqKey, sysFlag)
        ├─► ConsumeQueue  topic/queueId  entry #queueOffset = (offset, size, tagsCode)
        │      only NOT and COMMIT transactions; PREPARED and ROLLBACK get none
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

from ..config import MessageStoreConfig
from ..format.record import Record
from .. import rules
from ..rules import CONSUMEQUEUE_DIR, INDEX_DIR, parse_delay_levels
from .clock import SystemClock
from .consume_queue_writer import ConsumeQueueWriter
from ..scan.dispatch_request import (
    DispatchColumns,
    DispatchRequest,
    queue_groups,
    request_from_record,
)
from ..scan.hashes import index_key_hashes
from .index_writer import IndexServiceWriter



class CommitLogDispatcher:
    """Consume queues and index of one store root, fed record by record or in batches.

    Opening loads what is there: every consume queue's write position is recovered
    as Java ``ConsumeQueue.recover`` does (files past the first invalid entry are
    deleted), index files are opened as they are.  Nothing is deleted for being
    newer than the checkpoint — that is recovery's decision.
    """

    def __init__(self, root: str | os.PathLike, config: MessageStoreConfig | None = None, *, clock=None, on_index_file_full=None):
        self.root = Path(root)
        self.config = config or MessageStoreConfig()
        self.clock = clock or SystemClock()
        self.delay_levels = parse_delay_levels(self.config.message_delay_level)
        self.cq_dir = self.root / CONSUMEQUEUE_DIR
        self.queues: dict[tuple[str, int], ConsumeQueueWriter] = {}
        self.index = IndexServiceWriter(
            self.root / INDEX_DIR, self.config.max_hash_slot_num, self.config.max_index_num, self.clock, on_full=on_index_file_full
        )
        self.logics_msg_timestamp = 0  # Java StoreCheckpoint.logicsMsgTimestamp (of the last entry)
        self._tags_cache: dict[str, int] = {}
        self._load_queues()

    # -- consume queues ---------------------------------------------------------------------------
    def _load_queues(self) -> None:
        if not self.cq_dir.is_dir():
            return
        for tdir in sorted(self.cq_dir.iterdir()):
            if not tdir.is_dir():
                continue
            for qdir in sorted(tdir.iterdir()):
                if qdir.is_dir() and qdir.name.isdigit():
                    self.queues[(tdir.name, int(qdir.name))] = ConsumeQueueWriter(qdir, tdir.name, int(qdir.name), self.config.mapped_file_size_consume_queue)

    def consume_queue(self, topic: str, queue_id: int) -> ConsumeQueueWriter:
        """Java ``findConsumeQueue``: the queue's writer, created on first use."""
        key = (topic, queue_id)
        q = self.queues.get(key)
        if q is None:
            q = ConsumeQueueWriter(self.cq_dir / topic / str(queue_id), topic, queue_id, self.config.mapped_file_size_consume_queue)
            self.queues[key] = q
        return q

    @property
    def max_physic_offset(self) -> int:
        """Max ``offset + size`` over all consume queues (Java
        ``ConsumeQueueStore.getMaxPhyOffsetInConsumeQueue``), -1 when none has entries."""
        return max((q.max_physic_offset for q in self.queues.values()), default=-1)

    # -- dispatch -------------------------------------------------------------------------------
    def dispatch(self, record: Record) -> None:
        """Java ``doDispatch`` for one decoded MESSAGE record."""
        if record.is_blank:
            return
        self.dispatch_request(request_from_record(record, self.delay_levels))

    def dispatch_request(self, req: DispatchRequest) -> None:
        if rules.goes_to_consume_queue(req.sys_flag):
            self.consume_queue(req.topic, req.queue_id).put(req.commitlog_offset, req.msg_size, req.tags_code, req.consume_queue_offset)
            self.logics_msg_timestamp = req.store_timestamp
        if self.config.message_index_enable:
            self._build_index(req)

    def _build_index(self, req: DispatchRequest) -> None:
        """Java ``IndexService.buildIndex``."""
        if req.commitlog_offset < self.index.end_phy_offset:
            return
        if not rules.goes_to_index(req.sys_flag):
            return
        for key in rules.index_keys(req.topic, req.uniq_key, req.keys):
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
        groups: dict[tuple[str, int], list] = {}
        index_on = self.config.message_index_enable
        end_phy = self.index.end_phy_offset if index_on else 0
        keys: list[str] = []
        offsets: list[int] = []
        times: list[int] = []
        prev_off = -1
        ordered = True
        last_logics = None
        goes_to_consume_queue, goes_to_index, index_keys = rules.goes_to_consume_queue, rules.goes_to_index, rules.index_keys
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
            if not index_on:
                continue
            off = req[2]
            if off < prev_off:
                ordered = False  # not in commitlog order: the index takes the exact path below
            prev_off = off
            if off < end_phy or not goes_to_index(sf):
                continue
            rk = index_keys(req[0], req[8], req[7])
            if rk:
                keys += rk
                offsets += [off] * len(rk)
                times += [req[5]] * len(rk)
                end_phy = off  # once a key of this record is indexed, endPhyOffset is its offset
        for (topic, qid), g in groups.items():
            q = self.queues.get((topic, qid))
            if q is None:
                q = self.consume_queue(topic, qid)
            q.put_many(g)
        if last_logics is not None:
            self.logics_msg_timestamp = last_logics
        if not index_on:
            return
        if ordered:
            self._flush_keys(keys, offsets, times)
        else:
            for req in reqs:
                self._build_index(req)

    def dispatch_columns(self, cols: DispatchColumns) -> None:
        """:meth:`dispatch_batch` for a columnar batch, with the same rules, vectorised:
        consume-queue entries only for NOT and COMMIT (queue by queue, each with
        :meth:`ConsumeQueueWriter.put_columns`, Java's repeat guards included); index
        keys ``topic#UNIQ_KEY`` then ``topic#k`` per non-empty KEYS token, not for
        ROLLBACK, not below the last index file's ``endPhyOffset``.  Rows out of
        commitlog order take :meth:`dispatch_batch` as requests."""
        n = len(cols)
        if n == 0:
            return
        off = cols.commitlog_offset
        index_on = self.config.message_index_enable
        if index_on and n > 1 and not (off[1:] >= off[:-1]).all():
            self.dispatch_batch(cols.requests())
            return
        cq_rows = np.flatnonzero(rules.goes_to_consume_queue(cols.sys_flag))
        if len(cq_rows):
            for rows in queue_groups(cols.topic_code[cq_rows], cols.queue_id[cq_rows]):
                rows = cq_rows[rows]
                r0 = rows[0]
                q = self.consume_queue(cols.topic_of(r0), int(cols.queue_id[r0]))
                q.put_columns(off[rows], cols.msg_size[rows], cols.tags_code[rows], cols.consume_queue_offset[rows])
            self.logics_msg_timestamp = int(cols.store_timestamp[cq_rows[-1]])
        if not index_on:
            return
        # index: records at or past endPhyOffset, not rolled back (in commitlog order
        # endPhyOffset only moves to the record being indexed, so one cut is exact)
        eligible = (off >= self.index.end_phy_offset) & rules.goes_to_index(cols.sys_flag)
        rows = np.flatnonzero(eligible)
        if not len(rows):
            return
        rec, hashes = cols.index_key_hashes(rows)
        if len(rec):
            self.index.put_many(hashes, off[rec], cols.store_timestamp[rec])

    def _flush_keys(self, keys: list[str], offsets: list[int], times: list[int]) -> None:
        if keys:
            self.index.put_many(index_key_hashes(keys), np.asarray(offsets, dtype=np.int64), np.asarray(times, dtype=np.int64))

    # -- maintenance ------------------------------------------------------------------------------
    def truncate_dirty(self, phy_offset: int, *, zero_tail: bool = True) -> int:
        """Java ``truncateDirtyLogicFiles``: cut consume-queue entries pointing at or past
        ``phy_offset`` in every queue; returns how many entries were cut."""
        return sum(q.truncate_dirty(phy_offset, zero_tail=zero_tail) for q in self.queues.values())

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
