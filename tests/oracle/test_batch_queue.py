"""Batch consume queues written by RocketMQ itself (a topic with ``queue.type=BatchCQ``):
plain messages and producer batches put as one inner-batch record each.  rmqlab reads
every unit as RocketMQ's ``BatchConsumeQueue`` serves it (a queue offset inside a batch
lands on the batch's unit), counts an inner batch's INNER_NUM queue offsets in the
log's order, and verify finds nothing wrong — where it used to report every batch as a
queue-offset gap."""

from __future__ import annotations

import shutil
import struct

import pytest

from rmqlab.cli import main
from rmqlab.config import MessageStoreConfig
from rmqlab.forensics.verify import verify_store
from rmqlab.lookup import get_message
from rmqlab.store import open_store
from rmqlab.store.batch_consume_queue import BatchConsumeQueue

from tests.oracle.compare import compare_messages, compare_queues, compare_walk
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
    code, out, _ = run(capsys, "recover", root, "--config", conf)
    assert code == 0 and "batchconsumequeue" in out


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
    got = Counter((r.kind, r.severity, r.file, r.offset) for r in rmqlab.spark.verify(spark, copy, config=cfg, splitSize="64KiB").collect())
    assert got == want
