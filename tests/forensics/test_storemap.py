"""The store map (rmqlab map): its per-pixel aggregates add up to what the log holds
(bytes per topic, records, BLANK bytes) at any width; queues, index files, consumer
groups and findings sit where the store says; memory is bounded by width × topics; the
SVG is well-formed and says what each mark is."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.dom.minidom
from collections import Counter

import pytest

from rmqlab.forensics import storemap as sm
from rmqlab.forensics.verify import verify_store
from rmqlab.render.storemap import storemap_svg
from rmqlab.store import open_store
from tests.support import REFERENCE, SAMPLES



def _truth(root):
    topics, blank, n = Counter(), 0, 0
    with open_store(root, strict=False) as s:
        for f in s.commitlog.queue.files:
            from rmqlab.scan.decode import decode_table

            t = decode_table(f.buf, f.file_from_offset, mode="lenient", verify_crc=False, include_body=False).to_pylist()
            for r in t:
                if r["kind"] == "MESSAGE":
                    topics[r["topic"]] += r["total_size"]
                    n += 1
                elif r["kind"] == "BLANK":
                    blank += r["total_size"]
    return topics, blank, n


@pytest.mark.parametrize("case", ["clean", "crash-torn", "crash-cqdeleted"])
@pytest.mark.parametrize("width", [300, 5000])
def test_pixels_add_up_to_the_log(case, width):
    root = REFERENCE / case / "store"
    m = sm.build_map(root, width=width)
    topics, blank, n = _truth(root)
    assert {t: int(m.topic_bytes[i].sum()) for i, t in enumerate(m.topics)} == dict(topics)
    assert int(m.blank_bytes.sum()) == blank and int(m.records.sum()) == n
    assert m.topic_bytes.shape == (len(m.topics), width) and m.records.shape == (width,)


def test_topics_beyond_the_counted_ones_go_to_other(monkeypatch):
    monkeypatch.setattr(sm, "TOPICS_COUNTED", 2)
    monkeypatch.setattr(sm, "TOPICS_SHOWN", 1)
    root = REFERENCE / "clean" / "store"
    m = sm.build_map(root, width=200)
    topics, _, _ = _truth(root)
    assert len(m.topics) == 2 and m.topics[-1] == sm.OTHER
    assert int(m.topic_bytes.sum()) == sum(topics.values())


def test_queues_index_groups_and_findings_are_where_the_store_says():
    root = SAMPLES / "damaged"
    rep = verify_store(root)
    m = sm.build_map(root, width=800, findings=rep.findings)
    with open_store(root, strict=False) as s:
        for q in m.queues:
            topic, qid = q["name"].rsplit("/", 1)
            cq = s.consume_queue(topic, int(qid))
            lo, hi = cq.valid_range(s.commitlog.min_offset)
            assert (q["units"], q["lo"]) == (hi - lo, cq.get(lo).commitlog_offset)
        assert [(f["name"], f["lo"], f["hi"]) for f in m.index_files] == [(f.name, f.header.begin_phy_offset, f.header.end_phy_offset) for f in s.index.files]
    assert m.groups and all(g["phy"] is None or m.lo <= g["phy"] < m.hi for g in m.groups)
    on_log = [f for f in m.findings if f["phy"] is not None]
    assert on_log and all(f["phy"] == int(sm.Path(f["file"]).name) + f["offset"] and m.lo <= f["phy"] < m.hi for f in on_log)
    assert len(m.findings) + m.findings_left_out == len(rep.findings)
    svg = storemap_svg(m)
    xml.dom.minidom.parseString(svg)  # well-formed
    assert svg.count("<circle") == sum(g["phy"] is not None for g in m.groups)
    assert all(f["kind"] in svg for f in on_log)


def test_the_command(tmp_path):
    root = REFERENCE / "crash-torn" / "store"
    done = subprocess.run([sys.executable, "-m", "rmqlab", "map", str(root), "-o", str(tmp_path / "m.svg")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    svg = (tmp_path / "m.svg").read_text()
    xml.dom.minidom.parseString(svg)
    assert "BODY_CRC" in svg and "recovery" in svg
    data = json.loads(subprocess.run([sys.executable, "-m", "rmqlab", "map", str(root), "--json", "--width", "400"], capture_output=True, text=True, timeout=120).stdout)
    assert data["width"] == 400 and data["recovery"]["end"] == 366653 and data["served_end"] == 366653
    assert any(f["kind"] == "BODY_CRC" and f["phy"] == 366653 for f in data["findings"])
    bad = subprocess.run([sys.executable, "-m", "rmqlab", "map", str(root), "-o", str(tmp_path / "m.gif")], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "m.gif: write .svg or .png" in bad.stderr


def test_the_png_is_the_same_picture(tmp_path):
    import matplotlib.image as mpimg
    import numpy as np

    from rmqlab.render import storemap as render

    root = SAMPLES / "damaged"
    done = subprocess.run([sys.executable, "-m", "rmqlab", "map", str(root), "-o", str(tmp_path / "m.png"), "--width", "400"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    m = render.map_of_store(root, width=400)
    png = (mpimg.imread(tmp_path / "m.png")[..., :3] * 255).round().astype(int)
    assert png.shape[:2] == render.size_of(m)[::-1]  # one image pixel per picture pixel
    x0, y0, w, h = render.strip_box(m)
    strip = png[y0 + 1 : y0 + h - 1, x0 : x0 + w]

    def columns_with(colour):
        rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])
        return set(np.nonzero((np.abs(strip - rgb).sum(axis=2) < 30).any(axis=0))[0].tolist())

    per_px = (m.hi - m.lo) / m.width
    written = max(f["data_end"] for f in m.files)
    covered = {m.pixel(f["base"]) for f in m.files} | set(range(m.pixel(m.served_end), m.pixel(written) + 1))  # file ticks, dead bytes' shade
    for i, colour in enumerate(render.PALETTE[:2]):  # the two largest topics: where their bytes fill a pixel's column
        want = {x for x in range(m.width) if m.topic_bytes[i][x] * h / per_px >= 2} - covered
        got = columns_with(colour)
        assert len(want) > 100 and len(want & got) >= 0.98 * len(want) and len(got - want) <= 0.02 * len(got)
    # the findings' triangles above the strip, in their severity's colour
    above = png[y0 - 18 : y0 - 10, x0 - 4 : x0 + w + 4]
    assert (np.abs(above - np.array([0xC6, 0x28, 0x28])).sum(axis=2) < 30).any()


def test_a_notebook_shows_the_picture():
    import rmqlab.render  # noqa: F401  (registers the views)

    m = sm.build_map(SAMPLES / "clean", width=200)
    html = m._repr_html_()
    assert "<svg" in html and xml.dom.minidom.parseString(html[html.index("<svg"): html.rindex("</svg>") + 6])


def test_what_recovery_does_to_index_files_and_queues_is_on_the_map():
    from rmqlab.recovery import recover

    for case in ("crash-torn", "crash-cqdeleted"):
        root = REFERENCE / case / "store"
        rep = recover(root)
        m = sm.build_map(root, width=300, recovery=rep)
        svg = storemap_svg(m)
        dropped = [sm.Path(i.file).name for i in rep.index if i.action == "dropped"]
        changed = {q.queue: q for q in rep.queues if q.cut_entries or q.added_entries or q.created}
        assert dropped and changed and m.recovery["dropped_index"] == dropped
        assert svg.count("recovery drops it") == 2 * len([f for f in m.index_files if f["name"] in dropped])  # its name and its range
        for name, q in changed.items():
            if q.cut_entries:
                assert f"{name}: " in svg and f"recovery cuts {q.cut_entries} unit(s)" in svg
            if q.created or q.added_entries:
                assert f"{name} *" in svg and f"<title>{name}; recovery" in svg  # a queue recovery rebuilds: its name marked and said
    assert "recovery" not in storemap_svg(sm.build_map(root, width=300)).split("</title>", 1)[1]  # no plan, nothing said


def test_a_store_of_many_queues_draws_a_bounded_picture(monkeypatch):
    from rmqlab.recovery import recover
    from rmqlab.render import storemap as render

    root = REFERENCE / "crash-cqdeleted" / "store"
    rep = recover(root)
    m = sm.build_map(root, width=300, recovery=rep)
    height_of_all = render.size_of(m)[1]
    monkeypatch.setattr(render, "MAX_TRACKS", 8)
    queues, index_files, left_out = render._tracks(m)
    assert len(queues) + len(index_files) == 8 and left_out == len(m.queues) + len(m.index_files) - 8
    # what recovery changes is drawn first; the order of what is drawn is the store's
    changed = [q["name"] for q in m.queues if q["name"] in m.recovery["queues"]]
    assert changed and set(changed) <= {q["name"] for q in queues}
    assert [q["name"] for q in queues] == [q["name"] for q in m.queues if q in queues]
    svg = storemap_svg(m)
    assert f"+{left_out} more" in svg and svg.count("unit(s), the log from") <= len(queues)
    # the height follows the tracks drawn (and the "+N more" line), not the store's queues
    assert render.size_of(m)[1] == height_of_all - (left_out - 1) * render.TRACK_H
