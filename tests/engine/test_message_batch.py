"""put_batch of a producer's encoded batch (Java ``MessageExtBatch``): the C writer
(``rmqlab.engine._put.write_batch``) and the numpy encoder write what the
message-by-message path writes, keep a batch in one commitlog file as Java does, and
refuse bad batch bodies naming the byte."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from rmqlab.engine import ManualClock, Message, MessageBatch, MessageInputError, MessageStore, PutMessageStatus
from rmqlab.engine.message_store import _native_put
from rmqlab.format.batch import BatchEntry, BatchFormatError, BatchLayout, encode_entries
from rmqlab.format.msgid import parse_host
from rmqlab.store.reader import open_store

from tests.engine.engine_support import small_config, store_files

T0 = 1_795_000_000_000


def _open(root, **kw):
    kw.setdefault("clock", ManualClock(T0, tick_ms=1))
    kw.setdefault("services", False)
    return MessageStore.open(root, kw.pop("config", small_config()), **kw)


def _messages(n, *, same_size: bool, topic="TopicA", queue_id=2, start=0):
    out = []
    for i in range(start, start + n):
        size = 40 if same_size else 1 + (i * 37) % 300
        props = {"TAGS": f"Tag{i % 3}", "KEYS": f"key-{i:05d} shared"}
        if not same_size and i % 4 == 0:
            props = {"KEYS": f"k{i}", "UNIQ_KEY": f"U{i}", "x": "é" * (i % 5)}  # other names, non-ASCII
        if not same_size and i % 7 == 0:
            props = {}
        out.append(Message(topic, bytes((i + j) & 0xFF for j in range(size)), props, queue_id=queue_id, flag=i % 3))
    return out


#: the two writers of an encoded batch: C's (where it is built) and numpy's
WRITERS = pytest.mark.parametrize("native", [pytest.param(True, marks=pytest.mark.skipif(_native_put is None, reason="rmqlab.engine._put is not built")), False],
                                  ids=["C", "numpy"])


def _all_files(root):
    return {sub: store_files(root, sub) for sub in ("commitlog", "consumequeue", "index")}


@WRITERS
@pytest.mark.parametrize("same_size", [True, False], ids=["one-shape", "varied"])
@pytest.mark.parametrize("hosts", ["ipv4", "ipv6-store", "ipv6-both"])
def test_encoded_batch_writes_what_message_by_message_writes(tmp_path, same_size, hosts, native):
    """Records, consume queues and index: byte for byte the same as putting the same
    messages as a list (the per-message encoder is checked against RocketMQ's files)."""
    store_host = parse_host("[2001:db8::7]:10911") if hosts != "ipv4" else None
    born_host = parse_host("[2001:db8::9]:4242") if hosts == "ipv6-both" else None
    cfg = small_config(mapped_file_size_commit_log=1 << 20)  # no file boundary: there the two differ (next test)
    answers = {}
    for name in ("list", "batch"):
        with _open(tmp_path / name, store_host=store_host, config=cfg, native_put=native) as store:
            got = []
            for k in range(6):
                msgs = _messages(50, same_size=same_size, queue_id=k % 3, start=50 * k)
                batch = MessageBatch.from_messages(msgs)
                if born_host is not None:  # the batch's, and each message's of the list
                    batch.born_host = born_host
                    for m in msgs:
                        m.born_host = born_host
                r = store.put_batch(batch if name == "batch" else msgs)
                assert r.ok, r
                got.append((r.wrote_offset, r.wrote_bytes, r.queue_offset, r.store_timestamp, r.msg_num, r.offsets))
            answers[name] = got
    assert answers["batch"] == answers["list"]
    assert _all_files(tmp_path / "batch") == _all_files(tmp_path / "list")
    with open_store(tmp_path / "batch", cfg) as st:
        recs = [r for r in st.commitlog.iter_records() if not r.is_blank]
        assert len(recs) == 300 and all(r.crc_ok for r in recs)
        assert recs[7].body == _messages(1, same_size=same_size, start=7)[0].body


def test_batch_goes_whole_into_the_next_file_when_it_does_not_fit(tmp_path):
    """Java: a batch is one append; END_OF_FILE writes a BLANK and the whole batch goes
    to the next file (a list of messages may continue across the boundary instead)."""
    cfg = small_config()
    with _open(tmp_path / "s", config=cfg) as store:
        first = store.put(Message("TopicA", b"x" * (cfg.mapped_file_size_commit_log - 3000), queue_id=0))
        assert first.ok
        r = store.put_batch(MessageBatch.from_messages(_messages(40, same_size=True, queue_id=0)))
        assert r.ok and r.wrote_offset == cfg.mapped_file_size_commit_log
        assert r.offsets[0] == r.wrote_offset and r.queue_offset == 1
        msgs = store.get_messages("TopicA", 0, 0, 64)
        assert [m.physical_offset for m in msgs[1:]] == r.offsets
    with open_store(tmp_path / "s", cfg) as st:
        assert st.commitlog.read(first.wrote_offset + first.wrote_bytes).is_blank


@WRITERS
def test_batch_fields_and_dispatch(tmp_path, native):
    with _open(tmp_path / "s", native_put=native) as store:
        b = MessageBatch.from_messages(_messages(10, same_size=False, queue_id=1), queue_id=3)
        b.born_timestamp = T0 - 5
        b.born_host = parse_host("10.0.0.9:4242")
        r = store.put_batch(b)
        assert r.ok and r.msg_num == 10 and r.queue_offset == 0
        recs = store.get_messages("TopicA", 3, 0, 20)
        assert [m.queue_offset for m in recs] == list(range(10))
        assert {m.born_timestamp for m in recs} == {T0 - 5} and {m.born_host for m in recs} == {b.born_host}
        assert len({m.store_timestamp for m in recs}) == 1
        assert [m.flag for m in recs] == [i % 3 for i in range(10)]
        hits = store.query_message("TopicA", "k4")
        assert [h.physical_offset for h in hits.records] == [r.offsets[4]]
        assert store.view_message_by_id(recs[9].msg_id).body == recs[9].body


def test_batch_properties_and_delay_take_the_message_path(tmp_path):
    with _open(tmp_path / "a") as a, _open(tmp_path / "b") as b:
        msgs = _messages(8, same_size=True)
        ra = a.put_batch(msgs, {"CLUSTER": "c1"})
        rb = b.put_batch(MessageBatch.from_messages(msgs), {"CLUSTER": "c1"})
        assert ra.ok and rb.ok and ra.offsets == rb.offsets
    assert _all_files(tmp_path / "a") == _all_files(tmp_path / "b")
    with pytest.raises(MessageInputError, match="DELAY"):
        MessageBatch.from_messages([Message("TopicA", b"x", {"DELAY": "2"})])
    with pytest.raises(MessageInputError, match="one topic"):
        MessageBatch.from_messages([Message("TopicA", b"x"), Message("TopicB", b"y")])
    with pytest.raises(MessageInputError, match="one queue"):
        MessageBatch.from_messages([Message("TopicA", b"x", queue_id=0), Message("TopicA", b"y", queue_id=1)])


def _damaged_bodies():
    good, offsets = encode_entries([(0, b"hello", b"TAGS\x01a\x02"), (1, b"world!", b"")])
    second = int(offsets[1])
    yield "truncated", good[:-3], None
    bad = bytearray(good)
    struct.pack_into(">i", bad, second, 9999)
    yield "totalSize past the end", bytes(bad), second
    bad = bytearray(good)
    struct.pack_into(">i", bad, 16, 7)  # first entry's bodyLength: its propertiesLength is then read 2 bytes late
    yield "bodyLength", bytes(bad), 27
    bad = bytearray(good)
    struct.pack_into(">h", bad, 20 + 5, 3)  # first entry's propertiesLength
    yield "propertiesLength", bytes(bad), 25


@WRITERS
@pytest.mark.parametrize("case", list(_damaged_bodies()), ids=lambda c: c[0])
def test_bad_batch_bodies_are_refused_naming_the_byte(tmp_path, case, native):
    _, body, at = case
    with _open(tmp_path / "s", native_put=native) as store:
        r = store.put_batch(MessageBatch("TopicA", body))
        assert r.status is PutMessageStatus.MESSAGE_ILLEGAL
        if at is not None:
            assert f"offset {at}" in r.reason or f"byte {at}" in r.reason, r.reason
        assert store.max_phy_offset == 0 and store.dispatch_behind == 0


@WRITERS
def test_batch_limits(tmp_path, native):
    with _open(tmp_path / "s", config=small_config(max_message_size=1024), native_put=native) as store:
        big = MessageBatch.from_messages([Message("TopicA", b"a" * 10), Message("TopicA", b"b" * 1025)])
        r = store.put_batch(big)
        assert r.status is PutMessageStatus.MESSAGE_ILLEGAL and "message 1" in r.reason
        many = MessageBatch.from_messages([Message("TopicA", b"c" * 1000) for _ in range(80)])  # > 1 KiB + 64 KiB in all
        r = store.put_batch(many)
        assert r.status is PutMessageStatus.MESSAGE_ILLEGAL and "batch's records" in r.reason
        assert store.put_batch(MessageBatch("bad topic!", encode_entries([(0, b"x", b"")])[0])).status is PutMessageStatus.MESSAGE_ILLEGAL
        assert store.max_phy_offset == 0
        # a field beyond its Java type (bornTimestamp is a long, queueId an int): refused, nothing written
        late = MessageBatch.from_messages([Message("TopicA", b"x"), Message("TopicA", b"y")])
        late.born_timestamp = 1 << 63
        r = store.put_batch(late)
        assert r.status is PutMessageStatus.MESSAGE_ILLEGAL and "does not fit its Java type" in r.reason, r
        wide = MessageBatch.from_messages([Message("TopicA", b"x", queue_id=1 << 31)], queue_id=1 << 31)
        assert store.put_batch(wide).status is PutMessageStatus.MESSAGE_ILLEGAL
        assert store.max_phy_offset == 0 and not any(store.commitlog.files[-1].mm[:4096])
        # offsets that are not the body's entries: the numpy path's refusal, either way
        body, offsets = encode_entries([(0, b"one", b""), (0, b"two", b"")])
        r = store.put_batch(MessageBatch("TopicA", body, offsets=np.asarray([0, len(body)])))
        assert r.status is PutMessageStatus.MESSAGE_ILLEGAL, r
        assert store.max_phy_offset == 0


def test_entry_layout_is_the_schemas():
    """encode_entries and BatchLayout agree with the construct schema of an entry."""
    entries = [(3, b"body", b"A\x01b\x02"), (0, b"", b""), (-1, bytes(range(200)), "ü\x01v\x02".encode())]
    body, offsets = encode_entries(entries)
    lay = BatchLayout.of(body)  # walked, not given
    assert lay.start.tolist() == offsets[:-1].tolist()
    for (flag, b, raw), s, e in zip(entries, offsets[:-1], offsets[1:]):
        assert BatchEntry.build(dict(flag=flag, body=b, properties=raw)) == body[s:e]
        parsed = BatchEntry.parse(body[s:e])
        assert (parsed.flag, parsed.body, parsed.properties) == (flag, b, raw)
    assert lay.flag.tolist() == [3, 0, -1] and lay.body_len.tolist() == [4, 0, 200]
    with pytest.raises(BatchFormatError):
        BatchLayout.of(body, np.asarray([0, 5, len(body)]))


@pytest.mark.parametrize("step", [None, 7, 1])
def test_big_and_small_records_dispatch_in_commitlog_order(tmp_path, step):
    """Small records are read back at reput, big ones (>= 4 KiB bodies) bring their
    request from put time; one reput over both, or partial reputs of ``step`` records,
    keep commitlog order: consume queues equal a rebuild from the log, every key finds
    its record."""
    from rmqlab.recovery import recover

    cfg = small_config(mapped_file_size_commit_log=1 << 20, max_index_num=4096, max_hash_slot_num=512)
    msgs = [Message("TopicA", bytes([i]) * (5000 if i % 3 == 0 else 50), {"TAGS": f"t{i % 4}", "KEYS": f"k{i} both"}, queue_id=i % 2) for i in range(60)]
    with _open(tmp_path / "s", config=cfg) as store:
        offsets = []
        for i in range(0, 60, 10):
            if i % 20 == 0:
                r = store.put_batch(msgs[i : i + 10])
                assert r.ok
                offsets += r.offsets
            else:
                rs = [store.put(m) for m in msgs[i : i + 10]]
                assert all(r.ok for r in rs)
                offsets += [r.wrote_offset for r in rs]
        assert store.dispatch_behind == 60
        if step is None:
            assert store.reput() == 60
        else:
            done = 0
            while done < 60:
                n = store.reput(step)
                assert n == min(step, 60 - done)
                done += n
                assert store.dispatch_behind == 60 - done
                # dispatched up to the first record not taken yet
                assert store.reput_from_offset == (offsets[done] if done < 60 else store.max_phy_offset)
        for i in (0, 1, 33, 59):
            hit = store.query_message("TopicA", f"k{i}")
            assert [r.body for r in hit.records] == [msgs[i].body]
        assert len(store.query_message("TopicA", "both", max_num=100).records) == 60
    queues = store_files(tmp_path / "s", "consumequeue")
    import shutil

    shutil.rmtree(tmp_path / "s" / "consumequeue")
    shutil.rmtree(tmp_path / "s" / "index")
    (tmp_path / "s" / "abort").write_text("")  # unclean: recovery rebuilds from the log
    recover(tmp_path / "s", config=cfg, in_place=True, clock=ManualClock(T0))
    assert store_files(tmp_path / "s", "consumequeue") == queues
