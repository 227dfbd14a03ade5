"""One incident, one story: on every sample store, every reference store RocketMQ wrote
(damaged copies included), every rocketmq-rust store and damage made here, the commands
that print the end of the log, the records lost and the cause print the same numbers,
from the one owner (the recovery plan: rmqlab.recovery.next_start, rmqlab.recovery.cause)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rmqlab import open_store
from rmqlab.forensics.salvage import salvage_path
from rmqlab.forensics.verify import verify_store
from rmqlab.recovery import recover
from rmqlab.recovery.report import UNREADABLE
from tests.support import ALL_CASES, REFERENCE, SAMPLES, copy_store, run_rmqlab

RUST = Path(__file__).resolve().parents[1] / "stores" / "rocketmq-rust"
FILE = 65536


def _stores():
    for name in ("clean", "crashed", "damaged"):
        yield pytest.param(SAMPLES / name, id=f"sample-{name}")
    for case in ALL_CASES:
        yield pytest.param(REFERENCE / case / "store", id=f"reference-{case}")
    for case in ("clean", "killed"):
        yield pytest.param(RUST / case / "store", id=f"rust-{case}")


def _json(*argv):
    proc = run_rmqlab(*argv)
    assert proc.returncode in (0, 1), proc.stderr
    return proc


def agree(root: Path) -> None:
    """Every command's end of the log, records lost and cause, against the dry run's."""
    rep = recover(root)
    end, lost = rep.commitlog_end, rep.records_lost
    readable = [r.physical_offset for r in rep.lost_records if r.confidence != UNREADABLE]
    # verify: the end of the log, the records lost, the cause first, every unit past the end
    v = verify_store(root)
    assert v.stats["log_end"] == end and v.outcome == rep.consequence
    assert (v.cause is None) == (rep.cause is None)
    if rep.cause is not None:
        assert v.cause.to_dict() == rep.cause.to_dict()
        first = v.findings[0]
        assert (first.kind, first.severity, Path(first.file), first.offset) == (rep.cause.kind, "error", Path(rep.cause.file), rep.cause.file_offset)
    assert sum(f.kind == "CQ_BEYOND_END" for f in v.findings) == sum(q.cut_entries for q in rep.queues)
    assert not any(f.kind == "CQ_PAST_END" for f in v.findings) or not rep.queues_truncated
    # salvage gives back exactly the readable records recovery cuts
    assert [s.physical_offset for s in salvage_path(root)] == readable
    # the readers the commands open serve the log up to the same end
    with open_store(root, strict=False) as store:
        assert store.commitlog.served_end() == end
    info = json.loads(_json("info", root, "--json").stdout)
    assert info["commitlog_end_offset"] == end
    dump = _json("dump", root, "--json")
    listed = [json.loads(line) for line in dump.stdout.splitlines()]
    assert all(r["physical_offset"] < end for r in listed)
    assert (dump.returncode == 1) == bool(rep.cut_bytes)
    if rep.cut_bytes:
        assert f"the log ends at {end}" in dump.stderr and f"{len(readable)} readable record(s)" in dump.stderr
    # offsets: each queue as the next start leaves it; what the cut takes from each group is recovery's
    off = run_rmqlab("offsets", root, "--json")
    if off.returncode == 0:
        losses = {(g.group, g.queue): g for g in rep.group_losses}
        for r in map(json.loads, off.stdout.splitlines()):
            if r["committed_offset"] is None:
                continue
            g = losses.get((r["group"], f"{r['topic']}/{r['queue_id']}"))
            assert r["unconsumed_cut"] == (g.unconsumed_lost if g else 0), r
            if g is not None:
                assert r["max_offset"] == g.new_max_offset and r["units_cut"] == g.cut_to - g.cut_from, r
    # the report: its verdict, its recovery part and its findings
    report = json.loads(_json("report", root, "--format", "json").stdout)
    assert report["verdict"]["records_cut"] == lost and report["verdict"]["consequence"] == rep.consequence
    assert report["recovery"]["commitlog_end"] == report["verdict"]["commitlog_end"] == report["findings"]["stats"]["log_end"] == end
    assert (report["verdict"]["cause"] or {}).get("kind") == (rep.cause.kind if rep.cause else None)
    by_group = {}
    for g in rep.group_losses:
        by_group[g.group] = by_group.get(g.group, 0) + g.unconsumed_lost
    assert {g["group"]: g["lost_unconsumed"] for g in report["consumers"].get("groups", []) if g["lost_unconsumed"]} == {k: v for k, v in by_group.items() if v}
    assert report["verdict"]["level"] == ("bad" if lost or report["findings"]["counts"]["error"] else "warn" if rep.mode == "abnormal" else "good")


@pytest.mark.parametrize("root", list(_stores()))
def test_every_command_tells_one_story(root):
    agree(root)


def test_a_crash_that_cuts_nothing_is_no_alarm():
    """A crashed store whose recovery cuts no record: crashed, recovers without loss, in
    every output; verify has no error to say, the verdict is amber, not red."""
    rep = recover(REFERENCE / "crash" / "store")
    assert rep.records_lost == 0 and rep.consequence == "crashed, recovers without loss" and rep.cause is None
    v = verify_store(REFERENCE / "crash" / "store")
    assert v.ok and v.outcome == rep.consequence
    verdict = json.loads(_json("report", REFERENCE / "crash" / "store", "--format", "json").stdout)["verdict"]
    assert verdict["level"] == "warn" and verdict["text"].startswith("Crashed, recovers without loss")


@pytest.mark.parametrize("damage", ["zeroed-page", "flip-in-older-file", "flip-in-newest-file", "missing-last-data-file"])
def test_damage_made_here_tells_one_story(tmp_path, damage):
    """Damage of known cause on copies of the reference stores: the cause each command
    names is that damage, and the numbers agree."""
    src = copy_store("crash", tmp_path)
    log = src / "commitlog"
    manifest = json.loads((REFERENCE / "crash" / "manifest.json").read_text())["messages"]
    if damage == "zeroed-page":
        with open(log / f"{4 * FILE:020d}", "r+b") as fh:
            fh.seek(8192)
            fh.write(bytes(4096))
        want = ("ZEROED_RANGE", log / f"{4 * FILE:020d}", 8192)
    elif damage in ("flip-in-older-file", "flip-in-newest-file"):
        n = 1 if damage == "flip-in-older-file" else 5
        m = next(m for m in manifest if m["physicalOffset"] // FILE == n and m["bodyLength"] > 20)
        path, pos = log / f"{n * FILE:020d}", m["physicalOffset"] - n * FILE
        data = bytearray(path.read_bytes())
        data[pos + 92] ^= 0x40  # a bit in the body (the V1 header and bodyLength end at 88)
        path.write_bytes(bytes(data))
        # abnormal recovery starts at file 0 on this store: both flips end its walk
        want = ("BODY_CRC", path, pos)
    else:
        files = sorted(p for p in log.iterdir() if p.stat().st_size and any(p.read_bytes()))
        files[-1].unlink()  # the newest file holding data; the empty pre-allocated one stays
        want = None
    agree(src)
    rep = recover(src)
    if want is not None:
        assert (rep.cause.kind, Path(rep.cause.file), rep.cause.file_offset) == want
        assert rep.cause.lost == rep.records_lost > 0
    else:
        # nothing is cut (RocketMQ loads a log with a gap), but the records the queues name
        # in the deleted file are gone: the cause names the file
        assert rep.records_lost == 0 and rep.records_missing > 0 and rep.consequence == "records lost"
        assert rep.cause.kind == "MISSING_FILE" and Path(rep.cause.file) == files[-1] and rep.cause.lost == rep.records_missing


def test_a_recovered_copy_serves_what_its_recovery_left(tmp_path):
    """A crashed store whose newest data file was deleted, recovered to a copy: the copy's
    next start ends the log where the recovery did, and the queues serve every unit that
    recovery kept (none is said to be cut); the records in the hole stay gone, and the
    copy still says so, naming the missing file."""
    src = SAMPLES / "crashed"
    hole = tmp_path / "hole"
    shutil.copytree(src, hole)
    data = sorted(p for p in (hole / "commitlog").iterdir() if any(p.read_bytes()))
    data[-1].unlink()
    out = tmp_path / "recovered"
    rep = recover(hole, out=out)
    again = recover(out)
    assert again.commitlog_end == rep.commitlog_end and again.records_lost == 0
    assert again.records_missing == rep.records_missing > 0 and again.consequence == "records lost" and again.cause.kind == "MISSING_FILE"
    agree(out)
    proc = _json("queue", out, "--topic", "Orders", "--queue-id", "0")
    assert "cuts them" not in proc.stderr


@pytest.mark.parametrize("json_lines", [False, True], ids=["text", "json"])
def test_dump_lists_what_the_next_start_serves_past_damage_it_never_reads(tmp_path, json_lines):
    """A size that lies in file 2 of a cleanly shut down store: the next start walks the
    last files only, so the log still ends at 363733 and RocketMQ serves the records after
    the damage. dump lists every record but the damaged one, says where it stepped over
    damage and goes on at the next record carved after it (exit 1: something to see)."""
    import struct

    src = copy_store("clean", tmp_path)
    manifest = json.loads((REFERENCE / "clean" / "manifest.json").read_text())["messages"]
    bad = [m for m in manifest if m["physicalOffset"] // FILE == 2][3]
    with open(src / "commitlog" / f"{2 * FILE:020d}", "r+b") as fh:
        fh.seek(bad["physicalOffset"] - 2 * FILE)
        fh.write(struct.pack(">i", 10 * FILE))
    assert recover(src).commitlog_end == 363733
    proc = _json("dump", src, *(["--json"] if json_lines else []))
    listed = [json.loads(line)["physical_offset"] for line in proc.stdout.splitlines()] if json_lines else [
        int(line.split()[0]) for line in proc.stdout.splitlines()]
    assert listed == [m["physicalOffset"] for m in manifest if m is not bad]
    assert proc.returncode == 1 and "BAD_SIZE" in proc.stderr and "the log goes on to 363733" in proc.stderr


def test_a_short_commitlog_file_is_a_store_that_does_not_start(tmp_path):
    """A commitlog file cut short: RocketMQ's load refuses the store (MappedFileQueue.load
    checks each file's length), so the outcome is that the broker does not start, the
    cause the short file (its name and where it now ends), in every command that says
    why; the commands that read records still read it, warning."""
    import os

    src = copy_store("crash", tmp_path)
    short = src / "commitlog" / f"{4 * FILE:020d}"
    os.truncate(short, 40000)
    rep = recover(src)
    assert rep.consequence == "does not start" and not rep.load_ok
    assert (rep.cause.kind, Path(rep.cause.file), rep.cause.file_offset, rep.cause.physical_offset) == ("SHORT_FILE", short, 40000, 4 * FILE + 40000)
    v = verify_store(src)
    assert v.outcome == rep.consequence and (v.findings[0].kind, v.findings[0].severity) == ("SHORT_FILE", "error")
    verdict = json.loads(_json("report", src, "--format", "json").stdout)["verdict"]
    assert verdict["level"] == "bad" and verdict["text"].startswith("Does not start") and verdict["cause"]["kind"] == "SHORT_FILE"
    for argv in (("dump", src), ("queue", src, "--topic", "TopicA", "--queue-id", "1")):
        proc = _json(*argv)
        assert proc.stdout and f"{short} is 40000 bytes" in proc.stderr and "load refuses the store" in proc.stderr
