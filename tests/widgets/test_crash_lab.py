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


@pytest.mark.parametrize("flush", ["SYNC_FLUSH", "ASYNC_FLUSH"])
def test_torn_write_is_a_power_loss_plus_a_torn_record(lab, flush):
    torn = lab.crash(flush=flush, scenario="torn write", crash_at=40)
    power = lab.crash(scenario="power loss")  # the same put, no tear
    assert [p.seq for p in torn.puts if not p.acknowledged] == [39]
    # what was not forced is lost as in the power loss; the torn record is only in flight
    assert torn.lost_acknowledged == [s for s in power.lost_acknowledged if s != 39]
    if flush == "SYNC_FLUSH":
        assert torn.lost == [] and torn.kept == list(range(39))
        assert torn.report.commitlog_end == torn.puts[39].physical_offset
    else:
        assert torn.lost, "ASYNC_FLUSH: the puts the flush had not reached are lost to the power failure"
        assert torn.report.commitlog_end <= torn.flushed_where


def test_controls_rerun_after_the_first_crash_and_crash_runs_once(lab):
    lab.crash_at.value = 20
    assert lab.runs == 0 and lab.result is None  # before the first crash the button starts
    first = lab.crash(flush="ASYNC_FLUSH", scenario="power loss", crash_at=30)
    assert lab.runs == 1 and len(first.puts) == 30
    lab.crash_at.value = 45  # the slider, released: runs again
    assert lab.runs == 2 and len(lab.result.puts) == 45
    assert not lab.run.disabled and lab.run.description == "crash, then recover"


def test_losses_are_grouped_by_reason_in_the_report(lab):
    r = lab.crash(flush="ASYNC_FLUSH", scenario="power loss", crash_at=50)
    groups = r.lost_by_reason()
    assert sum(len(seqs) for seqs, _ in groups) == len(r.lost) > 1
    assert len({why for _, why in groups}) == len(groups)
    html = lab.output.value
    for seqs, why in groups:
        assert html.count(why) == 1
    summary = html.split("<table", 1)[1].split("</table>", 1)[0]
    assert "acknowledged to the producer" in summary and "<th" not in summary  # no empty header row


def test_messages_slider_bounds_the_crash_point(lab):
    lab.messages.value = 20
    assert lab.crash_at.max == 20 and lab.crash_at.value <= 20
