"""RocketMQ's semantic rules, each spelled once: what a record means to the store, as
opposed to how its bytes are laid out (``rmqlab.format``).

Every writer, reader and checker asks here: dispatch (the engine's reput and
recovery's), ``verify``, the lookups.  Each rule names the Java method it mirrors
(Apache RocketMQ 5.3.3).

- :func:`tags_code` — the consume-queue tagsCode of a record
  (``CommitLog.checkMessageAndReturnSize``): ``String.hashCode`` of TAGS, or on
  ``SCHEDULE_TOPIC_XXXX`` with a DELAY level > 0 the delivery time
  (``computeDeliverTimestamp``).  A level ≤ 0 keeps the TAGS hash (Java:
  ``if (delayLevel > 0)``).
- :func:`parse_delay_levels` — ``messageDelayLevel`` → {level: ms}
  (``ScheduleMessageService.parseDelayLevel``).
- :func:`goes_to_consume_queue` — only NOT and COMMIT transaction types get a queue
  entry and a queue offset (``CommitLogDispatcherBuildConsumeQueue.dispatch``,
  ``CommitLog.DefaultAppendMessageCallback``).
- :func:`goes_to_index` and :func:`index_keys` — every type but ROLLBACK is indexed,
  under ``topic#UNIQ_KEY`` then ``topic#k`` for each non-empty KEYS token
  (``IndexService.buildIndex``).
- The store root's file and directory names (``StorePathConfigHelper``,
  ``DefaultMessageStore``, ``BrokerPathConfigHelper``).

The predicates on sysFlag take an int or a numpy array of them (the bulk paths ask
the same question of a whole column).
"""

from __future__ import annotations

import re

from .format import properties as props
from .format.commitlog import BLANK_SIZE, TRANSACTION_COMMIT_TYPE, TRANSACTION_MASK, TRANSACTION_NOT_TYPE, TRANSACTION_ROLLBACK_TYPE
from .format.hashing import java_string_hash
from .format.indexfile import index_key, index_tag_key

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"  # Java TopicValidator.RMQ_SYS_SCHEDULE_TOPIC
#: Java TopicValidator.RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC / RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC:
#: a transaction's half message and the op message that ends it (5.4+, transRocksDBEnable)
TRANS_HALF_TOPIC = "RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC"
TRANS_OP_HALF_TOPIC = "RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC"

# the store root (Java StorePathConfigHelper; BrokerPathConfigHelper for config/)
COMMITLOG_DIR = "commitlog"  # MessageStoreConfig.storePathCommitLog default
CONSUMEQUEUE_DIR = "consumequeue"  # getStorePathConsumeQueue
BATCH_CONSUMEQUEUE_DIR = "batchconsumequeue"  # getStorePathBatchConsumeQueue (queue.type=BatchCQ)
COMPACTION_DIR = "compaction"  # CompactionStore.COMPACTION_DIR (cleanup.policy=COMPACTION)
COMPACTION_LOG_DIR = "compactionLog"  # CompactionStore.COMPACTION_LOG_DIR, under compaction/
COMPACTION_CQ_DIR = "compactionCq"  # CompactionStore.COMPACTION_CQ_DIR, under compaction/
COMPACTION_POSITION_FILE = "position-checkpoint"  # CompactionPositionMgr.CHECKPOINT_FILE, under compaction/
CONSUMEQUEUE_EXT_DIR = "consumequeue_ext"  # getStorePathConsumeQueueExt (enableConsumeQueueExt)
CONSUMEQUEUE_ROCKSDB_DIR = "consumequeue_rocksdb"  # getStorePathRocksDBConsumeQueue (5.5+, useSeparateStorePathForRocksdbCQ)
#: Java Long.MAX_VALUE: the open end of a time window (queryMessage's default end)
LONG_MAX = 2**63 - 1
MESSAGE_ROCKSDB_DIR = "rocksdbstore"  # MessageRocksDBStorage.ROCKSDB_MESSAGE_DIRECTORY (5.4+: keys, timers, transactions in RocksDB)
INDEX_DIR = "index"  # getStorePathIndex
CHECKPOINT_FILE = "checkpoint"  # getStoreCheckpoint
ABORT_FILE = "abort"  # getAbortFile
LOCK_FILE = "lock"  # getLockFile
CONFIG_DIR = "config"  # BrokerPathConfigHelper.getBrokerConfigPath's directory
# config/ (BrokerPathConfigHelper; delayOffset.json: StorePathConfigHelper.getDelayOffsetStorePath)
TOPICS_FILE = "topics.json"  # TopicConfigManager
CONSUMER_OFFSET_FILE = "consumerOffset.json"  # ConsumerOffsetManager
LMQ_CONSUMER_OFFSET_FILE = "lmqConsumerOffset.json"  # LmqConsumerOffsetManager
DELAY_OFFSET_FILE = "delayOffset.json"  # ScheduleMessageService
SUBSCRIPTION_GROUP_FILE = "subscriptionGroup.json"  # SubscriptionGroupManager
TIMER_CHECK_FILE = "timercheck"  # TimerCheckpoint (BrokerPathConfigHelper.getTimerCheckPath)
# the timer store (TimerMessageStore.getTimerWheelPath / getTimerLogPath)
TIMER_WHEEL_FILE = "timerwheel"


def timer_wheel_snapshot_flag(name: str) -> int | None:
    """The timer-log offset a ``timerwheel.<offset>`` snapshot (5.4+,
    ``timerWheelSnapshotFlush``) was taken at, or None for any other name (Java
    ``TimerWheel.getMaxSnapshotFlag``: the name after ``timerwheel.`` as a long, ≥ 0)."""
    head, dot, flag = name.partition(".")
    return int(flag) if head == TIMER_WHEEL_FILE and dot and flag.isdigit() else None


TIMER_LOG_DIR = "timerlog"
LMQ_PREFIX = "%LMQ%"  # MixAll.LMQ_PREFIX: a light message queue's topic (multi-dispatch)

_TIME_UNITS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_delay_levels(spec: str) -> dict[int, int]:
    """Java ``ScheduleMessageService.parseDelayLevel``: ``"1s 5s 10s …"`` → {level: ms}."""
    table = {}
    for i, word in enumerate(spec.split(), start=1):
        m = re.fullmatch(r"(\d+)([smhd])", word.strip())
        if not m:
            raise ValueError(f"messageDelayLevel: cannot parse {word!r}")
        table[i] = int(m.group(1)) * _TIME_UNITS[m.group(2)]
    return table


def delay_level_queue_id(level: int) -> int:
    """Java ``ScheduleMessageService.delayLevel2QueueId``: delay level L waits in
    ``SCHEDULE_TOPIC_XXXX`` queue L - 1."""
    return level - 1


def tags_code(topic: str, java_props: dict[str, str], store_timestamp: int, delay_levels: dict[int, int]) -> int:
    """tagsCode as Java ``CommitLog.checkMessageAndReturnSize`` computes it.

    A DELAY that is not a number makes Java's ``parseInt`` throw, so the record is not
    dispatched at all (recovery's acceptance pass stops there: ``DELAY_PARSE``); here
    it counts as level 0."""
    code = 0
    tags = java_props.get(props.TAGS)
    if tags:
        code = java_string_hash(tags)
    if topic == SCHEDULE_TOPIC:
        t = java_props.get(props.DELAY)
        if t is not None:
            level = java_parse_int(t) or 0
            max_level = max(delay_levels) if delay_levels else 0
            level = min(level, max_level)
            if level > 0:
                delay = delay_levels.get(level)
                code = store_timestamp + (delay if delay is not None else 1000)
    return code


def java_parse_int(s: str) -> int | None:
    """Java ``Integer.parseInt``: None where it throws (spaces, overflow, no digits)."""
    if not re.fullmatch(r"[+-]?\d+", s):
        return None
    v = int(s)
    return v if -(2**31) <= v < 2**31 else None


def fits_in_file(record_size: int, bytes_left: int) -> bool:
    """Java ``DefaultAppendMessageCallback.doAppend`` (and ``doAppend`` of a batch): a
    record (or a whole batch's records) goes into the current commitlog file only if
    a BLANK still fits after it (``END_FILE_MIN_BLANK_LENGTH``); otherwise the file
    is closed with a BLANK of the bytes left (``END_OF_FILE``) and the record goes
    to the next file."""
    return record_size + BLANK_SIZE <= bytes_left


def goes_to_consume_queue(sys_flag):
    """Java ``CommitLogDispatcherBuildConsumeQueue.dispatch``: only NOT and COMMIT
    transaction types get a consume-queue entry; they are also the ones the put gives a
    queue offset (``CommitLog.DefaultAppendMessageCallback``: PREPARED and ROLLBACK
    leave the queue offset where it is).  An int or a numpy array of sysFlags."""
    t = sys_flag & TRANSACTION_MASK
    return (t == TRANSACTION_NOT_TYPE) | (t == TRANSACTION_COMMIT_TYPE)


def batch_sizes(queue_offset, inner_num, inner_base):
    """Java ``CommitLog.setBatchSizeIfNeeded``: a record whose properties hold both
    INNER_NUM and INNER_BASE (an inner batch: ``SendMessageProcessor`` puts a producer's
    batch to a ``queue.type=BatchCQ`` topic as one record) dispatches as INNER_NUM
    messages from queue offset INNER_BASE; any other as one message at its queue
    offset (``DispatchRequest``'s defaults).  The queue's next offset is the base plus
    that count (``BatchConsumeQueue.increaseQueueOffset``).  Arrays: ``queue_offset``
    int64, ``inner_num`` and ``inner_base`` strings (None where absent); returns
    ``(msg_base_offset, batch_size)`` int64 arrays.  A value Java's ``parseShort`` /
    ``parseLong`` refuses counts as absent here."""
    import numpy as np

    n = len(queue_offset)
    base = np.asarray(queue_offset, np.int64).copy()
    size = np.ones(n, np.int64)
    for i, (num, b) in enumerate(zip(inner_num, inner_base)):
        if num is None or b is None:
            continue
        v, w = java_parse_int(num), (int(b) if re.fullmatch(r"[+-]?\d+", b) and -(2**63) <= int(b) < 2**63 else None)
        if v is None or w is None or not -(2**15) <= v < 2**15:
            continue
        base[i], size[i] = w, v
    return base, size


#: MixAll.RETRY_GROUP_TOPIC_PREFIX and TopicValidator.SYSTEM_TOPIC_PREFIX: topics never multi-dispatched
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
SYSTEM_TOPIC_PREFIX = "rmq_sys_"


def _java_split(s: str, sep: str) -> list[str]:
    """Java ``String.split``: trailing empty strings are removed."""
    parts = s.split(sep)
    while parts and not parts[-1]:
        parts.pop()
    return parts


def multi_dispatch_targets(topic: str, queue_id: int, dispatch: str | None, offsets: str | None, *, enable_lmq: bool) -> list[tuple[str, int, int]]:
    """Java ``ConsumeQueue.putMessagePositionInfoWrapper`` → ``multiDispatchLmqQueue``
    (with ``enableMultiDispatch``): the queues a record of ``topic`` also gets a unit
    in, as ``(topic, queueId, queue offset)``, from its INNER_MULTI_DISPATCH and
    INNER_MULTI_QUEUE_OFFSET.  None for a retry or ``rmq_sys_`` topic or
    SCHEDULE_TOPIC_XXXX (``MultiDispatchUtils.isNeedHandleMultiDispatch``), or when
    either property is blank (``checkMultiDispatchQueue``), or when their counts
    differ ("[bug] queues.length!=queueOffsets.length").  A name holding a path
    separator is skipped; an LMQ name (``%LMQ%``, with ``enableLmq``) goes to queue 0,
    any other to the record's queue id.  (An offset ``Long.parseLong`` refuses makes
    Java's dispatch throw; here that name is skipped.)"""
    if topic.startswith((RETRY_GROUP_TOPIC_PREFIX, SYSTEM_TOPIC_PREFIX)) or topic == SCHEDULE_TOPIC:
        return []
    if not dispatch or not dispatch.strip() or not offsets or not offsets.strip():
        return []
    names, offs = _java_split(dispatch, props.LMQ_DISPATCH_SEPARATOR), _java_split(offsets, props.LMQ_DISPATCH_SEPARATOR)
    if len(names) != len(offs):
        return []
    out = []
    for name, off in zip(names, offs):
        if "/" in name or not re.fullmatch(r"[+-]?\d+", off) or not -(2**63) <= int(off) < 2**63:
            continue
        out.append((name, 0 if enable_lmq and name.startswith(LMQ_PREFIX) else queue_id, int(off)))
    return out


def goes_to_index(sys_flag):
    """Java ``IndexService.buildIndex``: every transaction type but ROLLBACK is
    indexed (records below the last index file's endPhyOffset are skipped too: that
    is the index's state, not the record's).  An int or a numpy array of sysFlags."""
    return (sys_flag & TRANSACTION_MASK) != TRANSACTION_ROLLBACK_TYPE


def index_keys(topic: str, uniq_key: str | None, keys: str | None, tags: str | None = None, uniq_type: str = "") -> list[str]:
    """The keys Java ``IndexService.buildIndex`` puts for one record, in its order:
    ``topic#UNIQ_KEY`` (when the property is there; Java's property parser drops empty
    values), then ``topic#k`` for each non-empty token of KEYS split on
    ``MessageConst.KEY_SEPARATOR``, then (5.4+, :attr:`rmqlab.releases.Release.index_tags`:
    pass ``tags`` only for such a release) ``topic#T#TAGS`` when TAGS is not empty.
    ``uniq_type`` (:attr:`rmqlab.releases.Release.uniq_index_type`): rocketmq-rust's
    ``"U#"`` before the UNIQ_KEY."""
    out = [index_key(topic, uniq_type + uniq_key)] if uniq_key else []
    if keys:
        out += [index_key(topic, k) for k in keys.split(props.KEY_SEPARATOR) if k]
    if tags:
        out.append(index_tag_key(topic, tags))
    return out
