"""Fast record encoder (Java ``CommitLog.DefaultAppendMessageCallback.doAppend`` and
``MessageExtEncoder.encode``), the write-side twin of :func:`~rmqlab.format.record.decode_record`.

It packs with ``struct`` for speed; ``tests/format`` checks that its output equals
``MessageRecord.build`` of the construct schema for V1/V2, IPv4/IPv6 and with the
optional ``__CRC32#`` property, so the schema stays the single source of truth.
"""

from __future__ import annotations

import struct
import zlib

from . import commitlog as cl
from .properties import CRC32, NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR
from .record import PROPERTY_CRC_TAIL, encode_crc_digits

_PACKERS: dict[tuple[int, int], struct.Struct] = {}


def _packer(born_len: int, store_len: int) -> struct.Struct:
    """The fixed part from totalSize to bodyLength for the given host sizes."""
    key = (born_len, store_len)
    p = _PACKERS.get(key)
    if p is None:
        p = struct.Struct(f">iIiiiqqiq{born_len}siq{store_len}siiqi")
        _PACKERS[key] = p
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
    head = _packer(len(born_addr), len(store_addr)).pack(
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
