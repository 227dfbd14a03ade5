"""The bulk re-dispatch path (fastdecode columns → ``CommitLogDispatcher.dispatch_columns``)
gives the same bytes as the per-record path (``decode_record`` → ``DispatchRequest`` →
``dispatch_batch``), on RocketMQ's own stores and on a written store full of the
awkward cases: delayed records, every transaction state, empty and duplicate
properties, non-ASCII keys and tags, double spaces in KEYS."""

from __future__ import annotations

import importlib
import json

import numpy as np
import pytest

from rmqlab.writers.clock import ManualClock
from rmqlab.writers.dispatch import CommitLogDispatcher
from rmqlab.rules import parse_delay_levels
from rmqlab.scan import kernels
from rmqlab.scan.dispatch_request import DispatchColumns, request_from_record
from rmqlab.format.checkpoint import CheckpointV5
from rmqlab.recovery import recover
from rmqlab.store.reader import open_store

from tests.engine.engine_support import assert_same_as_rocketmq, reference_config, store_files
from tests.support import REFERENCE

recover_mod = importlib.import_module("rmqlab.recovery.redispatch")  # re-dispatch: what recovery decodes and hands to dispatch
dispatch_mod = importlib.import_module("rmqlab.scan.dispatch_request")
CASES = ["clean", "crash", "crash-cqdeleted", "crash-torn", "v2ipv6"]


def _files(root):
    """Consume-queue files by path; index files by content (their names follow the clock)."""
    return store_files(root, "consumequeue"), sorted(store_files(root, "index").values())


class _File:  # what recovery's planner holds per commitlog file
    def __init__(self, mf):
        self.buf, self.file_from_offset, self.path = mf.buf, mf.file_from_offset, mf.path


def _bulk_and_exact(root, cfg):
    """Every MESSAGE record of the store as DispatchColumns (bulk decoder, recovery's
    code) and as the per-record requests."""
    delay = parse_delay_levels(cfg.message_delay_level)
    with open_store(root, cfg) as st:
        recs = [r for r in st.commitlog.walk() if not isinstance(r, Exception) and not r.is_blank]  # a torn tail ends the walk
        exact = [request_from_record(r, delay) for r in recs]
        pos = np.asarray([r.physical_offset for r in recs], np.int64)
        files = [_File(f) for f in st.commitlog.queue.files]
        starts = np.asarray([f.file_from_offset for f in files])
        parts = []
        which = np.searchsorted(starts, pos, side="right") - 1
        for fi in np.unique(which).tolist():
            sel = np.flatnonzero(which == fi)
            parts.append(recover_mod._decode_for_dispatch(files[fi], files[fi].buf, pos[sel], delay))
        cols = DispatchColumns.concat(parts)
    return cols, exact


def _dispatch_both_ways(root, cfg, cols, exact, tag: str = "") -> tuple:
    """Dispatch ``cols`` through the bulk path and ``exact`` through the per-record
    path into two fresh stores under ``root``; return both stores' files."""
    bulk, per_record = root / f"bulk{tag}", root / f"exact{tag}"
    with CommitLogDispatcher(bulk, cfg) as d:
        d.dispatch_columns(cols)
        d.flush()
    with CommitLogDispatcher(per_record, cfg) as d:
        d.dispatch_batch(exact)
        d.flush()
    return _files(bulk), _files(per_record)


def _count_per_record(monkeypatch) -> list:
    """Count the records the bulk path had to read one by one."""
    calls = []
    one = dispatch_mod.read_dispatch_request

    def counted(buf, pos, **kw):
        calls.append(pos)
        return one(buf, pos, **kw)

    monkeypatch.setattr(dispatch_mod, "read_dispatch_request", counted)
    return calls


@pytest.mark.parametrize("case", CASES)
def test_bulk_requests_equal_per_record(case, monkeypatch):
    cfg = reference_config(case)
    calls = _count_per_record(monkeypatch)
    cols, exact = _bulk_and_exact(REFERENCE / case / "store", cfg)
    assert len(exact) > 600
    assert cols.requests() == exact
    assert calls == []  # every record came through the bulk decoder


@pytest.mark.parametrize("case", ["clean", "v2ipv6"])
def test_bulk_rebuild_is_rocketmqs(case, tmp_path):
    """Consume queues and index rebuilt from nothing by both paths: identical to each
    other and to RocketMQ's files."""
    cfg = reference_config(case)
    cols, exact = _bulk_and_exact(REFERENCE / case / "store", cfg)
    bulk, per_record = _dispatch_both_ways(tmp_path, cfg, cols, exact)
    assert bulk == per_record
    assert_same_as_rocketmq(case, tmp_path / "bulk", commitlog=False)


def test_bulk_redispatch_over_existing_files(tmp_path):
    """A tail dispatched again over what is there (queues skip repeats, the index
    skips below its endPhyOffset and re-adds the record at it), in pieces."""
    cfg = reference_config("clean")
    cols, exact = _bulk_and_exact(REFERENCE / "clean" / "store", cfg)
    n = len(exact)
    for name in ("bulk", "exact"):
        with CommitLogDispatcher(tmp_path / name, cfg) as d:
            d.dispatch_batch(exact[: n // 2])
    sub = lambda a, b: DispatchColumns.from_requests(cols.requests()[a:b])  # noqa: E731
    with CommitLogDispatcher(tmp_path / "bulk", cfg) as d:
        d.dispatch_columns(sub(n // 3, n - 100))
        d.dispatch_columns(sub(n - 150, n))
        d.flush()
    with CommitLogDispatcher(tmp_path / "exact", cfg) as d:
        d.dispatch_batch(exact[n // 3 : n - 100])
        d.dispatch_batch(exact[n - 150 : n])
        d.flush()
    assert _files(tmp_path / "bulk") == _files(tmp_path / "exact")


def _same_reports(a, b, out_a, out_b) -> None:
    da, db = a.to_dict(), b.to_dict()
    for d, out in ((da, out_a), (db, out_b)):
        d.pop("timings", None)
        d.pop("target", None)
        d.pop("sidecar", None)
    assert json.dumps(da, default=str).replace(str(out_a), "OUT") == json.dumps(db, default=str).replace(str(out_b), "OUT")


def _recover_both_ways(src, tmp_path, monkeypatch, **kw) -> dict:
    """recover() into ``tmp_path/bulk`` with the bulk path forced (whatever the count)
    and into ``tmp_path/exact`` with the per-record path (decode_record, a list of
    DispatchRequests, dispatch_batch)."""
    reports = {}
    for name, threshold in (("bulk", 0), ("exact", 1 << 62)):
        with monkeypatch.context() as m:
            m.setattr(recover_mod, "BULK_DISPATCH_MIN", threshold)
            used = []
            bulk = recover_mod._decode_for_dispatch
            m.setattr(recover_mod, "_decode_for_dispatch", lambda *a: used.append(1) or bulk(*a))
            reports[name] = recover(src, out=tmp_path / name, clock=ManualClock(1_800_000_000_000), **kw)
            assert bool(used) == (name == "bulk")
    assert reports["bulk"].records_redispatched == reports["exact"].records_redispatched > 0
    _same_reports(reports["bulk"], reports["exact"], tmp_path / "bulk", tmp_path / "exact")
    assert _files(tmp_path / "bulk") == _files(tmp_path / "exact")
    assert (tmp_path / "bulk" / "checkpoint").read_bytes() == (tmp_path / "exact" / "checkpoint").read_bytes()
    return reports


def _crash_with_index_behind(root):
    """Abort file present and the checkpoint's indexMsgTimestamp before the newest
    index file's end: abnormal recovery drops that file and re-indexes."""
    from rmqlab.store.checkpoint import read_checkpoint

    cp = read_checkpoint(root / "checkpoint").to_dict()
    cp["index_msg_timestamp"] = max(0, cp["index_msg_timestamp"] - 10_000_000)
    data = CheckpointV5.build(cp)
    (root / "checkpoint").write_bytes(data + bytes(4096 - len(data)))
    (root / "abort").write_text("1")


@pytest.mark.parametrize("case", ["crash", "crash-cqdeleted", "crash-torn"])
def test_recovery_bulk_equals_per_record(case, tmp_path, monkeypatch):
    _recover_both_ways(REFERENCE / case / "store", tmp_path, monkeypatch)


def test_recovery_with_index_rebuilt_bulk_equals_per_record(store_copy, tmp_path, monkeypatch):
    """RocketMQ's crashed store with its newest index file dropped: every record is
    re-indexed (the case the bulk path is for)."""
    root = store_copy("crash")
    _crash_with_index_behind(root)
    reports = _recover_both_ways(root, tmp_path, monkeypatch)
    assert any(c.action == "dropped" for c in reports["bulk"].index)


# -- a written store with the awkward cases ---------------------------------------------------
def _awkward_messages():
    from rmqlab.engine import Message

    out = []
    kinds = [0x0, 0x4, 0x8, 0xC]
    for i in range(400):
        p = {}
        r = i % 11
        if r == 0:
            p = {"TAGS": "tag-\u00e9\u4e16", "KEYS": "k\u00e9y-%d  other" % i, "UNIQ_KEY": "U%032d" % i}
        elif r == 1:
            p = {"KEYS": " a  b ", "UNIQ_KEY": ""}  # empty UNIQ_KEY: Java skips it
        elif r == 2:
            p = {"TAGS": "", "KEYS": ""}
        elif r == 3:
            p = {"DELAY": str(i % 20), "TAGS": "d"}  # levels 0..19; 19 is over the table's 18
        elif r == 4:
            p = {"DELAY": "x", "TAGS": "bad"}  # not a number
        else:
            p = {"TAGS": "T%d" % (i % 5), "KEYS": "key%d" % i, "UNIQ_KEY": "0A%030X" % i}
        topic = "SCHEDULE_TOPIC_XXXX" if r in (3, 4) else ("TopicB" if i % 3 else "TopicA")
        sys_flag = kinds[(i // 7) % 4] if topic != "SCHEDULE_TOPIC_XXXX" else 0
        m = Message(topic, b"x" * (i % 50), p, queue_id=i % 3, sys_flag=sys_flag)
        if r == 7:  # a duplicate name whose later value is empty (Java keeps the first)
            m.properties = None
            m.properties_raw = b"TAGS\x01first\x02KEYS\x01dup\x02TAGS\x01\x02"
        out.append(m)
    return out


@pytest.fixture
def awkward_store(tmp_path):
    from rmqlab.config import MessageStoreConfig
    from rmqlab.engine.message_store import MessageStore

    root = tmp_path / "written"
    cfg = MessageStoreConfig(mapped_file_size_commit_log=64 * 1024, mapped_file_size_consume_queue=20 * 64, max_index_num=300, max_hash_slot_num=64)
    store = MessageStore.open(root, cfg, clock=ManualClock(1_750_000_000_000, tick_ms=7))
    try:
        for m in _awkward_messages():
            store.put(m)
    finally:
        store.shutdown()
    return root, cfg


def test_awkward_store_bulk_equals_per_record(awkward_store, tmp_path, monkeypatch):
    root, cfg = awkward_store
    with monkeypatch.context() as m:
        calls = _count_per_record(m)
        cols, exact = _bulk_and_exact(root, cfg)
    assert len(exact) == 400
    assert cols.requests() == exact
    # none was read one by one: empty and repeated TAGS/KEYS/UNIQ_KEY values read as
    # Java's map holds them straight from the bulk decode
    assert calls == []
    # delayed records' tagsCode is a delivery time; all four transaction states there
    assert any(r.topic == "SCHEDULE_TOPIC_XXXX" and r.tags_code > 1_700_000_000_000 for r in exact)
    assert {r.sys_flag & 0xC for r in exact} == {0x0, 0x4, 0x8, 0xC}
    bulk, per_record = _dispatch_both_ways(tmp_path, cfg, cols, exact)
    assert bulk == per_record
    assert len(store_files(tmp_path / "bulk", "index")) > 1  # the index rolled over files
    # and recovery (index behind the checkpoint: dropped, re-indexed) by both paths
    _crash_with_index_behind(root)
    _recover_both_ways(root, tmp_path / "recovered", monkeypatch, config=cfg)


@pytest.mark.parametrize("queues", [3, 200])  # one pass per queue; the sort for many
def test_queue_groups_in_order_of_first_appearance(queues):
    from rmqlab.scan.dispatch_request import queue_groups

    rng = np.random.default_rng(queues)
    topic_code = rng.integers(0, 4, 3000)
    queue_id = rng.integers(-1, queues, 3000)
    expect: dict[tuple[int, int], list[int]] = {}
    for i, k in enumerate(zip(topic_code.tolist(), queue_id.tolist())):
        expect.setdefault(k, []).append(i)
    assert [g.tolist() for g in queue_groups(topic_code, queue_id)] == list(expect.values())


def test_bulk_without_index_and_out_of_order(tmp_path):
    """messageIndexEnable=false: queues only; rows out of commitlog order: the exact
    per-request path is taken, with the same bytes."""
    import dataclasses

    cfg = reference_config("clean")
    cols, exact = _bulk_and_exact(REFERENCE / "clean" / "store", cfg)
    off = dataclasses.replace(cfg, message_index_enable=False)
    bulk, per_record = _dispatch_both_ways(tmp_path, off, cols, exact)
    assert bulk == per_record
    assert store_files(tmp_path / "bulk", "index") == {}
    backwards = DispatchColumns.from_requests(exact[::-1])
    bulk, per_record = _dispatch_both_ways(tmp_path, cfg, backwards, exact[::-1], "-rev")
    assert bulk == per_record


@pytest.mark.parametrize("path", ["compiled", "per record"])
@pytest.mark.parametrize("case", ["clean", "v2ipv6"])
def test_a_record_is_in_its_queue_only_if_its_own_fields_say_so(case, path, monkeypatch):
    """Re-dispatch skips a record a consume queue already points at only when the record
    is that queue's by its own bytes (topic length and bytes, queue id, physicalOffset):
    the check (compiled, and per record for a few) against the decoded records, on a
    copy of the log with one record damaged in each field and one pointed at by another
    queue's entry."""
    monkeypatch.setattr(kernels, "INTERPRETED_QUEUE_CHECK_BELOW", 0 if path == "compiled" else 1 << 40)
    if path != "compiled":  # as in a new process: the loops not loaded yet
        monkeypatch.setattr(kernels, "_LOADED", False)
        monkeypatch.setattr(kernels, "_INTERPRETED", {})
    from rmqlab.format.layout import PHYSICAL_OFFSET_AT, QUEUE_ID_AT
    from rmqlab.recovery.recover import plan as plan_recovery

    root = REFERENCE / case / "store"
    p = plan_recovery(root)
    try:
        queues = list(p.queues.values())
        with open_store(root) as st:
            recs = [r for r in st.commitlog.walk() if not isinstance(r, Exception) and not r.is_blank]
        assert len(recs) > 8
        names = [(q.topic, q.queue_id) for q in queues]
        owner = np.asarray([names.index((r.topic, r.queue_id)) for r in recs])
        pos = np.asarray([r.physical_offset for r in recs], np.int64)
        logs = [bytearray(f.buf) for f in p.files]
        starts = [f.file_from_offset for f in p.files]

        def flip(i: int, field_at: int, bit: int) -> None:  # field_at: from the record's start
            k = int(np.searchsorted(starts, recs[i].physical_offset, side="right")) - 1
            logs[k][recs[i].physical_offset - starts[k] + field_at] ^= bit

        damaged = {1: "queue id", 3: "physicalOffset", 5: "topic byte", 7: "another queue's entry"}
        flip(1, QUEUE_ID_AT + 3, 0x40)
        flip(3, PHYSICAL_OFFSET_AT + 7, 0x01)
        flip(5, recs[5].total_size - 2 - len(recs[5].properties_raw) - 1, 0x20)  # the topic's last byte
        others = [i for i, q in enumerate(names) if q != names[owner[7]]]
        owner[7] = others[0]
        got = recover_mod._in_their_queue(p, [bytes(b) for b in logs], pos, owner)
        assert np.flatnonzero(~got).tolist() == sorted(damaged), damaged
    finally:
        p.close()
