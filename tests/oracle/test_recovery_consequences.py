"""What RocketMQ's recovery leaves of a queue short of its tail and of an index that is
gone, asked of RocketMQ 5.3.3 itself: the consequences rmqlab's recovery report and
the verify command predict (a queue left short, keys left unfindable) are RocketMQ's."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np

from tests.support import REFERENCE, copy_store
from rmqlab.recovery import plan as recovery_plan

QUEUE = "TopicA/1"


def _config(case):
    return json.loads((REFERENCE / case / "dump.json").read_text())["storeConfig"]


def _zero_queue_tail(root, queue, units):
    """Zero the last ``units`` valid units of a queue (the commitlog stays intact)."""
    f = sorted((root / "consumequeue" / queue).iterdir())[-1]
    e = np.frombuffer(f.read_bytes(), dtype=[("o", ">i8"), ("s", ">i4"), ("t", ">i8")])
    last = int(np.flatnonzero(e["s"] > 0)[-1])
    with open(f, "r+b") as fh:
        fh.seek((last - units + 1) * 20)
        fh.write(bytes(20 * units))


def _verify(root, *argv):
    out = subprocess.run([sys.executable, "-m", "rmqlab", "verify", root, "--json", *map(str, argv)], capture_output=True, text=True)
    return json.loads(out.stdout)


def test_a_queue_short_of_its_tail_is_left_short_where_rocketmq_leaves_it(oracle, tmp_path):
    """clean (normal recovery: re-dispatch from the queues' max physical offset) and
    crash (abnormal: from the start file the checkpoint chooses, here the first): the
    same three units zeroed; RocketMQ's queue afterwards ends where rmqlab's report and
    verify say."""
    for case in ("clean", "crash"):
        root = copy_store(case, tmp_path / case)
        _zero_queue_tail(root, QUEUE, 3)
        rocket = tmp_path / case / "rocketmq"
        shutil.copytree(root, rocket)
        ans = oracle.load(rocket, _config(case))
        assert ans.get("ok", True), ans
        before = json.loads((REFERENCE / case / "dump.json").read_text())["consumeQueues"][QUEUE]["maxOffset"]
        after = ans["consumeQueues"][QUEUE]["maxOffset"]
        p = recovery_plan(root)
        short = {q.queue: q for q in p.report.queues_short}
        p.close()
        finding = next(f for f in _verify(root)["findings"] if f["kind"] == "CQ_BEHIND")
        if QUEUE in short:  # rmqlab: RocketMQ leaves it short
            assert after == short[QUEUE].first_queue_offset == before - 3, case
            assert finding["severity"] == "error" and "stays short" in finding["message"], case
        else:  # rmqlab: RocketMQ re-dispatches the three
            assert after == before, case
            assert finding["severity"] == "warning" and "re-dispatches them" in finding["message"], case
    # the two recoveries differ on this: both branches above were taken
    assert recovery_plan(tmp_path / "clean" / "clean").report.queues_short
    assert not recovery_plan(tmp_path / "crash" / "crash").report.queues_short


def test_keys_left_unfindable_without_index_files_are_rocketmqs(oracle, tmp_path):
    """index/ deleted: RocketMQ rebuilds entries only for the records its recovery
    re-dispatches; the keyed records it then cannot find by any of their keys are the
    ones rmqlab's report counts as unfindable (and verify's INDEX_MISSING repeats).
    The rebuilt index goes into files large enough for it all: RocketMQ names index
    files by the millisecond, and small ones filled within one would share a name
    (tests/oracle/compare.index_file_name_collisions), which makes its answers timing's."""
    from rmqlab.config import MessageStoreConfig
    from tests.oracle.compare import index_file_name_collisions

    for case in ("clean", "crash"):
        root = copy_store(case, tmp_path / case)
        shutil.rmtree(root / "index")
        rocket = tmp_path / case / "rocketmq"
        shutil.copytree(root, rocket)
        config = dict(_config(case), maxHashSlotNum="4096", maxIndexNum="16384")
        conf = tmp_path / case / "broker.conf"
        conf.write_text("".join(f"{k}={v}\n" for k, v in config.items()))
        ans = oracle.load(rocket, config)
        assert not index_file_name_collisions(ans["recovery"]), ans["recovery"].get("indexFiles")
        found: dict[tuple[str, str], set] = {}
        for q in ans["indexQueries"]:
            found[(q["topic"], q["key"])] = set(q["queryMessagePhyOffsets"])
        lost = []
        for w in ans["commitLogWalk"]:
            if w["kind"] != "MESSAGE":
                continue
            keys = [k for k in (w["keys"] or "").split(" ") if k] + ([w["uniqKey"]] if w["uniqKey"] else [])
            if keys and (w["sysFlag"] & 0xC) != 0xC and not any(w["physicalOffset"] in found.get((w["topic"], k), ()) for k in keys):
                lost.append(w["physicalOffset"])
        p = recovery_plan(root, config=MessageStoreConfig.from_mapping(config))
        rep = p.report
        p.close()
        assert rep.index_unfindable == len(lost), case
        assert rep.index_unfindable_first == sorted(lost)[:5], case
        missing = [f for f in _verify(root, "--config", conf)["findings"] if f["kind"] == "INDEX_MISSING"]
        if lost:
            assert any(f"{len(lost)} keyed record(s) stay unfindable" in f["message"] for f in missing), (case, missing)
        else:
            assert all("indexes them again" in f["message"] for f in missing), (case, missing)
