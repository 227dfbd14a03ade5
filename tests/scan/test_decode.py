"""The bulk decoder (rmqlab.scan.decode) against rmqlab's record parser and
against what RocketMQ itself read from its reference stores; splits, windows,
lanes, damage, filters.  No Spark needed."""

from __future__ import annotations

import base64
import json
import struct
import zlib

import numpy as np
import pytest
from tests.spark.conftest import ALL_CASES, DAMAGED, REFERENCE, store_root

from rmqlab.format import commitlog as cl
from rmqlab.scan import decode as fd
from rmqlab.format import properties as props
from rmqlab.format.encode import encode_blank, encode_record
from rmqlab.format.record import RecordError, decode_record
from rmqlab.store import open_store

pytestmark = pytest.mark.usefixtures("decoder_path")


def files_of(case):
    s = open_store(store_root(case))
    return s, [(str(f.path), f.file_from_offset, bytes(f.buf)) for f in s.commitlog.queue.files]


def fast_rows(case, mode="strict", **kw):
    _, files = files_of(case)
    rows = []
    for path, base, buf in files:
        for b in fd.decode_file(buf, base, file=path, mode=mode, **kw):
            rows += b.to_pylist()
    return rows


def normalise(row):
    row = dict(row)
    if row.get("body") is not None:
        row["body"] = base64.b64encode(row["body"]).decode("ascii")
    if row.get("properties") is not None:
        row["properties"] = dict(row["properties"])
    return row


def reader_items(case):
    s = open_store(store_root(case))
    return list(s.commitlog.walk())


@pytest.mark.parametrize("case", ALL_CASES)
def test_rows_equal_rmqlab_reader_field_for_field(case):
    mode = "lenient" if case in DAMAGED else "strict"
    rows = [normalise(r) for r in fast_rows(case, mode)]
    items = reader_items(case)
    assert len(rows) == len(items)
    for item, row in zip(items, rows):
        if isinstance(item, RecordError):
            assert row["kind"] == item.kind
            assert row["error"] == str(item)
            continue
        expected = item.to_dict()
        for key, value in expected.items():
            assert row[key] == value, (case, item.physical_offset, key)
        assert row["kind"] == item.kind
        assert row["file"] == item.file
        assert row["error"] is None
        if item.is_blank:
            assert row["topic"] is None and row["body"] is None and row["crc_ok"] is None


@pytest.mark.parametrize("case", ALL_CASES)
def test_rows_agree_with_what_rocketmq_read(case):
    """dump.json commitLogWalk is RocketMQ's own parse of the same bytes."""
    dump = json.loads((REFERENCE / case / "dump.json").read_text())
    mode = "lenient" if case in DAMAGED else "strict"
    rows = {r["physical_offset"]: r for r in fast_rows(case, mode)}
    for w in dump["commitLogWalk"]:
        r = rows[w["physicalOffset"]]
        assert r["kind"] == w["kind"]
        if w["kind"] == "BLANK":
            assert r["total_size"] == w["blankTotalSizeField"]
            continue
        assert (r["total_size"], r["topic"], r["queue_id"], r["queue_offset"], r["sys_flag"], r["store_timestamp"]) == (
            w["size"],
            w["topic"],
            w["queueId"],
            w["queueOffset"],
            w["sysFlag"],
            w["storeTimestamp"],
        )
        assert r["prepared_transaction_offset"] == w["preparedTransactionOffset"]
        p = dict(r["properties"])
        assert props.to_java_map(p.items()).get("UNIQ_KEY") == w["uniqKey"]
        assert props.to_java_map(p.items()).get("KEYS") == w["keys"]
        assert r["crc_ok"] is True
    if case in DAMAGED:
        # the torn record is where RocketMQ's recovery cut the log
        cut = dump["recovery"]["commitLogMaxOffsetAfterRecovery"]
        bad = [r for r in rows.values() if r["kind"] not in ("MESSAGE", "BLANK")]
        assert [r["physical_offset"] for r in bad] == [cut]
        # and for RocketMQ's reason: its body CRC is checked before the lengths are
        # compared, and RocketMQ logged the CRC failure
        assert any("CRC check failed" in line for line in dump["recovery"]["logLines"])
        assert bad[0]["kind"] == "BODY_CRC" and "00000000000000327680" in bad[0]["error"]


def test_fixed_fields_match_the_construct_schema():
    """The numpy dtypes are derived from MessageRecord: parse each record with the
    construct schema and compare every fixed field."""
    for case in ("clean", "v2ipv6"):
        rows = {r["physical_offset"]: r for r in fast_rows(case)}
        _, files = files_of(case)
        for path, base, buf in files:
            for item in open_store(store_root(case)).commitlog.iter_records():
                if not (base <= item.physical_offset < base + len(buf)):
                    continue
                parsed = cl.MessageRecord.parse(buf[item.physical_offset - base :])
                r = rows[item.physical_offset]
                for name in ("total_size", "magic", "body_crc", "queue_id", "flag", "queue_offset", "sys_flag", "born_timestamp", "store_timestamp", "reconsume_times", "prepared_transaction_offset"):
                    assert r[name] == parsed[name], name
                assert r["body"] == parsed.body and r["topic"].encode() == parsed.topic
                assert parsed.physical_offset == item.physical_offset


def test_strict_mode_names_file_and_offset_like_the_reader():
    items = reader_items("crash-torn")
    err = items[-1]
    assert isinstance(err, RecordError)
    with pytest.raises(RecordError) as exc:
        fast_rows("crash-torn", "strict")
    assert exc.value.file == err.file and exc.value.offset == err.offset and exc.value.kind == err.kind


def _owned_rows(buf, base, path, split, mode):
    out = []
    for start in range(0, len(buf), split):
        for b in fd.scan_range(buf, file_base=base, file=path, start=start, stop=start + split, mode=mode):
            out += [(r["physical_offset"], r["kind"], r["msg_id"], r["total_size"]) for r in b.to_pylist()]
    return out


@pytest.mark.parametrize("case", ["clean", "v2ipv6", "crash-torn"])
@pytest.mark.parametrize("split", [97, 1000, 4096, 21845])
def test_any_split_size_gives_the_rows_of_a_whole_file_scan(case, split):
    mode = "lenient" if case in DAMAGED else "strict"
    _, files = files_of(case)
    for path, base, buf in files:
        whole = [(r["physical_offset"], r["kind"], r["msg_id"], r["total_size"]) for b in fd.decode_file(buf, base, file=path, mode=mode) for r in b.to_pylist()]
        assert _owned_rows(buf, base, path, split, mode) == whole


def test_tiny_splits_around_a_blank_and_the_torn_record():
    """Splits of a few bytes: every start position resynchronises on its own."""
    _, files = files_of("crash-torn")
    path, base, buf = files[5]  # holds the torn record (at 38973) and the zero tail
    whole = [(r["physical_offset"], r["kind"]) for b in fd.decode_file(buf, base, file=path, mode="lenient") for r in b.to_pylist()]
    first = fd._next_valid(fd_ctx(buf, base, path), 36000, 40000)
    expected = [w for w in whole if w[0] - base >= first]
    assert ("BODY_CRC" in {k for _, k in expected})
    for split in (1, 5):
        got = []
        for start in range(36000, 40000, split):
            for b in fd.scan_range(buf, file_base=base, file=path, start=start, stop=start + split, mode="lenient"):
                got += [(r["physical_offset"], r["kind"]) for r in b.to_pylist()]
        assert got == expected
    # a BLANK split: file 0 ends with a 22-byte BLANK at 65514
    path, base, buf = files[0]
    whole = [(r["physical_offset"], r["kind"]) for b in fd.decode_file(buf, base, file=path) for r in b.to_pylist()]
    got = []
    for start in range(64000, len(buf), 3):
        for b in fd.scan_range(buf, file_base=base, file=path, start=start, stop=start + 3):
            got += [(r["physical_offset"], r["kind"]) for r in b.to_pylist()]
    first = fd._next_valid(fd_ctx(buf, base, path), 64000, len(buf))
    assert got == [w for w in whole if w[0] - base >= first]
    assert got[-1] == (65514, "BLANK")


def fd_ctx(buf, base, path):
    a = np.frombuffer(buf, np.uint8)
    return fd._Ctx(a, memoryview(a), 0, base, len(buf), path, "lenient", True, True, None, None, None, 1 << 16, 64 << 20)


@pytest.mark.parametrize("case", ["clean", "crash-torn"])
def test_windows_and_need_more_bytes_resume_exactly(case):
    """What the Spark reader does on hdfs:// or s3://: read a split plus a little
    more, and on NeedMoreBytes read on from where the scan stopped."""
    mode = "lenient" if case in DAMAGED else "strict"
    _, files = files_of(case)
    split, overhang = 5000, 300
    for path, base, buf in files:
        for start in range(0, len(buf), split):
            expected = [r for b in fd.scan_range(buf, file_base=base, file=path, start=start, stop=start + split, mode=mode) for r in b.to_pylist()]
            got = []
            pos, resync, hi = start, None, min(len(buf), start + split + overhang)
            for _ in range(20):
                try:
                    for b in fd.scan_range(buf[pos:hi], buf_offset=pos, file_base=base, file_size=len(buf), file=path, start=pos, stop=start + split, resync=resync, mode=mode):
                        got += b.to_pylist()
                    break
                except fd.NeedMoreBytes as more:
                    pos, resync, hi = more.position, more.resync, len(buf)
            assert got == expected


# -- synthetic damage -------------------------------------------------------------------------
def _clean_file0():
    _, files = files_of("clean")
    return files[0]


def _record_starts(buf, base):
    return [r["physical_offset"] - base for b in fd.decode_file(buf, base) for r in b.to_pylist() if r["kind"] == "MESSAGE"]


@pytest.mark.parametrize(
    "damage,kind",
    [
        ("magic", "BAD_MAGIC"),
        ("size_small", "BAD_SIZE"),
        ("topic_len", "SIZE_MISMATCH"),
        ("body_byte", "BODY_CRC"),
    ],
)
def test_lenient_damage_row_then_resynchronise(damage, kind):
    path, base, buf = _clean_file0()
    starts = _record_starts(buf, base)
    victim = starts[40]
    b = bytearray(buf)
    rec = decode_record(buf, victim, file=path, file_base=base)
    if damage == "magic":
        b[victim + 4 : victim + 8] = b"\x12\x34\x56\x78"
    elif damage == "size_small":
        b[victim : victim + 4] = struct.pack(">i", 40)
    elif damage == "topic_len":
        body_end = victim + rec.total_size - len(rec.properties_raw) - 2 - len(rec.topic_raw) - 1
        b[body_end] = 120  # topicLength larger than the record
    elif damage == "body_byte":
        body_at = victim + 84 + 4
        b[body_at] ^= 0xFF
    data = bytes(b)
    original = {r["physical_offset"]: r for bt in fd.decode_file(buf, base, file=path) for r in bt.to_pylist()}
    rows = [r for bt in fd.decode_file(data, base, file=path, mode="lenient") for r in bt.to_pylist()]
    bad = [r for r in rows if r["kind"] not in ("MESSAGE", "BLANK")]
    assert [(r["physical_offset"], r["kind"]) for r in bad] == [(base + victim, kind)]
    assert bad[0]["error"] is None if kind == "BODY_CRC" else path in bad[0]["error"]
    # every other record comes back unchanged
    good = {r["physical_offset"]: r for r in rows if r["kind"] in ("MESSAGE", "BLANK")}
    assert set(good) | {base + victim} == set(original)
    for off, r in good.items():
        assert r == original[off]
    with pytest.raises(RecordError) as exc:
        list(fd.decode_file(data, base, file=path, mode="strict"))
    assert exc.value.kind == kind and exc.value.file == path
    assert victim <= exc.value.offset < victim + rec.total_size
    # and splits agree with the whole-file scan on the damaged bytes too
    whole = [(r["physical_offset"], r["kind"]) for r in rows]
    for split in (333, 4000):
        got = []
        for start in range(0, len(data), split):
            for bt in fd.scan_range(data, file_base=base, file=path, start=start, stop=start + split, mode="lenient"):
                got += [(r["physical_offset"], r["kind"]) for r in bt.to_pylist()]
        assert got == whole


def test_records_after_a_zeroed_hole_are_found_again():
    path, base, buf = _clean_file0()
    starts = _record_starts(buf, base)
    b = bytearray(buf)
    hole_from, hole_to = starts[10], starts[13]
    b[hole_from:hole_to] = bytes(hole_to - hole_from)
    rows = [r for bt in fd.decode_file(bytes(b), base, file=path, mode="lenient") for r in bt.to_pylist()]
    offs = [r["physical_offset"] - base for r in rows if r["kind"] == "MESSAGE"]
    assert offs == starts[:10] + starts[13:]


def _rss_file_kib() -> int:
    """This process's resident file-backed pages (/proc/self/status RssFile), KiB."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("RssFile:"))


@pytest.mark.parametrize("told", [True, False])
def test_the_holes_past_a_files_data_end_are_not_read(tmp_path, told):
    """The last file of a log as RocketMQ leaves it: records, then the pre-allocated
    rest never written (holes).  Told where the data ends, the scan finds the same
    records without faulting the holes' pages in; not told, it reads them all."""
    from rmqlab.files import MappedFile

    path, base, buf = _clean_file0()
    starts = _record_starts(buf, base)
    written = bytes(buf[: starts[20]])
    size = 32 << 20
    p = tmp_path / f"{base:020d}"
    with open(p, "wb") as fh:
        fh.write(written)
        fh.truncate(size)
    f = MappedFile(p, base)
    assert len(written) <= f.data_end < 1 << 20
    before = _rss_file_kib()
    rows = [r for bt in fd.scan_range(f.buf, file_base=base, file=str(p), mode="lenient", data_end=f.data_end if told else None)
            for r in bt.to_pylist()]
    grew = _rss_file_kib() - before
    assert [r["physical_offset"] - base for r in rows if r["kind"] == "MESSAGE"] == starts[:20]
    assert (grew < 4 << 10) if told else (grew > (size >> 10) // 2)
    f.close()


# -- property rules, CRC kinds, filters -----------------------------------------------------------
def _synthetic_file(records: list[bytes], size: int = 8192) -> bytes:
    out = b"".join(records)
    return out + encode_blank(size - len(out)) + bytes(size - len(out) - 8)


def _encode_at(pos, **kw):
    kw.setdefault("topic", b"T")
    kw.setdefault("body", b"hello")
    kw.setdefault("properties", b"K\x01v\x02")
    return encode_record(physical_offset=pos, **kw)


def test_property_edge_cases_follow_the_properties_codec():
    cases = [
        b"UNIQ_KEY\x01AAA\x02TAGS\x01x\x02UNIQ_KEY\x01BBB\x02",  # duplicate: later wins, first place
        b"TAGS\x01\x02\x02\x02KEYS\x01a  b\x02",  # empty value, empty segments
        b"noseparator\x02K\x01v\x01w\x02",  # a segment without \x01; value holding \x01
        b"K\x01v\x02trailing\x01value",  # last pair not ended by \x02
        b"bad\x01\xff\xfeutf8\x02",  # invalid UTF-8 becomes U+FFFD
        b"",
        b"TAGS\x01TagA\x02",
    ]
    records, pos = [], 0
    for p in cases:
        rec = _encode_at(pos, properties=p)
        records.append(rec)
        pos += len(rec)
    data = _synthetic_file(records)
    rows = [r for b in fd.decode_file(data, 0) for r in b.to_pylist() if r["kind"] == "MESSAGE"]
    assert len(rows) == len(cases)
    for p, row in zip(cases, rows):
        expected = props.to_ordered_dict(props.decode_pairs(p))
        assert dict(row["properties"]) == expected
        assert [k for k, _ in row["properties"]] == list(expected)


def test_crc_kinds_and_verify_crc_off():
    good = _encode_at(0, properties=b"A\x01b\x02", append_prop_crc=True)
    bad_body = bytearray(_encode_at(len(good), properties=b"A\x01b\x02"))
    bad_body[88] ^= 1  # first body byte
    p2 = len(good) + len(bad_body)
    bad_prop = bytearray(_encode_at(p2, properties=b"A\x01b\x02", append_prop_crc=True))
    bad_prop[-5] = ord("9") if bad_prop[-5] != ord("9") else ord("8")
    data = _synthetic_file([good, bytes(bad_body), bytes(bad_prop)])
    rows = [r for b in fd.decode_file(data, 0, mode="lenient") for r in b.to_pylist()]
    assert [(r["kind"], r["crc_ok"]) for r in rows] == [("MESSAGE", True), ("BODY_CRC", False), ("PROPERTY_CRC", False), ("BLANK", None)]
    for r, raw in zip(rows, (good, bad_body, bad_prop)):
        assert r["crc_ok"] == decode_record(bytes(raw), 0).crc_ok
    with pytest.raises(RecordError) as exc:
        list(fd.decode_file(data, 0, mode="strict"))
    assert exc.value.kind == "BODY_CRC" and exc.value.offset == len(good)
    rows = [r for b in fd.decode_file(data, 0, verify_crc=False) for r in b.to_pylist()]
    assert [r["kind"] for r in rows] == ["MESSAGE", "MESSAGE", "MESSAGE", "BLANK"]
    assert all(r["crc_ok"] is None for r in rows)


def test_long_and_short_bodies_are_checked_alike():
    recs, pos = [], 0
    for n in (0, 1, 95, 96, 97, 500, 3000):
        body = bytes((i * 7 + n) & 0xFF for i in range(n))
        r = _encode_at(pos, body=body)
        recs.append(r)
        pos += len(r)
    bad = bytearray(recs[5])
    bad[88 + 10] ^= 0x40
    recs[5] = bytes(bad)
    rows = [r for b in fd.decode_file(_synthetic_file(recs, 16384), 0, mode="lenient") for r in b.to_pylist()]
    assert [r["crc_ok"] for r in rows[:-1]] == [True] * 5 + [False, True]
    assert rows[5]["body"] == bytes(bad[88 : 88 + 500]) and zlib.crc32(rows[6]["body"]) & 0x7FFFFFFF == rows[6]["body_crc"]


def test_filters_topics_time_and_no_body():
    rows = fast_rows("clean")
    msgs = [r for r in rows if r["kind"] == "MESSAGE"]
    times = sorted(r["store_timestamp"] for r in msgs)
    lo, hi = times[len(times) // 4], times[3 * len(times) // 4]
    got = fast_rows("clean", topics=["TopicB", "SCHEDULE_TOPIC_XXXX"], start_time=lo, end_time=hi, include_body=False)
    want = [r for r in msgs if r["topic"] in ("TopicB", "SCHEDULE_TOPIC_XXXX") and lo <= r["store_timestamp"] < hi]
    assert [r["physical_offset"] for r in got] == [r["physical_offset"] for r in want] and got
    assert all(r["body"] is None for r in got)
    assert [{k: v for k, v in r.items() if k != "body"} for r in got] == [{k: v for k, v in r.items() if k != "body"} for r in want]


def test_arrow_schema_matches_to_dict_keys():
    s, _ = files_of("clean")
    rec = next(s.commitlog.iter_records())
    assert set(rec.to_dict()) | {"file", "kind", "error"} == set(fd.ARROW_SCHEMA.names)


def test_columns_builds_only_what_is_asked_and_the_same_values():
    full = fast_rows("v2ipv6")
    narrow = fast_rows("v2ipv6", columns=["topic", "total_size", "body", "msg_id"])
    assert len(narrow) == len(full)
    for f, n in zip(full, narrow):
        for name in ("topic", "total_size", "body", "msg_id", "kind", "physical_offset"):
            assert n[name] == f[name]
        if f["kind"] == "MESSAGE":
            assert n["properties"] is None and n["store_host"] is None and f["properties"] is not None
