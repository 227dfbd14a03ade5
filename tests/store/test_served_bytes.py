"""What RocketMQ serves from damaged records: ``getMessage`` hands out a unit's bytes and
``MessageDecoder`` reads them field by field, never checking them against totalSize;
``viewMessageById`` reads as many bytes as totalSize says (``lookMessageByOffset``); a
host port outside 0–65535 makes MessageDecoder return null.  Each rule was found by the
differential run against RocketMQ 5.5.0 (tests/oracle), which compares them there."""

from __future__ import annotations

import struct

import pytest

from rmqlab import lookup
from rmqlab.config import MessageStoreConfig
from rmqlab.engine import Message, MessageStore
from rmqlab.errors import StoreFormatError
from rmqlab.store import open_store

CFG = MessageStoreConfig.from_mapping({"mappedFileSizeCommitLog": "65536"})


def _store(tmp_path):
    root = tmp_path / "s"
    with MessageStore.open(root, CFG) as st:
        for i in range(3):
            st.put(Message("T", b"body-%d" % i, {"KEYS": "k%d" % i}, queue_id=0))
    with open_store(root, CFG) as st:
        recs = [r for _, r in lookup.get_messages(st, "T", 0)]
    return root, recs


def _poke(root, at: int, data: bytes):
    with open(root / "commitlog" / f"{0:020d}", "r+b") as fh:
        fh.seek(at)
        fh.write(data)


def test_a_damaged_total_size_is_served_from_the_units_bytes(tmp_path):
    root, recs = _store(tmp_path)
    r = recs[1]
    _poke(root, r.physical_offset, struct.pack(">i", 0x40000000 + r.total_size))
    with open_store(root, CFG) as st:
        with pytest.raises(StoreFormatError, match="BAD_SIZE"):
            st.commitlog.read(r.physical_offset)  # the store's own check refuses it
        entry, got = lookup.get_message(st, "T", 0, 1)
        assert got.body == b"body-1" and got.total_size == 0x40000000 + r.total_size  # the field, as MessageExt.storeSize
        assert "totalSize field says" in lookup.served_note(entry, got)
        with pytest.raises(StoreFormatError, match="BAD_SIZE"):  # by msgId: totalSize bytes, past the file: null in Java
            lookup.look_by_msg_id(st, got.msg_id)


def test_a_zeroed_properties_length_is_read_as_message_decoder_reads_it(tmp_path):
    root, recs = _store(tmp_path)
    r = recs[2]
    props_len_at = r.physical_offset + r.total_size - len(r.properties_raw) - 2
    _poke(root, props_len_at, b"\0\0")
    with open_store(root, CFG) as st:
        entry, got = lookup.get_message(st, "T", 0, 2)
        assert got.body == b"body-2" and got.properties_raw == b"" and got.unread_tail == len(r.properties_raw)
        assert "fields end" in lookup.served_note(entry, got)
        assert lookup.look_by_msg_id(st, got.msg_id).unread_tail == len(r.properties_raw)


def test_a_port_out_of_range_is_a_record_java_cannot_decode(tmp_path):
    root, recs = _store(tmp_path)
    r = recs[0]
    store_port_at = r.physical_offset + 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 8 + 4  # through storeHost's address
    _poke(root, store_port_at, struct.pack(">i", 70000))
    with open_store(root, CFG) as st:
        entry, got = lookup.get_message(st, "T", 0, 0)
        assert got.store_host[1] == 70000 and "storeHost port 70000" in got.java_decode_problem
        assert "MessageDecoder.decode fails" in lookup.served_note(entry, got)
        assert recs[1].java_decode_problem is None
