"""A message to put (Java ``MessageExtBrokerInner``), and how to read one from the
JSON lines ``rmqlab dump --json`` prints.

``properties`` is a dict written in its own order (Java writes HashMap order; to
reproduce a record byte for byte pass the on-disk order, or the raw bytes as
``properties_raw``).  ``store_timestamp`` and ``store_host`` left ``None`` are
filled by the store (clock and configured host), as a broker does.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Mapping

from ..errors import RmqlabError
from ..format.msgid import parse_host


class MessageInputError(RmqlabError):
    """A message description (e.g. a JSON line) that cannot be put."""


class Message:
    """Java ``MessageExtBrokerInner``: everything the store needs to write one record."""

    __slots__ = (
        "topic",
        "body",
        "properties",
        "properties_raw",
        "queue_id",
        "flag",
        "sys_flag",
        "born_timestamp",
        "born_host",
        "store_timestamp",
        "store_host",
        "reconsume_times",
        "prepared_transaction_offset",
    )

    def __init__(
        self,
        topic: str,
        body: bytes = b"",
        properties: Mapping[str, str] | None = None,
        *,
        queue_id: int = 0,
        flag: int = 0,
        sys_flag: int = 0,
        born_timestamp: int | None = None,
        born_host: tuple[bytes, int] | None = None,
        store_timestamp: int | None = None,
        store_host: tuple[bytes, int] | None = None,
        reconsume_times: int = 0,
        prepared_transaction_offset: int = 0,
        properties_raw: bytes | None = None,
    ):
        self.topic = topic
        self.body = body
        self.properties = properties
        self.properties_raw = properties_raw
        self.queue_id = queue_id
        self.flag = flag
        self.sys_flag = sys_flag
        self.born_timestamp = born_timestamp
        self.born_host = born_host
        self.store_timestamp = store_timestamp
        self.store_host = store_host
        self.reconsume_times = reconsume_times
        self.prepared_transaction_offset = prepared_transaction_offset

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "<message>") -> "Message":
        """From the keys of ``rmqlab dump --json`` (see ``Record.to_dict``).

        Used: ``topic``, ``queue_id``, ``flag``, ``sys_flag``, ``properties`` (object,
        in the order given), ``body`` (base64), and when present ``born_timestamp``,
        ``born_host``, ``store_timestamp``, ``store_host``, ``reconsume_times``,
        ``prepared_transaction_offset``.  Keys the store computes itself
        (``physical_offset``, ``queue_offset``, ``body_crc``, ``msg_id``, …) are ignored.
        """
        if not isinstance(d, Mapping):
            raise MessageInputError(f"{where}: expected a JSON object, got {type(d).__name__}")
        if d.get("kind") == "BLANK":
            raise MessageInputError(f"{where}: a BLANK end-of-file record is not a message (skip it)")
        topic = d.get("topic")
        if not isinstance(topic, str):
            raise MessageInputError(f"{where}: 'topic' (a string) is required")
        try:
            body = base64.b64decode(d.get("body") or "", validate=True)
        except (binascii.Error, ValueError, TypeError) as exc:
            raise MessageInputError(f"{where}: 'body' is not base64: {exc}") from None
        props = d.get("properties")
        if props is None:
            props = {}
        if not isinstance(props, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in props.items()):
            raise MessageInputError(f"{where}: 'properties' must be an object of strings")

        def _int(name: str, default: int | None = 0) -> int | None:
            v = d.get(name)
            if v is None:
                return default
            if isinstance(v, bool) or not isinstance(v, int):
                raise MessageInputError(f"{where}: {name!r} must be an integer, got {v!r}")
            return v

        def _host(name: str) -> tuple[bytes, int] | None:
            v = d.get(name)
            if v is None:
                return None
            try:
                return parse_host(str(v))
            except ValueError as exc:
                raise MessageInputError(f"{where}: {name!r} is not host:port: {exc}") from None

        return cls(
            topic,
            body,
            dict(props),
            queue_id=_int("queue_id"),
            flag=_int("flag"),
            sys_flag=_int("sys_flag"),
            born_timestamp=_int("born_timestamp", None),
            born_host=_host("born_host"),
            store_timestamp=_int("store_timestamp", None),
            store_host=_host("store_host"),
            reconsume_times=_int("reconsume_times"),
            prepared_transaction_offset=_int("prepared_transaction_offset"),
        )

    def __repr__(self) -> str:
        return f"Message({self.topic!r}, queue_id={self.queue_id}, body={len(self.body)} bytes)"
