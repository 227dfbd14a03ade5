"""Decoded CommitLog records and the fast single-record decoder.

:class:`Record` is what every layer above passes around (Java ``MessageExt``).
:func:`decode_record` is the hot path used by iteration: it reads fields with
``struct`` at offsets *derived from* :data:`~rmqlab.format.commitlog.RecordHeader`
and is tested field for field against the construct schema on every reference store.
It validates before it slices: a length field is checked against the record's own
``totalSize`` and the bytes left in the file before anything is read through it.

Damage is reported as :class:`RecordError` with a ``kind`` that recovery, verify,
salvage and the Spark reader share.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass, field
from typing import Any

from .. import reprs
from ..errors import StoreFormatError
from . import commitlog as cl
from . import properties as props
from .hashing import body_crc
from .msgid import create_message_id, format_host

# -- damage kinds (shared vocabulary) ---------------------------------------------------
BAD_MAGIC = "BAD_MAGIC"  # magicCode is none of V1/V2/BLANK
BAD_SIZE = "BAD_SIZE"  # totalSize too small, or past the end of the file
SIZE_MISMATCH = "SIZE_MISMATCH"  # a length field disagrees with totalSize
BODY_CRC = "BODY_CRC"  # stored bodyCRC != recomputed
PROPERTY_CRC = "PROPERTY_CRC"  # __CRC32# property != recomputed
TRUNCATED = "TRUNCATED"  # fewer bytes left than a record prefix needs
BAD_BLANK = "BAD_BLANK"  # BLANK whose size is not the bytes left in the file


class RecordError(StoreFormatError):
    """A record that is not valid; ``kind`` is one of the damage kinds above."""

    def __init__(self, file, offset, kind: str, message: str, total_size: int | None = None):
        self.kind = kind
        self.total_size = total_size
        super().__init__(file, offset, f"{kind}: {message}")


def damage_detail(error: str, kind: str) -> str:
    """The sentence of a :class:`RecordError` from its one-line text (``file @ offset
    (0x..): KIND: sentence``, as the bulk decoder's damage rows carry it)."""
    return error.split(f"{kind}: ", 1)[-1]


# Offsets of the fixed header fields, derived from the construct schema (one source).
def _header_layout() -> tuple[str, list[str]]:
    fmt, names = ">", []
    for sub in cl.RecordHeader.subcons:
        fmt += {4: "i", 8: "q"}[sub.sizeof()] if sub.name != "magic" else "I"
        names.append(sub.name)
    return fmt, names


HEADER_FORMAT, HEADER_FIELDS = _header_layout()
_HEADER = struct.Struct(HEADER_FORMAT)
assert _HEADER.size == cl.HEADER_SIZE
_PREFIX = struct.Struct(">iI")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_I16 = struct.Struct(">h")
_I8 = struct.Struct(">b")
_TAIL = struct.Struct(">iq")  # reconsumeTimes, preparedTransactionOffset


@dataclass(slots=True)
class Record:
    """One CommitLog record as stored (Java ``MessageExt`` plus where it was found).

    ``physical_offset`` is where the record *is* (file base + position);
    ``stored_physical_offset`` is what the record *says* (Java ``physicalOffset``
    field).  They differ only in damaged or moved bytes.
    """

    physical_offset: int
    total_size: int
    magic: int
    body_crc: int = 0
    queue_id: int = 0
    flag: int = 0
    queue_offset: int = 0
    stored_physical_offset: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: tuple[bytes, int] = (b"\0\0\0\0", 0)
    store_timestamp: int = 0
    store_host: tuple[bytes, int] = (b"\0\0\0\0", 0)
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    body: bytes = b""
    topic_raw: bytes = b""
    properties_raw: bytes = b""
    file: str = ""
    file_offset: int = 0  # position inside ``file``
    body_crc_computed: int | None = None
    property_crc: int | None = None  # value of __CRC32#, if present
    property_crc_computed: int | None = None
    #: read as Java's MessageDecoder reads served bytes (decode_record's ``message_decoder``):
    #: the bytes of the record after its properties, which Java never reads (0 otherwise)
    unread_tail: int = 0
    _pairs: list | None = field(default=None, repr=False)

    # -- what kind of record ----------------------------------------------------------
    @property
    def is_blank(self) -> bool:
        return self.magic == cl.MAGIC_BLANK

    @property
    def kind(self) -> str:
        return "BLANK" if self.is_blank else "MESSAGE"

    @property
    def is_v2(self) -> bool:
        return self.magic == cl.MAGIC_V2

    @property
    def transaction_type(self) -> int:
        return self.sys_flag & cl.TRANSACTION_MASK

    # -- decoded text -----------------------------------------------------------------
    @property
    def topic(self) -> str:
        return props.decode_text(self.topic_raw)

    @property
    def property_pairs(self) -> list[tuple[str, str]]:
        if self._pairs is None:
            self._pairs = props.decode_pairs(self.properties_raw)
        return self._pairs

    @property
    def properties(self) -> dict[str, str]:
        """On-disk order, empty values kept, a later duplicate wins."""
        return props.to_ordered_dict(self.property_pairs)

    @property
    def java_properties(self) -> dict[str, str]:
        """What RocketMQ's parser sees (empty names/values skipped)."""
        return props.to_java_map(self.property_pairs)

    @property
    def tags(self) -> str | None:
        return self.java_properties.get(props.TAGS)

    @property
    def keys(self) -> str | None:
        return self.java_properties.get(props.KEYS)

    @property
    def uniq_key(self) -> str | None:
        return self.java_properties.get(props.UNIQ_KEY)

    # -- checks -----------------------------------------------------------------------
    @property
    def body_crc_ok(self) -> bool:
        """Java ``checkMessageAndReturnSize`` compares the body CRC only when there is a
        body (``if (bodyLen > 0)``): the stored field of an empty body is never checked."""
        if self.body_crc_computed is None and not self.body:
            return True
        computed = self.body_crc_computed if self.body_crc_computed is not None else body_crc(self.body)
        return computed == self.body_crc

    @property
    def property_crc_ok(self) -> bool | None:
        """``None`` when the record carries no ``__CRC32#`` property."""
        if self.property_crc is None:
            return None
        return self.property_crc == self.property_crc_computed

    @property
    def crc_ok(self) -> bool:
        return self.is_blank or (self.body_crc_ok and self.property_crc_ok is not False)

    @property
    def java_decode_problem(self) -> str | None:
        """Why Java's ``MessageDecoder.decode`` (the broker's queryMessage and every
        client's pull) returns null for this record although the store accepts it: a
        host port outside 0–65535 (``new InetSocketAddress`` throws; no CRC covers the
        hosts).  None when it decodes."""
        for name, (_, port) in (("bornHost", self.born_host), ("storeHost", self.store_host)):
            if not 0 <= port <= 0xFFFF:
                return (f"its {name} port {port} lies outside 0–65535: Java's MessageDecoder.decode fails (InetSocketAddress), "
                        "so a consumer or queryMessage gets nothing for this record")
        return None

    @property
    def msg_id(self) -> str:
        """Offset msgId (Java ``MessageDecoder.createMessageId`` of the store host and the
        record's own physicalOffset field, as ``MessageDecoder.decode`` builds it: a
        damaged field gives an id that leads elsewhere, in RocketMQ too)."""
        return create_message_id(self.store_host[0], self.store_host[1], self.stored_physical_offset)

    @property
    def end_offset(self) -> int:
        return self.physical_offset + self.total_size

    # -- interchange --------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The keys of ``rmqlab dump --json`` (body base64, properties in disk order)."""
        if self.is_blank:
            return {"physical_offset": self.physical_offset, "total_size": self.total_size, "magic": self.magic, "kind": "BLANK"}
        return {
            "physical_offset": self.physical_offset,
            "total_size": self.total_size,
            "magic": self.magic,
            "body_crc": self.body_crc,
            "crc_ok": self.crc_ok,
            "queue_id": self.queue_id,
            "flag": self.flag,
            "queue_offset": self.queue_offset,
            "sys_flag": self.sys_flag,
            "born_timestamp": self.born_timestamp,
            "born_host": format_host(*self.born_host),
            "store_timestamp": self.store_timestamp,
            "store_host": format_host(*self.store_host),
            "reconsume_times": self.reconsume_times,
            "prepared_transaction_offset": self.prepared_transaction_offset,
            "topic": self.topic,
            "properties": self.properties,
            "body": base64.b64encode(self.body).decode("ascii"),
            "msg_id": self.msg_id,
        }

    def _repr_html_(self) -> str:  # notebooks: every field with its Java name
        return reprs.html("record", self)


def decode_record(
    buf,
    pos: int,
    *,
    file: str = "<bytes>",
    file_base: int = 0,
    check_crc: bool = True,
    read_body: bool = True,
    message_decoder: bool = False,
) -> Record | None:
    """Decode the record at ``buf[pos:]`` (``buf`` is one whole file or mapping).

    Returns ``None`` at the zero tail (8 zero bytes, or fewer than 8 bytes left that
    are all zero).  Raises :class:`RecordError` for anything else that is not a
    valid MESSAGE or BLANK.  CRCs are computed when ``check_crc``; a CRC mismatch is
    *not* raised here (the record is still a record) — callers decide.

    ``message_decoder``: read as Java's ``MessageDecoder.decode`` reads the bytes
    ``getMessage`` serves — each field after the other, ``propertiesLength`` bytes of
    properties and the rest of the record ignored (:attr:`Record.unread_tail`) — where
    the store's own check (``checkMessageAndReturnSize``) wants the fields to fill
    totalSize exactly.
    """
    end = len(buf)
    left = end - pos
    if left < 8:
        if left <= 0 or not any(bytes(buf[pos:end])):
            return None
        raise RecordError(file, pos, TRUNCATED, f"{left} bytes left, less than a record prefix")
    total_size, magic = _PREFIX.unpack_from(buf, pos)
    if total_size > left and not (total_size == 0 and magic == 0):
        # Java checkMessageAndReturnSize looks at totalSize against the bytes left
        # before it reads the magic code
        raise RecordError(file, pos, BAD_SIZE, f"totalSize {total_size} runs past the end of the file ({left} bytes left)", total_size)
    if magic == cl.MAGIC_BLANK:
        # RocketMQ accepts any BLANK and moves to the next file; verify reports one
        # whose size is not the bytes left (BAD_BLANK)
        return Record(physical_offset=file_base + pos, total_size=total_size, magic=magic, file=file, file_offset=pos)
    if magic not in cl.MESSAGE_MAGICS:
        if total_size == 0 and magic == 0:
            return None
        raise RecordError(file, pos, BAD_MAGIC, f"magic code 0x{magic:08X} is not a message or BLANK", total_size)
    if total_size < cl.FIXED_SIZE_V1_IPV4 or total_size > left:
        raise RecordError(
            file, pos, BAD_SIZE, f"totalSize {total_size} is outside [{cl.FIXED_SIZE_V1_IPV4}, {left} bytes left in file]", total_size
        )
    rec_end = pos + total_size
    h = _HEADER.unpack_from(buf, pos)
    sys_flag = h[7]
    p = pos + cl.HEADER_SIZE
    # everything below reads inside [pos, rec_end): check before each variable part
    born_len = 16 if sys_flag & cl.FLAG_BORNHOST_V6 else 4
    store_len = 16 if sys_flag & cl.FLAG_STOREHOST_V6 else 4
    fixed_tail = born_len + 4 + 8 + store_len + 4 + 4 + 8 + 4
    if p + fixed_tail > rec_end:
        raise RecordError(file, pos, SIZE_MISMATCH, f"totalSize {total_size} too small for the fixed fields", total_size)
    born_addr = bytes(buf[p : p + born_len])
    (born_port,) = _I32.unpack_from(buf, p + born_len)
    p += born_len + 4
    (store_ts,) = _I64.unpack_from(buf, p)
    p += 8
    store_addr = bytes(buf[p : p + store_len])
    (store_port,) = _I32.unpack_from(buf, p + store_len)
    p += store_len + 4
    reconsume, prepared = _TAIL.unpack_from(buf, p)
    p += 12
    (body_len,) = _I32.unpack_from(buf, p)
    p += 4
    # Java reads the body only if bodyLength > 0 and calMsgLength counts a negative
    # length as 0: a record whose bodyLength field went negative over an empty body is
    # still accepted (likewise propertiesLength below)
    body_len = max(body_len, 0)
    if p + body_len > rec_end:
        raise RecordError(file, pos, SIZE_MISMATCH, f"bodyLength {body_len} (at file offset {p - 4}) runs past the record's totalSize {total_size}", total_size)
    body_start = p
    p += body_len

    def mismatch(at: int, message: str) -> RecordError:
        # Java checkMessageAndReturnSize compares the body CRC as soon as it has read
        # the body, before it reads the topic and properties and compares calMsgLength
        # with totalSize: a body whose CRC fails is BODY_CRC even when a later length
        # is wrong too (a zeroed page across a record's end does both)
        if check_crc and body_len > 0 and body_crc(bytes(buf[body_start : body_start + body_len])) != h[2]:
            return RecordError(file, pos, BODY_CRC, f"body CRC stored {h[2]} does not match (and {message})", total_size)
        # one record, one offset: the error names the record's start (as BODY_CRC does
        # and as verify reports it), the message the field that disagrees
        return RecordError(file, pos, SIZE_MISMATCH, f"{message} (the field at file offset {at})", total_size)

    v2 = magic == cl.MAGIC_V2
    tlen_size = 2 if v2 else 1
    if p + tlen_size > rec_end:
        raise mismatch(p, "no room for topicLength")
    (topic_len,) = (_I16 if v2 else _I8).unpack_from(buf, p)
    p += tlen_size
    if topic_len < 0 or p + topic_len + 2 > rec_end:
        raise mismatch(p - tlen_size, f"topicLength {topic_len} runs past the record")
    topic_raw = bytes(buf[p : p + topic_len])
    p += topic_len
    (props_len,) = _I16.unpack_from(buf, p)
    p += 2
    props_len = max(props_len, 0)
    if p + props_len != rec_end and not (message_decoder and p + props_len < rec_end):
        raise mismatch(p - 2, f"propertiesLength {props_len} makes the record {p + props_len - pos} bytes, totalSize says {total_size}")
    properties_raw = bytes(buf[p : p + props_len])
    body = bytes(buf[body_start : body_start + body_len]) if read_body else b""
    rec = Record(
        physical_offset=file_base + pos,
        total_size=total_size,
        magic=magic,
        body_crc=h[2],
        queue_id=h[3],
        flag=h[4],
        queue_offset=h[5],
        stored_physical_offset=h[6],
        sys_flag=sys_flag,
        born_timestamp=h[8],
        born_host=(born_addr, born_port),
        store_timestamp=store_ts,
        store_host=(store_addr, store_port),
        reconsume_times=reconsume,
        prepared_transaction_offset=prepared,
        body=body,
        topic_raw=topic_raw,
        properties_raw=properties_raw,
        file=file,
        file_offset=pos,
        unread_tail=rec_end - p - props_len,
    )
    if check_crc:
        if body_len > 0:  # Java checks the body CRC only where there is a body
            rec.body_crc_computed = body_crc(bytes(buf[body_start : body_start + body_len]))
        _check_property_crc(rec, buf, pos)
    return rec


PROPERTY_CRC_TAIL = 20  # "__CRC32#" \x01 10 digits \x02
_CRC_PREFIX = (props.CRC32 + props.NAME_VALUE_SEPARATOR).encode()


def _check_property_crc(rec: Record, buf, pos: int) -> None:
    """The optional whole-record CRC (5.2+): last 20 bytes of the properties are
    ``__CRC32#\\x01`` + 10 digits least-significant first + ``\\x02``, over
    ``record[0 : totalSize-20]``."""
    raw = rec.properties_raw
    if len(raw) < PROPERTY_CRC_TAIL or not raw[-PROPERTY_CRC_TAIL:].startswith(_CRC_PREFIX) or raw[-1:] != b"\x02":
        return
    digits = raw[-11:-1]
    if not digits.isdigit():
        rec.property_crc = -1
        rec.property_crc_computed = None
        return
    rec.property_crc = decode_crc_digits(digits)
    rec.property_crc_computed = body_crc(bytes(buf[pos : pos + rec.total_size - PROPERTY_CRC_TAIL]))


def decode_crc_digits(digits: bytes) -> int:
    """10 ASCII digits, least significant first (Java ``MessageDecoder.createCrc32``)."""
    return int(digits[::-1].decode("ascii"))


def encode_crc_digits(value: int) -> bytes:
    """Inverse of :func:`decode_crc_digits`: always 10 digits, zero-padded on the right."""
    return f"{value:010d}"[::-1].encode("ascii")
