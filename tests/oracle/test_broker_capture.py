"""Stores real RocketMQ brokers left behind (name server, broker and Java client on
loopback; the broker killed with SIGKILL), 5.3.3 and 4.9.7: rmqlab reads and recovers
each as that release's own store does, and its read commands answer on every file.

The timer store the 5.3.3 broker left (one timer message due in 2 s, which fired before
the kill, five due in an hour): ``rmqlab timers`` lists exactly the five, ``verify``
finds nothing wrong with it, and when the log loses them, verify names each timer-log
unit left pointing past its end and recovery's report names the pending timer messages
it cuts.  (In this file, not one of their own: the capture is a broker's run, made once
per test worker that asks for it.)"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from rmqlab.format.timer import TIMER_TOPIC
from rmqlab.forensics.verify import verify_store
from rmqlab.recovery import recover
from rmqlab.store import open_store
from tests.oracle.differential import recover_and_read


def test_the_capture_holds_what_a_crashed_5x_broker_leaves(broker_capture):
    s = broker_capture.store
    for name in ("abort", "checkpoint", "lock", "timerwheel", "config/consumerOffset.json", "config/topics.json",
                 "config/subscriptionGroup.json", "config/delayOffset.json", "config/timercheck"):
        assert (s / name).exists(), name
    assert any((s / "timerlog").iterdir()) and any((s / "commitlog").iterdir()) and any((s / "index").iterdir())
    offsets = (s / "config" / "consumerOffset.json").read_text()
    assert "CaptureA@capture-all" in offsets and "CaptureA@capture-half" in offsets
    kinds = {m["kind"] for m in broker_capture.sent}
    assert {"plain", "delay", "timer-fires", "timer-pending", "batch", "tx-commit", "tx-rollback"} <= kinds
    assert all(m["status"] == "SEND_OK" for m in broker_capture.sent)
    queues = {p.name for p in (s / "consumequeue").iterdir()}
    assert {"CaptureA", "CaptureB", "SCHEDULE_TOPIC_XXXX", "rmq_sys_wheel_timer", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC"} <= queues


def _recovers_and_reads_as_rocketmq(oracle, cap, tmp_path, release):
    shutil.copytree(cap.store, tmp_path / "rocketmq")
    shutil.copytree(cap.store, tmp_path / "rmqlab")
    # the store's own HA port was free when the broker ran; another test's broker may hold
    # it now, and RocketMQ's store binds it when it loads: give the oracle a free one
    from tests.oracle.broker import _free_port

    dump = oracle.load(tmp_path / "rocketmq", {**cap.config, "haListenPort": str(_free_port(set()))})
    assert dump["recovery"]["mode"].startswith("abnormal")
    walked = [w for w in dump["commitLogWalk"] if w["kind"] == "MESSAGE"]
    assert len(walked) >= 60
    diffs = recover_and_read(tmp_path / "rmqlab", tmp_path / "recovered", cap.config, dump, release)
    assert diffs == []


def test_rmqlab_recovers_and_reads_the_capture_as_rocketmq_does(oracle, broker_capture, tmp_path):
    _recovers_and_reads_as_rocketmq(oracle, broker_capture, tmp_path, "5.3.3")


def test_rmqlab_recovers_and_reads_a_49_capture_as_rocketmq_49_does(oracle_49, broker_capture_49, tmp_path):
    assert (broker_capture_49.store / "abort").exists() and (broker_capture_49.store / "config" / "consumerOffset.json").exists()
    assert not (broker_capture_49.store / "timerwheel").exists()  # 4.9 has no timer store
    _recovers_and_reads_as_rocketmq(oracle_49, broker_capture_49, tmp_path, "4.9.7")


def test_read_commands_answer_on_the_capture(broker_capture, broker_capture_49):
    """No traceback, nothing changed: every read command on a real broker's store (5.3.3
    and 4.9.7)."""
    for cap in (broker_capture, broker_capture_49):
        _read_commands_answer(cap.store)


def _read_commands_answer(s):
    before = {p: p.read_bytes() for p in s.rglob("*") if p.is_file() and p.name != "lock"}
    for args in (["info"], ["verify"], ["recover", "--dry-run"], ["dump", "--json"], ["queue", "--topic", "CaptureA", "--queue-id", "0"]):
        done = subprocess.run([sys.executable, "-m", "rmqlab", *args[:1], str(s), *args[1:]], capture_output=True, text=True, timeout=300)
        assert "Traceback" not in done.stderr, (args, done.stderr[-2000:])
        assert done.returncode in (0, 1), (args, done.returncode, done.stderr[-2000:])
    assert {p: p.read_bytes() for p in s.rglob("*") if p.is_file() and p.name != "lock"} == before


def test_the_4x_recovery_rule_is_chosen_from_what_the_store_shows(broker_capture, broker_capture_49, tmp_path):
    """RocketMQ 4.9 (and 5 up to 5.3.1) starts normal recovery at the third-to-last
    commitlog file; a 4.9 broker's topics.json has no TopicConfig attributes (5.0 added
    them), so a clean copy of each capture gets its own release's rule unasked."""
    from rmqlab.recovery import recover
    from rmqlab.store.metadata import written_by_4x

    assert written_by_4x(broker_capture_49.store) is True and written_by_4x(broker_capture.store) is False
    for cap, legacy in ((broker_capture_49, True), (broker_capture, False)):
        copy = tmp_path / cap.store.parent.parent.name
        shutil.copytree(cap.store, copy)
        (copy / "abort").unlink()  # a clean exit: normal recovery
        rep = recover(copy)
        assert rep.mode == "normal" and rep.rule.startswith("normal, last three files") == legacy, rep.rule
        assert (rep.release == "4.9.7") == legacy, rep.release


# -- the timer store --------------------------------------------------------------------
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
