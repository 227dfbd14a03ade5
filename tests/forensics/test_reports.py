"""Reports that are right: copies of RocketMQ's reference stores damaged the ways an
operator meets, and what verify, recover and dump say about them, checked against what
RocketMQ does (its recovery rules; the reference dumps)."""

from __future__ import annotations

import json

import pytest
import random

from tests.support import REFERENCE, copy_store
from tests.support import run_rmqlab as cli

FILE = 65536
CLEAN_END = 363733  # the end of the log of `clean` (its dump.json)
CRASH_END = 367042  # and of `crash`


def poke(path, offset, data):
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(data)


def clfile(root, phy):
    return root / "commitlog" / f"{phy - phy % FILE:020d}", phy % FILE


def test_reference_ends_are_what_rocketmq_read():
    for case, end in (("clean", CLEAN_END), ("crash", CRASH_END)):
        assert json.loads((REFERENCE / case / "dump.json").read_text())["recovery"]["commitLogMaxOffsetAfterRecovery"] == end


def test_a_zeroed_page_loses_every_record_the_truncation_removes(tmp_path):
    """A 4 KiB page zeroed in the second-to-last file of a crashed store: RocketMQ's
    abnormal recovery stops at the first record the page touched and removes every
    message record after it, the damaged ones included (the consume queues' cuts add up
    to the same number); verify and recover name the cause alike: the zeroed page, first."""
    root = copy_store("crash", tmp_path)
    path = root / "commitlog" / f"{4 * FILE:020d}"
    poke(path, 8192, bytes(4096))
    rep = json.loads(cli("recover", root, "--json").stdout)
    cut_entries = sum(q["cut_entries"] for q in rep["queues"])
    lost = rep["lost_records"]
    assert len(lost) == cut_entries == 114
    assert {r["confidence"] for r in lost} == {"certain", "unreadable"}
    assert lost[0]["physical_offset"] == rep["commitlog_end"]  # the record the page touched first
    v = json.loads(cli("verify", root, "--json").stdout)
    first = v["findings"][0]
    assert (first["kind"], first["severity"], first["file"], first["offset"]) == ("ZEROED_RANGE", "error", str(path), 8192)
    assert (rep["cause"]["kind"], rep["cause"]["file"], rep["cause"]["file_offset"]) == ("ZEROED_RANGE", str(path), 8192) == (v["cause"]["kind"], v["cause"]["file"], v["cause"]["file_offset"])
    # the record the page breaks, where the walk stops, is an error too
    assert any((f["kind"], f["file"], f["offset"]) == (rep["stop"]["kind"], rep["stop"]["file"], rep["stop"]["file_offset"]) for f in v["findings"] if f["severity"] == "error")
    assert v["stats"]["log_end"] == rep["commitlog_end"] and v["records_lost"] == rep["cause"]["lost"] == 114
    # both name the zeroed range, as diff does
    assert rep["stop"]["zeroed"] == [[8192, 8192 + 4096]]
    zeroed = [f for f in v["findings"] if f["kind"] == "ZEROED_RANGE"]
    assert [(f["file"], f["offset"]) for f in zeroed] == [(str(path), 8192)] and "[8192, 12288)" in zeroed[0]["message"]
    # readable records follow the page: it had reached the disk, lost to damage, not to the crash
    assert rep["cause"]["lost_on_disk"] == 114 and rep["cause"]["lost_unwritten"] == 0


def test_ten_zeroed_bytes_at_the_end_of_the_last_record(tmp_path):
    """RocketMQ accepts the record (no CRC covers its properties) and serves the NULs:
    verify says so, and text output shows them escaped, never raw."""
    root = copy_store("clean", tmp_path)
    path, pos = clfile(root, CLEAN_END)
    poke(path, pos - 10, bytes(10))
    v = json.loads(cli("verify", root, "--json").stdout)
    torn = [f for f in v["findings"] if f["kind"] == "TORN_RECORD"]
    assert len(torn) == 1 and torn[0]["offset"] == 363446 - 5 * FILE and "10 zero byte(s)" in torn[0]["message"]
    out = cli("dump", root)
    assert out.returncode == 0 and "\x00" not in out.stdout and "\\x00" in out.stdout.splitlines()[-1]
    detail = cli("lookup", root, "--offset", 363446)
    assert "\x00" not in detail.stdout and "\\x00" in detail.stdout


def test_garbage_after_a_clean_log_is_left_and_named_once(tmp_path):
    """RocketMQ's walk stops at the garbage and leaves it (only deleted files go): the
    recover report says the bytes stay, verify reports them once as dead bytes (no
    damage: nothing refers to them and the last exit was clean), dump ends there."""
    root = copy_store("clean", tmp_path)
    path, pos = clfile(root, CLEAN_END)
    poke(path, pos, random.Random(85).randbytes(64))  # fixed bytes: a random head can read as a plausible size
    rec = cli("recover", root)
    assert rec.returncode == 0 and "cut" not in rec.stdout.split("lost records")[0].split("end of log")[1]
    assert "64 in the last file, left where they are (RocketMQ leaves them" in rec.stdout
    v = json.loads(cli("verify", root, "--json").stdout)
    assert v["ok"] and [f["kind"] for f in v["findings"]] == ["DEAD_BYTES"]
    assert (v["findings"][0]["file"], v["findings"][0]["offset"]) == (str(path), pos)
    assert "after the damaged record" not in json.dumps(v)
    dump = cli("dump", root, "--json")  # the live records, one warning about what follows, exit 1
    assert dump.returncode == 1 and len(dump.stdout.splitlines()) == v["stats"]["records"]
    assert "the log ends at 363733" in dump.stderr and "64 byte(s) follow" in dump.stderr and len(dump.stderr.splitlines()) == 1


def test_after_an_applied_recovery_the_cut_bytes_are_dead_not_damage(tmp_path):
    """crash-torn recovered (--out, without --zero-tail): RocketMQ leaves the torn
    record's bytes past the new end; verify of the result is OK with one DEAD_BYTES
    finding, dump lists exactly the records RocketMQ kept and says (exit 1) that bytes follow."""
    out = tmp_path / "recovered"
    assert cli("recover", REFERENCE / "crash-torn" / "store", "--out", out).returncode == 0
    v = json.loads(cli("verify", out, "--json").stdout)
    assert v["ok"] and [f["kind"] for f in v["findings"]] == ["DEAD_BYTES"], v["findings"]
    end = json.loads((REFERENCE / "crash-torn" / "dump.json").read_text())["recovery"]["commitLogMaxOffsetAfterRecovery"]
    assert v["stats"]["log_end"] == end
    dump = cli("dump", out, "--json")
    kept = [w["physicalOffset"] for w in json.loads((REFERENCE / "crash-torn" / "dump.json").read_text())["commitLogWalk"] if w["kind"] == "MESSAGE"]
    assert dump.returncode == 1 and [json.loads(line)["physical_offset"] for line in dump.stdout.splitlines()] == kept
    # the bytes past the end, counted as recover counts what it leaves there
    left = json.loads(cli("recover", out, "--json").stdout)["cut_bytes"]
    assert left == 194 and f"{left} byte(s) follow" in dump.stderr
    # the crashed original is damage, not dead bytes: its queues point past the end
    assert not json.loads(cli("verify", REFERENCE / "crash-torn" / "store", "--json").stdout)["ok"]


def test_text_views_show_what_rocketmq_parses(tmp_path):
    """An empty TAGS is dropped by RocketMQ's property parser (the raw view keeps it), a
    ZLIB body (sysFlag 0x301) is labelled and inflated on request, a 9,000-character
    property is cut, every sysFlag bit is named."""
    import zlib

    from rmqlab.engine import Message, MessageStore

    root = tmp_path / "store"
    with MessageStore.open(root) as store:
        store.put(Message("T", b"plain", {"TAGS": "", "KEYS": "k1"}))
        store.put(Message("T", zlib.compress(b"inflated body " * 10), {"KEYS": "k2"}, sys_flag=0x301))
        store.put(Message("T", b"x", {"KEYS": "k3", "LONG": "v" * 9000}))
    first = cli("lookup", root, "--offset", 0)
    assert "'TAGS'" not in first.stdout and "RocketMQ's parser drops" in first.stdout
    assert "'TAGS'" in cli("lookup", root, "--offset", 0, "--raw").stdout
    offsets = [json.loads(line)["physical_offset"] for line in cli("dump", root, "--json").stdout.splitlines()]
    comp = cli("lookup", root, "--offset", offsets[1])
    assert "COMPRESSED | TRANSACTION_NOT_TYPE | COMPRESSION_ZLIB" in comp.stdout and "ZLIB" in comp.stdout.split("body (")[1]
    assert "inflated body" not in comp.stdout
    assert "inflated body inflated" in cli("lookup", root, "--offset", offsets[1], "--decompress").stdout
    assert "zlib-compressed" in cli("dump", root).stdout.splitlines()[1]
    hexed = cli("hexdump", root / "commitlog" / f"{0:020d}", "--offset", offsets[1], "--length", 200).stdout
    assert "sysFlag=0x301 (COMPRESSED | TRANSACTION_NOT_TYPE | COMPRESSION_ZLIB)" in hexed and "(compressed: sysFlag COMPRESSED)" in hexed
    long = cli("lookup", root, "--offset", offsets[2]).stdout
    assert "v" * 200 not in long and "…" in long and max(map(len, long.splitlines())) < 300


def test_hexdump_follows_an_index_chain_and_numbers_units(tmp_path):
    """--key walks the chain queryMessage walks (Java selectPhyOffset): its steps are
    the entries lookup's chain shows, numbered, each annotated; a consume queue's unit
    shows its queue offset; a refusal names only this command's options."""
    from rmqlab.store import open_store

    index = sorted((REFERENCE / "clean" / "store" / "index").iterdir())[0]
    out = cli("hexdump", index, "--key", "TopicB#shared")
    assert out.returncode == 0, out.stderr
    with open_store(REFERENCE / "clean" / "store") as st:
        f = next(x for x in st.index.files if x.path == index)
        _, slot, steps = f.walk_chain("TopicB#shared")
    assert f"slot {slot} at byte" in out.stdout and f"{len(steps)} entries on its chain" in out.stdout
    for i, s in enumerate(steps):
        assert f"step {i + 1}: entry {s.number} at byte" in out.stdout and f"── entry {s.number} ──" in out.stdout
    assert "(another key's hash: a collision on this slot)" in out.stdout  # 'shared' collides in this file
    by_slot = cli("hexdump", index, "--slot", slot)
    assert by_slot.stdout.count("\nstep ") >= len(steps)
    cq = REFERENCE / "clean" / "store" / "consumequeue" / "TopicA" / "1" / "00000000000000000400"
    assert "── unit 1 (queue offset 21) ──" in cli("hexdump", cq, "--length", 40).stdout
    (tmp_path / "index").mkdir()
    cut = tmp_path / "index" / "20260101000000000"
    cut.write_bytes(index.read_bytes()[:1000])
    refused = cli("hexdump", cut)
    assert refused.returncode == 2 and "--max-hash-slot-num" in refused.stderr and "--max-index-num" not in refused.stderr


def test_queue_lists_the_units_rocketmq_serves():
    """crash-torn: TopicB/2's last unit points at the torn record; RocketMQ's recovery
    cuts it (its dump: 52 units).  queue lists RocketMQ's units, warns once, exits 1;
    on the clean store every unit is listed and it exits 0."""
    torn = cli("queue", REFERENCE / "crash-torn" / "store", "--topic", "TopicB", "--queue-id", 2, "--json")
    want = json.loads((REFERENCE / "crash-torn" / "dump.json").read_text())["consumeQueues"]["TopicB/2"]["cqUnits"]
    assert torn.returncode == 1 and len(torn.stderr.splitlines()) == 1 and "1 unit(s) of TopicB/2" in torn.stderr
    assert [(u["queue_offset"], u["commitlog_offset"]) for u in map(json.loads, torn.stdout.splitlines())] == [(u["queueOffset"], u["physicalOffset"]) for u in want]
    clean = cli("queue", REFERENCE / "clean" / "store", "--topic", "TopicB", "--queue-id", 2, "--json")
    assert clean.returncode == 0 and clean.stderr == ""


@pytest.mark.parametrize("case", ["crash", "crash-torn", "crash-cqdeleted"])
def test_dump_of_every_recovered_reference_store_lists_what_rocketmq_kept(tmp_path, case):
    """recover --out on each crashed reference store, then dump of the copy: exit 0 or 1
    (1 only where bytes follow the end) and exactly the records RocketMQ's own walk of
    its recovered store listed (dump.json)."""
    out = tmp_path / "recovered"
    assert cli("recover", REFERENCE / case / "store", "--out", out).returncode == 0
    dump = cli("dump", out, "--json")
    kept = [w["physicalOffset"] for w in json.loads((REFERENCE / case / "dump.json").read_text())["commitLogWalk"] if w["kind"] == "MESSAGE"]
    assert dump.returncode in (0, 1) and [json.loads(line)["physical_offset"] for line in dump.stdout.splitlines()] == kept
    assert (dump.returncode == 1) == bool(dump.stderr)
