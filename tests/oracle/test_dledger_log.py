"""A DLedger store written by RocketMQ itself (``enableDLegerCommitLog=true``: a
one-member DLedger group, ``DLedgerCommitLog`` over ``DLedgerMmapFileStore``).

rmqlab must read it as RocketMQ does: every record where RocketMQ put it (``pos + 48``
of its entry, the offset the put answered and its msgId carries), the queues, messages,
time lookups and index answers RocketMQ reads back; verify finds nothing wrong in it,
and damage to an entry ends the log where DLedger's recovery ends it.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from rmqlab.cli import main
from rmqlab.config import MessageStoreConfig
from rmqlab.forensics.verify import verify_store
from rmqlab.store import open_store
from rmqlab.store.dledger import DLedgerCommitLog

from tests.oracle.compare import compare_index, compare_messages, compare_queues, compare_time_lookups
from tests.oracle.production import write_dledger_store
from rmqlab.forensics.salvage import salvage_path

SEED = 307


@pytest.fixture(scope="module")
def dledger_store(oracle, tmp_path_factory):
    """(tmp, config, put results, RocketMQ's load of a copy of the clean store)."""
    tmp = tmp_path_factory.mktemp("dledger")
    _, config, results = write_dledger_store(oracle, tmp, SEED, crash_copy=tmp / "crash")
    shutil.copytree(tmp / "clean", tmp / "clean.rocketmq")
    return tmp, config, results, oracle.load(tmp / "clean.rocketmq", config)


def test_rmqlab_reads_a_dledger_store_as_rocketmq_does(dledger_store, capsys):
    tmp, config, results, dump = dledger_store
    root = tmp / "clean"
    assert (root / "dledger-n0" / "data").is_dir() and not (root / "commitlog").exists()
    cfg = MessageStoreConfig.from_mapping(config)
    with open_store(root, cfg) as store:
        assert isinstance(store.commitlog, DLedgerCommitLog)
        recs = list(store.commitlog.iter_records())
        # a batch answers its records' msgIds joined by commas; each carries its offset
        put = [(int(m[-16:], 16), m) for r in results for m in r["msgId"].split(",")]
        assert put[0][0] == results[0]["wroteOffset"] == 48 and len(put) > len(results)
        assert [(r.physical_offset, r.msg_id) for r in recs] == put  # entry pos + 48, and the msgId carries it
        assert store.commitlog.max_offset() == dump["recovery"]["commitLogMaxOffsetAfterRecovery"]
        for compare in (compare_queues, compare_messages, compare_time_lookups):
            assert compare(store, dump) == [], compare.__name__
        assert compare_index(store, dump) == []
        # the bulk decoder at the entries' record positions gives the same records
        rows = [r for b in store.commitlog.batches() for r in b.to_pylist()]
        assert [(r["physical_offset"], r["msg_id"]) for r in rows] == put
    rep = verify_store(root, cfg)
    assert rep.findings == [] and rep.stats["dledger_entries"] == len(put) and rep.stats["log_end"] == store.commitlog.max_offset()
    # the commands: info says what it decodes; lookup by msgId finds the record; recover explains
    assert main(["info", str(root), "--config", str(tmp / "broker.conf"), "--json", "--no-scan"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert any(p["path"] == "dledger-n0/" and p["handling"] == "decoded" for p in info["layout"])
    assert main(["lookup", str(root), "--config", str(tmp / "broker.conf"), "--msg-id", results[5]["msgId"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0])["physical_offset"] == results[5]["wroteOffset"]
    assert main(["recover", str(root), "--config", str(tmp / "broker.conf"), "--out", str(tmp / "out")]) == 2
    assert "DLedgerMmapFileStore.recover" in capsys.readouterr().err and not (tmp / "out").exists()


def _last_file_entry(root: Path, n: int) -> tuple[Path, int]:
    """The data file holding the last entries and the in-file position of its n-th entry."""
    data = sorted((root / "dledger-n0" / "data").iterdir())
    f = next(p for p in reversed(data) if p.read_bytes()[:4] == b"\x00\x00\x00\x01")
    buf, p = f.read_bytes(), 0
    for _ in range(n):
        p += struct.unpack_from(">i", buf, p + 4)[0]
    return f, p


@pytest.mark.parametrize("field, at, value", [
    ("pos", 24, struct.pack(">q", 12345)),            # pos != where the entry is
    ("index", 8, struct.pack(">q", 10_000)),          # indexes not one apart
    ("size", 4, struct.pack(">i", 47)),               # size != body + 48
])
def test_damage_to_an_entry_ends_the_log_where_dledger_recovery_ends_it(dledger_store, oracle, tmp_path, capsys, field, at, value):
    tmp, config, _, _ = dledger_store
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(tmp / "clean", ours)
    f, p = _last_file_entry(ours, 2)
    with open(f, "r+b") as fh:
        fh.seek(p + at)
        fh.write(value)
    shutil.copytree(ours, theirs)
    dump = oracle.load(theirs, config)
    rep = verify_store(ours, MessageStoreConfig.from_mapping(config))
    entry = [x for x in rep.findings if x.kind == "DLEDGER_ENTRY"]
    assert entry and entry[0].file == str(f) and entry[0].offset == p, (field, rep.findings[:5])
    base = int(f.name)
    assert rep.stats["log_end"] == base + p == dump["recovery"]["commitLogMaxOffsetAfterRecovery"]
    # what the cut takes, salvaged: the damaged entry's record first (its header is what is wrong)
    cut = salvage_path(ours)
    assert cut and cut[0].record.physical_offset == base + p + 48 and all(s.where == "cut" for s in cut)
    # dump lists what the log holds up to there, and says what follows (exit 1)
    code = main(["dump", str(ours), "--config", str(tmp / "broker.conf"), "--json"])
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert code == 1 and len(rows) == rep.stats["dledger_entries"] and rows[-1]["physical_offset"] < base + p


def test_a_dledger_logs_report_counts_its_map_on_a_pass_of_its_own(dledger_store):
    """Verify reads a DLedger log entry by entry and does not hand its batches on: the
    report's map and timeline are then counted by the map's own pass, every record, with
    the sizes the broker's config gives (its index files are not the default's)."""
    from rmqlab.forensics.storemap import LogPixels
    from rmqlab.report import build_report

    tmp, config, results, _ = dledger_store
    cfg = MessageStoreConfig.from_mapping(config)
    assert LogPixels.of_log(tmp / "clean", cfg) is None
    rep = build_report(tmp / "clean", config=cfg)
    put = sum(len(r["msgId"].split(",")) for r in results)
    assert sum(rep.sections["map"]["pixels"]["records"]) == put == rep.sections["timeline"]["records"], (rep.sections["map"], rep.sections["timeline"])
