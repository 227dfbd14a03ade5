"""diff: page fingerprints, changed ranges, and the records/entries named in them."""

from __future__ import annotations

import json
import shutil

import crc32c

from tests.support import REFERENCE, copy_store
from rmqlab.config import MessageStoreConfig
from rmqlab.writers.clock import ManualClock
from rmqlab.forensics.diff import diff_stores, page_fingerprints
from rmqlab.recovery import recover

FILE = 65536


def test_page_fingerprints_are_crc32c_of_each_page():
    p = REFERENCE / "clean" / "store" / "commitlog" / f"{0:020d}"
    data = p.read_bytes()
    fp = page_fingerprints(p, 4096)
    assert list(fp) == [crc32c.crc32c(data[i : i + 4096]) for i in range(0, len(data), 4096)]


def test_identical_copies(tmp_path, capsys):
    from rmqlab.cli import main

    a = copy_store("clean", tmp_path)
    b = tmp_path / "b"
    shutil.copytree(a, b)
    rep = diff_stores(a, b)
    assert rep.identical and rep.identical_files > 50
    assert main(["diff", str(a), str(b)]) == 0


def test_one_flipped_byte_names_the_record(tmp_path):
    a = copy_store("clean", tmp_path)
    b = tmp_path / "b"
    shutil.copytree(a, b)
    m = [m for m in json.loads((REFERENCE / "clean" / "manifest.json").read_text())["messages"] if m["bodyLength"] > 20][100]
    f = b / "commitlog" / f"{m['physicalOffset'] // FILE * FILE:020d}"
    pos = m["physicalOffset"] % FILE + 95
    with open(f, "r+b") as fh:
        fh.seek(pos)
        old = fh.read(1)
        fh.seek(pos)
        fh.write(bytes([old[0] ^ 1]))
    rep = diff_stores(a, b)
    [fd] = rep.files
    assert fd.path == f"commitlog/{f.name}" and fd.status == "changed"
    [r] = fd.ranges
    assert (r.start, r.end) == (pos, pos + 1)
    name = f"{m['physicalOffset']}: {m['topic']}/{m['queueId']} queue offset {m['queueOffset']}, {m['size']} bytes"
    assert r.before == [name]
    assert r.after == [name + ", BODY CRC FAILS"]


def test_before_and_after_recovery(tmp_path, capsys):
    from rmqlab.cli import main

    a = copy_store("crash-torn", tmp_path)
    b = tmp_path / "after"
    cfg = MessageStoreConfig.from_mapping(json.loads((REFERENCE / "crash-torn" / "config.json").read_text())["storeConfig"])
    recover(a, config=cfg, out=b, zero_tail=True, clock=ManualClock(1795303800000))
    rep = diff_stores(a, b)
    by = {f.path: f for f in rep.files}
    assert by["abort"].status == "removed"
    assert by["commitlog/00000000000000393216"].status == "removed"
    assert by["index/20261121232858541"].status == "removed"
    assert any(p.startswith("index/") and f.status == "added" for p, f in by.items())
    cl = by["commitlog/00000000000000327680"]
    [r] = cl.ranges
    assert r.start >= 366653 - 327680 and r.end <= 366653 - 327680 + 389
    assert any(s.startswith("366653: TopicB/2 queue offset 52") or "366653" in s for s in r.before)
    cq = by["consumequeue/TopicB/2/00000000000000000800"]
    assert cq.ranges[0].before == ["entry 52: offset 366653, size 389, tagsCode 2598903"]
    assert cq.ranges[0].after == ["entry 52: zeros"]
    assert "physic_msg_timestamp" in by["checkpoint"].ranges[0].before[0]
    assert main(["diff", str(a), str(b), "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert not d["identical"] and len(d["files"]) == len(rep.files)
