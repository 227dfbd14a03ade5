"""Codecs: Java String.hashCode, tagsCode, index key hash, properties, msgId, CRCs, encoder."""

from __future__ import annotations

import zlib

import pytest

from tests.support import REFERENCE, UNDAMAGED
from rmqlab.errors import StoreFormatError
from rmqlab.format import properties as props
from rmqlab.format.commitlog import MessageRecord
from rmqlab.format.encode import encode_blank, encode_record
from rmqlab.format.hashing import body_crc, index_key_hash, java_string_hash, tags_code
from rmqlab.format.msgid import create_message_id, decode_message_id, format_host, parse_host
from rmqlab.format.record import decode_crc_digits, encode_crc_digits
from rmqlab.store import open_store


def test_java_hash_vectors_from_the_spec():
    assert java_string_hash("TagA") == 2598919
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert java_string_hash("") == 0
    # collisions the hash-chain lesson shows
    assert java_string_hash("Aa") == java_string_hash("BB")
    # non-BMP characters hash as two UTF-16 code units, as in Java
    assert java_string_hash("😀") == (31 * 0xD83D + 0xDE00)


def test_index_key_hash_abs_and_overflow():
    assert index_key_hash("polygenelubricants") == 0
    h = java_string_hash("TopicB#k1")
    assert index_key_hash("TopicB#k1") == abs(h)


def test_tags_code_matches_rocketmq_consume_queues(dumps, manifests):
    by_offset = {m["physicalOffset"]: m for m in manifests["clean"]["messages"]}
    checked = 0
    for cq in dumps["clean"]["consumeQueues"].values():
        if cq["topic"] == "SCHEDULE_TOPIC_XXXX":
            continue
        for unit in cq["cqUnits"]:
            assert tags_code(by_offset[unit["physicalOffset"]]["tags"]) == unit["tagsCode"]
            checked += 1
    assert checked > 600


def test_properties_codec_keeps_disk_order_and_java_view(manifests):
    for m in manifests["clean"]["messages"]:
        raw = m["propertiesString"].encode()
        pairs = props.decode_pairs(raw)
        assert props.encode(pairs) == raw
        assert props.to_java_map(pairs) == {k: v for k, v in m["propertiesAsPut"].items() if k and v}


def test_properties_empty_values_are_shown_but_not_seen_by_java():
    raw = b"TAGS\x01\x02KEYS\x01a b\x02\x01x\x02UNIQ_KEY\x01u1\x02UNIQ_KEY\x01u2\x02broken\x02"
    pairs = props.decode_pairs(raw)
    assert pairs == [("TAGS", ""), ("KEYS", "a b"), ("", "x"), ("UNIQ_KEY", "u1"), ("UNIQ_KEY", "u2")]
    assert props.to_java_map(pairs) == {"KEYS": "a b", "UNIQ_KEY": "u2"}
    assert props.to_ordered_dict(pairs)["TAGS"] == ""
    assert props.split_keys("k1  double-space-1") == ["k1", "double-space-1"]


def test_msg_id_roundtrip_ipv4_and_ipv6(manifests):
    for case in ("clean", "v2ipv6"):
        for m in manifests[case]["messages"]:
            addr, port = parse_host(m["storeHost"])
            assert create_message_id(addr, port, m["physicalOffset"]) == m["msgId"]
            host, p, off = decode_message_id(m["msgId"])
            assert (p, off) == (port, m["physicalOffset"])
            assert format_host(addr, port) == m["storeHost"]
    with pytest.raises(StoreFormatError, match="hex digits"):
        decode_message_id("ABC")
    with pytest.raises(StoreFormatError, match="not hex"):
        decode_message_id("Z" * 32)


def test_crc_digits_are_least_significant_first():
    assert encode_crc_digits(123) == b"3210000000"
    assert decode_crc_digits(b"3210000000") == 123
    assert body_crc(b"abc") == zlib.crc32(b"abc") & 0x7FFFFFFF


@pytest.mark.parametrize("case", UNDAMAGED)
def test_encoder_reproduces_every_rocketmq_record(case):
    """The fast encoder equals the construct schema's build and RocketMQ's bytes."""
    store = open_store(REFERENCE / case / "store")
    for rec in store.commitlog.iter_records(include_blank=True):
        if rec.is_blank:
            assert encode_blank(rec.total_size) == store.commitlog.read_bytes(rec.physical_offset, 8)
            continue
        raw = store.commitlog.read_bytes(rec.physical_offset, rec.total_size)
        with_crc = rec.property_crc is not None
        out = encode_record(
            topic=rec.topic_raw,
            body=rec.body,
            properties=rec.properties_raw[:-20] if with_crc else rec.properties_raw,
            queue_id=rec.queue_id,
            flag=rec.flag,
            queue_offset=rec.queue_offset,
            physical_offset=rec.stored_physical_offset,
            sys_flag=rec.sys_flag,
            born_timestamp=rec.born_timestamp,
            born_host=rec.born_host,
            store_timestamp=rec.store_timestamp,
            store_host=rec.store_host,
            reconsume_times=rec.reconsume_times,
            prepared_transaction_offset=rec.prepared_transaction_offset,
            append_prop_crc=with_crc,
        )
        assert out == raw
        assert MessageRecord.build(MessageRecord.parse(out)) == out


def test_encoder_rejects_host_flag_mismatch():
    with pytest.raises(ValueError, match="IPv6"):
        encode_record(topic=b"T", body=b"", properties=b"", sys_flag=0x20)


def test_the_body_crc_of_an_empty_body_is_not_checked(tmp_path):
    """Java checkMessageAndReturnSize compares the body CRC only `if (bodyLen > 0)`: an
    empty-bodied record with a wrong stored bodyCRC is served.  The one-record decoder,
    the bulk decoder (with and without its compiled loops), verify and recovery agree
    (a differential run against RocketMQ found the decoders calling it BODY_CRC)."""
    import struct

    from rmqlab.scan import decode as fastdecode
    from rmqlab.format.encode import encode_record
    from rmqlab.format.record import decode_record

    rec = bytearray(encode_record(topic=b"T", body=b"", properties=b"", physical_offset=0))
    struct.pack_into(">i", rec, 8, 12345)  # bodyCRC
    one = decode_record(bytes(rec), 0)
    assert one.body_crc == 12345 and one.body_crc_ok and one.crc_ok
    table = fastdecode.decode_table(bytes(rec) + bytes(64), 0, mode="strict")
    assert table.column("crc_ok").to_pylist() == [True] and table.column("kind").to_pylist() == ["MESSAGE"]
    # the same with a body: the wrong CRC is damage
    bad = bytearray(encode_record(topic=b"T", body=b"x", properties=b"", physical_offset=0))
    struct.pack_into(">i", bad, 8, 12345)
    assert not decode_record(bytes(bad), 0).body_crc_ok
    assert fastdecode.decode_table(bytes(bad) + bytes(64), 0, mode="lenient").column("kind").to_pylist() == ["BODY_CRC"]
