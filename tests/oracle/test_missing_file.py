"""A commitlog file deleted from a store — the last one holding data, with the
pre-allocated empty file after it left, or one from the middle — asked of RocketMQ
5.3.3 itself: it loads the log (MappedFileQueue.load checks lengths only; checkSelf
logs the gap), recovers it and serves what the other files hold.  rmqlab's recovered
copy serves the same, and its read commands read it with one warning naming the gap."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

import pytest

from rmqlab.recovery import recover
from rmqlab.store import open_store
from tests.oracle.compare import compare_all
from tests.support import REFERENCE, copy_store


def _config(case):
    return json.loads((REFERENCE / case / "dump.json").read_text())["storeConfig"]


def _data_files(root):
    """The commitlog files holding something but zeros, in order."""
    return [p for p in sorted((root / "commitlog").iterdir()) if any(p.read_bytes())]


def _cli(*argv):
    return subprocess.run([sys.executable, "-m", "rmqlab", *map(str, argv)], capture_output=True, text=True)


@pytest.mark.parametrize("which", ["last", "middle"])
def test_a_deleted_commitlog_file_is_served_around_as_rocketmq_does(oracle, tmp_path, which):
    root = copy_store("crash", tmp_path / "store")
    data = _data_files(root)
    gone = data[-1] if which == "last" else data[len(data) // 2]
    files = sorted((root / "commitlog").iterdir())
    assert gone != files[-1] or which == "middle"  # the last data file has the pre-allocated one after it
    gone.unlink()
    rocket = tmp_path / "rocketmq"
    shutil.copytree(root, rocket)
    ans = oracle.load(rocket, _config("crash"))
    assert ans.get("ok", True) and ans["recovery"]["loadResult"], ans.get("error")
    out = tmp_path / "recovered"
    rep = recover(root, out=out)
    assert rep.commitlog_end == ans["recovery"]["commitLogMaxOffsetAfterRecovery"]
    assert any("a commitlog file is missing" in n for n in rep.notes)
    with open_store(out) as store:  # strict: a gap is read, not refused
        assert compare_all(store, ans, end=rep.commitlog_end) == []
    size = files[0].stat().st_size
    missing = f"[{int(gone.name)}, {int(gone.name) + size})"
    queue = next(q for q, v in ans["consumeQueues"].items() if any(m.get("status") == "FOUND" for m in v["messages"]))
    topic, qid = queue.split("/")
    for argv in (["dump", out, "--json"], ["queue", out, "--topic", topic, "--queue-id", qid, "--json"], ["lookup", out, "--queue", f"{topic}:{qid}:0"]):
        done = _cli(*argv)
        assert done.returncode == 0, (argv, done.stderr)
        warnings = [line for line in done.stderr.splitlines() if "warning" in line]
        assert len(warnings) == 1 and f"no file for offsets {missing}" in warnings[0], (argv, done.stderr)
    served = [json.loads(line) for line in _cli("dump", out, "--json").stdout.splitlines()]
    walked = [r for r in ans["commitLogWalk"] if r["kind"] == "MESSAGE"]
    assert [r["physical_offset"] for r in served] == [r["physicalOffset"] for r in walked]


def test_rocketmq_49_never_finishes_starting_where_its_reput_meets_a_missing_file(tmp_path):
    """RocketMQ 4.9.7's start() restarts the reput at the consume queues' max physical
    offset and waits, with no timeout, until it reaches the log's end: after a crash
    whose last data file was deleted (the queues point into it), it waits forever; with a
    file missing from the middle instead, recovery re-dispatches past the gap and the
    broker starts.  rmqlab's dry run under 4.9.7 says which (``start_hangs``), and 5.3.3,
    whose reput starts at the log's end, starts both."""
    from concurrent.futures import TimeoutError as FutureTimeout

    from rmqlab.config import MessageStoreConfig
    from tests.oracle import differential as D
    from tests.oracle.harness import Oracle, build_or_skip, load_request
    from tests.oracle.workload import OLDER_DAMAGE_KINDS, broker_checkpoint, odd_topics_workload, older_damage

    rmq = Oracle(build_or_skip("4.9.7"), threads=2)  # its own JVM: a start-up that never ends keeps its thread
    try:
        (_, d, config, ans), = D.rocketmq_written(rmq, [1], tmp_path, "4.9.7", workload=lambda s, release: odd_topics_workload(s, release, 600))
        assert ans.get("ok"), ans.get("error")
        started = {}
        for kind in ("missing_file", "last_data_file_gone"):
            base = tmp_path / kind
            D._copy(d / "crash", base / "store")
            broker_checkpoint(base / "store")
            assert "file" in older_damage(base / "store", len(OLDER_DAMAGE_KINDS) + OLDER_DAMAGE_KINDS.index(kind))
            D._copy(base / "store", base / "rocketmq")
            started[kind] = rmq.submit(load_request(base / "rocketmq", config))
        t0 = time.monotonic()
        assert started["missing_file"].result(timeout=120)["recovery"]["loadResult"]
        took = time.monotonic() - t0
        with pytest.raises(FutureTimeout):  # started alongside, the same size: given three times as long again
            started["last_data_file_gone"].result(timeout=max(5.0, 3 * took))
    finally:
        rmq.proc.kill()
        rmq.close()
    cfg = MessageStoreConfig.from_mapping(config)
    assert recover(tmp_path / "missing_file" / "store", config=cfg, rocketmq_version="4.9.7").start_hangs == ""
    told = recover(tmp_path / "last_data_file_gone" / "store", config=cfg, rocketmq_version="4.9.7")
    assert "waits for it forever" in told.start_hangs
    assert recover(tmp_path / "last_data_file_gone" / "store", config=cfg, rocketmq_version="5.3.3").start_hangs == ""
    with pytest.raises(Exception, match="does not start"):
        recover(tmp_path / "last_data_file_gone" / "store", config=cfg, rocketmq_version="4.9.7", out=tmp_path / "out")
    # the report says it where it says what start-up does
    sizes = ["--commitlog-file-size", config["mappedFileSizeCommitLog"], "--consumequeue-file-size", config["mappedFileSizeConsumeQueue"]]
    done = _cli("report", tmp_path / "last_data_file_gone" / "store", "--rocketmq-version", "4.9.7", *sizes)
    assert done.returncode == 0 and "start-up would never end" in done.stdout, done.stderr[-2000:]
