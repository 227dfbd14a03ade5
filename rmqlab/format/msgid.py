"""Offset message ids (Java: ``MessageDecoder.createMessageId`` / ``decodeMessageId``).

An offset msgId is the store host's address, its port (int32) and the record's
physical offset (int64), upper-case hex: 32 characters for IPv4, 56 for IPv6.
"""

from __future__ import annotations

import ipaddress
import struct

from ..errors import StoreFormatError


def create_message_id(address: bytes, port: int, physical_offset: int) -> str:
    """Java ``createMessageId(ByteBuffer input, ByteBuffer addr, long offset)``."""
    return (address + struct.pack(">iq", port, physical_offset)).hex().upper()


def decode_message_id(msg_id: str) -> tuple[str, int, int]:
    """``(host, port, physical_offset)`` of an offset msgId; errors name the position."""
    text = msg_id.strip()
    if len(text) not in (32, 56):
        raise StoreFormatError("<msgId>", None, f"offset msgId {msg_id!r} has {len(text)} hex digits, expected 32 (IPv4) or 56 (IPv6)")
    try:
        raw = bytes.fromhex(text)
    except ValueError as exc:
        raise StoreFormatError("<msgId>", None, f"offset msgId {msg_id!r} is not hex: {exc}") from None
    alen = len(raw) - 12
    port, offset = struct.unpack(">iq", raw[alen:])
    return str(ipaddress.ip_address(raw[:alen])), port, offset


def format_host(address: bytes, port: int) -> str:
    """``host:port`` as RocketMQ prints it (Java ``InetAddress.getHostAddress()``):
    ``127.0.0.1:10911``, or for IPv6 every group in short hex, uncompressed, no
    brackets: ``0:0:0:0:0:0:0:1:10911``."""
    if len(address) == 16:
        groups = struct.unpack(">8H", address)
        return ":".join(f"{g:x}" for g in groups) + f":{port}"
    return ".".join(str(b) for b in address) + f":{port}"


def parse_host(text: str) -> tuple[bytes, int]:
    """Inverse of :func:`format_host`; also takes ``[::1]:10911`` and ``::1:10911``."""
    host, _, port = text.rpartition(":")
    if not host:
        raise ValueError(f"host {text!r} has no port")
    host = host.strip("[]")
    return ipaddress.ip_address(host).packed, int(port)
