"""The annotated hex view: field positions come from the construct schemas, and far
into a big file the view starts from a resynchronised boundary, not from byte 0."""

from __future__ import annotations

import pytest

from rmqlab.errors import StoreFormatError
from rmqlab.forensics import hexview
from rmqlab.forensics.hexview import HexView, first_boundary
from rmqlab.format.commitlog import MessageRecord
from rmqlab.generate import generate_store
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
