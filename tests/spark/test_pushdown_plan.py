"""The pushed read's plan (:mod:`rmqlab.spark.pushdown`), without Spark: for msgIds, keys
and store-time windows, the records read through the store's indexes are the records
the full scan finds, on every reference store and on stores whose index files or clocks
are damaged here (the plan then says where it fell back to scanning); and a key query
reads a small part of the log."""

from __future__ import annotations

import struct

import pytest

pytest.importorskip("pyspark")

from rmqlab.format.indexfile import entry_position, slot_position  # noqa: E402
from rmqlab.format.hashing import index_key_hash  # noqa: E402
from rmqlab.format.indexfile import index_key  # noqa: E402
from rmqlab.spark.commitlog_source import SCHEMA, CommitLogReader, Pushed, read_split  # noqa: E402
from rmqlab.store import open_store  # noqa: E402
from tests.spark.conftest import ALL_CASES, store_root  # noqa: E402
from tests.support import copy_store  # noqa: E402


def _reader(root, pushed=None, queues=False):
    r = CommitLogReader({"path": str(root), "splitsize": "64KiB", "mode": "lenient", "pushdownqueues": str(queues).lower()})
    if pushed is not None:
        r.pushed = pushed
    return r


def _rows(splits) -> list[dict]:
    return [row for s in splits for b in read_split(s, columns=SCHEMA.fieldNames(), mode="lenient") for row in b.to_pylist()]


def _matching(rows, pushed: Pushed) -> list[int]:
    """The offsets of the rows Spark's own filter keeps."""
    def keep(x):
        return all(x[c] in v for c, v in pushed.values) and all(
            x[c] is not None and (lo is None or x[c] >= lo) and (hi is None or x[c] <= hi) for c, lo, hi in pushed.ranges)
    return sorted(x["physical_offset"] for x in rows if keep(x))


def _check(root, pushed: Pushed, everything: list[dict], queues: bool = False):
    """The plan's rows, filtered as Spark filters them, are the full scan's (with
    ``queues``: but for the transaction records no consume queue holds); the plan."""
    from rmqlab.rules import goes_to_consume_queue

    plan = _reader(root, pushed, queues).plan()
    if queues:
        everything = [r for r in everything if r["kind"] != "MESSAGE" or goes_to_consume_queue(r["sys_flag"])]
    assert _matching(_rows(plan.splits), pushed) == _matching(everything, pushed), (pushed.describe(), plan.describe())
    return plan


def _key_probes(m: dict) -> list[Pushed]:
    out = [Pushed(values=(("topic", frozenset([m["topic"]])), ("uniq_key", frozenset([m["uniq_key"]]))))] if m["uniq_key"] else []
    if m["keys"]:
        out.append(Pushed(values=(("topic", frozenset([m["topic"]])), ("keys", frozenset([m["keys"]])))))
    return out


@pytest.mark.parametrize("case", ALL_CASES)
def test_msg_ids_keys_and_time_windows_give_the_rows_of_the_full_scan(case):
    root = store_root(case)
    everything = _rows(_reader(root).partitions())
    msgs = [r for r in everything if r["kind"] == "MESSAGE"]
    probes = 0
    for m in msgs[:: max(1, len(msgs) // 9)] + [msgs[-1]]:
        plan = _check(root, Pushed(values=(("msg_id", frozenset([m["msg_id"]])),)), everything)
        assert plan.used == ("msgId",) and plan.read_bytes == m["total_size"]
        for p in _key_probes(m):
            plan = _check(root, p, everything)
            assert "index files" in plan.used and plan.read_bytes < plan.log_bytes / 2, plan.describe()
            probes += 1
        _check(root, Pushed(ranges=(("store_timestamp", m["store_timestamp"] - 50, m["store_timestamp"] + 50),)), everything)
    assert probes >= 10


def test_a_msg_id_that_names_no_record_reads_nothing():
    root = store_root("clean")
    for bad in ("not-an-id", "7F00000100002A9F00000000FFFFFFFF", "7F00000100002A9F0000000000000007"):
        plan = _reader(root, Pushed(values=(("msg_id", frozenset([bad])),))).plan()
        assert _rows(plan.splits) == [] and plan.read_bytes <= 8


def _indexed(root):
    """(file path, max_hash_slot_num, [(entry number, topic, uniq key)]) of the index's
    middle file, for records of the clean store indexed under their UNIQ_KEY."""
    everything = {r["physical_offset"]: r for r in _rows(_reader(root).partitions())}
    with open_store(root) as store:
        f = store.index.files[len(store.index.files) // 2]
        entries = f.entries()
        out = []
        for n in range(1, f.index_count):
            r = everything.get(int(entries[n]["phy_offset"]))
            if r and r["uniq_key"] and int(entries[n]["key_hash"]) == index_key_hash(index_key(r["topic"], r["uniq_key"])):
                out.append((n, r["topic"], r["uniq_key"]))
        return f.path.name, f.max_hash_slot_num, f.index_count, out, list(everything.values())


def _uniq(topic, key) -> Pushed:
    return Pushed(values=(("topic", frozenset([topic])), ("uniq_key", frozenset([key]))))


def test_an_index_file_cut_short_is_scanned_past(tmp_path):
    """A middle index file whose indexCount is lowered hides its later entries (Java's
    walk stops at a prevIndex past the count): the plan scans what it covers."""
    root = copy_store("clean", tmp_path / "s")
    name, slots, count, indexed, everything = _indexed(root)
    n, topic, key = indexed[len(indexed) // 2]  # not the last: the log past the file's end is scanned anyway
    path = root / "index" / name
    with open(path, "r+b") as fh:
        fh.seek(36)
        fh.write(struct.pack(">i", n - 1))  # entry n and later are past the count (Java: slotValue > indexCount)
    plan = _check(root, _uniq(topic, key), everything)
    assert any(name in note for note in plan.notes), plan.describe()
    assert _matching(_rows(plan.splits), _uniq(topic, key))  # the record is found


def test_a_broken_chain_is_scanned_and_a_looping_one_too(tmp_path):
    """A prevIndex past the count, or one that loops, ends the chain where only damage
    ends one: the records it hid are found by scanning the index file's range."""
    for damage in ("past", "loop"):
        root = copy_store("clean", tmp_path / damage)
        name, slots, count, indexed, everything = _indexed(root)
        path = root / "index" / name
        data = path.read_bytes()
        # a record deeper in its chain than the head: damage the head's prevIndex
        for n, topic, key in indexed:
            slot = index_key_hash(index_key(topic, key)) % slots
            head = struct.unpack_from(">i", data, slot_position(slot))[0]
            if head != n:
                break
        else:
            pytest.fail("no chain with two entries in the index file")
        at = entry_position(slots, head) + 16
        with open(path, "r+b") as fh:
            fh.seek(at)
            fh.write(struct.pack(">i", count + 5 if damage == "past" else head))
        plan = _check(root, _uniq(topic, key), everything)
        assert any("only damage" in note for note in plan.notes), plan.describe()
        assert _matching(_rows(plan.splits), _uniq(topic, key)) == [r["physical_offset"] for r in everything if r["uniq_key"] == key and r["topic"] == topic]


def test_index_files_lost_at_the_end_or_with_a_bad_header(tmp_path):
    """The last index file deleted (what an abnormal shutdown's IndexService.load does):
    the log past the rest is scanned.  A header that cannot be right: the whole log is."""
    root = copy_store("clean", tmp_path / "last")
    name, slots, count, indexed, everything = _indexed(root)
    files = sorted((root / "index").iterdir())
    files[-1].unlink()
    msgs = [r for r in everything if r["kind"] == "MESSAGE" and r["uniq_key"]]
    for m in (msgs[-1], msgs[len(msgs) // 2]):
        _check(root, _uniq(m["topic"], m["uniq_key"]), everything)

    root = copy_store("clean", tmp_path / "header")
    with open(root / "index" / name, "r+b") as fh:
        fh.seek(36)
        fh.write(struct.pack(">i", -3))
    n, topic, key = indexed[0]
    plan = _check(root, _uniq(topic, key), everything)
    assert "index files" not in plan.used and any("header damaged" in note for note in plan.notes)


def test_keys_without_a_topic_are_scanned_and_said():
    root = store_root("clean")
    everything = _rows(_reader(root).partitions())
    m = next(r for r in everything if r["kind"] == "MESSAGE" and r["uniq_key"])
    plan = _check(root, Pushed(values=(("uniq_key", frozenset([m["uniq_key"]])),)), everything)
    assert plan.read_bytes == plan.log_bytes and any("no topic" in note for note in plan.notes)


def test_a_clock_stepped_back_stops_time_narrowing(tmp_path):
    """Files are left out by time only while their first records' store times rise; a
    file whose first record was stamped earlier than the file before's makes the plan
    read every file and say so (else the file before would be skipped wrongly)."""
    from rmqlab.format.layout import STORE_TIMESTAMP_AT

    root = copy_store("clean", tmp_path / "s")
    everything = _rows(_reader(root).partitions())
    files = sorted((root / "commitlog").iterdir())
    with open(files[3], "r+b") as fh:
        fh.seek(STORE_TIMESTAMP_AT[0])
        fh.write(struct.pack(">q", 1000))
    everything = _rows(_reader(root).partitions())
    m = next(r for r in everything if r["kind"] == "MESSAGE" and r["physical_offset"] >= int(files[2].name))
    plan = _check(root, Pushed(ranges=(("store_timestamp", m["store_timestamp"], m["store_timestamp"]),)), everything)
    assert "file times" not in plan.used and any("stepped back" in note for note in plan.notes)
    # undamaged, the same query leaves files out
    plan = _reader(store_root("clean"), Pushed(ranges=(("store_timestamp", m["store_timestamp"], m["store_timestamp"]),))).plan()
    assert "file times" in plan.used and plan.read_bytes < plan.log_bytes


def test_never_written_bytes_at_a_file_end_are_not_read(tmp_path):
    """A pre-allocated file is a hole past its last record: the plan reads up to the hole
    (the file system's SEEK_HOLE), and a file written to its end is read whole."""
    from rmqlab.files.extent import data_end

    f = tmp_path / "00000000000000000000"
    with open(f, "wb") as fh:
        fh.truncate(4 << 20)
        fh.write(b"\x01" * 100)
    assert 100 <= data_end(str(f), 4 << 20) < 4 << 20
    with open(f, "r+b") as fh:
        fh.seek((4 << 20) - 1)
        fh.write(b"\x01")
    assert data_end(str(f), 4 << 20) == 4 << 20


# -- a topic through its consume queues (pushdownQueues) ---------------------------------
def _topic(t, *more) -> Pushed:
    return Pushed(values=(("topic", frozenset([t])),) + more)


@pytest.mark.parametrize("case", ALL_CASES)
def test_topics_through_their_consume_queues_give_the_rows_rocketmq_serves(case):
    """Every topic, a topic's queue, a topic in a time window: the rows of the full scan
    but the PREPARED/ROLLBACK transaction records (the reference stores hold both under
    TopicC; no queue holds them) — and without pushdownQueues, those too."""
    root = store_root(case)
    everything = _rows(_reader(root).partitions())
    msgs = [r for r in everything if r["kind"] == "MESSAGE"]
    topics = sorted({r["topic"] for r in msgs})
    narrowed = 0
    for t in topics:
        plan = _check(root, _topic(t), everything, queues=True)
        narrowed += "consume queues" in plan.used and plan.read_bytes < plan.log_bytes
        _check(root, _topic(t, ("queue_id", frozenset([1]))), everything, queues=True)
        assert "consume queues" not in _check(root, _topic(t), everything).used
    m = msgs[len(msgs) // 2]
    _check(root, Pushed(values=(("topic", frozenset([m["topic"]])),), ranges=(("store_timestamp", m["store_timestamp"] - 100, m["store_timestamp"] + 100),)),
           everything, queues=True)
    assert narrowed >= 3


def test_a_queue_deleted_or_holding_a_unit_no_dispatch_writes_is_scanned(tmp_path):
    """crash-cqdeleted lost TopicB/1: its records are found by scanning, and said.  A
    unit pointing back: the same.  A queue ended by a zeroed unit, or cut short (its
    files shorter, as an unflushed queue is after a crash): the log past its end is
    scanned."""
    from rmqlab.format.consumequeue import CQ_STORE_UNIT_SIZE

    root = store_root("crash-cqdeleted")
    plan = _check(root, _topic("TopicB"), _rows(_reader(root).partitions()), queues=True)
    assert "consume queues" not in plan.used and any("TopicB has no consume queue 1" in n for n in plan.notes)

    # a zeroed unit ends the queue, as RocketMQ's recovery ends it: the log past is scanned
    root = copy_store("clean", tmp_path / "zeroed")
    q = sorted((root / "consumequeue" / "TopicA" / "0").iterdir())[0]
    with open(q, "r+b") as fh:
        fh.seek(3 * CQ_STORE_UNIT_SIZE)
        fh.write(bytes(CQ_STORE_UNIT_SIZE))
    plan = _check(root, _topic("TopicA"), _rows(_reader(root).partitions()), queues=True)
    assert "consume queues" in plan.used
    # a unit pointing back: no dispatch writes that, the topic is scanned
    root = copy_store("clean", tmp_path / "back")
    q = sorted((root / "consumequeue" / "TopicA" / "0").iterdir())[0]
    data = q.read_bytes()
    with open(q, "r+b") as fh:
        fh.seek(3 * CQ_STORE_UNIT_SIZE)
        fh.write(data[CQ_STORE_UNIT_SIZE : 2 * CQ_STORE_UNIT_SIZE])
    plan = _check(root, _topic("TopicA"), _rows(_reader(root).partitions()), queues=True)
    assert "consume queues" not in plan.used and any("TopicA/0" in n for n in plan.notes)

    root = copy_store("clean", tmp_path / "short")
    everything = _rows(_reader(root).partitions())
    files = sorted((root / "consumequeue" / "TopicA" / "1").iterdir())
    for f in files[1:]:
        f.unlink()
    with open(files[0], "r+b") as fh:
        fh.truncate(5 * CQ_STORE_UNIT_SIZE)
    plan = _check(root, _topic("TopicA"), everything, queues=True)
    assert "consume queues" in plan.used


def test_a_position_that_looks_like_a_record_but_is_none_gives_no_row(tmp_path):
    """Records read at positions: one whose header checks (size, magic, its own offset)
    but whose lengths do not add up is left out, and the records on both sides of it are
    each read once."""
    import numpy as np
    from dataclasses import replace

    from rmqlab.format.layout import LEN_BODY_AT

    root = copy_store("clean", tmp_path / "s")
    split = _reader(root).partitions()[0]
    first = [r for r in _rows([split]) if r["kind"] == "MESSAGE"][:5]
    bad = first[2]["physical_offset"]
    path = root / "commitlog" / f"{0:020d}"
    with open(path, "r+b") as fh:
        fh.seek(bad + int(LEN_BODY_AT[0]))
        fh.write(struct.pack(">i", 1 << 20))  # bodyLength past the record
    positions = np.array([r["physical_offset"] for r in first], np.int64)
    got = _rows([replace(split, start=0, stop=int(positions[-1]) + 1, positions=positions.tobytes())])
    assert [r["physical_offset"] for r in got] == [int(p) for p in positions if p != bad]
