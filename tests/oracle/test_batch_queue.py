"""Batch consume queues written by RocketMQ itself (a topic with ``queue.type=BatchCQ``):
plain messages and producer batches put as one inner-batch record each.  rmqlab reads
every unit as RocketMQ's ``BatchConsumeQueue`` serves it (a queue offset inside a batch
lands on the batch's unit), counts an inner batch's INNER_NUM queue offsets in the
log's order, and verify finds nothing wrong — where it used to report every batch as a
queue-offset gap."""

from __future__ import annotations

import json
import shutil
import struct

import pytest

from rmqlab.cli import main
from rmqlab.config import MessageStoreConfig
from rmqlab.forensics.verify import verify_store
from rmqlab.lookup import get_message
from rmqlab.store import open_store
from rmqlab.store.batch_consume_queue import BatchConsumeQueue

from tests.oracle.compare import compare_messages, compare_queues, compare_time_lookups, compare_walk
from tests.oracle.production import BATCH_TOPICS, loaded, write_batch_store


@pytest.fixture(scope="module")
def batch_store(oracle, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("batch")
    root, config, dump = loaded(oracle, write_batch_store(oracle, tmp, seed=801, crash_copy=tmp / "crash"), topics=BATCH_TOPICS)
    return root, config, dump, tmp / "crash"


def _batch_queues(dump):
    return {k: q for k, q in dump["consumeQueues"].items() if q["cqUnits"] and "batchNum" in q["cqUnits"][0]}


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_batch_units_are_read_as_rocketmq_serves_them(batch_store):
    root, config, dump, _ = batch_store
    cfg = MessageStoreConfig.from_mapping(config)
    batches = _batch_queues(dump)
    assert set(batches) == {"TopicBatch/0", "TopicBatch/1"}
    assert len(list((root / "batchconsumequeue" / "TopicBatch" / "0").iterdir())) > 1  # files roll
    plain = dict(dump, consumeQueues={k: q for k, q in dump["consumeQueues"].items() if k not in batches})
    with open_store(root, cfg) as store:
        assert compare_walk(store, dump) == []
        # every plain queue equal; the batch queues are compared unit by unit below
        assert compare_queues(store, plain) == [f"queues: rmqlab {sorted(batches)} not in RocketMQ, RocketMQ [] not in rmqlab"]
        assert compare_messages(store, plain) == []
        inner = 0
        for key, q in batches.items():
            cq = store.consume_queue(q["topic"], q["queueId"])
            assert isinstance(cq, BatchConsumeQueue)
            assert cq.valid_range() == (q["minOffset"], q["maxOffset"]) and cq.max_physic_offset() == q["maxPhysicOffset"], key
            for u, m in zip(q["cqUnits"], q["messages"]):
                mine = cq.unit_at(u["queueOffset"])
                assert (mine.msg_base_offset, mine.commitlog_offset, mine.size, mine.tags_code, mine.batch_size) == (
                    u["unitQueueOffset"], u["physicalOffset"], u["size"], u["tagsCode"], u["batchNum"]), (key, u)
                _, rec = get_message(store, q["topic"], q["queueId"], u["queueOffset"])  # getMessage serves the batch's record
                assert (rec.physical_offset, rec.queue_offset) == (m["physicalOffset"], m["getMessageQueueOffset"]), (key, u)
                inner += u["batchNum"] > 1
        assert inner > 20
        # BatchConsumeQueue.getOffsetInQueueByTime (the time cache, binarySearchRight), clamped as DefaultMessageStore does
        probes = sum(len(q["offsetInQueueByTime"]) for q in batches.values())
        assert compare_time_lookups(store, dict(dump, consumeQueues=batches)) == [] and probes > 10
    assert verify_store(root, cfg).findings == []


def test_cli_on_a_batch_queue(batch_store, capsys):
    root, config, dump, _ = batch_store
    conf = root.parent / "broker.conf"
    q = _batch_queues(dump)["TopicBatch/1"]
    u = next(u for u in q["cqUnits"] if u["batchNum"] > 2 and u["queueOffset"] > u["unitQueueOffset"])
    code, out, err = run(capsys, "lookup", root, "--config", conf, "--queue", f"TopicBatch:1:{u['queueOffset']}")
    assert code == 0 and str(u["physicalOffset"]) in out and "warning" not in err
    assert f"message {u['queueOffset'] - u['unitQueueOffset'] + 1} of {u['batchNum']} of the inner batch" in err
    code, out, _ = run(capsys, "queue", root, "--config", conf, "--topic", "TopicBatch", "--queue-id", 1)
    assert code == 0 and "batch queue" in out and len(out.splitlines()) == 2 + len({x["unitQueueOffset"] for x in q["cqUnits"]})
    code, out, _ = run(capsys, "info", root, "--config", conf)
    assert code == 0 and "batch consume queues (queue.type=BatchCQ; 1 topic(s), 2 queue(s)): decoded" in out
    assert "recover: modelled (BatchConsumeQueue.recover" in out and "recover: not modelled" not in out
    code, out, _ = run(capsys, "recover", root, "--config", conf)
    assert code == 0 and "NOT APPLICABLE" not in out and "no plan" not in out


def test_a_crashed_batch_store_and_damaged_units(batch_store, tmp_path):
    root, config, dump, crash = batch_store
    cfg = MessageStoreConfig.from_mapping(config)
    found = verify_store(crash, cfg).findings
    assert not [f for f in found if f.severity == "error"], [str(f) for f in found if f.severity == "error"][:3]
    copy = shutil.copytree(root, tmp_path / "store")
    f = sorted((copy / "batchconsumequeue" / "TopicBatch" / "0").iterdir())[0]
    with open(f, "r+b") as fh:
        fh.seek(46 + 36)  # unit 1's batchSize
        old = struct.unpack(">h", fh.read(2))[0]
        fh.seek(46 + 36)
        fh.write(struct.pack(">h", old + 1))
    kinds = sorted((x.kind, x.offset) for x in verify_store(copy, cfg).findings)
    assert kinds == [("BCQ_OFFSET_GAP", 2 * 46), ("CQ_MISMATCH", 46)], kinds


@pytest.mark.spark
def test_spark_verify_equals_verify_on_batch_queues(batch_store, spark, tmp_path):
    """spark.verify counts an inner batch's queue offsets as verify does (no false
    QUEUE_OFFSET_GAP on any of the store's inner batches) and checks the batch units on
    the driver: the same findings on a copy of RocketMQ's store with one damaged unit."""
    from collections import Counter

    import rmqlab.spark

    root, config, _, _ = batch_store
    cfg = MessageStoreConfig.from_mapping(config)
    copy = shutil.copytree(root, tmp_path / "store")
    f = sorted((copy / "batchconsumequeue" / "TopicBatch" / "1").iterdir())[0]
    with open(f, "r+b") as fh:
        fh.seek(46 * 2 + 8)  # unit 2's size
        fh.write(struct.pack(">i", 7))
    want = Counter((x.kind, x.severity, x.file, x.offset) for x in verify_store(copy, cfg).findings)
    assert list(want) == [("CQ_MISMATCH", "error", str(f), 46 * 2)]
    got = Counter((r.kind, r.severity, r.file, r.offset) for r in rmqlab.spark.verify(spark, copy, config=cfg).collect())
    assert got == want


# -- recovery: BatchConsumeQueue.recover / truncateDirtyLogicFiles / putBatchMessagePositionInfo --
def _broker_topics(root, topics=BATCH_TOPICS):
    """config/topics.json as a 5.x broker persists its topic table (TopicConfigManager):
    what RocketMQ's store asks for a topic's queue type."""
    table = {t: {"topicName": t, "readQueueNums": 2, "writeQueueNums": 2, "perm": 6, "topicFilterType": "SINGLE_TAG",
                 "topicSysFlag": 0, "order": False, "attributes": dict(a)} for t, a in topics.items()}
    (root / "config").mkdir(exist_ok=True)
    (root / "config" / "topics.json").write_text(json.dumps({"topicConfigTable": table, "dataVersion": {"counter": 1, "timestamp": 0}}))


def _batch_diff(store, dump) -> list[str]:
    """Each batch queue as RocketMQ serves it after its own recovery: min, max,
    maxPhysicOffset, and the unit behind every queue offset."""
    out = []
    for key, q in _batch_queues(dump).items():
        cq = store.consume_queue(q["topic"], q["queueId"])
        if not isinstance(cq, BatchConsumeQueue):
            out.append(f"{key}: rmqlab reads a {type(cq).__name__}")
            continue
        if cq.valid_range() != (q["minOffset"], q["maxOffset"]) or cq.max_physic_offset() != q["maxPhysicOffset"]:
            out.append(f"{key}: rmqlab {cq.valid_range()} max physic {cq.max_physic_offset()}, RocketMQ {(q['minOffset'], q['maxOffset'])} {q['maxPhysicOffset']}")
        for u in q["cqUnits"]:
            mine = cq.unit_at(u["queueOffset"])
            got = None if mine is None else (mine.msg_base_offset, mine.commitlog_offset, mine.size, mine.tags_code, mine.batch_size)
            if got != (u["unitQueueOffset"], u["physicalOffset"], u["size"], u["tagsCode"], u["batchNum"]):
                out.append(f"{key}@{u['queueOffset']}: rmqlab {got}, RocketMQ {u}")
                break
    return out


def _recovered(oracle, src, tmp_path, name, config, damage, topics=BATCH_TOPICS):
    """The crash copy damaged by ``damage(root)``, recovered by RocketMQ (a copy, loaded
    with ``topics``) and by rmqlab (``recover --out``)."""
    from rmqlab.recovery import recover
    from rmqlab.writers.clock import ManualClock
    from tests.oracle.differential import CLOCK_MS

    store = shutil.copytree(src, tmp_path / name)
    damage(store)
    theirs = oracle.load(shutil.copytree(store, tmp_path / f"{name}.rocketmq"), config, topics=topics)
    rep = recover(store, config=MessageStoreConfig.from_mapping(config), out=tmp_path / f"{name}.rmqlab", clock=ManualClock(CLOCK_MS, tick_ms=1))
    return rep, theirs, tmp_path / f"{name}.rmqlab"


def _tear_before_last(root, which, back: int, config=None):
    """Zero the log from 10 bytes into the ``back``-th last record ``which`` accepts:
    it and everything after it are gone (a torn write)."""
    from rmqlab.store import open_store as _open

    with _open(root, config) as s:
        last = [r for r in s.commitlog.walk() if not r.is_blank and which(r)][-back]
        f = next(x for x in s.commitlog.queue.files if x.file_from_offset <= last.physical_offset < x.file_from_offset + x.file_size)
        path, at, size = f.path, last.physical_offset - f.file_from_offset + 10, f.file_size
    with open(path, "r+b") as fh:
        fh.seek(at)
        fh.write(bytes(size - at))


@pytest.mark.parametrize("case", ["crashed", "torn", "deleted queue", "deleted directory"])
def test_batch_queues_recover_as_rocketmq_recovers_them(batch_store, oracle, tmp_path, case):
    """Recovery models BatchConsumeQueue: recover (46-byte units valid while offset,
    size, msgBaseOffset and batchSize say so), the truncation of units past a torn log,
    and the rebuild of a deleted batch queue in batchconsumequeue/ (no pre-blank: the
    queue starts at file 0 whatever its first msgBaseOffset) — the queue type of a
    rebuilt topic taken from config/topics.json, as the broker's topic table gives it."""
    from tests.oracle.compare import compare_recovery

    _, config, _, crash = batch_store

    def damage(root):
        if case == "torn":
            _tear_before_last(root, lambda r: r.topic == "TopicBatch", 6)
        elif case == "deleted queue":
            shutil.rmtree(root / "batchconsumequeue" / "TopicBatch" / "1")
        elif case == "deleted directory":
            shutil.rmtree(root / "batchconsumequeue")
            _broker_topics(root)  # only topics.json says TopicBatch is a batch topic now

    rep, theirs, out = _recovered(oracle, crash, tmp_path, "s", config, damage)
    assert not rep.not_modelled and compare_recovery(rep, theirs) == []
    changed = {q.queue: q for q in rep.queues if q.queue.startswith("TopicBatch/")}
    if case == "torn":
        assert any(q.cut_entries for q in changed.values()) and rep.lost_records
    if case.startswith("deleted"):
        assert changed["TopicBatch/1"].created and changed["TopicBatch/1"].added_entries > 5
        assert "batchconsumequeue/TopicBatch/1 mkdir OK" in "\n".join(rep.log_lines)
        assert not (out / "consumequeue" / "TopicBatch").exists()
    if case == "deleted queue":  # the rebuilt queue is RocketMQ's bytes: units with compactedOffset INVALID_POS, the reserved zeros
        mine, rocketmq = (sorted((r / "batchconsumequeue" / "TopicBatch" / "1").iterdir()) for r in (out, tmp_path / "s.rocketmq"))
        assert [p.name for p in mine] == [p.name for p in rocketmq] and len(mine) > 1
        assert [p.read_bytes() for p in mine] == [p.read_bytes() for p in rocketmq]
    with open_store(out, MessageStoreConfig.from_mapping(config)) as store:
        assert _batch_diff(store, theirs) == []
        plain = dict(theirs, consumeQueues={k: q for k, q in theirs["consumeQueues"].items() if k not in _batch_queues(theirs)})
        assert [d for d in compare_queues(store, plain) if "TopicBatch" not in d] == []
    assert [f for f in verify_store(out, MessageStoreConfig.from_mapping(config)).findings if f.severity == "error"] == []


def test_a_queue_type_the_topic_table_contradicts_fails_the_load_as_in_rocketmq(batch_store, oracle, tmp_path):
    """ConsumeQueueStore.queueTypeShouldBe: a batchconsumequeue/ topic the topic table
    calls SimpleCQ makes RocketMQ's load fail; rmqlab's recovery says so and writes nothing."""
    from tests.oracle.compare import compare_recovery

    from rmqlab.errors import StoreLayoutError
    from rmqlab.recovery import recover

    _, config, _, crash = batch_store
    store = shutil.copytree(crash, tmp_path / "s")
    _broker_topics(store, {"TopicBatch": {}})
    theirs = oracle.load(shutil.copytree(store, tmp_path / "s.rocketmq"), config, topics={"TopicBatch": {}})
    rep = recover(store, config=MessageStoreConfig.from_mapping(config))  # the dry run says why
    assert theirs["recovery"]["loadResult"] is False and not rep.load_ok
    assert compare_recovery(rep, theirs) == []
    assert any("The queue type of topic: TopicBatch should be BatchCQ, but is SimpleCQ" in p for p in rep.load_problems)
    with pytest.raises(StoreLayoutError, match="nothing was written"):
        recover(store, config=MessageStoreConfig.from_mapping(config), out=tmp_path / "out")
    assert not (tmp_path / "out").exists()
