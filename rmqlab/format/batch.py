"""A producer's encoded message batch (Java ``MessageBatch`` / ``MessageExtBatch`` body).

Java: the client's ``MessageDecoder.encodeMessages`` writes the batch body that
``DefaultMessageStore.putMessages`` receives; the broker's
``MessageExtEncoder.encode(MessageExtBatch)`` turns every entry into a CommitLog
record.  One entry, big-endian, no padding::

    ┌────────────┬────────────┬────────────┬────────────┬────────────┬──────┐
    │ totalSize  │ magicCode  │ bodyCRC    │ flag       │ bodyLength │ body │
    │ int32      │ int32 (0)  │ int32 (0)  │ int32      │ int32      │      │
    ├────────────┴────────────┴────────────┴────────────┴────────────┴──────┤
    │ propertiesLength int16  │ properties  name\\x01value\\x02 ...           │
    └─────────────────────────┴──────────────────────────────────────────────┘

The client leaves magicCode and bodyCRC at 0: the broker computes the CRC.  Topic,
queue, hosts, timestamps and sysFlag are the batch's, not the entry's.

:class:`BatchLayout` validates a whole body at once with numpy (each entry's length
fields must recompute its ``totalSize``) and names the byte of the first bad entry.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from construct import Bytes, Const, Int16sb, Int32sb, Rebuild, Struct, len_, this

from ..errors import StoreFormatError
from .layout import fixed_dtype

#: One batch entry (Java ``MessageDecoder.encodeMessage``).
BatchEntry = Struct(
    "total_size" / Rebuild(Int32sb, 4 + 4 + 4 + 4 + 4 + len_(this.body) + 2 + len_(this.properties)),
    "magic" / Const(0, Int32sb),
    "body_crc" / Const(0, Int32sb),
    "flag" / Int32sb,
    "len_body" / Rebuild(Int32sb, len_(this.body)),
    "body" / Bytes(this.len_body),
    "len_properties" / Rebuild(Int16sb, len_(this.properties)),
    "properties" / Bytes(this.len_properties),
)

#: an entry's fixed head (totalSize, magicCode, bodyCRC, flag, bodyLength), from the schema
_HEAD_DTYPE = fixed_dtype(BatchEntry)
assert all(_HEAD_DTYPE[name] == np.dtype(">i4") for name in _HEAD_DTYPE.names)
_BODY_AT = _HEAD_DTYPE.itemsize  # the body follows the head
_HEAD = struct.Struct(">" + "i" * len(_HEAD_DTYPE.names))
#: bytes of an entry besides its body and properties (the head and propertiesLength)
ENTRY_OVERHEAD = _BODY_AT + 2
#: where an entry's flag and bodyLength sit and where its body starts: rmqlab.engine._put
#: reads entries at these places (its batch_entries and write_batch), checked at its import
ENTRY_FIELDS_AT = (_HEAD_DTYPE.fields["total_size"][1], _HEAD_DTYPE.fields["flag"][1], _HEAD_DTYPE.fields["len_body"][1], _BODY_AT)
_I16 = struct.Struct(">h")


class BatchFormatError(StoreFormatError):
    """A batch body that is not a sequence of well-formed entries."""


def encode_entries(entries: Sequence[tuple[int, bytes, bytes]]) -> tuple[bytes, np.ndarray]:
    """Java ``MessageDecoder.encodeMessages``: the batch body of ``(flag, body,
    encoded properties)`` entries, and the byte offset of every entry (plus the end)."""
    parts = []
    offsets = np.empty(len(entries) + 1, dtype=np.int64)
    pos = 0
    for i, (flag, body, raw) in enumerate(entries):
        size = ENTRY_OVERHEAD + len(body) + len(raw)
        offsets[i] = pos
        parts.append(_HEAD.pack(size, 0, 0, flag, len(body)))
        parts.append(body)
        parts.append(_I16.pack(len(raw)))
        parts.append(raw)
        pos += size
    offsets[-1] = pos
    return b"".join(parts), offsets


def walk_entries(body, *, where: str = "<batch>") -> np.ndarray:
    """Entry offsets (plus the end) of a batch body, by following ``totalSize``."""
    out = [0]
    pos, end = 0, len(body)
    while pos < end:
        if end - pos < ENTRY_OVERHEAD:
            raise BatchFormatError(where, pos, f"{end - pos} bytes left, fewer than an entry's {ENTRY_OVERHEAD}")
        size = _HEAD.unpack_from(body, pos)[0]
        if size < ENTRY_OVERHEAD or size > end - pos:
            raise BatchFormatError(where, pos, f"totalSize {size} does not fit the {end - pos} bytes left")
        pos += size
        out.append(pos)
    return np.asarray(out, dtype=np.int64)


@dataclass
class BatchLayout:
    """Where every entry's parts lie in a batch body (numpy columns, one row per entry)."""

    start: np.ndarray  # entry offset
    total_size: np.ndarray
    flag: np.ndarray
    body_len: np.ndarray
    props_len: np.ndarray

    @property
    def body_start(self) -> np.ndarray:
        return self.start + _BODY_AT

    def __len__(self) -> int:
        return len(self.start)

    @classmethod
    def of(cls, body, offsets: np.ndarray | None = None, *, where: str = "<batch>") -> "BatchLayout":
        """Validate ``body`` (entry ``offsets`` as from :func:`encode_entries`, else
        walked): every entry's bodyLength and propertiesLength must recompute its
        totalSize.  Raises :class:`BatchFormatError` naming the first bad entry's byte."""
        if offsets is None:
            offsets = walk_entries(body, where=where)
        a = np.frombuffer(body, np.uint8)
        if len(offsets) < 2 or offsets[0] != 0 or offsets[-1] != len(a):
            raise BatchFormatError(where, 0, f"entry offsets do not cover the {len(a)}-byte body")
        start = offsets[:-1]
        size = np.diff(offsets)
        if (size < ENTRY_OVERHEAD).any():
            i = int(np.flatnonzero(size < ENTRY_OVERHEAD)[0])
            raise BatchFormatError(where, int(start[i]), f"entry {i} is {int(size[i])} bytes, fewer than {ENTRY_OVERHEAD}")
        head = np.ndarray((len(a) - _BODY_AT + 1,), np.dtype((np.void, _BODY_AT)), buffer=a, strides=(1,))[start]
        head = head.view(_HEAD_DTYPE)
        total = head["total_size"].astype(np.int64)
        blen = head["len_body"].astype(np.int64)
        bad = (total != size) | (blen < 0) | (blen > size - ENTRY_OVERHEAD)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise BatchFormatError(where, int(start[i]), f"entry {i}: totalSize {int(total[i])}, bodyLength {int(blen[i])} do not fit its {int(size[i])} bytes")
        at = start + _BODY_AT + blen  # propertiesLength
        plen = ((a[at].astype(np.int64) << 8) | a[at + 1]).astype(np.int16).astype(np.int64)
        bad = plen != size - ENTRY_OVERHEAD - blen
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise BatchFormatError(where, int(at[i]), f"entry {i}: propertiesLength {int(plen[i])} does not recompute totalSize {int(size[i])}")
        return cls(start, total, head["flag"].astype(np.int64), blen, plen)


__all__ = ["BatchEntry", "BatchFormatError", "BatchLayout", "ENTRY_FIELDS_AT", "ENTRY_OVERHEAD", "encode_entries", "walk_entries"]
