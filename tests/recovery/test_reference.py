"""Recovery of RocketMQ-written stores ends where RocketMQ 5.3.3's own recovery ended.

For every reference case, a copy is recovered by rmqlab and compared with what
RocketMQ itself recorded in ``dump.json`` after loading the same bytes: the mode, the
commitlog end offset, the max physical offset in the consume queues, RocketMQ's own log
lines (which file the scan started from, why it stopped, which index and commitlog
files it deleted, which queue it re-created), the surviving records, every consume
queue (min/max offset and every entry) and every index answer.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.support import ALL_CASES, REFERENCE, copy_store
from rmqlab import lookup
from rmqlab.config import MessageStoreConfig
from rmqlab.writers.clock import ManualClock
from rmqlab.recovery import recover
from rmqlab.store import open_store


def reference_config(case: str) -> MessageStoreConfig:
    values = json.loads((REFERENCE / case / "config.json").read_text())["storeConfig"]
    return MessageStoreConfig.from_mapping(values)


@pytest.fixture(scope="module", params=ALL_CASES)
def recovered(request, tmp_path_factory):
    case = request.param
    tmp = tmp_path_factory.mktemp(case)
    src = copy_store(case, tmp)
    out = tmp / "recovered"
    # new index files are named by the clock: use one after every store timestamp
    rep = recover(src, config=reference_config(case), out=out, clock=ManualClock(1795303800000, tick_ms=1))
    store = open_store(out, reference_config(case))
    yield case, rep, store, json.loads((REFERENCE / case / "dump.json").read_text())
    store.close()


def _strip(line: str) -> str:
    return re.sub(r"^\[\w+(?: x\d+)?\] RocketmqStore - ", "", line)


def test_mode_end_offset_and_cq_max_match(recovered):
    case, rep, store, dump = recovered
    r = dump["recovery"]
    assert r["mode"].split()[0] == rep.mode
    assert rep.commitlog_end == r["commitLogMaxOffsetAfterRecovery"]
    assert rep.max_phy_offset_in_cq_after == r["maxPhyOffsetInConsumeQueueAfterRecovery"]
    assert store.commitlog.min_offset == r["commitLogMinOffsetAfterRecovery"]


def test_log_lines_match_rocketmq(recovered):
    """The decisions RocketMQ logged, in order: start file, every next file, why the
    scan stopped (with its pos=), the truncation of logic files, deletions, mkdir."""
    case, rep, store, dump = recovered
    theirs = [_strip(l) for l in dump["recovery"]["logLines"]]
    ours = rep.log_lines
    decisive = re.compile(
        r"^(last shutdown|recover from this mapped file|recover next physics file|found a illegal magic|CRC check failed|"
        r"found a half message|recover physics file end|recover physics file over|recover last 3 physics|maxPhyOffsetOfConsumeQueue|"
        r"message store recover end|<store>/consumequeue/\S+ mkdir OK)"
    )
    assert [l for l in ours if decisive.match(l)] == [l for l in theirs if decisive.match(l)]
    # deletions (RocketMQ appends W:/M: counters) and re-created queue directories
    deleted = lambda lines: sorted(re.match(r"delete file\[REF:0\] (\S+) OK", l).group(1) for l in lines if l.startswith("delete file[REF:0]"))
    assert deleted(ours) == deleted(theirs)
    assert sorted(l for l in ours if l.endswith("mkdir OK")) == sorted(l for l in theirs if l.endswith("mkdir OK"))
    assert sorted(l for l in ours if l.startswith("load index file OK")) == sorted(l for l in theirs if l.startswith("load index file OK"))
    # the consume-queue recovery lines (every queue's end), as a set
    cq = lambda lines: sorted(l for l in lines if l.startswith("recover current consume queue"))
    assert cq(ours) == cq(theirs)


def test_surviving_records_match_rocketmq(recovered):
    case, rep, store, dump = recovered
    walk = dump["commitLogWalk"]
    recs = [r for r in store.commitlog.walk(end=rep.commitlog_end)]
    assert len(recs) == len(walk)
    for rec, w in zip(recs, walk):
        assert rec.physical_offset == w["physicalOffset"] and rec.kind == w["kind"]
        if not rec.is_blank:
            assert (rec.total_size, rec.topic, rec.queue_id, rec.queue_offset) == (w["size"], w["topic"], w["queueId"], w["queueOffset"])
            assert rec.crc_ok


def test_consume_queues_match_rocketmq(recovered):
    case, rep, store, dump = recovered
    cqs = dump["consumeQueues"]
    assert sorted(str(q) for q in store.queue_ids()) == sorted(cqs)
    for key, cq in cqs.items():
        q = store.consume_queue(cq["topic"], cq["queueId"])
        assert q.valid_range(store.commitlog.min_offset) == (cq["minOffset"], cq["maxOffset"]), key
        got = [e.to_dict() for e in q.entries(store.commitlog.min_offset)]
        want = [{"queue_offset": u["queueOffset"], "commitlog_offset": u["physicalOffset"], "size": u["size"], "tags_code": u["tagsCode"]} for u in cq["cqUnits"]]
        assert got == want, key
        assert q.max_physic_offset(store.commitlog.min_offset) == cq["maxPhysicOffset"], key


def test_index_answers_match_rocketmq(recovered):
    case, rep, store, dump = recovered
    n = 0
    for q in dump["indexQueries"]:
        res = lookup.query_by_key(store, q["topic"], q["key"])
        assert res.raw_offsets == q["indexPhyOffsets"], (q["topic"], q["key"])  # newest first, duplicates and collisions included
        assert [r.physical_offset for r in res.records] == sorted(o for o in set(q["queryMessagePhyOffsets"]) if o < rep.commitlog_end and _has_key(store, o, q))
        n += 1
    assert n > 1000


def _has_key(store, offset, q) -> bool:
    return lookup.record_has_key(store.commitlog.read(offset), q["topic"], q["key"])


def test_dry_run_changes_nothing(tmp_path):
    src = copy_store("crash-torn", tmp_path)
    before = {p: p.read_bytes() for p in src.rglob("*") if p.is_file()}
    rep = recover(src, config=reference_config("crash-torn"))
    assert rep.applied == "dry-run" and rep.target is None
    assert {p: p.read_bytes() for p in src.rglob("*") if p.is_file()} == before
    # it still says what would happen
    assert rep.commitlog_end == 366653 and rep.stop.kind == "BODY_CRC"
    assert rep.queue("TopicB/2").cut_entries == 1


def test_recovered_store_is_clean_and_recovering_again_changes_nothing(tmp_path):
    src = copy_store("crash-torn", tmp_path)
    out = tmp_path / "once"
    cfg = reference_config("crash-torn")
    rep1 = recover(src, config=cfg, out=out, clock=ManualClock(1795303800000))
    assert not (out / "abort").exists()
    snap = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    rep2 = recover(out, config=cfg, in_place=True, sidecar=tmp_path / "side2", clock=ManualClock(1795303900000))
    assert rep2.mode == "normal" and rep2.commitlog_end == rep1.commitlog_end
    assert rep2.records_redispatched == 0 and not rep2.changed_queues
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == snap
