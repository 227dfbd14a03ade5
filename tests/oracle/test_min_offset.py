"""Where a queue starts after its oldest records are gone, asked of RocketMQ 5.3.3
itself: ``ConsumeQueue.correctMinOffset`` (run on every queue by
``ConsumeQueueStore.recoverOffsetTable`` at start-up) searches the queue's FIRST file for
the first unit at or past the log's min offset, and when none there is, leaves the
queue's min where load put it (0) — whatever later files hold.  A store RocketMQ wrote
with 100-byte queue files (five units) and its first commitlog file deleted: some
queues have a whole first file of units into the deleted file."""

from __future__ import annotations

from tests.oracle import differential as D
from tests.oracle.workload import long_workload
from rmqlab.config import MessageStoreConfig
from rmqlab.store import open_store

SEEDS = [1, 2]  # long workloads whose queues have a first file wholly into commitlog file 0


def test_a_queue_whose_first_file_points_below_the_log_keeps_min_offset_0(oracle, tmp_path):
    written = D.rocketmq_written(oracle, SEEDS, tmp_path, "5.3.3", workload=long_workload)
    decided = 0
    for seed, d, config, ans in written:
        assert ans.get("ok"), ans.get("error")
        store = D._copy(d / "clean", d / "store")
        sorted((store / "commitlog").iterdir())[0].unlink()
        dump = oracle.load(D._copy(store, d / "rocketmq"), config)
        assert D.recover_and_read(store, d / "out", config, dump) == [], seed
        with open_store(d / "out", MessageStoreConfig.from_mapping(config)) as s:
            log_min = s.commitlog.min_offset
            for q in s.queue_ids():
                cq = s.consume_queue(q.topic, q.queue_id)
                first_file = cq.parts(0, len(cq.queue.files[0].buf) // 20)[0][1] if cq.queue.files and cq.first_slot_offset == 0 else None
                if first_file is not None and (first_file["commitlog_offset"] < log_min).all() and cq.valid_range(log_min)[1] > len(first_file):
                    decided += 1
                    assert cq.valid_range(log_min)[0] == 0 == dump["consumeQueues"][f"{q.topic}/{q.queue_id}"]["minOffset"]
    assert decided >= 2  # the rule decided queues of these stores
