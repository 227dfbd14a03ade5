"""Consume queues with ext files written by RocketMQ itself (``enableConsumeQueueExt``):
every unit's tagsCode is the address of a ``ConsumeQueueExt.CqExtUnit``; rmqlab reads
the units as RocketMQ does, decodes the ext units, and verify compares the tagsCode the
ext unit holds with the record's."""

from __future__ import annotations

import shutil
import struct

import pytest

from rmqlab.config import MessageStoreConfig
from rmqlab.format.consumequeue import is_ext_addr
from rmqlab.format.hashing import java_string_hash
from rmqlab.forensics.verify import verify_store
from rmqlab.rules import goes_to_consume_queue
from rmqlab.store import open_store

from tests.oracle.compare import compare_messages, compare_queues
from tests.oracle.production import loaded, write_ext_store


@pytest.fixture(scope="module")
def ext_store(oracle, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ext")
    return loaded(oracle, write_ext_store(oracle, tmp, seed=601, crash_copy=tmp / "crash"))


def test_ext_units_hold_the_tags_codes_of_the_records(ext_store):
    root, config, dump = ext_store
    cfg = MessageStoreConfig.from_mapping(config)
    assert len(list((root / "consumequeue_ext" / "TopicA" / "0").iterdir())) > 1  # small ext files: several
    with open_store(root, cfg) as store:
        assert compare_queues(store, dump) == [] and compare_messages(store, dump) == []
        n = 0
        for rec in store.commitlog.iter_records():
            if not goes_to_consume_queue(rec.sys_flag) or rec.topic.startswith("SCHEDULE"):
                continue
            e = store.consume_queue(rec.topic, rec.queue_id).get(rec.queue_offset)
            assert is_ext_addr(e.tags_code)
            unit = store.consume_queue_ext(rec.topic, rec.queue_id).unit(e.tags_code)
            assert unit.tags_code == java_string_hash(rec.properties.get("TAGS")) if rec.properties.get("TAGS") else unit.tags_code == 0
            assert unit.msg_store_time == rec.store_timestamp
            n += 1
        assert n > 100
    assert verify_store(root, cfg).findings == []


def test_a_damaged_ext_unit_is_a_mismatch_and_a_missing_one_is_named(ext_store, tmp_path):
    root, config, _ = ext_store
    cfg = MessageStoreConfig.from_mapping(config)
    copy = shutil.copytree(root, tmp_path / "store")
    f = sorted((copy / "consumequeue_ext" / "TopicB" / "1").iterdir())[0]
    with open(f, "r+b") as fh:
        fh.seek(2)  # the first unit's tagsCode
        fh.write(struct.pack(">q", 4242))
    found = verify_store(copy, cfg).findings
    assert [x.kind for x in found] == ["CQ_MISMATCH"] and "tagsCode 4242" in found[0].message
    f.unlink()
    kinds = {x.kind for x in verify_store(copy, cfg).findings}
    assert kinds == {"CQ_EXT_UNIT"}


def _files(d):
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())} if d.is_dir() else {}


@pytest.mark.parametrize("case", ["crashed", "torn", "deleted queue"])
def test_ext_queues_recover_as_rocketmq_recovers_them(ext_store, oracle, tmp_path, case):
    """Recovery with ext files as RocketMQ's: ConsumeQueue.recover positions them
    (ConsumeQueueExt.recover, truncateByMaxAddress of the last valid entry's address);
    every record re-dispatched writes an ext unit before its entry, a repeat included,
    so the addresses the queues hold and the ext files' bytes are RocketMQ's; a queue
    that dispatch creates writes its units from ext offset 0 again.  Without a
    broker.conf, enableConsumeQueueExt is taken from the ext files the store holds."""
    from rmqlab.recovery import recover
    from rmqlab.writers.clock import ManualClock
    from tests.oracle.compare import compare_recovery
    from tests.oracle.differential import CLOCK_MS
    from tests.oracle.test_batch_queue import _tear_before_last

    root, config, _ = ext_store
    store = shutil.copytree(root.parent / "crash", tmp_path / "s")
    if case == "torn":
        _tear_before_last(store, lambda r: r.topic == "TopicA", 5)
    elif case == "deleted queue":
        shutil.rmtree(store / "consumequeue" / "TopicA" / "0")
    theirs = oracle.load(shutil.copytree(store, tmp_path / "s.rocketmq"), config)
    cfg = MessageStoreConfig.from_mapping(config)
    if case == "crashed":  # a capture without its broker.conf: the setting from the ext files there, the same recovery
        bare = MessageStoreConfig.from_mapping({k: v for k, v in config.items() if k != "enableConsumeQueueExt"})
        rep = recover(store, config=bare, out=tmp_path / "bare", clock=ManualClock(CLOCK_MS, tick_ms=1))
        assert "enableConsumeQueueExt" in " ".join(rep.notes) and compare_recovery(rep, theirs) == []
        assert _files(tmp_path / "bare" / "consumequeue_ext" / "TopicA" / "0") == _files(tmp_path / "s.rocketmq" / "consumequeue_ext" / "TopicA" / "0")
    rep = recover(store, config=cfg, out=tmp_path / "out", clock=ManualClock(CLOCK_MS, tick_ms=1))
    assert not rep.not_modelled and compare_recovery(rep, theirs) == []
    assert "enableConsumeQueueExt" not in " ".join(rep.notes)
    with open_store(tmp_path / "out", cfg) as s:
        assert compare_queues(s, theirs) == [] and compare_messages(s, theirs) == []
    # the ext files RocketMQ's store left after its load, start (reput) and shutdown
    for q in ("TopicA/0", "TopicA/1", "TopicB/0"):
        mine, rocketmq = _files(tmp_path / "out" / "consumequeue_ext" / q), _files(tmp_path / "s.rocketmq" / "consumequeue_ext" / q)
        assert mine.keys() == rocketmq.keys() and mine == rocketmq, (q, sorted(mine), sorted(rocketmq))
