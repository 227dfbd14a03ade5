"""The bulk decoder's fast paths against independent oracles: values copied through
``binary_view`` against plain slicing.  (The compiled walk, CRCs and properties split
are compared with the one-record decoder in test_kernels.)  No Spark needed."""

from __future__ import annotations

import numpy as np
import pytest

from rmqlab.scan import decode as fd


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
