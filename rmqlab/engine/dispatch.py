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
:class:`DispatchColumns` built from :mod:`rmqlab.format.fastdecode` batches: no
Python work per record; what recovery uses to re-dispatch a whole log).  They give
the same bytes (tests/recovery/test_bulk_dispatch.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, NamedTuple, Sequence

import numpy as np

if TYPE_CHECKING:  # imported lazily at run time (see _arrow)
    import pyarrow as pa

from ..config import MessageStoreConfig
from ..format import commitlog as cl
from ..format import properties as props
from ..format.hashing import java_string_hash
from ..format.layout import PREFIX_DTYPES
from ..format.record import Record, decode_record
from .. import rules
from ..rules import SCHEDULE_TOPIC, parse_delay_levels
from .clock import SystemClock
from .consume_queue_writer import ConsumeQueueWriter
from .index_writer import IndexFileWriter, IndexServiceWriter, index_hashes_from_java, index_key_hashes, java_string_hashes_arrow, prefixed_hashes

CONSUMEQUEUE_DIR = "consumequeue"
INDEX_DIR = "index"

_ROLLBACK = rules.TRANSACTION_ROLLBACK_TYPE


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


#: the rule lives in rmqlab.rules; dispatch's name for it
tags_code_for = rules.tags_code


#: the record's physicalOffset field, from the schema's layout
_PHYSICAL_OFFSET_AT = PREFIX_DTYPES[0].fields["physical_offset"][1]


def request_from_record(record: Record, delay_levels: dict[int, int]) -> DispatchRequest:
    """Java ``checkMessageAndReturnSize`` → ``DispatchRequest`` for a decoded record."""
    jp = record.java_properties
    topic = record.topic
    return DispatchRequest(
        topic,
        record.queue_id,
        record.stored_physical_offset,  # Java reads the field (equal to the position unless damaged)
        record.total_size,
        tags_code_for(topic, jp, record.store_timestamp, delay_levels),
        record.store_timestamp,
        record.queue_offset,
        jp.get(props.KEYS),
        jp.get(props.UNIQ_KEY),
        record.sys_flag,
        record.prepared_transaction_offset,
    )


# -- many requests as columns ---------------------------------------------------------------------
def _arrow():
    """pyarrow, imported on first use: the per-record paths (and the engine's puts)
    do not need it, and loading it (with the pandas it pulls in) takes a second."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pa, pc


@dataclass
class DispatchColumns:
    """Many :class:`DispatchRequest` s as columns, one row per record, in commitlog order
    (Java: the ``DispatchRequest`` s ``ReputMessageService`` hands to ``doDispatch`` one
    after the other).

    Integer fields are int64 numpy arrays; the topic is a code into ``topics``;
    ``keys`` and ``uniq_key`` are Arrow string arrays (null when the record has none).
    Build with :meth:`from_arrow` (bulk-decoded records, :mod:`rmqlab.format.fastdecode`)
    or :meth:`from_requests`; feed to :meth:`CommitLogDispatcher.dispatch_columns`.
    """

    topics: list[str]
    topic_code: np.ndarray
    queue_id: np.ndarray
    commitlog_offset: np.ndarray
    msg_size: np.ndarray
    tags_code: np.ndarray
    store_timestamp: np.ndarray
    consume_queue_offset: np.ndarray
    sys_flag: np.ndarray
    keys: "pa.Array | pa.ChunkedArray"
    uniq_key: "pa.Array | pa.ChunkedArray"
    prepared_transaction_offset: np.ndarray

    #: the fastdecode columns :meth:`from_arrow` needs
    ARROW_COLUMNS = ("physical_offset", "total_size", "topic", "queue_id", "queue_offset", "sys_flag", "store_timestamp", "prepared_transaction_offset")
    #: and the properties it reads, as Java's map holds them
    JAVA_PROPERTIES = (props.TAGS, props.KEYS, props.UNIQ_KEY, props.DELAY)

    def __len__(self) -> int:
        return len(self.commitlog_offset)

    def take(self, rows: np.ndarray) -> "DispatchColumns":
        """These rows, in this order."""
        pa, _ = _arrow()
        idx = pa.array(rows)
        return DispatchColumns(
            self.topics, self.topic_code[rows], self.queue_id[rows], self.commitlog_offset[rows], self.msg_size[rows], self.tags_code[rows],
            self.store_timestamp[rows], self.consume_queue_offset[rows], self.sys_flag[rows], self.keys.take(idx), self.uniq_key.take(idx),
            self.prepared_transaction_offset[rows],
        )

    def topic_of(self, i: int) -> str:
        return self.topics[int(self.topic_code[i])]

    def requests(self) -> list[DispatchRequest]:
        """The same rows as :class:`DispatchRequest` tuples."""
        keys = self.keys.to_pylist()
        uniq = self.uniq_key.to_pylist()
        t = self.topics
        return [
            DispatchRequest(t[c], q, o, s, g, ts, qo, k, u, sf, pto)
            for c, q, o, s, g, ts, qo, k, u, sf, pto in zip(
                self.topic_code.tolist(),
                self.queue_id.tolist(),
                self.commitlog_offset.tolist(),
                self.msg_size.tolist(),
                self.tags_code.tolist(),
                self.store_timestamp.tolist(),
                self.consume_queue_offset.tolist(),
                keys,
                uniq,
                self.sys_flag.tolist(),
                self.prepared_transaction_offset.tolist(),
            )
        ]

    @classmethod
    def from_requests(cls, reqs: Sequence[DispatchRequest]) -> "DispatchColumns":
        pa, pc = _arrow()
        if not reqs:
            fields = [()] * len(DispatchRequest._fields)
        else:
            fields = list(zip(*reqs))  # one column per field, transposed in C
        enc = pa.array(fields[0], pa.string()).dictionary_encode()  # codes in order of first appearance

        def col(i):
            return np.array(fields[i], dtype=np.int64)

        return cls(
            enc.dictionary.to_pylist(),
            np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64),
            col(1),
            col(2),
            col(3),
            col(4),
            col(5),
            col(6),
            col(9),
            pa.array(fields[7], pa.string()),
            pa.array(fields[8], pa.string()),
            col(10),
        )

    @classmethod
    def concat(cls, parts: Sequence["DispatchColumns"]) -> "DispatchColumns":
        pa, pc = _arrow()
        parts = [p for p in parts if len(p)]
        if not parts:
            return cls.from_requests([])
        if len(parts) == 1:
            return parts[0]
        topics: dict[str, int] = {}
        codes = []
        for p in parts:
            remap = np.asarray([topics.setdefault(t, len(topics)) for t in p.topics] or [0], dtype=np.int64)
            codes.append(remap[p.topic_code])

        def cat(name):
            return np.concatenate([getattr(p, name) for p in parts])

        def chunks(name):
            out = []
            for p in parts:
                a = getattr(p, name)
                out.extend(a.chunks if isinstance(a, pa.ChunkedArray) else [a])
            return pa.chunked_array(out, pa.string())

        return cls(
            list(topics),
            np.concatenate(codes),
            cat("queue_id"),
            cat("commitlog_offset"),
            cat("msg_size"),
            cat("tags_code"),
            cat("store_timestamp"),
            cat("consume_queue_offset"),
            cat("sys_flag"),
            chunks("keys"),
            chunks("uniq_key"),
            cat("prepared_transaction_offset"),
        )

    @classmethod
    def from_arrow(cls, batch, delay_levels: dict[int, int]) -> "DispatchColumns":
        """Java ``checkMessageAndReturnSize`` for every MESSAGE row of a fastdecode
        batch or table: :data:`ARROW_COLUMNS`, and the :data:`JAVA_PROPERTIES` as
        fastdecode's ``java_property:`` columns - the values Java's properties map
        holds (``decode_positions(java_properties=...)``), so that an empty or
        repeated TAGS, KEYS, UNIQ_KEY or DELAY reads as it does in RocketMQ."""
        from ..format.fastdecode import JAVA_PROPERTY_PREFIX

        pa, pc = _arrow()
        n = batch.num_rows
        col = batch.column

        def ints(name):
            a = col(name)
            return np.asarray(a.to_numpy(zero_copy_only=False), dtype=np.int64) if n else np.zeros(0, np.int64)

        def single(a):
            if isinstance(a, pa.ChunkedArray):
                return a.combine_chunks() if a.num_chunks != 1 else a.chunk(0)
            return a

        topic = single(col("topic"))
        enc = pc.dictionary_encode(topic) if n else pa.DictionaryArray.from_arrays(pa.array([], pa.int32()), pa.array([], pa.string()))
        topics = enc.dictionary.to_pylist()
        topic_code = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        tags, keys, uniq, delay = (single(col(JAVA_PROPERTY_PREFIX + name)) for name in cls.JAVA_PROPERTIES)
        store_ts = ints("store_timestamp")
        # tagsCode: String.hashCode of TAGS, 0 without
        th, _ = java_string_hashes_arrow(tags)
        tags_code = th.view(np.int32).astype(np.int64)
        # SCHEDULE_TOPIC_XXXX with DELAY: the delivery time (the rule of tags_code_for)
        if SCHEDULE_TOPIC in topics and delay.null_count < n:
            sched = (topic_code == topics.index(SCHEDULE_TOPIC)) & np.asarray(delay.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            rows = np.flatnonzero(sched)
            if len(rows):
                idx = pa.array(rows)
                for r, t, d in zip(rows.tolist(), tags.take(idx).to_pylist(), delay.take(idx).to_pylist()):
                    jp = {props.DELAY: d}
                    if t:
                        jp[props.TAGS] = t
                    tags_code[r] = tags_code_for(SCHEDULE_TOPIC, jp, int(store_ts[r]), delay_levels)
        return cls(
            topics,
            topic_code,
            ints("queue_id"),
            ints("physical_offset"),
            ints("total_size"),
            tags_code,
            store_ts,
            ints("queue_offset"),
            ints("sys_flag"),
            keys,
            uniq,
            ints("prepared_transaction_offset"),
        )


# -- reading records back (Java ReputMessageService: checkMessageAndReturnSize) ---------------------
_BATCH_ROWS, _BATCH_BYTES = 1 << 16, 64 << 20  # rows and bytes per decoded batch (int32 Arrow offsets)


def read_dispatch_request(buf, pos: int, *, file_base: int, file: str, delay_levels: dict[int, int]) -> DispatchRequest:
    """Java ``checkMessageAndReturnSize`` for the record at in-file position ``pos``."""
    rec = decode_record(buf, pos, file=file, file_base=file_base, check_crc=False, read_body=False)
    return request_from_record(rec, delay_levels)


def read_dispatch_columns(buf, positions: np.ndarray, *, file_base: int, file: str, delay_levels: dict[int, int]) -> DispatchColumns:
    """Java ``checkMessageAndReturnSize`` for the MESSAGE records at in-file
    ``positions`` (sorted) of one commitlog file, as :class:`DispatchColumns` — what a
    reput (and recovery's re-dispatch) reads back from the log.

    ``buf`` holds the file from position 0 (a mapping, bytes or uint8 array).  The
    records are decoded in bulk with :func:`rmqlab.format.fastdecode.decode_positions`
    (one row per position, no walk of the chain); should one of them be damaged, all
    are read one by one with :func:`~rmqlab.format.record.decode_record`, which names
    the damage.  The properties are read as Java's map holds them (see
    :meth:`DispatchColumns.from_arrow`).  CRCs are not checked (Java's reput does not
    check them).
    """
    pa, pc = _arrow()
    rel = np.asarray(positions, dtype=np.int64)
    a = buf if isinstance(buf, np.ndarray) else np.frombuffer(buf, np.uint8)

    def one(pos: int) -> DispatchRequest:
        return read_dispatch_request(a, pos, file_base=file_base, file=file, delay_levels=delay_levels)

    batches = _decode_at(a, rel, file_base, file) if len(rel) else None
    if batches:
        cols = DispatchColumns.from_arrow(pa.Table.from_batches(batches), delay_levels)
        # Java's DispatchRequest.commitLogOffset is the record's own physicalOffset field
        # (where it sits, unless that field is damaged): read it, as request_from_record does
        cols.commitlog_offset = np.lib.stride_tricks.sliding_window_view(a, 8)[rel + _PHYSICAL_OFFSET_AT].copy().view(">i8").reshape(-1).astype(np.int64)
        return cols
    return DispatchColumns.from_requests([one(p) for p in rel.tolist()])


def load_reader() -> None:
    """Load what :func:`read_dispatch_columns` runs - pyarrow, the bulk decoder, numba
    and the machine code of its compiled loops (~1 s the first time in a process) - by
    reading one record back.  The engine calls it when a store opens, so that no
    producer's put pays it at the first reput."""
    from ..format.encode import encode_record

    rec = encode_record(topic=b"T", body=b"x", properties=props.encode({props.TAGS: "t", props.KEYS: "k"}), physical_offset=0)
    buf = bytearray(rec)  # writable, as the engine's mappings are (numba compiles per flavour)
    cols = read_dispatch_columns(buf, np.zeros(1, np.int64), file_base=0, file="<load_reader>", delay_levels={})
    if cols.requests() != [request_from_record(decode_record(bytes(rec), 0, read_body=False), {})]:  # pragma: no cover - a broken install
        raise RuntimeError("the bulk decoder reads a record differently from the per-record reader")


def _decode_at(a: np.ndarray, rel: np.ndarray, file_base: int, file: str):
    """fastdecode batches of the records at in-file positions ``rel``; None on damage
    (the caller then reads record by record, which names it)."""
    from ..errors import StoreFormatError
    from ..format.fastdecode import decode_positions

    try:
        return list(
            decode_positions(
                a, rel, file_base=file_base, file=file, verify_crc=False, include_body=False, columns=DispatchColumns.ARROW_COLUMNS,
                java_properties=DispatchColumns.JAVA_PROPERTIES, batch_rows=_BATCH_ROWS, batch_bytes=_BATCH_BYTES,
            )
        )
    except (StoreFormatError, ValueError):
        return None


def queue_groups(topic_code: np.ndarray, queue_id: np.ndarray) -> list[np.ndarray]:
    """Row numbers of each (topic, queue), in row order, the queues in order of first
    appearance (the order per-request dispatch meets them)."""
    n = len(topic_code)
    if n == 0:
        return []
    qmin = int(queue_id.min())
    span = int(queue_id.max()) - qmin + 1
    dense = topic_code * span + (queue_id - qmin)
    top = int(dense.max())
    groups = None
    if top < (1 << 22):
        present = np.flatnonzero(np.bincount(dense, minlength=top + 1))
        if len(present) <= 64:  # few queues: one pass each
            groups = [np.flatnonzero(dense == g) for g in present.tolist()]
    if groups is None:
        order = np.argsort(dense, kind="stable")
        sk = dense[order]
        bounds = np.flatnonzero(np.concatenate(([True], sk[1:] != sk[:-1], [True])))
        groups = [order[a:b] for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())]
    groups.sort(key=lambda g: int(g[0]))
    return groups


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

    def dispatch_columns(self, cols: DispatchColumns) -> None:
        """:meth:`dispatch_batch` for a columnar batch, with the same rules, vectorised:
        consume-queue entries only for NOT and COMMIT (queue by queue, each with
        :meth:`ConsumeQueueWriter.put_columns`, Java's repeat guards included); index
        keys ``topic#UNIQ_KEY`` then ``topic#k`` per non-empty KEYS token, not for
        ROLLBACK, not below the last index file's ``endPhyOffset``.  Rows out of
        commitlog order take :meth:`dispatch_batch` as requests."""
        pa, pc = _arrow()
        n = len(cols)
        if n == 0:
            return
        off = cols.commitlog_offset
        index_on = self.config.message_index_enable
        if index_on and n > 1 and not (off[1:] >= off[:-1]).all():
            self.dispatch_batch(cols.requests())
            return
        tran = cols.sys_flag & cl.TRANSACTION_MASK
        # consume queues: NOT (0x0) and COMMIT (0x8); PREPARED/ROLLBACK have bit 0x4
        cq_rows = np.flatnonzero((cols.sys_flag & 0x4) == 0)
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
        eligible = (off >= self.index.end_phy_offset) & (tran != _ROLLBACK)
        rows = np.flatnonzero(eligible)
        if not len(rows):
            return
        ridx = pa.array(rows)
        # UNIQ_KEY (non-empty) of each eligible row
        uniq = cols.uniq_key.take(ridx)
        u_ok = np.asarray(pc.fill_null(pc.not_equal(uniq, ""), False).to_numpy(zero_copy_only=False), dtype=bool)
        u_rows = rows[u_ok]
        uh, ul = java_string_hashes_arrow(uniq.filter(pa.array(u_ok)))
        # KEYS split on the separator, empty tokens skipped
        ks = cols.keys.take(ridx)
        k_ok = np.asarray(pc.fill_null(pc.not_equal(ks, ""), False).to_numpy(zero_copy_only=False), dtype=bool)
        tokens = pc.split_pattern(ks.filter(pa.array(k_ok)), props.KEY_SEPARATOR)
        if isinstance(tokens, pa.ChunkedArray):
            tokens = tokens.combine_chunks()
        parents = np.asarray(pc.list_parent_indices(tokens).to_numpy(zero_copy_only=False), dtype=np.int64)
        flat = tokens.flatten()
        t_ok = np.asarray(pc.not_equal(flat, "").to_numpy(zero_copy_only=False), dtype=bool)
        t_rows = rows[k_ok][parents[t_ok]]
        kh, kl = java_string_hashes_arrow(flat.filter(pa.array(t_ok)))
        # one key list in dispatch order: per record UNIQ_KEY first, then its tokens
        rec = np.concatenate((u_rows, t_rows))
        h = np.concatenate((uh, kh))
        ln = np.concatenate((ul, kl))
        order = np.argsort(rec, kind="stable")
        rec, h, ln = rec[order], h[order], ln[order]
        prefix = np.asarray([java_string_hash(f"{t}#") for t in cols.topics] or [0], dtype=np.int64).astype(np.uint32)
        full = prefixed_hashes(prefix[cols.topic_code[rec]], h, ln)
        if len(full):
            self.index.put_many(index_hashes_from_java(full), off[rec], cols.store_timestamp[rec])

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


__all__ = ["CommitLogDispatcher", "DispatchColumns", "read_dispatch_columns", "read_dispatch_request", "queue_groups", "DispatchRequest", "ConsumeQueueWriter", "IndexServiceWriter", "IndexFileWriter", "request_from_record", "parse_delay_levels"]
