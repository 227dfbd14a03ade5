"""Stores real RocketMQ brokers left behind (name server, broker and Java client on
loopback; the broker killed with SIGKILL), 5.3.3 and 4.9.7: rmqlab reads and recovers
each as that release's own store does, and its read commands answer on every file."""

from __future__ import annotations

import shutil
import subprocess
import sys

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
