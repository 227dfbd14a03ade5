"""Consume queues in RocksDB, written by RocketMQ itself: ``storeType=defaultRocksDB``
(``RocksDBMessageStore``) and ``rocksdbCQDoubleWriteEnable`` (file queues plus a RocksDB
copy in the same ``consumequeue/``).  rmqlab reads the RocksDB read-only
(``RocksDBConsumeQueueTable`` keys and values, ``RocksDBConsumeQueueOffsetTable``'s min
and max) and answers as RocketMQ's ``RocksDBConsumeQueue`` does; reading changes no
byte of it."""

from __future__ import annotations

import hashlib
import json
import shutil
import struct

import pytest

from rmqlab.cli import main
from rmqlab.config import MessageStoreConfig
from rmqlab.format.rocksdb_queue import cq_key, queue_prefix
from rmqlab.forensics.verify import verify_store
from rmqlab.store import open_store

from tests.oracle.compare import compare_messages, compare_queues, compare_time_lookups
from tests.oracle.production import loaded, write_rocksdb_store

rocksdict = pytest.importorskip("rocksdict")


def _tree(d):
    """(name, size, mtime, digest) of every file under ``d``: what must not change."""
    return sorted((str(p.relative_to(d)), p.stat().st_size, p.stat().st_mtime_ns, hashlib.sha1(p.read_bytes()).hexdigest()) for p in d.rglob("*") if p.is_file())


def _rewrite(directory, edit):
    """Open a *copy's* RocksDB for writing (the test makes damage; rmqlab writes only a recovery it is asked to apply)
    and apply ``edit(db)``."""
    from rocksdict import Options, Rdict

    opts = Options(raw_mode=True)
    db = Rdict(str(directory), options=opts, column_families={"offset": Options(raw_mode=True)})
    try:
        edit(db)
        db.flush()
    finally:
        db.close()
    (directory / "rocksdict-config.json").unlink(missing_ok=True)


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def rocksdb_store(oracle, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rocksdb")
    root, config, dump = loaded(oracle, write_rocksdb_store(oracle, tmp, seed=701, crash_copy=tmp / "crash"))
    return root, config, dump, tmp / "crash"


@pytest.fixture(scope="module")
def double_write_store(oracle, tmp_path_factory):
    return loaded(oracle, write_rocksdb_store(oracle, tmp_path_factory.mktemp("double"), seed=702, double_write=True))


def test_rocksdb_queues_are_read_as_rocketmq_reads_them(rocksdb_store, capsys):
    root, config, dump, _ = rocksdb_store
    cfg = MessageStoreConfig.from_mapping(config)
    assert not any(p.is_dir() for p in (root / "consumequeue").iterdir())  # no file queue: RocksDB's only
    before = _tree(root)
    with open_store(root, cfg) as store:
        assert store.layout.rocksdb_queues and len(store.queue_ids()) > 10
        assert compare_queues(store, dump) == []
        assert compare_messages(store, dump) == []
        assert compare_time_lookups(store, dump) == []
    assert verify_store(root, cfg).findings == []
    conf = root.parent / "broker.conf"
    code, out, _ = run(capsys, "info", root, "--config", conf)
    assert code == 0 and "RocksDB consume queue (storeType=defaultRocksDB): decoded" in out
    q1 = dump["consumeQueues"]["TopicA/1"]
    assert f"offsets [{q1['minOffset']}, {q1['maxOffset']})  in RocksDB  max physic offset {q1['maxPhysicOffset']}" in out
    q = dump["consumeQueues"]["TopicA/1"]
    code, out, _ = run(capsys, "queue", root, "--config", conf, "--topic", "TopicA", "--queue-id", 1, "--json")
    assert code == 0 and [json.loads(x)["commitlog_offset"] for x in out.splitlines()] == [u["physicalOffset"] for u in q["cqUnits"]]
    code, out, _ = run(capsys, "lookup", root, "--config", conf, "--queue", f"TopicA:1:{q['cqUnits'][-1]['queueOffset']}")
    assert code == 0 and str(q["cqUnits"][-1]["physicalOffset"]) in out
    code, out, _ = run(capsys, "recover", root, "--config", conf)
    assert code == 0 and "no plan" not in out and "NOT APPLICABLE" not in out and "RocksDB" in out  # a dry run
    assert _tree(root) == before  # read-only: RocksDB was opened from a view, nothing written beside it


def test_a_crashed_rocksdb_store_is_behind_not_damaged(rocksdb_store):
    """RocksDB's writes skip the WAL (AbstractRocksDBStorage.writeOptions.setDisableWAL):
    the files a SIGKILL leaves hold only what RocksDB flushed; RocketMQ re-dispatches the
    rest at start.  verify says which queues are behind, and finds no damage."""
    _, config, dump, crash = rocksdb_store
    found = verify_store(crash, MessageStoreConfig.from_mapping(config)).findings
    assert not [f for f in found if f.severity == "error"], found[:3]
    behind = {f.message.split(":")[0] for f in found if f.kind == "CQ_BEHIND"}
    with open_store(crash, MessageStoreConfig.from_mapping(config)) as store:
        held = {str(q) for q in store.queue_ids()}
    # every queue of RocketMQ's read is either in the crashed RocksDB or named behind
    assert behind and {k for k, q in dump["consumeQueues"].items() if q["cqUnits"]} <= held | behind


def test_damaged_rocksdb_units_are_named(rocksdb_store, tmp_path):
    root, config, dump, _ = rocksdb_store
    cfg = MessageStoreConfig.from_mapping(config)
    copy = shutil.copytree(root, tmp_path / "store")
    units = dump["consumeQueues"]["TopicB/2"]["cqUnits"]
    victim, moved = units[len(units) // 2], units[1]

    def damage(db):
        db.delete(cq_key("TopicB", 2, victim["queueOffset"]))
        v = bytearray(db[cq_key("TopicA", 0, 1)])
        struct.pack_into(">q", v, 0, moved["physicalOffset"])  # TopicA/0 unit 1 now points at a TopicB record
        db[cq_key("TopicA", 0, 1)] = bytes(v)

    _rewrite(copy / "consumequeue", damage)
    found = verify_store(copy, cfg).findings
    gap = [f for f in found if f.kind == "RDB_CQ_GAP"]
    assert len(gap) == 1 and f"TopicB/2: no unit at queue offset {victim['queueOffset']}" in gap[0].message
    assert any(f.kind in ("CQ_MISMATCH", "CQ_DANGLING") and "TopicA/0" in f.message for f in found), found
    with open_store(copy, cfg) as store:  # RocketMQ's range reads stop at the missing key
        assert store.consume_queue("TopicB", 2).valid_range()[1] == victim["queueOffset"]
    assert queue_prefix("TopicB", 2) in cq_key("TopicB", 2, 0)


def test_double_write_copy_is_compared_with_the_file_queues(double_write_store, tmp_path):
    root, config, dump = double_write_store
    cfg = MessageStoreConfig.from_mapping(config)
    with open_store(root, cfg) as store:
        lay = store.layout
        assert lay.rocksdb_consume_queue and lay.rocksdb_double_write and not lay.rocksdb_queues
        assert compare_queues(store, dump) == []  # the files are what RocketMQ serves
        assert len(store.rocksdb.queue_ids()) == len(store.queue_ids())
    assert verify_store(root, cfg).findings == []
    from rmqlab.recovery import recover

    rep = recover(root, config=cfg)  # the file queues' recovery and what it does to the copy
    assert rep.mode == "normal" and rep.commitlog_end == dump["recovery"]["commitLogMaxOffsetAfterRecovery"] and not rep.not_modelled
    assert any("the RocksDB copy of the queues" in n for n in rep.notes)
    copy = shutil.copytree(root, tmp_path / "store")
    unit = dump["consumeQueues"]["TopicA/3"]["cqUnits"][2]

    def damage(db):
        v = bytearray(db[cq_key("TopicA", 3, unit["queueOffset"])])
        struct.pack_into(">i", v, 8, unit["size"] + 1)
        db[cq_key("TopicA", 3, unit["queueOffset"])] = bytes(v)

    _rewrite(copy / "consumequeue", damage)
    found = verify_store(copy, cfg).findings
    assert [f.kind for f in found] == ["RDB_CQ_DIFFERS"] and f"unit {unit['queueOffset']}" in found[0].message and "TopicA/3" in found[0].message


@pytest.mark.parametrize("case", ["crashed", "torn"])
def test_the_dry_run_of_a_rocksdb_store_is_rocketmqs_recovery(rocksdb_store, oracle, tmp_path, case):
    """The dry run of a RocksDBMessageStore reads RocksDB's progress (CHECKPOINT_TOPIC):
    abnormal recovery starts at the newest file whose first record's physicalOffset is
    at or below it (isMappedFileMatchedRecover with enableRocksDBStore), the log ends
    where RocketMQ ends it, and each queue's max offset after truncateDirty and
    re-dispatch is RocketMQ's.  Nothing is written (RocksDB's view included)."""
    from rmqlab.recovery import recover
    from tests.oracle.test_batch_queue import _tear_before_last

    root, config, _, crash = rocksdb_store
    store = shutil.copytree(crash, tmp_path / "s")
    if case == "torn":
        _tear_before_last(store, lambda r: r.topic == "TopicA", 5)
    before = _tree(store)
    theirs = oracle.load(shutil.copytree(store, tmp_path / "s.rocketmq"), config)
    rep = recover(store, config=MessageStoreConfig.from_mapping(config))
    r = theirs["recovery"]
    assert (rep.mode, rep.commitlog_end) == (r["mode"].split()[0], r["commitLogMaxOffsetAfterRecovery"])
    assert rep.rule.startswith("abnormal, from RocksDB's max physical offset") and rep.records_redispatched > 100
    got = {q.queue: q.max_offset_after for q in rep.queues}
    want = {k: q["maxOffset"] for k, q in theirs["consumeQueues"].items() if q["cqUnits"] or q["maxOffset"]}
    assert got == want
    if case == "torn":
        assert rep.cut_bytes and rep.stop is not None  # the torn record (its queues in RocksDB were not flushed: nothing there to cut)
    assert not rep.not_modelled and _tree(store) == before


@pytest.mark.parametrize("case", ["crashed", "torn", "torn after a clean shutdown"])
def test_a_recovered_rocksdb_store_is_what_rocketmqs_start_up_leaves(rocksdb_store, oracle, tmp_path, case):
    """``recover --out`` writes into the copy's RocksDB what RocketMQ's start-up writes
    into its own: truncateDirty (the last case: RocksDB flushed at the clean shutdown
    holds units past the torn record, and each such queue's max moves below the end —
    by Java's binary search, quirks included), then the re-dispatch (a key per unit,
    each queue's max, the progress).  The copy serves every queue RocketMQ serves after
    its own recovery; RocketMQ loads the copy — the table files rmqlab wrote included —
    as a cleanly shut down store and serves the same; the original is untouched."""
    from rmqlab.recovery import recover
    from tests.oracle.test_batch_queue import _tear_before_last

    root, config, _, crash = rocksdb_store
    cfg = MessageStoreConfig.from_mapping(config)
    store = shutil.copytree(root if case == "torn after a clean shutdown" else crash, tmp_path / "s")
    if case != "crashed":
        _tear_before_last(store, lambda r: r.topic == "TopicA", 5)
    before = _tree(store)
    theirs = oracle.load(shutil.copytree(store, tmp_path / "s.rocketmq"), config)
    end = theirs["recovery"]["commitLogMaxOffsetAfterRecovery"]
    plan_only = recover(store, config=cfg)
    rep = recover(store, config=cfg, out=tmp_path / "mine")
    assert rep.applied == "copy" and rep.commitlog_end == end and _tree(store) == before
    if case == "torn after a clean shutdown":
        assert sum(q.cut_entries for q in rep.queues) > 0 and rep.records_redispatched == 0  # only truncateDirty's writes
    else:
        assert rep.records_redispatched > 100
    with open_store(tmp_path / "mine", cfg) as mine:
        assert compare_queues(mine, theirs) == []
        assert compare_messages(mine, theirs) == []
        assert mine.rocksdb.max_phy_offset() == rep.max_phy_offset_in_cq_after
        # the plan said what applying made
        assert {str(q): mine.consume_queue(q.topic, q.queue_id).valid_range()[1] for q in mine.queue_ids()} == \
               {q.queue: q.max_offset_after for q in plan_only.queues}
    again = oracle.load(shutil.copytree(tmp_path / "mine", tmp_path / "mine.rocketmq"), config)
    assert again["recovery"]["mode"].startswith("normal") and again["recovery"]["commitLogMaxOffsetAfterRecovery"] == end
    assert {k: (q["minOffset"], q["maxOffset"], q["cqUnits"]) for k, q in again["consumeQueues"].items() if q["cqUnits"]} == \
           {k: (q["minOffset"], q["maxOffset"], q["cqUnits"]) for k, q in theirs["consumeQueues"].items() if q["cqUnits"]}
    assert not (tmp_path / "mine" / "consumequeue" / "rocksdict-config.json").exists()
    if case == "torn after a clean shutdown":  # in place: the RocksDB's files are saved in the sidecar first
        rocksdb_files = {f"consumequeue/{p.name}" for p in (store / "consumequeue").iterdir() if p.name != "LOCK"}
        recover(store, config=cfg, in_place=True, sidecar=tmp_path / "side")
        saved = {e.get("file") for e in json.loads((tmp_path / "side" / "manifest.json").read_text())["cuts"]}
        assert saved >= rocksdb_files
        with open_store(store, cfg) as same:
            assert compare_queues(same, theirs) == []


@pytest.fixture(scope="module")
def rocksdb_store_5_4(tmp_path_factory):
    """A RocksDB store (storeType=defaultRocksDB) RocketMQ 5.4.0 wrote and shut down
    cleanly, with the harness open for more."""
    from tests.oracle.harness import Oracle, build_or_skip

    with Oracle(build_or_skip("5.4.0"), threads=2) as rmq:
        tmp = tmp_path_factory.mktemp("rocksdb-5.4")
        root, config, _ = write_rocksdb_store(rmq, tmp, seed=703)
        yield rmq, root, {**config, "checkCRCOnRecover": "true"}


@pytest.mark.parametrize("exit_", ["clean", "crashed"])
def test_5_4_0s_accelerated_recovery_of_rocksdb_queues_is_modelled(rocksdb_store_5_4, tmp_path, exit_):
    """RocketMQ 5.4.0 reads enableAcceleratedRecovery only with RocksDB's queues, and then
    in both recoveries (CommitLog.recoverNormally / recoverAbnormally): the walk begins in
    its start file at RocksDB's max physical offset, so a damaged record of the last
    file before it is never seen.  rmqlab's recovery ends where 5.4.0's does (and where
    it would not without the setting), applies, and 5.4.0 loads the copy."""
    from rmqlab.recovery import recover
    from tests.oracle.workload import _body_at, _records

    rmq, root, config = rocksdb_store_5_4
    store = shutil.copytree(root, tmp_path / "s")
    last = [p for p in sorted((store / "commitlog").iterdir()) if _records(p)][-1]
    recs = _records(last)
    assert len(recs) > 2, "the newest data file must hold several records"
    data = bytearray(last.read_bytes())
    data[_body_at(data, recs[len(recs) // 2][0])] ^= 0x5A
    last.write_bytes(bytes(data))
    if exit_ == "crashed":
        (store / "abort").write_bytes(b"")
    accelerated = {**config, "enableAcceleratedRecovery": "true"}
    theirs = rmq.load(shutil.copytree(store, tmp_path / "s.rocketmq"), accelerated)
    r = theirs["recovery"]
    assert any("recover using acceleration" in line for line in r["logLines"])
    rep = recover(store, config=MessageStoreConfig.from_mapping(accelerated), rocketmq_version="5.4.0", out=tmp_path / "mine")
    assert (rep.mode, rep.commitlog_end) == (r["mode"].split()[0], r["commitLogMaxOffsetAfterRecovery"]) and "at RocksDB's max physical offset" in rep.start_reason
    without = recover(store, config=MessageStoreConfig.from_mapping(config), rocketmq_version="5.4.0")
    assert without.commitlog_end == int(last.name) + recs[len(recs) // 2][0] != rep.commitlog_end  # the walk meets the damage
    with open_store(tmp_path / "mine", MessageStoreConfig.from_mapping(accelerated)) as mine:
        assert compare_queues(mine, theirs) == []
    again = rmq.load(shutil.copytree(tmp_path / "mine", tmp_path / "mine.rocketmq"), accelerated)
    assert again["recovery"]["mode"].startswith("normal") and again["recovery"]["commitLogMaxOffsetAfterRecovery"] == rep.commitlog_end


def _copy_view(root) -> dict:
    """The RocksDB copy beside file queues: each queue's range as a reader sees it, its
    max and min entries, every unit key (past a gap too), and dispatch's progress."""
    from rmqlab.store.rocksdb_queue import RocksDBConsumeQueueStore

    s = RocksDBConsumeQueueStore(root / "consumequeue")
    try:
        out = {"progress": s.max_phy_offset()}
        for topic, qid in s.queue_ids():
            q = s.consume_queue(topic, qid)
            units = [(int(o), int(u["commitlog_offset"]), int(u["size"]), int(u["tags_code"])) for offs, vals in s.units(topic, qid) for o, u in zip(offs, vals)]
            out[f"{topic}/{qid}"] = (q.valid_range(), s.offsets(topic, qid), units)  # every key, past a gap too
        return out
    finally:
        s.close()


def _brief(view) -> str:
    """A queue of :func:`_copy_view` in a line: its range, offsets, how many units and the
    last (the whole list would hide the offsets that differ behind pytest's cut)."""
    if not isinstance(view, tuple):
        return str(view)
    rng, offs, units = view
    return f"range {rng}, offsets {offs}, {len(units)} units, last {units[-1] if units else None}"


def _rewind_copy(store, keep_below: int) -> None:
    """The copy lags (a test's damage, on a copy): its units at or past ``keep_below``
    deleted, each queue's max moved to its last unit kept, its progress to ``keep_below``."""
    from rmqlab.files.rocksdb import close_writable, open_writable
    from rmqlab.format.rocksdb_queue import CHECKPOINT_KEY, RocksDBOffsetValue, offset_key, parse_cq_key

    d = store / "consumequeue"
    db = open_writable(d)
    try:
        offsets = db.get_column_family("offset")
        last = {}
        for k, v in list(db.items()):
            key = parse_cq_key(k)
            if key is None or len(v) != 28:
                continue
            phy = int.from_bytes(v[:8], "big")
            if phy >= keep_below:
                db.delete(k)
            elif phy >= last.get(key[:2], (-1, -1))[0]:
                last[key[:2]] = (phy, key[2])
        for (topic, qid), (phy, q) in last.items():
            offsets[offset_key(topic, qid, True)] = RocksDBOffsetValue.build(dict(commitlog_offset=phy, queue_offset=q))
        offsets[CHECKPOINT_KEY] = keep_below.to_bytes(8, "big")
    finally:
        close_writable(db, d)


DOUBLE_WRITE_CASES = ["crashed", "torn after a clean shutdown", "copy files behind"]


@pytest.mark.parametrize("release", ["5.3.3", "5.4.0", "5.5.0"])
def test_a_recovered_double_write_store_leaves_the_copy_as_rocketmq_does(release, tmp_path):
    """rocksdbCQDoubleWriteEnable: file queues, and a RocksDB copy of them beside.  5.3.3
    feeds the copy from dispatch only (enableRocksdbCQWrite before load: nothing
    truncates it); 5.4+ makes both one CombineConsumeQueueStore (the start must suit the
    copy too, or pass it after combineCQMaxExtraSearchCommitLogFiles files; both are
    truncated; start() re-initialises a copy's queue that differs).  Each case —
    crashed; torn after a clean shutdown (both hold units past the tear); the copy
    lagging several files — is recovered by RocketMQ and by ``recover --out``: the log
    ends at the same offset, the file queues serve the same units, and the copy's
    queues and progress read the same as in RocketMQ's own copy after its start-up.
    Where Java races (start() compares a queue while the copy's group commit may still be
    writing the re-dispatch: the plan's ``copy_racy``), either outcome is RocketMQ's."""
    from rmqlab.recovery import apply, plan
    from rmqlab.store.rocksdb_queue import QueueOffsets
    from tests.oracle.harness import Oracle, build_or_skip
    from tests.oracle.test_batch_queue import _tear_before_last

    with Oracle(build_or_skip(release), threads=2) as rmq:
        from tests.oracle.production import _written
        from tests.oracle.workload import random_workload

        config, lines = random_workload(704, n=450)
        config.update(rocksdbCQDoubleWriteEnable="true", mappedFileSizeCommitLog="32768")  # (eight files: the copy can lag five)
        root, config, _ = _written(rmq, tmp_path, config, lines, tmp_path / "crash")
        config = {**config, "checkCRCOnRecover": "true"}
        cfg = MessageStoreConfig.from_mapping(config)
        failures = {}
        for case in DOUBLE_WRITE_CASES:
            base = tmp_path / case.replace(" ", "-")
            store = shutil.copytree(tmp_path / "crash" if case == "crashed" else root, base / "s")
            if case == "torn after a clean shutdown":
                _tear_before_last(store, lambda r: r.topic == "TopicA", 5, cfg)
            if case == "copy files behind":
                files = sorted((store / "commitlog").iterdir())
                _rewind_copy(store, int(files[-6].name) + 100)  # (a clean exit: normal recovery, whose file test suits the newest file)
            theirs = rmq.load(shutil.copytree(store, base / "rocketmq"), config)
            p = plan(store, config=cfg, rocketmq_version=release)
            racy = dict(p.copy_racy)
            rep = apply(p, out=base / "mine")
            problems = []
            if rep.commitlog_end != theirs["recovery"]["commitLogMaxOffsetAfterRecovery"]:
                problems.append(f"end: rmqlab {rep.commitlog_end}, RocketMQ {theirs['recovery']['commitLogMaxOffsetAfterRecovery']}")
            with open_store(base / "mine", cfg) as mine:
                problems += compare_queues(mine, theirs)
            a, b = _copy_view(base / "mine"), _copy_view(base / "rocketmq")
            for k, offset in racy.items():
                # Java's start() compared while its group commit was still writing (or not):
                # the queue re-initialised there after all is the other outcome
                # (RocksDBConsumeQueue.initializeWithOffset: max (0, offset - 1), min (0, offset)),
                # or re-initialised and then a batch still queued landed on it
                # (putMaxPhyAndCqOffset: the max is that batch's last unit, the min stays)
                if k in b and b[k] != a.get(k) and b[k][2] == a[k][2] and b[k][1] in (QueueOffsets((0, offset - 1), (0, offset)),
                                                                                       QueueOffsets(a[k][1].max, (0, offset))):
                    b[k] = a[k]
            problems += [f"copy {k}: rmqlab {_brief(a.get(k))}, RocketMQ {_brief(b.get(k))}" + (" (racy)" if k in racy else "")
                         for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
            if problems:
                failures[case] = problems[:5]
        assert not failures, failures
