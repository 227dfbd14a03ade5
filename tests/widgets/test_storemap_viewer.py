"""StoreMapViewer driven headlessly: the record it names for each pixel is the one the
bulk decoder finds there, a pick opens the hex viewer on that record's bytes, a zoom
draws one file's bytes alone, and the front end's messages do what its keys and
clicks say."""

from __future__ import annotations

import xml.dom.minidom
from collections import Counter

import pytest

from rmqlab.scan.decode import decode_table
from rmqlab.store import open_store
from rmqlab.widgets import StoreMapViewer
from tests.support import REFERENCE, SAMPLES



def _rows(root):
    """Every row of the log (messages, BLANKs, damage) with its file."""
    out = []
    with open_store(root, strict=False) as s:
        for f in s.commitlog.queue.files:
            for r in decode_table(f.buf, f.file_from_offset, mode="lenient", verify_crc=False, include_body=False).to_pylist():
                out.append((r["physical_offset"], r["total_size"] or 0, r["kind"], r["topic"], f.file_from_offset, f.file_size))
    return out


def _expected(m, rows, px):
    """The record a pixel names: the first starting in it, else the last before it in
    the same file."""
    a, b = m.span(px)
    inside = [r for r in rows if a <= r[0] < b]
    if inside:
        return inside[0]
    before = [r for r in rows if r[0] < a and r[4] <= a < r[4] + r[5]]
    return before[-1] if before else None


@pytest.mark.parametrize("root", [REFERENCE / "clean" / "store", SAMPLES / "damaged"], ids=["clean", "damaged"])
def test_every_pixel_names_the_record_the_decoder_finds_there(root):
    w = StoreMapViewer(root, width=400, verify=False)
    rows = _rows(root)
    named = Counter()
    for px in range(w.map.width):
        want = _expected(w.map, rows, px)
        assert w.map.record_at(px) == (want[0] if want else None), px
        w.position.value = px  # the slider (and the pointer, linked to it) describes the pixel
        text = w.described
        assert text.startswith(f"pixel {px}: the log's bytes {w.map.span(px)[0]:,}")
        if want is not None and want[2] == "MESSAGE" and want[0] + want[1] > w.map.span(px)[0]:
            assert f"record at {want[0]:,}" in text and f"<b>{want[3]}</b>/" in text
            named["message"] += 1
        elif want is not None and want[2] == "BLANK":
            assert "BLANK end of file" in text
            named["blank"] += 1
        elif want is not None and want[2] not in ("MESSAGE", "BLANK"):
            assert "color:#c62828" in text  # the damage, with its file and offset
            named["damage"] += 1
    assert named["message"] > 100 and named["blank"] > 0
    if root.name == "damaged":
        assert named["damage"] > 0


def test_a_pick_opens_the_hex_viewer_on_the_records_bytes():
    root = REFERENCE / "clean" / "store"
    w = StoreMapViewer(root, width=300, verify=False)
    rows = [r for r in _rows(root) if r[2] == "MESSAGE"]
    for phy, size, _kind, _topic, base, _ in (rows[0], rows[len(rows) // 2], rows[-1]):
        px = w.map.pixel(phy)
        want = _expected(w.map, _rows(root), px)
        h = w.pick(px)
        assert h is w.hex and w.children[-1] is h  # one viewer, reused
        assert h.file.value == f"commitlog/{base:020d}"
        at = want[0] - base
        assert h.offset.value <= at and at + min(want[1], 4096 - 16) <= h.offset.value + h.length.value
        assert h.error is None and f"{at:08x}"[:6] in h.output.value.lower() or str(at) in h.output.value
    # the front end's click and Enter arrive as messages
    w._on_msg(w.canvas, {"event": "pick", "pixel": 7})
    assert w.position.value == 7 and w.hex.offset.value <= w.map.record_at(7) - int(w.hex.file.value.rsplit("/", 1)[1])


def test_zoom_draws_one_file_alone():
    root = SAMPLES / "damaged"
    w = StoreMapViewer(root, width=500, verify=False)
    rows = _rows(root)
    files = [f["name"] for f in w.map.files]
    assert len(files) > 2
    px = w.map.pixel(int(files[1]) + 1000)
    w._on_msg(w.canvas, {"event": "zoom", "pixel": px})  # a double click on the second file
    assert w.zoom.value == files[1]
    base = int(files[1])
    size = next(r[5] for r in rows if r[4] == base)
    assert (w.map.lo, w.map.hi, [f["name"] for f in w.map.files]) == (base, base + size, [files[1]])
    in_file = Counter()
    for phy, total, kind, topic, b, _ in rows:
        if b == base and kind == "MESSAGE":
            in_file[topic] += total
    assert {t: int(w.map.topic_bytes[i].sum()) for i, t in enumerate(w.map.topics)} == dict(in_file)
    xml.dom.minidom.parseString(w.canvas.svg)  # queues, index files and ends beyond the file are held to its edges
    assert w.canvas.strip[2] == 500
    w._on_msg(w.canvas, {"event": "zoom", "pixel": -1})  # "-" on the map: out again
    assert w.zoom.value == "" and w.map.lo == 0 and len(w.map.files) == len(files)


def test_a_store_without_a_log_or_a_missing_one_says_so(tmp_path):
    (tmp_path / "commitlog").mkdir()
    w = StoreMapViewer(tmp_path, width=200, verify=False)
    assert "no commitlog files" in w.output.value and w.pick(3) is None
    with pytest.raises(Exception) as err:
        StoreMapViewer(tmp_path / "nowhere", width=200)
    assert "nowhere" in str(err.value)
