"""The crash lab: each scenario, and property tests over random workloads and crash points.

Expectations come from the durability rules, not from rmqlab's output: under
SYNC_FLUSH a put is answered only after its bytes are forced, so nothing acknowledged
may be lost; under ASYNC_FLUSH exactly the records not wholly inside the forced prefix
are lost (when no dirty page was written back); a kill -9 loses nothing (page cache
survives); a torn write keeps exactly the records that ended before the tear.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqlab import lookup
from rmqlab.config import ASYNC_FLUSH, SYNC_FLUSH
from rmqlab.recovery import recover
from rmqlab.lab.crashlab import CrashLab, workload
from rmqlab.store import open_store


@pytest.fixture
def lab(tmp_path):
    return CrashLab(tmp_path / "lab")


def _cq_points_at_matching_records(root, cfg, end):
    with open_store(root, cfg) as st_:
        n = 0
        for q in st_.queue_ids():
            for e in st_.consume_queue(q.topic, q.queue_id).entries(st_.commitlog.min_offset):
                rec = st_.commitlog.read(e.commitlog_offset)
                assert e.commitlog_offset + e.size <= end
                assert (rec.topic, rec.queue_id, rec.queue_offset, rec.total_size) == (q.topic, q.queue_id, e.queue_offset, e.size)
                assert rec.crc_ok
                n += 1
        return n


def test_sync_flush_power_loss_loses_nothing(lab):
    r = lab.power_loss(workload(80, seed=2), flush=SYNC_FLUSH, crash_after=70)
    assert r.flushed_where == r.written_where
    assert r.lost == [] and r.kept == r.acknowledged == list(range(70))
    assert r.report.mode == "abnormal"


def test_async_flush_power_loss_loses_exactly_the_unforced_tail(lab):
    r = lab.power_loss(workload(100, seed=3), flush=ASYNC_FLUSH, crash_after=100)
    unforced = [p.seq for p in r.puts if p.physical_offset + p.size > r.flushed_where]
    assert unforced, "the workload should leave dirty pages"
    assert r.lost_acknowledged == unforced
    assert r.kept == [p.seq for p in r.puts if p.physical_offset + p.size <= r.flushed_where]
    assert all("not forced" in why for _, why in r.lost)
    assert r.report.commitlog_end <= r.flushed_where


def test_writeback_holes_cut_the_log_at_the_first_hole(lab):
    r = lab.power_loss(workload(100, seed=4), flush=ASYNC_FLUSH, crash_after=100, writeback=0.5, seed=7)
    kept = set(r.kept)
    # the log keeps a prefix: no record is kept after a lost one
    assert r.kept == list(range(len(r.kept)))
    assert all(p.physical_offset + p.size <= r.report.commitlog_end for p in r.puts if p.seq in kept)
    # records that were on disk but after the hole are reported as cut, not as unflushed
    cut = [s for s, why in r.lost if "after the point where recovery stopped" in why]
    assert set(cut) <= set(r.on_disk)


def test_torn_write_keeps_what_ended_before_the_tear(lab):
    msgs = workload(60, seed=5)
    r = lab.torn_write(msgs, at_byte=20000)
    ended = [p.seq for p in r.puts if p.physical_offset + p.size <= 20000]
    assert r.acknowledged == ended and r.kept == ended and r.lost == []
    torn = next(p for p in r.puts if p.physical_offset < 20000 < p.physical_offset + p.size)
    assert r.report.commitlog_end == torn.physical_offset
    assert r.report.stop.kind in ("BODY_CRC", "SIZE_MISMATCH", "BAD_SIZE", "BAD_MAGIC")


def test_kill_between_append_and_dispatch_rebuilds_queues_and_index(lab):
    r = lab.kill_before_dispatch(workload(90, seed=6), dispatched=30)
    assert r.lost == [] and r.kept == list(range(90))
    assert r.report.records_redispatched >= 60
    cfg = lab.config
    assert _cq_points_at_matching_records(r.recovered, cfg, r.report.commitlog_end) == 90
    with open_store(r.recovered, cfg) as st_:
        for p in r.puts:
            res = lookup.query_by_key(st_, p.topic, f"k{p.seq}")
            assert [x.physical_offset for x in res.records] == [p.physical_offset]


def test_crash_during_roll(lab):
    r = lab.crash_during_roll(workload(200, seed=8, body_sizes=(500, 3000)))
    roller = r.puts[-1]
    size = lab.config.mapped_file_size_commit_log
    assert not roller.acknowledged and roller.physical_offset % size < roller.size + 8 + 3000
    assert r.report.commitlog_end <= roller.physical_offset - roller.physical_offset % size
    assert r.report.deleted_commitlog_files  # the new (empty) file goes
    assert set(r.lost_acknowledged) == {p.seq for p in r.puts if p.acknowledged and p.physical_offset + p.size > r.flushed_where}


def test_crash_during_index_file_creation(lab):
    r = lab.crash_during_index_creation(workload(200, seed=9), flush=SYNC_FLUSH)
    assert r.lost == []
    assert any("zero header" in n for n in r.report.notes)
    with open_store(r.recovered, lab.config) as st_:
        for p in r.puts:
            res = lookup.query_by_key(st_, p.topic, f"LAB0009{p.seq:08d}")
            assert [x.physical_offset for x in res.records] == [p.physical_offset]


def test_result_renders(lab):
    r = lab.power_loss(workload(40, seed=1), flush=ASYNC_FLUSH)
    assert "acknowledged" in r.to_text() and r.to_dict()["flush_disk_type"] == ASYNC_FLUSH


# -- properties -------------------------------------------------------------------------------------
PROPS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@PROPS
@given(n=st.integers(5, 60), seed=st.integers(0, 10_000), cut=st.floats(0.1, 1.0), writeback=st.sampled_from([0.0, 0.3, 1.0]))
def test_property_sync_flush_acknowledged_survives(tmp_path_factory, n, seed, cut, writeback):
    lab = CrashLab(tmp_path_factory.mktemp("p1"))
    r = lab.power_loss(workload(n, seed=seed), flush=SYNC_FLUSH, crash_after=max(1, int(n * cut)), writeback=writeback, seed=seed)
    assert r.lost == []
    assert set(r.acknowledged) <= set(r.kept)


@PROPS
@given(n=st.integers(5, 60), seed=st.integers(0, 10_000), writeback=st.floats(0.0, 1.0))
def test_property_queues_point_at_matching_records_and_twice_equals_once(tmp_path_factory, n, seed, writeback):
    lab = CrashLab(tmp_path_factory.mktemp("p2"))
    r = lab.power_loss(workload(n, seed=seed), flush=ASYNC_FLUSH, writeback=writeback, seed=seed)
    cfg = lab.config
    _cq_points_at_matching_records(r.recovered, cfg, r.report.commitlog_end)
    # recovering the recovered store again changes nothing
    again = recover(r.recovered, config=cfg)
    assert again.commitlog_end == r.report.commitlog_end
    assert again.records_redispatched == 0 and not again.changed_queues and not again.deleted_commitlog_files
    before = _snapshot(r.recovered)
    recover(r.recovered, config=cfg, in_place=True, sidecar=str(r.recovered) + ".side")
    assert _snapshot(r.recovered) == before


def _snapshot(root):
    return {os.path.relpath(os.path.join(d, f), root): open(os.path.join(d, f), "rb").read() for d, _, fs in os.walk(root) for f in fs}


@PROPS
@given(flips=st.lists(st.tuples(st.integers(0, 6 * 65536 - 1), st.integers(1, 255)), min_size=1, max_size=4))
def test_property_recovery_never_keeps_a_record_that_fails_its_crc(tmp_path_factory, flips):
    from tests.support import copy_store

    src = copy_store("crash", tmp_path_factory.mktemp("p3"))
    files = sorted((src / "commitlog").iterdir())
    for pos, x in flips:
        f = files[pos // 65536]
        with open(f, "r+b") as fh:
            fh.seek(pos % 65536)
            b = fh.read(1)
            fh.seek(pos % 65536)
            fh.write(bytes([b[0] ^ x]))
    rep = recover(src)
    end = rep.commitlog_end
    with open_store(src) as st_:
        for item in st_.commitlog.walk(end=end):
            assert not isinstance(item, Exception), item
            if not item.is_blank:
                body_len = len(item.body)
                assert item.body_crc_ok or body_len == 0  # Java checks non-empty bodies only
