"""What each file and directory of a store root is, decided in one place.

A broker leaves more than the classic store (commitlog, consume queues, index,
checkpoint, abort, lock): the timer wheel and log (on by default in 5.x), its
``config/*.json``, and with other settings RocksDB consume queues, DLedger's log, batch
and ext queues, LMQ queues, a compaction store, controller-mode metadata.  Every
command asks :func:`recognise` before judging, so that nothing rmqlab does not decode
is reported as damage or changed by a recovery:

* ``decoded`` — read and checked against the rest of the store;
* ``read`` — read (a broker's metadata: offsets, topics, groups), nothing to check it by;
* ``not checked`` — recognised, with the reason it is not decoded;
* ``unknown`` — no layout of RocketMQ's this module knows.

Each :class:`Part` also says whether ``rmqlab recover`` models what RocketMQ's
start-up does with it (``recovery`` holds the reason when it does not: applying then
refuses, the dry run says why).  Names come from RocketMQ's path helpers
(``StorePathConfigHelper``, ``BrokerPathConfigHelper``, ``MessageStoreConfig``); the Java
owner is named beside each.  Only names and a directory listing are read here.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..config import MessageStoreConfig
from ..files.rocksdb import is_rocksdb_names
from .metadata import rocksdb_config_in_use, rocksdb_offsets_in_use
from .release import is_timer_wheel_snapshot, rust_timer_paths
from ..errors import StoreLayoutError
from ..format import timer_v2
from ..format.dledger import DATA_DIR as DLEDGER_DATA_DIR, DLEDGER_PREFIX
from ..rules import (timer_wheel_snapshot_flag, ABORT_FILE, BATCH_CONSUMEQUEUE_DIR, COMPACTION_CQ_DIR, COMPACTION_DIR, COMPACTION_LOG_DIR, CHECKPOINT_FILE, COMMITLOG_DIR, CONFIG_DIR, CONSUMEQUEUE_DIR, CONSUMEQUEUE_EXT_DIR, CONSUMEQUEUE_ROCKSDB_DIR, CONSUMER_OFFSET_FILE, DELAY_OFFSET_FILE, INDEX_DIR,
                     LMQ_CONSUMER_OFFSET_FILE, LMQ_PREFIX, LOCK_FILE, MESSAGE_ROCKSDB_DIR, SUBSCRIPTION_GROUP_FILE, TIMER_CHECK_FILE, TIMER_LOG_DIR, TIMER_WHEEL_FILE, TOPICS_FILE)

DECODED = "decoded"
READ = "read"
NOT_CHECKED = "not checked"
UNKNOWN = "unknown"


#: what RocketMQ's RocksDB leaves in a directory it owns (RocksDB's own file names)
_ROCKSDB = re.compile(r"CURRENT|IDENTITY|LOCK|LOG(\.old\.\d+)?|MANIFEST-\d+|OPTIONS-\d+|\d+\.(sst|log|blob)")

#: MixAll.string2File keeps the previous content as NAME.bak and writes NAME.tmp first
_SIDE_SUFFIXES = (".bak", ".tmp")

_NO_RECOVERY = "rmqlab's recovery does not model what RocketMQ's start-up does with it"
#: what recovery does to a RocksDB of consume queues (rmqlab.writers.rocksdb_consume_queue_writer)
_ROCKSDB_COPY_RECOVERY = ("5.4+ CombineConsumeQueueStore: the start suits the copy too (or passes it after "
                          "combineCQMaxExtraSearchCommitLogFiles files), truncateDirty of both, the re-dispatch into both, "
                          "verifyAndInitOffsetForAllStore; before 5.4 the copy is only fed: applying writes the same into it")
_ROCKSDB_QUEUE_RECOVERY = ("RocksDBConsumeQueueStore.truncateDirty, then re-dispatch from its CHECKPOINT_TOPIC progress: "
                           "applying writes both into the RocksDB of the copy (or of the store, in place)")


@dataclass(frozen=True)
class Part:
    """One file or directory of a store root (``path`` relative to it, ``/`` after a
    directory), what it is, what rmqlab does with it and why."""

    path: str
    kind: str
    handling: str
    note: str = ""
    java: str = ""
    #: None where ``rmqlab recover`` may go ahead with this part present (it models it, or
    #: RocketMQ's store recovery leaves it to its owner as rmqlab does); else why it refuses
    recovery: str | None = None
    #: what of RocketMQ's start-up ``rmqlab recover`` models for this part (the Java
    #: steps), "" where recovery does not touch it
    recovered: str = ""

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def line(self) -> str:
        return f"{self.path}: {self.kind} — {self.handling}" + (f" ({self.note})" if self.note else "")


@dataclass
class StoreLayout:
    root: str
    parts: list[Part] = field(default_factory=list)
    #: topics whose consume queues rmqlab does not check, with the reason
    unchecked_topics: dict[str, str] = field(default_factory=dict)
    #: topics with batch consume queues (``batchconsumequeue/``, queue.type=BatchCQ): their
    #: records take INNER_NUM queue offsets each; verify checks them unit by unit
    batch_topics: list[str] = field(default_factory=list)
    #: why the log is not records in commitlog files (DLedger); None: it is
    log_elsewhere: str | None = None
    #: LMQ topics (``%LMQ%…``): their entries point at other topics' records; verify checks
    #: them against the parent's INNER_MULTI_DISPATCH, not in the join with the log
    lmq_topics: list[str] = field(default_factory=list)
    #: the DLedger directory whose entries are the log (:func:`dledger_log_dir`), or None
    dledger_dir: str | None = None
    #: why ``rmqlab recover`` makes no plan for this store although it reads it (DLedger)
    recovery_unmodelled: str | None = None
    #: the directories the log is read from (:func:`commitlog_dirs`)
    commitlog_dirs: list[str] = field(default_factory=list)
    #: a RocksDB instance in ``consumequeue/``: the consume queues (storeType=defaultRocksDB)
    #: or, with ``rocksdb_double_write``, a copy of the file queues' units
    rocksdb_consume_queue: bool = False
    rocksdb_double_write: bool = False
    #: where that RocksDB is: ``consumequeue/``, or ``consumequeue_rocksdb/`` (5.5+,
    #: useSeparateStorePathForRocksdbCQ; RocksDBConsumeQueueStore's storePath)
    rocksdb_dir: str | None = None

    @property
    def rocksdb_queues(self) -> bool:
        """The consume queues RocketMQ serves are RocksDB's (not the files')."""
        return self.rocksdb_consume_queue and not self.rocksdb_double_write

    def apart_from_join(self, topic: str) -> bool:
        """True for a topic whose queues are not joined with the records of the log by
        (topic, queue): not decoded here (``unchecked_topics``), an LMQ queue, or a batch
        queue (checked unit by unit: ``batch_topics``)."""
        return topic in self.unchecked_topics or topic in self.lmq_topics or topic in self.batch_topics

    def refusals(self) -> list[Part]:
        """Parts whose presence stops ``rmqlab recover`` from applying."""
        return [p for p in self.parts if p.recovery]

    def not_checked(self) -> list[Part]:
        return [p for p in self.parts if p.handling in (NOT_CHECKED, UNKNOWN)]

    def to_dict(self) -> dict:
        return {"root": self.root, "parts": [p.to_dict() for p in self.parts], "unchecked_topics": self.unchecked_topics, "lmq_topics": self.lmq_topics, "batch_topics": self.batch_topics,
                "log_elsewhere": self.log_elsewhere, "dledger_dir": self.dledger_dir, "recovery_unmodelled": self.recovery_unmodelled, "commitlog_dirs": self.commitlog_dirs, "rocksdb_consume_queue": self.rocksdb_consume_queue, "rocksdb_double_write": self.rocksdb_double_write, "rocksdb_dir": self.rocksdb_dir}


def _side(name: str) -> tuple[str, str]:
    """(base name, ``.bak``/``.tmp`` or '') of a config file."""
    for s in _SIDE_SUFFIXES:
        if name.endswith(s):
            return name[: -len(s)], s
    return name, ""


#: config/NAME → (kind, handling, note, java); BrokerPathConfigHelper unless named otherwise
_CONFIG_FILES = {
    CONSUMER_OFFSET_FILE: ("consumer offsets", READ, "`rmqlab offsets`; recovery reports what it takes from each group", "ConsumerOffsetManager"),
    LMQ_CONSUMER_OFFSET_FILE: ("LMQ consumer offsets", READ, "`rmqlab offsets`", "LmqConsumerOffsetManager"),
    DELAY_OFFSET_FILE: ("delay-level progress", DECODED, "checked against the SCHEDULE_TOPIC_XXXX queues", "ScheduleMessageService (StorePathConfigHelper.getDelayOffsetStorePath)"),
    TOPICS_FILE: ("topic configs", READ, "queue counts and queue types (queue.type) per topic", "TopicConfigManager"),
    SUBSCRIPTION_GROUP_FILE: ("subscription groups", READ, "the consumer groups the broker knows", "SubscriptionGroupManager"),
    TIMER_CHECK_FILE: ("timer checkpoint", DECODED, "`rmqlab timers`: how far the timer wheel has fired", "TimerCheckpoint"),
    "timermetrics": ("timer metrics", NOT_CHECKED, "per-topic counters of pending timer messages, not message data", "TimerMetrics"),
    "transactionMetrics": ("transaction metrics", NOT_CHECKED, "counters, not message data", "TransactionMetrics"),
    "consumerFilter.json": ("consumer filters", NOT_CHECKED, "broker metadata, not message data", "ConsumerFilterManager"),
    "consumerOrderInfo.json": ("pop orderly state", NOT_CHECKED, "broker metadata, not message data", "ConsumerOrderInfoManager"),
    "messageRequestMode.json": ("pull/pop modes", NOT_CHECKED, "broker metadata, not message data", "MessageRequestModeManager"),
    "topicQueueMapping.json": ("static topic mappings", NOT_CHECKED, "broker metadata, not message data", "TopicQueueMappingManager"),
    "broker.properties": ("broker settings", NOT_CHECKED, "pass them with --config", "BrokerPathConfigHelper.getBrokerConfigPath"),
    "tieredStoreMetadata.json": ("tiered store metadata", NOT_CHECKED, "the tiered store keeps its segments elsewhere", "tieredstore DefaultMetadataStore"),
}
#: config/DIR/ kept in RocksDB (broker configManagerStoreType / the v2 ConfigStorage)
_CONFIG_ROCKSDB = {
    "consumerOffsets": "RocksDBConsumerOffsetManager",
    "topics": "RocksDBTopicConfigManager",
    "subscriptionGroups": "RocksDBSubscriptionGroupManager",
    "rdb": "ConfigStorage (config v2)",
}


#: rocketmq-rust's v2 timer store (crates.io rocketmq-store 1.0.0; layouts in
#: rmqlab.format.timer_v2): its own layout, none of it Java's
_RUST_TIMER_DIRS = {timer_v2.FORMAT_DIR: ("rocketmq-rust's timer storage format (timer-v2/FORMAT: the policy and its hash)", "storage_format.rs TimerStorageFingerprint"),
                    timer_v2.WHEEL_DIR: ("rocketmq-rust's timer wheel (v2: pages.a|b by generation, the generations journal)", "paged_timer_wheel.rs PagedTimerWheel")}
_RUST_TIMER_CONFIG = {timer_v2.ROLE_FILE: ("rocketmq-rust's timer role epoch", "role.rs TimerRoleState"),
                      TIMER_CHECK_FILE + ".a": ("rocketmq-rust's timer checkpoint (v2 copy a)", "checkpoint.rs VersionedTimerCheckpointStore"),
                      TIMER_CHECK_FILE + ".b": ("rocketmq-rust's timer checkpoint (v2 copy b)", "checkpoint.rs VersionedTimerCheckpointStore")}
_RUST_TIMER_NOTE = "`rmqlab timers`; verify checks its checksums as rocketmq-rust's load does (`rmqlab verify --against R` lists it as a departure from Java)"
#: Java's TimerCheckpoint: five longs and a data version (TimerCheckpoint.flush); rocketmq-rust's v2 one is 56 bytes
_RUST_TIMERCHECK_SIZE = 56


def _rust_timer_log(d: Path) -> bool:
    """timerlog/ holding only rocketmq-rust's v2/ directory (no Java timer-log file)."""
    names = [p.name for p in d.iterdir()]
    return bool(names) and all(n == timer_v2.LOG_V2_DIR for n in names)


def _config_parts(d: Path) -> list[Part]:
    out = []
    rust_timers = bool(rust_timer_paths(d.parent))
    for p in sorted(d.iterdir()):
        rel = f"{CONFIG_DIR}/{p.name}"
        if p.is_file() and p.name in _RUST_TIMER_CONFIG:
            what, source = _RUST_TIMER_CONFIG[p.name]
            out.append(Part(rel, what, DECODED, _RUST_TIMER_NOTE, source))
            continue
        if p.is_file() and p.name == TIMER_CHECK_FILE and rust_timers and p.stat().st_size == _RUST_TIMERCHECK_SIZE:
            out.append(Part(rel, "rocketmq-rust's timer checkpoint (56 bytes: Java's seven longs, read when neither v2 copy is there)", DECODED, _RUST_TIMER_NOTE,
                            "timer_checkpoint.rs TimerCheckpoint.new_with_policy"))
            continue
        if p.is_dir():
            java = _CONFIG_ROCKSDB.get(p.name)
            if java and p.name == "consumerOffsets" and rocksdb_offsets_in_use(d.parent):
                out.append(Part(rel + "/", "consumer offsets in RocksDB", READ, "`rmqlab offsets` (read-only) where the queues are RocksDB's too (storeType=defaultRocksDB)", java))
            elif java and p.name == "topics" and rocksdb_config_in_use(d.parent, p.name):
                out.append(Part(rel + "/", "topic configs in RocksDB", READ, "read-only, merged with topics.json as RocketMQ merges them: each topic's queue type (queue.type)", java))
            elif java:
                out.append(Part(rel + "/", "broker metadata in RocksDB", NOT_CHECKED, "not read here: holds no message data, or the broker's queues are files (its offsets are the JSON's)", java))
            else:
                out.append(Part(rel + "/", "unknown directory", UNKNOWN, "no RocketMQ layout of this name"))
            continue
        base, side = _side(p.name)
        known = _CONFIG_FILES.get(base)
        if known is None:
            out.append(Part(rel, "unknown file", UNKNOWN, "no RocketMQ layout of this name"))
            continue
        kind, handling, note, java = known
        if side == ".bak":
            out.append(Part(rel, f"{kind}, previous copy", READ if handling != NOT_CHECKED else NOT_CHECKED, "RocketMQ loads it when the file is missing or unreadable (ConfigManager.load)", "MixAll.string2File"))
        elif side == ".tmp":
            out.append(Part(rel, f"{kind}, interrupted write", READ if handling != NOT_CHECKED else NOT_CHECKED, "a persist a crash interrupted; RocketMQ ignores it", "MixAll.string2File"))
        else:
            out.append(Part(rel, kind, handling, note, java))
    return out


def _consumequeue_parts(d: Path, lay: StoreLayout, settings: dict | None = None) -> list[Part]:
    out = []
    entries = sorted(d.iterdir())  # listed once: a broker's consumequeue/ can hold many topics
    files = [p for p in entries if p.is_file()]
    topics = [p for p in entries if p.is_dir()]
    if is_rocksdb_names(p.name for p in files):
        lay.rocksdb_consume_queue = True
        lay.rocksdb_dir = str(d)
        store_type = (settings or {}).get("storeType")
        # a RocksDB beside topic directories is the copy rocksdbCQDoubleWriteEnable keeps
        # (DefaultMessageStore.enableRocksdbCQWrite: same directory); storeType decides when given
        lay.rocksdb_double_write = bool(topics) if store_type is None else store_type != "defaultRocksDB"
        if lay.rocksdb_double_write:
            out.append(Part(f"{CONSUMEQUEUE_DIR}/ (RocksDB)", "RocksDB copy of the consume queues (rocksdbCQDoubleWriteEnable)", DECODED,
                            "read-only; verify compares every unit with the file queues' (as checkRocksdbCqWriteProgress)",
                            "RocksDBConsumeQueueStore (DefaultMessageStore.enableRocksdbCQWrite)", recovered=_ROCKSDB_COPY_RECOVERY))
        else:
            out.append(Part(f"{CONSUMEQUEUE_DIR}/", "RocksDB consume queue (storeType=defaultRocksDB)", DECODED,
                            "read-only (rmqlab[rocksdb]): units of the default column family, min/max of the offset family, dispatch's progress",
                            "RocksDBConsumeQueueStore", recovered=_ROCKSDB_QUEUE_RECOVERY))
    lmq = [t for t in topics if t.name.startswith(LMQ_PREFIX)]
    plain = [t for t in topics if not t.name.startswith(LMQ_PREFIX)]
    if plain:
        n = sum(1 for t in plain for q in t.iterdir() if q.is_dir() and q.name.isdigit())
        if lay.rocksdb_queues:
            out.append(Part(f"{CONSUMEQUEUE_DIR}/*/", f"consume-queue files ({len(plain)} topic(s), {n} queue(s)) beside the RocksDB queues", NOT_CHECKED,
                            "storeType=defaultRocksDB: RocketMQ serves RocksDB's units, not these", "RocksDBMessageStore"))
        else:
            out.append(Part(f"{CONSUMEQUEUE_DIR}/", f"consume queues ({len(plain)} topic(s), {n} queue(s))", DECODED, "", "ConsumeQueue",
                            recovered="ConsumeQueue.recover, truncateDirtyLogicFiles, re-dispatch"))
    if lmq:
        lay.lmq_topics = [t.name for t in lmq]
        out.append(Part(f"{CONSUMEQUEUE_DIR}/{LMQ_PREFIX}*/", f"LMQ consume queues ({len(lmq)} topic(s))", DECODED,
                        "multi-dispatch queues: each entry checked against the parent record whose INNER_MULTI_DISPATCH / INNER_MULTI_QUEUE_OFFSET name it",
                        "ConsumeQueue.multiDispatchLmqQueue (enableLmq, enableMultiDispatch)",
                        recovered="ConsumeQueue.recover, truncateDirtyLogicFiles, re-dispatch through multiDispatchLmqQueue"))
    for p in files:
        if lay.rocksdb_consume_queue and _ROCKSDB.fullmatch(p.name):
            continue
        out.append(Part(f"{CONSUMEQUEUE_DIR}/{p.name}", "unknown file", UNKNOWN, "consume queues are directories topic/queueId/"))
    return out


def _split(paths: str) -> list[str]:
    """MixAll.MULTI_PATH_SPLITTER (",") separates the directories of one setting."""
    return [x.strip() for x in (paths or "").split(",") if x.strip()]


def commitlog_dirs(root: str | os.PathLike, config: MessageStoreConfig | None = None) -> list[Path]:
    """The directories the log of the store at ``root`` is read from, as RocketMQ's
    ``CommitLog`` chooses its queue: ``storePathCommitLog`` naming several directories
    (split on ``MixAll.MULTI_PATH_SPLITTER``) or ``readOnlyCommitLogStorePaths`` make a
    ``MultiPathMappedFileQueue`` over all of them (``load`` lists every one); otherwise
    one directory, the root's ``commitlog/``.  A single ``storePathCommitLog`` is read
    only when the root has no ``commitlog/``: the broker.conf of a copied capture names
    the broker's path, and the copy is under the root.  A directory of a spread log
    that is not here is an error naming it (``--commitlog-dir`` gives the copies)."""
    root = Path(root)
    default = root / COMMITLOG_DIR
    paths = _split(config.store_path_commit_log) if config is not None else []
    read_only = _split(config.read_only_commit_log_store_paths) if config is not None else []
    if len(paths) + len(read_only) <= 1 and not read_only:
        single = Path(paths[0]) if paths else default
        return [single if single.is_dir() and not default.is_dir() else default]
    out: list[Path] = []
    for d in paths + read_only:
        p = Path(d)
        if not p.is_dir():
            what = "readOnlyCommitLogStorePaths" if d in read_only else "storePathCommitLog"
            raise StoreLayoutError(p, None, f"a directory of the log ({what}) is not here: give the copies of the log's directories with --commitlog-dir")
        if all(p.resolve() != q.resolve() for q in out):
            out.append(p)
    return out


def commitlog_bytes(root: str | os.PathLike, config: MessageStoreConfig | None = None) -> int:
    """The bytes of a store's commitlog files (the total a pass over the log advances
    through, for its progress); 0 when its directories cannot be listed."""
    try:
        return sum(p.stat().st_size for d in commitlog_dirs(root, config) for p in d.iterdir() if p.is_file() and p.name.isdigit())
    except (OSError, StoreLayoutError):
        return 0


def recognise(root: str | os.PathLike, config: MessageStoreConfig | None = None) -> StoreLayout:
    """Every entry of the store root ``root``, recognised (see the module's docstring).
    ``config``: the broker's settings (``--config``); those rmqlab does not use itself
    (``extra``) name commitlog directories outside the root and other layouts."""
    root = Path(root)
    lay = StoreLayout(str(root))
    parts = lay.parts
    settings = config.extra if config is not None else {}
    dledger = sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith(DLEDGER_PREFIX))
    commitlog = root / COMMITLOG_DIR
    log_dir = dledger_log_dir(root)
    if log_dir is not None:
        lay.dledger_dir = str(log_dir)
        lay.recovery_unmodelled = ("the log is DLedger's: DLedgerMmapFileStore.recover truncates its entries and index first, then RocketMQ "
                                   "rebuilds the queues from it (DLedgerCommitLog.dledgerRecoverNormally/Abnormally); rmqlab does not model that")
    elif dledger or str(settings.get("enableDLegerCommitLog", "")).lower() == "true":
        names = ", ".join(p.name + "/" for p in dledger) or "(none in the root)"
        why = ("commitlog/ holds files too: a store converted to DLedger (its log is the old files up to dividedCommitlogOffset, then DLedger's)"
               if dledger and _offset_named(commitlog) else "no one dledger-<id>/data/ to read")
        lay.log_elsewhere = f"the log is DLedger's ({names}), and {why}"
    for p in dledger:
        if log_dir is not None and p == log_dir:
            parts.append(Part(p.name + "/", "DLedger commitlog (enableDLegerCommitLog)", DECODED,
                              "data/ entries (48-byte headers, then the record), index/ 32-byte units, checkpoint, currterm", "DLedgerCommitLog / DLedgerMmapFileStore",
                              lay.recovery_unmodelled))
        else:
            why = ("a store converted to DLedger: its log is commitlog/ up to dividedCommitlogOffset, then these entries (not read as one log here)"
                   if _offset_named(commitlog) else "not the one DLedger log with data/ that rmqlab reads")
            parts.append(Part(p.name + "/", "DLedger commitlog", NOT_CHECKED, why, "DLedgerCommitLog / DLedgerMmapFileStore",
                              "DLedger recovers its own log (DLedgerMmapFileStore.recover); not modelled"))
    log_dirs = commitlog_dirs(root, config)
    lay.commitlog_dirs = [str(d) for d in log_dirs] if log_dir is None else []
    in_log = any(d.resolve() == commitlog.resolve() for d in log_dirs)
    if len(log_dirs) > 1 or not in_log:
        for d in log_dirs:
            if d.resolve() != commitlog.resolve():
                shown = os.path.relpath(d, root) if d.resolve().is_relative_to(root.resolve()) else str(d)
                parts.append(Part(f"{shown}/", "commitlog directory (storePathCommitLog / readOnlyCommitLogStorePaths)", DECODED,
                                  f"one log with {', '.join(str(x) for x in log_dirs if x != d)}" if len(log_dirs) > 1 else "the log, outside the root",
                                  "MultiPathMappedFileQueue.load" if len(log_dirs) > 1 else "CommitLog (storePathCommitLog)",
                                  recovered="CommitLog.recoverNormally / recoverAbnormally over the whole log"))
    if commitlog.is_dir() and not in_log:
        parts.append(Part(f"{COMMITLOG_DIR}/", "commitlog directory outside the configured log", NOT_CHECKED,
                          "storePathCommitLog names other directories: RocketMQ does not read this one", "CommitLog (storePathCommitLog)"))
    elif commitlog.is_dir():
        if dledger and not any(p.is_file() for p in commitlog.iterdir()):
            parts.append(Part(f"{COMMITLOG_DIR}/", "empty commitlog directory", READ, "a DLedger store keeps its log in dledger-*/", "DLedgerCommitLog"))
        elif dledger:
            parts.append(Part(f"{COMMITLOG_DIR}/", "commitlog", DECODED, "beside a DLedger log: RocketMQ reads these only while converting to DLedger", "CommitLog"))
        else:
            parts.append(Part(f"{COMMITLOG_DIR}/", "commitlog", DECODED, "", "CommitLog", recovered="CommitLog.recoverNormally / recoverAbnormally"))
    for p in sorted(root.iterdir(), key=lambda p: p.name):
        name = p.name
        if name == COMMITLOG_DIR or name.startswith(DLEDGER_PREFIX):
            continue
        if name == CONSUMEQUEUE_DIR and p.is_dir():
            parts += _consumequeue_parts(p, lay, settings)
        elif name == CONSUMEQUEUE_EXT_DIR and p.is_dir():
            parts.append(Part(name + "/", "consume queue ext (tag bitmaps; enableConsumeQueueExt)", DECODED,
                              "a queue unit's tagsCode that is an ext address is read from here (size, tagsCode, store time, bitmap) and compared as the tagsCode",
                              "ConsumeQueueExt", recovered="ConsumeQueueExt.recover, truncateByMaxAddress, a unit per re-dispatched record"))
        elif name == BATCH_CONSUMEQUEUE_DIR and p.is_dir():
            lay.batch_topics = sorted(x.name for x in p.iterdir() if x.is_dir())
            n = sum(1 for t in lay.batch_topics for q in (p / t).iterdir() if q.is_dir() and q.name.isdigit())
            parts.append(Part(name + "/", f"batch consume queues (queue.type=BatchCQ; {len(lay.batch_topics)} topic(s), {n} queue(s))", DECODED,
                              "46-byte units, one per record, an inner batch's covering its INNER_NUM queue offsets; each checked against its record",
                              "BatchConsumeQueue", recovered="BatchConsumeQueue.recover, truncateDirtyLogicFiles, re-dispatch"))
        elif name == INDEX_DIR and p.is_dir():
            parts.append(Part(name + "/", "index files", DECODED, "", "IndexFile", recovered="IndexService.load (files newer than the checkpoint dropped), re-indexing"))
        elif name == CHECKPOINT_FILE:
            parts.append(Part(name, "store checkpoint", DECODED, "", "StoreCheckpoint", recovered="read for the start file; written at the clean shutdown"))
        elif name == ABORT_FILE:
            parts.append(Part(name, "abort marker (the last exit was not clean)", DECODED, "", "DefaultMessageStore.createTempFile",
                              recovered="chooses abnormal recovery; removed at the clean shutdown"))
        elif name == ABORT_FILE + ".bak":
            parts.append(Part(name, "previous abort marker", READ, "MixAll.string2File's copy; RocketMQ does not read it", "MixAll.string2File"))
        elif name == LOCK_FILE:
            parts.append(Part(name, "store lock", DECODED, "held while a broker runs", "DefaultMessageStore.start"))
        elif name == TIMER_WHEEL_FILE and p.is_file():
            parts.append(Part(name, "timer wheel (timerWheelEnable)", DECODED, "`rmqlab timers`; verify checks its slots against the timer log", "TimerWheel"))
        elif name == TIMER_LOG_DIR and p.is_dir() and _rust_timer_log(p):
            parts.append(Part(name + "/", "rocketmq-rust's timer log (v2: 80-byte records in timerlog/v2/log/ segments)", DECODED, _RUST_TIMER_NOTE,
                              "segmented_timer_log.rs SegmentedTimerLog"))
        elif name == TIMER_LOG_DIR and p.is_dir():
            parts.append(Part(name + "/", "timer log", DECODED, "`rmqlab timers`; verify checks each unit against the commitlog", "TimerLog"))
        elif name in _RUST_TIMER_DIRS and p.is_dir():
            what, source = _RUST_TIMER_DIRS[name]
            parts.append(Part(name + "/", what, DECODED, _RUST_TIMER_NOTE, source))
        elif name == CONFIG_DIR and p.is_dir():
            parts += _config_parts(p)
        elif p.is_dir() and any(p.resolve() == Path(d).resolve() for d in lay.commitlog_dirs):
            pass  # a directory of the log under the root (listed above)
        elif name == COMPACTION_DIR and p.is_dir():
            # DefaultMessageStore makes compaction/ on every start; only compacted topics put logs in it
            logs = [f for d in (COMPACTION_LOG_DIR, COMPACTION_CQ_DIR) for f in (p / d).rglob("*") if f.is_file()]
            if logs:
                n = len([q for t in (p / COMPACTION_LOG_DIR).iterdir() if t.is_dir() for q in t.iterdir() if q.is_dir()]) if (p / COMPACTION_LOG_DIR).is_dir() else 0
                parts.append(Part(name + "/", f"compaction store (cleanup.policy=COMPACTION; {n} compacted queue(s))", DECODED,
                                  "compactionLog/ records and compactionCq/ units checked against each other and the commitlog (`rmqlab compaction` lists them); "
                                  "compacting/ and replicating/ (a compaction or copy under way) are not",
                                  "CompactionStore / CompactionLog / SparseConsumeQueue",
                                  recovered="CompactionStore.load: SparseConsumeQueue.recover, the log cut after its queue's last unit, sanityCheck"))
            else:
                parts.append(Part(name + "/", "compaction store, no compacted topic", READ, "no compaction log or queue in it", "CompactionStore"))
        elif name == MESSAGE_ROCKSDB_DIR and p.is_dir():
            parts.append(_message_rocksdb_part(p))
        elif name == CONSUMEQUEUE_ROCKSDB_DIR and p.is_dir():
            parts.append(_separate_rocksdb_part(p, root, lay, settings))
        elif is_timer_wheel_snapshot(name) and p.is_file():
            flags = [timer_wheel_snapshot_flag(q.name) for q in root.iterdir() if q.is_file() and is_timer_wheel_snapshot(q.name)]
            if timer_wheel_snapshot_flag(name) == max(flags) and (settings or {}).get("timerWheelSnapshotFlush", "true") != "false":
                parts.append(Part(name, "timer-wheel snapshot (5.4+, timerWheelSnapshotFlush), the newest", DECODED,
                                  "the wheel TimerMessageStore loads at start (TimerWheel.getMaxSnapshotFlag); `rmqlab timers` and verify read it, "
                                  "the timer-log units after its offset as re-chained at start", "TimerWheel.backup / TimerMessageStore (snapOffset)"))
            else:
                parts.append(Part(name, "timer-wheel snapshot (5.4+, timerWheelSnapshotFlush), an older one", READ,
                                  "TimerWheel.cleanExpiredSnapshot keeps the two newest; the broker loads only the newest", "TimerWheel.backup"))
        elif name == "kvStore" and p.is_dir():
            parts.append(Part(name + "/", "pop consumer records in RocksDB", NOT_CHECKED, "RocksDB is not read here", "PopConsumerService"))
        elif name == "epochFileCheckpoint" or name == "epochFileCheckpoint.bak":
            parts.append(Part(name, "controller-mode epoch file", NOT_CHECKED, "epochs of the replicated log", "EpochFileCache (MessageStoreConfig.getStorePathEpochFile)",
                              "a controller-mode broker truncates its log by epoch at start (AutoSwitchHAService); not modelled"))
        elif name in ("brokerIdentity", "brokerIdentity-temp"):
            parts.append(Part(name, "controller-mode broker identity", NOT_CHECKED, "broker metadata, not message data", "BrokerMetadata (MessageStoreConfig.getStorePathBrokerIdentity)"))
        elif name == "tiered_index_file" and p.is_dir():
            parts.append(Part(name + "/", "tiered store index", NOT_CHECKED, "the tiered store's own index files", "tieredstore IndexStoreService"))
        elif name == "transaction" and p.is_dir():
            parts.append(Part(name + "/", "transaction state table / redo log (old brokers)", NOT_CHECKED, "not decoded here", "StorePathConfigHelper.getTranStateTableStorePath"))
        elif p.is_dir() and len(log_dirs) == 1 and _offset_named(p):
            # another directory of a log spread over several (MultiPathMappedFileQueue)
            # read without its settings: its files are the gaps of commitlog/'s
            parts.append(Part(name + "/", "commitlog-named files outside the configured log", NOT_CHECKED,
                              "a directory of a log spread over several (storePathCommitLog)? give it with --commitlog-dir", "MultiPathMappedFileQueue",
                              "the log's other directories are not known; recovery would cut the log at the first missing file"))
            lay.log_elsewhere = lay.log_elsewhere or (f"{name}/ holds files named like commitlog files: the log looks spread over several directories "
                                                      f"(storePathCommitLog); give them with --commitlog-dir or --config")
        else:
            parts.append(Part(name + ("/" if p.is_dir() else ""), "unknown " + ("directory" if p.is_dir() else "file"), UNKNOWN, "no RocketMQ layout of this name"))
    return lay


def _separate_rocksdb_part(p: Path, root: Path, lay: StoreLayout, settings: dict) -> Part:
    """``consumequeue_rocksdb/`` (5.5+, ``useSeparateStorePathForRocksdbCQ``): the RocksDB
    queue store's own directory (``RocksDBConsumeQueueStore``: the same families and
    keys as in ``consumequeue/``).  With file queues in ``consumequeue/`` it is the
    RocksDB half of a ``CombineConsumeQueueStore`` (``rocksdbCQDoubleWriteEnable``);
    without, the store's queues (``storeType=defaultRocksDB``)."""
    java = "RocksDBConsumeQueueStore (StorePathConfigHelper.getStorePathRocksDBConsumeQueue)"
    if not is_rocksdb_names(f.name for f in p.iterdir() if f.is_file()):
        return Part(p.name + "/", "RocksDB consume-queue directory (5.5+) without a RocksDB in it", NOT_CHECKED, "no CURRENT and MANIFEST", java)
    if lay.rocksdb_consume_queue:  # consumequeue/ holds one too: RocketMQ refuses such a store
        return Part(p.name + "/", "a second RocksDB of consume queues (5.5+)", NOT_CHECKED,
                    "consumequeue/ holds one already: RocketMQ refuses to start (\"find RocksDBConsumeQueue in original/separate path\")", java,
                    "RocketMQ does not start with RocksDB queues in both directories")
    lay.rocksdb_consume_queue, lay.rocksdb_dir = True, str(p)
    cq = root / CONSUMEQUEUE_DIR
    files_too = cq.is_dir() and any(q.is_dir() for q in cq.iterdir())
    store_type = (settings or {}).get("storeType")
    lay.rocksdb_double_write = files_too if store_type is None else store_type != "defaultRocksDB"
    if lay.rocksdb_double_write:
        return Part(p.name + "/", "RocksDB copy of the consume queues in its own directory (5.5+: CombineConsumeQueueStore, useSeparateStorePathForRocksdbCQ)",
                    DECODED, "read-only; verify compares every unit with the file queues' (as checkRocksdbCqWriteProgress)", java,
                    recovered=_ROCKSDB_COPY_RECOVERY)
    return Part(p.name + "/", "RocksDB consume queue in its own directory (5.5+: storeType=defaultRocksDB, useSeparateStorePathForRocksdbCQ)", DECODED,
                "read-only (rmqlab[rocksdb]): units of the default column family, min/max of the offset family, dispatch's progress", java,
                recovered=_ROCKSDB_QUEUE_RECOVERY)


def _message_rocksdb_part(p: Path) -> Part:
    """``rocksdbstore/`` (Java ``MessageRocksDBStorage``): RocketMQ 5.4+ opens it on every
    start, so it is there, empty, in every store a 5.4+ broker ran; it holds data only
    with keys (``indexRocksDBEnable``), timers (``timerRocksDBEnable``) or transactions
    (``transRocksDBEnable``) in RocksDB.  Empty (no table file, an empty write-ahead
    log), recovery does not depend on it."""
    from .rocksdb_message import holds_data

    holds = holds_data(p)
    owner = "MessageRocksDBStorage (IndexRocksDBStore, TimerMessageRocksDBStore, TransMessageRocksDBStore)"
    if not holds:
        return Part(p.name + "/", "RocksDB of keys, timers and transactions (5.4+), empty", READ,
                    "no table file and an empty log: none of indexRocksDBEnable, timerRocksDBEnable, transRocksDBEnable wrote to it", owner)
    return Part(p.name + "/", "RocksDB of keys, timers and transactions (5.4+: indexRocksDBEnable, timerRocksDBEnable, transRocksDBEnable)", DECODED,
                "read-only (rmqlab[rocksdb]): `lookup --key` answers from its keys as IndexRocksDBStore does, `transactions` lists its half "
                "messages, `timers` its timer messages; verify checks every entry against the record it names", owner,
                recovered="RocketMQ's start-up asks these stores where recovery starts (their lastOffsetPy) and re-dispatches the records "
                          "at or past it into them (IndexRocksDBStore.buildIndex, TransMessageRocksDBStore.buildTransIndex): applying writes "
                          "the same; the timers' family is not fed by dispatch and stays as it is")


def dledger_log_dir(root: str | os.PathLike) -> Path | None:
    """The ``dledger-<selfId>/`` whose entries are the store's log (Java
    ``DLedgerCommitLog``: ``storePathRootDir/dledger-<selfId>/data``): the one such
    directory with ``data/``, in a root whose ``commitlog/`` holds no file (a store
    converted to DLedger keeps its old log there, which is not read here)."""
    root = Path(root)
    found = [p for p in root.iterdir() if p.is_dir() and p.name.startswith(DLEDGER_PREFIX) and (p / DLEDGER_DATA_DIR).is_dir()]
    if len(found) != 1 or _offset_named(root / COMMITLOG_DIR):
        return None
    return found[0]


def _offset_named(d: Path) -> bool:
    """A directory holding files named by a 20-digit offset (UtilAll.offset2FileName)."""
    if not d.is_dir():
        return False
    files = [p for p in d.iterdir() if p.is_file()]
    return bool(files) and all(len(p.name) == 20 and p.name.isdigit() for p in files)
