"""Each construct schema both ways: parse(bytes) gives the fields, build(fields) gives
the same bytes, and the compiled parser agrees — on real bytes written by RocketMQ."""

from __future__ import annotations

import struct
import zlib

import pytest
from construct import StreamError

from tests.support import REFERENCE, UNDAMAGED
from rmqlab.format import commitlog as cl
from rmqlab.format.checkpoint import CheckpointV4, CheckpointV5, min_timestamp
from rmqlab.format.consumequeue import ConsumeQueueEntry
from rmqlab.format.indexfile import INDEX_HEADER_SIZE, IndexEntry, IndexHeader, index_file_size
from rmqlab.store import open_store


def records_of(case):
    store = open_store(REFERENCE / case / "store")
    for rec in store.commitlog.iter_records(include_blank=True):
        yield rec, store.commitlog.read_bytes(rec.physical_offset, 8 if rec.is_blank else rec.total_size)


@pytest.mark.parametrize("case", UNDAMAGED)
def test_message_record_roundtrip_on_rocketmq_bytes(case):
    compiled = cl.MessageRecord.compile()
    n = 0
    for rec, raw in records_of(case):
        if rec.is_blank:
            parsed = cl.BlankRecord.parse(raw)
            assert parsed.total_size == rec.total_size
            assert cl.BlankRecord.build(parsed) == raw
            continue
        parsed = cl.MessageRecord.parse(raw)
        # parse gives the fields the fast decoder gives
        assert parsed.total_size == rec.total_size == len(raw)
        assert parsed.magic == rec.magic
        assert parsed.body_crc == rec.body_crc == zlib.crc32(parsed.body) & 0x7FFFFFFF
        assert (parsed.queue_id, parsed.flag, parsed.queue_offset) == (rec.queue_id, rec.flag, rec.queue_offset)
        assert parsed.physical_offset == rec.stored_physical_offset == rec.physical_offset
        assert parsed.sys_flag == rec.sys_flag
        assert (parsed.born_host.address, parsed.born_host.port) == rec.born_host
        assert (parsed.store_host.address, parsed.store_host.port) == rec.store_host
        assert parsed.store_timestamp == rec.store_timestamp
        assert parsed.body == rec.body and parsed.topic == rec.topic_raw and parsed.properties == rec.properties_raw
        # build gives the same bytes, with totalSize and lengths rebuilt from the parts
        assert cl.MessageRecord.build(parsed) == raw
        fields = {k: v for k, v in parsed.items() if not k.startswith("_") and k not in ("total_size", "len_body", "len_topic", "len_properties")}
        assert cl.MessageRecord.build(fields) == raw
        assert compiled.parse(raw) == parsed
        n += 1
    assert n > 600


def test_v2_topic_length_is_two_bytes_and_ipv6_hosts_are_twenty():
    store = open_store(REFERENCE / "v2ipv6" / "store")
    long_rec = next(r for r in store.commitlog.iter_records() if len(r.topic_raw) > 127)
    assert long_rec.magic == cl.MAGIC_V2
    assert long_rec.sys_flag & cl.FLAG_STOREHOST_V6 and len(long_rec.store_host[0]) == 16
    assert long_rec.total_size == cl.record_size(len(long_rec.body), len(long_rec.topic_raw), len(long_rec.properties_raw), long_rec.sys_flag, True)


def test_record_schema_rejects_short_bytes():
    with pytest.raises(StreamError):
        cl.MessageRecord.parse(b"\x00\x00\x00\x80\xda\xa3\x20\xa7" + b"\x00" * 20)


def test_blank_record_magic_is_checked():
    assert cl.BlankRecord.build({"total_size": 22}) == struct.pack(">iI", 22, 0xCBD43194)
    with pytest.raises(Exception):
        cl.BlankRecord.parse(struct.pack(">iI", 22, 0xDAA320A7))


@pytest.mark.parametrize("case", UNDAMAGED)
def test_consume_queue_entry_both_ways(case):
    for path in sorted((REFERENCE / case / "store" / "consumequeue").rglob("0000*")):
        data = path.read_bytes()
        for p in range(0, len(data), 20):
            raw = data[p : p + 20]
            e = ConsumeQueueEntry.parse(raw)
            assert (e.commitlog_offset, e.size, e.tags_code) == struct.unpack(">qiq", raw)
            assert ConsumeQueueEntry.build(e) == raw


@pytest.mark.parametrize("case", UNDAMAGED)
def test_index_header_and_entries_both_ways(case):
    for path in sorted((REFERENCE / case / "store" / "index").iterdir()):
        data = path.read_bytes()
        assert len(data) == index_file_size(64, 256)
        h = IndexHeader.parse(data[:INDEX_HEADER_SIZE])
        assert IndexHeader.build(h) == data[:INDEX_HEADER_SIZE]
        assert 1 <= h.index_count <= 256 and h.begin_timestamp <= h.end_timestamp
        base = INDEX_HEADER_SIZE + 64 * 4
        for n in range(1, h.index_count):
            raw = data[base + n * 20 : base + n * 20 + 20]
            e = IndexEntry.parse(raw)
            assert IndexEntry.build(e) == raw
            assert 0 <= e.prev_index < n  # chains only point backwards


@pytest.mark.parametrize("case", UNDAMAGED)
def test_checkpoint_both_layouts(case, dumps):
    data = (REFERENCE / case / "store" / "checkpoint").read_bytes()
    expected = dumps[case]["beforeLoad"]["checkpoint"]
    c5 = CheckpointV5.parse(data)
    assert c5.physic_msg_timestamp == expected["physicMsgTimestamp"]
    assert c5.logics_msg_timestamp == expected["logicsMsgTimestamp"]
    assert c5.index_msg_timestamp == expected["indexMsgTimestamp"]
    assert c5.master_flushed_offset == expected["masterFlushedOffset"]
    assert c5.confirm_phy_offset == expected["confirmPhyOffset"]
    assert c5.logics_physical_offset == 0  # 5.3.3 writes five longs; the sixth (5.5+) reads as the page's zeros
    assert CheckpointV5.build(c5) == data[: CheckpointV5.sizeof()]
    c4 = CheckpointV4.parse(data)
    assert CheckpointV4.build(c4) == data[:24]
    assert min_timestamp(c5.physic_msg_timestamp, c5.logics_msg_timestamp) == min(c5.physic_msg_timestamp, c5.logics_msg_timestamp) - 3000
    assert min_timestamp(1000, 2000) == 0
