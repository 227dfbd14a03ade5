"""Recovery of damage the reference cases do not cover, reasoned from RocketMQ's rules
(spec section 5 and Java ``CommitLog.checkMessageAndReturnSize`` / ``recoverAbnormally``).

Expected values come from what RocketMQ wrote (``manifest.json``: every record's
offset, size and queue) and the rules, never from rmqlab's own output: e.g. "a bad
magic at record R ends the log at R's offset; every queue keeps exactly its records
before R; every record after R is lost but still readable".
"""

from __future__ import annotations

import json
import struct

import pytest

from tests.support import REFERENCE, copy_store
from rmqlab import lookup
from rmqlab.config import MessageStoreConfig
from rmqlab.writers.clock import ManualClock
from rmqlab.recovery import recover
from rmqlab.store import open_store

FILE = 65536


def cfg(case: str) -> MessageStoreConfig:
    return MessageStoreConfig.from_mapping(json.loads((REFERENCE / case / "config.json").read_text())["storeConfig"])


def manifest(case: str) -> list[dict]:
    return json.loads((REFERENCE / case / "manifest.json").read_text())["messages"]


def in_queue(m: dict) -> bool:
    return m["sysFlagStored"] & 0xC in (0x0, 0x8)


def clfile(store, offset: int):
    return store / "commitlog" / f"{offset - offset % FILE:020d}", offset % FILE


def patch(path, pos: int, data: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(pos)
        fh.write(data)


def pick(case: str, file_index: int, k: int = 3) -> dict:
    """The k-th record stored in commitlog file ``file_index`` (a record mid-log)."""
    recs = [m for m in manifest(case) if m["physicalOffset"] // FILE == file_index]
    return recs[k]


def expected_queues(case: str, cut: int) -> dict[str, int]:
    """Each queue's max offset after cutting the log at ``cut``: its records before the cut."""
    out: dict[str, int] = {}
    for m in manifest(case):
        if in_queue(m):
            key = f"{m['topic']}/{m['queueId']}"
            out.setdefault(key, 0)
            if m["physicalOffset"] < cut:
                out[key] = max(out[key], m["queueOffset"] + 1)
    return out


def recovered_queues(store_dir, case) -> dict[str, int]:
    with open_store(store_dir, cfg(case)) as st:
        out = {}
        for q in st.queue_ids():
            lo, hi = st.consume_queue(q.topic, q.queue_id).valid_range(st.commitlog.min_offset)
            out[str(q)] = hi
        return out


def check_cut_at(tmp_path, case: str, cut: int, kind: str, src) -> object:
    out = tmp_path / "out"
    rep = recover(src, config=cfg(case), out=out, clock=ManualClock(1795303800000))
    assert rep.commitlog_end == cut
    assert rep.stop.kind == kind and rep.stop.physical_offset == cut
    # every queue keeps exactly its records before the cut
    exp = expected_queues(case, cut)
    got = recovered_queues(out, case)
    for q, n in exp.items():
        assert got.get(q, 0) == n, q
    # files after the one holding the cut are gone
    names = sorted(p.name for p in (out / "commitlog").iterdir())
    assert names[-1] == f"{cut - cut % FILE:020d}"
    # every CQ entry now points at a record that decodes, with a matching queue offset
    with open_store(out, cfg(case)) as st:
        for q in st.queue_ids():
            for e in st.consume_queue(q.topic, q.queue_id).entries(st.commitlog.min_offset):
                rec = st.commitlog.read(e.commitlog_offset)
                assert (rec.topic, rec.queue_id, rec.queue_offset, rec.total_size) == (q.topic, q.queue_id, e.queue_offset, e.size)
                assert rec.physical_offset < cut
    return rep


def test_bad_magic_mid_file(tmp_path):
    src = copy_store("crash", tmp_path)
    r = pick("crash", 2)
    path, pos = clfile(src, r["physicalOffset"])
    patch(path, pos + 4, b"\xde\xad\xbe\xef")
    rep = check_cut_at(tmp_path, "crash", r["physicalOffset"], "BAD_MAGIC", src)
    assert "found a illegal magic code 0xdeadbeef" in rep.log_lines
    assert any(l.endswith(f"pos={pos + 8}") for l in rep.log_lines)
    # every record after the damage is lost, and salvage still reads each of them; the
    # damaged record is lost too (its queue entry says where it was)
    after = [m["physicalOffset"] for m in manifest("crash") if m["physicalOffset"] > r["physicalOffset"]]
    assert [x.physical_offset for x in rep.lost_records] == ([r["physicalOffset"]] if in_queue(r) else []) + after
    assert [x.confidence for x in rep.lost_records if x.physical_offset in after] == ["certain"] * len(after)
    assert rep.deleted_commitlog_files == [f"{o:020d}" for o in range(3 * FILE, 7 * FILE, FILE)]


@pytest.mark.parametrize("byte", [4, 5, 7])
def test_one_bit_of_magic_in_a_record_the_queues_point_at(tmp_path, byte):
    """Regression (found by the CRC property test): the consume queues still point at
    the damaged record, and the walk must stop there, not take it as part of a run."""
    src = copy_store("crash", tmp_path)
    r = next(m for m in manifest("crash") if in_queue(m) and m["physicalOffset"] > 2000)
    path, pos = clfile(src, r["physicalOffset"])
    b = path.read_bytes()[pos + byte]
    patch(path, pos + byte, bytes([b ^ 1]))
    rep = recover(src, config=cfg("crash"))
    assert rep.commitlog_end == r["physicalOffset"] and rep.stop.kind == "BAD_MAGIC"


def test_size_past_the_end_of_the_file(tmp_path):
    src = copy_store("crash", tmp_path)
    r = pick("crash", 1, 5)
    path, pos = clfile(src, r["physicalOffset"])
    patch(path, pos, struct.pack(">i", FILE))  # totalSize larger than what is left
    rep = check_cut_at(tmp_path, "crash", r["physicalOffset"], "BAD_SIZE", src)
    assert not any("illegal magic" in l for l in rep.log_lines)  # Java fails before reading the magic


def test_crc_failure_followed_by_valid_records(tmp_path):
    src = copy_store("crash", tmp_path)
    r = next(m for m in manifest("crash") if m["physicalOffset"] // FILE == 3 and m["bodyLength"] > 16)
    path, pos = clfile(src, r["physicalOffset"])
    body_at = pos + 88  # IPv4 hosts: the body starts 88 bytes in
    b = bytearray(path.read_bytes()[body_at : body_at + 1])
    patch(path, body_at, bytes([b[0] ^ 0x01]))
    rep = check_cut_at(tmp_path, "crash", r["physicalOffset"], "BODY_CRC", src)
    assert any(l.startswith("CRC check failed. bodyCRC=") for l in rep.log_lines)
    after = [m["physicalOffset"] for m in manifest("crash") if m["physicalOffset"] > r["physicalOffset"]]
    assert [x.physical_offset for x in rep.lost_records] == ([r["physicalOffset"]] if in_queue(r) else []) + after
    assert [x.confidence for x in rep.lost_records if x.physical_offset in after] == ["certain"] * len(after)
    # without checkCRCOnRecover the damaged record is kept and nothing is lost
    rep2 = recover(src, config=cfg("crash"), check_crc=False)
    assert rep2.commitlog_end == 367042 and not rep2.lost_records


def test_crc_failure_in_normal_mode_is_cut_too(tmp_path):
    src = copy_store("clean", tmp_path)
    r = pick("clean", 5, 4)  # in the last file: where 5.3.2+ normal recovery starts
    path, pos = clfile(src, r["physicalOffset"])
    patch(path, pos + 88, bytes([path.read_bytes()[pos + 88] ^ 0xFF]))
    rep = check_cut_at(tmp_path, "clean", r["physicalOffset"], "BODY_CRC", src)
    assert rep.mode == "normal"
    # the consume queues held the cut records: they are cut (RocketMQ truncates dirty logic files)
    assert any(l.startswith("maxPhyOffsetOfConsumeQueue(363733) >= processOffset") for l in rep.log_lines)


def test_crc_failure_in_an_old_file_is_not_seen_by_normal_recovery(tmp_path):
    """Normal recovery (5.3.2+) only scans from the file holding the queues' max offset:
    damage in an older file is not looked at, exactly as in RocketMQ."""
    src = copy_store("clean", tmp_path)
    r = pick("clean", 1, 4)
    path, pos = clfile(src, r["physicalOffset"])
    patch(path, pos + 88, bytes([path.read_bytes()[pos + 88] ^ 0xFF]))
    assert recover(src, config=cfg("clean")).commitlog_end == 363733
    # the older rule scans the last three files: still not file 1
    assert recover(src, config=cfg("clean"), legacy_three_files=True).commitlog_end == 363733
    # after a crash the scan starts at file 0 and does see it
    (src / "abort").write_text("1")
    assert recover(src, config=cfg("clean")).commitlog_end == r["physicalOffset"]


def test_legacy_three_files_rule(tmp_path):
    src = copy_store("clean", tmp_path)
    rep = recover(src, config=cfg("clean"), legacy_three_files=True)
    assert rep.start_file == f"{3 * FILE:020d}"
    assert [l for l in rep.log_lines if l.startswith("recover next physics file")] == [
        f"recover next physics file, <store>/commitlog/{4 * FILE:020d}",
        f"recover next physics file, <store>/commitlog/{5 * FILE:020d}",
    ]
    assert rep.commitlog_end == 363733


def _carriers(case):
    out: dict[tuple[str, str], set[int]] = {}
    for m in manifest(case):
        if m["sysFlagStored"] & 0xC == 0xC:
            continue
        for k in [k for k in (m["keys"] or "").split(" ") if k] + ([m["uniqKey"]] if m["uniqKey"] else []):
            out.setdefault((m["topic"], k), set()).add(m["physicalOffset"])
    return out


def test_missing_index_dir_is_rebuilt_after_a_crash(tmp_path):
    import shutil

    src = copy_store("crash", tmp_path)
    shutil.rmtree(src / "index")
    out = tmp_path / "out"
    rep = recover(src, config=cfg("crash"), out=out, clock=ManualClock(1795303800000, tick_ms=1))
    assert rep.commitlog_end == 367042
    with open_store(out, cfg("crash")) as st:
        assert len(st.index.files) == 6  # 1425 entries, 255 per file (entry 0 unused)
        for (topic, key), offs in _carriers("crash").items():
            res = lookup.query_by_key(st, topic, key)
            assert [r.physical_offset for r in res.records] == sorted(offs)
            assert len(res.raw_offsets) == len(set(res.raw_offsets))  # each record indexed once


@pytest.mark.parametrize("keep", [0, 20, 300])
def test_a_short_newest_index_file_is_kept_full_size_as_java_maps_it(tmp_path, keep):
    """The newest index file emptied or cut short (inside its header, inside its
    slots): RocketMQ maps it full size, zeros past its end, and keeps it.  Recovery
    says so, pads the copy it writes, and the copy opens in the engine and takes
    keys."""
    from rmqlab.engine import Message, MessageStore

    src = copy_store("clean", tmp_path)
    newest = sorted((src / "index").iterdir())[-1]
    newest.write_bytes(newest.read_bytes()[:keep])
    out = tmp_path / "out"
    rep = recover(src, config=cfg("clean"), out=out)
    assert any(f"index file {newest.name} is {keep} bytes" in n for n in rep.notes)
    assert (out / "index" / newest.name).stat().st_size == cfg("clean").index_file_size
    assert newest.stat().st_size == keep  # the evidence is as it was
    with MessageStore.open(out, cfg("clean")) as st:
        assert st.put(Message("TopicA", b"after", queue_id=0, properties={"KEYS": "after-recovery"})).ok
        st.reput()
        with st.reader() as r:
            assert [x.body for x in lookup.query_by_key(r, "TopicA", "after-recovery").records] == [b"after"]


def test_missing_index_dir_after_a_clean_exit_is_not_rebuilt(tmp_path):
    """RocketMQ's normal recovery only dispatches records after the queues' max offset."""
    import shutil

    src = copy_store("clean", tmp_path)
    shutil.rmtree(src / "index")
    out = tmp_path / "out"
    rep = recover(src, config=cfg("clean"), out=out)
    assert rep.records_redispatched == 0
    assert not (out / "index").exists() or not any((out / "index").iterdir())


@pytest.mark.parametrize("case", ["crash", "clean"])
def test_deleted_consumequeue_dir_is_rebuilt(tmp_path, case, dumps):
    import shutil

    src = copy_store(case, tmp_path)
    shutil.rmtree(src / "consumequeue")
    out = tmp_path / "out"
    rep = recover(src, config=cfg(case), out=out, clock=ManualClock(1795303800000))
    assert rep.max_phy_offset_in_cq_before == -1
    assert all(q.created for q in rep.queues)
    with open_store(out, cfg(case)) as st:
        cqs = dumps[case]["consumeQueues"]
        assert sorted(str(q) for q in st.queue_ids()) == sorted(cqs)
        for key, cq in cqs.items():
            q = st.consume_queue(cq["topic"], cq["queueId"])
            got = [(e.queue_offset, e.commitlog_offset, e.size, e.tags_code) for e in q.entries()]
            assert got == [(u["queueOffset"], u["physicalOffset"], u["size"], u["tagsCode"]) for u in cq["cqUnits"]], key


def test_truncated_last_file(tmp_path):
    """A short commitlog file makes RocketMQ's load() fail; rmqlab says so and, when
    applying, zero-extends the file as Java's mapping would show it."""
    src = copy_store("clean", tmp_path)
    last = src / "commitlog" / f"{5 * FILE:020d}"
    with open(last, "r+b") as fh:
        fh.truncate(30000)
    cut_into = 5 * FILE + 30000
    victim = next(m for m in manifest("clean") if m["physicalOffset"] < cut_into < m["physicalOffset"] + m["size"])
    rep = recover(src, config=cfg("clean"))
    assert not rep.load_ok
    assert last.name in rep.load_problems[0] and "30000" in rep.load_problems[0]
    out = tmp_path / "out"
    rep = recover(src, config=cfg("clean"), out=out)
    assert rep.commitlog_end == victim["physicalOffset"]
    assert (out / "commitlog" / last.name).stat().st_size == FILE


def test_preallocated_files_after_the_end(tmp_path):
    src = copy_store("clean", tmp_path)
    empty = src / "commitlog" / f"{6 * FILE:020d}"
    empty.write_bytes(b"")  # a zero-length last file: Java's load deletes it
    out = tmp_path / "out"
    rep = recover(src, config=cfg("clean"), out=out)
    assert rep.commitlog_end == 363733 and not (out / "commitlog" / empty.name).exists()
    empty.write_bytes(bytes(FILE))  # a full-size pre-allocated file of zeros
    out2 = tmp_path / "out2"
    rep = recover(src, config=cfg("clean"), out=out2)
    assert rep.commitlog_end == 363733 and rep.deleted_commitlog_files == [empty.name]
    assert rep.cut_bytes == 0 and not rep.lost_records


def test_in_place_recoveries_in_the_same_second_keep_separate_sidecars(tmp_path, monkeypatch):
    """The default sidecar is named by the second: a second recovery within it (a crash
    soon after a start) gets its own directory instead of failing, and the first
    one's saved bytes stay as they were."""
    import importlib

    rec = importlib.import_module("rmqlab.recovery.recover")  # the module (the package's name for it is the function)
    monkeypatch.setattr(rec.time, "strftime", lambda fmt, *a: "20261122103000")
    src = copy_store("crash-torn", tmp_path)
    earlier = tmp_path / f"{src.name}.rmqlab-cut-20261122103000"
    earlier.mkdir()
    (earlier / "manifest.json").write_text("{}")
    rep = recover(src, config=cfg("crash-torn"), in_place=True, clock=ManualClock(1795303800000))
    assert rep.sidecar == str(earlier) + "-2" and (earlier.parent / (earlier.name + "-2") / "manifest.json").exists()
    assert (earlier / "manifest.json").read_text() == "{}" and [p.name for p in earlier.iterdir()] == ["manifest.json"]


def test_in_place_saves_every_cut_byte(tmp_path):
    src = copy_store("crash-torn", tmp_path)
    original = {p.relative_to(src): p.read_bytes() for p in src.rglob("*") if p.is_file()}
    side = tmp_path / "side"
    rep = recover(src, config=cfg("crash-torn"), in_place=True, sidecar=side, clock=ManualClock(1795303800000))
    assert rep.applied == "in-place" and rep.sidecar == str(side)
    man = json.loads((side / "manifest.json").read_text())
    saved = [c for c in man["cuts"] if "file" in c]
    # the torn tail, the dropped index file and the cut consume-queue entry were saved, byte for byte
    for c in saved:
        if c["saved_as"]:
            data = (side / c["saved_as"]).read_bytes()
            assert data == original[__import__("pathlib").Path(c["file"])][c["offset"] : c["offset"] + c["length"]]
    files = {c["file"] for c in saved}
    assert "commitlog/00000000000000327680" in files
    assert "index/20261121232858541" in files
    assert "consumequeue/TopicB/2/00000000000000000800" in files
    assert "commitlog/00000000000000393216" in files  # deleted, all zeros: listed, nothing to save
    # RocketMQ does not zero the commitlog tail: the torn bytes are still there
    tail = (src / "commitlog" / "00000000000000327680").read_bytes()[38973:39167]
    assert tail == original[__import__("pathlib").Path("commitlog/00000000000000327680")][38973:39167]
    assert not (src / "abort").exists()


def test_zero_tail_option(tmp_path):
    src = copy_store("crash-torn", tmp_path)
    out = tmp_path / "out"
    recover(src, config=cfg("crash-torn"), out=out, zero_tail=True, clock=ManualClock(1795303800000))
    assert not any((out / "commitlog" / "00000000000000327680").read_bytes()[38973:])


def test_report_renders_and_is_json(tmp_path):
    rep = recover(REFERENCE / "crash-torn" / "store", config=cfg("crash-torn"))
    text = rep.to_text()
    assert "BODY_CRC" in text and "366653" in text and "TopicB/2" in text and "DRY RUN" in text
    d = json.loads(json.dumps(rep.to_dict()))
    assert d["commitlog_end"] == 366653 and d["stop"]["kind"] == "BODY_CRC"


def test_cli_recover_modes(tmp_path, capsys):
    from rmqlab.cli import main

    src = copy_store("crash", tmp_path)
    assert main(["recover", str(src), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["applied"] == "dry-run" and d["commitlog_end"] == 367042
    assert (src / "abort").exists()
    assert main(["recover", str(src), "--out", str(tmp_path / "o"), "--config", str(_broker_conf(tmp_path, "crash"))]) == 0
    assert "applied to a copy" in capsys.readouterr().out
    assert main(["recover", str(src), "--out", str(tmp_path / "o")]) == 2  # exists: a clear error, no traceback
    assert "already exists" in capsys.readouterr().err


def _broker_conf(tmp_path, case):
    p = tmp_path / "broker.conf"
    p.write_text("".join(f"{k}={v}\n" for k, v in json.loads((REFERENCE / case / "config.json").read_text())["storeConfig"].items()))
    return p


def test_a_cut_last_commitlog_file_is_recovered_through_its_zero_padded_view(tmp_path):
    """Java's MappedFileQueue.load refuses a commitlog file of the wrong size (the broker
    does not start); rmqlab reads it zero-padded, as Java would map it.  A cut inside a
    record's properties leaves its body CRC intact, so the scan accepts the record in
    the zeros; re-dispatch read the short file instead and raised (found by the
    differential run against RocketMQ)."""
    src = copy_store("crash", tmp_path)
    last = [m for m in manifest("crash") if m["physicalOffset"] // FILE == 5][-1]
    path, pos = clfile(src, last["physicalOffset"])
    cut = pos + last["size"] - 3  # inside its properties, the last record of the log
    with open(path, "r+b") as fh:
        fh.truncate(cut)
    rep = recover(src, config=cfg("crash"), out=tmp_path / "out", clock=ManualClock(1795303800000, tick_ms=1))
    assert not rep.load_ok and any("00000000000000327680" in p for p in rep.load_problems)
    assert rep.commitlog_end == last["physicalOffset"] + last["size"]
    with open_store(tmp_path / "out", cfg("crash")) as st:
        assert st.commitlog.read(last["physicalOffset"]).total_size == last["size"]


def test_key_lookups_do_not_serve_records_past_the_end_of_the_log(tmp_path):
    """Recovery cuts the log at a zeroed page and leaves the readable records after it in
    the file (as RocketMQ does); the index files of a clean shutdown are kept, so they
    still point there.  RocketMQ's queryMessage serves nothing at or past the end of
    the log (MappedFile.selectMappedBuffer), so neither may the key lookup."""
    src = copy_store("clean", tmp_path)
    after = [m for m in manifest("clean") if m["physicalOffset"] // FILE == 5]
    page_at = (after[1]["physicalOffset"] % FILE) // 4096 * 4096  # the page the first small record starts in
    path = src / "commitlog" / f"{5 * FILE:020d}"
    patch(path, page_at, bytes(4096))
    out = tmp_path / "out"
    rep = recover(src, config=cfg("clean"), out=out, clock=ManualClock(1795303800000, tick_ms=1))
    dead = [m for m in after if m["physicalOffset"] >= 5 * FILE + page_at + 4096 and m["keys"]]
    assert dead and rep.commitlog_end <= 5 * FILE + page_at
    with open_store(out, cfg("clean")) as st:
        assert st.commitlog.served_end() == rep.commitlog_end
        for m in dead:
            key = next(k for k in m["keys"].split(" ") if k)
            res = lookup.query_by_key(st, m["topic"], key)
            assert m["physicalOffset"] in res.raw_offsets  # the index still points there
            assert m["physicalOffset"] in res.past_end
            assert all(r.physical_offset < rep.commitlog_end for r in res.records)


def test_a_record_whose_topic_was_damaged_goes_to_its_new_topics_queue(tmp_path):
    """A flipped bit in a topic name leaves the record valid (no CRC covers the topic).
    Abnormal recovery hands every scanned record to dispatch (Java recoverAbnormally →
    doDispatch): its old queue already holds it, but the topic it now names gets a
    queue of its own, starting at the record's queue offset (ConsumeQueue
    .putMessagePositionInfo fills the slots before it).  rmqlab once skipped it as
    already dispatched (found by the differential run against RocketMQ)."""
    src = copy_store("crash", tmp_path)
    m = [x for x in manifest("crash") if x["physicalOffset"] // FILE == 0 and x["topic"] == "TopicA" and x["queueOffset"] > 0][0]
    path, pos = clfile(src, m["physicalOffset"])
    data = path.read_bytes()
    topic_at = data.index(b"TopicA", pos)  # the first "TopicA" after the record's start: its topic
    patch(path, topic_at + 5, b"Q")  # TopicA -> TopicQ
    rep = recover(src, config=cfg("crash"), out=tmp_path / "out", clock=ManualClock(1795303800000, tick_ms=1))
    assert rep.commitlog_end == 367042
    with open_store(tmp_path / "out", cfg("crash")) as st:
        q = st.consume_queue("TopicQ", m["queueId"])
        assert [(e.queue_offset, e.commitlog_offset) for e in q.entries(st.commitlog.min_offset)] == [(m["queueOffset"], m["physicalOffset"])]
        old = st.consume_queue("TopicA", m["queueId"]).get(m["queueOffset"])
        assert old.commitlog_offset == m["physicalOffset"]  # the old queue keeps its entry


@pytest.mark.parametrize("how", [["--in-place"], ["--out", "OUT"], ["--dry-run"]])
def test_a_store_with_an_empty_commitlog_directory_recovers(tmp_path, how):
    """What a writer killed while opening leaves: an empty commitlog/.  RocketMQ starts
    on it as on a new store; recover once raised KeyError: 'delete_commitlog'."""
    import subprocess
    import sys

    (tmp_path / "s" / "commitlog").mkdir(parents=True)
    args = [str(tmp_path / "o") if a == "OUT" else a for a in how]
    done = subprocess.run([sys.executable, "-m", "rmqlab", "recover", str(tmp_path / "s"), *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "end of log     0" in done.stdout


def test_a_log_cut_to_nothing_leaves_the_queues_max_physical_offset_at_the_cut(tmp_path):
    """ConsumeQueue.truncateDirtyLogicFiles sets maxPhysicOffset to the cut first and
    lowers it only for entries it keeps: cut at 0, every queue (and the store's max over
    them) says 0, not -1 (found by the differential run)."""
    src = copy_store("crash", tmp_path)
    path, pos = clfile(src, manifest("crash")[0]["physicalOffset"])
    patch(path, pos + 4, bytes(4))  # the first record's magic code
    rep = recover(src, config=cfg("crash"), out=tmp_path / "out", clock=ManualClock(1795303800000, tick_ms=1))
    assert rep.commitlog_end == 0 and rep.stop.kind == "BAD_MAGIC"
    assert rep.max_phy_offset_in_cq_after == 0


def test_a_damaged_physical_offset_field_is_dispatched_as_rocketmq_reads_it(tmp_path):
    """Java's DispatchRequest.commitLogOffset and MessageExt.commitLogOffset are the
    record's own physicalOffset field (checkMessageAndReturnSize, MessageDecoder): the
    rebuilt index points where the damaged field says, and the msgId carries it (the
    differential run found rmqlab using the record's position)."""
    src = copy_store("crash", tmp_path)
    m = [x for x in manifest("crash") if x["keys"] and x["physicalOffset"] // FILE == 5][-1]  # re-indexed after the crash
    path, pos = clfile(src, m["physicalOffset"])
    bogus = m["physicalOffset"] + (1 << 32)
    patch(path, pos + 28, struct.pack(">q", bogus))  # physicalOffset (no CRC covers it)
    rep = recover(src, config=cfg("crash"), out=tmp_path / "out", clock=ManualClock(1795303800000, tick_ms=1))
    assert rep.commitlog_end == 367042
    with open_store(tmp_path / "out", cfg("crash")) as st:
        key = next(k for k in m["keys"].split(" ") if k)
        assert bogus in lookup.query_by_key(st, m["topic"], key).raw_offsets
        rec = st.commitlog.read(m["physicalOffset"])
        assert rec.stored_physical_offset == bogus and rec.msg_id.endswith(f"{bogus:016X}")


def test_a_damaged_physical_offset_field_below_the_kept_index_is_dispatched_too(tmp_path):
    """The same damage in a record the kept index files already cover: Java's abnormal
    recovery hands it to dispatch and, by its field, it is past the index's endPhyOffset,
    so RocketMQ indexes it there.  rmqlab once skipped it as already dispatched (by its
    position); found by the differential run."""
    src = copy_store("crash", tmp_path)
    m = [x for x in manifest("crash") if x["keys"] and x["physicalOffset"] // FILE == 0][3]
    path, pos = clfile(src, m["physicalOffset"])
    bogus = m["physicalOffset"] + (1 << 34)
    patch(path, pos + 28, struct.pack(">q", bogus))
    recover(src, config=cfg("crash"), out=tmp_path / "out", clock=ManualClock(1795303800000, tick_ms=1))
    with open_store(tmp_path / "out", cfg("crash")) as st:
        key = next(k for k in m["keys"].split(" ") if k)
        assert bogus in lookup.query_by_key(st, m["topic"], key).raw_offsets


@pytest.mark.parametrize("size", [26, 3])
def test_a_commitlog_file_cut_to_a_few_bytes_is_recovered(tmp_path, size):
    """Abnormal recovery looks at each file's first record (isMappedFileMatchedRecover)
    as Java maps the file, zero-padded: a last file cut to 26 bytes raised struct.error
    (found by the differential run)."""
    src = copy_store("crash", tmp_path)
    last = sorted((src / "commitlog").iterdir())[-2]  # the last file holding records
    with open(last, "r+b") as fh:
        fh.truncate(size)
    rep = recover(src, config=cfg("crash"), out=tmp_path / "out", clock=ManualClock(1795303800000, tick_ms=1))
    assert not rep.load_ok and rep.commitlog_end <= int(last.name)


def test_an_index_size_nothing_says_is_asked_for_not_defaulted(tmp_path, capsys):
    """A store of small files killed before its first shutdown, its index gone (and no
    config/): re-dispatch would build an index file, and nothing says its size.  The
    dry run says so; applying refuses (exit 2, naming index/) instead of writing a
    420 MB file at RocketMQ's defaults; given the sizes, it applies, and the engine
    opens the result with the store's real config."""
    import shutil

    from rmqlab.cli import main
    from rmqlab.engine import ManualClock as Clock, Message, MessageStore
    from tests.engine.engine_support import small_config

    root = tmp_path / "s"
    store = MessageStore.open(root, small_config(), clock=Clock(1_795_000_000_000, tick_ms=1), services=False)
    for i in range(40):
        assert store.put(Message("TopicA", b"x" * 100, {"KEYS": f"k{i}"}, queue_id=i % 2)).ok
    store.reput()
    store.crash()
    shutil.rmtree(root / "index")
    shutil.rmtree(root / "config")
    before = sorted(p.name for p in root.rglob("*"))
    assert main(["recover", str(root)]) == 0
    out, _ = capsys.readouterr()
    assert "nothing says its size" in out
    assert main(["recover", str(root), "--in-place"]) == 2
    _, err = capsys.readouterr()
    assert str(root / "index") in err and "give the store's sizes" in err and "\n" == err[-1] and err.count("\n") == 1
    assert sorted(p.name for p in root.rglob("*")) == before  # nothing written, no sidecar made
    assert not list(tmp_path.glob("s.rmqlab-cut-*"))
    assert main(["recover", str(root), "--in-place", "--max-hash-slot-num", "64", "--max-index-num", "256"]) == 0
    capsys.readouterr()
    with MessageStore.open(root, small_config(), services=False) as again:
        assert [r.queue_offset for r in again.query_message("TopicA", "k7").records] == [3]


def test_the_report_counts_the_keys_recovery_leaves_unfindable(tmp_path):
    """apache/rocketmq#8007: after a crash abnormal recovery drops the index files
    newer than the checkpoint's indexMsgTimestamp but re-dispatches only from the file
    the checkpoint's minTimestamp chooses; keyed records between the two are never
    indexed again.  The dry run says how many; after applying it, exactly those keys
    are the ones no lookup finds.  With messageIndexSafe the count is 0 and every key
    is found."""
    from rmqlab.engine import ManualClock as Clock, Message, MessageStore
    from rmqlab.format.checkpoint import CheckpointV5
    from tests.engine.engine_support import small_config

    cfg = small_config(max_hash_slot_num=64, max_index_num=128)
    root = tmp_path / "s"
    store = MessageStore.open(root, cfg, clock=Clock(1_795_000_000_000, tick_ms=100), services=False)
    n = 900
    for i in range(n):
        assert store.put(Message("TopicA", b"x" * 150, {"KEYS": f"key-{i}"}, queue_id=i % 3)).ok
    store.flush()
    store.crash()
    raw = (root / "checkpoint").read_bytes()
    cp = {k: v for k, v in CheckpointV5.parse(raw[: CheckpointV5.sizeof()]).items() if not k.startswith("_")}
    cp["index_msg_timestamp"] -= 40_000  # the index flushed 40 s before the log and queues
    (root / "checkpoint").write_bytes(CheckpointV5.build(cp) + raw[CheckpointV5.sizeof() :])

    def unfindable(store_root):
        with open_store(store_root, cfg) as st:
            return [i for i in range(n) if not lookup.query_by_key(st, "TopicA", f"key-{i}").records]

    dry = recover(root, config=cfg)
    assert dry.index_unfindable > 0 and "stay in the log but no index will hold them" in dry.to_text()
    rep = recover(root, config=cfg, out=tmp_path / "copy", clock=ManualClock(1_796_000_000_000, tick_ms=1))
    lost = unfindable(tmp_path / "copy")
    assert len(lost) == rep.index_unfindable == dry.index_unfindable, (len(lost), rep.index_unfindable)
    safe = cfg.replace(message_index_safe=True)
    assert recover(root, config=safe).index_unfindable == 0
    recover(root, config=safe, out=tmp_path / "safe", clock=ManualClock(1_796_000_000_000, tick_ms=1))
    assert unfindable(tmp_path / "safe") == []
    # beyond RocketMQ: --reindex rebuilds every index file from the whole log
    from rmqlab.cli import main

    assert recover(root, config=cfg, reindex=True).index_unfindable == 0
    assert main(["recover", str(root), "--out", str(tmp_path / "re"), "--reindex", "--max-hash-slot-num", "64", "--max-index-num", "128"]) == 0
    assert unfindable(tmp_path / "re") == []
    with open_store(tmp_path / "re", cfg) as st, open_store(tmp_path / "copy", cfg) as plain:
        # the queues are the same as RocketMQ's recovery leaves them; only the index differs
        for q in plain.queue_ids():
            assert list(st.consume_queue(q.topic, q.queue_id).entries()) == list(plain.consume_queue(q.topic, q.queue_id).entries())


def test_dump_of_the_recovered_copy_lists_what_rocketmq_serves_and_marks_the_dead(tmp_path, capsys):
    """After the cut of the test above, `dump` lists exactly the records before the end
    of the log (exit 1: readable records lie after it); `--dead` adds those, marked."""
    from rmqlab.cli import main

    src = copy_store("clean", tmp_path)
    after = [m for m in manifest("clean") if m["physicalOffset"] // FILE == 5]
    page_at = (after[1]["physicalOffset"] % FILE) // 4096 * 4096
    patch(src / "commitlog" / f"{5 * FILE:020d}", page_at, bytes(4096))
    out = tmp_path / "out"
    rep = recover(src, config=cfg("clean"), out=out, clock=ManualClock(1795303800000, tick_ms=1))
    kept = [m["physicalOffset"] for m in manifest("clean") if m["physicalOffset"] + m["size"] <= rep.commitlog_end]
    dead = [m["physicalOffset"] for m in after if m["physicalOffset"] >= 5 * FILE + page_at + 4096]
    assert dead
    code = main(["dump", str(out), "--json"])
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert code == 1 and [r["physical_offset"] for r in lines] == kept
    code = main(["dump", str(out), "--json", "--dead"])
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert code == 1 and [r["physical_offset"] for r in lines if not r.get("dead")] == kept
    marked = [r["physical_offset"] for r in lines if r.get("dead")]
    assert marked[-len(dead):] == dead and all(p >= rep.commitlog_end for p in marked)
    code = main(["dump", str(out), "--dead"])
    text = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("DEAD ") for line in text) == len(marked)


def test_a_commitlog_file_missing_from_the_middle_is_a_gap_not_a_larger_file_size(tmp_path):
    """With file 65536 deleted, the names 0 and 131072 are 131072 apart, but every file
    is 65536 bytes long: the lengths tell the size (a gap is a missing file).  RocketMQ
    loads such a log (MappedFileQueue.load checks lengths; checkSelf only logs the gap)
    and its walk goes from the BLANK of file 0 to file 131072; tested against RocketMQ
    itself in tests/oracle/test_differential.py (damage to older files)."""
    from rmqlab.store.reader import infer_sizes

    root = copy_store("clean", tmp_path)
    (root / "commitlog" / f"{FILE:020d}").unlink()
    cfg_inferred, sources = infer_sizes(root)
    assert cfg_inferred.mapped_file_size_commit_log == FILE, sources
    rep = recover(root)
    assert rep.load_ok and not rep.load_problems
    assert any("a commitlog file is missing" in n for n in rep.notes)
    # normal recovery ends where the data ends, in the last file, past the gap
    last = max(m["physicalOffset"] + m["size"] for m in manifest("clean"))
    assert rep.commitlog_end == last


def test_a_checkpoint_that_cannot_be_read_is_a_clear_error_naming_it(tmp_path):
    """A directory where the checkpoint file should be: the plan refuses, naming the
    path, and changes nothing."""
    from rmqlab.errors import StoreFormatError

    root = copy_store("crash", tmp_path)
    (root / "checkpoint").unlink()
    (root / "checkpoint").mkdir()
    with pytest.raises(StoreFormatError, match="checkpoint"):
        recover(root)
    assert (root / "checkpoint").is_dir() and (root / "abort").exists()


def _queue_cut_short(root, queue: str = "TopicA/0", units: int = 3) -> None:
    """The last ``units`` units of ``queue`` of ``root`` zeroed: a queue that ends before
    the others (its records stay in the log)."""
    qdir = root / "consumequeue" / queue
    for f in sorted(qdir.iterdir(), reverse=True):
        data = bytearray(f.read_bytes())
        used = next((i for i in range(len(data) // 20, 0, -1) if any(data[(i - 1) * 20 : i * 20])), 0)
        if used >= units:
            data[(used - units) * 20 : used * 20] = bytes(units * 20)
            f.write_bytes(bytes(data))
            return
    raise AssertionError(f"{qdir}: no file with {units} units")


@pytest.mark.parametrize("case", ["clean", "v2ipv6", "clean, a queue cut short"])
def test_what_the_cut_costs_is_the_same_from_recoverys_own_walk(case, monkeypatch, tmp_path):
    """The records between a queue's end (or the index's) and the re-dispatch are taken
    from recovery's own scan where it walked their file from its start, and the walk of
    a file it did not walk starts at the record the first queue to end ends with: the
    report is the one walks of those files from their first byte give (a queue left
    short of records, too)."""
    from rmqlab.recovery import costs

    real_scan, began = costs.scan_file, []
    monkeypatch.setattr(costs, "scan_file", lambda view, **k: began.append(k.get("start", 0)) or real_scan(view, **k))

    def report():
        d = recover(root, config=config).to_dict()
        d.pop("timings")
        return d

    name = case.split(",")[0]
    root, config = REFERENCE / name / "store", cfg(name)
    if "," in case:
        root = copy_store(name, tmp_path)
        _queue_cut_short(root)
    reused = report()
    assert any(began), "no walk began at a queue's last record: the test checks nothing of it"
    walked = []
    monkeypatch.setattr(costs, "_walked", lambda plan: walked.append(plan) or {})
    monkeypatch.setattr(costs, "_walk_from", lambda view, base, lo, before: real_scan(view, check_crc=False).starts)
    again = report()
    assert walked, "the costs read no records: the test checks nothing"
    assert again == reused
    if "," in case:
        assert reused["queues_short"], "the queue cut short is not said"


def test_a_walk_begun_at_a_queues_last_record_is_the_walk_from_the_files_start():
    """From a record a queue's unit names, the walk gives the walk from the file's first
    byte from there on; a unit that does not name a record there (the next start is not
    where it says the record ends, or no record starts at its offset) gets the walk
    from the first byte."""
    import numpy as np

    from rmqlab.recovery.costs import _walk_from
    from rmqlab.scan.acceptance import scan_file

    buf = (REFERENCE / "clean" / "store" / "commitlog" / f"{131072:020d}").read_bytes()
    full = scan_file(buf, check_crc=False)
    s, z = full.starts.tolist(), full.sizes.tolist()
    assert len(s) > 20
    at = 10
    base = 131072
    got = _walk_from(buf, base, base + s[at] + z[at], (base + s[at], z[at]))
    assert got.tolist() == s[at:]
    for wrong in [(base + s[at], z[at] + 4), (base + s[at] + 4, z[at] - 4)]:  # ends elsewhere; starts inside a record
        assert np.array_equal(_walk_from(buf, base, wrong[0] + wrong[1], wrong), full.starts)


def test_a_queue_files_units_are_its_bytes_read_into_the_array(tmp_path):
    """A whole file, a sparse one (its holes zeros, unread) and one shorter than its
    size says (zeros past its end): the units are the file's bytes, as numpy reads them,
    in an array the plan may write."""
    import numpy as np

    from rmqlab.format.consumequeue import CQ_STORE_UNIT_SIZE
    from rmqlab.recovery.model import read_entries
    from rmqlab.store.consume_queue import CQ_DTYPE

    size = 64 * CQ_STORE_UNIT_SIZE
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    cases = {"whole": data, "short": data[: 10 * CQ_STORE_UNIT_SIZE + 7]}
    for name, b in cases.items():
        (tmp_path / name).write_bytes(b)
    with open(tmp_path / "sparse", "wb") as f:  # data, then a hole, then data
        f.write(data[:100])
        f.seek(size - 60)
        f.write(data[-60:])
    cases["sparse"] = data[:100] + bytes(size - 160) + data[-60:]
    for name, b in cases.items():
        got = read_entries(tmp_path / name, size)
        want = np.frombuffer(b.ljust(size, b"\0"), CQ_DTYPE)
        assert got.tobytes() == want.tobytes(), name
        got["size"][0] = 1  # writable
