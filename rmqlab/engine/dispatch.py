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
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable, NamedTuple, Sequence

import numpy as np

from ..config import MessageStoreConfig
from ..format import commitlog as cl
from ..format import properties as props
from ..format.hashing import java_string_hash
from ..format.record import Record
from .clock import SystemClock
from .consume_queue_writer import ConsumeQueueWriter
from .index_writer import IndexFileWriter, IndexServiceWriter, index_key_hashes

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"  # Java TopicValidator.RMQ_SYS_SCHEDULE_TOPIC
CONSUMEQUEUE_DIR = "consumequeue"
INDEX_DIR = "index"

_NOT, _PREPARED, _COMMIT, _ROLLBACK = 0x0, 0x4, 0x8, 0xC
_TIME_UNITS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_delay_levels(spec: str) -> dict[int, int]:
    """Java ``ScheduleMessageService.parseDelayLevel``: ``"1s 5s 10s …"`` → {level: ms}."""
    table = {}
    for i, word in enumerate(spec.split(), start=1):
        m = re.fullmatch(r"(\d+)([smhd])", word.strip())
        if not m:
            raise ValueError(f"messageDelayLevel: cannot parse {word!r}")
        table[i] = int(m.group(1)) * _TIME_UNITS[m.group(2)]
    return table


class DispatchRequest(NamedTuple):
    """Java ``DispatchRequest``: what dispatch needs to know about one record."""

    topic: str
    queue_id: int
    commitlog_offset: int
    msg_size: int
    tags_code: int
    store_timestamp: int
    consume_queue_offset: int
    keys: str | None
    uniq_key: str | None
    sys_flag: int
    prepared_transaction_offset: int = 0


def tags_code_for(topic: str, java_props: dict[str, str], store_timestamp: int, delay_levels: dict[int, int]) -> int:
    """tagsCode as Java ``CommitLog.checkMessageAndReturnSize`` computes it."""
    code = 0
    tags = java_props.get(props.TAGS)
    if tags:
        code = java_string_hash(tags)
    if topic == SCHEDULE_TOPIC:
        t = java_props.get(props.DELAY)
        if t is not None:
            try:
                level = int(t)
            except ValueError:
                level = 0  # Java: NumberFormatException makes the record undispatchable
            max_level = max(delay_levels) if delay_levels else 0
            level = min(level, max_level)
            if level > 0:
                delay = delay_levels.get(level)
                code = store_timestamp + (delay if delay is not None else 1000)
    return code


def request_from_record(record: Record, delay_levels: dict[int, int]) -> DispatchRequest:
    """Java ``checkMessageAndReturnSize`` → ``DispatchRequest`` for a decoded record."""
    jp = record.java_properties
    topic = record.topic
    return DispatchRequest(
        topic,
        record.queue_id,
        record.physical_offset,
        record.total_size,
        tags_code_for(topic, jp, record.store_timestamp, delay_levels),
        record.store_timestamp,
        record.queue_offset,
        jp.get(props.KEYS),
        jp.get(props.UNIQ_KEY),
        record.sys_flag,
        record.prepared_transaction_offset,
    )


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
        tran = req.sys_flag & cl.TRANSACTION_MASK
        if tran == _NOT or tran == _COMMIT:
            self.consume_queue(req.topic, req.queue_id).put(req.commitlog_offset, req.msg_size, req.tags_code, req.consume_queue_offset)
            self.logics_msg_timestamp = req.store_timestamp
        if self.config.message_index_enable:
            self._build_index(req)

    def _build_index(self, req: DispatchRequest) -> None:
        """Java ``IndexService.buildIndex``."""
        if req.commitlog_offset < self.index.end_phy_offset:
            return
        if (req.sys_flag & cl.TRANSACTION_MASK) == _ROLLBACK:
            return
        topic = req.topic
        if req.uniq_key:
            self.index.put_key(f"{topic}#{req.uniq_key}", req.commitlog_offset, req.store_timestamp)
        if req.keys:
            for k in req.keys.split(props.KEY_SEPARATOR):
                if k:
                    self.index.put_key(f"{topic}#{k}", req.commitlog_offset, req.store_timestamp)

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
        for req in reqs:
            sf = req[9]
            if not sf & 0x4:  # NOT (0x0) or COMMIT (0x8); PREPARED/ROLLBACK have bit 0x4
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
            if off < end_phy or (sf & 0xC) == _ROLLBACK:
                continue
            uniq = req[8]
            ks = req[7]
            if uniq:
                keys.append(f"{req[0]}#{uniq}")
                offsets.append(off)
                times.append(req[5])
            if ks:
                if " " in ks:
                    for k in ks.split(" "):
                        if k:
                            keys.append(f"{req[0]}#{k}")
                            offsets.append(off)
                            times.append(req[5])
                else:
                    keys.append(f"{req[0]}#{ks}")
                    offsets.append(off)
                    times.append(req[5])
            # once anything of this record is indexed, endPhyOffset is this record's offset
            if uniq or ks:
                end_phy = off
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


__all__ = ["CommitLogDispatcher", "DispatchRequest", "ConsumeQueueWriter", "IndexServiceWriter", "IndexFileWriter", "request_from_record", "parse_delay_levels"]
