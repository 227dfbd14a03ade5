"""rmqlab.scan.uniques gives np.unique's answers (values, first index, inverse), by sorting."""

from __future__ import annotations

import numpy as np
import pytest

from rmqlab.scan.uniques import sorted_unique, unique


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
