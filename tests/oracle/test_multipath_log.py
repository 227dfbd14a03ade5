"""A log spread over several directories, written by RocketMQ itself.

``storePathCommitLog=ROOT/commitlog,ROOT/commitlog-b`` makes RocketMQ's CommitLog a
``MultiPathMappedFileQueue``: ``tryCreateMappedFile`` puts file number ``offset /
mappedFileSize`` in the sorted directories by that number modulo their count, and
``load`` lists every directory.  rmqlab must read, verify and recover it as one log:
the same walk, queues, messages and index answers RocketMQ reads, the same recovery.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from rmqlab.cli import main
from rmqlab.config import MessageStoreConfig
from rmqlab.forensics.verify import verify_store
from rmqlab.recovery import recover
from rmqlab.store import open_store
from rmqlab.writers.clock import ManualClock

from tests.oracle.compare import compare_all, compare_recovery
from tests.oracle.differential import CLOCK_MS
from tests.oracle.harness import load_request
from tests.oracle.workload import random_workload, write_lines

SEED = 211


def _paths(root: Path) -> str:
    return f"{root / 'commitlog'},{root / 'commitlog-b'}"


def _with_paths(config: dict, root: Path) -> dict:
    return dict(config, storePathCommitLog=_paths(root))


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _no_paths(row: dict) -> dict:
    return {k: v for k, v in row.items() if k != "file"}


def test_a_log_rocketmq_spread_over_two_directories_reads_verifies_and_recovers_as_one(oracle, tmp_path):
    config, lines = random_workload(SEED, n=500)
    config["mappedFileSizeCommitLog"] = "16384"  # many files, so both directories hold several
    clean, crash = tmp_path / "clean", tmp_path / "crash"
    oracle.write(clean, _with_paths(config, clean), write_lines(tmp_path / "in.jsonl", lines), crash_copy=crash)
    # RocketMQ's placement: file i in sorted(paths)[i % 2]
    a = sorted(int(p.name) // 16384 for p in (clean / "commitlog").iterdir())
    b = sorted(int(p.name) // 16384 for p in (clean / "commitlog-b").iterdir())
    assert len(a) >= 3 and len(b) >= 3 and {i % 2 for i in a} == {0} and {i % 2 for i in b} == {1}

    _copy(clean, tmp_path / "clean.rocketmq")
    _copy(crash, tmp_path / "crash.rocketmq")
    _copy(crash, tmp_path / "crash.inplace")
    ans_clean, ans_crash = oracle.map([load_request(tmp_path / "clean.rocketmq", _with_paths(config, tmp_path / "clean.rocketmq")),
                                       load_request(tmp_path / "crash.rocketmq", _with_paths(config, tmp_path / "crash.rocketmq"))])
    assert ans_clean["ok"] and ans_crash["ok"], (ans_clean.get("error"), ans_crash.get("error"))
    assert len(ans_clean["commitLogWalk"]) > 400

    # read: the whole log, as RocketMQ reads it
    cfg = MessageStoreConfig.from_mapping(_with_paths(config, clean))
    with open_store(clean, cfg) as store:
        assert [Path(d) for d in store.commitlog.queue.directories] == [clean / "commitlog", clean / "commitlog-b"]
        assert compare_all(store, ans_clean) == []
    assert verify_store(clean, cfg).errors == []

    # recover a crash: a copy (the whole log gathered in its commitlog/) and in place
    crash_cfg = MessageStoreConfig.from_mapping(_with_paths(config, crash))
    rep = recover(crash, config=crash_cfg, out=tmp_path / "crash.rmqlab", clock=ManualClock(CLOCK_MS, tick_ms=1))
    assert compare_recovery(rep, ans_crash) == []
    assert not (tmp_path / "crash.rmqlab" / "commitlog-b").exists()
    plain = MessageStoreConfig.from_mapping(config)  # the copy is a one-directory store
    with open_store(tmp_path / "crash.rmqlab", plain) as store:
        assert compare_all(store, ans_crash, end=rep.commitlog_end) == []

    inplace = tmp_path / "crash.inplace"
    rep2 = recover(inplace, config=MessageStoreConfig.from_mapping(_with_paths(config, inplace)), in_place=True, clock=ManualClock(CLOCK_MS, tick_ms=1))
    assert compare_recovery(rep2, ans_crash) == []
    assert {p.name for p in (inplace / "commitlog-b").iterdir()} <= {p.name for p in (crash / "commitlog-b").iterdir()}
    with open_store(inplace, MessageStoreConfig.from_mapping(_with_paths(config, inplace))) as store:
        assert compare_all(store, ans_crash, end=rep2.commitlog_end) == []


def test_the_cli_takes_the_directories_from_commitlog_dir_or_the_config(oracle, tmp_path, capsys):
    config, lines = random_workload(SEED + 1, n=200)
    config["mappedFileSizeCommitLog"] = "16384"
    root = tmp_path / "store"
    oracle.write(root, _with_paths(config, root), write_lines(tmp_path / "in.jsonl", lines))
    # a broker.conf naming the broker's own paths (not here): refused, naming the directory
    conf = tmp_path / "broker.conf"
    conf.write_text("storePathCommitLog=/nonexistent/d1/commitlog,/nonexistent/d2/commitlog\n")
    assert main(["verify", str(root), "--config", str(conf)]) == 2
    assert "/nonexistent/d1/commitlog" in capsys.readouterr().err
    # the copies given with --commitlog-dir (the root's commitlog/ is read with them)
    assert main(["verify", str(root), "--commitlog-dir", str(root / "commitlog-b"), "--json"]) == 0
    capsys.readouterr()
    assert main(["dump", str(root), "--commitlog-dir", str(root / "commitlog-b"), "--json"]) == 0
    spread = capsys.readouterr().out.splitlines()
    # the same log in one directory dumps the same records
    merged = _copy(root, tmp_path / "merged")
    for f in (merged / "commitlog-b").iterdir():
        f.rename(merged / "commitlog" / f.name)
    (merged / "commitlog-b").rmdir()
    assert main(["dump", str(merged), "--json"]) == 0
    one = capsys.readouterr().out.splitlines()
    assert len(spread) > 150 and [json.loads(x)["physical_offset"] for x in spread] == [json.loads(x)["physical_offset"] for x in one]
    assert [_no_paths(json.loads(x)) for x in spread] == [_no_paths(json.loads(x)) for x in one]
    # without them: recognised as part of a spread log, and nothing judged or answered
    assert main(["verify", str(root), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert [f["kind"] for f in rep["findings"]] == ["NOT_CHECKED", "NOT_CHECKED"] and "--commitlog-dir" in rep["findings"][-1]["message"]
    assert main(["dump", str(root)]) == 2
    assert "commitlog-b/ holds files named like commitlog files" in capsys.readouterr().err
    assert main(["recover", str(root), "--out", str(tmp_path / "out")]) != 0 and not (tmp_path / "out").exists()
