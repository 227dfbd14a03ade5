"""Keys and transactions kept in RocksDB (``rocksdbstore/``, RocketMQ 5.4+), written as
RocketMQ's dispatch writes them: what recovery's re-dispatch puts there.

Java: ``IndexRocksDBStore.buildIndex`` (``indexRocksDBEnable``; the ``default`` family)
and ``TransMessageRocksDBStore.buildTransIndex`` (``transRocksDBEnable``; ``trans``),
both registered as dispatchers (``DefaultMessageStore.CommitLogDispatcherBuildIndex`` /
``CommitLogDispatcherBuildTransIndex``) and written in batches by their service threads
through ``MessageRocksDBStorage.writeRecordsForIndex`` / ``writeRecordsForTrans``.
Each skips a record below its family's ``lastOffsetPy``, so re-dispatching a tail
writes only what lies at or past it.  Timers (``timerRocksDBEnable``) are not fed by
dispatch: recovery leaves that family alone.  The layouts are
:mod:`rmqlab.format.rocksdb_message`'s.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from ..files.rocksdb import close_writable, open_writable
from ..format import properties as props
from ..format.commitlog import TRANSACTION_MASK, TRANSACTION_ROLLBACK_TYPE
from ..format.rocksdb_message import (INDEX_KEY_TYPE, INDEX_TAG_TYPE, INDEX_UNIQUE_TYPE, KEY_SPLIT, LAST_OFFSET_PY, LAST_STORE_TIMESTAMP, TRANS_COLUMN_FAMILY,
                                      IndexEntry, IndexRocksDBValue, TransRocksDBKey, TransRocksDBValue, deal_time_to_hour_stamps, index_key)
from ..rules import TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC


def _long(v: bytes | None) -> int | None:
    return int.from_bytes(v[:8], "big", signed=True) if v is not None and len(v) >= 8 else None


def index_entries(topic: str, keys: str | None, tags: str | None, uniq_key: str | None, store_time: int, offset: int) -> list[IndexEntry]:
    """Java ``IndexRocksDBStore.buildIndex`` for one record that passed its checks: one
    entry per distinct non-empty KEYS token, one for TAGS, then the UNIQ_KEY's (none
    without a topic, a UNIQ_KEY or a store time)."""
    if not topic or not uniq_key or store_time <= 0 or offset < 0:
        return []
    hour = deal_time_to_hour_stamps(store_time)
    out = [IndexEntry(hour, topic, INDEX_KEY_TYPE, k, uniq_key, offset, store_time) for k in dict.fromkeys((keys or "").split(props.KEY_SEPARATOR)) if k]
    if tags:
        out.append(IndexEntry(hour, topic, INDEX_TAG_TYPE, tags, uniq_key, offset, store_time))
    out.append(IndexEntry(hour, topic, INDEX_UNIQUE_TYPE, None, uniq_key, offset, store_time))
    return out


def trans_key(offset: int, real_topic: str, transaction_id: str) -> bytes:
    """Java ``TransRocksDBRecord.getKeyBytes``: the half message's offset, ``@topic@id``."""
    return TransRocksDBKey.build(dict(offset_py=offset, suffix=(KEY_SPLIT + real_topic + KEY_SPLIT + transaction_id).encode("utf-8")))


class MessageRocksDBWriter:
    """``rocksdbstore/`` opened for writing (Java ``MessageRocksDBStorage``), fed the
    records dispatch hands on in commitlog order.  ``index`` / ``trans``: which writers
    the broker runs (``indexRocksDBEnable`` / ``transRocksDBEnable``);
    ``read_properties(offset)``: the properties of the record at ``offset``
    (``TransMessageRocksDBStore.getMessage``: the op and half messages' REAL_TOPIC,
    transaction id and TRANS_OFFSET are not in the dispatch request)."""

    def __init__(self, directory: str | os.PathLike, *, index: bool, trans: bool, read_properties: Callable[[int], dict] | None = None):
        from rocksdict import Options, Rdict

        self.directory = Path(directory)
        families = Rdict.list_cf(str(self.directory), Options(raw_mode=True))
        self.db = open_writable(self.directory, "RocksDB of keys and transactions")
        self.index = index
        self.trans = trans and TRANS_COLUMN_FAMILY in families  # (MessageRocksDBStorage makes every family at its first open)
        self.read_properties = read_properties
        self._trans_cf = self.db.get_column_family(TRANS_COLUMN_FAMILY) if self.trans else None
        self._trans_handle = self.db.get_column_family_handle(TRANS_COLUMN_FAMILY) if self.trans else None

    def last_offset_py(self, trans: bool = False) -> int:
        """Java ``MessageRocksDBStorage.getLastOffsetPy`` (0 without the key)."""
        return _long((self._trans_cf if trans else self.db).get(LAST_OFFSET_PY)) or 0

    def dispatch(self, requests) -> None:
        """One batch of dispatch requests (``DispatchRequest`` s, or rows of
        ``DispatchColumns`` as requests), in commitlog order."""
        from rocksdict import WriteBatch

        if self.index:
            wb, last = WriteBatch(raw_mode=True), None
            start = self.last_offset_py()
            for r in requests:
                # buildIndex: below lastOffsetPy skipped, ROLLBACK skipped
                if r.commitlog_offset < start or r.msg_size <= 0 or (r.sys_flag & TRANSACTION_MASK) == TRANSACTION_ROLLBACK_TYPE:
                    continue
                got = index_entries(r.topic, r.keys, r.tags, r.uniq_key, r.store_timestamp, r.commitlog_offset)
                for e in got:
                    wb.put(index_key(e), IndexRocksDBValue.build(dict(store_time=e.store_time)))
                if got:
                    last = got[-1]
            if last is not None:
                # writeRecordsForIndex: a batch ending with a UNIQ_KEY entry moves both marks forward
                if last.offset_py > start:
                    wb.put(LAST_OFFSET_PY, last.offset_py.to_bytes(8, "big", signed=True))
                if last.store_time > (_long(self.db.get(LAST_STORE_TIMESTAMP)) or 0):
                    wb.put(LAST_STORE_TIMESTAMP, last.store_time.to_bytes(8, "big", signed=True))
                self.db.write(wb)
        if self.trans:
            self._dispatch_trans(requests)

    def _dispatch_trans(self, requests) -> None:
        """``buildTransIndex`` then ``writeRecordsForTrans``: a half message's key (check
        times 0, its size) put, an op message's half message's key deleted;
        ``lastOffsetPy`` the furthest half message put."""
        from rocksdict import WriteBatch

        start = self.last_offset_py(trans=True)
        wb, furthest, n = WriteBatch(raw_mode=True), 0, 0
        for r in requests:
            if r.topic not in (TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC) or r.commitlog_offset < start or r.msg_size <= 0:
                continue
            p = self.read_properties(r.commitlog_offset) if self.read_properties else {}
            real, tid = p.get(props.REAL_TOPIC), p.get(props.TRANSACTION_ID)
            if not real or not tid:
                continue  # (Java logs "buildTransIndex error" and skips it)
            if r.topic == TRANS_HALF_TOPIC:
                wb.put(trans_key(r.commitlog_offset, real, tid), TransRocksDBValue.build(dict(check_times=0, size_py=r.msg_size)), self._trans_handle)
                furthest = max(furthest, r.commitlog_offset)
            else:
                try:
                    half = int(p.get(props.TRANS_OFFSET) or "")
                except ValueError:
                    continue
                if half >= 0:
                    wb.delete(trans_key(half, real, tid), self._trans_handle)
            n += 1
        if furthest > 0 and furthest > start:
            wb.put(LAST_OFFSET_PY, furthest.to_bytes(8, "big", signed=True), self._trans_handle)
        if n:
            self.db.write(wb)

    def close(self) -> None:
        if self.db is not None:
            close_writable(self.db, self.directory)
            self.db = None

    def __enter__(self) -> "MessageRocksDBWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["MessageRocksDBWriter", "index_entries", "trans_key"]
