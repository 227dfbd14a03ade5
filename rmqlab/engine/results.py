"""What a put answers (Java ``PutMessageStatus``, ``AppendMessageStatus``,
``PutMessageResult`` and ``AppendMessageResult`` folded into one object)."""

from __future__ import annotations

from enum import Enum

from ..format.msgid import create_message_id


class PutMessageStatus(str, Enum):
    """Java ``org.apache.rocketmq.store.PutMessageStatus``."""

    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPPED_FILE_FAILED = "CREATE_MAPPED_FILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGE_CACHE_BUSY = "OS_PAGE_CACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"

    def __str__(self) -> str:
        return self.value


class AppendMessageStatus(str, Enum):
    """Java ``AppendMessageStatus``: what one append into a mapped file did."""

    PUT_OK = "PUT_OK"
    END_OF_FILE = "END_OF_FILE"
    MESSAGE_SIZE_EXCEEDED = "MESSAGE_SIZE_EXCEEDED"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class PutMessageResult:
    """Java ``PutMessageResult`` + ``AppendMessageResult``.

    ``wrote_offset`` (physical offset), ``wrote_bytes`` (record size, or the whole
    batch's), ``queue_offset`` (Java ``logicsOffset``), ``store_timestamp``,
    ``msg_id`` (offset msgId; for a batch the ids joined by ``,`` as Java does) and
    ``msg_num``.  For a batch ``offsets`` lists every record's physical offset.
    A failed put has ``wrote_offset`` -1.
    """

    __slots__ = ("status", "wrote_offset", "wrote_bytes", "queue_offset", "store_timestamp", "store_host", "msg_num", "offsets", "reason")

    def __init__(
        self,
        status: PutMessageStatus,
        wrote_offset: int = -1,
        wrote_bytes: int = 0,
        queue_offset: int = 0,
        store_timestamp: int = 0,
        store_host: tuple[bytes, int] | None = None,
        msg_num: int = 1,
        offsets: list[int] | None = None,
        reason: str = "",
    ):
        self.status = status
        self.wrote_offset = wrote_offset
        self.wrote_bytes = wrote_bytes
        self.queue_offset = queue_offset
        self.store_timestamp = store_timestamp
        self.store_host = store_host
        self.msg_num = msg_num
        self.offsets = offsets
        self.reason = reason

    @property
    def ok(self) -> bool:
        """Java ``isOk``: PUT_OK (the record is stored; a flush timeout still stored it)."""
        return self.status is PutMessageStatus.PUT_OK

    @property
    def msg_id(self) -> str | None:
        if self.wrote_offset < 0 or self.store_host is None:
            return None
        addr, port = self.store_host
        if self.offsets is not None and len(self.offsets) > 1:
            return ",".join(create_message_id(addr, port, o) for o in self.offsets)
        return create_message_id(addr, port, self.wrote_offset)

    def to_dict(self) -> dict:
        d = {
            "status": self.status.value,
            "physical_offset": self.wrote_offset,
            "size": self.wrote_bytes,
            "queue_offset": self.queue_offset,
            "msg_id": self.msg_id,
            "store_timestamp": self.store_timestamp,
        }
        if self.msg_num != 1:
            d["msg_num"] = self.msg_num
        if self.reason:
            d["reason"] = self.reason
        return d

    def __repr__(self) -> str:
        return f"PutMessageResult({self.status.value}, offset={self.wrote_offset}, size={self.wrote_bytes}, queue_offset={self.queue_offset})"
