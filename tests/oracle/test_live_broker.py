"""Following a store a real Apache RocketMQ 5.3.3 broker is writing: RocketMQ's Java
client sends a steady stream (tests/oracle/broker.py ``LiveBroker``, ``rmqlab.oracle.Stream``)
while ``rmqlab tail`` and a Spark streaming query follow the store; the broker is
SIGKILLed in the middle and restarted on the same store.  Every acknowledged message is
seen exactly once by each, in log order, none torn, across file rolls and the restart.
(The long run, with clean-up deleting files too: scripts/live_follow.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from rmqlab.format.msgid import decode_message_id

pytestmark = [pytest.mark.spark]

MESSAGES = 1500


def _acks(path) -> list[dict]:
    text = path.read_text() if path.exists() else ""
    return [json.loads(line) for line in text.splitlines() if line.strip().startswith("{")]


def _wait(cond, timeout: float, what: str) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {timeout:.0f} s")


def test_tail_and_a_stream_follow_a_live_broker_through_a_kill(oracle_command, spark, tmp_path):
    import rmqlab.spark
    from tests.oracle.broker import LiveBroker

    rmqlab.spark.register(spark)
    with LiveBroker(tmp_path / "live", oracle_command, {"mappedFileSizeCommitLog": str(192 << 10)}) as lb:
        client = lb.stream("LiveT", MESSAGES, pause_ms=3, body=200)
        _wait(lambda: (lb.store / "commitlog").is_dir() and any((lb.store / "commitlog").iterdir()), 120, "the broker's first commitlog file")
        tail = subprocess.Popen([sys.executable, "-m", "rmqlab", "tail", str(lb.store), "--json", "--topic", "LiveT", "--interval", "0.05", "--idle-exit", "8"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        stream = (spark.readStream.format("rocketmq").option("startingOffsets", "earliest").option("columns", "physical_offset,topic,msg_id,properties,crc_ok")
                  .load(str(lb.store)).where("topic = 'LiveT'"))
        query = (stream.writeStream.format("parquet").option("path", str(tmp_path / "out")).option("checkpointLocation", str(tmp_path / "ckpt"))
                 .trigger(processingTime="200 milliseconds").start())
        try:
            _wait(lambda: len(_acks(client.acks_path)) >= MESSAGES // 3, 180, "a third of the messages acknowledged")
            lb.kill()  # SIGKILL: no shutdown hook, no last flush
            time.sleep(2)
            lb.restart()
            client.wait(300)
            assert client.returncode == 0, (lb.workdir / "stream-LiveT.err").read_text()[-2000:]
            out, err = tail.communicate(timeout=300)
            query.processAllAvailable()
        finally:
            query.stop()
            if tail.poll() is None:
                tail.kill()
    acks = _acks(client.acks_path)
    assert [a["seq"] for a in acks] == list(range(MESSAGES))
    acked = {a["offsetMsgId"]: a["seq"] for a in acks}
    for name, rows in (("tail", [json.loads(line) for line in out.splitlines()]),
                       ("stream", [r.asDict() for r in spark.read.parquet(str(tmp_path / "out")).collect()])):
        ids = [r["msg_id"] for r in rows]
        assert len(ids) == len(set(ids)), f"{name}: a record given twice"
        offsets = [decode_message_id(i)[2] for i in ids]
        assert name == "stream" or offsets == sorted(offsets), f"{name}: not in log order"
        assert all(r["crc_ok"] for r in rows), f"{name}: a torn record"
        seen = {r["msg_id"]: int(dict(r["properties"])["seq"]) for r in rows}
        missing = [s for i, s in acked.items() if seen.get(i) != s]
        assert not missing, f"{name}: acknowledged messages not seen (or seen as another): {missing[:10]} of {len(missing)}"
    assert "skipped" not in err
    assert len(list((lb.store / "commitlog").iterdir())) >= 3  # it followed rolls
