"""The fast scan agrees with the record decoder and with itself when split across processes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support import REFERENCE, copy_store
from rmqlab.files import MappedFileQueue
from rmqlab.format.record import RecordError, decode_record
from rmqlab.scan import acceptance as scan
from rmqlab.store import open_store


def _decoder_walk(buf):
    """Starts of the records decode_record accepts with a good body CRC, from 0."""
    out, pos = [], 0
    while True:
        try:
            rec = decode_record(buf, pos, check_crc=True, read_body=False)
        except RecordError:
            return out
        if rec is None or rec.is_blank or not rec.body_crc_ok:
            return out
        out.append(pos)
        pos += rec.total_size


@pytest.mark.parametrize("case", ["clean", "crash", "v2ipv6", "crash-torn"])
def test_scan_equals_the_decoder_on_every_reference_file(case):
    q = MappedFileQueue(REFERENCE / case / "store" / "commitlog")
    for f in q.files:
        got = scan.scan_file(f.buf)
        assert got.starts.tolist() == _decoder_walk(f.buf), f.path
        assert (got.sizes == np.diff(np.append(got.starts, got.starts[-1] + got.sizes[-1]))).all() if len(got.starts) else True
    q.close()


def _hints(store, base, n):
    with open_store(store) as st:
        offs = [e.commitlog_offset for qid in st.queue_ids() for e in st.consume_queue(qid.topic, qid.queue_id).entries()]
    h = np.sort(np.asarray(offs, dtype=np.int64)) - base
    return h[(h >= 0) & (h < n)]


@pytest.mark.parametrize("damage", [None, "first-half", "second-half", "bogus-hint"])
def test_split_scan_equals_sequential(tmp_path, monkeypatch, damage):
    src = copy_store("crash", tmp_path)
    path = src / "commitlog" / f"{65536:020d}"
    data = bytearray(path.read_bytes())
    seq = scan.scan_file(bytes(data))
    starts = seq.starts.tolist()
    hints = _hints(src, 65536, len(data))
    if damage == "first-half":
        data[starts[len(starts) // 4] + 100] ^= 0x55
    elif damage == "second-half":
        data[starts[3 * len(starts) // 4] + 100] ^= 0x55
    elif damage == "bogus-hint":
        hints = hints.copy()
        hints[len(hints) // 2] += 7  # the split point is not a record boundary
    buf = bytes(data)
    monkeypatch.setattr(scan, "PARALLEL_MIN_RECORDS", 10**9)
    want = scan.scan_file(buf, hints=hints)
    monkeypatch.setattr(scan, "PARALLEL_MIN_RECORDS", 8)
    got = scan.scan_file(buf, hints=hints)
    assert got.starts.tolist() == want.starts.tolist()
    assert got.sizes.tolist() == want.sizes.tolist()
    assert (got.end, got.blank) == (want.end, want.blank)
    assert (got.stop.kind if got.stop else None) == (want.stop.kind if want.stop else None)
    if damage in ("first-half", "second-half"):
        assert got.stop is not None and got.stop.kind == "BODY_CRC"
