"""What only RocketMQ 5.5 has, against 5.5 itself: 5.5.1's store on the damage where the
releases' rules part (5.5.1 publishes its store but no client or name server: its
harness runs 5.5.1's store under 5.5.0's broker classes), and RocksDB consume queues in
their own directory (useSeparateStorePathForRocksdbCQ)."""

from __future__ import annotations

import pytest

from rmqlab.config import MessageStoreConfig
from rmqlab.recovery import recover
from tests.oracle import differential as D
from tests.oracle.harness import Oracle, build_or_skip
from tests.oracle.release_checks import LONG_SEEDS, RELEASE_DAMAGE_SEEDS
from tests.oracle.test_differential import _failures
from tests.oracle.workload import RELEASE_DAMAGE_KINDS, long_workload


def test_5_5_1s_store_recovers_as_5_5_0s_rules_say(tmp_path):
    """5.5.1's CommitLog differs from 5.5.0's in a scratch buffer only: rmqlab models
    both with one rule set (rmqlab.releases), which 5.5.1's own store confirms."""
    with Oracle(build_or_skip("5.5.1"), threads=4) as rmq:
        assert rmq.rocketmq_version == "5.5.1"
        written = D.rocketmq_written(rmq, LONG_SEEDS[:1], tmp_path / "w", release="5.5.1", workload=long_workload)
        result = D.damaged(rmq, written, RELEASE_DAMAGE_SEEDS[: len(RELEASE_DAMAGE_KINDS)], tmp_path / "d", release="5.5.1", how=D.release_damage)
    if any(result.values()):
        pytest.fail(_failures(result), pytrace=False)


@pytest.mark.parametrize("kind", ["defaultRocksDB", "combined"])
def test_5_5s_rocksdb_queues_in_their_own_directory_are_read_as_5_5_reads_them(kind, tmp_path):
    """useSeparateStorePathForRocksdbCQ (5.5+): the RocksDB queue store lives in
    consumequeue_rocksdb/ — the store's queues (storeType=defaultRocksDB), or the RocksDB
    half of a CombineConsumeQueueStore beside file queues (rocksdbCQDoubleWriteEnable).
    RocketMQ 5.5.0 writes each; rmqlab reads every unit, message and time probe as it
    reads them back, verify finds nothing wrong, and the crashed RocksDB store's recovery
    ends where RocketMQ 5.5.0's recovery ends and leaves its queues as it does — on a
    copy 5.5.0 then loads as a cleanly shut down store."""
    from rmqlab.forensics.verify import verify_store
    from rmqlab.store import open_store
    from tests.oracle import production as P
    from tests.oracle.compare import compare_messages, compare_queues, compare_time_lookups
    from tests.oracle.workload import random_workload

    config, lines = random_workload(701, n=300)
    config.update({"storeType": "defaultRocksDB"} if kind == "defaultRocksDB" else {"rocksdbCQDoubleWriteEnable": "true"}, useSeparateStorePathForRocksdbCQ="true")
    with Oracle(build_or_skip("5.5.0"), threads=2) as rmq:
        root, config, dump = P.loaded(rmq, P._written(rmq, tmp_path, config, lines, crash_copy=tmp_path / "crash"))
        cfg = MessageStoreConfig.from_mapping(config)
        assert (root / "consumequeue_rocksdb" / "CURRENT").is_file() and not (root / "consumequeue" / "CURRENT").exists()
        with open_store(root, cfg) as store:
            assert store.layout.rocksdb_dir.endswith("consumequeue_rocksdb") and store.layout.rocksdb_queues == (kind == "defaultRocksDB")
            assert compare_queues(store, dump) == [] and compare_messages(store, dump) == [] and compare_time_lookups(store, dump) == []
        assert verify_store(root, cfg).findings == []
        if kind != "defaultRocksDB":
            return
        import shutil

        theirs = rmq.load(shutil.copytree(tmp_path / "crash", tmp_path / "crash.rocketmq"), config)
        rep = recover(tmp_path / "crash", config=cfg, out=tmp_path / "mine")
        r = theirs["recovery"]
        assert rep.release == "5.5.0" and (rep.mode, rep.commitlog_end) == (r["mode"].split()[0], r["commitLogMaxOffsetAfterRecovery"])
        got = {q.queue: q.max_offset_after for q in rep.queues}
        assert got == {k: q["maxOffset"] for k, q in theirs["consumeQueues"].items() if q["cqUnits"] or q["maxOffset"]}
        # applied: the copy's RocksDB (in consumequeue_rocksdb/) serves what 5.5.0's start-up left, and 5.5.0 loads it
        with open_store(tmp_path / "mine", cfg) as mine:
            assert compare_queues(mine, theirs) == []
        again = rmq.load(shutil.copytree(tmp_path / "mine", tmp_path / "mine.rocketmq"), config)
        assert again["recovery"]["mode"].startswith("normal")
        assert {k: q["cqUnits"] for k, q in again["consumeQueues"].items() if q["cqUnits"]} == {k: q["cqUnits"] for k, q in theirs["consumeQueues"].items() if q["cqUnits"]}
