"""Store settings under RocketMQ's own names.

Java: ``org.apache.rocketmq.store.config.MessageStoreConfig``.  Each field is the
Java setting in Python spelling; :data:`JAVA_NAMES` maps one to the other, so a
``broker.conf`` written for a real broker loads here unchanged and the other way
round.  Reader and engine share this one class.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path

from .errors import StoreFormatError
from .format.commitlog import MAX_MESSAGE_SIZE_DEFAULT
from .format.consumequeue import DEFAULT_MAPPED_FILE_SIZE_BATCH_CONSUME_QUEUE, DEFAULT_MAPPED_FILE_SIZE_CONSUME_QUEUE
from .format.indexfile import DEFAULT_MAX_HASH_SLOT_NUM, DEFAULT_MAX_INDEX_NUM

ASYNC_FLUSH = "ASYNC_FLUSH"
SYNC_FLUSH = "SYNC_FLUSH"


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


@dataclass
class MessageStoreConfig:
    """The settings rmqlab understands (Java ``MessageStoreConfig``), with Java's defaults."""

    store_path_root_dir: str = ""  # storePathRootDir
    #: storePathCommitLog: "" is Java's default, the root's commitlog/; several directories
    #: joined by "," (MixAll.MULTI_PATH_SPLITTER) make a MultiPathMappedFileQueue log
    store_path_commit_log: str = ""
    read_only_commit_log_store_paths: str = ""  # readOnlyCommitLogStorePaths: more directories of the same log
    mapped_file_size_commit_log: int = 1024 * 1024 * 1024  # mappedFileSizeCommitLog
    mapped_file_size_consume_queue: int = DEFAULT_MAPPED_FILE_SIZE_CONSUME_QUEUE  # mappedFileSizeConsumeQueue
    mapper_file_size_batch_consume_queue: int = DEFAULT_MAPPED_FILE_SIZE_BATCH_CONSUME_QUEUE  # mapperFileSizeBatchConsumeQueue (Java's spelling)
    max_hash_slot_num: int = DEFAULT_MAX_HASH_SLOT_NUM  # maxHashSlotNum
    max_index_num: int = DEFAULT_MAX_INDEX_NUM  # maxIndexNum
    max_msgs_num_batch: int = 64  # maxMsgsNumBatch: IndexService.queryOffset answers at most this many offsets
    message_index_enable: bool = True  # messageIndexEnable
    message_index_safe: bool = False  # messageIndexSafe (abnormal recovery starts early enough to rebuild the index)
    flush_disk_type: str = ASYNC_FLUSH  # flushDiskType
    flush_interval_commit_log: int = 500  # flushIntervalCommitLog (ms)
    flush_commit_log_least_pages: int = 4  # flushCommitLogLeastPages
    flush_interval_consume_queue: int = 1000  # flushIntervalConsumeQueue (ms)
    flush_consume_queue_least_pages: int = 2  # flushConsumeQueueLeastPages
    sync_flush_timeout: int = 5000  # syncFlushTimeout (ms)
    file_reserved_time: int = 72  # fileReservedTime (hours)
    delete_when: str = "04"  # deleteWhen
    disk_max_used_space_ratio: int = 75  # diskMaxUsedSpaceRatio (%): above it, expired files are deleted at any hour
    disk_space_warning_level_ratio: int = 90  # diskSpaceWarningLevelRatio (%): above it, the disk is marked full
    disk_space_clean_forcibly_ratio: int = 85  # diskSpaceCleanForciblyRatio (%): above it, files go expired or not
    clean_file_forcibly_enable: bool = True  # cleanFileForciblyEnable
    max_message_size: int = MAX_MESSAGE_SIZE_DEFAULT  # maxMessageSize
    enabled_append_prop_crc: bool = False  # enabledAppendPropCRC
    #: checkCRCOnRecover; None: not said, the writer's default (rmqlab.releases.Release.check_crc_on_recover:
    #: Java's MessageStoreConfig true, rocketmq-rust 1.0.0's MessageStoreConfig::default false)
    check_crc_on_recover: bool | None = None
    message_delay_level: str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"  # messageDelayLevel
    auto_message_version_on_topic_len: bool = True  # autoMessageVersionOnTopicLen (V2 records for long topics)
    flush_commit_log_thorough_interval: int = 10_000  # flushCommitLogThoroughInterval (ms)
    flush_consume_queue_thorough_interval: int = 60_000  # flushConsumeQueueThoroughInterval (ms)
    clean_resource_interval: int = 10_000  # cleanResourceInterval (ms)
    commit_log_recover_max_num: int = 10  # commitLogRecoverMaxNum (5.4+): files recovery looks back for its start (≤ 0 reads as 10)
    extra: dict[str, str] = field(default_factory=dict)  # settings rmqlab keeps but does not use

    # -- Java names -------------------------------------------------------------------
    @classmethod
    def java_names(cls) -> dict[str, str]:
        """``{"mappedFileSizeCommitLog": "mapped_file_size_commit_log", ...}``."""
        out = {}
        for f in fields(cls):
            if f.name == "extra":
                continue
            out[JAVA_NAME_OVERRIDES.get(f.name, _camel(f.name))] = f.name
        return out

    @classmethod
    def from_mapping(cls, values: dict[str, object], source: str = "<config>") -> "MessageStoreConfig":
        """Build from Java-named settings (strings as in a properties file, or typed)."""
        names = cls.java_names()
        kwargs: dict[str, object] = {}
        extra: dict[str, str] = {}
        types = {f.name: f.type for f in fields(cls)}
        for key, raw in values.items():
            py = names.get(key) or (key if key in types and key != "extra" else None)
            if py is None:
                extra[key] = str(raw)
                continue
            kwargs[py] = _coerce(raw, types[py], key, source)
        cfg = cls(**kwargs)
        cfg.extra = extra
        return cfg

    @classmethod
    def from_properties(cls, path: str | os.PathLike) -> "MessageStoreConfig":
        """Load a ``broker.conf``-style file (``key=value`` lines, ``#`` comments)."""
        return cls.from_mapping(cls.read_properties(path), source=str(path))

    @staticmethod
    def read_properties(path: str | os.PathLike) -> dict[str, str]:
        """The ``key=value`` pairs of a ``broker.conf``-style file, as written (which
        settings it sets; the rest keep RocketMQ's defaults)."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise StoreFormatError(path, None, f"cannot read config: {exc.strerror}") from None
        values: dict[str, str] = {}
        offset = 0
        for line in text.splitlines(keepends=True):
            stripped = line.strip()
            if stripped and not stripped.startswith(("#", "!")):
                m = re.match(r"\s*([^=:\s]+)\s*[=:]\s*(.*?)\s*$", line)
                if not m:
                    raise StoreFormatError(path, offset, f"not a key=value line: {stripped!r}")
                values[m.group(1)] = m.group(2)
            offset += len(line.encode("utf-8"))
        return values

    def extra_flag(self, java_name: str, default: bool | None = None) -> bool | None:
        """A boolean setting rmqlab keeps in ``extra`` (one it has no field for), as
        Java's ``Boolean.parseBoolean`` reads it; ``default`` when the config does not
        set it (None: "not said", for callers that infer it from the store)."""
        v = self.extra.get(java_name)
        return default if v is None else str(v).strip().lower() == "true"

    def extra_int(self, java_name: str, default: int) -> int:
        """An integer setting rmqlab keeps in ``extra``, ``default`` when not set or not a
        number (Java's config loader keeps its default then too)."""
        try:
            return int(str(self.extra[java_name]).strip())
        except (KeyError, ValueError):
            return default

    def to_java(self) -> dict[str, str]:
        """Every setting under its Java name, as strings (what a broker.conf holds)."""
        out = {}
        for java, py in self.java_names().items():
            v = getattr(self, py)
            if (v == "" and py in _DEFAULT_WHEN_EMPTY) or v is None:
                continue  # not set: RocketMQ's default (a path under the root; the writer's) stays
            out[java] = ("true" if v else "false") if isinstance(v, bool) else str(v)
        out.update(self.extra)
        return out

    def to_properties(self) -> str:
        return "".join(f"{k}={v}\n" for k, v in self.to_java().items())

    def replace(self, **changes) -> "MessageStoreConfig":
        return dataclasses.replace(self, **changes)

    @property
    def index_file_size(self) -> int:
        from .format.indexfile import index_file_size

        return index_file_size(self.max_hash_slot_num, self.max_index_num)


#: path settings whose empty value means "RocketMQ's default", left out of a broker.conf
_DEFAULT_WHEN_EMPTY = ("store_path_root_dir", "store_path_commit_log", "read_only_commit_log_store_paths")

# Java names that do not follow the snake→camel rule.
JAVA_NAME_OVERRIDES = {"enabled_append_prop_crc": "enabledAppendPropCRC", "check_crc_on_recover": "checkCRCOnRecover"}


def _coerce(raw: object, typ: object, key: str, source: str) -> object:
    if raw is None and str(typ).endswith("| None"):
        return None  # an optional setting left unsaid (a config handed on as a mapping)
    typ = str(typ).replace(" | None", "")  # an optional setting: its value's type
    if isinstance(raw, str):
        raw = raw.strip()
    try:
        if typ == "bool":
            if isinstance(raw, bool):
                return raw
            if str(raw).lower() in ("true", "false"):
                return str(raw).lower() == "true"
            raise ValueError(raw)
        if typ == "int":
            return int(raw)
        return str(raw)
    except (TypeError, ValueError):
        raise StoreFormatError(source, None, f"setting {key}={raw!r} is not a valid {typ}") from None
