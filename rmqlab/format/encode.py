"""Fast record encoder (Java ``CommitLog.DefaultAppendMessageCallback.doAppend`` and
``MessageExtEncoder.encode``), the write-side twin of :func:`~rmqlab.format.record.decode_record`.

It packs with ``struct`` for speed; ``tests/format`` checks that its output equals
``MessageRecord.build`` of the construct schema for V1/V2, IPv4/IPv6 and with the
optional ``__CRC32#`` property, so the schema stays the single source of truth.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from . import commitlog as cl
from .batch import ENTRY_OVERHEAD
from .layout import PREFIX_DTYPES
from .properties import CRC32, NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR
from .record import HEADER_FORMAT, PROPERTY_CRC_TAIL, encode_crc_digits

_PACKERS: dict[tuple[int, int], struct.Struct] = {}


def record_packer(born_len: int, store_len: int) -> struct.Struct:
    """Fixed fields from totalSize through bodyLength for the given host address sizes:
    the schema's header, then bornHost, storeTimestamp, storeHost, reconsumeTimes,
    preparedTransactionOffset, bodyLength."""
    key = (born_len, store_len)
    p = _PACKERS.get(key)
    if p is None:
        p = struct.Struct(f"{HEADER_FORMAT}{born_len}siq{store_len}siiqi")
        _PACKERS[key] = p
    return p


#: whole-record packers by (store host length, body, topic field, properties length);
#: hot paths look here first and call whole_record_packer only on a miss
WHOLE_RECORD_PACKERS: dict[tuple[int, int, int, int], struct.Struct] = {}
_WHOLE_MAX = 4096


def whole_record_packer(store_len: int, body_len: int, topic_len: int, props_len: int) -> struct.Struct | None:
    """One ``Struct`` for a whole V1 record with an IPv4 bornHost: the fixed fields,
    the body, ``topic_len`` bytes of topic length + topic, propertiesLength and the
    properties — so a put packs straight into the mapped file in one call, with no
    intermediate bytes.  Cached per shape; ``None`` once the cache is full (varied
    sizes: the caller packs the header and joins the parts instead)."""
    key = (store_len, body_len, topic_len, props_len)
    p = WHOLE_RECORD_PACKERS.get(key)
    if p is None:
        if len(WHOLE_RECORD_PACKERS) >= _WHOLE_MAX:
            return None
        p = struct.Struct(f"{HEADER_FORMAT}4siq{store_len}siiqi{body_len}s{topic_len}sh{props_len}s")
        WHOLE_RECORD_PACKERS[key] = p
    return p


#: placeholder written before the CRC is known, then overwritten in place
CRC_PROPERTY_PLACEHOLDER = (CRC32 + NAME_VALUE_SEPARATOR).encode() + b"0" * 10 + PROPERTY_SEPARATOR.encode()
assert len(CRC_PROPERTY_PLACEHOLDER) == PROPERTY_CRC_TAIL


def encode_record(
    *,
    topic: bytes,
    body: bytes,
    properties: bytes,
    queue_id: int = 0,
    flag: int = 0,
    queue_offset: int = 0,
    physical_offset: int = 0,
    sys_flag: int = 0,
    born_timestamp: int = 0,
    born_host: tuple[bytes, int] = (b"\x7f\0\0\x01", 0),
    store_timestamp: int = 0,
    store_host: tuple[bytes, int] = (b"\x7f\0\0\x01", 0),
    reconsume_times: int = 0,
    prepared_transaction_offset: int = 0,
    body_crc: int | None = None,
    v2: bool | None = None,
    append_prop_crc: bool = False,
) -> bytes:
    """Bytes of one message record.

    ``properties`` are the encoded ``name\\x01value\\x02`` pairs; with
    ``append_prop_crc`` the ``__CRC32#`` property is appended and filled in (Java
    ``enabledAppendPropCRC``).  ``v2`` defaults to "topic longer than 127 bytes".
    The sysFlag IPv6 bits must agree with the host address lengths.
    """
    if v2 is None:
        v2 = len(topic) > cl.MAX_TOPIC_LENGTH_V1
    if append_prop_crc:
        properties = properties + CRC_PROPERTY_PLACEHOLDER
    born_addr, born_port = born_host
    store_addr, store_port = store_host
    if (len(born_addr) == 16) != bool(sys_flag & cl.FLAG_BORNHOST_V6) or (len(store_addr) == 16) != bool(sys_flag & cl.FLAG_STOREHOST_V6):
        raise ValueError("sysFlag IPv6 bits do not match the host address lengths")
    if body_crc is None:
        body_crc = zlib.crc32(body) & 0x7FFFFFFF
    total = cl.record_size(len(body), len(topic), len(properties), sys_flag, v2)
    head = record_packer(len(born_addr), len(store_addr)).pack(
        total,
        cl.MAGIC_V2 if v2 else cl.MAGIC_V1,
        body_crc,
        queue_id,
        flag,
        queue_offset,
        physical_offset,
        sys_flag,
        born_timestamp,
        born_addr,
        born_port,
        store_timestamp,
        store_addr,
        store_port,
        reconsume_times,
        prepared_transaction_offset,
        len(body),
    )
    tlen = struct.pack(">h" if v2 else ">b", len(topic))
    out = b"".join((head, body, tlen, topic, struct.pack(">h", len(properties)), properties))
    if append_prop_crc:
        crc = zlib.crc32(out[: total - PROPERTY_CRC_TAIL]) & 0x7FFFFFFF
        out = out[: total - 11] + encode_crc_digits(crc) + out[-1:]
    return out


def encode_blank(bytes_left: int) -> bytes:
    """The BLANK end-of-file record: ``(int bytesLeft, int 0xCBD43194)``."""
    return struct.pack(">iI", bytes_left, cl.MAGIC_BLANK)


# -- a whole producer batch at once (numpy) ------------------------------------------------------
def topic_field(topic: bytes) -> tuple[int, bytes]:
    """(magic, topic length + topic) as a record holds them: V1 (1-byte length) up to
    127 bytes, else V2 (2-byte length)."""
    if len(topic) > cl.MAX_TOPIC_LENGTH_V1:
        return cl.MAGIC_V2, struct.pack(">h", len(topic)) + topic
    return cl.MAGIC_V1, struct.pack(">b", len(topic)) + topic


def _record_fixed(born_v6: bool, store_v6: bool) -> int:
    """Bytes of a record besides its body, topic and properties: the fixed part and
    propertiesLength."""
    return PREFIX_DTYPES[born_v6 + 2 * store_v6].itemsize + 2


def batch_record_sizes(layout, topic_len: int, born_v6: bool, store_v6: bool) -> np.ndarray:
    """totalSize of the record each batch entry becomes (no batch properties)."""
    return _record_fixed(born_v6, store_v6) + layout.body_len + topic_len + layout.props_len


def batch_records_bytes(body_len: int, entries: int, topic_len: int, born_v6: bool, store_v6: bool) -> int:
    """:func:`batch_record_sizes` summed, from the batch body's length and its number of
    entries alone: each record is its entry less the entry's head and propertiesLength
    (:data:`rmqlab.format.batch.ENTRY_OVERHEAD`), plus the record's fixed part and topic field."""
    return body_len + entries * (_record_fixed(born_v6, store_v6) - ENTRY_OVERHEAD + topic_len)


def write_batch_records(
    dst: np.ndarray,
    src,
    layout,
    *,
    topic: bytes,
    body_crc: np.ndarray,
    queue_id: int,
    queue_offset: np.ndarray,
    physical_offset: np.ndarray,
    sys_flag: int,
    born_timestamp: int,
    born_host: tuple[bytes, int],
    store_timestamp: int,
    store_host: tuple[bytes, int],
) -> None:
    """Java ``MessageExtEncoder.encode(MessageExtBatch)`` + ``doAppend`` for every
    entry of a batch at once: the records, back to back, into ``dst`` (a uint8 array
    exactly as long as they are, e.g. a view of the mapped file).

    ``src`` is the batch body and ``layout`` its :class:`~rmqlab.format.batch.BatchLayout`.
    Each record takes the entry's flag, body and properties (propertiesLength and
    bytes copied as they are) and the batch's topic, queue, sysFlag, hosts and times.
    The fixed part is a numpy structured array of the schema-derived dtype
    (:mod:`rmqlab.format.layout`); when every record has the same size, bodies and
    properties are copied as 2-D strided blocks, else joined part by part.
    """
    born_v6, store_v6 = len(born_host[0]) == 16, len(store_host[0]) == 16
    if bool(sys_flag & cl.FLAG_BORNHOST_V6) != born_v6 or bool(sys_flag & cl.FLAG_STOREHOST_V6) != store_v6:
        raise ValueError("sysFlag IPv6 bits do not match the host address lengths")
    magic, tfield = topic_field(topic)
    dt = PREFIX_DTYPES[born_v6 + 2 * store_v6]
    n = len(layout)
    sizes = batch_record_sizes(layout, len(tfield), born_v6, store_v6)
    h = np.zeros(n, dt)
    h["total_size"] = sizes
    h["magic"] = magic
    h["body_crc"] = body_crc
    h["queue_id"] = queue_id
    h["flag"] = layout.flag
    h["queue_offset"] = queue_offset
    h["physical_offset"] = physical_offset
    h["sys_flag"] = sys_flag
    h["born_timestamp"] = born_timestamp
    h["born_host_address"] = np.frombuffer(born_host[0], np.uint8)
    h["born_host_port"] = born_host[1]
    h["store_timestamp"] = store_timestamp
    h["store_host_address"] = np.frombuffer(store_host[0], np.uint8)
    h["store_host_port"] = store_host[1]
    h["len_body"] = layout.body_len
    P = dt.itemsize
    a = np.frombuffer(src, np.uint8)
    size0 = int(sizes[0])
    if (sizes == size0).all() and (layout.body_len == layout.body_len[0]).all():
        # one shape: every part is a column block of a 2-D view
        b = int(layout.body_len[0])
        at = int(layout.body_start[0] - layout.start[0])  # where an entry's body starts
        out = dst.reshape(n, size0)
        ent = a.reshape(n, int(layout.total_size[0]))
        out[:, :P] = h.view(np.uint8).reshape(n, P)
        out[:, P : P + b] = ent[:, at : at + b]
        out[:, P + b : P + b + len(tfield)] = np.frombuffer(tfield, np.uint8)
        out[:, P + b + len(tfield) :] = ent[:, at + b :]
        return
    hb = h.tobytes()
    mv = memoryview(src)
    parts = []
    for i, s, bl, e in zip(range(0, n * P, P), layout.body_start.tolist(), (layout.body_start + layout.body_len).tolist(), (layout.start + layout.total_size).tolist()):
        parts += (hb[i : i + P], mv[s:bl], tfield, mv[bl:e])
    dst[:] = np.frombuffer(b"".join(parts), np.uint8)
