"""numpy dtypes of CommitLog record parts, derived from the construct schema.

Java counterpart: none — RocketMQ reads and writes one field at a time through a
``ByteBuffer``.  Bulk paths (the vectorised decoder, the engine's columnar
``put_batch``) lay a numpy structured dtype over many records at once; this module
derives that dtype from :data:`~rmqlab.format.commitlog.MessageRecord`, so the schema
stays the one place that owns the byte layout.  It needs numpy only (no pyarrow), so
the write path can use it without loading Arrow.
"""

from __future__ import annotations

import numpy as np
from construct import FormatField, IfThenElse

from . import commitlog as cl
from .record import HEADER_FIELDS

_FMT_TO_DTYPE = {">l": ">i4", ">L": ">u4", ">q": ">i8", ">h": ">i2", ">b": "i1"}


def prefix_dtype(born_v6: bool, store_v6: bool) -> np.dtype:
    """Fixed part of a message record, ``totalSize`` .. ``bodyLength``, for one host
    combination (hosts become ``<name>_address`` bytes and ``<name>_port``)."""
    fields = []
    for sub in cl.MessageRecord.subcons:
        inner = sub
        while hasattr(inner, "subcon") and not isinstance(inner, IfThenElse):
            inner = inner.subcon
        if isinstance(inner, IfThenElse):
            v6 = born_v6 if sub.name == "born_host" else store_v6
            host = inner.thensubcon if v6 else inner.elsesubcon
            for hs in host.subcons:
                h = hs
                while hasattr(h, "subcon"):
                    h = h.subcon
                if isinstance(h, FormatField):
                    fields.append((f"{sub.name}_{hs.name}", _FMT_TO_DTYPE[h.fmtstr]))
                else:
                    fields.append((f"{sub.name}_{hs.name}", ("u1", (h.sizeof(),))))
        else:
            fields.append((sub.name, _FMT_TO_DTYPE[inner.fmtstr]))
        if sub.name == "len_body":
            break
    return np.dtype(fields)


#: index = born_v6 + 2*store_v6
PREFIX_DTYPES = [prefix_dtype(bool(i & 1), bool(i & 2)) for i in range(4)]
assert list(PREFIX_DTYPES[0].names[: len(HEADER_FIELDS)]) == HEADER_FIELDS
assert PREFIX_DTYPES[0].itemsize == cl.FIXED_SIZE_V1_IPV4 - 3  # minus topicLength(1) and propertiesLength(2)

__all__ = ["PREFIX_DTYPES", "prefix_dtype"]
