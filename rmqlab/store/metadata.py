"""The broker's metadata under ``config/``, read side (the write side is
:mod:`rmqlab.writers.metadata`): consumer offsets (``consumerOffset.json``, Java
``ConsumerOffsetManager``; ``lmqConsumerOffset.json``, ``LmqConsumerOffsetManager``),
delay-level progress (``delayOffset.json``, ``ScheduleMessageService``), topic configs
(``topics.json``, ``TopicConfigManager``) and subscription groups
(``subscriptionGroup.json``, ``SubscriptionGroupManager``).

The broker persists, per ``topic@group``, the committed offset of each queue: the queue
offset of the next message the group will consume.  The file is fastjson's rendering
of the manager (``ConfigManager.persist`` → ``RemotingSerializable.toJson``)::

    {
        "dataVersion":{"counter":12,"stateVersion":0,"timestamp":1767261600000},
        "offsetTable":{
            "Orders@billing":{0:12,1:9,2:14,3:11}
        },
        ...
    }

Two things are not plain JSON: the queue ids are ``Integer`` map keys, which fastjson
writes unquoted; and ``ConfigManager`` keeps the previous file as ``.bak`` and writes
the new one to ``.tmp`` first (``MixAll.string2File``: write ``.tmp``, copy the old
file to ``.bak``, rename ``.tmp``).  RocketMQ's ``ConfigManager.load`` reads the file
and falls back to ``.bak`` when it is missing or cannot be decoded; a ``.tmp`` left
behind is a persist a crash interrupted.  Nothing here writes.

A broker with ``storeType=defaultRocksDB`` keeps its offsets in RocksDB instead
(``RocksDBConsumerOffsetManager``, ``config/consumerOffsets/``): one key per
``topic@group`` whose value is ``{"offsetTable":{queueId:offset}}``
(``RocksDBOffsetSerializeWrapper``), the ``dataVersion`` in the ``kvDataVersion``
column family; at load it takes ``consumerOffset.json`` instead when that file's
``dataVersion`` counter is higher (``merge``).  :func:`read_consumer_offsets` reads it
read-only (:class:`rmqlab.files.rocksdb.ReadOnlyRocksDB`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import StoreFormatError, StoreLayoutError
from ..format.fastjson import parse_fastjson
from ..rules import CONFIG_DIR, CONSUMER_OFFSET_FILE, DELAY_OFFSET_FILE, LMQ_CONSUMER_OFFSET_FILE, SUBSCRIPTION_GROUP_FILE, TOPICS_FILE

#: Java ConsumerOffsetManager.TOPIC_GROUP_SEPARATOR
TOPIC_GROUP_SEPARATOR = "@"
#: Java RocksDBConsumerOffsetManager.rocksdbConfigFilePath: config/consumerOffsets/
CONSUMER_OFFSETS_ROCKSDB_DIR = "consumerOffsets"
#: Java RocksDBTopicConfigManager's path: config/topics/
TOPICS_ROCKSDB_DIR = "topics"
#: Java ConfigRocksDBStorage.KV_DATA_VERSION_COLUMN_FAMILY_NAME / KV_DATA_VERSION_KEY
KV_DATA_VERSION_FAMILY = "kvDataVersion"
KV_DATA_VERSION_KEY = b"kvDataVersionKey"


@dataclass
class ConsumerOffsets:
    """``offsetTable`` of a consumerOffset.json: ``(topic, group) -> {queue id: offset}``,
    and where it was read from and what the files around it say."""

    table: dict[tuple[str, str], dict[int, int]] = field(default_factory=dict)
    source: str | None = None  # the file the table came from (None: no offsets file)
    data_version: dict | None = None
    notes: list[str] = field(default_factory=list)  # a torn or divergent .tmp/.bak, a fallback

    def groups(self) -> list[str]:
        return sorted({g for _, g in self.table})

    def committed(self, group: str, topic: str, queue_id: int) -> int | None:
        """Java ``ConsumerOffsetManager.queryOffset`` (None where Java answers -1)."""
        return self.table.get((topic, group), {}).get(queue_id)


def _document(path: Path) -> dict:
    doc = parse_fastjson(path.read_text(encoding="utf-8", errors="replace"), path)
    if not isinstance(doc, dict):
        raise StoreFormatError(path, 0, "the document is not a JSON object")
    return doc


def _offset_table(path: Path) -> tuple[dict, dict | None]:
    doc = _document(path)
    table: dict[tuple[str, str], dict[int, int]] = {}
    raw = doc.get("offsetTable") or {}
    if not isinstance(raw, dict):
        raise StoreFormatError(path, None, "offsetTable is not an object")
    for key, queues in raw.items():
        topic, sep, group = key.partition(TOPIC_GROUP_SEPARATOR)
        if not sep or not isinstance(queues, dict):
            continue  # Java's scans split on '@' and skip such keys too
        try:
            table[(topic, group)] = {int(q): int(o) for q, o in queues.items()}
        except (TypeError, ValueError):
            raise StoreFormatError(path, None, f"offsetTable[{key!r}] holds a queue id or offset that is not an integer") from None
    return table, doc.get("dataVersion")


def _table_only(loaded: tuple[dict, dict | None]) -> dict:
    """An offset table without its dataVersion (which every persist changes)."""
    return loaded[0]


def _differences(a, b) -> int:
    """How many entries of two tables (dicts, nested one level or not) differ."""
    n = 0
    for k in set(a) | set(b):
        x, y = a.get(k), b.get(k)
        if isinstance(x, dict) or isinstance(y, dict):
            x, y = x or {}, y or {}
            n += sum(1 for q in set(x) | set(y) if x.get(q) != y.get(q))
        else:
            n += x != y
    return n


def load_config_file(root: str | os.PathLike, name: str, read, content=lambda v: v):
    """``read(path)`` of ``STORE/config/<name>`` as RocketMQ's ``ConfigManager.load`` finds
    it (``content(value)``: what of a value the ``.tmp`` and ``.bak`` are compared on,
    e.g. the table without its dataVersion): the file, else its ``.bak`` (missing or undecodable file).  Returns ``(value,
    source, notes)``: ``value`` None and ``source`` None when neither can be read (an
    unreadable file with no readable ``.bak`` raises :class:`StoreFormatError`); ``notes``
    on a ``.tmp`` a crash left (torn, or divergent from what is loaded) and on a ``.bak``
    that differs from the file."""
    path = Path(root) / CONFIG_DIR / name
    bak, tmp = path.with_name(path.name + ".bak"), path.with_name(path.name + ".tmp")
    value, source, notes, main_err = None, None, [], None
    if path.exists():
        try:
            value, source = read(path), str(path)
        except StoreFormatError as err:
            main_err = err
    if source is None and bak.exists():
        try:
            value, source = read(bak), str(bak)
            notes.append(f"{path.name} " + (f"cannot be read ({main_err}); " if main_err else "is missing; ") + f"RocketMQ loads {bak.name}, as read here")
        except StoreFormatError as err:
            notes.append(f"{bak.name} cannot be read either: {err}")
    if source is None and main_err is not None:
        raise main_err
    if tmp.exists():
        try:
            t = read(tmp)
            notes.append(f"{tmp.name} is left over (a persist a crash interrupted); it " + ("holds the same content" if content(t) == content(value) else "differs from what RocketMQ loads"))
        except StoreFormatError as err:
            notes.append(f"{tmp.name} is left over and torn ({err}): a persist a crash interrupted; RocketMQ ignores it")
    if source == str(path) and bak.exists():
        try:
            b, now = content(read(bak)), content(value)
            if b != now:
                n = _differences(b, now) if isinstance(b, dict) and isinstance(now, dict) else 1
                notes.append(f"{bak.name} (the previous persist) differs in {n} entr{'y' if n == 1 else 'ies'}")
        except StoreFormatError as err:
            notes.append(f"{bak.name} cannot be read ({err}); RocketMQ would have nothing to fall back to")
    return value, source, notes


def _rocksdb_offset_table(directory: Path) -> tuple[dict, dict | None]:
    """``RocksDBConsumerOffsetManager.loadConsumerOffset`` / ``loadDataVersion``: the
    table and dataVersion kept in ``config/consumerOffsets/``."""
    from ..files.rocksdb import ReadOnlyRocksDB

    table: dict[tuple[str, str], dict[int, int]] = {}
    with ReadOnlyRocksDB(directory, "consumer offsets store") as db:
        for k, v in db.items():
            key = k.decode("utf-8", errors="replace")
            topic, sep, group = key.partition(TOPIC_GROUP_SEPARATOR)
            doc = parse_fastjson(v.decode("utf-8", errors="replace"), f"{directory} [{key}]")
            queues = doc.get("offsetTable") if isinstance(doc, dict) else None
            if not sep or not isinstance(queues, dict):
                continue
            try:
                table[(topic, group)] = {int(q): int(o) for q, o in queues.items()}
            except (TypeError, ValueError):
                raise StoreFormatError(directory, None, f"the value of {key!r} holds a queue id or offset that is not an integer") from None
        fam = db.family(KV_DATA_VERSION_FAMILY)
        raw = fam.get(KV_DATA_VERSION_KEY) if fam is not None else None
    version = parse_fastjson(raw.decode("utf-8", errors="replace"), f"{directory} [kvDataVersion]") if raw else None
    return table, version if isinstance(version, dict) else None


def rocksdb_config_in_use(root: str | os.PathLike, name: str) -> bool:
    """Whether the broker kept ``config/<name>/`` in RocksDB: it is a RocksDB and so are
    the consume queues (``storeType=defaultRocksDB``, the setting that makes
    ``BrokerController`` choose the RocksDB config managers)."""
    from ..files.rocksdb import is_rocksdb_dir
    from ..rules import CONSUMEQUEUE_DIR

    cq = Path(root) / CONSUMEQUEUE_DIR
    return is_rocksdb_dir(Path(root) / CONFIG_DIR / name) and is_rocksdb_dir(cq) and not any(p.is_dir() for p in cq.iterdir())


def rocksdb_offsets_in_use(root: str | os.PathLike) -> bool:
    """Whether the broker kept its offsets in RocksDB (``RocksDBConsumerOffsetManager``)."""
    return rocksdb_config_in_use(root, CONSUMER_OFFSETS_ROCKSDB_DIR)


def _counter(version: dict | None) -> int:
    try:
        return int((version or {}).get("counter", 0))
    except (TypeError, ValueError):
        return 0


def read_consumer_offsets(root: str | os.PathLike, *, lmq: bool = True) -> ConsumerOffsets:
    """The committed offsets of a store root as RocketMQ loads them (Java
    ``ConfigManager.load``: the file, else its ``.bak``), with notes on a ``.tmp`` a
    crash left and on a ``.bak`` that differs from the file.  ``lmq``: add the light
    message queues' offsets of ``lmqConsumerOffset.json`` (``LmqConsumerOffsetManager``,
    the same shape, ``%LMQ%`` topics).  A broker with RocksDB queues keeps them in
    ``config/consumerOffsets/`` (``RocksDBConsumerOffsetManager.load``): that table,
    unless the JSON file's dataVersion counter is higher (``merge``)."""
    out = ConsumerOffsets()
    loaded, out.source, out.notes = load_config_file(root, CONSUMER_OFFSET_FILE, _offset_table, _table_only)
    if rocksdb_offsets_in_use(root):
        directory = Path(root) / CONFIG_DIR / CONSUMER_OFFSETS_ROCKSDB_DIR
        kv = _rocksdb_offset_table(directory)
        if loaded is not None and _counter(loaded[1]) > _counter(kv[1]):
            out.notes.append(f"{directory}/ (RocksDB) holds dataVersion {_counter(kv[1])}, {Path(out.source).name} {_counter(loaded[1])}: "
                             "RocketMQ loads the JSON file (RocksDBConsumerOffsetManager.merge), as read here")
        else:
            if loaded is not None:
                out.notes.append(f"{Path(out.source).name} is not read: the RocksDB offsets ({directory}/) are as new or newer (RocksDBConsumerOffsetManager.merge)")
            loaded, out.source = kv, str(directory)
    if loaded is not None:
        out.table, out.data_version = loaded
    if lmq:
        extra, source, notes = load_config_file(root, LMQ_CONSUMER_OFFSET_FILE, _offset_table, _table_only)
        out.notes += notes
        if extra is not None:
            out.table.update(extra[0])
            out.source = out.source or source
    return out


def _delay_table(path: Path) -> dict[int, int]:
    raw = _document(path).get("offsetTable") or {}
    try:
        return {int(k): int(v) for k, v in raw.items()}
    except (TypeError, ValueError, AttributeError):
        raise StoreFormatError(path, None, "offsetTable holds a delay level or offset that is not an integer") from None


def read_delay_offsets(root: str | os.PathLike) -> tuple[dict[int, int] | None, str | None, list[str]]:
    """``delayOffset.json`` (Java ``ScheduleMessageService.encode``): per delay level,
    the offset in ``SCHEDULE_TOPIC_XXXX`` queue ``level - 1`` up to which the delayed
    messages were delivered (``ScheduleMessageService.queueId2DelayLevel``).  ``(table,
    source, notes)``; table None without the file."""
    return load_config_file(root, DELAY_OFFSET_FILE, _delay_table)


@dataclass(frozen=True)
class TopicConfig:
    """Java ``TopicConfig`` as ``topics.json`` holds it (the fields rmqlab uses)."""

    topic: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    #: TopicConfig.attributes (5.0+; e.g. queue.type, cleanup.policy), as stored: without the +/- of a request
    attributes: tuple[tuple[str, str], ...] = ()

    @property
    def queue_type(self) -> str:
        """Java ``QueueTypeUtils.getCQType``: the ``queue.type`` attribute, else
        ``TopicAttributes.QUEUE_TYPE_ATTRIBUTE``'s default."""
        return dict(self.attributes).get(QUEUE_TYPE_ATTRIBUTE, SIMPLE_CQ)


#: Java TopicAttributes.QUEUE_TYPE_ATTRIBUTE and the CQType values it takes
QUEUE_TYPE_ATTRIBUTE = "queue.type"
SIMPLE_CQ, BATCH_CQ = "SimpleCQ", "BatchCQ"


def _topic_config(name: str, tc, where) -> TopicConfig:
    """One fastjson ``TopicConfig``."""
    try:
        attrs = tc.get("attributes") or {}
        return TopicConfig(name, int(tc.get("readQueueNums", 0)), int(tc.get("writeQueueNums", 0)), int(tc.get("perm", 0)),
                           tuple(sorted((str(k), str(v)) for k, v in attrs.items())))
    except (TypeError, ValueError, AttributeError):
        raise StoreFormatError(where, None, f"the entry of {name!r} is not a TopicConfig") from None


def _topic_table(path: Path) -> tuple[dict[str, TopicConfig], dict | None]:
    doc = _document(path)
    raw = doc.get("topicConfigTable") or {}
    if not isinstance(raw, dict):
        raise StoreFormatError(path, None, "topicConfigTable is not an object")
    return {name: _topic_config(name, tc, path) for name, tc in raw.items()}, doc.get("dataVersion")


def _rocksdb_topic_table(directory: Path) -> tuple[dict[str, TopicConfig], dict | None]:
    """``RocksDBTopicConfigManager.loadTopicConfig`` / ``loadDataVersion``: a key per
    topic (its name), the value the TopicConfig as fastjson writes it (``decodeTopicConfig``)."""
    from ..files.rocksdb import ReadOnlyRocksDB

    table: dict[str, TopicConfig] = {}
    with ReadOnlyRocksDB(directory, "topic config store") as db:
        for k, v in db.items():
            name = k.decode("utf-8", errors="replace")
            table[name] = _topic_config(name, parse_fastjson(v.decode("utf-8", errors="replace"), f"{directory} [{name}]"), directory)
        fam = db.family(KV_DATA_VERSION_FAMILY)
        raw = fam.get(KV_DATA_VERSION_KEY) if fam is not None else None
    version = parse_fastjson(raw.decode("utf-8", errors="replace"), f"{directory} [kvDataVersion]") if raw else None
    return table, version if isinstance(version, dict) else None


def read_topics(root: str | os.PathLike) -> tuple[dict[str, TopicConfig] | None, str | None, list[str]]:
    """The broker's topic table as it loads it: ``topics.json`` (Java
    ``TopicConfigManager``; the file, else its ``.bak``), or, on a broker with RocksDB
    queues, ``config/topics/`` (``RocksDBTopicConfigManager.load``) with the JSON file's
    topics put over it when its dataVersion counter is higher (``merge``):
    ``(topic -> TopicConfig, source, notes)``."""
    loaded, source, notes = load_config_file(root, TOPICS_FILE, _topic_table, lambda v: v[0])
    if rocksdb_config_in_use(root, TOPICS_ROCKSDB_DIR):
        directory = Path(root) / CONFIG_DIR / TOPICS_ROCKSDB_DIR
        kv = _rocksdb_topic_table(directory)
        if loaded is not None and _counter(loaded[1]) > _counter(kv[1]):
            notes.append(f"{Path(source).name}'s dataVersion {_counter(loaded[1])} is above RocksDB's {_counter(kv[1])}: RocketMQ puts its topics over "
                         f"{directory}/'s (RocksDBTopicConfigManager.merge), as read here")
            return {**kv[0], **loaded[0]}, f"{directory} + {source}", notes
        if loaded is not None:
            notes.append(f"{Path(source).name} is not read: the RocksDB topics ({directory}/) are as new or newer (RocksDBTopicConfigManager.merge)")
        return kv[0], str(directory), notes
    return (loaded[0] if loaded is not None else None), source, notes


def batch_topics(root: str | os.PathLike) -> tuple[set[str] | None, str | None]:
    """The topics whose queues are batch queues, as RocketMQ's store decides it
    (``ConsumeQueueStore.findOrCreateConsumeQueue`` / ``queueTypeShouldBe``: the topic
    config's ``queue.type``, through ``QueueTypeUtils.getCQType``), from
    ``topics.json``: ``(topics, source)``; ``(None, None)`` when the store has no
    readable topics.json (the broker's topic table is not known)."""
    try:
        table, source, _ = read_topics(root)
    except (StoreFormatError, StoreLayoutError):  # unreadable, or RocksDB's without the binding
        return None, None
    if table is None:
        return None, None
    return {t for t, tc in table.items() if tc.queue_type == BATCH_CQ}, source


def _group_table(path: Path) -> list[str]:
    raw = _document(path).get("subscriptionGroupTable") or {}
    if not isinstance(raw, dict):
        raise StoreFormatError(path, None, "subscriptionGroupTable is not an object")
    return sorted(raw)


def read_subscription_groups(root: str | os.PathLike) -> tuple[list[str] | None, str | None, list[str]]:
    """``subscriptionGroup.json`` (Java ``SubscriptionGroupManager``): the consumer groups
    the broker knows, ``(names, source, notes)``."""
    return load_config_file(root, SUBSCRIPTION_GROUP_FILE, _group_table)


def written_by_4x(root: str | os.PathLike) -> bool | None:
    """Whether the broker that wrote ``config/topics.json`` was a 4.x one: RocketMQ 5.0
    added ``attributes`` to ``TopicConfig`` and fastjson writes it for every topic
    (an empty map included); 4.9's TopicConfig has no such field.  None when the file
    does not tell (missing, unreadable, no topic)."""
    path = Path(root) / CONFIG_DIR / TOPICS_FILE
    try:
        raw = _document(path).get("topicConfigTable") if path.exists() else None
    except StoreFormatError:
        return None
    if not isinstance(raw, dict) or not raw:
        return None
    return all(isinstance(tc, dict) and "attributes" not in tc for tc in raw.values())
