"""Broker metadata under ``config/`` in RocketMQ's JSON shapes, written safely.

Java: ``MixAll.string2File`` (write ``X.tmp``, copy the old ``X`` to ``X.bak``,
move ``X.tmp`` to ``X``) used by ``ConfigManager.persist`` for
``TopicConfigManager`` (``topics.json``), ``ConsumerOffsetManager``
(``consumerOffset.json``) and ``ScheduleMessageService`` (``delayOffset.json``).
rmqlab adds what makes that crash-safe: the temporary file is fsynced, the move is
an atomic ``os.replace``, and the directory is fsynced; so at every instant either
the old or the new file is complete, and ``.bak`` holds the previous version.

RocketMQ serialises with fastjson, which writes ``Integer`` map keys without quotes
(``{"offsetTable":{"TopicA@g":{0:12,1:3}}}``).  rmqlab writes the same; use
:func:`load_rocketmq_json` to read such a file (plain ``json`` cannot).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from ..rules import CONFIG_DIR
from .mapped_file import fsync_directory

TOPICS_JSON = "topics.json"
CONSUMER_OFFSET_JSON = "consumerOffset.json"
DELAY_OFFSET_JSON = "delayOffset.json"
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


_INT_KEY = re.compile(r'([{,]\s*)(-?\d+)(\s*:)')


def to_fastjson(obj: Any) -> str:
    """JSON with integer map keys unquoted, as fastjson writes ``Map<Integer, …>``."""

    def enc(o: Any) -> str:
        if isinstance(o, dict):
            parts = []
            for k, v in o.items():
                key = str(k) if isinstance(k, int) and not isinstance(k, bool) else json.dumps(str(k), ensure_ascii=False)
                parts.append(f"{key}:{enc(v)}")
            return "{" + ",".join(parts) + "}"
        if isinstance(o, (list, tuple)):
            return "[" + ",".join(enc(v) for v in o) + "]"
        return json.dumps(o, ensure_ascii=False)

    return enc(obj)


def load_rocketmq_json(text: str) -> Any:
    """Parse a RocketMQ config file, accepting fastjson's unquoted integer keys."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return json.loads(_INT_KEY.sub(r'\1"\2"\3', text))


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
        p = self.dir / TOPICS_JSON
        if p.exists():
            try:
                for name, tc in load_rocketmq_json(p.read_text(encoding="utf-8")).get("topicConfigTable", {}).items():
                    self.topics[name] = int(tc.get("writeQueueNums", 1))
            except (ValueError, AttributeError):
                pass  # unreadable: rewritten from what the store holds
        p = self.dir / CONSUMER_OFFSET_JSON
        if p.exists():
            try:
                table = load_rocketmq_json(p.read_text(encoding="utf-8")).get("offsetTable", {})
                self.consumer_offsets = {k: {int(q): int(o) for q, o in v.items()} for k, v in table.items()}
            except (ValueError, AttributeError):
                pass
        p = self.dir / DELAY_OFFSET_JSON
        if p.exists():
            try:
                table = load_rocketmq_json(p.read_text(encoding="utf-8")).get("offsetTable", {})
                self.delay_offsets = {int(k): int(v) for k, v in table.items()}
            except (ValueError, AttributeError):
                pass

    def note_queue(self, topic: str, queue_id: int) -> None:
        if self.topics.get(topic, 0) <= queue_id:
            self.topics[topic] = queue_id + 1

    def persist(self, now_ms: int) -> None:
        self.counter += 1
        dv = data_version(self.counter, now_ms)
        topics = {"dataVersion": dv, "topicConfigTable": {t: topic_config(t, n) for t, n in sorted(self.topics.items())}}
        string_to_file(to_fastjson(topics), self.dir / TOPICS_JSON)
        string_to_file(to_fastjson({"dataVersion": dv, "offsetTable": self.consumer_offsets}), self.dir / CONSUMER_OFFSET_JSON)
        string_to_file(to_fastjson({"dataVersion": dv, "offsetTable": dict(sorted(self.delay_offsets.items()))}), self.dir / DELAY_OFFSET_JSON)
