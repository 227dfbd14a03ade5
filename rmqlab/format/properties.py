"""The message properties codec (Java: ``MessageDecoder.messageProperties2String`` /
``string2messageProperties``).

On disk: ``name \\x01 value \\x02`` repeated, every pair ended by ``\\x02``, UTF-8.
Java writes them in HashMap order, so compare properties as maps and bytes as bytes.

Two views are kept apart on purpose:

* :func:`decode_pairs` — every pair exactly as on disk, in order, empty names and
  values included (what a forensic reader shows);
* :func:`to_java_map` — what RocketMQ's parser makes of them: pairs with an empty
  name or value skipped, a later duplicate wins.
"""

from __future__ import annotations

from typing import Iterable, Mapping

NAME_VALUE_SEPARATOR = "\x01"  # Java MessageDecoder.NAME_VALUE_SEPARATOR
PROPERTY_SEPARATOR = "\x02"  # Java MessageDecoder.PROPERTY_SEPARATOR

# Property names (Java: MessageConst.PROPERTY_*)
KEYS = "KEYS"
TAGS = "TAGS"
UNIQ_KEY = "UNIQ_KEY"  # PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX
DELAY = "DELAY"  # PROPERTY_DELAY_TIME_LEVEL
REAL_TOPIC = "REAL_TOPIC"
REAL_QID = "REAL_QID"
TRAN_MSG = "TRAN_MSG"  # PROPERTY_TRANSACTION_PREPARED
PGROUP = "PGROUP"  # PROPERTY_PRODUCER_GROUP
WAIT = "WAIT"  # PROPERTY_WAIT_STORE_MSG_OK
INNER_NUM = "INNER_NUM"  # PROPERTY_INNER_NUM: the messages of an inner batch (queue.type=BatchCQ)
INNER_BASE = "INNER_BASE"  # PROPERTY_INNER_BASE: the queue offset of an inner batch's first message
INNER_MULTI_DISPATCH = "INNER_MULTI_DISPATCH"  # PROPERTY_INNER_MULTI_DISPATCH: the LMQ queues a record is dispatched to as well
INNER_MULTI_QUEUE_OFFSET = "INNER_MULTI_QUEUE_OFFSET"  # PROPERTY_INNER_MULTI_QUEUE_OFFSET: its queue offset in each, same order
LMQ_DISPATCH_SEPARATOR = ","  # MixAll.LMQ_DISPATCH_SEPARATOR
CRC32 = "__CRC32#"  # MessageConst.PROPERTY_CRC32 (5.2+)
KEY_SEPARATOR = " "  # MessageConst.KEY_SEPARATOR
TRANSACTION_ID = "__transactionId__"  # MessageConst.PROPERTY_TRANSACTION_ID
TRANS_OFFSET = "TRANS_OFFSET"  # MessageConst.PROPERTY_TRANS_OFFSET: an op message's half message offset (5.4+ RocksDB transactions)


def decode_text(raw: bytes) -> str:
    """UTF-8 as Java decodes it: invalid sequences become U+FFFD, never an exception."""
    return raw.decode("utf-8", errors="replace")


def decode_pairs(raw: bytes) -> list[tuple[str, str]]:
    """Every ``name\\x01value`` pair on disk, in order.

    A segment without ``\\x01`` is not a pair (Java skips it too); a trailing segment
    not ended by ``\\x02`` is still returned, as Java's parser does.
    """
    pairs: list[tuple[str, str]] = []
    for segment in raw.split(b"\x02"):
        if not segment:
            continue
        sep = segment.find(b"\x01")
        if sep < 0:
            continue
        pairs.append((decode_text(segment[:sep]), decode_text(segment[sep + 1 :])))
    return pairs


def to_java_map(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The properties RocketMQ sees: empty names/values skipped, later pairs win."""
    out: dict[str, str] = {}
    for name, value in pairs:
        if name and value:
            out[name] = value
    return out


def to_ordered_dict(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Pairs as a dict in on-disk order of first appearance; a later duplicate's value
    wins (as in Java) but empty values are kept, because they are on disk."""
    out: dict[str, str] = {}
    for name, value in pairs:
        out[name] = value
    return out


def encode(properties: Mapping[str, str] | Iterable[tuple[str, str]]) -> bytes:
    """``name\\x01value\\x02`` for every pair, in the order given (Java
    ``MessageDecoder.messageProperties2String``)."""
    if type(properties) is dict:
        return encode_dict(properties)
    items = properties.items() if isinstance(properties, Mapping) else properties
    return "".join([f"{k}{NAME_VALUE_SEPARATOR}{v}{PROPERTY_SEPARATOR}" for k, v in items]).encode()


def encode_dict(properties: dict[str, str]) -> bytes:
    """:func:`encode` for a dict, on every put's path: as lean as Python allows."""
    return "".join([f"{k}{NAME_VALUE_SEPARATOR}{v}{PROPERTY_SEPARATOR}" for k, v in properties.items()]).encode()


def split_keys(keys: str | None) -> list[str]:
    """Non-empty KEYS tokens (a double space yields an empty key, which is skipped)."""
    if not keys:
        return []
    return [k for k in keys.split(KEY_SEPARATOR) if k]
