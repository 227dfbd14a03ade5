"""``rmqlab.spark.verify`` against ``rmqlab verify --json``: the same findings (kind,
severity, file, offset, and how many) on every damaged reference store and on stores
damaged here for each kind of finding, those that only the parts put together show
included (the log ends in an early file, queue offsets that jump between files, more
findings of a kind in a file than are listed, from several tasks)."""

from __future__ import annotations

import json
import shutil
import struct
from collections import Counter

import pytest

from rmqlab.cli import main
from rmqlab.format.indexfile import entry_position, slot_position
from tests.forensics.test_verify import FILE, _cq, _index, clpath, manifest, patch, read, rec_in_file
from tests.spark.conftest import store_root
from tests.support import REFERENCE, copy_store

pytestmark = pytest.mark.spark


def _cli(root, capsys, *flags) -> Counter:
    main(["verify", "--json", str(root), *flags])
    return Counter(_key(f["kind"], f["severity"], f["file"], f["offset"], f["message"]) for f in json.loads(capsys.readouterr().out)["findings"])


def _key(kind, severity, file, offset, message) -> tuple:
    """A finding as compared: where it is and what it says ("and N more": how many)."""
    return (kind, severity, file, offset, message)


def _spark(spark, root) -> Counter:
    import rmqlab.spark

    df = rmqlab.spark.verify(spark, root)
    assert df.columns == ["kind", "severity", "file", "offset", "message"]
    return Counter(_key(*r) for r in df.collect())


@pytest.mark.parametrize("case", ["crash-torn", "crash-cqdeleted", "crash"])
def test_damaged_reference_stores(spark, capsys, case):
    root = store_root(case).resolve()
    want = _cli(root, capsys)
    assert want  # each of these has findings
    assert _spark(spark, root) == want


# -- stores damaged here: together they make every kind the joins and the walk report --
def _walk_damage(src):
    """A bad magic in file 2 (the log ends there), a body CRC and a queue offset gap
    past it, a BAD_BLANK, non-zero bytes after the end, an empty last file, a stray."""
    r = rec_in_file("clean", 2)
    path, pos = clpath(src, r["physicalOffset"])
    patch(path, pos + 4, b"\x00\x11\x22\x33")
    r = next(m for m in manifest("clean") if m["physicalOffset"] // FILE == 3 and m["bodyLength"] > 0)
    path, pos = clpath(src, r["physicalOffset"])
    patch(path, pos + 88, bytes([read(path, pos + 88, 1)[0] ^ 0x40]))
    r = next(m for m in manifest("clean") if m["physicalOffset"] // FILE == 4 and m["sysFlagStored"] == 0)
    path, pos = clpath(src, r["physicalOffset"])
    patch(path, pos + 20, struct.pack(">q", r["queueOffset"] + 5))
    blank = next(w for w in json.loads((REFERENCE / "clean" / "dump.json").read_text())["commitLogWalk"] if w["kind"] == "BLANK")
    path, pos = clpath(src, blank["physicalOffset"])
    patch(path, pos, struct.pack(">i", blank["bytesToFileEnd"] - 1))
    patch(src / "commitlog" / f"{5 * FILE:020d}", 363733 - 5 * FILE + 100, b"leftover")
    (src / "commitlog" / f"{6 * FILE:020d}").write_bytes(b"")
    (src / "commitlog" / "notes.txt").write_text("x")


def _queue_damage(src):
    a = _cq(src, "TopicA/1") / "00000000000000000000"
    (off,) = struct.unpack(">q", read(a, 3 * 20, 8))
    patch(a, 3 * 20, struct.pack(">q", off + 1))
    patch(_cq(src, "TopicB/1") / "00000000000000000400", 2 * 20 + 12, struct.pack(">q", 12345))
    patch(_cq(src, "TopicC/2") / "00000000000000000400", 5 * 20, bytes(20))
    shutil.rmtree(_cq(src, "TopicA/0"))


def _index_damage(src):
    p = _index(src)
    patch(p, slot_position(3), struct.pack(">i", 300))
    patch(p, entry_position(64, 5) + 16, struct.pack(">i", 7))
    patch(p, entry_position(64, 200) + 16, struct.pack(">i", 200))
    patch(p, entry_position(64, 9) + 12, struct.pack(">i", -5))
    patch(p, entry_position(64, 10) + 4, struct.pack(">q", 1))
    patch(p, slot_position(0), struct.pack(">i", 0))
    q = sorted((src / "index").iterdir())[1]
    for e in range(20, 150):  # more than verify lists per kind and file
        (h,) = struct.unpack(">i", read(q, entry_position(64, e), 4))
        patch(q, entry_position(64, e), struct.pack(">i", h + 64))
    patch(q, 36, struct.pack(">i", 9999))


def _dead_bytes(src):
    """A record header of garbage right after the end of a cleanly shut down log."""
    patch(src / "commitlog" / f"{5 * FILE:020d}", 363733 - 5 * FILE, struct.pack(">ii", 200, 0x12345678) + b"\x07" * 40)


def _crash_index(src):
    """The newest index file gone after a crash (INDEX_MISSING) and a queue cut short
    (CQ_BEHIND, which recovery's plan turns into an error or not)."""
    sorted((src / "index").iterdir())[-1].unlink()
    q = _cq(src, "TopicB/0") / "00000000000000000000"
    data = bytearray(q.read_bytes())
    data[20 * 10 :] = bytes(len(data) - 20 * 10)
    q.write_bytes(bytes(data))


def _gap_across_files(src):
    """Queue offsets that jump where one commitlog file's records of a queue meet the
    next file's (each file is checked by its own task: the jump is seen by neither)."""
    by_queue = {}
    for m in manifest("clean"):
        if m["sysFlagStored"] & 0xC == 0:
            by_queue.setdefault((m["topic"], m["queueId"]), []).append(m)
    hit = 0
    for recs in by_queue.values():
        for before, r in zip(recs, recs[1:]):
            if r["physicalOffset"] // FILE == before["physicalOffset"] // FILE + 1:
                path, pos = clpath(src, r["physicalOffset"])
                patch(path, pos + 20, struct.pack(">q", r["queueOffset"] + 5))
                hit += 1
                break
        if hit == 3:
            break
    assert hit == 3


def _queue_emptied(src):
    """A queue whose first unit is zeroed: its files are there but its valid range is
    empty, so it ends at queue offset 0 and the log holds all its records (CQ_BEHIND
    names the first of them)."""
    patch(_cq(src, "TopicB/0") / "00000000000000000000", 0, bytes(20))


def _property_crc(src):
    from rmqlab.store import open_store

    with open_store(src) as st:
        rec = next(x for x in st.commitlog.iter_records() if len(x.properties_raw) > 40)
    from pathlib import Path

    patch(Path(rec.file), rec.file_offset + rec.total_size - len(rec.properties_raw), b"Z")


@pytest.mark.parametrize(
    "case,damage",
    [
        ("clean", _walk_damage),
        ("clean", _queue_damage),
        ("clean", _index_damage),
        ("clean", _dead_bytes),
        ("crash", _crash_index),
        ("v2ipv6", _property_crc),
        ("clean", _gap_across_files),
        ("clean", _queue_emptied),
    ],
    ids=lambda x: getattr(x, "__name__", x),
)
def test_damaged_stores(spark, capsys, tmp_path, case, damage):
    src = copy_store(case, tmp_path)
    damage(src)
    want = _cli(src, capsys)
    assert want
    assert _spark(spark, src) == want


def test_findings_kinds_covered(capsys, tmp_path):
    """The damage above makes the kinds each part of the job reports (so a join that
    found nothing would fail here, not pass silently)."""
    kinds = set()
    for i, damage in enumerate((_walk_damage, _queue_damage, _index_damage, _dead_bytes)):
        src = copy_store("clean", tmp_path / str(i))
        damage(src)
        kinds |= {k for k, *_ in _cli(src, capsys)}
    assert kinds >= {"BAD_MAGIC", "RESYNC", "BODY_CRC", "QUEUE_OFFSET_GAP", "BAD_BLANK", "TAIL_BYTES", "EMPTY_FILE", "STRAY_FILE",
                     "CQ_DANGLING", "CQ_MISMATCH", "CQ_STALE_ENTRIES", "CQ_BEHIND", "CQ_MISSING_QUEUE", "INDEX_SLOT", "INDEX_CHAIN",
                     "INDEX_CYCLE", "INDEX_ENTRY", "INDEX_DANGLING", "INDEX_ORPHAN", "INDEX_HASH", "INDEX_HEADER", "DEAD_BYTES"}


def test_findings_write_as_parquet(spark, tmp_path):
    import rmqlab.spark

    df = rmqlab.spark.verify(spark, store_root("crash-torn"))
    df.write.parquet(str(tmp_path / "findings"))
    back = spark.read.parquet(str(tmp_path / "findings"))
    assert sorted(map(tuple, back.collect()), key=str) == sorted(map(tuple, df.collect()), key=str)


def test_uri_is_refused_with_the_reason(spark):
    import rmqlab.spark
    from rmqlab.spark._paths import OptionError

    with pytest.raises(OptionError, match="memory-map"):
        rmqlab.spark.verify(spark, "s3://bucket/store")


@pytest.mark.parametrize("case", ["clean", "killed"])
def test_stores_rocketmq_rust_wrote_are_judged_by_its_index_form(spark, capsys, case):
    """rocketmq-rust indexes a UNIQ_KEY as ``topic#U#uniq``: Spark's verify tells the
    writer from the store's bytes as ``rmqlab verify`` does and finds what it finds (no
    INDEX_HASH), where the same entries judged by Java's form match no key."""
    from tests.store.test_rocketmq_rust import RUST

    root = RUST / case / "store"
    want = _cli(root, capsys)
    assert not any(k[0] == "INDEX_HASH" for k in want)
    assert any(k[0] == "INDEX_UNIQ_FORM" for k in _cli(root, capsys, "--writer", "apache:5.5.1"))
    assert _spark(spark, root) == want
