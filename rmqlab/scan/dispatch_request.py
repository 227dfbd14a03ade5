"""What dispatch needs of each record, read from the log: Java's ``DispatchRequest``,
one at a time or many as columns.

Java: ``CommitLog.checkMessageAndReturnSize`` builds a ``DispatchRequest`` from a
record's bytes (topic, queue id, offset, size, tagsCode, store time, queue offset,
KEYS, UNIQ_KEY, sysFlag); ``ReputMessageService`` hands them to ``doDispatch``.  This
is the read side of dispatch: the engine's reput (:mod:`rmqlab.writers.dispatch` writes
the consume queues and the index from these), recovery's plan (which queue entries a
re-dispatch would write) and the checks all read requests here.  The rules that turn a
record into a request (tagsCode, which records a queue or the index takes) are
:mod:`rmqlab.rules`'.

- :func:`request_from_record` — one decoded :class:`~rmqlab.format.record.Record`;
- :func:`read_dispatch_request` / :func:`read_dispatch_columns` — records at known
  positions of a mapped file, the many read in bulk with :mod:`rmqlab.scan.decode`
  into :class:`DispatchColumns` (no Python work per record);
- :func:`queue_groups` — the rows of each (topic, queue), in row order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, Sequence

import numpy as np

if TYPE_CHECKING:  # imported lazily at run time (see _arrow)
    import pyarrow as pa

from ..format import properties as props
from ..format import layout
from ..format.record import Record, decode_record
from .. import rules
from ..rules import SCHEDULE_TOPIC
from ..format.hashing import java_string_hash
from ..format.indexfile import index_tag_key
from .hashes import index_hashes_from_java, java_string_hashes_arrow, prefixed_hashes
from .uniques import stable_argsort


class DispatchRequest(NamedTuple):
    """Java ``DispatchRequest``: what dispatch needs to know about one record.

    >>> from rmqlab import open_store
    >>> from rmqlab.lab.samples import shipped_dir
    >>> from rmqlab.scan.dispatch_request import request_from_record
    >>> with open_store(shipped_dir() / "clean") as store:
    ...     req = request_from_record(store.commitlog.read(0), delay_levels={})
    >>> req.topic, req.queue_id, req.consume_queue_offset, req.msg_size, req.keys, req.tags
    ('Orders', 1, 0, 255, 'order-1 cust-1', 'paid')
    """

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
    #: Java msgBaseOffset / batchSize (what a batch queue's unit holds): an inner batch's
    #: INNER_BASE and INNER_NUM (:func:`rmqlab.rules.batch_sizes`); None: the queue offset, and 1
    msg_base_offset: int | None = None
    batch_size: int = 1
    #: INNER_MULTI_DISPATCH / INNER_MULTI_QUEUE_OFFSET (the LMQ queues it goes to as
    #: well, :func:`rmqlab.rules.multi_dispatch_targets`), None without
    multi_dispatch: str | None = None
    multi_queue_offset: str | None = None
    #: TAGS as Java's properties map holds it (the 5.4+ index puts ``topic#T#tags``), None without
    tags: str | None = None

    @property
    def base_offset(self) -> int:
        """Java ``DispatchRequest.getMsgBaseOffset`` (the queue offset unless an inner batch says otherwise)."""
        return self.consume_queue_offset if self.msg_base_offset is None else self.msg_base_offset


#: the rule lives in rmqlab.rules; dispatch's name for it
tags_code_for = rules.tags_code


#: the record's physicalOffset field, from the schema's layout
_PHYSICAL_OFFSET_AT = layout.PHYSICAL_OFFSET_AT


def request_from_record(record: Record, delay_levels: dict[int, int]) -> DispatchRequest:
    """Java ``checkMessageAndReturnSize`` → ``DispatchRequest`` for a decoded record."""
    jp = record.java_properties
    topic = record.topic
    base, size = None, 1
    if props.INNER_NUM in jp and props.INNER_BASE in jp:  # CommitLog.setBatchSizeIfNeeded
        b, n = rules.batch_sizes([record.queue_offset], [jp[props.INNER_NUM]], [jp[props.INNER_BASE]])
        base, size = int(b[0]), int(n[0])
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
        base,
        size,
        jp.get(props.INNER_MULTI_DISPATCH),
        jp.get(props.INNER_MULTI_QUEUE_OFFSET),
        jp.get(props.TAGS),
    )


# -- many requests as columns ---------------------------------------------------------------------
def _arrow():
    """pyarrow and its kernels (:mod:`rmqlab.scan.compute`: without ``pyarrow.compute``'s
    import), imported on first use: the per-record paths (and the engine's puts) do not
    need them."""
    import pyarrow as pa

    from . import compute

    return pa, compute


@dataclass
class DispatchColumns:
    """Many :class:`DispatchRequest` s as columns, one row per record, in commitlog order
    (Java: the ``DispatchRequest`` s ``ReputMessageService`` hands to ``doDispatch`` one
    after the other).

    Integer fields are int64 numpy arrays; the topic is a code into ``topics``;
    ``keys`` and ``uniq_key`` are Arrow string arrays (null when the record has none).
    Build with :meth:`from_arrow` (bulk-decoded records, :mod:`rmqlab.scan.decode`)
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
    #: Java DispatchRequest.batchSize and msgBaseOffset: INNER_NUM and INNER_BASE of an
    #: inner batch, else 1 and the queue offset (:func:`rmqlab.rules.batch_sizes`); None
    #: where every record is one message (the common case)
    batch_size: np.ndarray | None = None
    msg_base_offset: np.ndarray | None = None
    #: INNER_MULTI_DISPATCH and INNER_MULTI_QUEUE_OFFSET (Arrow strings, null without),
    #: None where no record holds them
    multi_dispatch: "pa.Array | pa.ChunkedArray | None" = None
    multi_queue_offset: "pa.Array | pa.ChunkedArray | None" = None
    #: TAGS (Arrow strings, null without; None when not read): the 5.4+ index's tag keys
    tags: "pa.Array | pa.ChunkedArray | None" = None

    #: the fastdecode columns :meth:`from_arrow` needs
    ARROW_COLUMNS = ("physical_offset", "total_size", "topic", "queue_id", "queue_offset", "sys_flag", "store_timestamp", "prepared_transaction_offset")
    #: and the properties it reads, as Java's map holds them
    JAVA_PROPERTIES = (props.TAGS, props.KEYS, props.UNIQ_KEY, props.DELAY, props.INNER_NUM, props.INNER_BASE, props.INNER_MULTI_DISPATCH,
                       props.INNER_MULTI_QUEUE_OFFSET)

    def batch_sizes(self) -> np.ndarray:
        """How many queue offsets each record takes (1, or an inner batch's INNER_NUM)."""
        return self.batch_size if self.batch_size is not None else np.ones(len(self), np.int64)

    def multi_dispatches(self, *, enable_lmq: bool) -> list[tuple[int, str, int, int]]:
        """Every extra unit multi-dispatch puts for these rows, in row order:
        ``(row, topic, queueId, queue offset)`` (:func:`rmqlab.rules.multi_dispatch_targets`;
        only rows holding INNER_MULTI_DISPATCH are looked at)."""
        if self.multi_dispatch is None or self.multi_queue_offset is None:
            return []
        pa, ac = _arrow()
        has = np.flatnonzero(np.asarray(ac.and_(ac.is_valid(self.multi_dispatch), ac.is_valid(self.multi_queue_offset)).to_numpy(zero_copy_only=False), bool))
        if not len(has):
            return []
        idx = ac.indices(has)
        out = []
        for r, d, o in zip(has.tolist(), ac.take(self.multi_dispatch, idx).to_pylist(), ac.take(self.multi_queue_offset, idx).to_pylist()):
            out += [(r, t, q, off) for t, q, off in rules.multi_dispatch_targets(self.topic_of(r), int(self.queue_id[r]), d, o, enable_lmq=enable_lmq)]
        return out

    def msg_base_offsets(self) -> np.ndarray:
        """Java ``DispatchRequest.getMsgBaseOffset`` of each record (its queue offset, or an inner batch's INNER_BASE)."""
        return self.msg_base_offset if self.msg_base_offset is not None else self.consume_queue_offset

    def __len__(self) -> int:
        return len(self.commitlog_offset)

    def take(self, rows: np.ndarray) -> "DispatchColumns":
        """These rows, in this order."""
        pa, ac = _arrow()
        idx = ac.indices(rows)
        return DispatchColumns(
            self.topics, self.topic_code[rows], self.queue_id[rows], self.commitlog_offset[rows], self.msg_size[rows], self.tags_code[rows],
            self.store_timestamp[rows], self.consume_queue_offset[rows], self.sys_flag[rows], ac.take(self.keys, idx), ac.take(self.uniq_key, idx),
            self.prepared_transaction_offset[rows], None if self.batch_size is None else self.batch_size[rows],
            None if self.msg_base_offset is None else self.msg_base_offset[rows],
            None if self.multi_dispatch is None else ac.take(self.multi_dispatch, idx),
            None if self.multi_queue_offset is None else ac.take(self.multi_queue_offset, idx),
            None if self.tags is None else ac.take(self.tags, idx),
        )

    def topic_of(self, i: int) -> str:
        return self.topics[int(self.topic_code[i])]

    def requests(self) -> list[DispatchRequest]:
        """The same rows as :class:`DispatchRequest` tuples."""
        keys = self.keys.to_pylist()
        uniq = self.uniq_key.to_pylist()
        t = self.topics
        n = len(self)
        bases = self.msg_base_offset.tolist() if self.msg_base_offset is not None else [None] * n
        sizes = self.batch_size.tolist() if self.batch_size is not None else [1] * n
        md = self.multi_dispatch.to_pylist() if self.multi_dispatch is not None else [None] * n
        mq = self.multi_queue_offset.to_pylist() if self.multi_queue_offset is not None else [None] * n
        tg = self.tags.to_pylist() if self.tags is not None else [None] * n
        return [
            DispatchRequest(t[c], q, o, s, g, ts, qo, k, u, sf, pto, None if b == qo and z == 1 else b, z, d, m, tag)
            for c, q, o, s, g, ts, qo, k, u, sf, pto, b, z, d, m, tag in zip(
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
                bases,
                sizes,
                md,
                mq,
                tg,
            )
        ]

    def index_key_hashes(self, rows: np.ndarray, *, tags: bool = False, tag_mask: bool = False, uniq_type: str = ""):
        """The keys Java ``IndexService.buildIndex`` puts for the records ``rows``
        (:func:`rmqlab.rules.index_keys`, vectorised: ``topic#UNIQ_KEY`` when not empty,
        then ``topic#k`` per non-empty KEYS token, then with ``tags`` (5.4+,
        :attr:`rmqlab.releases.Release.index_tags`) ``topic#T#TAGS`` when not empty), as
        (row of each key, its index hash - the ``keyHash`` an index entry stores), in
        dispatch order: by row, each row's UNIQ_KEY first, its tag last.  Eligibility
        (ROLLBACK, endPhyOffset) is the caller's.  ``tag_mask`` adds a third array: which
        of the keys are tag keys.  ``uniq_type``: the writer's form of a UNIQ_KEY's key
        (rocketmq-rust's ``topic#U#uniq``: :attr:`rmqlab.releases.Release.uniq_index_type`)."""
        pa, ac = _arrow()
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows):
            return (rows, np.zeros(0, np.int64), np.zeros(0, bool)) if tag_mask else (rows, np.zeros(0, np.int64))
        # every row, in order (the usual batch: each record goes to the index): the
        # columns as they are, no copy taken of them
        every = len(rows) == len(self) and bool((rows == np.arange(len(rows))).all())
        ridx = None if every else ac.indices(rows)

        def picked(col):
            return col if every else ac.take(col, ridx)

        def kept(col, ok: np.ndarray):
            return col if ok.all() else ac.filter(col, ac.mask(ok))

        uniq = picked(self.uniq_key)
        u_ok = np.asarray(ac.fill_null(ac.not_equal(uniq, ""), False).to_numpy(zero_copy_only=False), dtype=bool)
        u_rows = rows[u_ok]
        uh, ul = java_string_hashes_arrow(kept(uniq, u_ok))
        # KEYS split on the separator, empty tokens skipped
        ks = picked(self.keys)
        k_ok = np.asarray(ac.fill_null(ac.not_equal(ks, ""), False).to_numpy(zero_copy_only=False), dtype=bool)
        tokens = ac.split_pattern(kept(ks, k_ok), props.KEY_SEPARATOR)
        if isinstance(tokens, pa.ChunkedArray):
            tokens = tokens.combine_chunks()
        parents = np.asarray(ac.list_parent_indices(tokens).to_numpy(zero_copy_only=False), dtype=np.int64)
        flat = ac.list_flatten(tokens)
        t_ok = np.asarray(ac.not_equal(flat, "").to_numpy(zero_copy_only=False), dtype=bool)
        t_rows = rows[k_ok][parents[t_ok]]
        kh, kl = java_string_hashes_arrow(kept(flat, t_ok))
        rec = np.concatenate((u_rows, t_rows))
        h = np.concatenate((uh, kh))
        ln = np.concatenate((ul, kl))
        prefix = np.asarray([java_string_hash(f"{t}#") for t in self.topics] or [0], dtype=np.int64).astype(np.uint32)
        pre = prefix[self.topic_code[rec]]
        if uniq_type:
            u_prefix = np.asarray([java_string_hash(f"{t}#{uniq_type}") for t in self.topics] or [0], dtype=np.int64).astype(np.uint32)
            pre[: len(u_rows)] = u_prefix[self.topic_code[u_rows]]
        is_tag = np.zeros(len(rec), bool)
        if tags and self.tags is not None:
            tg = picked(self.tags)
            g_ok = np.asarray(ac.fill_null(ac.not_equal(tg, ""), False).to_numpy(zero_copy_only=False), dtype=bool)
            g_rows = rows[g_ok]
            gh, gl = java_string_hashes_arrow(kept(tg, g_ok))
            tag_prefix = np.asarray([java_string_hash(index_tag_key(t, "")) for t in self.topics] or [0], dtype=np.int64).astype(np.uint32)
            rec, h, ln = np.concatenate((rec, g_rows)), np.concatenate((h, gh)), np.concatenate((ln, gl))
            pre = np.concatenate((pre, tag_prefix[self.topic_code[g_rows]]))
            is_tag = np.concatenate((is_tag, np.ones(len(g_rows), bool)))
        order = stable_argsort(rec)  # row numbers: sorted by radix where they fit 16 bits (a batch's)
        rec, h, ln, pre, is_tag = rec[order], h[order], ln[order], pre[order], is_tag[order]
        full = prefixed_hashes(pre, h, ln)
        hashes = index_hashes_from_java(full).astype(np.int64)
        return (rec, hashes, is_tag) if tag_mask else (rec, hashes)

    @classmethod
    def from_requests(cls, reqs: Sequence[DispatchRequest]) -> "DispatchColumns":
        pa, ac = _arrow()
        if not reqs:
            fields = [()] * len(DispatchRequest._fields)
        else:
            fields = list(zip(*reqs))  # one column per field, transposed in C
        enc = ac.dictionary_encode(pa.array(fields[0], pa.string()))  # codes in order of first appearance

        def col(i):
            return np.array(fields[i], dtype=np.int64)

        inner = any(r.msg_base_offset is not None or r.batch_size != 1 for r in reqs)
        multi = any(r.multi_dispatch is not None or r.multi_queue_offset is not None for r in reqs)
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
            col(12) if inner else None,
            np.array([r.base_offset for r in reqs], dtype=np.int64) if inner else None,
            pa.array(fields[13], pa.string()) if multi else None,
            pa.array(fields[14], pa.string()) if multi else None,
            # (the engine's C put hands requests without the trailing TAGS: 5.3.3 does not index it)
            pa.array(fields[15], pa.string()) if len(fields) > 15 and any(t is not None for t in fields[15]) else None,
        )

    @classmethod
    def concat(cls, parts: Sequence["DispatchColumns"]) -> "DispatchColumns":
        pa, ac = _arrow()
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
            None if all(p.batch_size is None for p in parts) else np.concatenate([p.batch_sizes() for p in parts]),
            None if all(p.msg_base_offset is None for p in parts) else np.concatenate([p.msg_base_offsets() for p in parts]),
            _strings(parts, "multi_dispatch"),
            _strings(parts, "multi_queue_offset"),
            _strings(parts, "tags"),
        )

    @classmethod
    def from_arrow(cls, batch, delay_levels: dict[int, int]) -> "DispatchColumns":
        """Java ``checkMessageAndReturnSize`` for every MESSAGE row of a fastdecode
        batch or table: :data:`ARROW_COLUMNS`, and the :data:`JAVA_PROPERTIES` as
        fastdecode's ``java_property:`` columns - the values Java's properties map
        holds (``decode_positions(java_properties=...)``), so that an empty or
        repeated TAGS, KEYS, UNIQ_KEY or DELAY reads as it does in RocketMQ."""
        from ..scan.decode import JAVA_PROPERTY_PREFIX

        pa, ac = _arrow()
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
        enc = ac.dictionary_encode(topic) if n else pa.DictionaryArray.from_arrays(pa.array([], pa.int32()), pa.array([], pa.string()))
        topics = enc.dictionary.to_pylist()
        topic_code = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        tags, keys, uniq, delay, inner_num, inner_base, multi_dispatch, multi_offset = (single(col(JAVA_PROPERTY_PREFIX + name)) for name in cls.JAVA_PROPERTIES)
        store_ts = ints("store_timestamp")
        # tagsCode: String.hashCode of TAGS, 0 without
        th, _ = java_string_hashes_arrow(tags)
        tags_code = th.view(np.int32).astype(np.int64)
        # SCHEDULE_TOPIC_XXXX with DELAY: the delivery time (the rule of tags_code_for)
        if SCHEDULE_TOPIC in topics and delay.null_count < n:
            sched = (topic_code == topics.index(SCHEDULE_TOPIC)) & np.asarray(ac.is_valid(delay).to_numpy(zero_copy_only=False), dtype=bool)
            rows = np.flatnonzero(sched)
            if len(rows):
                idx = ac.indices(rows)
                for r, t, d in zip(rows.tolist(), ac.take(tags, idx).to_pylist(), ac.take(delay, idx).to_pylist()):
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
            *_batch_sizes(ints("queue_offset"), inner_num, inner_base),
            *((multi_dispatch, multi_offset) if multi_dispatch.null_count < n and multi_offset.null_count < n else (None, None)),
            tags,
        )


def _strings(parts, name: str):
    """A string column of ``parts`` concatenated (nulls for the parts without it), or None."""
    if all(getattr(p, name) is None for p in parts):
        return None
    pa, ac = _arrow()
    out = []
    for p in parts:
        a = getattr(p, name)
        if a is None:
            out.append(pa.nulls(len(p), pa.string()))
        else:
            out.extend(a.chunks if isinstance(a, pa.ChunkedArray) else [a])
    return pa.chunked_array(out, pa.string())


def _batch_sizes(queue_offset: np.ndarray, inner_num, inner_base) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(batchSize, msgBaseOffset): :func:`rmqlab.rules.batch_sizes` of the rows that hold
    both properties (inner batches; (None, None) when no row does, the common case: no
    Python work per record)."""
    if inner_num.null_count == len(inner_num) or inner_base.null_count == len(inner_base):
        return None, None
    pa, ac = _arrow()
    rows = np.flatnonzero(np.asarray(ac.and_(ac.is_valid(inner_num), ac.is_valid(inner_base)).to_numpy(zero_copy_only=False), bool))
    if not len(rows):
        return None, None
    idx = ac.indices(rows)
    base, size = rules.batch_sizes(queue_offset[rows], ac.take(inner_num, idx).to_pylist(), ac.take(inner_base, idx).to_pylist())
    sizes, bases = np.ones(len(queue_offset), np.int64), queue_offset.copy()
    sizes[rows], bases[rows] = size, base
    return sizes, bases


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
    records are decoded in bulk with :func:`rmqlab.scan.decode.decode_positions`
    (one row per position, no walk of the chain); should one of them be damaged, all
    are read one by one with :func:`~rmqlab.format.record.decode_record`, which names
    the damage.  The properties are read as Java's map holds them (see
    :meth:`DispatchColumns.from_arrow`).  CRCs are not checked (Java's reput does not
    check them).
    """
    pa, ac = _arrow()
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
    from ..scan.decode import decode_positions

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
