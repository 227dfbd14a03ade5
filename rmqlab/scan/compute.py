"""The Arrow compute kernels the read commands call, without importing
``pyarrow.compute``.

Importing ``pyarrow.compute`` builds a Python wrapper, docstring and signature for each
of Arrow's ~290 functions (~50 ms on the project's machine class, more than numpy's own
import): a command that reads a sample store pays it before it reads a byte.  The
kernels themselves are in ``pyarrow._compute``, whose ``call_function`` is what every
one of those wrappers calls, and which imports in a few milliseconds.  The functions
here keep ``pyarrow.compute``'s names and arguments for the few kernels the summary and
verify call on every batch, so that a line reads as it would with ``pc.``.

Where ``pyarrow._compute`` is not there (a pyarrow that moved it), ``pyarrow.compute``'s
``call_function`` is used: slower to import, the same answers.

Note that pyarrow's own ``Array.is_valid``, ``Array.fill_null``, ``Array.filter``,
``Array.cast`` and ``RecordBatch.filter`` import ``pyarrow.compute`` on their first call:
the callers use the functions here instead.  And ``pa.array`` of Python values with no
type given infers one, importing dateutil on the way (~10 ms): give the type.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

try:
    from pyarrow._compute import CastOptions, SetLookupOptions, SplitPatternOptions, call_function
except ImportError:  # pragma: no cover - pyarrow's layout of its own modules
    from pyarrow.compute import CastOptions, SetLookupOptions, SplitPatternOptions, call_function

__all__ = ["indices", "mask", "take", "not_equal", "split_pattern", "list_parent_indices", "list_flatten", "dictionary_encode", "fill_null", "and_", "binary_join_element_wise", "cast", "equal", "filter", "is_in", "is_null", "is_valid", "or_", "sum", "value_counts"]

def mask(keep: np.ndarray) -> pa.BooleanArray:
    """A numpy bool array as an Arrow one, for :func:`filter` (``pa.array`` of a numpy
    array asks whether it is a masked array, and ``numpy.ma`` then imports: ~15 ms)."""
    keep = np.asarray(keep, bool)
    return pa.Array.from_buffers(pa.bool_(), len(keep), [None, pa.py_buffer(np.packbits(keep, bitorder="little"))])


def indices(rows: np.ndarray) -> pa.Int64Array:
    """Row numbers (a numpy integer array) as an Arrow int64 array, for :func:`take`
    (without ``pa.array``'s masked-array question, see :func:`mask`)."""
    rows = np.ascontiguousarray(rows, np.int64)
    return pa.Array.from_buffers(pa.int64(), len(rows), [None, pa.py_buffer(rows)])


def take(data, idx) -> pa.Array:
    """``pyarrow.compute.take`` (``x.take(idx)`` imports ``pyarrow.compute``)."""
    return call_function("take", [data, idx])


def not_equal(x, y) -> pa.Array:
    """``pyarrow.compute.not_equal``: ``y`` may be a Python value (a scalar of ``x``'s type)."""
    return call_function("not_equal", [x, _scalar(y, x.type)])


def split_pattern(strings, pattern: str) -> pa.ListArray:
    """``pyarrow.compute.split_pattern``."""
    return call_function("split_pattern", [strings], SplitPatternOptions(pattern))


def list_parent_indices(lists) -> pa.Int64Array:
    """``pyarrow.compute.list_parent_indices``."""
    return call_function("list_parent_indices", [lists])


def list_flatten(lists) -> pa.Array:
    """``pyarrow.compute.list_flatten`` (``lists.flatten()`` imports ``pyarrow.compute``)."""
    return call_function("list_flatten", [lists])


def dictionary_encode(x) -> pa.DictionaryArray:
    """``pyarrow.compute.dictionary_encode`` (codes in order of first appearance)."""
    return call_function("dictionary_encode", [x])


def _scalar(y, type_):
    return y if isinstance(y, (pa.Array, pa.ChunkedArray, pa.Scalar)) else pa.scalar(y, type_)


def is_in(values, value_set) -> pa.Array:
    """``pyarrow.compute.is_in(values, value_set=value_set)``."""
    return call_function("is_in", [values], SetLookupOptions(value_set))


def equal(x, y) -> pa.Array:
    """``pyarrow.compute.equal``: ``y`` may be a Python value (a scalar of ``x``'s type)."""
    return call_function("equal", [x, _scalar(y, x.type)])


def and_(x, y) -> pa.Array:
    """``pyarrow.compute.and_``."""
    return call_function("and", [x, y])


def or_(x, y) -> pa.Array:
    """``pyarrow.compute.or_``."""
    return call_function("or", [x, y])


def is_null(x) -> pa.Array:
    """``pyarrow.compute.is_null``."""
    return call_function("is_null", [x])


def fill_null(x, fill_value) -> pa.Array:
    """``pyarrow.compute.fill_null`` (``x.fill_null(v)`` imports ``pyarrow.compute``)."""
    return call_function("coalesce", [x, pa.scalar(fill_value, x.type)])


def is_valid(x) -> pa.Array:
    """``pyarrow.compute.is_valid`` (``x.is_valid()`` imports ``pyarrow.compute``)."""
    return call_function("is_valid", [x])


def filter(data, mask) -> pa.Array | pa.RecordBatch:  # noqa: A001 - pyarrow.compute's name
    """``pyarrow.compute.filter`` of an array or a record batch."""
    return call_function("filter", [data, mask])


def cast(x, target_type) -> pa.Array:
    """``pyarrow.compute.cast(x, target_type)`` (safe; a type or its name, ``"string"``)."""
    return call_function("cast", [x], CastOptions.safe(pa.type_for_alias(target_type) if isinstance(target_type, str) else target_type))


def sum(x) -> pa.Scalar:  # noqa: A001 - pyarrow.compute's name
    """``pyarrow.compute.sum``."""
    return call_function("sum", [x])


def value_counts(x) -> pa.StructArray:
    """``pyarrow.compute.value_counts``: a struct array of ``values`` and ``counts``."""
    return call_function("value_counts", [x])


def binary_join_element_wise(*strings_and_separator) -> pa.Array:
    """``pyarrow.compute.binary_join_element_wise(a, b, ..., separator)``."""
    *strings, sep = strings_and_separator
    return call_function("binary_join_element_wise", [*strings, _scalar(sep, pa.string())])
