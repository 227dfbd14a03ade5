"""The bulk decoder's fast paths against independent oracles: CRC-32 of many short
slices (row matrices, per-distance tables) against ``zlib.crc32``; values copied
through ``binary_view`` against plain slicing; the lane walk with lanes sized from
the record size against the sequential walk, on RocketMQ's reference stores and on
stores with records of one, a few and many sizes.  No Spark needed."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from tests.spark.conftest import UNDAMAGED, store_root

from rmqlab.scan import decode as fd
from rmqlab.format import properties as props
from rmqlab.format.encode import encode_record
from rmqlab.store import open_store


@pytest.mark.parametrize(
    "pattern",
    ["one-length-back-to-back", "one-length-apart", "few-lengths", "many-lengths", "tiny-with-empty", "max-length"],
)
def test_crc32_many_equals_zlib(pattern):
    rng = np.random.default_rng(7)
    a = rng.integers(0, 256, 1 << 18, dtype=np.uint8)
    n = 700
    if pattern == "one-length-back-to-back":
        lens = np.full(n, 24)
        starts = 5 + np.arange(n) * 24
    else:
        starts = np.sort(rng.choice(2000, n, replace=False)) * 97
        lens = {
            "one-length-apart": np.full(n, 17),
            "few-lengths": rng.integers(20, 29, n),
            "many-lengths": rng.integers(0, fd._VECTOR_CRC_MAX + 1, n),
            "tiny-with-empty": rng.integers(0, 3, n),
            "max-length": np.full(n, fd._VECTOR_CRC_MAX),
        }[pattern]
    starts, lens = starts.astype(np.int64), lens.astype(np.int64)
    got = fd._crc32_many(a, starts, lens)
    want = [zlib.crc32(a[s : s + ln].tobytes()) for s, ln in zip(starts.tolist(), lens.tolist())]
    assert got.tolist() == want


def _ctx(buf: bytes) -> fd._Ctx:
    a = np.frombuffer(buf, np.uint8)
    return fd._Ctx(
        a=a, mv=memoryview(a), buf_offset=0, file_base=0, file_size=len(a), file="<t>", mode="strict", verify_crc=True,
        include_body=True, topics=None, start_time=None, end_time=None, batch_rows=1 << 16, batch_bytes=64 << 20,
    )  # fmt: skip


@pytest.mark.parametrize("keep", [False, True])
def test_view_gather_equals_slices(keep):
    rng = np.random.default_rng(3)
    buf = rng.integers(0, 256, 1 << 16, dtype=np.uint8).tobytes()
    # long values with short ones (inline in the view, <= 12 bytes) and empty ones among them
    lens = rng.choice([0, 1, 5, 12, 13, 300, 1000], 120)
    gaps = rng.integers(0, 40, 120)
    starts = np.cumsum(gaps + np.concatenate(([0], lens[:-1]))).astype(np.int64)
    ends = starts + lens
    assert ends[-1] <= len(buf)
    mask = rng.random(120) < 0.6 if keep else None
    got = fd._gathered_views(_ctx(buf), starts, ends, mask).to_pylist()
    want = [buf[s:e] for s, e in zip(starts.tolist(), ends.tolist())]
    if keep:
        want = [w for w, k in zip(want, mask.tolist()) if k]
    assert got == want


def _message(i: int, body: bytes, phys: int) -> bytes:
    return encode_record(
        topic=f"T{i % 3}".encode(), body=body, queue_id=i % 4, queue_offset=i, physical_offset=phys,
        born_timestamp=1700000000000 + i, store_timestamp=1700000000001 + i,
        born_host=(b"\x0a\0\0\x02", 40000 + i % 7), store_host=(b"\x0a\0\0\x01", 10911),
        properties=props.encode({"UNIQ_KEY": f"K{i:08d}", "WAIT": "true"}),
        append_prop_crc=i % 5 == 0,
    )  # fmt: skip


def _store_bytes(sizes) -> bytes:
    out, pos = bytearray(), 0
    for i, n in enumerate(sizes):
        rec = _message(i, bytes((i + j) % 251 for j in range(n)), pos)
        out += rec
        pos += len(rec)
    return bytes(out)


def _spy_lane_starts(monkeypatch) -> list[int]:
    """Lane counts of the lane walks that ran."""
    counts: list[int] = []
    real = fd._lane_starts

    def spy(ctx, xs0, lane, k, window):
        counts.append(k + 1)
        return real(ctx, xs0, lane, k, window)

    monkeypatch.setattr(fd, "_lane_starts", spy)
    return counts


@pytest.mark.parametrize("shape", ["one-size", "few-sizes", "many-sizes", "big-then-small"])
def test_auto_lane_walk_equals_sequential_walk(monkeypatch, shape):
    rng = np.random.default_rng(11)
    n = 3000
    sizes = {
        "one-size": [24] * n,
        "few-sizes": rng.integers(20, 26, n).tolist(),
        "many-sizes": rng.integers(0, 2000, n).tolist(),
        # the size met at the start says nothing about the rest
        "big-then-small": [3000] * 70 + [10] * n,
    }[shape]
    buf = _store_bytes(sizes)
    sequential = [b.to_pylist() for b in fd.decode_file(buf, 0, batch_rows=512)]
    monkeypatch.setattr(fd, "LANE_MIN_RANGE", 4096)
    monkeypatch.setattr(fd, "LANE_RECORDS", 4)
    monkeypatch.setattr(fd, "LANE_MIN_BYTES", 256)
    lanes = _spy_lane_starts(monkeypatch)
    ctx = _ctx(buf)
    positions, end = fd._walk_lanes(ctx, 0, len(buf))
    assert lanes and lanes[0] >= 8
    want, want_end = fd._walk_py(ctx, 0, len(buf), 1 << 62)
    assert positions.tolist() == want and end == want_end
    assert [b.to_pylist() for b in fd.decode_file(buf, 0, batch_rows=512)] == sequential


@pytest.mark.parametrize("case", UNDAMAGED)
def test_auto_lane_walk_on_reference_stores(monkeypatch, case):
    monkeypatch.setattr(fd, "LANE_MIN_RANGE", 2048)
    monkeypatch.setattr(fd, "LANE_RECORDS", 2)
    monkeypatch.setattr(fd, "LANE_MIN_BYTES", 256)
    lanes = _spy_lane_starts(monkeypatch)
    for f in open_store(store_root(case)).commitlog.queue.files:
        buf = bytes(f.buf)
        ctx = _ctx(buf)
        ctx.file_base = f.file_from_offset
        want, want_end = fd._walk_py(ctx, 0, len(buf), 1 << 62)
        positions, end = fd._walk_lanes(ctx, 0, len(buf))
        assert positions.tolist() == want and end == want_end
    assert lanes  # the lane walk ran, not the sequential fallback
