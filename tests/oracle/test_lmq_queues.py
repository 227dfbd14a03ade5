"""LMQ queues written by RocketMQ itself (``enableLmq``, ``enableMultiDispatch``): the
units of ``%LMQ%…`` queues point at the records of other topics that name them in
``INNER_MULTI_DISPATCH``; rmqlab reads them as RocketMQ does, verify checks each
against its record (ConsumeQueue.multiDispatchLmqQueue) and finds damage to them."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from rmqlab.config import MessageStoreConfig
from rmqlab.forensics.verify import verify_store
from rmqlab.store import open_store

from tests.oracle.compare import compare_messages, compare_queues
from tests.oracle.production import loaded, write_lmq_store


@pytest.fixture(scope="module")
def lmq_store(oracle, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lmq")
    return loaded(oracle, write_lmq_store(oracle, tmp, seed=501, crash_copy=tmp / "crash"))


def test_lmq_queues_read_and_verify_as_rocketmq_wrote_them(lmq_store):
    root, config, dump = lmq_store
    lmq = sorted(q for q in dump["consumeQueues"] if q.startswith("%LMQ%"))
    assert len(lmq) >= 2 and all(q.endswith("/0") for q in lmq)  # queue 0, as MixAll.isLmq makes it
    cfg = MessageStoreConfig.from_mapping(config)
    with open_store(root, cfg) as store:
        assert store.layout.lmq_topics == sorted(q.split("/")[0] for q in lmq)
        assert compare_queues(store, dump) == [] and compare_messages(store, dump) == []
    rep = verify_store(root, cfg)
    units = sum(dump["consumeQueues"][q]["maxOffset"] - dump["consumeQueues"][q]["minOffset"] for q in lmq)
    assert rep.findings == [] and rep.stats["lmq_entries"] == units > 20


@pytest.mark.parametrize("at, value, kind", [
    (0, struct.pack(">q", 1), "LMQ_DANGLING"),     # no record starts there
    (8, struct.pack(">i", 7), "LMQ_MISMATCH"),     # the wrong size
    (12, struct.pack(">q", 99), "LMQ_MISMATCH"),   # the wrong tagsCode
])
def test_damage_to_an_lmq_unit_is_named(lmq_store, tmp_path, at, value, kind):
    root, config, _ = lmq_store
    copy = shutil.copytree(root, tmp_path / "store")
    f = sorted((copy / "consumequeue" / "%LMQ%room0" / "0").iterdir())[0]
    with open(f, "r+b") as fh:
        fh.seek(20 * 2 + at)  # unit 2
        fh.write(value)
    rep = verify_store(copy, MessageStoreConfig.from_mapping(config))
    assert [(x.kind, x.file, x.offset) for x in rep.findings] == [(kind, str(f), 40)]


@pytest.mark.parametrize("case", ["deleted queue", "torn"])
def test_lmq_queues_recover_as_rocketmq_recovers_them(lmq_store, oracle, tmp_path, case):
    """Recovery re-dispatches LMQ units as ConsumeQueue.multiDispatchLmqQueue does: a
    record already in its own queue still gets its units in the LMQ queues it names, so
    a deleted LMQ queue is rebuilt (queue 0, from the offsets INNER_MULTI_QUEUE_OFFSET
    gives, pre-blank filled as putMessagePositionInfo does); a torn log cuts LMQ units as
    any.  Without a broker.conf the flags are taken from the LMQ queues the store holds."""
    from rmqlab.recovery import recover
    from rmqlab.writers.clock import ManualClock
    from tests.oracle.compare import compare_recovery
    from tests.oracle.differential import CLOCK_MS
    from tests.oracle.test_batch_queue import _tear_before_last

    root, config, _ = lmq_store
    store = shutil.copytree(root.parent / "crash", tmp_path / "s")
    if case.startswith("deleted"):
        shutil.rmtree(store / "consumequeue" / "%LMQ%room1")
    else:
        _tear_before_last(store, lambda r: "INNER_MULTI_DISPATCH" in (r.properties or {}), 4)
    theirs = oracle.load(shutil.copytree(store, tmp_path / "s.rocketmq"), config)
    cfg = MessageStoreConfig.from_mapping(config)
    if case == "deleted queue":  # a capture without its broker.conf: the flags from the LMQ queues there, the same plan
        bare = MessageStoreConfig.from_mapping({k: v for k, v in config.items() if k not in ("enableLmq", "enableMultiDispatch")})
        dry = recover(store, config=bare)
        assert "taken to be on" in " ".join(dry.notes) and dry.commitlog_end == theirs["recovery"]["commitLogMaxOffsetAfterRecovery"]
        assert [(q.queue, q.added_entries, q.max_offset_after) for q in dry.queues] == [(q.queue, q.added_entries, q.max_offset_after) for q in recover(store, config=cfg).queues]
    rep = recover(store, config=cfg, out=tmp_path / "out", clock=ManualClock(CLOCK_MS, tick_ms=1))
    assert not rep.not_modelled and compare_recovery(rep, theirs) == []
    assert "taken to be on" not in " ".join(rep.notes)
    room1 = next(q for q in rep.queues if q.queue == "%LMQ%room1/0")
    if case.startswith("deleted"):
        assert room1.created and room1.added_entries > 10 and room1.max_offset_after == theirs["consumeQueues"]["%LMQ%room1/0"]["maxOffset"]
    else:
        assert any(q.cut_entries for q in rep.queues if q.queue.startswith("%LMQ%")) and rep.lost_records
    with open_store(tmp_path / "out", cfg) as s:
        assert compare_queues(s, theirs) == [] and compare_messages(s, theirs) == []
    # nothing wrong but, when torn, the torn record RocketMQ leaves past the new end
    size = cfg.mapped_file_size_commit_log
    end = (f"{rep.commitlog_end - rep.commitlog_end % size:020d}", rep.commitlog_end % size)
    assert [e for e in verify_store(tmp_path / "out", cfg).errors if case != "torn" or (Path(e.file).name, e.offset) != end] == []
