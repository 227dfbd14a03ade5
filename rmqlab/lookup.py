"""Lookups (spec section 6): by queue offset, by key, by time, by offset msgId.

Java: ``DefaultMessageStore.getMessage`` / ``queryMessage`` / ``lookMessageByOffset``
/ ``getOffsetInQueueByTime``.  These work on a :class:`~rmqlab.store.reader.StoreReader`;
the engine answers lookups through the same functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from .errors import StoreFormatError, StoreLayoutError
from .format.consumequeue import CQ_STORE_UNIT_SIZE
from .format.layout import store_timestamp_at
from .format.msgid import decode_message_id
from . import reprs, rules
from .rules import LONG_MAX
from .format import properties as props
from .format.indexfile import index_key
from .format.record import BAD_SIZE, BODY_CRC, SIZE_MISMATCH, Record, RecordError, decode_record
from .store.batch_consume_queue import BatchConsumeQueue
from .store.consume_queue import CqEntry
from .store.index_file import ChainStep, IndexFile
from .store.reader import StoreReader
# INDEX_FILES / ROCKSDB_KEYS: the values of a lookup's ``source``, named here for callers
from .store.rocksdb_message import INDEX_FILES, ROCKSDB_KEYS, key_index_source  # noqa: F401


class BoundaryType(str, Enum):
    """Java ``BoundaryType`` (5.3): which entry :func:`offset_by_time` returns when no
    entry was stored at the time asked, or several were.

    >>> from rmqlab import open_store
    >>> from rmqlab.lab.samples import shipped_dir
    >>> with open_store(shipped_dir() / "clean") as store:
    ...     t = get_message(store, "Orders", 1, 5)[1].store_timestamp + 1   # just after unit 5
    ...     print(offset_by_time(store, "Orders", 1, t, BoundaryType.LOWER), offset_by_time(store, "Orders", 1, t, "UPPER"))
    6 5
    """

    LOWER = "LOWER"  # the first entry stored at or after the time
    UPPER = "UPPER"  # the last entry stored at or before the time


# -- by queue offset ------------------------------------------------------------------------
def get_message(store: StoreReader, topic: str, queue_id: int, queue_offset: int) -> tuple[CqEntry, Record]:
    """The consume-queue entry at ``queue_offset`` and the record it points at.

    >>> from rmqlab import open_store
    >>> from rmqlab.lab.samples import shipped_dir
    >>> with open_store(shipped_dir() / "clean") as store:
    ...     entry, record = get_message(store, "Orders", 1, 0)
    >>> entry.commitlog_offset, record.topic, record.queue_offset, record.keys
    (0, 'Orders', 0, 'order-1 cust-1')
    """
    cq = store.consume_queue(topic, queue_id)
    lo, hi = cq.valid_range(store.commitlog.min_offset)
    if not lo <= queue_offset < hi:
        raise StoreFormatError(cq.directory, None, f"queue offset {queue_offset} is outside [{lo}, {hi}) of {topic}/{queue_id}")
    entry = cq.get(queue_offset)
    assert entry is not None
    if entry.size <= 0 or entry.commitlog_offset < 0:
        # Java getMessage reads entry.size bytes at entry.offset: nothing for a zeroed unit
        # in an older file (ConsumeQueue.recover does not look there, so the queue goes on)
        raise StoreFormatError(*_unit_at(cq, queue_offset),
                               f"entry {queue_offset} of {topic}/{queue_id} is invalid (offset {entry.commitlog_offset}, size {entry.size}): RocketMQ serves no message there")
    return entry, served_record(store, entry)


def served_record(store: StoreReader, entry: CqEntry) -> Record:
    """The record a unit serves, as RocketMQ serves it: ``getMessage`` hands out the
    unit's ``size`` bytes at its offset (``CommitLog.getMessage(offset, size)``) and
    ``MessageDecoder`` reads their fields one after the other, never bounding anything
    by the record's totalSize field nor asking that the fields fill it.  So a record
    whose totalSize is damaged, or whose propertiesLength leaves bytes unread (a zeroed
    page across its end), is still served: decoded from the unit's bytes as
    MessageDecoder reads them, its ``total_size`` the field as stored.  What Java cannot
    decode either (a length running past the unit) raises as :meth:`CommitLog.read` does."""
    return _as_served(store, entry.commitlog_offset, entry.size)


def _as_served(store: StoreReader, offset: int, size: int | None) -> Record:
    """The record at ``offset`` as Java decodes the ``size`` bytes served there (None:
    as many as its totalSize field says, ``lookMessageByOffset``)."""
    try:
        return store.commitlog.read(offset)
    except RecordError as err:
        if err.kind not in (BAD_SIZE, SIZE_MISMATCH, BODY_CRC):
            raise
        f = store.commitlog.queue.find(offset)
        fpos = offset - f.file_from_offset
        want = size if size is not None else err.total_size
        if want is None or want < 8:
            raise
        raw = bytearray(f.buf[fpos : fpos + want])
        if len(raw) < want:  # Java: selectMappedBuffer past the file's end is null
            raise
        field_size = int.from_bytes(raw[:4], "big", signed=True)
        raw[:4] = len(raw).to_bytes(4, "big", signed=True)
        try:
            rec = decode_record(raw, 0, file=str(f.path), file_base=offset, message_decoder=True)
        except RecordError:
            raise err from None
        if rec is None or rec.is_blank:
            raise err from None
        rec.total_size, rec.file_offset = field_size, fpos
        return rec


def served_note(entry: CqEntry, rec: Record) -> str | None:
    """What a reader of a served record should know that the record alone does not say:
    a totalSize field that disagrees with the unit (served from the unit's bytes), or a
    record Java's MessageDecoder cannot decode."""
    notes = []
    if rec.total_size != entry.size:
        notes.append(f"its totalSize field says {rec.total_size} but the unit {entry.size}: RocketMQ serves the unit's {entry.size} bytes as they are")
    if rec.unread_tail:
        notes.append(f"its fields end {rec.unread_tail} byte(s) before the record does (a length field damaged): RocketMQ's MessageDecoder reads them as they are")
    if rec.java_decode_problem:
        notes.append(rec.java_decode_problem)
    return "; ".join(notes) or None


def _unit_at(cq, queue_offset: int):
    """(file, byte in it) of a queue's unit, for errors and warnings."""
    return cq.where(queue_offset)


def foreign_record_note(store: StoreReader, topic: str, queue_id: int, queue_offset: int, rec: Record) -> str | None:
    """Java's ``getMessage`` serves whatever record a consume-queue unit points at.
    When that record names another queue (a damaged unit, or a record whose topic or
    queue id was damaged), say so, with the unit's file and byte; None when it is
    this queue's own record at this queue offset."""
    if rec.is_blank:
        return None
    cq = store.consume_queue(topic, queue_id)
    if isinstance(cq, BatchConsumeQueue):  # the unit holding queue_offset starts at its msgBaseOffset
        unit = cq.unit_at(queue_offset)
        queue_offset = unit.msg_base_offset if unit is not None else queue_offset
    if rec.topic == topic and rec.queue_id == queue_id and rec.queue_offset == queue_offset:
        return None
    path, byte = _unit_at(cq, queue_offset)
    where = f"{path} @ {byte}"
    return (
        f"{where}: unit {queue_offset} of {topic}/{queue_id} points at a record of {rec.topic}/{rec.queue_id} "
        f"(queue offset {rec.queue_offset}, physical offset {rec.physical_offset}); RocketMQ serves it as it is"
    )


def batch_note(store: StoreReader, topic: str, queue_id: int, queue_offset: int) -> str | None:
    """For a batch queue (queue.type=BatchCQ): which message of its unit ``queue_offset``
    is (``getMessage`` serves the unit's whole record; the consumer unwraps it); None
    for a plain queue or a unit of one message."""
    cq = store.consume_queue(topic, queue_id)
    if not isinstance(cq, BatchConsumeQueue):
        return None
    u = cq.unit_at(queue_offset)
    if u is None or u.batch_size == 1:
        return None
    return (f"queue offset {queue_offset} is message {queue_offset - u.msg_base_offset + 1} of {u.batch_size} of the inner batch at queue offsets "
            f"[{u.msg_base_offset}, {u.msg_base_offset + u.batch_size}) ({u.file} @ {u.position}); RocketMQ serves the batch's one record")


def served_range(store: StoreReader, topic: str, queue_id: int) -> tuple[int, int, int]:
    """``(min, max, cut)``: the queue offsets the store's next start serves, and how many
    of the queue's last offsets it cuts.  The units at or past where the log ends (a
    crash dispatched them; the store is not recovered yet) are cut by RocketMQ's
    recovery (``ConsumeQueue.truncateDirtyLogicFiles``), so every answer after the next
    start counts the queue without them: ``max`` is the queue's end after that cut.

    >>> from rmqlab import open_store
    >>> from rmqlab.lab.samples import shipped_dir
    >>> with open_store(shipped_dir() / "damaged") as store:
    ...     served_range(store, "Orders", 0)       # ten units point past the end of the log
    (0, 114, 10)
    """
    cq = store.consume_queue(topic, queue_id)
    lo, hi = cq.valid_range(store.commitlog.min_offset)
    if not store.queues_truncated:  # the writer's start keeps them (StoreReader.queues_truncated)
        return lo, hi, 0
    end = store.commitlog.served_end()
    n = 0
    for q in range(hi - 1, lo - 1, -1):
        e = cq.get(q)
        if e is None or e.commitlog_offset < end:
            break
        n += 1
    return lo, hi - n, n


def entries_past_the_log(store: StoreReader, topic: str, queue_id: int) -> int:
    """How many of the queue's last offsets point at or past where the log ends: what
    the next start cuts of it (:func:`served_range`'s third number)."""
    return served_range(store, topic, queue_id)[2]


def get_messages(store: StoreReader, topic: str, queue_id: int, start: int = 0, max_count: int | None = None, tags_code: int | None = None):
    """``(entry, record)`` pairs from ``start``; with ``tags_code`` only entries whose
    consume-queue tagsCode equals it (the broker's tag filter, done on the queue,
    before the commitlog is read).

    >>> from rmqlab import open_store
    >>> from rmqlab.format.hashing import tags_code
    >>> from rmqlab.lab.samples import shipped_dir
    >>> with open_store(shipped_dir() / "clean") as store:
    ...     paid = get_messages(store, "Orders", 1, max_count=3, tags_code=tags_code("paid"))
    ...     print([(entry.queue_offset, record.physical_offset, record.tags) for entry, record in paid])
    [(0, 0, 'paid'), (1, 1972, 'paid'), (2, 3845, 'paid')]
    """
    cq = store.consume_queue(topic, queue_id)
    lo, hi = cq.valid_range(store.commitlog.min_offset)
    n = 0
    for q in range(max(lo, start), hi):
        if max_count is not None and n >= max_count:
            break
        e = cq.get(q)
        if e.size <= 0 or e.commitlog_offset < 0:
            continue  # a zeroed unit in an older file: Java's getMessage serves no bytes for it
        if tags_code is not None and e.tags_code != tags_code:
            continue
        if store.commitlog.queue.find(e.commitlog_offset) is None:
            # Java getMessage: no file holds it (one missing from the log's middle):
            # rollNextFile, and the units pointing before the next file are skipped
            continue
        yield e, served_record(store, e)
        n += 1


# -- by key ----------------------------------------------------------------------------------
@dataclass
class KeyQueryResult:
    """What a key lookup found.

    ``raw_offsets`` — Java ``IndexService.queryOffset``: every entry whose hash
    matched, newest first, collisions included.  ``records`` — the records that
    really carry the key in ``KEYS`` or ``UNIQ_KEY``, ascending by offset.
    ``collisions`` — offsets whose hash matched but whose record does not carry it.
    ``past_end`` — offsets at or past the end of the log (dead bytes a recovery left
    after its cut): RocketMQ's ``queryMessage`` serves nothing there.

    The sample store's keys ``Aa`` and ``BB`` have one Java hash: each lookup walks the
    same four entries and keeps the two whose record carries the key.

    >>> from rmqlab import open_store
    >>> from rmqlab.lab.samples import shipped_dir
    >>> with open_store(shipped_dir() / "clean") as store:
    ...     found = query_by_key(store, "Orders", "Aa")
    >>> found.raw_offsets, [r.physical_offset for r in found.records], found.collisions
    ([188986, 94947, 11781, 11371], [11371, 188986], [11781, 94947])
    """

    topic: str
    key: str
    raw_offsets: list[int]
    records: list[Record]
    collisions: list[int]
    walk: list[tuple[IndexFile, list[ChainStep]]] = field(default_factory=list, repr=False)
    past_end: list[int] = field(default_factory=list)
    #: where the answer came from: "index files" (IndexService) or "RocksDB keys" (IndexRocksDBStore)
    source: str = "index files"

    def _repr_html_(self) -> str:  # notebooks: the chain walk, step by step
        return reprs.html("key_query", self)


#: ``queryMessage``'s index types (Java 5.4+ ``MessageConst.INDEX_UNIQUE_TYPE`` /
#: ``INDEX_TAG_TYPE``; rocketmq-rust ``QueryMessageRequest.legacy_backend_key``): the key
#: looked up is ``topic#U#key`` / ``topic#T#key``
INDEX_TYPES = ("U", "T")


def record_has_key(record: Record, topic: str, key: str, uniq_type: str = "") -> bool:
    """Whether ``record`` is indexed under ``topic#key`` (UNIQ_KEY, a KEYS token or,
    as ``T#tags``, its TAGS); ``uniq_type`` is the writer's form of a UNIQ_KEY
    (:attr:`rmqlab.releases.Release.uniq_index_type`)."""
    if record.topic != topic:
        return False
    jp = record.java_properties
    return index_key(topic, key) in rules.index_keys(topic, jp.get(props.UNIQ_KEY), jp.get(props.KEYS), jp.get(props.TAGS), uniq_type)


def query_by_key(store: StoreReader, topic: str, key: str, max_num: int = 2**31 - 1, begin: int = 0, end: int = LONG_MAX, source: str | None = None,
                 index_type: str | None = None, uniq_type: str = "") -> KeyQueryResult:
    """Look ``topic#key`` up where ``source`` says (default :func:`key_index_source`),
    then verify the real key.  The index files answer newest first (``IndexService``);
    the RocksDB keys answer by hour, KEYS entries first and UNIQ_KEY ones when there are
    none (``IndexRocksDBStore.queryOffset``; an unbounded window takes every hour the
    store holds, not the broker's last ``maxRocksDBIndexQueryDays`` by its clock).
    ``index_type`` (:data:`INDEX_TYPES`) looks ``topic#<type>#key`` up, as a typed query
    does; ``uniq_type`` says how the store's writer indexed UNIQ_KEYs (the records a
    hit must carry).

    >>> from rmqlab import open_store
    >>> from rmqlab.lab.samples import shipped_dir
    >>> with open_store(shipped_dir() / "clean") as store:
    ...     hit = query_by_key(store, "Orders", "Aa")    # "Aa" and "BB" share a hash: the chain holds both
    >>> [(r.physical_offset, r.keys) for r in hit.records]
    [(11371, 'Aa'), (188986, 'Aa')]
    """
    if index_type:
        if index_type not in INDEX_TYPES:
            raise ValueError(f"unknown index type {index_type!r}: {', '.join(INDEX_TYPES)}")
        key = f"{index_type}#{key}"
    source = source or key_index_source(store)
    walk: list = []
    raw: list[int] = []
    if source == ROCKSDB_KEYS:
        db = store.message_rocksdb
        if db is None:
            raise StoreLayoutError(store.root / rules.MESSAGE_ROCKSDB_DIR, None, "no RocksDB of keys (rocksdbstore/, RocketMQ 5.4+ with indexRocksDBEnable) to look the key up in")
        raw = db.query_offset(topic, key, max_num, begin, end)
    else:
        walk = store.index.query_steps(topic, key, max_num, begin, end)
        for _, steps in walk:
            raw += [s.phy_offset for s in steps if s.hash_matches and s.time_matches][: max(0, max_num - len(raw))]
    records, collisions, past_end = [], [], []
    end = store.commitlog.served_end() if raw else 0
    for off in sorted(set(raw)):
        if off >= end:
            past_end.append(off)
            continue
        try:
            rec = store.commitlog.read(off)
        except StoreFormatError:
            collisions.append(off)  # points at nothing readable: not an answer
            continue
        if record_has_key(rec, topic, key, uniq_type):
            records.append(rec)
        else:
            collisions.append(off)
    return KeyQueryResult(topic, key, raw, records, collisions, walk, past_end, source)


# -- by msgId --------------------------------------------------------------------------------
def look_by_msg_id(store: StoreReader, msg_id: str) -> Record:
    """Java ``viewMessageById``: decode host and offset, read the record there as
    ``lookMessageByOffset`` does (its totalSize field's bytes, decoded by MessageDecoder).

    >>> from rmqlab import open_store
    >>> from rmqlab.lab.samples import shipped_dir
    >>> with open_store(shipped_dir() / "clean") as store:
    ...     print(look_by_msg_id(store, "7F00000100002A9F00000000000000FF").topic)   # host 127.0.0.1:10911, offset 255
    Payments
    """
    host, port, offset = decode_message_id(msg_id)
    return _as_served(store, offset, None)


@dataclass
class MessageIdAnswer:
    """What a message ID named: ``kind`` :data:`OFFSET_MSG_ID` or :data:`CLIENT_MSG_ID`
    (None: neither), the records, and a sentence saying which was taken and why — or,
    for an ID that is neither, why not:

    >>> from rmqlab import open_store
    >>> from rmqlab.lab.samples import shipped_dir
    >>> with open_store(shipped_dir() / "clean") as store:
    ...     answer = look_by_any_message_id(store, "7F00000100002A9F00000000DEADBEEF")
    >>> answer.kind, answer.records
    (None, [])
    >>> print(answer.note)
    7F00000100002A9F00000000DEADBEEF: as an offset msgId it names offset 3735928559, outside the log [0, 280240); nor is it the UNIQ_KEY of a record the index holds under the 3 topic(s) of the store
    """

    kind: str | None
    records: list
    note: str


OFFSET_MSG_ID = "offset msgId"
CLIENT_MSG_ID = "client message ID (UNIQ_KEY)"


def look_by_any_message_id(store: StoreReader, msg_id: str, *, topic: str | None = None, uniq_type: str = "") -> MessageIdAnswer:
    """A message ID as users hold it.  Both kinds are 32 hex digits for IPv4 (56 for an
    IPv6 store host): the offset msgId (``MessageDecoder.createMessageId``: store host
    and physical offset) is tried first, as the admin tools' ``viewMessage`` does; where
    no record of the log starts at the offset it names, it is taken as the client's
    message ID (``MessageClientIDSetter``, the record's UNIQ_KEY, what producers,
    consoles and traces show), looked up in the index under ``topic`` or every topic of
    the store (``queryMessageByUniqKey``: the index key is topic#UNIQ_KEY).

    >>> from rmqlab import open_store
    >>> from rmqlab.lab.samples import shipped_dir
    >>> with open_store(shipped_dir() / "clean") as store:
    ...     answer = look_by_any_message_id(store, "7F0000011F2E5EED00010225516A0000")
    >>> answer.kind, [r.physical_offset for r in answer.records]
    ('client message ID (UNIQ_KEY)', [0])
    """
    text = msg_id.strip().upper()
    try:
        host, port, offset = decode_message_id(text)
    except StoreFormatError:
        # both kinds are the same hex of the same lengths: what is not cannot be either
        raise StoreFormatError("<msgId>", None, f"{msg_id!r} is neither an offset msgId nor a client message ID (UNIQ_KEY): both are "
                               "32 (IPv4) or 56 (IPv6) hex digits") from None
    if store.commitlog.min_offset <= offset < store.commitlog.served_end():
        try:
            rec = _as_served(store, offset, None)
        except StoreFormatError as err:
            why = f"as an offset msgId it names offset {offset}, where no record starts ({err.message})"
        else:
            same = "" if rec.msg_id == text else f" (the record there has msgId {rec.msg_id}: another store host)"
            return MessageIdAnswer(OFFSET_MSG_ID, [rec], f"{msg_id} read as an {OFFSET_MSG_ID}: host {host}:{port}, physical offset {offset}{same}")
    else:
        why = f"as an offset msgId it names offset {offset}, outside the log [{store.commitlog.min_offset}, {store.commitlog.served_end()})"
    topics = [topic] if topic else sorted({q.topic for q in store.queue_ids()})
    found: list = []
    for t in topics:
        found += query_by_key(store, t, text, uniq_type=uniq_type).records
        if uniq_type:
            found += query_by_key(store, t, text, index_type="U", uniq_type=uniq_type).records
    found = sorted({r.physical_offset: r for r in found if r.java_properties.get(props.UNIQ_KEY) == text}.values(), key=lambda r: r.physical_offset)
    where = f"topic {topic}" if topic else f"the {len(topics)} topic(s) of the store"
    if found:
        return MessageIdAnswer(CLIENT_MSG_ID, found, f"{msg_id} read as a {CLIENT_MSG_ID}, looked up in the index under {where} ({why})")
    return MessageIdAnswer(None, [], f"{msg_id}: {why}; nor is it the UNIQ_KEY of a record the index holds under {where}")


# -- by time ---------------------------------------------------------------------------------
def _java_div(a: int, b: int) -> int:
    """Java's long division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def pickup_store_timestamp(store: StoreReader, offset: int, size: int) -> int:
    """Java ``CommitLog.pickupStoreTimestamp``: the storeTimestamp field of the bytes at
    ``offset`` (found through sysFlag's born-host kind, nothing else checked), or -1
    when ``[offset, offset + size)`` is not inside the log."""
    if size <= 0 or not (offset >= store.commitlog.min_offset and offset + size <= store.commitlog.served_end()):
        return -1
    f = store.commitlog.queue.find(offset)
    if f is None:
        return -1
    ts = store_timestamp_at(f.buf, offset - f.file_from_offset)
    return -1 if ts is None else ts


def offset_by_time(store: StoreReader, topic: str, queue_id: int, timestamp: int, boundary: BoundaryType | str = BoundaryType.LOWER) -> int:
    """Java ``DefaultMessageStore.getOffsetInQueueByTime`` (5.3), step for step, so that
    it answers as RocketMQ does on damaged stores too: choose the consume-queue file by
    the store times of its first and last units (``MappedFileQueue
    .getConsumeQueueMappedFileByTime``), binary-search it reading each unit's record's
    storeTimestamp (``ConsumeQueue.binarySearchInQueueByTime``; a time that cannot be
    read answers 0), clamp to the queue's range.

    LOWER: the first offset whose record was stored at or after ``timestamp``
    (one past the last when none is).  UPPER: the last offset stored at or before
    it (the minimum when none is).

    >>> from rmqlab import open_store
    >>> from rmqlab.lab.samples import shipped_dir
    >>> with open_store(shipped_dir() / "clean") as store:   # 10:01:00 on the sample clock
    ...     offset_by_time(store, "Orders", 1, 1767261660000), offset_by_time(store, "Orders", 1, 1767261660000, "UPPER")
    (76, 75)
    """
    boundary = BoundaryType(boundary)
    cq = store.consume_queue(topic, queue_id)
    lo, hi = cq.valid_range(store.commitlog.min_offset)
    own = getattr(cq, "offset_by_time", None)
    if own is not None:  # a queue kind with its own getOffsetInQueueByTime (RocksDB, batch), then clamped
        return max(lo, min(own(timestamp, boundary.value, store.commitlog.min_offset), hi))
    files = cq.queue.files
    if not files:
        return max(lo, min(0, hi))
    unit = CQ_STORE_UNIT_SIZE

    def read_unit(f, pos: int) -> tuple[int, int]:
        b = bytes(f.buf[pos : pos + unit])
        return int.from_bytes(b[0:8], "big", signed=True), int.from_bytes(b[8:12], "big", signed=True)

    def time_at(f, pos: int) -> int:
        phy, size = read_unit(f, pos)
        return pickup_store_timestamp(store, phy, size)

    def known(t: int) -> int:  # Java caches a file's start/stop time only when it is > 0
        return t if t > 0 else -1

    # the file: by its first and last units' times
    last = len(files) - 1
    if boundary is BoundaryType.LOWER:
        chosen = next((f for f in files[:last] if known(time_at(f, len(f.buf) - unit)) >= timestamp), files[last])
    else:
        chosen = next((f for f in reversed(files) if known(time_at(f, 0)) <= timestamp), None)
    if chosen is None:
        return max(lo, min(0, hi))
    result = _search_file(store, chosen, timestamp, boundary, lo * unit, hi * unit, read_unit, time_at)
    return max(lo, min(result, hi))


def _search_file(store: StoreReader, f, timestamp: int, boundary: BoundaryType, min_logic: int, end_logic: int, read_unit, time_at) -> int:
    """Java ``ConsumeQueue.binarySearchInQueueByTime`` over one consume-queue file."""
    unit = CQ_STORE_UNIT_SIZE
    base = f.file_from_offset
    size = len(f.buf)
    low = min_logic - base if min_logic > base else 0
    wrote = end_logic - base  # the write position Java's recovery left in this file
    ceiling = (wrote if 0 < wrote < size else size) - unit
    floor, high = low, ceiling
    lower = boundary is BoundaryType.LOWER
    if ceiling < 0:
        return 0
    if time_at(f, ceiling) < timestamp:
        return _java_div(base + ceiling + unit if lower else base + ceiling, unit)
    if time_at(f, floor) > timestamp:
        return _java_div(base, unit) if lower else 0
    min_phy = store.commitlog.min_offset
    target = left = right = -1
    while high >= low:
        mid = (low + high) // (2 * unit) * unit
        phy, sz = read_unit(f, mid)
        if phy < min_phy:
            low, left = mid + unit, mid
            continue
        t = pickup_store_timestamp(store, phy, sz)
        if t < 0:
            return 0
        if t == timestamp:
            target = mid
            break
        if t > timestamp:
            high, right = mid - unit, mid
        else:
            low, left = mid + unit, mid
    if target != -1:
        # neighbours may share the time: LOWER walks back to the first, UPPER forward to the last
        step = -unit if lower else unit
        offset = target
        while (offset + step >= floor) if lower else (offset + step <= ceiling):
            if time_at(f, offset + step) != timestamp:
                break
            offset += step
    else:
        # no record at exactly that time: the first after it (LOWER), the last before it (UPPER)
        offset = right if lower else left
    return _java_div(base + offset, unit)


# -- consumer progress ---------------------------------------------------------------------
@dataclass
class QueueProgress:
    """One queue of one consumer group, as ``mqadmin consumerProgress`` shows it after
    the store's next start (Java ``AdminBrokerProcessor.getConsumeStats``: brokerOffset
    = the queue's max offset, consumerOffset = the committed one, 0 when the group
    committed none; diff = lag).  ``max_offset`` is the queue's end once that start has
    cut the units past the end of the log (:func:`served_range`); ``units_cut`` says
    how many it cuts, ``unconsumed_cut`` how many of those the group had not consumed:
    they are gone, and not in ``lag`` (the same count as the recovery report's
    ``GroupLoss.unconsumed_lost``).  :func:`consumer_progress` gives them.  A group that
    had consumed into what a crash cuts:

    >>> from rmqlab import open_store
    >>> from rmqlab.lab.samples import shipped_dir
    >>> from rmqlab.store.metadata import read_consumer_offsets
    >>> crashed = shipped_dir() / "crashed"
    >>> with open_store(crashed) as store:
    ...     billing = consumer_progress(store, read_consumer_offsets(crashed), "billing")[0].to_dict()
    >>> [billing[k] for k in ("committed_offset", "max_offset", "lag", "units_cut", "unconsumed_cut")]
    [124, 122, -2, 2, 0]
    >>> print(billing["note"])
    committed offset 124 is in the 2 unit(s) the next start cuts: the queue then ends at 122, a pull is answered OFFSET_OVERFLOW_BADLY and a master moves the group to the queue's end of that moment
    """

    group: str
    topic: str
    queue_id: int
    committed_offset: int | None  # None: the group committed nothing for this queue
    min_offset: int
    max_offset: int
    lag: int  # max_offset - (committed_offset or 0); negative: committed past the end
    next_store_timestamp: int | None  # store time of the next message to consume, if any
    note: str | None = None
    units_cut: int = 0  # the queue's last offsets the next start cuts (past the end of the log)
    unconsumed_cut: int = 0  # of those, the ones at or past the committed offset: lost to this group

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def consumer_progress(store: StoreReader, offsets, group: str | None = None) -> list[QueueProgress]:
    """Every queue of every ``topic@group`` of ``offsets``
    (:class:`rmqlab.store.metadata.ConsumerOffsets`), and the other queues of the
    topic the store holds, as the store's next start leaves them: committed offset, the
    queue's [min, max) after the cut of units past the end of the log, the lag, the
    store time of the next message to consume, what the cut takes from the group.  A
    committed offset past the queue's end (a crash that rolled the queue back, or the
    cut) gives a negative lag and a note; one below its min offset, a note (those
    messages were cleaned up).

    >>> from rmqlab import open_store
    >>> from rmqlab.lab.samples import shipped_dir
    >>> from rmqlab.store.metadata import read_consumer_offsets
    >>> root = shipped_dir() / "damaged"
    >>> with open_store(root) as store:
    ...     p = consumer_progress(store, read_consumer_offsets(root), "analytics")[0]
    >>> p.topic, p.queue_id, p.committed_offset, p.max_offset, p.lag, p.unconsumed_cut
    ('Orders', 0, 62, 114, 52, 10)
    """
    present: dict[str, set[int]] = {}
    for q in store.queue_ids():
        present.setdefault(q.topic, set()).add(q.queue_id)
    ranges: dict[tuple[str, int], tuple[int, int, int] | StoreFormatError] = {}

    def served(topic: str, qid: int):
        if (topic, qid) not in ranges:  # once per queue, however many groups read it
            try:
                ranges[topic, qid] = served_range(store, topic, qid)
            except StoreFormatError as err:
                ranges[topic, qid] = err
        return ranges[topic, qid]

    out = []
    for (topic, g), queues in sorted(offsets.table.items()):
        if group is not None and g != group:
            continue
        for qid in sorted(set(queues) | present.get(topic, set())):
            committed = queues.get(qid)
            note = None
            lo = hi = cut = 0
            if qid in present.get(topic, set()):
                r = served(topic, qid)
                if isinstance(r, StoreFormatError):
                    note = f"the consume queue cannot be read: {r}"
                else:
                    lo, hi, cut = r
            else:
                note = "no consume queue in the store (the committed offset refers to nothing here)"
            consumer = committed if committed is not None else 0
            unconsumed_cut = max(0, hi + cut - max(consumer, hi)) if cut else 0
            nxt = None
            if committed is not None and committed > hi:
                if cut and committed <= hi + cut:
                    # DefaultMessageStore.getMessage: offset > maxOffset, nextOffsetCorrection on a master
                    note = note or (f"committed offset {committed} is in the {cut} unit(s) the next start cuts: the queue then ends at {hi}, "
                                    "a pull is answered OFFSET_OVERFLOW_BADLY and a master moves the group to the queue's end of that moment")
                else:
                    note = note or f"committed offset {committed} is past the queue's end {hi}: the queue lost its tail (a crash or a recovery cut it) after the group consumed it"
            elif committed is not None and committed < lo:
                note = note or f"committed offset {committed} is below the queue's min offset {lo}: those messages were deleted; the group resumes at {lo}"
            if note is None and max(consumer, lo) < hi:
                try:
                    _, rec = get_message(store, topic, qid, max(consumer, lo))
                    nxt = rec.store_timestamp
                except StoreFormatError as err:
                    note = f"the next message cannot be read: {err}"
            out.append(QueueProgress(g, topic, qid, committed, lo, hi, hi - consumer, nxt, note, cut, unconsumed_cut))
    return out
