"""The timer store a real RocketMQ 5.3.3 broker left (tests/oracle/broker.py: one timer
message due in 2 s, which fired before the kill, five due in an hour): ``rmqlab timers``
lists exactly the five, ``verify`` finds nothing wrong with it, and when the log loses
them, verify names each timer-log unit left pointing past its end and recovery's
report names the pending timer messages it cuts."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from rmqlab.format.timer import TIMER_TOPIC
from rmqlab.forensics.verify import verify_store
from rmqlab.recovery import recover
from rmqlab.store import open_store


def cli(*argv):
    return subprocess.run([sys.executable, "-m", "rmqlab", *map(str, argv)], capture_output=True, text=True, timeout=300)


def _timer_sends(cap, kind):
    return [m for m in cap.sent if m["kind"] == kind]


def test_timers_lists_exactly_the_pending_timer_messages(broker_capture):
    done = cli("timers", broker_capture.store, "--json")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    pending = _timer_sends(broker_capture, "timer-pending")
    assert len(pending) == 5
    assert sorted(r["uniq_key"] for r in rows) == sorted(m["msgId"] for m in pending)
    assert all(r["state"] == "pending" and r["real_topic"] == "CaptureTimer" for r in rows)
    by_key = {r["keys"]: r for r in rows}
    assert [by_key[m["keys"]]["real_queue_id"] for m in pending] == [m["queueId"] for m in pending]
    everything = [json.loads(line) for line in cli("timers", broker_capture.store, "--all", "--json").stdout.splitlines()]
    fired = _timer_sends(broker_capture, "timer-fires")[0]
    assert [r["state"] for r in everything if r["uniq_key"] == fired["msgId"]] == ["fired"]


def test_verify_is_quiet_on_the_real_timer_store(broker_capture):
    rep = verify_store(broker_capture.store)
    assert not [f for f in rep.findings if f.kind.startswith("TIMER")], [str(f) for f in rep.findings]
    assert rep.stats["timer_pending_units"] == 5


def test_a_log_that_loses_the_timer_records(broker_capture, tmp_path):
    """The log truncated at the first pending timer record (zeros from there on, as a
    truncation leaves a mapped file): the timer log still names the five."""
    store = tmp_path / "s"
    shutil.copytree(broker_capture.store, store)
    with open_store(store, strict=False) as s:
        timers = sorted(s.consume_queue(TIMER_TOPIC, 0).entries(), key=lambda e: e.queue_offset)
        first_pending = timers[1]
        f = s.commitlog.queue.find(first_pending.commitlog_offset)
        path, at = f.path, first_pending.commitlog_offset - f.file_from_offset
        later = [g.path for g in s.commitlog.queue.files if g.file_from_offset > f.file_from_offset]
    data = bytearray(path.read_bytes())
    data[at:] = bytes(len(data) - at)
    path.write_bytes(bytes(data))
    for p in later:
        p.unlink()

    past = verify_store(store).by_kind("TIMER_PAST_END")
    assert len(past) == 5 and {p.severity for p in past} == {"error"}
    rep = recover(store)
    assert rep.commitlog_end == first_pending.commitlog_offset
    assert [r.queue_offset for r in rep.timers_cut] == [1, 2, 3, 4, 5]
    assert "5 pending timer message(s)" in rep.to_text()
