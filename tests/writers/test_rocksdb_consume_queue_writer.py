"""``truncateDirty`` on RocksDB consume queues, rule by rule from Java's
``RocksDBConsumeQueueOffsetTable`` (``truncateDirty``, ``correctMaxCqOffset``,
``getMinCqOffset`` / ``correctMinCqOffset``) and ``RocksDBConsumeQueueTable
.binarySearchInCQ``, on a queue held in memory; then the same writes made in a real
RocksDB and read back.  The live comparison with RocketMQ's start-up is
tests/oracle/test_rocksdb_queue.py."""

from __future__ import annotations

import pytest

from rmqlab.store.rocksdb_queue import QueueOffsets
from rmqlab.writers.rocksdb_consume_queue_writer import truncate_dirty


class View:
    """One queue T/0 whose unit ``q`` starts at ``phys[q]`` (None: no key), with
    dispatch's progress and the offset family's max and min entries."""

    def __init__(self, phys, progress, max_entry, min_entry=None):
        self.phys, self.progress = phys, progress
        self.table = {("T", 0): QueueOffsets(max_entry, min_entry)}

    def max_phy_offset(self):
        return self.progress

    def offset_table(self):
        return self.table

    def unit_commitlog_offset(self, topic, qid, q):
        return self.phys[q] if 0 <= q < len(self.phys) else None


PHYS = [10, 20, 30, 40, 50]


def test_nothing_is_written_when_the_progress_is_not_past_the_end():
    t = truncate_dirty(View(PHYS, 60, (50, 4), (10, 0)), 60, 0)
    assert t.progress is None and not t.max and not t.min


def test_the_max_moves_to_the_last_unit_below_the_end():
    t = truncate_dirty(View(PHYS, 60, (50, 4), (10, 0)), 45, 0)
    assert t.progress == 45 and t.max == {("T", 0): (40, 3)} and not t.min and not t.failed


def test_a_unit_exactly_at_the_end_probed_first_sets_the_max_to_the_min():
    """binarySearchInCQ stops at a unit starting exactly at the target without
    recording it, and (min=false) keeps only units below that it probed before: the
    first probe (offset 2) is that unit, so correctMaxCqOffset falls back to the min."""
    t = truncate_dirty(View(PHYS, 60, (50, 4), (10, 0)), 30, 0)
    assert t.max == {("T", 0): (10, 0)}
    # probed later, the units below it were seen first: the last of them
    t = truncate_dirty(View(PHYS, 60, (50, 4), (10, 0)), 40, 0)
    assert t.max == {("T", 0): (30, 2)}


def test_a_missing_min_entry_is_found_and_written_first():
    t = truncate_dirty(View(PHYS, 60, (50, 4), None), 45, 25)
    assert t.min == {("T", 0): (30, 2)} and t.max == {("T", 0): (40, 3)}


def test_queues_below_the_end_are_left_alone():
    v = View(PHYS, 60, (50, 4), (10, 0))
    assert truncate_dirty(v, 55, 0).max == {}  # the max unit starts below the end


def test_a_min_past_the_end_makes_java_give_up_on_the_queue():
    """correctMaxCqOffset throws when the min unit starts past the new end; truncateDirty
    logs it and goes on: that queue's max stays."""
    t = truncate_dirty(View(PHYS, 60, (50, 4), (40, 3)), 35, 0)
    assert t.failed == [("T", 0)] and not t.max


def test_the_writes_land_in_rocksdb(tmp_path):
    """The writer opens a RocksDB, makes :func:`truncate_dirty`'s writes and a batch of
    dispatch, and reading it back answers with them."""
    pytest.importorskip("rocksdict")
    import numpy as np
    from rocksdict import Options, Rdict

    from rmqlab.store.rocksdb_queue import RocksDBConsumeQueueStore
    from rmqlab.writers.rocksdb_consume_queue_writer import RocksDBConsumeQueueWriter

    d = tmp_path / "cq"
    opts = Options(raw_mode=True)
    opts.create_missing_column_families(True)
    Rdict(str(d), options=opts, column_families={"offset": Options(raw_mode=True)}).close()
    with RocksDBConsumeQueueWriter(d) as w:
        n = len(PHYS)
        w.put(["T"], np.zeros(n, np.int64), np.zeros(n, np.int64), np.arange(n), np.asarray(PHYS), np.full(n, 10), np.zeros(n, np.int64), np.arange(n) + 1000)
        assert w.max_phy_offset() == 60 and w.offset_table()[("T", 0)].max == (50, 4)
        t = w.truncate_dirty(45, 0)
        assert t.max == {("T", 0): (40, 3)} and t.min == {("T", 0): (10, 0)}
    assert not (d / "rocksdict-config.json").exists()
    store = RocksDBConsumeQueueStore(d)
    try:
        assert store.max_phy_offset() == 45
        assert store.offsets("T", 0) == QueueOffsets((40, 3), (10, 0))
        assert store.consume_queue("T", 0).valid_range() == (0, 4)
        assert store.unit_commitlog_offset("T", 0, 4) == 50  # the key stays, past the max
    finally:
        store.close()
