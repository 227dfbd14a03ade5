"""verify: every finding kind, each on a store damaged for that purpose.

Offsets and record facts come from RocketMQ's manifest (where each record really is),
so a finding is checked to name the right file and byte offset.
"""

from __future__ import annotations

import json
import struct

import pytest

from tests.support import REFERENCE, copy_store
from rmqlab.format.indexfile import entry_position, slot_position
from rmqlab.forensics.verify import ERROR, verify_store
from rmqlab.store import open_store

FILE = 65536


def manifest(case):
    return json.loads((REFERENCE / case / "manifest.json").read_text())["messages"]


def rec_in_file(case, file_index, k=3):
    return [m for m in manifest(case) if m["physicalOffset"] // FILE == file_index][k]


def clpath(store, offset):
    return store / "commitlog" / f"{offset - offset % FILE:020d}", offset % FILE


def patch(path, pos, data):
    with open(path, "r+b") as fh:
        fh.seek(pos)
        fh.write(data)


def read(path, pos, n):
    with open(path, "rb") as fh:
        fh.seek(pos)
        return fh.read(n)


def one(rep, kind):
    found = rep.by_kind(kind)
    assert found, f"no {kind} in:\n{rep.to_text()}"
    return found[0]


@pytest.mark.parametrize("case", ["clean", "v2ipv6"])
def test_undamaged_stores_have_no_findings(case):
    rep = verify_store(REFERENCE / case / "store")
    assert rep.ok and rep.findings == []
    assert rep.stats["records"] == len(manifest(case))


def test_crash_store_is_consistent_but_unclean():
    rep = verify_store(REFERENCE / "crash" / "store")
    assert rep.ok
    assert rep.kinds() == {"ABORT_PRESENT", "PREALLOCATED_FILE", "INDEX_AFTER_CHECKPOINT"}
    assert one(rep, "PREALLOCATED_FILE").file.endswith("00000000000000393216")
    assert one(rep, "INDEX_AFTER_CHECKPOINT").file.endswith("20261121232858541")


def test_reference_damage_is_found():
    torn = verify_store(REFERENCE / "crash-torn" / "store")
    # the zeroed tail makes propertiesLength 0, but the body's CRC fails first, as
    # RocketMQ's recovery logged ("CRC check failed")
    f = one(torn, "BODY_CRC")
    assert f.file.endswith("00000000000000327680") and f.offset == 366653 - 327680
    f = one(torn, "CQ_BEYOND_END")
    assert f.file.endswith("TopicB/2/00000000000000000800") and f.offset == 52 * 20 - 800
    assert len(torn.by_kind("INDEX_BEYOND_END")) == 3  # UNIQ_KEY + 2 keys of the torn record
    assert one(torn, "TAIL_BYTES").severity == "warning"
    deleted = verify_store(REFERENCE / "crash-cqdeleted" / "store")
    assert one(deleted, "CQ_MISSING_QUEUE").file.endswith("consumequeue/TopicB/1")
    assert [f.kind for f in deleted.errors] == ["CQ_MISSING_QUEUE"]


def test_bad_magic_resyncs_and_keeps_going(tmp_path):
    src = copy_store("clean", tmp_path)
    r = rec_in_file("clean", 2)
    path, pos = clpath(src, r["physicalOffset"])
    patch(path, pos + 4, b"\x00\x11\x22\x33")
    rep = verify_store(src)
    f = one(rep, "BAD_MAGIC")
    assert (f.file, f.offset, f.severity) == (str(path), pos, ERROR)
    assert one(rep, "RESYNC").offset == pos + r["size"]
    assert rep.stats["records"] == len(manifest("clean")) - 1  # everything else was still checked
    # a walk from the first file stops at the damage; the next start (normal recovery
    # from the last files) never reads file 2: the end of the log is where it was
    assert rep.stats["walk_end"] == r["physicalOffset"]
    assert rep.stats["log_end"] == 363733 and rep.outcome == "clean"


@pytest.mark.parametrize(
    "kind,field_pos,value",
    [
        ("BAD_SIZE", 0, struct.pack(">i", 10 * FILE)),
        ("SIZE_MISMATCH", 0, None),  # totalSize + 1
        ("PHYSICAL_OFFSET", 28, None),  # physicalOffset + 1
    ],
)
def test_record_field_damage(tmp_path, kind, field_pos, value):
    src = copy_store("clean", tmp_path)
    r = rec_in_file("clean", 1, 4)
    path, pos = clpath(src, r["physicalOffset"])
    if value is None:
        width = 4 if field_pos == 0 else 8
        fmt = ">i" if width == 4 else ">q"
        (old,) = struct.unpack(fmt, read(path, pos + field_pos, width))
        value = struct.pack(fmt, old + 1)
    patch(path, pos + field_pos, value)
    f = one(verify_store(src), kind)
    assert (f.file, f.offset) == (str(path), pos) or (kind == "SIZE_MISMATCH" and f.file == str(path) and pos <= f.offset < pos + r["size"])


def test_body_crc_and_walk_continues(tmp_path):
    src = copy_store("clean", tmp_path)
    r = next(m for m in manifest("clean") if m["physicalOffset"] // FILE == 3 and m["bodyLength"] > 0)
    path, pos = clpath(src, r["physicalOffset"])
    patch(path, pos + 88, bytes([read(path, pos + 88, 1)[0] ^ 0x40]))
    rep = verify_store(src)
    f = one(rep, "BODY_CRC")
    assert (f.file, f.offset) == (str(path), pos)
    assert rep.stats["records"] == len(manifest("clean"))
    assert rep.stats["walk_end"] == r["physicalOffset"]  # where a walk from the first file stops
    assert rep.stats["log_end"] == 363733  # the next start never reads file 3: RocketMQ serves the damaged body
    assert rep.cause is None


def test_property_crc(tmp_path):
    src = copy_store("v2ipv6", tmp_path)
    with open_store(src) as st:
        rec = next(x for x in st.commitlog.iter_records() if len(x.properties_raw) > 40)
        path, pos = rec.file, rec.file_offset
        props_at = pos + rec.total_size - len(rec.properties_raw)
    from pathlib import Path

    patch(Path(path), props_at, b"Z")  # first byte of the first property name
    rep = verify_store(src)
    f = one(rep, "PROPERTY_CRC")
    assert (f.file, f.offset) == (path, pos)
    assert not rep.by_kind("BODY_CRC")


def test_queue_offset_gap_and_cq_mismatch(tmp_path):
    src = copy_store("clean", tmp_path)
    r = next(m for m in manifest("clean") if m["physicalOffset"] // FILE == 2 and m["sysFlagStored"] == 0)
    path, pos = clpath(src, r["physicalOffset"])
    patch(path, pos + 20, struct.pack(">q", r["queueOffset"] + 5))
    rep = verify_store(src)
    f = one(rep, "QUEUE_OFFSET_GAP")
    assert (f.file, f.offset) == (str(path), pos)
    assert "queue offset" in one(rep, "CQ_MISMATCH").message


def test_bad_blank_tail_bytes_and_files(tmp_path):
    src = copy_store("clean", tmp_path)
    blank = next(w for w in json.loads((REFERENCE / "clean" / "dump.json").read_text())["commitLogWalk"] if w["kind"] == "BLANK")
    path, pos = clpath(src, blank["physicalOffset"])
    patch(path, pos, struct.pack(">i", blank["bytesToFileEnd"] - 1))
    last = src / "commitlog" / f"{5 * FILE:020d}"
    patch(last, 363733 - 5 * FILE + 100, b"leftover")
    (src / "commitlog" / f"{6 * FILE:020d}").write_bytes(b"")
    (src / "commitlog" / "notes.txt").write_text("x")
    rep = verify_store(src)
    assert (one(rep, "BAD_BLANK").file, one(rep, "BAD_BLANK").offset) == (str(path), pos)
    assert (one(rep, "TAIL_BYTES").file, one(rep, "TAIL_BYTES").offset) == (str(last), 363733 - 5 * FILE + 100)
    assert one(rep, "EMPTY_FILE").file.endswith(f"{6 * FILE:020d}")
    assert one(rep, "STRAY_FILE").file.endswith("notes.txt")
    assert rep.ok  # all warnings/notes


def test_layout_wrong_file_size(tmp_path):
    src = copy_store("clean", tmp_path)
    with open(src / "commitlog" / f"{2 * FILE:020d}", "r+b") as fh:
        fh.truncate(FILE - 100)
    rep = verify_store(src)
    assert one(rep, "LAYOUT").file.endswith(f"{2 * FILE:020d}") and not rep.ok


def _cq(src, q):
    return src / "consumequeue" / q


def test_consume_queue_findings(tmp_path):
    src = copy_store("clean", tmp_path)
    a = _cq(src, "TopicA/1") / "00000000000000000000"
    (off,) = struct.unpack(">q", read(a, 3 * 20, 8))
    patch(a, 3 * 20, struct.pack(">q", off + 1))  # entry 3 points inside a record
    b = _cq(src, "TopicB/1") / "00000000000000000400"
    patch(b, 2 * 20 + 12, struct.pack(">q", 12345))  # entry 22: wrong tagsCode
    c = _cq(src, "TopicC/2") / "00000000000000000400"
    patch(c, 5 * 20, bytes(20))  # entry 25 zeroed: the queue ends there, later entries are stale
    rep = verify_store(src)
    f = one(rep, "CQ_DANGLING")
    assert (f.file, f.offset) == (str(a), 60)
    f = one(rep, "CQ_MISMATCH")
    assert (f.file, f.offset) == (str(b), 40) and "tagsCode 12345" in f.message
    f = one(rep, "CQ_STALE_ENTRIES")
    assert (f.file, f.offset) == (str(c), 120)
    assert "TopicC/2" in one(rep, "CQ_BEHIND").message


def _index(src):
    return sorted((src / "index").iterdir())[0]


@pytest.mark.parametrize(
    "kind,damage",
    [
        ("INDEX_HEADER", lambda p: patch(p, 36, struct.pack(">i", 9999))),
        ("INDEX_SLOT", lambda p: patch(p, slot_position(3), struct.pack(">i", 300))),
        ("INDEX_CHAIN", lambda p: patch(p, entry_position(64, 5) + 16, struct.pack(">i", 7))),
        ("INDEX_CYCLE", lambda p: patch(p, entry_position(64, 200) + 16, struct.pack(">i", 200))),
        ("INDEX_ENTRY", lambda p: patch(p, entry_position(64, 9) + 12, struct.pack(">i", -5))),
        ("INDEX_DANGLING", lambda p: patch(p, entry_position(64, 10) + 4, struct.pack(">q", 1))),
        ("INDEX_HASH", lambda p: patch(p, entry_position(64, 11), struct.pack(">i", struct.unpack(">i", read(p, entry_position(64, 11), 4))[0] + 64))),
        ("INDEX_SLOT_MISMATCH", lambda p: patch(p, entry_position(64, 12), struct.pack(">i", struct.unpack(">i", read(p, entry_position(64, 12), 4))[0] + 1))),
        ("INDEX_ORPHAN", lambda p: patch(p, slot_position(0), struct.pack(">i", 0))),
    ],
)
def test_index_findings(tmp_path, kind, damage):
    src = copy_store("clean", tmp_path)
    p = _index(src)
    damage(p)
    rep = verify_store(src)
    f = one(rep, kind)
    assert f.file == str(p)


def test_index_entry_offsets_are_exact(tmp_path):
    src = copy_store("clean", tmp_path)
    p = _index(src)
    patch(p, entry_position(64, 10) + 4, struct.pack(">q", 1))
    f = one(verify_store(src), "INDEX_DANGLING")
    assert f.offset == entry_position(64, 10)


def test_checkpoint_findings(tmp_path):
    src = copy_store("crash", tmp_path)
    patch(src / "checkpoint", 0, struct.pack(">q", 1795303999999))
    rep = verify_store(src)
    assert one(rep, "CHECKPOINT_AHEAD").offset == 0
    assert one(rep, "ABORT_PRESENT").message.count("12481") == 1
    (src / "checkpoint").write_bytes(bytes(100))
    assert one(verify_store(src), "CHECKPOINT_SIZE")
    (src / "checkpoint").unlink()
    assert one(verify_store(src), "CHECKPOINT_MISSING")


def test_cli_verify_exit_status_and_json(tmp_path, capsys):
    from rmqlab.cli import main

    assert main(["verify", str(REFERENCE / "clean" / "store")]) == 0
    assert "OK" in capsys.readouterr().out
    assert main(["verify", str(REFERENCE / "crash-torn" / "store"), "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert not d["ok"] and {f["kind"] for f in d["findings"]} >= {"BODY_CRC", "CQ_BEYOND_END"}
    assert main(["verify", str(tmp_path / "nope")]) == 2
    assert "nope" in capsys.readouterr().err


def test_lock_held_by_a_running_store(tmp_path):
    from rmqlab.cli import main
    from rmqlab.engine.message_store import MessageStore

    src = copy_store("clean", tmp_path)
    cfg = __import__("rmqlab.config", fromlist=["MessageStoreConfig"]).MessageStoreConfig.from_mapping(
        json.loads((REFERENCE / "clean" / "config.json").read_text())["storeConfig"]
    )
    store = MessageStore(src, cfg, services=False)
    store.start()
    try:
        assert one(verify_store(src), "LOCK_HELD").offset == 0
        # and recover --in-place refuses to touch it
        assert main(["recover", str(src), "--in-place", "--sidecar", str(tmp_path / "side")]) == 2
    finally:
        store.shutdown()


def test_delay_levels_of_zero_or_less_keep_the_tags_hash(tmp_path):
    """Java checkMessageAndReturnSize makes tagsCode the delivery time only when the
    DELAY level is > 0; verify once expected it for any level and reported two false
    CQ_MISMATCH errors on this store rmqlab itself wrote."""
    from rmqlab.engine import Message, MessageStore
    from rmqlab.rules import SCHEDULE_TOPIC

    with MessageStore.open(tmp_path / "s", broker_rewrites=False) as st:
        for level in ("0", "-1", "3", " 3"):
            st.put(Message(SCHEDULE_TOPIC, b"x", {"TAGS": "a", "DELAY": level, "REAL_TOPIC": "T", "REAL_QID": "0"}, queue_id=2))
    rep = verify_store(tmp_path / "s")
    assert not rep.by_kind("CQ_MISMATCH")
    # " 3" is no level Java's Integer.parseInt reads: the next start's walk (checkMessageAndReturnSize)
    # ends the log at that record, which verify says first, as the cause
    assert rep.cause.kind == "DELAY_PARSE" and rep.errors[0].kind == "DELAY_PARSE" and {f.kind for f in rep.errors} == {"DELAY_PARSE", "CQ_BEYOND_END"}
    with open_store(tmp_path / "s") as st:
        codes = [e.tags_code for e in st.consume_queue(SCHEDULE_TOPIC, 2).entries()]
    assert codes[0] == codes[1] == 97  # "a".hashCode()
    assert codes[2] > 1_700_000_000_000  # level 3: the delivery time


def test_index_missing_counts_keyed_records_no_chain_reaches(tmp_path):
    """A slot zeroed in the newest index file: the keyed records of its chain are
    still in the log but no queryMessage finds them (below the index's end: they stay
    so).  And records a crash left undispatched (past the index's end) are counted
    apart.  RocketMQ's own stores have none."""
    from rmqlab.engine import ManualClock, Message, MessageStore
    from rmqlab.lookup import query_by_key
    from tests.engine.engine_support import small_config

    for case in ("clean", "crash", "v2ipv6"):
        assert not verify_store(REFERENCE / case / "store").by_kind("INDEX_MISSING"), case
    root = tmp_path / "s"
    cfg = small_config(max_hash_slot_num=512, max_index_num=2048)
    with MessageStore.open(root, cfg, clock=ManualClock(1_795_000_000_000, tick_ms=1), services=False) as store:
        for i in range(30):
            assert store.put(Message("TopicA", b"x" * 50, {"KEYS": f"key-{i}"}, queue_id=0)).ok
    with open_store(root, cfg) as st:
        f = st.index.files[-1]
        slots = f.slots()
        s = next(int(i) for i in range(len(slots)) if slots[i] > 0)
        path = f.path
        findable_before = {i for i in range(30) if query_by_key(st, "TopicA", f"key-{i}").records}
    data = bytearray(path.read_bytes())
    struct.pack_into(">i", data, slot_position(s), 0)
    path.write_bytes(bytes(data))
    with open_store(root, cfg) as st:
        gone = [i for i in range(30) if not query_by_key(st, "TopicA", f"key-{i}").records]
    assert gone and findable_before == set(range(30))
    f = one(verify_store(root, cfg), "INDEX_MISSING")
    assert f.message.startswith(f"{len(gone)} record(s) carry a key") and "stay unfindable" in f.message
    assert f.severity == "warning" and f.file.endswith(f"{0:020d}")


def test_index_missing_names_records_a_crash_left_undispatched(tmp_path):
    from rmqlab.engine import ManualClock, Message, MessageStore
    from tests.engine.engine_support import small_config

    root = tmp_path / "s"
    cfg = small_config(max_hash_slot_num=512, max_index_num=2048)
    store = MessageStore.open(root, cfg, clock=ManualClock(1_795_000_000_000, tick_ms=1), services=False, dispatch="manual")
    for i in range(12):
        assert store.put(Message("TopicA", b"x" * 50, {"KEYS": f"key-{i}"}, queue_id=0)).ok
    store.reput(5)  # the reput thread had dispatched five when the broker died
    store.crash()
    f = one(verify_store(root, cfg), "INDEX_MISSING")
    assert f.message.startswith("7 record(s)") and "not dispatched yet" in f.message


def test_any_window_gives_the_same_findings(tmp_path, monkeypatch):
    """Records are joined with the queues and the index a window at a time (memory stays
    that of two windows): windows of a few records, whose queues, chains and offsets run
    across many windows, find exactly what one window finds — on the damaged reference
    store and on stores damaged for each join."""
    from rmqlab.forensics import verify as v
    from tests.spark.test_verify_job import _dead_bytes, _gap_across_files, _index_damage, _queue_damage, _walk_damage

    def findings(root):
        return sorted(((f.kind, f.severity, f.file, f.offset, f.message) for f in verify_store(root).findings), key=repr)

    roots = [REFERENCE / "crash-torn" / "store"]
    for i, damage in enumerate((_walk_damage, _queue_damage, _index_damage, _dead_bytes, _gap_across_files)):
        roots.append(copy_store("clean", tmp_path / str(i)))
        damage(roots[-1])
    for root in roots:
        whole = findings(root)
        assert whole
        for rows in (7, 64):
            monkeypatch.setattr(v, "WINDOW_ROWS", rows)
            assert findings(root) == whole, (root, rows)
        monkeypatch.undo()
