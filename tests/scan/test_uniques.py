"""rmqlab.scan.uniques gives np.unique's answers (values, first index, inverse), by sorting."""

from __future__ import annotations

import numpy as np
import pytest

from rmqlab.scan.uniques import sorted_unique, stable_argsort, unique


@pytest.mark.parametrize("n", [0, 1, 2, 7, 5000])
@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint64])
def test_the_same_answers_as_numpy(n, dtype):
    rng = np.random.default_rng(n)
    a = rng.integers(0, max(2, n // 3), size=n).astype(dtype)
    values, inverse = unique(a, return_inverse=True)
    want, want_inverse = np.unique(a, return_inverse=True)
    assert values.dtype == want.dtype and (values == want).all() and (inverse == want_inverse).all() and (values[inverse] == a).all()
    assert (unique(a) == want).all()
    s = np.sort(a)
    got, first = sorted_unique(s, return_index=True)
    want, want_first = np.unique(s, return_index=True)
    assert (got == want).all() and (first == want_first).all()


@pytest.mark.parametrize("values", ["queue keys", "negative queue ids", "wide", "int32", "uint64 past 2^63"])
@pytest.mark.parametrize("n", [100, 5000, 1 << 18])
def test_stable_argsort_is_numpys_stable_argsort(values, n):
    """The same permutation as numpy's stable sort, whether the values are ranked into
    16 bits first (a few topics' queue keys) or not (a range too wide to rank)."""
    rng = np.random.default_rng(n)
    a = {"queue keys": lambda: (rng.integers(0, 5, n) << 32) | rng.integers(0, 16, n),
         "negative queue ids": lambda: (rng.integers(0, 3, n) << 32) | ((rng.integers(0, 4, n) - 2) & 0xFFFFFFFF),
         "wide": lambda: rng.integers(-(1 << 40), 1 << 40, n),
         "int32": lambda: rng.integers(-3, 3, n).astype(np.int32),
         "uint64 past 2^63": lambda: (rng.integers(0, 3, n).astype(np.uint64) << np.uint64(62)) | rng.integers(0, 4, n).astype(np.uint64)}[values]()
    assert (stable_argsort(a) == np.argsort(a, kind="stable")).all()
