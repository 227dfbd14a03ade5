"""What a put answers (Java ``PutMessageStatus``, ``AppendMessageStatus``,
``PutMessageResult`` and ``AppendMessageResult`` folded into one object)."""

from __future__ import annotations

from enum import Enum

from ..format.msgid import create_message_id


class PutMessageStatus(str, Enum):
    """Java ``org.apache.rocketmq.store.PutMessageStatus``: a put's verdict.

    >>> from rmqlab.engine import PutMessageStatus
    >>> PutMessageStatus("FLUSH_DISK_TIMEOUT") is PutMessageStatus.FLUSH_DISK_TIMEOUT
    True
    """

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


class PutMessageResult(tuple):
    """Java ``PutMessageResult`` + ``AppendMessageResult``.

    ``status``, ``wrote_offset`` (physical offset), ``wrote_bytes`` (record size, or
    the whole batch's), ``queue_offset`` (Java ``logicsOffset``), ``store_timestamp``,
    ``msg_id`` (offset msgId; for a batch the ids joined by ``,`` as Java does),
    ``msg_num``, ``offsets`` (a batch's record offsets) and ``reason`` (why a put
    failed).  A failed put has ``wrote_offset`` -1.  (A tuple underneath: a put
    answers hundreds of thousands of times a second.)

    >>> import tempfile
    >>> from rmqlab.engine import Message, MessageStore
    >>> with MessageStore.open(tempfile.mkdtemp()) as store:
    ...     ok = store.put(Message("Orders", b"a"))
    ...     refused = store.put(Message("Orders!", b"a"))
    >>> ok
    PutMessageResult(PUT_OK, offset=0, size=98, queue_offset=0)
    >>> refused.status.name, refused.wrote_offset, refused.reason
    ('MESSAGE_ILLEGAL', -1, "topic 'Orders!' has characters outside [%|a-zA-Z0-9_-]")
    """

    __slots__ = ()

    def __new__(
        cls,
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
        return tuple.__new__(cls, (status, wrote_offset, wrote_bytes, queue_offset, store_timestamp, store_host, msg_num, offsets, reason))

    status = property(lambda self: self[0])
    wrote_offset = property(lambda self: self[1])
    wrote_bytes = property(lambda self: self[2])
    queue_offset = property(lambda self: self[3])
    store_timestamp = property(lambda self: self[4])
    store_host = property(lambda self: self[5])
    msg_num = property(lambda self: self[6])
    offsets = property(lambda self: self[7])
    reason = property(lambda self: self[8])

    def with_reason(self, reason: str) -> "PutMessageResult":
        return PutMessageResult(*self[:8], reason)

    @property
    def ok(self) -> bool:
        """Java ``isOk``: PUT_OK."""
        return self[0] is PutMessageStatus.PUT_OK

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
