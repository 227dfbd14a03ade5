"""The annotated hex view: field positions come from the construct schemas, and far
into a big file the view starts from a resynchronised boundary, not from byte 0."""

from __future__ import annotations

import pytest

from rmqlab.errors import StoreFormatError
from rmqlab.forensics import hexview
from rmqlab.forensics.hexview import HexView, first_boundary
from rmqlab.format.commitlog import MessageRecord
from rmqlab.lab.generate import generate_store
from rmqlab.store import open_store
from tests.support import REFERENCE


def test_spans_follow_the_schema_on_rocketmq_bytes():
    f = REFERENCE / "v2ipv6" / "store" / "commitlog" / f"{0:020d}"
    view = HexView(f, 0, 400)
    first = [s for s in view.spans if s.group == "record @0"]
    assert [s.name for s in first] == [sc.name for sc in MessageRecord.subcons]
    # spans tile the record: each field starts where the previous one ended
    assert first[0].start == 0 and all(a.end == b.start for a, b in zip(first, first[1:]))
    assert first[-1].end == 167  # RocketMQ's first record in v2ipv6 is 167 bytes
    host = next(s for s in first if s.name == "store_host")
    assert host.end - host.start == 20 and host.value == "0:0:0:0:0:0:0:1:10911"
    html = view._repr_html_()
    assert "storeHostAddress" in html and "record @167" in html


def test_other_file_kinds():
    root = REFERENCE / "clean" / "store"
    cp = HexView(root / "checkpoint", 0, 40)
    assert [s.name for s in cp.spans][:3] == ["physic_msg_timestamp", "logics_msg_timestamp", "index_msg_timestamp"]
    idx = HexView(sorted((root / "index").iterdir())[0], 0, 48)
    assert idx.kind == "index" and idx.spans[0].name == "begin_timestamp" and idx.spans[6].name.startswith("slot[")
    with pytest.raises(StoreFormatError, match="outside"):
        HexView(root / "checkpoint", 5000, 10)


def test_far_offset_starts_from_a_resynchronised_boundary(tmp_path, monkeypatch):
    root = tmp_path / "big"
    generate_store(root, "6MiB", body_size="100-3000", mapped_file_size="8MiB", seed=7, index=False, consume_queues=False)
    f = root / "commitlog" / f"{0:020d}"
    start = 5 * 1024 * 1024 + 123
    boundary = first_boundary(open_store(root).commitlog.queue.files[0].buf, 0, start)
    assert 0 < boundary <= start - hexview.RESYNC_WINDOW + 4096
    # the boundary is a real record start of the file's own chain
    starts = {r.physical_offset for r in open_store(root).commitlog.iter_records()}
    assert boundary in starts
    fast = HexView(f, start, 512)
    monkeypatch.setattr(hexview, "first_boundary", lambda buf, base, s: 0)
    slow = HexView(f, start, 512)
    assert fast.spans == slow.spans and fast.to_text() == slow.to_text()


@pytest.mark.parametrize(
    "kind, src, keep, field",
    [
        # a checkpoint cut inside its second field; a consume queue inside its third
        # entry's offset; an index file inside its header, inside a slot, inside an entry
        ("checkpoint", "checkpoint", 10, "logics_msg_timestamp"),
        ("consumequeue", "consumequeue/TopicA/0/" + f"{0:020d}", 45, "commitlog_offset"),
        ("index", "index", 30, "end_phy_offset"),
        ("index", "index", 40 + 4 * 10 + 2, "slot[10]"),
        ("index", "index", 40 + 64 * 4 + 20 * 3 + 7, "phy_offset"),
    ],
)
def test_a_file_cut_short_is_shown_up_to_its_last_byte(tmp_path, kind, src, keep, field):
    """RocketMQ's files cut short (as a capture of a dying broker can be): the view
    annotates every whole field, then says which field the file ends inside."""
    root = REFERENCE / "clean" / "store"
    path = root / src
    if path.is_dir():
        path = sorted(path.iterdir())[0]
    cut = tmp_path / "cut"
    cut.write_bytes(path.read_bytes()[:keep])
    view = HexView(cut, 0, 4096, kind=kind, max_hash_slot_num=64)
    last = view.spans[-1]
    assert (last.name, last.end) == (field, keep) and "cut short" in last.value and "ends" in last.value
    assert all(a.end <= b.start for a, b in zip(view.spans, view.spans[1:]))  # no overlaps
    text = view.to_text()
    assert "cut short" in text


def test_an_empty_file_says_so(tmp_path):
    empty = tmp_path / "checkpoint"
    empty.write_bytes(b"")
    for kind in ("checkpoint", "commitlog", "consumequeue", "raw"):
        assert "the file is 0 bytes long" in HexView(empty, 0, 64, kind=kind).to_text()
