"""The C put (rmqlab/engine/_put.c) against the Python put: same answers, same bytes.

Every other engine test runs through whichever put the store binds (the C one when it
is built); here the two are run side by side on the same messages, including every
case the C put must hand to Python, and under threads.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from rmqlab.engine import ManualClock, Message, MessageStore, PutMessageStatus
from rmqlab.engine.message_store import _native_put
from rmqlab.store.reader import open_store

from tests.engine.engine_support import small_config, store_files

T0 = 1_795_000_000_000

needs_c = pytest.mark.skipif(_native_put is None, reason="rmqlab.engine._put is not built (RMQLAB_PURE_PUT or no compiler)")


def test_the_c_put_is_built_and_bound_where_it_serves():
    if os.environ.get("RMQLAB_PURE_PUT"):
        pytest.skip("RMQLAB_PURE_PUT asks for the Python put")
    assert _native_put is not None, "rmqlab.engine._put was not built: `pip install -e .` needs a C compiler and zlib's headers"


@needs_c
def test_which_stores_bind_the_c_put(tmp_path):
    with MessageStore.open(tmp_path / "a", small_config(), services=False) as store:
        assert isinstance(store.put, _native_put.Putter)
    with MessageStore.open(tmp_path / "b", small_config(), services=False, native_put=False) as store:
        assert not isinstance(store.put, _native_put.Putter)
    with MessageStore.open(tmp_path / "c", small_config(flush_disk_type="SYNC_FLUSH"), services=False) as store:
        assert isinstance(store.put, _native_put.Putter)  # then waits in _sync_wait
    # with the property CRC every put is general
    with MessageStore.open(tmp_path / "d", small_config(enabled_append_prop_crc=True), services=False) as store:
        assert not isinstance(store.put, _native_put.Putter)


class _MyMessage(Message):
    """A subclass: its slots are not read by offset (the C put checks the exact type)."""

    __slots__ = ()


def _mixed_messages() -> list[Message]:
    """The common case in many shapes, and every case the C put hands to Python."""
    long_topic = "T" * 130  # V2 record
    out = [Message("TopicA", b"first", {"TAGS": "a"}, queue_id=0)]  # a new topic: general path
    for i in range(400):
        props = [
            None,
            {},
            {"TAGS": f"Tag{i % 3}", "KEYS": f"key-{i} k{i % 7}", "UNIQ_KEY": f"U{i:06d}"},
            {"ключ": "значение", "KEYS": f"值-{i}", "emoji": "\U0001f600"},
        ][i % 4]
        body = bytes((i * 31 + k) & 0xFF for k in range([0, 1, 128, 700, 4095][i % 5]))
        out.append(
            Message(
                # an equal topic in another str object; queue ids past the C put's key cache
                ["TopicA", "".join(("Topic", "A")), "TopicB"][i % 3],
                body,
                props,
                queue_id=i % 5 if i % 7 else 64 + i % 3,
                flag=[0, -5, 2**31 - 1, 7][i % 4],
                born_timestamp=None if i % 2 else 1_700_000_000_000 + i,
                store_timestamp=T0 + 10 * i if i % 11 == 0 else None,
                reconsume_times=i % 3,
                prepared_transaction_offset=i * 1000,
            )
        )
        if i % 25 == 0:  # everything the C put must leave to Python, in between
            out += [
                Message("TopicA", b"big" * 1500, {"TAGS": "big", "KEYS": f"big-{i}"}, queue_id=1),  # >= 4 KiB body
                Message("TopicA", b"delayed", {"DELAY": "2", "KEYS": f"d-{i}"}, queue_id=0),  # the broker's delay rewrite
                Message("TopicA", b"commit", {"KEYS": f"c-{i}"}, queue_id=2, sys_flag=8),  # sysFlag
                Message("TopicA", b"raw", queue_id=3, properties_raw=f"KEYS\x01raw-{i}\x02".encode()),
                Message("TopicA", b"host", {"a": "b"}, queue_id=3, born_host=(b"\x0a\x00\x00\x01", 4242)),
                Message("TopicA", b"ip6", {"a": "b"}, queue_id=3, store_host=(b"\x00" * 15 + b"\x01", 10911)),
                Message("TopicA", b"int value", {"n": 5, "KEYS": f"n-{i}"}, queue_id=0),  # Python formats 5 as "5"
                Message("TopicA", b"too far", queue_id=0, flag=2**31),  # MESSAGE_ILLEGAL: flag is a Java int
                Message("TopicA", b"negative", queue_id=-1),  # MESSAGE_ILLEGAL
                Message("TopicA", b"x" * 9000, queue_id=0),  # over maxMessageSize
                Message("TopicA", b"props", {"p": "v" * 40000}, queue_id=0),  # PROPERTIES_SIZE_EXCEEDED
                Message("TopicA", b"bad", {"s": "\ud800"}, queue_id=0),  # a lone surrogate cannot be encoded
                Message(long_topic, b"v2", {"TAGS": "long"}, queue_id=1),
                Message("bad topic!", b"illegal name", queue_id=0),
                _MyMessage("TopicA", b"subclass", {"KEYS": f"sub-{i}"}, queue_id=4),
            ]
    return out


def _run(root, messages, native: bool):
    cfg = small_config(max_message_size=8192)
    answers = []
    with MessageStore.open(root, cfg, clock=ManualClock(T0, tick_ms=1), services=False, reput_batch=7, native_put=native) as store:
        bound = store.put
        for m in messages:
            try:
                answers.append(tuple(bound(m)))
            except UnicodeEncodeError as exc:
                answers.append(("raised", type(exc).__name__))
        counts = (getattr(bound, "fast", None), getattr(bound, "slow", None))
    return answers, counts


@needs_c
def test_c_and_python_put_answer_alike_and_write_the_same_bytes(tmp_path):
    msgs = _mixed_messages()
    c_answers, (fast, slow) = _run(tmp_path / "c", msgs, native=True)
    py_answers, _ = _run(tmp_path / "py", msgs, native=False)
    assert fast > 300 and slow > 100  # both ways were taken
    assert c_answers == py_answers
    statuses = {a[0] for a in c_answers if a[0] != "raised"}
    assert {PutMessageStatus.PUT_OK, PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED} <= statuses
    assert ("raised", "UnicodeEncodeError") in c_answers
    for sub in ("commitlog", "consumequeue", "index", "config"):
        assert store_files(tmp_path / "c", sub) == store_files(tmp_path / "py", sub), sub
    assert len(store_files(tmp_path / "c", "commitlog")) > 5  # files rolled on both paths
    assert (tmp_path / "c" / "checkpoint").read_bytes() == (tmp_path / "py" / "checkpoint").read_bytes()


@needs_c
def test_c_put_uses_the_system_clock(tmp_path):
    with MessageStore.open(tmp_path / "s", small_config(), services=False) as store:
        store.put(Message("TopicA", b"x"))  # the topic's first put is general
        store.put(Message("TopicA", b"x"))  # the first in a file pre-faults its pages (Python)
        before = time.time_ns() // 1_000_000
        r = store.put(Message("TopicA", b"y", {"KEYS": "k"}))
        after = time.time_ns() // 1_000_000
        assert (store.put.fast, store.put.slow) == (1, 2)
        assert before <= r.store_timestamp <= after
        rec = store.look_message_by_offset(r.wrote_offset)
        assert rec.store_timestamp == rec.born_timestamp == r.store_timestamp
        assert (rec.body, rec.queue_offset, rec.properties) == (b"y", 2, {"KEYS": "k"})


@needs_c
def test_c_put_from_threads_keeps_queues_dense_and_records_whole(tmp_path):
    threads, per = 4, 600
    cfg = small_config(mapped_file_size_commit_log=1024 * 1024)
    results: list = []
    with MessageStore.open(tmp_path / "s", cfg, reput_batch=50) as store:
        store.put(Message("TopicA", b"seed", queue_id=0))

        def producer(k):
            # every 10th body big: written with pwritev, the GIL released, the put lock held
            mine = [store.put(Message("TopicA", f"{k}-{i}".encode() * (20 if i % 10 else 1000), {"KEYS": f"{k}-{i}"}, queue_id=i % 3)) for i in range(per)]
            results.extend(mine)

        ts = [threading.Thread(target=producer, args=(k,)) for k in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert store.put.fast > threads * per // 2
    assert all(r.ok for r in results) and len(results) == threads * per
    assert len({r.wrote_offset for r in results}) == len(results)
    with open_store(tmp_path / "s", cfg) as st:
        recs = [r for r in st.commitlog.walk() if not r.is_blank]
        assert len(recs) == threads * per + 1 and all(r.body_crc_ok for r in recs)
        by_offset = {r.physical_offset: r for r in recs}
        for res in results:
            rec = by_offset[res.wrote_offset]
            key = rec.properties["KEYS"]
            assert rec.queue_offset == res.queue_offset and key.encode() * (20 if int(key.split("-")[1]) % 10 else 1000) == rec.body
        for qid in range(3):
            offs = sorted(r.queue_offset for r in recs if r.queue_id == qid)
            assert offs == list(range(len(offs)))  # no offset given twice or skipped
            assert st.consume_queue("TopicA", qid).valid_range()[1] == len(offs)


@needs_c
def test_c_put_under_sync_flush_forces_unless_told_not_to_wait(tmp_path, monkeypatch):
    forces = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (forces.append(fd), real(fd)))
    # no services: a SYNC put forces the log itself (no flusher thread to race with)
    with MessageStore.open(tmp_path / "s", small_config(flush_disk_type="SYNC_FLUSH"), services=False) as store:
        store.put(Message("TopicA", b"seed"))
        store.put(Message("TopicA", b"pre-faults"))
        n = len(forces)
        assert store.put(Message("TopicA", b"forced", {"KEYS": "k"})).ok
        assert len(forces) == n + 1 and store.flushed_where == store.max_phy_offset
        assert store.put(Message("TopicA", b"not waited for", {"WAIT": "false", "KEYS": "k2"})).ok
        assert len(forces) == n + 1 and store.flushed_where < store.max_phy_offset
        assert (store.put.fast, store.put.slow) == (2, 2)


@needs_c
def test_c_put_waits_while_another_thread_holds_the_put_lock(tmp_path):
    with MessageStore.open(tmp_path / "s", small_config(), services=False) as store:
        store.put(Message("TopicA", b"seed"))
        done = []
        with store._lock:
            t = threading.Thread(target=lambda: done.append(store.put(Message("TopicA", b"late"))))
            t.start()
            t.join(0.3)
            assert not done  # handed to the Python path, which blocks on the lock
        t.join(5)
        assert done and done[0].ok and done[0].queue_offset == 1


@needs_c
def test_c_put_after_shutdown_is_refused(tmp_path):
    store = MessageStore.open(tmp_path / "s", small_config(), services=False)
    store.put(Message("TopicA", b"seed"))
    put = store.put
    store.shutdown()
    r = put(Message("TopicA", b"late"))
    assert r.status is PutMessageStatus.SERVICE_NOT_AVAILABLE and r.wrote_offset == -1
    with pytest.raises(TypeError):
        put()


@needs_c
def test_c_put_write_error_names_file_and_offset(tmp_path):
    with MessageStore.open(tmp_path / "s", small_config(), services=False) as store:
        store.put(Message("TopicA", b"seed"))
        f = store.commitlog.files[-1]
        pos, fd = f.wrote_position, f.fd
        f.fd = 10_000  # not an open descriptor: the big body's pwritev fails (EBADF)
        try:
            with pytest.raises(OSError) as err:
                store.put(Message("TopicA", b"x" * 5000))
        finally:
            f.fd = fd
        assert str(f.path) in str(err.value) and f"offset {pos}" in str(err.value)
        assert f.wrote_position == pos and store.max_offset_in_queue("TopicA", 0) == 1  # nothing counted as written
        assert store.put(Message("TopicA", b"after")).queue_offset == 1


def test_the_c_put_reads_only_its_declared_interface():
    """_put.c names the attributes it reads of the message, the mapped file and the
    commitlog writer; they are exactly MessageStore.NATIVE_PUT_INTERFACE, all public,
    the first two slots of their classes (read by offset), and nothing of the store."""
    import re
    from pathlib import Path

    from rmqlab.engine.message import Message as M
    from rmqlab.writers.commitlog_writer import CommitLogWriter
    from rmqlab.writers.mapped_file import WritableMappedFile

    src = (Path(__file__).resolve().parents[2] / "rmqlab" / "engine" / "_put.c").read_text()

    def names(pattern):
        return tuple(re.findall(r'"(\w+)"', re.search(pattern, src, re.S).group(1)))

    declared = MessageStore.NATIVE_PUT_INTERFACE
    assert names(r"msg_attr\[M_COUNT\] = \{(.*?)\};") == declared[M]
    assert names(r"file_attr\[W_COUNT\] = \{(.*?)\};") == declared[WritableMappedFile]
    interned = dict(re.findall(r"\{&s_(\w+), \"(\w+)\"\}", src))
    methods = {"acquire", "release", "now_ms"}  # of the lock and the clock it is given
    assert set(interned.values()) - methods == set(declared[CommitLogWriter])
    from rmqlab.engine.message_store import FastTopic

    assert FastTopic._fields == declared[FastTopic]  # the C put reads its values by position
    assert re.search(r"PyTuple_GET_ITEM\(tinfo, 2\)", src) and not re.search(r"PyTuple_GET_ITEM\(tinfo, [3-9]\)", src)
    for cls, attrs in declared.items():
        assert all(not a.startswith("_") for a in attrs), cls
        if cls in (M, WritableMappedFile):
            assert set(attrs) <= set(cls.__slots__), cls
    assert set(re.findall(r"\"(_\w+)\"", src)) == {"_put"}  # no private attribute named (only the module itself)
    assert not re.search(r"self->store\b", src)  # and no handle on the store itself


@needs_c
def test_the_pages_a_put_writes_are_faulted_in_without_the_gil(tmp_path):
    """``_put.populate`` (``CommitLogWriter.prefault`` of a store with the C module)
    faults a mapping's pages in with the GIL released: another thread runs Python during
    the call (with the GIL held it could not: the switch interval is set far beyond the
    call, so only a release lets it in), the bytes stay as they were, and a range outside
    the mapping is refused with the range named."""
    import mmap
    import sys

    with MessageStore.open(tmp_path / "s", small_config(), services=False) as store:
        assert store.commitlog.populate is _native_put.populate
    m = mmap.mmap(-1, 64 << 20)
    m[:5] = b"kept!"
    counter, seen = [0], {}

    def fault():
        seen["before"] = counter[0]
        _native_put.populate(m, 0, len(m))
        seen["after"] = counter[0]

    interval = sys.getswitchinterval()
    sys.setswitchinterval(30.0)
    try:
        t = threading.Thread(target=fault)
        t.start()
        while t.is_alive():
            counter[0] += 1
            time.sleep(0)  # the GIL offered to the faulting thread, which takes it to start and to return
        t.join()
    finally:
        sys.setswitchinterval(interval)
    assert seen["after"] > seen["before"], seen
    assert m[:5] == b"kept!" and m[len(m) - 1] == 0
    with pytest.raises(ValueError, match=r"populate \[4096, 67112960\) is outside the mapping of 67108864 bytes"):
        _native_put.populate(m, 4096, len(m))
    m.close()


@needs_c
def test_a_thread_faults_the_log_in_ahead_of_the_puts_and_stops_with_the_store(tmp_path):
    """With the GIL-free populate, a thread keeps the pages of the file being written
    faulted in ahead of its write position (the puts then seldom fault them themselves);
    the records are the ones put, and the thread ends when the store shuts down."""
    from rmqlab.writers.commitlog_writer import _PrefaultAhead

    def ahead_threads():
        return [t for t in threading.enumerate() if t.name == "rmqlab-prefault-ahead"]

    cfg = small_config(mapped_file_size_commit_log=64 << 20)
    body = bytes(range(256)) * 4
    with MessageStore.open(tmp_path / "s", cfg, services=False) as store:
        for i in range(12_000):  # ~13 MiB: past the first 4 MiB chunk the put faulted in itself
            assert store.put(Message(topic="TopicA", body=body, queue_id=i % 4, properties={"KEYS": f"k{i}"})).ok
        f = store.commitlog.files[-1]
        assert len(ahead_threads()) == 1
        deadline = time.time() + 30
        while f.populated - f.wrote_position < _PrefaultAhead.MARGIN and time.time() < deadline:
            time.sleep(0.01)
        assert f.populated - f.wrote_position >= _PrefaultAhead.MARGIN, (f.populated, f.wrote_position)
    assert ahead_threads() == []
    with open_store(tmp_path / "s") as reader:
        recs = [r for r in reader.commitlog.iter_records() if not r.is_blank]
    assert len(recs) == 12_000 and all(r.body == body for r in recs) and recs[-1].properties["KEYS"] == "k11999"
