"""salvage: the records RocketMQ's next start throws away, found by magic scan and
accepted only when size, self-recorded physical offset and CRC agree, and told apart
by where they lie against the end of the log the recovery plan gives."""

from __future__ import annotations

import json

from tests.support import REFERENCE, copy_store
from rmqlab.forensics.salvage import CERTAIN, CUT, EVERYWHERE, IN_LOG, PAST_DAMAGE, PAST_WALK, WEAK, salvage_path
from rmqlab.recovery import plan

FILE = 65536


def manifest(case):
    return json.loads((REFERENCE / case / "manifest.json").read_text())["messages"]


def patch(path, pos, data):
    with open(path, "r+b") as fh:
        fh.seek(pos)
        fh.write(data)


def test_every_record_of_an_intact_store_is_found_in_log():
    found = salvage_path(REFERENCE / "v2ipv6" / "store", where=EVERYWHERE)
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
    # abnormal recovery starts at file 0 here: the log ends at the damaged record
    assert [s.physical_offset for s in found] == [m["physicalOffset"] for m in after]
    assert all(s.where == CUT for s in found)
    p = plan(src)
    p.close()
    assert p.report.commitlog_end == bad["physicalOffset"]
    assert [s.physical_offset for s in found] == [r.physical_offset for r in p.report.lost_records if r.confidence != "unreadable"]
    # each one carries what RocketMQ wrote
    for s, m in zip(found, after):
        assert (s.record.topic, s.record.queue_id, s.record.queue_offset, s.record.total_size) == (m["topic"], m["queueId"], m["queueOffset"], m["size"])
    # the damaged record itself: only as a weak candidate
    weak = [s for s in salvage_path(src, include_weak=True) if s.confidence == WEAK]
    assert [s.physical_offset for s in weak] == [bad["physicalOffset"]]
    # a single file: no store to plan for, its own walk tells what lies past it
    one_file = salvage_path(path)
    assert [s.physical_offset for s in one_file] == [m["physicalOffset"] for m in after if m["physicalOffset"] // FILE == 2]
    assert {s.where for s in one_file} == {PAST_WALK}


def test_records_after_damage_the_next_start_never_reads_are_not_salvaged(tmp_path):
    """Zeros over a record header in file 4 of a cleanly shut down store: a walk of
    file 4 stops there, but the next start (normal recovery, 5.3.2+) walks from the
    file holding the queues' max physical offset, file 5, and never reads file 4: the
    log still ends at 363733 and RocketMQ keeps the records after the zeros.  Salvage
    offers none of them by default (re-sending them would duplicate them); with
    ``past-damage`` it lists them under that name."""
    src = copy_store("clean", tmp_path)
    recs = [m for m in manifest("clean") if m["physicalOffset"] // FILE == 4]
    cut = recs[10]
    path = src / "commitlog" / f"{4 * FILE:020d}"
    patch(path, cut["physicalOffset"] - 4 * FILE, bytes(8))
    p = plan(src)
    p.close()
    assert p.report.commitlog_end == 363733 and p.report.records_lost == 0
    assert salvage_path(src) == []
    found = salvage_path(src, where=(PAST_DAMAGE,))
    assert [s.physical_offset for s in found] == [m["physicalOffset"] for m in recs[11:]]
    assert all(s.confidence == CERTAIN for s in found)
    every = salvage_path(src, where=EVERYWHERE)
    assert {s.where for s in every if s.physical_offset >= 5 * FILE} == {IN_LOG}


def test_stale_records_after_a_truncation_point_in_the_walked_file(tmp_path):
    """The same zeros in the last file, which the next start walks: the log ends there
    and salvage gives back exactly the records recovery counts as lost."""
    src = copy_store("clean", tmp_path)
    recs = [m for m in manifest("clean") if m["physicalOffset"] // FILE == 5]
    cut = recs[10]
    patch(src / "commitlog" / f"{5 * FILE:020d}", cut["physicalOffset"] - 5 * FILE, bytes(8))
    p = plan(src)
    p.close()
    assert p.report.commitlog_end == cut["physicalOffset"]
    found = salvage_path(src)
    assert [s.physical_offset for s in found] == [m["physicalOffset"] for m in recs[11:]]
    assert [s.physical_offset for s in found] == [r.physical_offset for r in p.report.lost_records if r.confidence != "unreadable"]
    assert {s.where for s in found} == {CUT}


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

    src = copy_store("crash", tmp_path)
    recs = [m for m in manifest("crash") if m["physicalOffset"] // FILE == 3]
    path = src / "commitlog" / f"{3 * FILE:020d}"
    patch(path, recs[0]["physicalOffset"] - 3 * FILE + 4, b"\0\0\0\0")
    out = tmp_path / "records.jsonl"
    assert main(["salvage", str(src), "--out", str(out)]) == 0
    lines = [json.loads(l) for l in out.read_text().splitlines()]
    assert lines and lines[0]["physical_offset"] == recs[1]["physicalOffset"]
    s = lines[0]["salvage"]
    assert s["where"] == CUT and s["confidence"] == CERTAIN
    # ASYNC_FLUSH, RocketMQ's default: every record was acknowledged; no consumer offsets here
    assert s["acknowledged"] == "yes" and s["consumed_by"] == [] and s["flushed"] in (True, False)
    err = capsys.readouterr().err
    assert f"{len(lines)} record(s): {len(lines)} the next start cuts" in err


def test_magic_scan_never_searches_an_mmap_to_its_end_and_still_finds_magics_there(tmp_path):
    """CPython 3.11.0-3.11.3 (gh-105235) reads one byte past a search's end: an mmap
    searched to its last byte could crash the process (it did, in lesson 08 under
    Python 3.11.2).  The scan stops an mmap search one byte short and looks at the
    rest in a copy; magics in the very last bytes are still found."""
    import mmap
    import struct

    from rmqlab.format import commitlog as cl
    from rmqlab.forensics.salvage import find_magic_positions

    size = mmap.PAGESIZE * 2
    data = bytearray(size)
    v1, v2 = (struct.pack(">I", m) for m in cl.MESSAGE_MAGICS)
    for at, magic in ((100, v1), (size - 12, v2), (size - 8, v1), (size - 4, v2)):
        data[at : at + 4] = magic
    path = tmp_path / "f"
    path.write_bytes(bytes(data))
    want = [96, size - 16, size - 12, size - 8]
    assert find_magic_positions(bytes(data)) == want

    class Recording:  # an mmap that notes how far each search reaches
        def __init__(self, m):
            self.m, self.ends = m, []

        def __len__(self):
            return len(self.m)

        def __getitem__(self, k):
            return self.m[k]

        def find(self, sub, start, end):
            self.ends.append(end)
            return self.m.find(sub, start, end)

    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
        assert find_magic_positions(m) == want
        rec = Recording(m)
        assert find_magic_positions(rec) == want
        assert rec.ends and max(rec.ends) < size
        assert find_magic_positions(m, start=size - 12) == [size - 12, size - 8]
        assert find_magic_positions(m, 0, size - 5) == [96, size - 16]
