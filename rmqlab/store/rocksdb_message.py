"""Keys, timers and transactions kept in RocksDB (RocketMQ 5.4+), read-only.

Java: ``MessageRocksDBStorage`` (``rocksdbstore/``) and the three stores writing into
it: ``IndexRocksDBStore`` (``indexRocksDBEnable``: every KEYS token, TAGS and UNIQ_KEY of
every record, by hour), ``TransMessageRocksDBStore`` (``transRocksDBEnable``: the
transaction half messages not yet ended) and ``TimerMessageRocksDBStore``
(``timerRocksDBEnable``: timer messages by delivery time).  The layouts are
:mod:`rmqlab.format.rocksdb_message`'s; the instance is opened through
:class:`rmqlab.files.rocksdb.ReadOnlyRocksDB`, so reading writes nothing beside it.

Which settings were on is not written anywhere in the store: a family holding keys says
its writer ran.  :func:`dispatch_stores` says which of them RocketMQ's start-up asks where
recovery may start (``CommitLogDispatchStore``), from the settings when given, else from
what the families hold.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..files.rocksdb import ReadOnlyRocksDB, is_rocksdb_dir
from ..format.rocksdb_message import (INDEX_KEY_TYPE, INDEX_UNIQUE_TYPE, LAST_OFFSET_PY, LAST_STORE_TIMESTAMP, MILLS_FOR_HOUR, SYS_TOPIC_SCAN_OFFSET_CHECK_POINT,
                                      TIMELINE_CHECK_POINT, TIMER_COLUMN_FAMILY, TRANS_COLUMN_FAMILY, TimerRecord, TransRecord,
                                      deal_time_to_hour_stamps, index_seek_key, parse_index_entry, parse_timer_record, parse_trans_record)
from ..rules import LONG_MAX, MESSAGE_ROCKSDB_DIR

_SPECIAL_INDEX_KEYS = (LAST_OFFSET_PY, LAST_STORE_TIMESTAMP)
_TIMER_CHECKPOINTS = (SYS_TOPIC_SCAN_OFFSET_CHECK_POINT, TIMELINE_CHECK_POINT)


def holds_data(directory: str | os.PathLike) -> list[str]:
    """The files that say ``rocksdbstore/`` holds data: table files, or a non-empty
    write-ahead log (a 5.4+ broker opens it on every start, so an empty one is in every
    5.4+ store).  Empty: none of its writers ever wrote."""
    d = Path(directory)
    if not d.is_dir():
        return []
    return sorted(f.name for f in d.iterdir() if f.is_file() and (f.name.endswith((".sst", ".blob")) or (f.name.endswith(".log") and f.stat().st_size > 0)))


def _long(value: bytes | None) -> int | None:
    return None if value is None or len(value) != 8 else int.from_bytes(value, "big", signed=True)


@dataclass
class Malformed:
    """A key of a family that its writer would not have written (``why``)."""

    family: str
    key: bytes
    why: str


class MessageRocksDBStore:
    """``rocksdbstore/``'s RocksDB, opened read-only (Java ``MessageRocksDBStorage``)."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        self.rocksdb = ReadOnlyRocksDB(self.directory, "key, timer and transaction store")
        self._timer = self.rocksdb.family(TIMER_COLUMN_FAMILY)
        self._trans = self.rocksdb.family(TRANS_COLUMN_FAMILY)
        self.malformed: list[Malformed] = []

    @classmethod
    def of(cls, root: str | os.PathLike) -> "MessageRocksDBStore | None":
        """The store's ``rocksdbstore/``, or None when it has none (before 5.4)."""
        d = Path(root) / MESSAGE_ROCKSDB_DIR
        return cls(d) if is_rocksdb_dir(d) else None

    def close(self) -> None:
        self.rocksdb.close()

    def __enter__(self) -> "MessageRocksDBStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _get(self, family, key: bytes) -> bytes | None:
        src = self.rocksdb.db if family is None else family
        return src.get(key)

    # -- progress ---------------------------------------------------------------------------
    def last_offset_py(self, family: str = "default") -> int:
        """Java ``MessageRocksDBStorage.getLastOffsetPy``: the commitlog offset the family's
        writer has written up to (0 when it never wrote)."""
        fam = None if family == "default" else self.rocksdb.family(family)
        if family != "default" and fam is None:
            return 0
        return _long(self._get(fam, LAST_OFFSET_PY)) or 0

    def index_last_store_timestamp(self) -> int:
        """Java ``getLastStoreTimeStampForIndex`` (0 when never written)."""
        return _long(self._get(None, LAST_STORE_TIMESTAMP)) or 0

    def timer_checkpoints(self) -> dict[str, int | None]:
        """The timer family's two checkpoints (Java ``getCheckpointForTimer``; None when absent)."""
        if self._timer is None:
            return {}
        return {k.decode(): _long(self._timer.get(k)) for k in _TIMER_CHECKPOINTS}

    # -- what each family holds -------------------------------------------------------------
    def index_entries(self, start: bytes | None = None, end: bytes | None = None):
        """Every entry of the key index in key order (hour, topic, type, key), from
        ``start`` to ``end``; keys that are not ``IndexRocksDBRecord``'s go to
        :attr:`malformed`."""
        for k, v in self.rocksdb.items(None, start, end):
            if k in _SPECIAL_INDEX_KEYS:
                continue
            e = parse_index_entry(k, v)
            if isinstance(e, str):
                self.malformed.append(Malformed("default", k, e))
                continue
            yield e

    def has_index(self) -> bool:
        return next(self.index_entries(), None) is not None or self.last_offset_py() > 0

    def _family_records(self, family, family_name: str, skip, parse) -> list:
        """Every key of a family but ``skip`` (its writer's bookkeeping keys) parsed;
        keys its writer would not write go to :attr:`malformed`."""
        out = []
        if family is None:
            return out
        for k, v in self.rocksdb.items(family):
            if k in skip:
                continue
            r = parse(k, v)
            if isinstance(r, str):
                self.malformed.append(Malformed(family_name, k, r))
            else:
                out.append(r)
        return out

    def transactions(self) -> list[TransRecord]:
        """Every half message not yet ended, by offset (Java ``scanRecordsForTrans``)."""
        return self._family_records(self._trans, TRANS_COLUMN_FAMILY, (LAST_OFFSET_PY,), parse_trans_record)

    def has_transactions(self) -> bool:
        return self._trans is not None and next(iter(self.rocksdb.items(self._trans)), None) is not None

    def timers(self) -> list[TimerRecord]:
        """Every timer message waiting, by delivery time (Java ``scanRecordsForTimer``)."""
        return self._family_records(self._timer, TIMER_COLUMN_FAMILY, _TIMER_CHECKPOINTS, parse_timer_record)

    def has_timers(self) -> bool:
        return self._timer is not None and next(iter(self.rocksdb.items(self._timer)), None) is not None

    # -- lookups ----------------------------------------------------------------------------
    def hours(self):
        """The hours the key index holds entries of, ascending (one seek per hour)."""
        hour_key = b""
        while True:
            first = next((k for k, _ in self.rocksdb.items(None, hour_key) if k not in _SPECIAL_INDEX_KEYS and len(k) >= 8), None)
            if first is None:
                return
            hour = int.from_bytes(first[:8], "big", signed=True)
            if hour < 0:
                return
            yield hour
            if hour >= LONG_MAX - MILLS_FOR_HOUR:
                return
            hour_key = (hour + 1).to_bytes(8, "big")

    def query_offset_for_index(self, topic: str, index_type: str, key: str, begin: int = 0, end: int = LONG_MAX, max_num: int = 2**31 - 1) -> list[int]:
        """Java ``MessageRocksDBStorage.queryOffsetForIndex``: for each hour of the window,
        ascending, the entries starting with ``hour@topic@type@key@`` whose store time lies
        in ``[begin, end]``, in key order, at most ``max_num``.  An unbounded window (the
        default) takes every hour the index holds, where the broker's
        ``IndexRocksDBStore.queryOffset`` takes the last ``maxRocksDBIndexQueryDays`` by
        its own clock: a capture is read at another time than it was written."""
        if begin <= 0 and end >= LONG_MAX:
            hours = list(self.hours())
        else:
            lo, hi = deal_time_to_hour_stamps(max(begin, 1)), deal_time_to_hour_stamps(end)
            hours = [h for h in self.hours() if lo <= h <= hi]
        out: list[int] = []
        for hour in hours:
            prefix = index_seek_key(hour, topic, index_type, key)
            for k, v in self.rocksdb.items(None, prefix):
                if not k.startswith(prefix):
                    break
                e = parse_index_entry(k, v)
                if isinstance(e, str):
                    continue
                if begin <= e.store_time <= end:
                    out.append(e.offset_py)
                    if len(out) >= max_num:
                        return out
        return out

    def query_offset(self, topic: str, key: str, max_num: int, begin: int = 0, end: int = LONG_MAX, index_type: str | None = None) -> list[int]:
        """Java ``IndexRocksDBStore.queryOffset``: without an index type (``queryMessage``
        of an older client), the KEYS entries, else the UNIQ_KEY ones."""
        if index_type is not None:
            return self.query_offset_for_index(topic, index_type, key, begin, end, max_num)
        found = self.query_offset_for_index(topic, INDEX_KEY_TYPE, key, begin, end, max_num)
        return found or self.query_offset_for_index(topic, INDEX_UNIQUE_TYPE, key, begin, end, max_num)


@dataclass
class DispatchStores:
    """The RocksDB stores RocketMQ's start-up asks where recovery may start and re-dispatch
    from (Java ``CommitLogDispatchStore``: ``isMappedFileMatchedRecover``,
    ``getDispatchFromPhyOffset``), with each one's ``lastOffsetPy`` and why it is counted."""

    last_offsets: dict[str, int] = field(default_factory=dict)  # "IndexRocksDBStore" -> lastOffsetPy
    reasons: dict[str, str] = field(default_factory=dict)
    #: why the stores could not be read (the RocksDB binding missing): the start is then
    #: planned without them, and the plan says so
    unread: str | None = None
    #: which writers dispatch feeds ("index": IndexRocksDBStore, "trans":
    #: TransMessageRocksDBStore), whether or not the start asks them
    writers: dict[str, bool] = field(default_factory=dict)


def dispatch_stores(root: str | os.PathLike, cfg, release) -> DispatchStores:
    """Which of ``rocksdbstore/``'s writers take part in recovery under ``release`` and the
    broker settings ``cfg``: ``indexRocksDBEnable`` (5.4+), ``transRocksDBEnable`` (5.5;
    5.4 asks it only with ``transWriteOriginTransHalfEnable=false``,
    ``CommitLog.isMappedFileMatchedRecover``).  A setting not given is read from the
    store: a family holding keys says its writer ran."""
    from ..files.rocksdb import RocksDBUnavailable

    out = DispatchStores()
    if not release.capped_walk:
        return out  # (before 5.4 there is no such store)
    out.writers = {"index": bool(cfg.message_index_enable and cfg.extra_flag("indexRocksDBEnable", False)), "trans": bool(cfg.extra_flag("transRocksDBEnable", False))}
    if not holds_data(Path(root) / MESSAGE_ROCKSDB_DIR):
        return out  # empty (every 5.4+ store has it): no writer to ask
    try:
        db = MessageRocksDBStore.of(root)
    except RocksDBUnavailable as err:
        out.unread = f"{err.message}: the keys' and transactions' progress in rocksdbstore/ is not read, so RocketMQ {release.name}'s start may lie further back"
        return out
    if db is None:
        return out
    with db:
        index_on = cfg.extra_flag("indexRocksDBEnable")
        why = "indexRocksDBEnable=true" if index_on else None
        if index_on is None and db.has_index():
            index_on, why = True, "rocksdbstore/ holds keys (indexRocksDBEnable, not given, taken as on)"
        if index_on:
            out.last_offsets["IndexRocksDBStore"] = db.last_offset_py()
            out.reasons["IndexRocksDBStore"] = why
        trans_on = cfg.extra_flag("transRocksDBEnable")
        why = "transRocksDBEnable=true" if trans_on else None
        if trans_on is None and (db.has_transactions()):
            trans_on, why = True, "rocksdbstore/'s trans family holds keys (transRocksDBEnable, not given, taken as on)"
        out.writers = {"index": bool(index_on and cfg.message_index_enable), "trans": bool(trans_on)}
        if trans_on and not release.dispatch_from_all_stores and cfg.extra_flag("transWriteOriginTransHalfEnable", True):
            trans_on = False  # 5.4: only with transWriteOriginTransHalfEnable=false
        if trans_on:
            out.last_offsets["TransMessageRocksDBStore"] = db.last_offset_py(TRANS_COLUMN_FAMILY)
            out.reasons["TransMessageRocksDBStore"] = why
    return out


#: where a key lookup reads (Java DefaultMessageStore.queryMessage)
INDEX_FILES, ROCKSDB_KEYS = "index files", "RocksDB keys"


def _keys_only_in_rocksdb(store) -> bool:
    """Settings not given: the store has no index file and its ``rocksdbstore/`` holds
    keys — a broker with ``indexRocksDBEnable`` and ``indexFileWriteEnable=false``."""
    if store.index.files or not (store.root / MESSAGE_ROCKSDB_DIR).is_dir():
        return False
    try:
        db = store.message_rocksdb
        return db is not None and db.has_index()
    except Exception:  # the binding missing or RocksDB refusing: the layout reports it
        return False


def key_index_source(store) -> str:
    """Where RocketMQ's ``DefaultMessageStore.queryMessage`` looks a key up: the index
    files when ``indexFileReadEnable`` (the default), else the RocksDB keys when
    ``indexRocksDBEnable`` (5.4+, ``IndexRocksDBStore``).  Settings not given: the index
    files, unless the store has none and its ``rocksdbstore/`` holds keys."""
    file_read = store.config.extra_flag("indexFileReadEnable")
    rocks = store.config.extra_flag("indexRocksDBEnable")
    if file_read is None and rocks is None:
        return ROCKSDB_KEYS if _keys_only_in_rocksdb(store) else INDEX_FILES
    return INDEX_FILES if file_read is not False or not rocks else ROCKSDB_KEYS


def index_files_written(store) -> bool:
    """Whether dispatch writes index files (Java ``CommitLogDispatcherBuildIndex``:
    ``messageIndexEnable`` and ``indexFileWriteEnable``, 5.4+); settings not given, not
    when the store's keys are only in RocksDB."""
    cfg = store.config
    if not cfg.message_index_enable:
        return False
    written = cfg.extra_flag("indexFileWriteEnable")
    return written if written is not None else not _keys_only_in_rocksdb(store)


@dataclass
class PendingMessage:
    """A half message or timer message RocksDB keeps, with the record it names
    (``record`` None and ``problem`` said when the log does not hold it)."""

    entry: "TransRecord | TimerRecord"
    record: object | None = None
    problem: str | None = None

    def to_dict(self) -> dict:
        r = self.record
        return {**self.entry.__dict__, "problem": self.problem,
                "record": None if r is None else {"topic": r.topic, "store_timestamp": r.store_timestamp, "keys": r.java_properties.get("KEYS"),
                                                  "uniq_key": r.java_properties.get("UNIQ_KEY"), "total_size": r.total_size}}


def _with_records(store, entries) -> list[PendingMessage]:
    from ..errors import StoreFormatError

    end = store.commitlog.served_end()
    out = []
    for e in entries:
        if e.offset_py >= end or e.offset_py < store.commitlog.min_offset:
            out.append(PendingMessage(e, None, f"offset {e.offset_py} is outside the log [{store.commitlog.min_offset}, {end}): deleted, or cut by a recovery"))
            continue
        try:
            out.append(PendingMessage(e, store.commitlog.read(e.offset_py)))
        except StoreFormatError as err:
            out.append(PendingMessage(e, None, f"no readable record at offset {e.offset_py}: {err.message}"))
    return out


def transaction_messages(store) -> list[PendingMessage]:
    """The half messages ``TransMessageRocksDBStore`` holds as not ended, each with its
    record (Java ``scanRecordsForTrans``; the transaction check service asks the
    producer about each, ``checkTimes`` so far)."""
    db = store.message_rocksdb
    return [] if db is None else _with_records(store, db.transactions())


def rocksdb_timer_messages(store) -> list[PendingMessage]:
    """The timer messages ``TimerMessageRocksDBStore`` holds, by delivery time, each with
    its record (Java ``scanRecordsForTimer``)."""
    db = store.message_rocksdb
    return [] if db is None else _with_records(store, db.timers())
