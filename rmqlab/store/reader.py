"""Open a store root read-only: find every file, learn the sizes, hand out the pieces.

Java counterpart: the loading half of ``DefaultMessageStore`` (``load()`` before
recovery).  Nothing here writes; evidence stays as it was.

File sizes come, in this order, from the caller's :class:`MessageStoreConfig`, a
``broker.conf``-style file, or the files themselves (gap between names, file
length; for index files the length with Java's default 4 entries per slot).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import reprs
from ..config import MessageStoreConfig
from ..errors import StoreFormatError, StoreLayoutError
from ..format.consumequeue import BCQ_STORE_UNIT_SIZE, CQ_STORE_UNIT_SIZE
from ..format.indexfile import DEFAULT_MAX_HASH_SLOT_NUM, DEFAULT_MAX_INDEX_NUM, INDEX_HEADER_SIZE, index_file_size
from .checkpoint import Checkpoint, read_checkpoint
from .commitlog import CommitLog
from .batch_consume_queue import BatchConsumeQueue
from .consume_queue import ConsumeQueue, ConsumeQueueExt
from .index_file import IndexService
from .dledger import DLedgerCommitLog
from .layout import commitlog_dirs, dledger_log_dir
from ..rules import ABORT_FILE, BATCH_CONSUMEQUEUE_DIR, CHECKPOINT_FILE, COMMITLOG_DIR, CONFIG_DIR, CONSUMEQUEUE_DIR, CONSUMEQUEUE_EXT_DIR, INDEX_DIR, LMQ_PREFIX, LOCK_FILE



#: Java's defaults give every hash slot 4 entries (maxIndexNum = 4 × maxHashSlotNum)
_ENTRIES_PER_SLOT = DEFAULT_MAX_INDEX_NUM // DEFAULT_MAX_HASH_SLOT_NUM


def infer_index_sizes(file_size: int, path: str | os.PathLike = "<index>", *, hint: str = "pass them (--max-hash-slot-num, --max-index-num)") -> tuple[int, int]:
    """``(maxHashSlotNum, maxIndexNum)`` from an index file's length, assuming
    Java's default of 4 entries per slot (header + slots × (slot + 4 entries)).
    ``hint`` ends the error: how the caller's user gives the sizes instead."""
    body = file_size - INDEX_HEADER_SIZE
    per_slot = index_file_size(1, _ENTRIES_PER_SLOT) - INDEX_HEADER_SIZE
    if body <= 0 or body % per_slot:
        raise StoreLayoutError(path, None, f"cannot infer maxHashSlotNum/maxIndexNum from this {file_size}-byte index file; {hint}")
    slots = body // per_slot
    return slots, slots * _ENTRIES_PER_SLOT


@dataclass
class QueueId:
    topic: str
    queue_id: int

    def __str__(self) -> str:
        return f"{self.topic}/{self.queue_id}"


class StoreReader:
    """A store root opened read-only.

    ``config`` sizes win; settings it leaves at ``None`` in ``overrides`` are
    inferred.  ``strict`` makes layout problems (wrong file sizes, gaps between
    names) errors; otherwise they are collected in :attr:`problems`.  ``queues_truncated``:
    whether the next start cuts the queues' units past the end of the log
    (:attr:`queues_truncated`).  ``log_end``: where
    the log ends when the caller knows it (a running engine), or a function asked when a
    lookup first needs it (the recovery plan's end: :func:`rmqlab.open_store` passes
    :func:`rmqlab.recovery.next_start.log_end`); else :meth:`CommitLog.served_end` finds it.

    >>> from rmqlab import open_store
    >>> from rmqlab.lab.samples import shipped_dir
    >>> with open_store(shipped_dir() / "crashed") as store:
    ...     print(store.queue_ids()[:2], store.abort_exists, store.commitlog.served_end())
    [QueueId(topic='Audit', queue_id=0), QueueId(topic='Orders', queue_id=0)] True ...
    """

    def __init__(
        self,
        root: str | os.PathLike,
        config: MessageStoreConfig | None = None,
        *,
        config_file: str | os.PathLike | None = None,
        strict: bool = True,
        log_end: "int | Callable[[], int | None] | None" = None,
        queues_truncated: "bool | Callable[[], bool] | None" = None,
        index_sizes: tuple[int, int] | None = None,
        log_dirs: MessageStoreConfig | None = None,
    ):
        self.root = Path(root)
        if not self.root.is_dir():
            raise StoreLayoutError(self.root, None, "store root is not a directory")
        explicit = config is not None or config_file is not None
        if config_file is not None:
            config = MessageStoreConfig.from_properties(config_file)
        #: the directories of the log (one, or several: storePathCommitLog / readOnlyCommitLogStorePaths)
        self.commitlog_dirs = commitlog_dirs(self.root, config or log_dirs)
        #: the DLedger directory whose entries are the log (enableDLegerCommitLog), or None
        self.dledger_dir = dledger_log_dir(self.root)
        if self.dledger_dir is None and not self.commitlog_dirs[0].is_dir():
            raise StoreLayoutError(self.root, None, f"no {COMMITLOG_DIR}/ directory: this is not a RocketMQ store root (a log kept elsewhere: --commitlog-dir)")
        self.config_explicit = explicit
        self.strict = strict
        #: whether the next start cuts the queues' units past the end of the log (a bool,
        #: or a function asked on first use: rmqlab.recovery.next_start.Asked); None: it does
        self._queues_truncated = queues_truncated
        cfg = config or MessageStoreConfig()
        self.problems: list[StoreFormatError] = []
        if self.dledger_dir is not None:
            self.commitlog = DLedgerCommitLog(self.dledger_dir, cfg.mapped_file_size_commit_log if explicit else None, strict=strict, served_end=log_end)
        else:
            self.commitlog = CommitLog(self.commitlog_dirs, cfg.mapped_file_size_commit_log if explicit else None, strict=strict, served_end=log_end)
        self.problems += self.commitlog.queue.problems
        # settle the sizes this store actually uses
        if index_sizes is None:
            index_sizes = (cfg.max_hash_slot_num, cfg.max_index_num)
            if not explicit:
                index_sizes = self._infer_index_sizes() or index_sizes
        if log_dirs is not None and config is None:
            cfg = cfg.replace(store_path_commit_log=log_dirs.store_path_commit_log, read_only_commit_log_store_paths=log_dirs.read_only_commit_log_store_paths)
        self.config = cfg.replace(
            store_path_root_dir=str(self.root),
            mapped_file_size_commit_log=self.commitlog.mapped_file_size or cfg.mapped_file_size_commit_log,
            max_hash_slot_num=index_sizes[0],
            max_index_num=index_sizes[1],
        )
        self._cq_size_explicit = cfg.mapped_file_size_consume_queue if explicit else None
        self._consume_queues: dict[tuple[str, int], ConsumeQueue] = {}
        self._index: IndexService | None = None
        self._layout = None
        self._rocksdb = None
        self._message_rocksdb = False  # not opened yet (None: the store has none)

    @property
    def layout(self):
        """What each file and directory of the root is (:func:`rmqlab.store.layout.recognise`)."""
        if self._layout is None:
            from .layout import recognise

            self._layout = recognise(self.root, self.config)
        return self._layout

    def _infer_index_sizes(self) -> tuple[int, int] | None:
        """From the most common index file length (one damaged file must not decide)."""
        d = self.root / INDEX_DIR
        if not d.is_dir():
            return None
        sizes = Counter(p.stat().st_size for p in d.iterdir() if p.is_file() and p.name.isdigit())
        if not sizes:
            return None
        size = sizes.most_common(1)[0][0]
        example = next(p for p in sorted(d.iterdir()) if p.is_file() and p.stat().st_size == size)
        return infer_index_sizes(size, example)

    # -- pieces -----------------------------------------------------------------------------
    @property
    def index(self) -> IndexService:
        if self._index is None:
            self._index = IndexService(self.root / INDEX_DIR, self.config.max_hash_slot_num, self.config.max_index_num)
            self.problems += self._index.problems
        return self._index

    @property
    def rocksdb(self):
        """The RocksDB instance of ``consumequeue/`` (:class:`~rmqlab.store.rocksdb_queue
        .RocksDBConsumeQueueStore`), opened read-only on first use; None without one."""
        if self._rocksdb is None and self.layout.rocksdb_consume_queue:
            from .rocksdb_queue import RocksDBConsumeQueueStore

            self._rocksdb = RocksDBConsumeQueueStore(Path(self.layout.rocksdb_dir))
            if self.layout.rocksdb_queues:  # LMQ queues are keys there, not directories the layout saw
                lmq = {t for t, _ in self._rocksdb.queue_ids() if t.startswith(LMQ_PREFIX)}
                self.layout.lmq_topics = sorted(set(self.layout.lmq_topics) | lmq)
        return self._rocksdb

    @property
    def message_rocksdb(self):
        """``rocksdbstore/``'s keys, timers and transactions (5.4+; :class:`~rmqlab.store
        .rocksdb_message.MessageRocksDBStore`), opened read-only on first use; None without one."""
        if self._message_rocksdb is False:
            from .rocksdb_message import MessageRocksDBStore

            self._message_rocksdb = MessageRocksDBStore.of(self.root)
        return self._message_rocksdb

    def queue_ids(self) -> list[QueueId]:
        """Every consume queue, sorted: the ``consumequeue/<topic>/<queueId>`` and
        ``batchconsumequeue/<topic>/<queueId>`` directories, or the queues of the RocksDB
        that holds them (storeType=defaultRocksDB)."""
        if self.layout.rocksdb_queues:
            return [QueueId(t, q) for t, q in self.rocksdb.queue_ids()]
        out = []
        for base in (self.root / CONSUMEQUEUE_DIR, self.root / BATCH_CONSUMEQUEUE_DIR):
            if base.is_dir():
                for t in sorted(base.iterdir()):
                    if not t.is_dir():
                        continue
                    for q in sorted(t.iterdir(), key=lambda p: (not p.name.isdigit(), int(p.name) if p.name.isdigit() else 0, p.name)):
                        if q.is_dir() and q.name.isdigit():
                            out.append(QueueId(t.name, int(q.name)))
        return sorted(out, key=lambda q: (q.topic, q.queue_id))

    def consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        """One queue (Java ``findConsumeQueue``): a file queue, or a RocksDB queue that
        answers the same calls (:class:`~rmqlab.store.rocksdb_queue.RocksDBConsumeQueue`)."""
        key = (topic, queue_id)
        cq = self._consume_queues.get(key)
        if cq is None:
            lay = self.layout
            if lay.rocksdb_queues:
                if key not in self.rocksdb.offset_table():
                    raise StoreLayoutError(self.root / CONSUMEQUEUE_DIR, None, f"no consume queue for {topic}/{queue_id} in the RocksDB consume queue")
                cq = self._consume_queues[key] = self.rocksdb.consume_queue(topic, queue_id)
                return cq
            d = self.root / CONSUMEQUEUE_DIR / topic / str(queue_id)
            batch = self.root / BATCH_CONSUMEQUEUE_DIR / topic / str(queue_id)
            if not d.is_dir() and batch.is_dir():  # queue.type=BatchCQ
                cq = self._consume_queues[key] = BatchConsumeQueue(batch, topic, queue_id, strict=self.strict)
                self.problems += cq.queue.problems
                return cq
            if not d.is_dir():
                why = f"{topic}: {lay.unchecked_topics[topic]}" if topic in lay.unchecked_topics else ""
                raise StoreLayoutError(d, None, f"no consume queue for {topic}/{queue_id}" + (f": {why}" if why else ""))
            cq = ConsumeQueue(d, topic, queue_id, self._cq_size_explicit, strict=self.strict)
            self.problems += cq.queue.problems
            self._consume_queues[key] = cq
        return cq

    def consume_queue_ext(self, topic: str, queue_id: int) -> "ConsumeQueueExt | None":
        """The ext files of a queue (``consumequeue_ext/<topic>/<queueId>/``), or None."""
        d = self.root / CONSUMEQUEUE_EXT_DIR / topic / str(queue_id)
        if not d.is_dir():
            return None
        return ConsumeQueueExt(d)

    def checkpoint(self) -> Checkpoint | None:
        p = self.root / CHECKPOINT_FILE
        return read_checkpoint(p) if p.exists() else None

    # -- state files --------------------------------------------------------------------------
    @property
    def abort_exists(self) -> bool:
        """Java ``isTempFileExist``: the last exit was not clean."""
        return (self.root / ABORT_FILE).exists()

    def refers_past(self, physical_offset: int) -> bool:
        """Whether any consume-queue unit or index entry points at or past
        ``physical_offset`` (what dispatch recorded of the log beyond it)."""
        min_off = self.commitlog.min_offset
        for qid in self.queue_ids():
            try:
                if self.consume_queue(qid.topic, qid.queue_id).last_unit_end(min_off) > physical_offset:
                    return True
            except StoreFormatError:
                continue
        files = self.index.files
        return bool(files) and files[-1].header.end_phy_offset >= physical_offset

    def dead_past(self, physical_offset: int) -> bool:
        """Whether the bytes from ``physical_offset`` on are dead: the last exit was
        clean (no ``abort``) and nothing refers to them (:meth:`refers_past`).  Where
        RocketMQ's walk stops at such a point the log simply ends there: what a
        recovery that did not zero the cut bytes leaves, or garbage written after a
        clean shutdown.  Java serves nothing from them."""
        return not self.abort_exists and not self.refers_past(physical_offset)

    def abort_content(self) -> str | None:
        p = self.root / ABORT_FILE
        if not p.exists():
            return None
        return p.read_bytes().decode("utf-8", errors="replace")

    @property
    def queues_truncated(self) -> bool:
        """Whether the store's next start cuts the consume queues' units at or past the end
        of the log (Java always does where they reach it; rocketmq-rust only where its
        lowest dispatch progress does): what the queues serve after that start."""
        if callable(self._queues_truncated):
            self._queues_truncated = bool(self._queues_truncated())
        return True if self._queues_truncated is None else self._queues_truncated

    def lock_state(self) -> str:
        """``absent``, ``free`` or ``held``: see :func:`lock_state`."""
        return lock_state(self.root)

    def config_files(self) -> list[Path]:
        d = self.root / CONFIG_DIR
        return sorted(p for p in d.iterdir() if p.is_file()) if d.is_dir() else []

    def expected_index_file_size(self) -> int:
        return index_file_size(self.config.max_hash_slot_num, self.config.max_index_num)

    def close(self) -> None:
        self.commitlog.close()
        for cq in self._consume_queues.values():
            cq.close()
        if self._rocksdb is not None:
            self._rocksdb.close()
        if self._message_rocksdb:
            self._message_rocksdb.close()
            self._message_rocksdb = False
        if self._index is not None:
            self._index.close()

    def __enter__(self) -> "StoreReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _repr_html_(self) -> str:  # notebooks: files, queues, index, checkpoint (no full scan)
        return reprs.html("store", self)


def lock_state(root: str | os.PathLike) -> str:
    """``absent``, ``free`` or ``held`` (another process holds the OS lock on byte 0 of
    ``STORE/lock``, as Java ``DefaultMessageStore.start`` takes it); ``unknown`` where
    the platform cannot say.  Needs nothing of the store but that file, so it answers
    before any size is inferred."""
    p = Path(root) / LOCK_FILE
    if not p.exists():
        return "absent"
    try:
        import fcntl

        with open(p, "rb") as fh:
            try:
                fcntl.lockf(fh, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, 0)
            except OSError:
                return "held"
            fcntl.lockf(fh, fcntl.LOCK_UN, 1, 0)
    except (ImportError, OSError):
        return "unknown"
    return "free"


def infer_config(root: str | os.PathLike, config: MessageStoreConfig | None = None, *, index_sizes: tuple[int, int] | None = None) -> MessageStoreConfig:
    """The store's sizes: the caller's config wins; otherwise infer commitlog, consume-queue
    and index sizes from the files (as the reader does); ``index_sizes`` given are
    taken as they are (an index file they explain need not be inferable).

    >>> from rmqlab.lab.samples import shipped_dir
    >>> cfg = infer_config(shipped_dir() / "clean")
    >>> cfg.mapped_file_size_commit_log, cfg.max_hash_slot_num, cfg.max_index_num
    (65536, 128, 512)
    """
    if config is not None:
        return config.replace(store_path_root_dir=str(Path(root)))
    return infer_sizes(root, index_sizes=index_sizes)[0]


def infer_sizes(root: str | os.PathLike, *, index_sizes: tuple[int, int] | None = None, paths: MessageStoreConfig | None = None) -> tuple[MessageStoreConfig, dict[str, str]]:
    """:func:`infer_config` and, per size setting (Python name), where its value came
    from: the file it was read from, or RocketMQ's default where no file tells.
    ``paths``: a config whose log directories (``storePathCommitLog``,
    ``readOnlyCommitLogStorePaths``) to read; its sizes are not used."""
    root = Path(root)
    reader = StoreReader(root, strict=False, index_sizes=index_sizes, log_dirs=paths)
    cfg = reader.config
    default = "RocketMQ's default (no file to infer it from)"
    sources = {"mapped_file_size_commit_log": default, "mapped_file_size_consume_queue": default, "max_hash_slot_num": default, "max_index_num": default}
    if reader.commitlog.mapped_file_size:
        sources["mapped_file_size_commit_log"] = "inferred from the files in " + ", ".join(f"{d}/" for d in reader.commitlog_dirs) if len(reader.commitlog_dirs) > 1 or reader.commitlog_dirs[0] != root / COMMITLOG_DIR else f"inferred from the files in {COMMITLOG_DIR}/"
    if index_sizes is not None:
        sources["max_hash_slot_num"] = sources["max_index_num"] = "given"
    elif reader._infer_index_sizes() is not None:
        sources["max_hash_slot_num"] = sources["max_index_num"] = f"inferred from the length of the files in {INDEX_DIR}/ (4 entries per slot, Java's default ratio)"
    sources["mapper_file_size_batch_consume_queue"] = default
    sizes: dict[str, int] = {}
    kinds = 1 + bool(reader.layout.batch_topics)  # the queue kinds the store has: stop once each told its size
    for qid in ([] if reader.layout.rocksdb_queues else reader.queue_ids()):
        batch = qid.topic in reader.layout.batch_topics
        # 20-byte units in consumequeue/, 46-byte ones in batchconsumequeue/: each kind its own setting
        name, unit, where = (("mapper_file_size_batch_consume_queue", BCQ_STORE_UNIT_SIZE, BATCH_CONSUMEQUEUE_DIR) if batch
                             else ("mapped_file_size_consume_queue", CQ_STORE_UNIT_SIZE, CONSUMEQUEUE_DIR))
        if name in sizes:
            continue
        try:
            size = reader.consume_queue(qid.topic, qid.queue_id).queue.mapped_file_size
        except StoreFormatError:
            continue
        if size and size % unit == 0:  # Java rounds the consume queues' size up to whole units: a ragged one is damage
            sizes[name] = size
            sources[name] = f"inferred from {where}/{qid}/"
        if len(sizes) == kinds:
            break
    reader.close()
    return cfg.replace(**sizes), sources


def open_store(root: str | os.PathLike, config: MessageStoreConfig | None = None, **kwargs) -> StoreReader:
    """Open a store root read-only (see :class:`StoreReader`).  Where the log ends is
    the caller's to say (``log_end``) or found by a walk; :func:`rmqlab.open_store`, what
    the commands use, opens it as its next start serves it (the recovery plan's end).

    >>> from rmqlab.lab.samples import shipped_dir
    >>> with open_store(shipped_dir() / "damaged", strict=False) as store:
    ...     print(store.commitlog.min_offset, len(store.queue_ids()), store.abort_exists)
    0 7 True
    """
    return StoreReader(root, config, **kwargs)
