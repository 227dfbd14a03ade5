"""salvage: the records RocketMQ's recovery throws away, found by magic scan and
accepted only when size, self-recorded physical offset and CRC agree."""

from __future__ import annotations

import json

from tests.support import REFERENCE, copy_store
from rmqlab.forensics.salvage import AFTER_CUT, CERTAIN, IN_LOG, WEAK, salvage_path

FILE = 65536


def manifest(case):
    return json.loads((REFERENCE / case / "manifest.json").read_text())["messages"]


def patch(path, pos, data):
    with open(path, "r+b") as fh:
        fh.seek(pos)
        fh.write(data)


def test_every_record_of_an_intact_store_is_found_in_log():
    found = salvage_path(REFERENCE / "v2ipv6" / "store", include_in_log=True)
    assert [s.physical_offset for s in found] == [m["physicalOffset"] for m in manifest("v2ipv6")]
    assert {(s.where, s.confidence) for s in found} == {(IN_LOG, CERTAIN)}
    assert salvage_path(REFERENCE / "v2ipv6" / "store") == []  # nothing is lost


def test_valid_records_after_a_crc_failure(tmp_path):
    src = copy_store("crash", tmp_path)
    bad = [m for m in manifest("crash") if m["physicalOffset"] // FILE == 2 and m["bodyLength"] > 0][2]
    path = src / "commitlog" / f"{2 * FILE:020d}"
    pos = bad["physicalOffset"] - 2 * FILE
    patch(path, pos + 90, b"\xff\xfe")
    after = [m for m in manifest("crash") if m["physicalOffset"] > bad["physicalOffset"]]
    found = salvage_path(src)
    assert [s.physical_offset for s in found] == [m["physicalOffset"] for m in after]
    assert all(s.where == AFTER_CUT for s in found)
    # each one carries what RocketMQ wrote
    for s, m in zip(found, after):
        assert (s.record.topic, s.record.queue_id, s.record.queue_offset, s.record.total_size) == (m["topic"], m["queueId"], m["queueOffset"], m["size"])
    # the damaged record itself: only as a weak candidate
    weak = [s for s in salvage_path(src, include_weak=True) if s.confidence == WEAK]
    assert [s.physical_offset for s in weak] == [bad["physicalOffset"]]
    # a single file: its own walk decides what is after the cut
    one_file = salvage_path(path)
    assert [s.physical_offset for s in one_file] == [m["physicalOffset"] for m in after if m["physicalOffset"] // FILE == 2]


def test_stale_records_after_a_truncation_point(tmp_path):
    """A truncation that zeroed only a record header leaves the following records in
    place: RocketMQ's walk ends at the zeros, salvage still reads them."""
    src = copy_store("clean", tmp_path)
    recs = [m for m in manifest("clean") if m["physicalOffset"] // FILE == 4]
    cut = recs[10]
    path = src / "commitlog" / f"{4 * FILE:020d}"
    patch(path, cut["physicalOffset"] - 4 * FILE, bytes(8))
    found = salvage_path(src)
    want = [m["physicalOffset"] for m in manifest("clean") if m["physicalOffset"] > cut["physicalOffset"]]
    assert [s.physical_offset for s in found] == want
    assert all(s.confidence == CERTAIN for s in found)


def test_a_record_copied_to_the_wrong_place_is_rejected(tmp_path):
    """Same bytes at another position: size and CRC agree, the physical offset does not."""
    src = copy_store("clean", tmp_path)
    m = manifest("clean")[3]
    path = src / "commitlog" / f"{5 * FILE:020d}"
    data = (src / "commitlog" / f"{0:020d}").read_bytes()[m["physicalOffset"] : m["physicalOffset"] + m["size"]]
    patch(path, 363733 - 5 * FILE + 64, data)  # after the end of the log
    assert salvage_path(src) == []


def test_cli_salvage_writes_jsonl(tmp_path, capsys):
    from rmqlab.cli import main

    src = copy_store("clean", tmp_path)
    path = src / "commitlog" / f"{3 * FILE:020d}"
    first = [m for m in manifest("clean") if m["physicalOffset"] // FILE == 3][0]
    patch(path, first["physicalOffset"] - 3 * FILE + 4, b"\0\0\0\0")
    out = tmp_path / "records.jsonl"
    assert main(["salvage", str(src), "--out", str(out)]) == 0
    lines = [json.loads(l) for l in out.read_text().splitlines()]
    assert lines and lines[0]["physical_offset"] == [m for m in manifest("clean") if m["physicalOffset"] // FILE == 3][1]["physicalOffset"]
    assert lines[0]["salvage"]["where"] == AFTER_CUT and lines[0]["salvage"]["confidence"] == CERTAIN
    assert "certain after-cut" in capsys.readouterr().err
