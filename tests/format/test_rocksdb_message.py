"""The key and value layouts of rocksdbstore/ (rmqlab.format.rocksdb_message), each rule
from the Java named in the module; the stores RocketMQ 5.4.0/5.5.0 write are read in
tests/oracle/test_rocksdb_message_store.py."""

from __future__ import annotations

import pytest

from rmqlab.format.rocksdb_message import (IndexEntry, TimerRecord, TransRecord, deal_time_to_hour_stamps, index_key, index_seek_key, parse_index_entry,
                                           parse_timer_record, parse_trans_record)

T = 1_795_738_648_056


@pytest.mark.parametrize("index_type,key", [("K", "order-1"), ("K", "a@b"), ("T", "TagA||TagB"), ("U", None), ("K", "ключ")])
def test_an_index_entry_reads_back_as_written(index_type, key):
    """IndexRocksDBRecord.getKeyBytes: hour, "@topic@type@[key@]uniq@", offset; a KEYS
    token holding '@' still parses (the UNIQ_KEY, hex, is the last part)."""
    e = IndexEntry(deal_time_to_hour_stamps(T), "TopicA", index_type, key, "0A0B0C", 123456, T)
    k = index_key(e)
    assert k.startswith(index_seek_key(e.store_time_hour, "TopicA", index_type, key if key is not None else "0A0B0C"))
    assert parse_index_entry(k, T.to_bytes(8, "big")) == e


def test_hours_cut_as_java_does():
    assert deal_time_to_hour_stamps(T) % 3_600_000 == 0 and 0 <= T - deal_time_to_hour_stamps(T) < 3_600_000
    assert deal_time_to_hour_stamps(0) == 0 and deal_time_to_hour_stamps(-5) == -5


@pytest.mark.parametrize("key,value,why", [
    (b"\0" * 10, b"\0" * 8, "too short"),
    (b"\0" * 8 + b"@T@X@k@u@" + b"\0" * 8, b"\0" * 8, "type 'X'"),
    (b"\0" * 8 + b"@T@K@u@" + b"\0" * 8, b"\0" * 8, "without its KEYS token"),
    (b"\0" * 8 + b"@T@U@u@" + b"\0" * 8, b"\0" * 4, "value of 4 bytes"),
    (b"\0" * 8 + b"@T@U@\xff@" + b"\0" * 8, b"\0" * 8, "not UTF-8 (byte 13)"),
])
def test_index_keys_rocketmq_never_writes_are_named(key, value, why):
    got = parse_index_entry(key, value)
    assert isinstance(got, str) and why in got


def test_a_transaction_record_splits_as_java_splits():
    """TransRocksDBRecord.decode: the suffix splits on '@' into exactly three parts
    (Java's String.split drops trailing empty strings)."""
    key = (110072).to_bytes(8, "big") + b"@TopicTx@TX001"
    value = (2).to_bytes(4, "big") + (226).to_bytes(4, "big")
    assert parse_trans_record(key, value) == TransRecord(110072, "TopicTx", "TX001", 2, 226)
    assert parse_trans_record(key + b"@", value) == TransRecord(110072, "TopicTx", "TX001", 2, 226)
    assert "3" in parse_trans_record(key + b"@x", value)
    assert "value of 7" in parse_trans_record(key, value[:7])


def test_a_timer_record():
    key = T.to_bytes(8, "big") + b"7F0000011F4A"
    value = (300).to_bytes(4, "big") + (4096).to_bytes(8, "big")
    assert parse_timer_record(key, value) == TimerRecord(T, "7F0000011F4A", 300, 4096)
    assert isinstance(parse_timer_record(key, value[:8]), str)
