"""Broker metadata under ``config/`` in RocketMQ's JSON shapes, written safely.

Java: ``MixAll.string2File`` (write ``X.tmp``, copy the old ``X`` to ``X.bak``,
move ``X.tmp`` to ``X``) used by ``ConfigManager.persist`` for
``TopicConfigManager`` (``topics.json``), ``ConsumerOffsetManager``
(``consumerOffset.json``) and ``ScheduleMessageService`` (``delayOffset.json``).
rmqlab adds what makes that crash-safe: the temporary file is fsynced, the move is
an atomic ``os.replace``, and the directory is fsynced; so at every instant either
the old or the new file is complete, and ``.bak`` holds the previous version.

RocketMQ serialises with fastjson, which writes ``Integer`` map keys without quotes
(``{"offsetTable":{"TopicA@g":{0:12,1:3}}}``): :mod:`rmqlab.format.fastjson` writes
and reads that dialect.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import StoreFormatError
from ..format.fastjson import parse_fastjson, to_fastjson
from ..rules import CONFIG_DIR, CONSUMER_OFFSET_FILE, DELAY_OFFSET_FILE, TOPICS_FILE
from .mapped_file import fsync_directory

PERM_READ_WRITE = 6  # Java PermName.PERM_READ | PERM_WRITE


def string_to_file(text: str, path: str | os.PathLike) -> None:
    """Java ``MixAll.string2File``, crash-safe: tmp + fsync, old → ``.bak``, atomic move."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    if path.exists():
        bak = path.with_name(path.name + ".bak")
        data = path.read_bytes()
        with open(bak, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    os.replace(tmp, path)
    fsync_directory(path.parent)


def data_version(counter: int, timestamp_ms: int) -> dict:
    """Java ``DataVersion``."""
    return {"counter": counter, "stateVersion": 0, "timestamp": timestamp_ms}


def topic_config(topic: str, queue_nums: int) -> dict:
    """Java ``TopicConfig`` as fastjson writes it."""
    return {
        "attributes": {},
        "order": False,
        "perm": PERM_READ_WRITE,
        "readQueueNums": queue_nums,
        "topicFilterType": "SINGLE_TAG",
        "topicName": topic,
        "topicSysFlag": 0,
        "writeQueueNums": queue_nums,
    }


class BrokerMetadata:
    """What a broker would persist about the topics, consumer offsets and delay levels
    rmqlab wrote; :meth:`persist` writes the three files."""

    def __init__(self, root: str | os.PathLike):
        self.dir = Path(root) / CONFIG_DIR
        self.topics: dict[str, int] = {}  # topic -> queue count (max queueId + 1)
        self.consumer_offsets: dict[str, dict[int, int]] = {}  # "topic@group" -> {queueId: offset}
        self.delay_offsets: dict[int, int] = {}  # delay level -> delivered offset
        self.counter = 0
        self._load()

    def _load(self) -> None:
        p = self.dir / TOPICS_FILE
        if p.exists():
            try:
                for name, tc in parse_fastjson(p.read_text(encoding="utf-8"), p).get("topicConfigTable", {}).items():
                    self.topics[name] = int(tc.get("writeQueueNums", 1))
            except (StoreFormatError, ValueError, AttributeError):
                pass  # unreadable: rewritten from what the store holds
        p = self.dir / CONSUMER_OFFSET_FILE
        if p.exists():
            try:
                table = parse_fastjson(p.read_text(encoding="utf-8"), p).get("offsetTable", {})
                self.consumer_offsets = {k: {int(q): int(o) for q, o in v.items()} for k, v in table.items()}
            except (StoreFormatError, ValueError, AttributeError):
                pass
        p = self.dir / DELAY_OFFSET_FILE
        if p.exists():
            try:
                table = parse_fastjson(p.read_text(encoding="utf-8"), p).get("offsetTable", {})
                self.delay_offsets = {int(k): int(v) for k, v in table.items()}
            except (StoreFormatError, ValueError, AttributeError):
                pass

    def note_queue(self, topic: str, queue_id: int) -> None:
        if self.topics.get(topic, 0) <= queue_id:
            self.topics[topic] = queue_id + 1

    def persist(self, now_ms: int) -> None:
        self.counter += 1
        dv = data_version(self.counter, now_ms)
        topics = {"dataVersion": dv, "topicConfigTable": {t: topic_config(t, n) for t, n in sorted(self.topics.items())}}
        string_to_file(to_fastjson(topics), self.dir / TOPICS_FILE)
        string_to_file(to_fastjson({"dataVersion": dv, "offsetTable": self.consumer_offsets}), self.dir / CONSUMER_OFFSET_FILE)
        string_to_file(to_fastjson({"dataVersion": dv, "offsetTable": dict(sorted(self.delay_offsets.items()))}), self.dir / DELAY_OFFSET_FILE)
