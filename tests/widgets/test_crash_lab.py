"""CrashLab driven headlessly: what it reports must be what a reader finds in the
crashed image and the recovered copy."""

from __future__ import annotations

import pytest

from rmqlab.store import open_store
from rmqlab.widgets import CrashLab


@pytest.fixture
def lab(tmp_path):
    return CrashLab(tmp_path / "lab", messages=60)


def _kept_offsets(result):
    with open_store(result.recovered, strict=False) as s:
        return [r.physical_offset for r in s.commitlog.iter_records()]


def test_power_loss_async_loses_acknowledged_puts_sync_does_not(lab):
    lab.crash_at.value = 50
    lab.run.click()
    async_result = lab.result
    assert async_result.flush_disk_type == "ASYNC_FLUSH" and len(async_result.puts) == 50
    # every lost put lies beyond what was forced to disk
    by_seq = {p.seq: p for p in async_result.puts}
    assert async_result.lost, "ASYNC_FLUSH acknowledges before forcing: a power loss must lose the unforced tail"
    assert all(by_seq[s].physical_offset + by_seq[s].size > async_result.flushed_where for s, _ in async_result.lost)
    assert _kept_offsets(async_result) == [by_seq[s].physical_offset for s in async_result.kept]
    assert "acknowledged, then lost" in lab.output.value
    assert lab.output.value.count("title='put #") == 50

    lab.flush.value = "SYNC_FLUSH"
    lab.run.click()
    sync_result = lab.result
    assert sync_result.lost == [] and len(sync_result.kept) == 50
    assert "nothing that was acknowledged was lost" in lab.output.value


def test_kill_keeps_the_page_cache_and_redispatches(lab):
    lab.scenario.value = "kill -9"
    lab.crash_at.value = 40
    lab.run.click()
    r = lab.result
    assert r.lost == [] and len(r.kept) == 40
    assert r.report.mode == "abnormal"
    with open_store(r.recovered, strict=False) as s:
        entries = sum(s.consume_queue(q.topic, q.queue_id).valid_range()[1] for q in s.queue_ids())
    assert entries == 40  # the undispatched puts are in their queues again


def test_torn_write_cuts_the_put_in_flight(lab):
    lab.scenario.value = "torn write"
    lab.crash_at.value = 30
    lab.run.click()
    r = lab.result
    assert [p.seq for p in r.puts if not p.acknowledged] == [29]
    assert r.kept == list(range(29))
    assert r.report.commitlog_end == r.puts[29].physical_offset


def test_messages_slider_bounds_the_crash_point(lab):
    lab.messages.value = 20
    assert lab.crash_at.max == 20 and lab.crash_at.value <= 20
