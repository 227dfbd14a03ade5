"""The compaction store written by RocketMQ itself (a topic with ``cleanup.policy=COMPACTION``):
dispatch copies each keyed record into ``compaction/compactionLog/<topic>/<queue>/`` (its
physicalOffset rewritten to its position there) and a unit into ``compactionCq/``.
rmqlab reads them read-only, verify finds nothing wrong and names damage to either."""

from __future__ import annotations

import json
import shutil

import pytest

from rmqlab.cli import main
from rmqlab.config import MessageStoreConfig
from rmqlab.forensics.verify import verify_store
from rmqlab.store.compaction import CompactionStore

from tests.oracle.production import COMPACTION_TOPICS, loaded, write_compaction_store


@pytest.fixture(scope="module")
def compaction_store(oracle, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compaction")
    return loaded(oracle, write_compaction_store(oracle, tmp, seed=901), topics=COMPACTION_TOPICS)


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_compaction_logs_hold_every_keyed_record_of_the_queue(compaction_store, capsys):
    root, config, dump = compaction_store
    cfg = MessageStoreConfig.from_mapping(config)
    comp = CompactionStore(root)
    assert comp.queue_ids() == [("TopicKV", 0), ("TopicKV", 1)] and comp.positions() == {}
    keyed = {"TopicKV/0": [], "TopicKV/1": []}  # RocketMQ's walk: the queue offsets of the records with KEYS
    for w in dump["commitLogWalk"]:
        if w["kind"] == "MESSAGE" and w["topic"] == "TopicKV" and w["keys"]:
            keyed[f"TopicKV/{w['queueId']}"].append(w["queueOffset"])
    for topic, qid in comp.queue_ids():
        Q = comp.queue(topic, qid)
        try:
            units = list(Q.cq.iter_units())
            assert len(Q.log.queue.files) > 1 and len(Q.cq.queue.files) > 1  # both rolled
            assert [u.msg_base_offset for u in units] == keyed[f"{topic}/{qid}"]  # no compaction has run: every keyed record, none without KEYS
            assert len({u.commitlog_offset for u in units}) == len(units)
        finally:
            Q.close()
    rep = verify_store(root, cfg)
    assert rep.findings == [] and rep.stats["compaction_units"] == sum(map(len, keyed.values()))
    code, out, _ = run(capsys, "compaction", root, "--topic", "TopicKV", "--queue-id", 1, "--json")
    rows = [json.loads(x) for x in out.splitlines()]
    assert code == 0 and [r["msg_base_offset"] for r in rows] == keyed["TopicKV/1"] and all(r["keys"].startswith("key-") for r in rows)
    code, out, _ = run(capsys, "info", root)
    assert "compaction store (cleanup.policy=COMPACTION; 2 compacted queue(s)): decoded" in out
    second = sorted((root / "compaction" / "compactionLog" / "TopicKV" / "1").iterdir())[1]  # a record's physicalOffset is its place in the compaction log
    code, out, _ = run(capsys, "hexdump", second, "--length", 40)
    assert code == 0 and f"physicalOffset={int(second.name)}" in out


def test_damage_to_the_compaction_log_or_queue_is_named(compaction_store, tmp_path):
    root, config, _ = compaction_store
    cfg = MessageStoreConfig.from_mapping(config)
    copy = shutil.copytree(root, tmp_path / "store")
    comp = CompactionStore(copy)
    Q = comp.queue("TopicKV", 0)
    u1, u2 = list(Q.cq.iter_units())[1:3]
    log_file = Q.log.queue.find(u2.commitlog_offset)
    Q.close()
    with open(u1.file, "r+b") as fh:  # unit 1's store time
        fh.seek(u1.position + 20)
        fh.write((12345).to_bytes(8, "big"))
    with open(log_file.path, "r+b") as fh:  # a byte of unit 2's record's properties (its last KEYS value): the copy is no longer the record
        at = u2.commitlog_offset - log_file.file_from_offset + u2.size - 3
        fh.seek(at)
        b = fh.read(1)
        fh.seek(at)
        fh.write(bytes([b[0] ^ 0x20]))
    found = verify_store(copy, cfg).findings
    assert sorted((f.kind, f.file, f.offset) for f in found) == [("COMPACTION_COPY", u2.file, u2.position), ("CQ_MISMATCH", u1.file, u1.position)], [str(f) for f in found]
    assert "store time is" in next(f for f in found if f.kind == "CQ_MISMATCH").message
    shutil.rmtree(copy / "compaction" / "compactionCq" / "TopicKV" / "1")
    assert "COMPACTION_CQ_MISSING" in {f.kind for f in verify_store(copy, cfg).findings}


@pytest.mark.parametrize("case", ["as written", "queue file gone", "stray queue file"])
def test_the_compaction_store_recovers_as_rocketmq_loads_it(compaction_store, oracle, tmp_path, case):
    """CompactionStore.load, as RocketMQ 5.3.3 does it: a log file past the last unit
    of its queue's last file is deleted (TopicPartitionLog.recover), and a queue file
    no log file pairs with fails the store's load (sanityCheck), which rmqlab reports
    and refuses to apply.  The files left are RocketMQ's."""
    from rmqlab.errors import StoreLayoutError
    from rmqlab.recovery import recover

    root, config, _ = compaction_store
    store = shutil.copytree(root, tmp_path / "s")
    cq = store / "compaction" / "compactionCq" / "TopicKV" / "1"
    last = sorted(cq.iterdir())[-1]
    if case == "queue file gone":
        last.unlink()
    elif case == "stray queue file":
        shutil.copy(last, cq / f"{int(last.name) + 10 ** 9:020d}")
    theirs = oracle.load(shutil.copytree(store, tmp_path / "s.rocketmq"), config, topics=COMPACTION_TOPICS)
    cfg = MessageStoreConfig.from_mapping(config)
    rep = recover(store, config=cfg)
    assert not rep.not_modelled and rep.load_ok == theirs["recovery"]["loadResult"]
    logs = lambda r: sorted(p.name for p in (r / "compaction" / "compactionLog" / "TopicKV" / "1").iterdir())  # noqa: E731
    if case == "stray queue file":
        assert rep.load_ok is False and any("sanityCheck" in p for p in rep.load_problems)
        with pytest.raises(StoreLayoutError, match="nothing was written"):
            recover(store, config=cfg, out=tmp_path / "out")
        return
    recover(store, config=cfg, out=tmp_path / "out")
    assert logs(tmp_path / "out") == logs(tmp_path / "s.rocketmq")
    assert (len(logs(tmp_path / "out")) < len(logs(store))) == (case == "queue file gone")
    assert [f for f in verify_store(tmp_path / "out", cfg).findings if f.severity == "error"] == []
