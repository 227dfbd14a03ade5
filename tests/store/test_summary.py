"""rmqlab info's counts, decoded in bulk, equal a record-by-record walk of the log
(RocketMQ's reading: up to the first damage or the zero tail, BLANKs move on to the
next file, bad CRCs counted) — on RocketMQ's stores, the samples and damaged copies."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from rmqlab.format import commitlog as cl
from rmqlab.format.record import RecordError
from rmqlab.store.reader import open_store
from rmqlab.store.summary import summarize

from tests.engine.engine_support import reference_config
from tests.support import ALL_CASES, REFERENCE, SAMPLES, copy_store



def _walked(store):
    """The oracle: the per-record walk."""
    out = {"records": 0, "blanks": 0, "crc": 0, "stopped": None, "end": store.commitlog.min_offset}
    per_queue, feats = Counter(), Counter()
    for item in store.commitlog.walk(check_crc=True):
        if isinstance(item, RecordError):
            out["stopped"] = str(item)
            break
        if item.is_blank:
            out["blanks"] += 1
            continue
        out["records"] += 1
        out["end"] = item.end_offset
        per_queue[f"{item.topic}/{item.queue_id}"] += 1
        out["crc"] += not item.crc_ok
        feats["v2"] += item.is_v2
        feats["crcprop"] += item.property_crc is not None
        feats["tx"] += bool(item.transaction_type)
        feats["born6"] += bool(item.sys_flag & cl.FLAG_BORNHOST_V6)
    out["per_queue"] = dict(sorted(per_queue.items()))
    out["feats"] = {k: v for k, v in feats.items() if v}
    return out


def _summarised(store):
    s = summarize(store)
    f = s.features
    feats = {
        "v2": f.get("V2 records (topic > 127 bytes)", 0),
        "crcprop": f.get("__CRC32# property CRC", 0),
        "tx": sum(v for k, v in f.items() if k.startswith("transaction")),
        "born6": f.get("IPv6 born host", 0),
    }
    return {
        "records": s.records, "blanks": s.blanks, "crc": s.crc_failures, "stopped": s.stopped_at, "end": s.chain_end,
        "per_queue": s.per_queue, "feats": {k: v for k, v in feats.items() if v},
    }


def _stores():
    for case in ALL_CASES:
        yield pytest.param(REFERENCE / case / "store", reference_config(case), id=case)
    for name in ("clean", "crashed", "damaged"):
        yield pytest.param(SAMPLES / name, None, id=f"sample-{name}")


@pytest.mark.parametrize("root,cfg", list(_stores()))
def test_bulk_counts_equal_the_walk(root, cfg):
    with open_store(root, cfg) as st:
        assert _summarised(st) == _walked(st)


@pytest.mark.parametrize("damage", ["bad-magic", "zeros-then-records", "crc"])
def test_bulk_counts_stop_where_the_walk_stops(tmp_path, damage):
    root = copy_store("clean", tmp_path / "s")
    cfg = reference_config("clean")
    with open_store(root, cfg) as st:
        recs = [r for r in st.commitlog.walk() if not r.is_blank]
    f = root / "commitlog" / Path(recs[200].file).name
    data = bytearray(f.read_bytes())
    at = recs[200].file_offset
    if damage == "bad-magic":
        data[at + 4 : at + 8] = b"\x00\x11\x22\x33"
    elif damage == "zeros-then-records":
        data[at : at + recs[200].total_size] = bytes(recs[200].total_size)  # later records intact
    else:
        data[at + 100] ^= 0xFF  # inside the body: a CRC failure, counted, not a stop
    f.write_bytes(bytes(data))
    with open_store(root, cfg) as st:
        got, want = _summarised(st), _walked(st)
    assert got == want
    assert want["records"] == (len(recs) if damage == "crc" else 200)
