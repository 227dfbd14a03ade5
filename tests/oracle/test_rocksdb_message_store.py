"""Keys, transactions and timers kept in RocksDB (``rocksdbstore/``, RocketMQ 5.4+),
against RocketMQ 5.4.0 and 5.5.0 themselves.

Each release writes a store with ``indexRocksDBEnable`` (keys only in RocksDB:
``indexFileWriteEnable=false``, ``indexFileReadEnable=false``), ``transRocksDBEnable``
and ``timerRocksDBEnable``: transaction half messages and the op messages that end two
of them, timer messages on the timer topic (``TimerMessageRocksDBStore`` scans them into
its timeline) and one that deletes a timer; then RocketMQ reads it back
(``MessageRocksDBStorage``'s own answers: every key, tag and UNIQ_KEY query, each
family's ``lastOffsetPy``, the pending half messages, the timers and the timer scan's
checkpoint) and rmqlab must read the same.  A second copy gets records without a UNIQ_KEY, which RocksDB's key writer does not
index, so its ``lastOffsetPy`` stays files behind the end of the log, and a damaged
record between the two: RocketMQ's start-up walks back to a file starting at or before
``lastOffsetPy`` (``IndexRocksDBStore.isMappedFileMatchedRecover``), meets the damage and
cuts the log there; rmqlab's dry run must end where RocketMQ's recovery does."""

from __future__ import annotations

import base64
import shutil
import time

import pytest

from rmqlab import lookup as lk
from rmqlab.config import MessageStoreConfig
from rmqlab.forensics.verify import verify_store
from rmqlab.recovery import recover
from rmqlab.store import open_store
from tests.oracle import production as P
from tests.oracle.harness import Oracle, build_or_skip
from tests.oracle.workload import random_workload, write_lines

pytest.importorskip("rocksdict")

HALF, OP = "RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC", "RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC"
TIMER_TOPIC = "rmq_sys_wheel_timer"
ENDED = (0, 2)  # the half messages whose op message is put


def _line(topic: str, body: bytes, properties: dict) -> dict:
    return {"topic": topic, "queue_id": 0, "flag": 0, "body": base64.b64encode(body).decode(), "properties": properties,
            "born_timestamp": 1_700_000_000_000, "born_host": "127.0.0.1:5000", "store_host": "127.0.0.1:10911"}


@pytest.fixture(scope="module", params=["5.4.0", "5.5.0"])
def written(request, tmp_path_factory):
    """(release, store root, config, what RocketMQ read back, the lagging damaged copy,
    RocketMQ's recovery of it)."""
    release = request.param
    tmp = tmp_path_factory.mktemp(f"rocksdbstore-{release}")
    config, lines = random_workload(702, n=200)
    config.update(indexRocksDBEnable="true", indexFileWriteEnable="false", indexFileReadEnable="false", transRocksDBEnable="true", timerRocksDBEnable="true",
                  mappedFileSizeCommitLog="16384", checkCRCOnRecover="true")
    # half messages as the broker puts them to RocksDB's half topic (TransactionalMessageBridge)
    lines += [_line(HALF, b"half-%d" % i, {"REAL_TOPIC": "TopicTx", "REAL_QID": "0", "__transactionId__": f"TX{i:03d}", "UNIQ_KEY": f"U{i:03d}", "KEYS": f"tx{i}"})
              for i in range(6)]
    # timer messages as the broker rewrites them to the timer topic (HookUtils.transformTimerMessage),
    # due in half an hour (the timeline neither fires nor rolls them), and one deleting a timer (TIMER_DEL_UNIQKEY)
    due = [int(time.time() * 1000) + 1_800_000 + i * 1000 for i in range(8)]
    timer = dict(REAL_TOPIC="TopicT", REAL_QID="0")
    lines += [_line(TIMER_TOPIC, b"t", {**timer, "TIMER_OUT_MS": str(d), "UNIQ_KEY": f"UT{i:03d}"}) for i, d in enumerate(due)]
    lines.append(_line(TIMER_TOPIC, b"t", {**timer, "TIMER_OUT_MS": str(due[3]), "UNIQ_KEY": "DEL003", "TIMER_DEL_UNIQKEY": "TopicT+UT003"}))
    with Oracle(build_or_skip(release), threads=2) as rmq:
        assert rmq.rocketmq_version == release
        root, config, results = P._written(rmq, tmp, config, lines)
        halves = [r["wroteOffset"] for r, l in zip(results, lines) if l["topic"] == HALF]
        ops = [_line(OP, b"d", {"REAL_TOPIC": "TopicTx", "__transactionId__": f"TX{i:03d}", "TRANS_OFFSET": str(halves[i])}) for i in ENDED]
        rmq.load(root, config, append=write_lines(tmp / "ops.jsonl", ops))
        root, config, dump = P.loaded(rmq, (root, config, None))
        # the lagging copy: records without UNIQ_KEY (IndexRocksDBStore.buildIndex skips them,
        # so lastOffsetPy stays put) over several files, then a record among them damaged
        lag = shutil.copytree(root, tmp / "lag")
        plain = [_line("TopicA", b"x" * 300, {"KEYS": "plain"}) for _ in range(250)]
        rmq.load(lag, config, append=write_lines(tmp / "plain.jsonl", plain))
        cfg = MessageStoreConfig.from_mapping(config)
        with open_store(lag, cfg) as store:
            last = store.message_rocksdb.last_offset_py()
            files = store.commitlog.queue.files
            # a file between the one holding lastOffsetPy and the newest: its second record's
            # stored body CRC damaged (checkCRCOnRecover finds it)
            victim = next(f for f in files if f.file_from_offset > last + cfg.mapped_file_size_commit_log and f is not files[-1])
            second = victim.file_from_offset + store.commitlog.read(victim.file_from_offset).total_size
        with open(victim.path, "r+b") as fh:
            fh.seek(second - victim.file_from_offset + 9)  # BODYCRC: bytes 8-11 of a record
            b = fh.read(1)
            fh.seek(-1, 1)
            fh.write(bytes([b[0] ^ 0xFF]))
        theirs = rmq.load(shutil.copytree(lag, tmp / "lag.rocketmq"), config)
    yield release, root, config, dump, lag, theirs, (last, second)


def test_rocksdb_keys_answer_every_query_as_rocketmq_does(written):
    """IndexRocksDBStore.queryOffset for every KEYS token, TAGS and UNIQ_KEY of the walk,
    and queryMessage (which reads RocksDB when indexFileReadEnable=false): rmqlab's
    answers equal RocketMQ's, offset for offset."""
    release, root, config, dump, *_ = written
    m = dump["messageRocksDB"]
    assert m["indexQueries"] and any(q["phyOffsets"] for q in m["indexQueries"])
    cfg = MessageStoreConfig.from_mapping(config)
    with open_store(root, cfg) as store:
        db = store.message_rocksdb
        assert (db.last_offset_py(), db.index_last_store_timestamp()) == (m["indexLastOffsetPy"], m["indexLastStoreTimestamp"])
        max_num = cfg.max_msgs_num_batch
        got = [db.query_offset_for_index(q["topic"], q["type"], q["key"], max_num=max_num) for q in m["indexQueries"]]
        assert got == [q["phyOffsets"] for q in m["indexQueries"]]
        assert lk.key_index_source(store) == lk.ROCKSDB_KEYS
        for q in dump["indexQueries"]:
            res = lk.query_by_key(store, q["topic"], q["key"], max_num)
            assert res.source == lk.ROCKSDB_KEYS
            assert [r.physical_offset for r in res.records] == q["queryMessagePhyOffsets"], q
    # told nothing of the settings, rmqlab reads the keys where they are: no index file, keys in RocksDB
    with open_store(root) as store:
        assert lk.key_index_source(store) == lk.ROCKSDB_KEYS


def test_pending_transactions_are_rocketmqs(written):
    """TransMessageRocksDBStore's half messages not ended (scanRecordsForTrans) and its
    lastOffsetPy; each names its record; verify finds nothing wrong in the store."""
    release, root, config, dump, *_ = written
    m = dump["messageRocksDB"]
    from rmqlab.store.rocksdb_message import transaction_messages

    cfg = MessageStoreConfig.from_mapping(config)
    with open_store(root, cfg) as store:
        pending = transaction_messages(store)
        assert [dict(offsetPy=p.entry.offset_py, topic=p.entry.topic, uniqKey=p.entry.transaction_id, checkTimes=p.entry.check_times, sizePy=p.entry.size_py)
                for p in pending] == m["trans"]
        assert len(pending) == 6 - len(ENDED) and all(p.problem is None and p.record.topic == HALF for p in pending)
        assert store.message_rocksdb.last_offset_py("trans") == m["transLastOffsetPy"]
    rep = verify_store(root, cfg)
    assert rep.findings == [], [str(f) for f in rep.findings]


def test_rocksdb_timers_are_rocketmqs(written):
    """TimerMessageRocksDBStore's timeline (scanRecordsForTimer): every waiting timer, the
    deleted one gone, each naming its record; the scan's queue-offset checkpoint."""
    release, root, config, dump, *_ = written
    m = dump["messageRocksDB"]
    from rmqlab.store.rocksdb_message import rocksdb_timer_messages

    with open_store(root, MessageStoreConfig.from_mapping(config)) as store:
        timers = rocksdb_timer_messages(store)
        got = [dict(delayTime=t.entry.delay_time, uniqKey=t.entry.uniq_key, offsetPy=t.entry.offset_py, sizePy=t.entry.size_py) for t in timers]
        assert got == m["timers"] and len(got) == 7 and "UT003" not in {t["uniqKey"] for t in got}
        assert all(t.problem is None and t.record.topic == TIMER_TOPIC for t in timers)
        assert store.message_rocksdb.timer_checkpoints()["sys_topic_scan_offset_checkpoint"] == m["timerScanOffset"] == 9


def test_recovery_starts_where_rocksdbs_keys_say(written):
    """The RocksDB keys' lastOffsetPy lies files behind the end of the log: RocketMQ's
    normal recovery walks back to a file starting at or before it, meets the damaged
    record and cuts the log there.  rmqlab's dry run ends where RocketMQ's recovery ends
    and says why; a start chosen by the queues alone would have passed the damage."""
    release, root, config, dump, lag, theirs, (last, damaged) = written
    r = theirs["recovery"]
    assert r["mode"].startswith("normal")
    rep = recover(lag, config=MessageStoreConfig.from_mapping(config))
    assert rep.release == release
    assert rep.commitlog_end == r["commitLogMaxOffsetAfterRecovery"] == damaged
    assert "IndexRocksDBStore's lastOffsetPy" in rep.start_reason
    assert int(rep.start_file) <= last
    assert not rep.not_modelled
    # the settings not given: the keys in rocksdbstore/ say the writer ran
    assert recover(lag).commitlog_end == damaged


def test_verify_names_rocksdb_progress_past_a_cut_log(written, tmp_path):
    """After a cut below lastOffsetPy, RocksDB's writers skip every record written again
    below it: verify says so, and entries past the end are dead, not errors."""
    release, root, config, *_ = written
    cut = shutil.copytree(root, tmp_path / "cut")
    cfg = MessageStoreConfig.from_mapping(config)
    with open_store(cut, cfg) as store:
        newest = store.commitlog.queue.files[-1]
        keep = newest.file_from_offset
    for f in sorted((cut / "commitlog").iterdir()):
        if int(f.name) >= keep:
            f.unlink()
    kinds = {f.kind for f in verify_store(cut, cfg).findings}
    assert "RDB_PROGRESS_PAST_END" in kinds and "RDB_KEY_ENTRY" not in kinds


def _rewind(store, index_from: int, trans_from: int) -> None:
    """A crash that lost RocksDB's latest writes (a test's damage, on a copy): every key
    of a record at or past ``index_from`` and every half message at or past
    ``trans_from`` gone, each family's lastOffsetPy moved back before them."""
    from rmqlab.files.rocksdb import close_writable, open_writable
    from rmqlab.format.rocksdb_message import LAST_OFFSET_PY, LAST_STORE_TIMESTAMP, parse_index_entry, parse_trans_record

    d = store / "rocksdbstore"
    db = open_writable(d)
    try:
        kept = []
        for k, v in list(db.items()):
            e = parse_index_entry(k, v)
            if isinstance(e, str):
                continue
            if e.offset_py >= index_from:
                db.delete(k)
            elif e.index_type == "U":
                kept.append(e)
        last = max(kept, key=lambda e: e.offset_py)
        db[LAST_OFFSET_PY] = last.offset_py.to_bytes(8, "big")
        db[LAST_STORE_TIMESTAMP] = last.store_time.to_bytes(8, "big")
        trans = db.get_column_family("trans")
        halves = []
        for k, v in list(trans.items()):
            t = parse_trans_record(k, v)
            if not isinstance(t, str) and t.offset_py >= trans_from:
                trans.delete(k)
        trans[LAST_OFFSET_PY] = (trans_from - 1).to_bytes(8, "big")
    finally:
        close_writable(db, d)


def _rocksdb_answers(dump) -> tuple:
    m = dump["messageRocksDB"]
    return (m["indexLastOffsetPy"], [q["phyOffsets"] for q in m["indexQueries"]], m["trans"], m["transLastOffsetPy"])


def test_a_recovery_writes_rocksdbs_keys_and_transactions_as_rocketmq_does(written, tmp_path):
    """A crash that lost RocksDB's last writes: the keys of the last third of the log and
    the last half messages gone, lastOffsetPy moved back.  RocketMQ's abnormal recovery
    re-dispatches the records at or past each lastOffsetPy into rocksdbstore/
    (IndexRocksDBStore.buildIndex: a key per KEYS token, TAGS and UNIQ_KEY;
    TransMessageRocksDBStore.buildTransIndex: a key per half message, deleted by its op
    message).  ``recover --out`` writes the same: every key query, the pending half
    messages and both lastOffsetPy answer as in RocketMQ's recovered copy, no index file
    is made (indexFileWriteEnable=false), and RocketMQ loads rmqlab's copy and answers
    the same."""
    from tests.oracle.harness import Oracle, build_or_skip

    release, root, config, dump, *_ = written
    cfg = MessageStoreConfig.from_mapping(config)
    with open_store(root, cfg) as store:
        uniq = [r.physical_offset for r in store.commitlog.walk() if not r.is_blank and r.properties.get("UNIQ_KEY") and r.topic != HALF]
        halves = sorted(t.offset_py for t in store.message_rocksdb.transactions())
    store = shutil.copytree(root, tmp_path / "s")
    _rewind(store, uniq[2 * len(uniq) // 3], halves[1])
    (store / "abort").write_bytes(b"")
    with open_store(store, cfg) as lost:
        assert lost.message_rocksdb.last_offset_py() < dump["messageRocksDB"]["indexLastOffsetPy"]
        assert len(lost.message_rocksdb.transactions()) < len(dump["messageRocksDB"]["trans"])
    with Oracle(build_or_skip(release), threads=2) as rmq:
        theirs = rmq.load(shutil.copytree(store, tmp_path / "s.rocketmq"), config)
        assert theirs["recovery"]["mode"].startswith("abnormal")
        rep = recover(store, config=cfg, out=tmp_path / "mine")
        assert rep.commitlog_end == theirs["recovery"]["commitLogMaxOffsetAfterRecovery"] and not rep.not_modelled
        assert any("IndexRocksDBStore (rocksdbstore/) gets" in n for n in rep.notes)
        assert not (tmp_path / "mine" / "index").exists() or not any((tmp_path / "mine" / "index").iterdir())
        assert not (tmp_path / "mine" / "rocksdbstore" / "rocksdict-config.json").exists()
        with open_store(tmp_path / "mine", cfg) as mine:
            db = mine.message_rocksdb
            m = theirs["messageRocksDB"]
            assert db.last_offset_py() == m["indexLastOffsetPy"] and db.last_offset_py("trans") == m["transLastOffsetPy"]
            max_num = cfg.max_msgs_num_batch
            assert [db.query_offset_for_index(q["topic"], q["type"], q["key"], max_num=max_num) for q in m["indexQueries"]] == [q["phyOffsets"] for q in m["indexQueries"]]
            from rmqlab.store.rocksdb_message import transaction_messages

            assert [dict(offsetPy=p.entry.offset_py, topic=p.entry.topic, uniqKey=p.entry.transaction_id, checkTimes=p.entry.check_times, sizePy=p.entry.size_py)
                    for p in transaction_messages(mine)] == m["trans"]
        assert _rocksdb_answers(theirs) == _rocksdb_answers(dump)  # (what was lost came back: the case tests the re-dispatch)
        again = rmq.load(shutil.copytree(tmp_path / "mine", tmp_path / "mine.rocketmq"), config)
        assert again["recovery"]["mode"].startswith("normal") and _rocksdb_answers(again) == _rocksdb_answers(theirs)
