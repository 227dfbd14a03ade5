"""A consume queue is read as RocketMQ loads it: ``ConsumeQueue.recover`` looks for the
end from the third-to-last file on and serves the files before it as they are."""

from __future__ import annotations

import pytest

from rmqlab import lookup
from rmqlab.config import MessageStoreConfig
from rmqlab.engine import Message, MessageStore
from rmqlab.writers.clock import ManualClock
from rmqlab.errors import StoreFormatError
from rmqlab.store import open_store

CFG = MessageStoreConfig.from_mapping({"mappedFileSizeCommitLog": "65536", "mappedFileSizeConsumeQueue": "100"})  # 5 units a file


def _store(tmp_path, n=30):
    root = tmp_path / "s"
    with MessageStore.open(root, CFG) as st:
        for i in range(n):
            st.put(Message("T", b"m%d" % i, {"KEYS": "k%d" % i}, queue_id=0))
    return root


def _zero_units(root, name, first, count):
    with open(root / "consumequeue" / "T" / "0" / name, "r+b") as fh:
        fh.seek(20 * first)
        fh.write(bytes(20 * count))


def test_a_hole_in_an_older_file_does_not_end_the_queue(tmp_path):
    root = _store(tmp_path)  # six files of five units
    _zero_units(root, "00000000000000000000", 1, 2)
    with open_store(root, CFG) as st:
        q = st.consume_queue("T", 0)
        assert q.valid_range(st.commitlog.min_offset) == (0, 30)
        with pytest.raises(StoreFormatError, match=r"entry 1 of T/0 is invalid .*RocketMQ serves no message") as err:
            lookup.get_message(st, "T", 0, 1)
        assert err.value.file.endswith("T/0/00000000000000000000") and err.value.offset == 20
        assert lookup.get_message(st, "T", 0, 3)[1].body == b"m3"
        assert [r.body for _, r in lookup.get_messages(st, "T", 0, 0, 4)] == [b"m0", b"m3", b"m4", b"m5"]


def test_a_hole_in_the_last_three_files_ends_the_queue(tmp_path):
    root = _store(tmp_path)
    _zero_units(root, f"{15 * 20:020d}", 2, 1)  # unit 17, in the third-to-last file
    with open_store(root, CFG) as st:
        assert st.consume_queue("T", 0).valid_range(st.commitlog.min_offset) == (0, 17)


def test_offset_by_time_answers_as_rocketmq_on_a_damaged_timestamp(tmp_path):
    """Java's binarySearchInQueueByTime answers 0 as soon as a probed record's
    storeTimestamp cannot be read or is negative (pickupStoreTimestamp < 0); rmqlab's
    search is Java's, step for step (a differential run found the ideal binary search
    answering otherwise on a damaged store)."""
    import struct

    from rmqlab.format.layout import PREFIX_DTYPES

    cfg = MessageStoreConfig.from_mapping({"mappedFileSizeCommitLog": "65536", "mappedFileSizeConsumeQueue": "2000"})  # one file
    root = tmp_path / "s"
    with MessageStore.open(root, cfg, clock=ManualClock(1_700_000_000_000, tick_ms=1000)) as st:
        for i in range(21):
            st.put(Message("T", b"m%d" % i, queue_id=0))
    with open_store(root, cfg) as st:
        entries = st.consume_queue("T", 0).entries()
        times = [st.commitlog.read(e.commitlog_offset).store_timestamp for e in entries]
        probe = times[3] + 1  # between two records' times: no early answer
        assert lookup.offset_by_time(st, "T", 0, probe) > 0
        mid = entries[10]  # the binary search's first probe: (0 + 20*20) // 40 * 20 -> unit 10
    at = PREFIX_DTYPES[0].fields["store_timestamp"][1]
    with open(root / "commitlog" / f"{0:020d}", "r+b") as fh:
        fh.seek(mid.commitlog_offset + at)
        fh.write(struct.pack(">q", -5))
    with open_store(root, cfg) as st:
        assert lookup.offset_by_time(st, "T", 0, probe) == 0
        assert lookup.offset_by_time(st, "T", 0, probe, "UPPER") == 0
