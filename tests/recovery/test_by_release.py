"""Which release wrote a store, and recovery by release, on stores rmqlab's engine writes.

The rules come from each release's ``CommitLog.recoverAbnormally`` (rmqlab.releases):
5.3.3 walks every file back to the first one old enough by the checkpoint and stops at
the first bad record after it; 5.4+ looks back at most ``commitLogRecoverMaxNum`` files.
So a crash with a zeroed checkpoint and a damaged record in the second file ends the log
at that record under 5.3.3 and keeps every record under 5.4+ (their start file is the
tenth from the newest).  Expected values come from the records put, never from rmqlab's
own recovery.  (The same rules against RocketMQ 5.4.0 and 5.5.0 themselves:
tests/oracle/release_checks.py.)
"""

from __future__ import annotations

import json
import struct

import pytest

from rmqlab.lab.crashlab import far_back_crash
from rmqlab.errors import StoreLayoutError
from rmqlab.format.indexfile import index_tag_key
from rmqlab.forensics.verify import verify_store
from rmqlab.recovery import recover
from rmqlab.store import open_store
from rmqlab.store.release import tell_release
from rmqlab.writers.clock import ManualClock

FILE = 4096
N = 300


@pytest.fixture(scope="module")
def crashed(tmp_path_factory):
    """A crashed store of ~40 4 KiB commitlog files (checkpoint zeros), undamaged; every
    record's (offset, size)."""
    lab = far_back_crash(tmp_path_factory.mktemp("rel") / "store", messages=N, file_size=FILE)
    return lab.root, lab.config, lab.puts


def _copy(src, dst):
    import shutil

    shutil.copytree(src, dst)
    return dst


def _far_back_damage(root, put) -> int:
    """The lab store comes damaged already (a body byte of the second file's first
    record): returns that record's offset, checking the flip is there."""
    off = next(o for o, _ in put if o >= FILE)
    assert (root / "checkpoint").read_bytes() == bytes(4096)
    return off


def test_the_release_is_told_from_the_stores_bytes(crashed, tmp_path):
    root, cfg, put = crashed
    assert len(list((root / "commitlog").iterdir())) > 20
    # crashed before its first flush: the checkpoint is zeros and tells nothing
    r = tell_release(root, cfg)
    assert r.candidates == ("5.3.3", "5.4.0", "5.5.0") and r.known is None
    # logicsMsgTimestamp set and logicsPhysicalOffset not (as 5.3 and 5.4 flush): before 5.5
    s = _copy(root, tmp_path / "t")
    with open(s / "checkpoint", "r+b") as fh:
        fh.seek(8)
        fh.write(struct.pack(">q", 1_700_000_000_100))
    assert tell_release(s, cfg).candidates == ("5.3.3", "5.4.0")
    s = _copy(root, tmp_path / "a")
    with open(s / "checkpoint", "r+b") as fh:
        fh.seek(40)
        fh.write(struct.pack(">q", put[-1][0]))
    r = tell_release(s, cfg)
    assert r.candidates == ("5.5.0",) and "logicsPhysicalOffset" in r.evidence[-1]
    b0 = _copy(root, tmp_path / "b0")
    (b0 / "rocksdbstore").mkdir()
    assert tell_release(b0, cfg).candidates == ("5.4.0", "5.5.0")  # 5.4+
    s = _copy(tmp_path / "t", tmp_path / "b")
    (s / "rocksdbstore").mkdir()
    assert tell_release(s, cfg).candidates == ("5.4.0",)  # 5.4+, and before 5.5
    (s / "config").mkdir(exist_ok=True)
    (s / "config" / "topics.json").write_text(json.dumps({"topicConfigTable": {"T": {"topicName": "T", "readQueueNums": 2}}}))
    assert tell_release(s, cfg).candidates == ("4.9.7",)  # a 4.x topic table (no attributes)
    assert tell_release(s, cfg, told="5.5").candidates == ("5.5.1",)  # a line names its newest release
    with pytest.raises(ValueError, match="unknown RocketMQ release"):
        tell_release(s, cfg, told="6.0")


def test_releases_that_recover_differently_are_each_shown_and_applying_waits_for_one(crashed, tmp_path):
    root, cfg, put = crashed
    store = _copy(root, tmp_path / "store")
    bad = _far_back_damage(store, put)
    rep = recover(store, config=cfg)
    # 5.3.3 (the oldest candidate): from file 0 to the damaged record
    assert rep.release == "5.3.3" and rep.commitlog_end == bad and rep.start_file == f"{0:020d}"
    # 5.4.0 and 5.5.0 start alike (ten files back) and keep everything
    (other,) = rep.release_outcomes
    assert other.release == "5.4.0 and 5.5.0"
    files = sorted(p.name for p in (store / "commitlog").iterdir())
    assert other.start_file == files[-10] and other.commitlog_end == put[-1][0] + put[-1][1]
    after = sum(1 for o, _ in put if o > bad)  # whole records past the damaged one: 5.3.3 loses them, 5.4+ none
    assert other.records_lost == 0 and rep.records_lost >= after
    assert "RELEASES DIFFER" in rep.to_text()
    with pytest.raises(StoreLayoutError, match="--rocketmq-version"):
        recover(store, config=cfg, out=tmp_path / "refused")
    assert not (tmp_path / "refused").exists()
    # named, it applies: every record stays readable, the damaged one included
    done = recover(store, config=cfg, out=tmp_path / "out", rocketmq_version="5.5.0", clock=ManualClock(1_800_000_000_000))
    assert done.commitlog_end == other.commitlog_end and not done.release_outcomes
    with open_store(tmp_path / "out", cfg) as st:
        assert [(r.physical_offset, r.total_size) for r in st.commitlog.walk() if not r.is_blank] == put
    # 5.5 writes where its re-dispatch's last queue entry was (StoreCheckpoint.logicsPhysicalOffset)
    cp = (tmp_path / "out" / "checkpoint").read_bytes()
    assert struct.unpack_from(">q", cp, 40)[0] == put[-1][0]


def test_a_cap_of_commit_log_recover_max_num_moves_the_start(crashed, tmp_path):
    root, cfg, put = crashed
    store = _copy(root, tmp_path / "store")
    _far_back_damage(store, put)
    files = sorted(p.name for p in (store / "commitlog").iterdir())
    for cap, start in ((3, files[-3]), (0, files[-10]), (len(files) + 5, files[0])):
        rep = recover(store, config=cfg.replace(commit_log_recover_max_num=cap), rocketmq_version="5.4.0")
        assert rep.start_file == start, cap


def test_the_5_4_index_holds_tags_and_verify_follows_the_release(crashed, tmp_path):
    """5.4+ IndexService.buildIndex also puts topic#T#tags; a recovery told 5.4.0 that
    rebuilds the index writes those entries, a lookup of the tag key finds the records,
    and verify accepts them for 5.4 while 5.3.3's rules find them unaccounted for."""
    root, cfg, put = crashed
    store = _copy(root, tmp_path / "store")
    recover(store, config=cfg, out=tmp_path / "out", rocketmq_version="5.4.0", reindex=True, clock=ManualClock(1_800_000_000_000))
    out = tmp_path / "out"
    (out / "rocksdbstore").mkdir()  # what a 5.4 broker leaves: the store now says 5.4+
    with open_store(out, cfg) as st:
        # Java 5.4 queryOffset(topic, key, …, INDEX_TAG_TYPE) asks for buildKey(topic, tags, "T")
        found = sorted(st.index.query_offset("T", index_tag_key("T", "tag1").split("#", 1)[1]))
    assert found == sorted(o for i, (o, _) in enumerate(put) if i % 3 == 1)
    assert not [f for f in verify_store(out, cfg).errors if f.kind.startswith("INDEX")]
    wrong = [f for f in verify_store(out, cfg, rocketmq_version="5.3.3").errors if f.kind == "INDEX_HASH"]
    assert wrong, "5.3.3's rules should not account for the tag entries"


def test_rocksdb_stores_that_cannot_be_read_are_said_not_guessed(crashed, tmp_path, monkeypatch):
    """Without the RocksDB binding: an empty rocksdbstore/ (every 5.4+ store) is no
    obstacle; one holding data makes the dry run say that its writers' progress, which
    5.4+ asks for the start file, was not read, and applying wait."""
    import sys

    root, cfg, _ = crashed
    store = _copy(root, tmp_path / "store")
    (store / "rocksdbstore").mkdir()
    for name in ("CURRENT", "MANIFEST-000001", "000001.log"):
        (store / "rocksdbstore" / name).write_bytes(b"")
    monkeypatch.setitem(sys.modules, "rocksdict", None)  # import rocksdict fails
    assert not recover(store, config=cfg, rocketmq_version="5.5.0").not_modelled
    (store / "rocksdbstore" / "000002.sst").write_bytes(b"x")
    rep = recover(store, config=cfg, rocketmq_version="5.5.0")
    assert any("rocksdbstore/ is not read" in n and "rmqlab[rocksdb]" in n for n in rep.not_modelled), rep.not_modelled
