"""Checks a put goes through before anything is written.

Java: the broker's ``HookUtils.checkBeforePutMessage`` and
``AbstractSendMessageProcessor.msgCheck`` (topic), ``MessageExtEncoder.encode``
(body and record size, properties length), ``DefaultMessageStore.checkStoreStatus``.

* topic: not empty, characters ``[%|a-zA-Z0-9_-]`` (Java ``TopicValidator``), at
  most 127 UTF-8 bytes — or, when ``autoMessageVersionOnTopicLen`` is on (the
  default), up to 32767 written as a V2 record.  (The 5.x broker refuses long
  topics other than retry topics before they reach the store; the store itself
  writes V2.  rmqlab follows the store; switch the setting off to refuse them.)
  A departure: a topic longer than a file name may be on the store's filesystem
  (``NAME_MAX``, 255 bytes on Linux's) is refused too.  Its consume queue is the
  directory ``consumequeue/<topic>``, which cannot be made: Java's store writes the
  record and then fails to dispatch it (``ConsumeQueue.putMessagePositionInfoWrapper``
  retries, then ``makeLogicsQueueError``: no put succeeds after it), and a store
  holding such a record cannot be dispatched to its end again.
* body: at most ``maxMessageSize``; the whole record at most ``maxMessageSize`` +
  64 KiB (Java ``MessageExtEncoder``'s two limits) → ``MESSAGE_ILLEGAL``.
* properties (``__CRC32#`` reservation included): at most 32767 bytes →
  ``PROPERTIES_SIZE_EXCEEDED``.
* a record that could never fit in one commitlog file (with the 8 bytes a BLANK
  needs) → ``MESSAGE_ILLEGAL`` (Java would fail the put after rolling a file).
"""

from __future__ import annotations

import re

from ..config import MessageStoreConfig
from ..files.mapped_file_queue import name_max, unmakeable
from ..format import commitlog as cl
from .results import PutMessageStatus

TOPIC_PATTERN = re.compile(r"^[%|a-zA-Z0-9_-]+$")  # Java TopicValidator.VALID_PATTERN_STR
TOPIC_MAX_LENGTH_V2 = 32767  # Short.MAX_VALUE
BODY_SIZE_SLACK = 64 * 1024  # Java MessageExtEncoder: maxMessageSize = body limit + 64 KiB


class Validator:
    """Java's put checks, with the topic verdicts cached (they are per topic)."""

    def __init__(self, config: MessageStoreConfig):
        self.config = config
        self.max_body = config.max_message_size
        self.max_record = config.max_message_size + BODY_SIZE_SLACK
        self.max_fit = config.mapped_file_size_commit_log - cl.BLANK_SIZE
        self.max_topic_dir = name_max(config.store_path_root_dir)  # consumequeue/<topic> must be a directory
        self._topics: dict[str, tuple[PutMessageStatus, str, bytes]] = {}

    def check_topic(self, topic: str) -> tuple[PutMessageStatus, str, bytes]:
        """``(status, reason, topic as UTF-8)``; cached per topic."""
        hit = self._topics.get(topic)
        if hit is not None:
            return hit
        raw = topic.encode("utf-8") if isinstance(topic, str) else b""
        if not topic or not isinstance(topic, str):
            out = (PutMessageStatus.MESSAGE_ILLEGAL, "topic is empty", raw)
        elif not TOPIC_PATTERN.match(topic):
            out = (PutMessageStatus.MESSAGE_ILLEGAL, f"topic {topic!r} has characters outside [%|a-zA-Z0-9_-]", raw)
        elif len(raw) > TOPIC_MAX_LENGTH_V2:
            out = (PutMessageStatus.MESSAGE_ILLEGAL, f"topic is {len(raw)} bytes, more than {TOPIC_MAX_LENGTH_V2}", raw)
        elif unmakeable(raw, self.max_topic_dir):
            out = (PutMessageStatus.MESSAGE_ILLEGAL, f"topic is {len(raw)} bytes, more than the {self.max_topic_dir} a file name may have on the store's "
                   "filesystem: its consume queue directory could not be made", raw)
        elif len(raw) > cl.MAX_TOPIC_LENGTH_V1 and not self.config.auto_message_version_on_topic_len:
            out = (PutMessageStatus.MESSAGE_ILLEGAL, f"topic is {len(raw)} bytes, more than 127 and autoMessageVersionOnTopicLen=false", raw)
        else:
            out = (PutMessageStatus.PUT_OK, "", raw)
        if len(self._topics) < 100_000:
            self._topics[topic] = out
        return out

    def check_sizes(self, body_len: int, props_len: int, record_len: int) -> tuple[PutMessageStatus, str] | None:
        """``None`` when fine, else ``(status, reason)``; ``props_len`` includes the
        ``__CRC32#`` reservation when that is on."""
        if body_len > self.max_body:
            return PutMessageStatus.MESSAGE_ILLEGAL, f"body is {body_len} bytes, more than maxMessageSize={self.max_body}"
        if props_len > cl.MAX_PROPERTIES_SIZE:
            return PutMessageStatus.PROPERTIES_SIZE_EXCEEDED, f"properties are {props_len} bytes, more than {cl.MAX_PROPERTIES_SIZE}"
        if record_len > self.max_record:
            return PutMessageStatus.MESSAGE_ILLEGAL, f"record is {record_len} bytes, more than maxMessageSize+64KiB={self.max_record}"
        if record_len > self.max_fit:
            return PutMessageStatus.MESSAGE_ILLEGAL, f"record of {record_len} bytes cannot fit in a {self.config.mapped_file_size_commit_log}-byte commitlog file"
        return None
