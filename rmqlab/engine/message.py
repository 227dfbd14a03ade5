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
from typing import Any, Mapping, Sequence

from ..errors import RmqlabError
from ..format.msgid import parse_host


class MessageInputError(RmqlabError):
    """A message description (e.g. a JSON line) that cannot be put.

    >>> from rmqlab.engine import Message, MessageInputError
    >>> try:
    ...     Message.from_dict({"topic": "Orders", "body": "not base64!"}, where="input.jsonl:3")
    ... except MessageInputError as err:
    ...     print(err)
    input.jsonl:3: 'body' is not base64: ...
    """


class Message:
    """Java ``MessageExtBrokerInner``: everything the store needs to write one record.

    Only the topic is required; the store fills in what a broker would (timestamps,
    hosts, the queue offset) when it puts it.  :meth:`from_dict` reads what ``rmqlab dump
    --json`` writes.

    >>> from rmqlab.engine import Message
    >>> m = Message("Orders", b"paid", {"TAGS": "paid", "KEYS": "order-7"}, queue_id=1)
    >>> m.topic, m.queue_id, m.properties["KEYS"]
    ('Orders', 1, 'order-7')
    >>> Message.from_dict({"topic": "Orders", "body": "cGFpZA==", "queue_id": 2}).body
    b'paid'
    """

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


class MessageBatch:
    """Java ``MessageExtBatch``: one producer batch for one topic and one queue.

    ``body`` holds the entries as the producer encoded them (Java
    ``MessageBatch.encode()``, layout in :mod:`rmqlab.format.batch`): each entry's
    flag, body and properties.  Everything else is the batch's: ``topic``,
    ``queue_id``, ``sys_flag``, ``born_timestamp`` (``None``: the store time),
    ``born_host``, ``store_host`` (``None``: the store's) and ``properties`` (appended
    to every entry's, as the broker's batch properties are).

    Build one with :meth:`from_messages` (what the client does), or from a body
    received as bytes (``offsets`` then come from walking it; a bad body is refused
    when put, naming the byte).  :meth:`MessageStore.put_batch` writes it with one
    lock, consecutive queue offsets and, as in Java, all in one commitlog file.

    >>> import tempfile
    >>> from rmqlab.engine import Message, MessageBatch, MessageStore
    >>> batch = MessageBatch.from_messages([Message("Orders", b"x"), Message("Orders", b"y")], queue_id=2)
    >>> with MessageStore.open(tempfile.mkdtemp()) as store:
    ...     r = store.put_batch(batch)
    >>> r.status.name, r.msg_num, r.queue_offset, r.offsets
    ('PUT_OK', 2, 0, [0, 98])
    """

    __slots__ = ("topic", "body", "queue_id", "sys_flag", "born_timestamp", "born_host", "store_host", "properties", "offsets", "_layout")

    def __init__(
        self,
        topic: str,
        body: bytes,
        *,
        queue_id: int = 0,
        sys_flag: int = 0,
        born_timestamp: int | None = None,
        born_host: tuple[bytes, int] | None = None,
        store_host: tuple[bytes, int] | None = None,
        properties: Mapping[str, str] | None = None,
        offsets=None,
    ):
        self.topic = topic
        self.body = body
        self.queue_id = queue_id
        self.sys_flag = sys_flag
        self.born_timestamp = born_timestamp
        self.born_host = born_host
        self.store_host = store_host
        self.properties = properties
        self.offsets = offsets
        self._layout = None

    @classmethod
    def from_messages(cls, messages: Sequence[Message], *, queue_id: int | None = None) -> "MessageBatch":
        """Java ``MessageBatch.generateFromList`` + ``encode``: the messages must share
        a topic and (unless ``queue_id`` is given) a queue, carry no ``DELAY`` (Java:
        "TimeDelayLevel is not supported for batching") and nothing that is the
        batch's (sysFlag, hosts, timestamps, reconsumeTimes)."""
        from ..format import properties as props
        from ..format.batch import encode_entries

        if not messages:
            raise MessageInputError("a batch needs at least one message")
        first = messages[0]
        topic = first.topic
        qid = first.queue_id if queue_id is None else queue_id
        entries = []
        for i, m in enumerate(messages):
            if m.topic != topic:
                raise MessageInputError(f"message {i}: topic {m.topic!r}, but a batch has one topic ({topic!r})")
            if queue_id is None and m.queue_id != qid:
                raise MessageInputError(f"message {i}: queue {m.queue_id}, but a batch goes to one queue ({qid}); pass queue_id= to choose it")
            if m.sys_flag or m.born_host is not None or m.store_host is not None or m.store_timestamp is not None or m.born_timestamp is not None or m.reconsume_times or m.prepared_transaction_offset:
                raise MessageInputError(f"message {i}: sysFlag, hosts, timestamps, reconsumeTimes and transaction offsets belong to the batch, not to its messages")
            if m.properties_raw is not None:
                raw = bytes(m.properties_raw)
                if props.DELAY in props.to_java_map(props.decode_pairs(raw)):
                    raise MessageInputError(f"message {i}: DELAY is not supported for batches (Java MessageBatch)")
            elif m.properties:
                if props.DELAY in m.properties:
                    raise MessageInputError(f"message {i}: DELAY is not supported for batches (Java MessageBatch)")
                raw = props.encode(m.properties)
            else:
                raw = b""
            if m.body is None:
                raise MessageInputError(f"message {i}: body is null")
            entries.append((m.flag, bytes(m.body), raw))
        body, offsets = encode_entries(entries)
        return cls(topic, body, queue_id=qid, offsets=offsets)

    def layout(self):
        """The entries' :class:`~rmqlab.format.batch.BatchLayout` (validated once;
        raises :class:`~rmqlab.format.batch.BatchFormatError` naming the byte)."""
        if self._layout is None:
            from ..format.batch import BatchLayout

            self._layout = BatchLayout.of(self.body, self.offsets, where=f"<batch for {self.topic}>")
        return self._layout

    def messages(self) -> list[Message]:
        """The entries as :class:`Message` s (with the batch's fields)."""
        lay = self.layout()
        out = []
        mv = memoryview(self.body)
        ends = (lay.start + lay.total_size).tolist()  # an entry ends with its properties
        for s, e, flag, blen, plen in zip(lay.body_start.tolist(), ends, lay.flag.tolist(), lay.body_len.tolist(), lay.props_len.tolist()):
            out.append(
                Message(
                    self.topic, bytes(mv[s : s + blen]), None, properties_raw=bytes(mv[e - plen : e]), queue_id=self.queue_id, flag=flag,
                    sys_flag=self.sys_flag, born_timestamp=self.born_timestamp, born_host=self.born_host, store_host=self.store_host,
                )
            )
        return out

    def __len__(self) -> int:
        return len(self.layout())

    def __repr__(self) -> str:
        return f"MessageBatch({self.topic!r}, queue_id={self.queue_id}, {len(self.body)} bytes)"
