"""The shipped sample stores equal a fresh deterministic generation, and tell the
stories the lessons rely on (checked with the read side and recovery, not with
the generator's own bookkeeping)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rmqlab.format.hashing import index_key_hash
from rmqlab.lookup import query_by_key
from rmqlab.recovery import recover
from rmqlab.lab.samples import OTHER_WRITERS, SAMPLES, generate_samples, sample_files, shipped_dir
from rmqlab.store import open_store

SHIPPED = shipped_dir()


def shipped_samples() -> dict[str, bytes]:
    """The shipped files a generation writes (``reference/`` beside them is RocketMQ's)."""
    return {name: data for name, data in sample_files(SHIPPED).items() if not name.startswith("reference/")}


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    d = tmp_path_factory.mktemp("samples")
    generate_samples(d)
    return d


def test_shipped_samples_equal_a_fresh_generation(fresh):
    others = tuple(f"{w}/" for w in OTHER_WRITERS)
    shipped, new = shipped_samples(), {n: d for n, d in sample_files(fresh).items() if not n.startswith(others)}
    assert sorted(shipped) == sorted(new)
    different = [name for name in new if new[name] != shipped[name]]
    assert different == [], f"regenerate with `rmqlab samples --force`: {different[:5]}"


def test_the_stores_other_writers_wrote_come_with_the_samples(fresh):
    """`rmqlab samples DIR` writes beside the sample stores those rocketmq-rust wrote
    (the other-writers guide opens them there), byte for byte, holes kept: the timer
    wheel's tens of MB of zeros take no room on the disk."""
    root = Path(__file__).resolve().parents[2]
    for writer, cases in OTHER_WRITERS.items():
        for case in cases:
            got = sample_files(fresh / writer / case)
            assert got and got == sample_files(root / "tests" / "stores" / writer / case / "store"), (writer, case)
    wheel = list((fresh / "rocketmq-rust" / "timers" / "timerwheel.v2").glob("pages.*"))
    assert sum(p.stat().st_size for p in wheel) > 50 << 20 and sum(p.stat().st_blocks * 512 for p in wheel) < 8 << 20


def test_generation_refuses_to_overwrite(fresh):
    from rmqlab.errors import RmqlabError

    with pytest.raises(RmqlabError, match="already exist"):
        generate_samples(fresh)


def test_samples_are_small():
    total = sum(len(b) for b in shipped_samples().values())
    assert total < 4 * 1024 * 1024


def test_clean_store_reads_whole_and_closed_normally():
    with open_store(SHIPPED / "clean") as s:
        recs = list(s.commitlog.iter_records(include_blank=True))
        assert not s.abort_exists
        msgs = [r for r in recs if not r.is_blank]
        assert all(r.crc_ok for r in msgs)
        assert sum(r.is_blank for r in recs) >= 3  # several files, each ended by a BLANK
        # every consume-queue entry points at the record carrying that queue offset
        for qid in s.queue_ids():
            for e in s.consume_queue(qid.topic, qid.queue_id).entries():
                r = s.commitlog.read(e.commitlog_offset)
                assert (r.topic, r.queue_id, r.queue_offset, r.total_size) == (qid.topic, qid.queue_id, e.queue_offset, e.size)
        # the batch: three consecutive records sharing one store timestamp
        batch = [r for r in msgs if (r.keys or "").startswith("batch-")]
        assert len(batch) == 3 and len({r.store_timestamp for r in batch}) == 1
        # a producer retry: one UNIQ_KEY stored twice
        uniq = [r.uniq_key for r in msgs]
        assert len(uniq) - len(set(uniq)) == 1
    assert recover(SHIPPED / "clean").mode == "normal"


def test_clean_store_has_a_real_hash_collision():
    assert index_key_hash("Orders#Aa") == index_key_hash("Orders#BB")
    with open_store(SHIPPED / "clean") as s:
        aa = query_by_key(s, "Orders", "Aa")
        bb = query_by_key(s, "Orders", "BB")
    assert len(aa.records) == 2 and len(bb.records) == 2
    assert set(aa.collisions) == {r.physical_offset for r in bb.records}
    assert set(bb.collisions) == {r.physical_offset for r in aa.records}


def test_crashed_store_lost_its_unflushed_tail():
    with open_store(SHIPPED / "crashed") as s:
        assert s.abort_exists
        end = s.commitlog.max_offset()
        beyond = [e for q in s.queue_ids() for e in s.consume_queue(q.topic, q.queue_id).entries() if e.commitlog_offset >= end]
    assert len(beyond) == 12  # acknowledged, dispatched, never on disk
    rep = recover(SHIPPED / "crashed")
    assert rep.mode == "abnormal" and rep.commitlog_end == end
    assert sum(q.cut_entries for q in rep.queues) == 12


def test_damaged_store_matches_its_damage_list():
    damage = json.loads((SHIPPED / "damaged" / "damage.json").read_text())
    for c in damage["changes"]:
        crashed = (SHIPPED / "crashed" / c["file"]).read_bytes()
        damaged = (SHIPPED / "damaged" / c["file"]).read_bytes()
        o, n = c["offset"], c["length"]
        assert crashed[o : o + n].hex() == c["old"] and damaged[o : o + n].hex() == c["new"]
    flip_in_last_file = damage["changes"][1]
    rep = recover(SHIPPED / "damaged")
    assert rep.stop.kind == "BODY_CRC"
    # recovery ends the log at the record holding the second flipped bit
    assert rep.stop.file_offset <= flip_in_last_file["offset"] < rep.stop.file_offset + 1024
    assert rep.records_lost > 10


@pytest.mark.parametrize("name", SAMPLES)
def test_every_sample_opens_read_only(name):
    before = sample_files(SHIPPED / name)
    with open_store(SHIPPED / name, strict=False) as s:
        list(s.commitlog.walk())
    assert sample_files(SHIPPED / name) == before
