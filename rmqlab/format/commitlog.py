"""CommitLog record layout (spec section 1) — the single source of truth.

Java: ``org.apache.rocketmq.store.CommitLog`` (``DefaultAppendMessageCallback.doAppend``
writes, ``checkMessageAndReturnSize`` reads) and ``MessageDecoder``.

One record, big-endian, no padding (V1 magic, IPv4 hosts shown)::

    ┌────────────┬────────────┬────────────┬────────────┬────────────┐
    │ totalSize  │ magicCode  │ bodyCRC    │ queueId    │ flag       │  5 × int32
    ├────────────┴────────────┼────────────┴────────────┼────────────┤
    │ queueOffset  int64      │ physicalOffset  int64   │ sysFlag    │
    ├─────────────────────────┼─────────────────────────┴────────────┤
    │ bornTimestamp int64     │ bornHost  addr(4|16) + port int32    │
    ├─────────────────────────┼──────────────────────────────────────┤
    │ storeTimestamp int64    │ storeHost addr(4|16) + port int32    │
    ├────────────┬────────────┴────────────┬─────────────────────────┤
    │ reconsume  │ preparedTransactionOffs │ bodyLength int32 + body │
    ├────────────┴─────────────┬───────────┴─────────────────────────┤
    │ topicLength (1 V1|2 V2)  │ topic                               │
    ├──────────────────────────┼─────────────────────────────────────┤
    │ propertiesLength int16   │ properties  name\\x01value\\x02 ...   │
    └──────────────────────────┴─────────────────────────────────────┘

A file ends with a BLANK record ``(int32 bytesLeft, int32 0xCBD43194)`` when the
next record does not fit; the rest of the file keeps whatever it held.

Schemas use only ``this``/``len_`` expressions (no lambdas) so ``.compile()`` works;
but compiled parsers skip checks, so damaged files are always parsed uncompiled.
"""

from __future__ import annotations

from construct import (
    Bytes,
    Const,
    IfThenElse,
    Int8sb,
    Int16sb,
    Int32sb,
    Int32ub,
    Int64sb,
    Rebuild,
    Struct,
    len_,
    this,
)

# --- magic codes (Java: MessageDecoder.MESSAGE_MAGIC_CODE / _V2, CommitLog.BLANK_MAGIC_CODE)
MAGIC_V1 = 0xDAA320A7  # Java MESSAGE_MAGIC_CODE: 1-byte topic length
MAGIC_V2 = 0xDAA320AB  # Java MESSAGE_MAGIC_CODE_V2 (5.1+): 2-byte topic length
MAGIC_BLANK = 0xCBD43194  # Java BLANK_MAGIC_CODE: end of file, continue at the next one
MESSAGE_MAGICS = (MAGIC_V1, MAGIC_V2)

# --- sysFlag bits (Java: MessageSysFlag)
FLAG_COMPRESSED = 0x1  # COMPRESSED_FLAG
FLAG_MULTI_TAGS = 0x2  # MULTI_TAGS_FLAG
TRANSACTION_MASK = 0xC
TRANSACTION_NOT_TYPE = 0x0  # TRANSACTION_NOT_TYPE
TRANSACTION_PREPARED_TYPE = 0x4  # TRANSACTION_PREPARED_TYPE
TRANSACTION_COMMIT_TYPE = 0x8  # TRANSACTION_COMMIT_TYPE
TRANSACTION_ROLLBACK_TYPE = 0xC  # TRANSACTION_ROLLBACK_TYPE
FLAG_BORNHOST_V6 = 0x10  # BORNHOST_V6_FLAG
FLAG_STOREHOST_V6 = 0x20  # STOREHOSTADDRESS_V6_FLAG
FLAG_NEED_UNWRAP = 0x40  # NEED_UNWRAP_FLAG
FLAG_INNER_BATCH = 0x80  # INNER_BATCH_FLAG
COMPRESSION_TYPE_MASK = 0x700  # COMPRESSION_TYPE_COMPARATOR

TRANSACTION_NAMES = {0x0: "NOT", 0x4: "PREPARED", 0x8: "COMMIT", 0xC: "ROLLBACK"}
#: Java MessageSysFlag's compression types (the bits of COMPRESSION_TYPE_COMPARATOR):
#: CompressionType.LZ4 = 1, ZSTD = 2, ZLIB = 3, shifted by 8
COMPRESSION_NAMES = {0x100: "LZ4", 0x200: "ZSTD", 0x300: "ZLIB"}
_FLAG_NAMES = ((FLAG_COMPRESSED, "COMPRESSED"), (FLAG_MULTI_TAGS, "MULTI_TAGS"), (FLAG_BORNHOST_V6, "BORNHOST_V6"),
               (FLAG_STOREHOST_V6, "STOREHOSTADDRESS_V6"), (FLAG_NEED_UNWRAP, "NEED_UNWRAP"), (FLAG_INNER_BATCH, "INNER_BATCH"))


def compression_of(sys_flag: int) -> str | None:
    """The compression of a record's body: None when COMPRESSED is not set; Java
    ``MessageSysFlag.getCompressionType``: type bits 0 (older stores) and 3 are ZLIB."""
    if not sys_flag & FLAG_COMPRESSED:
        return None
    comp = sys_flag & COMPRESSION_TYPE_MASK
    return "ZLIB" if comp == 0 else COMPRESSION_NAMES.get(comp, f"0x{comp:X}")


def sys_flag_names(sys_flag: int) -> list[str]:
    """Every bit of a sysFlag named as Java's MessageSysFlag names it: the flags set,
    the transaction type (TRANSACTION_NOT_TYPE included), the compression type, and
    any bit Java does not define as ``0x...``."""
    names = [name for bit, name in _FLAG_NAMES if sys_flag & bit]
    names.append(f"TRANSACTION_{TRANSACTION_NAMES[sys_flag & TRANSACTION_MASK]}_TYPE")
    comp = sys_flag & COMPRESSION_TYPE_MASK
    if comp:
        names.append("COMPRESSION_" + COMPRESSION_NAMES.get(comp, f"0x{comp:X}"))
    known = TRANSACTION_MASK | COMPRESSION_TYPE_MASK
    for bit, _ in _FLAG_NAMES:
        known |= bit
    if sys_flag & ~known & 0xFFFFFFFF:
        names.append(f"0x{sys_flag & ~known & 0xFFFFFFFF:X}")
    return names

#: bytes of a V1 record with IPv4 hosts and empty body, topic and properties
#: (Java: CommitLog.calMsgLength with all lengths 0): 4+4+4+4+4+8+8+4+8+8+8+8+4+8+4+1+2
FIXED_SIZE_V1_IPV4 = 91
IPV6_EXTRA = 12  # a 20-byte host instead of 8
BLANK_SIZE = 8  # Java END_FILE_MIN_BLANK_LENGTH: a record must leave room for it

#: Limits (Java: MessageStoreConfig.maxMessageSize, Short.MAX_VALUE, TopicValidator)
MAX_MESSAGE_SIZE_DEFAULT = 4 * 1024 * 1024
MAX_PROPERTIES_SIZE = 32767
MAX_TOPIC_LENGTH_V1 = 127


def host_size(sys_flag: int, v6_bit: int) -> int:
    """Bytes of a host field (address + int32 port) for the given sysFlag bit."""
    return 20 if sys_flag & v6_bit else 8


def record_size(body_len: int, topic_len: int, properties_len: int, sys_flag: int = 0, v2: bool = False) -> int:
    """totalSize of a record (Java: ``CommitLog.calMsgLength``)."""
    return (
        FIXED_SIZE_V1_IPV4
        + body_len
        + topic_len
        + properties_len
        + (1 if v2 else 0)
        + (IPV6_EXTRA if sys_flag & FLAG_BORNHOST_V6 else 0)
        + (IPV6_EXTRA if sys_flag & FLAG_STOREHOST_V6 else 0)
    )


# A socket address: Java writes InetAddress.getAddress() then the port as int32.
HostV4 = Struct("address" / Bytes(4), "port" / Int32sb)
HostV6 = Struct("address" / Bytes(16), "port" / Int32sb)

#: The fixed-size prefix every message record starts with.  The bulk decoder in
#: ``rmqlab.scan.decode`` derives its numpy dtype from these fields.
RecordHeader = Struct(
    "total_size" / Int32sb * "Java totalSize: whole record, this field included",
    "magic" / Int32ub * "Java magicCode: MAGIC_V1, MAGIC_V2 or MAGIC_BLANK",
    "body_crc" / Int32sb * "Java bodyCRC: zlib.crc32(body) & 0x7FFFFFFF",
    "queue_id" / Int32sb * "Java queueId",
    "flag" / Int32sb * "Java flag (user flag)",
    "queue_offset" / Int64sb * "Java queueOffset: index in the consume queue",
    "physical_offset" / Int64sb * "Java physicalOffset: this record's commitlog offset",
    "sys_flag" / Int32sb * "Java sysFlag",
    "born_timestamp" / Int64sb * "Java bornTimestamp (ms, producer clock)",
)
HEADER_SIZE = RecordHeader.sizeof()  # 48

# Size of the whole record, rebuilt from the parts when building.  Expressed with
# ``this``/``len_`` arithmetic (no lambda) so the schema can still be compiled.
_total_size_expr = (
    FIXED_SIZE_V1_IPV4
    + len_(this.body)
    + len_(this.topic)
    + len_(this.properties)
    + (this.magic == MAGIC_V2) * 1
    + ((this.sys_flag & FLAG_BORNHOST_V6) // FLAG_BORNHOST_V6) * IPV6_EXTRA
    + ((this.sys_flag & FLAG_STOREHOST_V6) // FLAG_STOREHOST_V6) * IPV6_EXTRA
)

#: A message record (V1 or V2, IPv4 or IPv6 hosts).  ``topic`` and ``properties``
#: stay raw bytes here: decoding text is the properties codec's job, and a
#: forensic reader must be able to show bytes that are not valid UTF-8.
MessageRecord = Struct(
    "total_size" / Rebuild(Int32sb, _total_size_expr) * "Java totalSize",
    "magic" / Int32ub * "Java magicCode",
    "body_crc" / Int32sb * "Java bodyCRC",
    "queue_id" / Int32sb * "Java queueId",
    "flag" / Int32sb * "Java flag",
    "queue_offset" / Int64sb * "Java queueOffset",
    "physical_offset" / Int64sb * "Java physicalOffset",
    "sys_flag" / Int32sb * "Java sysFlag",
    "born_timestamp" / Int64sb * "Java bornTimestamp",
    "born_host" / IfThenElse(this.sys_flag & FLAG_BORNHOST_V6, HostV6, HostV4) * "Java bornHost",
    "store_timestamp" / Int64sb * "Java storeTimestamp",
    "store_host" / IfThenElse(this.sys_flag & FLAG_STOREHOST_V6, HostV6, HostV4) * "Java storeHostAddress",
    "reconsume_times" / Int32sb * "Java reconsumeTimes",
    "prepared_transaction_offset" / Int64sb * "Java preparedTransactionOffset",
    "len_body" / Rebuild(Int32sb, len_(this.body)) * "Java bodyLength",
    "body" / Bytes(this.len_body) * "Java body (as stored; compressed if sysFlag says so)",
    "len_topic" / Rebuild(IfThenElse(this.magic == MAGIC_V2, Int16sb, Int8sb), len_(this.topic)) * "Java topicLength",
    "topic" / Bytes(this.len_topic) * "Java topic (UTF-8)",
    "len_properties" / Rebuild(Int16sb, len_(this.properties)) * "Java propertiesLength",
    "properties" / Bytes(this.len_properties) * "Java propertiesString (UTF-8)",
)

#: The end-of-file filler (Java: CommitLog BLANK_MAGIC_CODE record).
BlankRecord = Struct(
    "total_size" / Int32sb * "Java totalSize: bytes from here to the end of the file",
    "magic" / Const(MAGIC_BLANK, Int32ub) * "Java BLANK_MAGIC_CODE",
)

#: The 8 bytes every record starts with; enough to tell what comes next.
RecordPrefix = Struct("total_size" / Int32sb, "magic" / Int32ub)
