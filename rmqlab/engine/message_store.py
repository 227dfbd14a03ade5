"""The store engine (Java ``DefaultMessageStore``): put, dispatch, flush, clean.

A :class:`MessageStore` opened on a store root writes exactly the bytes Apache
RocketMQ writes: commitlog records, consume-queue entries, index files,
checkpoint, ``abort`` and ``lock``.  Quick tour::

    from rmqlab.engine import MessageStore, Message
    with MessageStore.open("/tmp/store", config) as store:
        r = store.put(Message("TopicA", b"hello", {"TAGS": "TagA", "KEYS": "k1"}, queue_id=0))
        r.status, r.wrote_offset, r.queue_offset, r.msg_id
        store.reput()                      # dispatch now (else: in batches / background)
        store.get_message("TopicA", 0, 0)  # lookups go through rmqlab.lookup

What happens on a put (Java ``CommitLog.asyncPutMessage``)::

    validate ─► encode (outside the lock) ─► [put lock: store time, queue offset,
    append into the mapped file, BLANK + roll if it does not fit] ─► its offset queued
    for reput ─► SYNC_FLUSH: wait for the group commit that covers the record

Opening a store that already has files runs RocketMQ's start-up recovery first
(:func:`rmqlab.recovery.recover`, in place, with the cut bytes saved in a sidecar
directory) and continues where the log ends.  ``open`` takes the OS lock on byte 0
of ``lock`` (so a running broker or another rmqlab keeps us out, and us them) and
writes ``abort`` holding the PID; ``shutdown`` flushes everything, writes the
checkpoint, deletes the pre-allocated file and ``abort``, and releases the lock.

Dispatch (Java ``ReputMessageService``) runs in one of three modes:

* ``"inline"`` (default) — records queue up and are dispatched in batches of
  ``reput_batch`` (32768: reading back costs a few milliseconds per call, so it pays
  in bulk) by the producing thread, and before every lookup and flush;
* ``"background"`` — a thread dispatches every millisecond, as the broker does;
* ``"manual"`` — nothing until :meth:`reput` is called: a notebook can show the
  commitlog holding a record that no consume queue points to yet.

Like Java's, rmqlab's reput reads the records back from the commitlog (in bulk, with
:func:`~rmqlab.scan.dispatch_request.read_dispatch_columns`) rather than trusting what the
put path meant to write: what is dispatched is what is on disk.
"""

from __future__ import annotations

import fcntl
import os
import struct
import threading
import shutil
import zlib
from pathlib import Path
from typing import Iterable, NamedTuple, Sequence

import numpy as np

from .. import lookup as _lookup
from ..config import ASYNC_FLUSH, SYNC_FLUSH, MessageStoreConfig
from ..errors import StoreLayoutError, StoreLockedError
from ..format import commitlog as cl
from ..format import hashing
from ..format import properties as props
from ..format.batch import ENTRY_FIELDS_AT as BATCH_ENTRY_FIELDS_AT, BatchFormatError
from ..format.encode import CRC_PROPERTY_PLACEHOLDER, WHOLE_RECORD_PACKERS, batch_record_sizes, batch_records_bytes, record_packer, topic_field, whole_record_packer, write_batch_records
from ..format.hashing import java_string_hash
from ..format.layout import PREFIX_DTYPES
from ..scan.crc import crc32_slices
from ..format.msgid import parse_host
from ..format.record import PROPERTY_CRC_TAIL, Record
from ..rules import ABORT_FILE, CHECKPOINT_FILE, COMMITLOG_DIR, CONFIG_DIR, LOCK_FILE
from ..store.reader import StoreReader
from ..writers.checkpoint_writer import StoreCheckpointWriter
from .clean import CleanDecision, CleanReport, clean_expired, cleanup_due
from ..writers.clock import DEFAULT_STORE_HOST, SystemClock
from ..writers.commitlog_writer import CommitLogWriter
from ..rules import SCHEDULE_TOPIC, goes_to_consume_queue
from ..scan.dispatch_request import DispatchColumns, DispatchRequest, load_reader, read_dispatch_columns
from ..writers.dispatch import CommitLogDispatcher
from .flush import FlushRealTimeService, GroupCommitService, PeriodicService
from ..writers.mapped_file import WritableMappedFile, fsync_directory
from .message import Message, MessageBatch
from ..writers.metadata import BrokerMetadata, string_to_file
from .results import PutMessageResult, PutMessageStatus
from .validation import Validator

_OK = PutMessageStatus.PUT_OK
_new_result = tuple.__new__  # a NamedTuple without its Python-level __new__ (put results, requests)
_BIG_BODY = 4096  # bodies from this size on are written with pwritev
_zlib_crc32 = zlib.crc32
_fast_crc32 = hashing.crc32  # ISA-L's when installed (rmqlab.format.hashing); faster from ISAL_FROM on
_ISAL_FROM = hashing.ISAL_FROM
_time_ns = __import__("time").time_ns
# MessageStore.put's common case in C (optional; RMQLAB_PURE_PUT=1 keeps it in Python)
try:
    from . import _put as _native_put
except ImportError:
    _native_put = None
if os.environ.get("RMQLAB_PURE_PUT"):
    _native_put = None
# an encoded batch in C (_put.write_batch): where the six fields that differ record by
# record sit in the fixed part, by the hosts' kind (born IPv6 + 2 * store IPv6), and
# the widths _put.c writes them with
_BATCH_FIELDS = ("total_size", "body_crc", "flag", "queue_offset", "physical_offset", "len_body")
_BATCH_FIELDS_AT = tuple(tuple(dt.fields[name][1] for name in _BATCH_FIELDS) for dt in PREFIX_DTYPES)
assert all(tuple(dt.fields[name][0].itemsize for name in _BATCH_FIELDS) == (4, 4, 4, 8, 8, 4) for dt in PREFIX_DTYPES)
# and where _put.c reads an entry's totalSize, flag, bodyLength and body (its ENTRY_HEAD)
assert _native_put is None or BATCH_ENTRY_FIELDS_AT == (0, 12, 16, 20), BATCH_ENTRY_FIELDS_AT
# the SYNC_FLUSH group commit with a GIL-free flusher (optional; RMQLAB_PURE_FLUSH=1
# keeps flush.GroupCommitService)
try:
    from . import _group_commit as _native_group_commit
except ImportError:
    _native_group_commit = None
if os.environ.get("RMQLAB_PURE_FLUSH"):
    _native_group_commit = None
_CRC_PAIR_PREFIX = (props.CRC32 + props.NAME_VALUE_SEPARATOR).encode()
_encode_props = props.encode_dict
_V6_BITS = cl.FLAG_BORNHOST_V6 | cl.FLAG_STOREHOST_V6
_DEFAULT_BORN_HOST = (b"\x7f\x00\x00\x01", 0)
_BORN_ADDR, _BORN_PORT = _DEFAULT_BORN_HOST  # what the fast paths write (and the C put is given)

# stores locked by this process: POSIX locks do not exclude the same process
_LOCKED_ROOTS: set[str] = set()
_LOCKED_GUARD = threading.Lock()


class FastTopic(NamedTuple):
    """A topic the fast put paths know (``MessageStore._remember_topic``): its topic
    field (length and name, as written), the magic of its records (V1, or V2 for a
    topic longer than 127 bytes) and the size of a record of it without body and
    properties.  The C put reads it as a tuple in this order."""

    field: bytes
    magic: int
    fixed_size: int


def _lock_byte_zero(fd: int) -> None:
    """An exclusive lock on byte 0, as Java's ``FileChannel.tryLock(0, 1, false)``.

    On Linux an open-file-description lock (``F_OFD_SETLK``): it conflicts with the
    POSIX lock a broker takes, but unlike a POSIX lock it is not silently dropped
    when this process closes some *other* descriptor of the file (e.g. a reader
    checking the lock state)."""
    if hasattr(fcntl, "F_OFD_SETLK"):
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0))
    else:  # pragma: no cover - non-Linux
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)


def _host(value) -> tuple[bytes, int]:
    if value is None:
        return DEFAULT_STORE_HOST
    if isinstance(value, str):
        return parse_host(value)
    addr, port = value
    return (bytes(addr), int(port))


def _strip_crc_pairs(raw: bytes) -> bytes:
    """Java ``MessageUtils.deleteProperty(propertiesString, "__CRC32#")``."""
    while True:
        i = raw.find(_CRC_PAIR_PREFIX)
        if i < 0 or (i > 0 and raw[i - 1 : i] != b"\x02"):
            return raw
        j = raw.find(b"\x02", i)
        raw = raw[:i] + (raw[j + 1 :] if j >= 0 else b"")


class _FieldRange(Exception):
    """A message field that does not fit its Java type (e.g. a flag beyond int32)."""


class _Prepared:
    """A message encoded outside the lock, ready to append (Java ``EncodeResult``)."""

    __slots__ = ("topic", "queue_id", "total", "magic", "body_crc", "flag", "sys_flag", "born_ts", "born_host", "store_host", "reconsume", "pto", "body", "tail", "store_ts", "wait")


class MessageStore:
    """Java ``DefaultMessageStore`` over one store root (see the module docs).

    ``config`` uses RocketMQ's setting names (``MessageStoreConfig.from_properties``
    reads a ``broker.conf``).  ``clock`` (``now_ms()``) gives store timestamps and
    index file names; ``store_host`` (``"127.0.0.1:10911"`` or ``(addr, port)``) is
    written as every record's storeHost unless the message brings its own.
    ``broker_rewrites`` does what the broker does before the store sees a message:
    a ``DELAY`` level moves it to ``SCHEDULE_TOPIC_XXXX``.  ``services=False`` runs
    no background thread at all (flush and dispatch happen when called, SYNC_FLUSH
    puts force the log themselves).  ``recover=False`` refuses a store that needs
    recovery instead of recovering it.  ``native_put=False`` keeps :meth:`put` in
    Python even when the C module :mod:`rmqlab.engine._put` is built (tests and the
    write benchmark compare the two); ``native_group_commit=False`` likewise keeps
    SYNC_FLUSH's group commit in Python (:class:`~rmqlab.engine.flush.GroupCommitService`)
    instead of :mod:`rmqlab.engine._group_commit`.

    A SYNC_FLUSH store (every put returns once its record is forced to disk), read back
    by queue offset and by key, then killed and started again — the start recovers it as
    RocketMQ's would, and says what it did in :attr:`recovery_report`:

    >>> import tempfile
    >>> from rmqlab.config import MessageStoreConfig
    >>> from rmqlab.engine import Message, MessageStore
    >>> cfg = MessageStoreConfig.from_mapping({"flushDiskType": "SYNC_FLUSH", "mappedFileSizeCommitLog": "1048576"})
    >>> root = tempfile.mkdtemp()
    >>> store = MessageStore.open(root, cfg)
    >>> for i in range(3):
    ...     _ = store.put(Message("Orders", f"m{i}".encode(), {"KEYS": f"k{i}"}))
    >>> store.get_message("Orders", 0, 1).body, [r.body for r in store.query_message("Orders", "k2").records]
    (b'm1', [b'm2'])
    >>> store.crash()                     # the process dies: no shutdown, the abort file stays
    >>> with MessageStore.open(root, cfg) as again:
    ...     print(again.recovery_report.mode, again.max_offset_in_queue("Orders", 0))
    abnormal 3
    """

    def __init__(
        self,
        root: str | os.PathLike,
        config: MessageStoreConfig | None = None,
        *,
        clock=None,
        store_host=None,
        dispatch: str = "inline",
        reput_batch: int = 32768,
        broker_rewrites: bool = True,
        services: bool = True,
        recover: bool = True,
        native_put: bool = True,
        native_group_commit: bool = True,
    ):
        if dispatch not in ("inline", "background", "manual"):
            raise ValueError("dispatch must be 'inline', 'background' or 'manual'")
        self.root = Path(root)
        self.config = (config or MessageStoreConfig()).replace(store_path_root_dir=str(self.root))
        self.clock = clock or SystemClock()
        self.store_host = _host(store_host)
        self.dispatch_mode = dispatch
        self.reput_batch = max(1, reput_batch)
        self.broker_rewrites = broker_rewrites
        self.use_services = services
        self.do_recover = recover
        self.sync_flush = self.config.flush_disk_type == SYNC_FLUSH
        if self.config.flush_disk_type not in (SYNC_FLUSH, ASYNC_FLUSH):
            raise StoreLayoutError(self.root, None, f"flushDiskType {self.config.flush_disk_type!r} is neither ASYNC_FLUSH nor SYNC_FLUSH")
        if "," in self.config.store_path_commit_log or self.config.read_only_commit_log_store_paths.strip():
            # MultiPathMappedFileQueue.tryCreateMappedFile's placement is not modelled: a
            # write here would put every new file in commitlog/, silently
            raise StoreLayoutError(self.root, None, "the engine writes one commitlog directory; a log over several (storePathCommitLog / "
                                   "readOnlyCommitLogStorePaths) is read, verified and recovered, not written")
        self.append_prop_crc = self.config.enabled_append_prop_crc
        self.validator = Validator(self.config)
        # lock order: _reput_lock before _lock, never the other way round
        self._lock = threading.Lock()  # Java putMessageLock (+ topicQueueLock)
        self._reput_lock = threading.Lock()
        # the records appended and not dispatched yet (Java dispatchBehindBytes, counted
        # in records): their physical offsets, which reput reads back from the log, and
        # for big bodies the DispatchRequest built at put time (see _big_request); each
        # list in commitlog order (two lists: reput then needs no pass to tell them apart);
        # the same two list objects for the store's life: the C put appends to them
        self._pending: list[int] = []
        self._pending_reqs: list[DispatchRequest] = []
        self._queue_offsets: dict[tuple[str, int], int] = {}  # Java topicQueueTable
        self._tags_cache: dict[str, int] = {}  # TAGS -> tagsCode, for _big_request
        self._fast_topics: dict[str, FastTopic] = {}
        self._inline = dispatch == "inline"
        self._system_clock = type(self.clock) is SystemClock
        self._store_addr, self._store_port = self.store_host
        self._packer44 = record_packer(len(_BORN_ADDR), len(self._store_addr))
        self._store_len = len(self._store_addr)
        self._max_body = self.config.max_message_size
        self._max_total = min(self.validator.max_record, self.validator.max_fit)
        self._started = False
        self._shutdown = True
        self._lock_fd = -1
        self.last_exit_ok: bool | None = None
        self.recovery_report = None
        self.commitlog: CommitLogWriter | None = None
        self.dispatcher: CommitLogDispatcher | None = None
        self.checkpoint: StoreCheckpointWriter | None = None
        self.metadata: BrokerMetadata | None = None
        self._services: list = []
        self._commit_service = None
        self._group_commit = None  # SYNC_FLUSH: _group_commit.GroupCommit, or flush.GroupCommitService
        self.reput_from_offset = 0  # Java ReputMessageService.reputFromOffset
        self._native_put = native_put
        self._native_group_commit = native_group_commit and _native_group_commit is not None

    # -- life cycle ---------------------------------------------------------------------------
    @classmethod
    def open(cls, root: str | os.PathLike, config: MessageStoreConfig | None = None, **kwargs) -> "MessageStore":
        """Create the store object and :meth:`start` it."""
        store = cls(root, config, **kwargs)
        store.start()
        return store

    def start(self) -> "MessageStore":
        """Java ``load()`` + ``start()``: lock, recover, abort file, services."""
        if self._started:
            return self
        self.root.mkdir(parents=True, exist_ok=True)
        self._take_lock()
        try:
            self._load()
        except BaseException:
            self._release_lock()
            raise
        self._started = True
        if self._native_put:
            self._bind_native_put()  # with this start's commitlog
            if _native_put is not None:  # pages faulted in without the GIL: the reput thread runs meanwhile
                self.commitlog.populate = _native_put.populate
        self._shutdown = False
        return self

    def _take_lock(self) -> None:
        """Java: ``lockFile.getChannel().tryLock(0, 1, false)`` on ``lock``, then
        ``"lock"`` written into it."""
        key = os.path.realpath(self.root)
        with _LOCKED_GUARD:
            if key in _LOCKED_ROOTS:
                raise StoreLockedError(f"{self.root / LOCK_FILE}: this store is already open for writing in this process")
            fd = os.open(self.root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                _lock_byte_zero(fd)
            except OSError:
                os.close(fd)
                raise StoreLockedError(
                    f"{self.root / LOCK_FILE}: byte 0 is locked by another process — a running broker or another rmqlab writer holds this store"
                ) from None
            os.pwrite(fd, b"lock", 0)
            self._lock_fd = fd
            _LOCKED_ROOTS.add(key)

    def _release_lock(self) -> None:
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # releases the lock
            self._lock_fd = -1
            with _LOCKED_GUARD:
                _LOCKED_ROOTS.discard(os.path.realpath(self.root))

    def _load(self) -> None:
        cfg = self.config
        abort = self.root / ABORT_FILE
        self.last_exit_ok = not abort.exists()
        has_data = (self.root / COMMITLOG_DIR).is_dir() and any((self.root / COMMITLOG_DIR).iterdir())
        # config/*.json is the broker's (TopicConfigManager, ConsumerOffsetManager,
        # ScheduleMessageService), not DefaultMessageStore's: a store the broker-less
        # store wrote has none, and opening it must not add one. rmqlab keeps it for the
        # stores it starts and for the ones that already have it.
        self._keeps_metadata = not has_data or (self.root / CONFIG_DIR).is_dir()
        if self._keeps_metadata:
            (self.root / CONFIG_DIR).mkdir(parents=True, exist_ok=True)  # a crash before the first persist keeps it so
        end = 0
        if has_data:
            end = self._recover_existing()
        self.checkpoint = StoreCheckpointWriter(self.root / CHECKPOINT_FILE)
        self.dispatcher = CommitLogDispatcher(self.root, cfg, clock=self.clock, on_index_file_full=self._on_index_file_full)
        if self.dispatcher.max_physic_offset > end:
            self.dispatcher.truncate_dirty(end)
        self.commitlog = CommitLogWriter(self.root / COMMITLOG_DIR, cfg.mapped_file_size_commit_log)
        self.commitlog.load(end)
        if not self.commitlog.files:
            self.commitlog.last_file()  # Java creates the first file (and pre-allocates the next) at start
        self.reput_from_offset = end
        # Java recoverTopicQueueTable: next queue offset of every queue
        for key, q in self.dispatcher.queues.items():
            self._queue_offsets[key] = q.max_offset_in_queue
        self.metadata = BrokerMetadata(self.root)
        # Java createTempFile: an empty abort, then the PID through string2File (abort.bak
        # keeps the previous content: empty, or a crashed run's PID)
        abort = self.root / ABORT_FILE
        if not abort.exists():
            abort.touch()
        string_to_file(str(os.getpid()), abort)
        # reput reads records back with the bulk decoder: load it (pyarrow, numba and
        # the compiled loops, ~1 s once per process) with the store, not inside the put
        # that reaches the first reput
        load_reader()

        self._start_services()

    def _recover_existing(self) -> int:
        """Run RocketMQ's start-up recovery; returns the end of the log."""
        from .. import recovery

        # one scan: the plan says whether anything would change, and is what gets applied
        plan = recovery.plan(self.root, config=self.config)
        report = plan.report
        if plan.changes_store and not self.do_recover:
            plan.close()
            raise StoreLayoutError(self.root, report.commitlog_end, f"the store needs recovery ({report.mode}); run `rmqlab recover` or open with recover=True")
        report = recovery.apply(plan, in_place=plan.changes_store, clock=self.clock)
        self.recovery_report = report
        return report.commitlog_end

    def _start_services(self) -> None:
        cfg = self.config
        if not self.use_services:
            return
        if self.sync_flush and self._native_group_commit:
            # forces from its own thread, without the GIL: the commitlog tells it its files
            self._group_commit = _native_group_commit.GroupCommit(self.commitlog.mapped_file_size, self.commitlog.flushed_where)
            self.commitlog.attach_forcer(self._group_commit)
            self._commit_service = self._group_commit
        elif self.sync_flush:
            self._group_commit = GroupCommitService(self._flush_commitlog, self.commitlog.flushed_where)
            self._commit_service = self._group_commit
        else:
            self._commit_service = FlushRealTimeService(
                self._flush_commitlog, self.commitlog.dirty_bytes, cfg.flush_interval_commit_log, cfg.flush_commit_log_least_pages, cfg.flush_commit_log_thorough_interval
            )
        self._services.append(self._commit_service)
        self._services.append(PeriodicService("FlushConsumeQueueService", self.flush_logics, cfg.flush_interval_consume_queue))
        if self.dispatch_mode == "background":
            self._services.append(PeriodicService("ReputMessageService", self.reput, 1))
        self._services.append(PeriodicService("CleanCommitLogService", self._clean_if_due, cfg.clean_resource_interval))
        for s in self._services:
            s.start()

    def shutdown(self) -> None:
        """Java ``DefaultMessageStore.shutdown``: dispatch what is pending, flush
        commitlog, consume queues and index, write the checkpoint and the broker
        metadata, delete the pre-allocated file and ``abort``, release ``lock``."""
        if not self._started:
            return
        with self._lock:  # puts in flight finish first; later ones answer SERVICE_NOT_AVAILABLE
            self._refuse_puts()
        for s in reversed(self._services):
            s.stop()
        self._services = []
        try:
            self.reput()
        except BaseException:
            # Java DefaultMessageStore.shutdown deletes abort only when runningFlags is
            # writeable and nothing is left to dispatch; a consume queue that cannot be
            # written (ConsumeQueue.putMessagePositionInfoWrapper: makeLogicsQueueError)
            # leaves it, "the store may be wrong": the next start recovers abnormally
            # and dispatches the records again.  The log is forced first.
            try:
                self._flush_commitlog()
            finally:
                self.crash()  # the lock released, abort kept, even if the force fails too
            raise
        self._flush_commitlog()
        self.flush_logics()
        self.dispatcher.index.flush()
        self._persist_metadata()
        self.checkpoint.flush()
        self.commitlog.close(delete_preallocated=True)
        self.dispatcher.close()
        self.checkpoint.close()
        abort = self.root / ABORT_FILE
        if abort.exists():
            abort.unlink()
        fsync_directory(self.root)
        self._release_lock()
        self._started = False

    def _refuse_puts(self) -> None:
        """From here on every put answers SERVICE_NOT_AVAILABLE: the Python paths read
        ``_shutdown``; the C put is told through its declared ``shut_down`` member (it
        reads nothing of the store's own state) and hands each put to Python."""
        self._shutdown = True
        if _native_put is not None and isinstance(self.put, _native_put.Putter):
            self.put.shut_down = True

    def crash(self) -> None:
        """Stop as ``kill -9`` would: no dispatch of what is pending, no flush, no
        checkpoint; ``abort`` stays; the lock is released (the process is "gone").
        What was written is in the page cache, exactly as after a real kill."""
        if not self._started:
            return
        self._refuse_puts()
        for s in self._services:
            s.halt()  # no final flush
        self._services = []
        self.commitlog.close(delete_preallocated=False)
        self.dispatcher.close()
        self.checkpoint.close()
        self._release_lock()
        self._started = False

    close = shutdown

    def __enter__(self) -> "MessageStore":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.shutdown()

    # -- put ------------------------------------------------------------------------------------
    def _fail(self, status: PutMessageStatus, reason: str) -> PutMessageResult:
        return PutMessageResult(status, reason=reason)

    def _prepare(self, msg: Message, batch_props: bytes = b""):
        """Validate and encode one message outside the lock: a :class:`_Prepared`, or a
        failed :class:`PutMessageResult`."""
        topic = msg.topic
        status, reason, topic_raw = self.validator.check_topic(topic)
        if status is not _OK:
            return self._fail(status, reason)
        body = msg.body
        if body is None:
            return self._fail(PutMessageStatus.MESSAGE_ILLEGAL, "message body is null")
        queue_id = msg.queue_id
        if not isinstance(queue_id, int) or queue_id < 0:
            return self._fail(PutMessageStatus.MESSAGE_ILLEGAL, f"queueId {queue_id!r} is not a non-negative int")
        sys_flag = msg.sys_flag
        tran = sys_flag & cl.TRANSACTION_MASK
        pd = msg.properties
        raw = msg.properties_raw
        if raw is None:
            if pd:
                if self.broker_rewrites and props.DELAY in pd and tran in (0, 8) and topic != SCHEDULE_TOPIC:
                    rewritten = self._rewrite_delay(topic, queue_id, pd)
                    if isinstance(rewritten, PutMessageResult):
                        return rewritten
                    topic, queue_id, pd = rewritten
                    topic_raw = topic.encode()
                if self.append_prop_crc and props.CRC32 in pd:
                    pd = {k: v for k, v in pd.items() if k != props.CRC32}
                raw = _encode_props(pd)
                wait = pd.get(props.WAIT)
            else:
                raw = b""
                wait = None
        else:
            raw = bytes(raw)
            if self.append_prop_crc:
                raw = _strip_crc_pairs(raw)
            jm = props.to_java_map(props.decode_pairs(raw))
            if self.broker_rewrites and props.DELAY in jm and tran in (0, 8) and topic != SCHEDULE_TOPIC:
                rewritten = self._rewrite_delay(topic, queue_id, props.to_ordered_dict(props.decode_pairs(raw)))
                if isinstance(rewritten, PutMessageResult):
                    return rewritten
                topic, queue_id, pd = rewritten
                topic_raw = topic.encode()
                raw = props.encode(pd)
                jm = props.to_java_map(pd.items())
            wait = jm.get(props.WAIT)
        if batch_props:
            raw += batch_props
        born_host = msg.born_host or _DEFAULT_BORN_HOST
        store_host = msg.store_host or self.store_host
        sys_flag &= ~_V6_BITS
        extra = 0
        if len(born_host[0]) == 16:
            sys_flag |= cl.FLAG_BORNHOST_V6
            extra += 12
        if len(store_host[0]) == 16:
            sys_flag |= cl.FLAG_STOREHOST_V6
            extra += 12
        tlen = len(topic_raw)
        v2 = tlen > cl.MAX_TOPIC_LENGTH_V1
        props_len = len(raw) + (PROPERTY_CRC_TAIL if self.append_prop_crc else 0)  # Java CRC32_RESERVED_LEN
        total = cl.FIXED_SIZE_V1_IPV4 + len(body) + tlen + props_len + v2 + extra
        bad = self.validator.check_sizes(len(body), props_len, total)
        if bad is not None:
            return self._fail(*bad)
        p = _Prepared()
        p.topic = topic
        p.queue_id = queue_id
        p.total = total
        p.magic = cl.MAGIC_V2 if v2 else cl.MAGIC_V1
        p.body_crc = _fast_crc32(body) & 0x7FFFFFFF
        p.flag = msg.flag
        p.sys_flag = sys_flag
        p.born_ts = msg.born_timestamp
        p.born_host = born_host
        p.store_host = store_host
        p.reconsume = msg.reconsume_times
        p.pto = msg.prepared_transaction_offset
        p.body = body
        head = tlen.to_bytes(2 if v2 else 1, "big") + topic_raw + props_len.to_bytes(2, "big") + raw
        p.tail = head + CRC_PROPERTY_PLACEHOLDER if self.append_prop_crc else head
        p.store_ts = msg.store_timestamp
        p.wait = wait
        return p

    def _rewrite_delay(self, topic: str, queue_id: int, pd):
        """Java ``HookUtils.transformDelayLevelMessage``: keep the real topic and queue
        in ``REAL_TOPIC``/``REAL_QID``, move to ``SCHEDULE_TOPIC_XXXX`` queue level−1."""
        try:
            level = int(pd[props.DELAY])
        except ValueError:
            return self._fail(PutMessageStatus.MESSAGE_ILLEGAL, f"DELAY {pd[props.DELAY]!r} is not an integer")
        if level <= 0:
            return topic, queue_id, pd
        pd = dict(pd)
        max_level = max(self.dispatcher.delay_levels) if self.dispatcher.delay_levels else level
        if level > max_level:
            level = max_level
            pd[props.DELAY] = str(level)
        pd[props.REAL_TOPIC] = topic
        pd[props.REAL_QID] = str(queue_id)
        self.metadata.delay_offsets.setdefault(level, 0)
        return SCHEDULE_TOPIC, level - 1, pd

    def _append(self, p: _Prepared, now: int) -> tuple[int, int, int]:
        """Under the put lock: queue offset and record bytes; (physical offset, queue
        offset, store timestamp) of the record."""
        ts = p.store_ts if p.store_ts is not None else now
        key = (p.topic, p.queue_id)
        if not goes_to_consume_queue(p.sys_flag):  # PREPARED or ROLLBACK: no queue offset
            qoff = 0
        else:
            qoff = self._queue_offsets.get(key, 0)
            self._queue_offsets[key] = qoff + 1
        try:
            phy = self.commitlog.append(
                p.total, p.magic, p.body_crc, p.queue_id, p.flag, qoff, p.sys_flag,
                p.born_ts if p.born_ts is not None else ts, p.born_host, ts, p.store_host,
                p.reconsume, p.pto, p.body, p.tail, self.append_prop_crc,
            )
        except (struct.error, TypeError) as exc:  # the packer checks before anything is written
            if goes_to_consume_queue(p.sys_flag):
                self._queue_offsets[key] = qoff
            raise _FieldRange(f"a field does not fit its Java type: {exc}") from None
        self._pending.append(phy)
        return phy, qoff, ts

    def put(self, msg: Message) -> PutMessageResult:
        """Java ``putMessage``: store one message; RocketMQ's answer.

        The common case — a topic already seen, properties as a dict without
        ``DELAY``, no hosts or sysFlag of its own, no property CRC — is encoded
        straight into the mapped file with as little work as possible: by the C
        module :mod:`rmqlab.engine._put` when it is built (:meth:`start` binds it as
        this instance's ``put``; see :meth:`_bind_native_put`), else by
        :meth:`_put_python`.  Everything else goes through :meth:`_put_general`.  All
        of them write the same bytes (tests compare them with each other, with the
        reference encoder and with RocketMQ's files)."""
        return self._put_python(msg)

    #: The C put's whole view of the Python objects it is given (``_put.c``; a test
    #: checks that file against this): the message's and a mapped file's fields, read
    #: through their ``__slots__`` (exact types only), and the commitlog writer's
    #: ``files`` (read) and ``store_timestamp``/``max_offset`` (written, under the put
    #: lock).  Everything else comes in as arguments, and the store tells it of a
    #: shutdown through its ``shut_down`` member.
    NATIVE_PUT_INTERFACE = {
        Message: ("topic", "body", "properties", "properties_raw", "queue_id", "flag", "sys_flag", "born_timestamp", "born_host", "store_timestamp", "store_host", "reconsume_times", "prepared_transaction_offset"),
        WritableMappedFile: ("wrote_position", "file_size", "populated", "file_from_offset", "mm", "fd"),
        CommitLogWriter: ("files", "store_timestamp", "max_offset"),
        FastTopic: ("field", "magic", "fixed_size"),  # read by position
    }

    def _bind_native_put(self) -> None:
        """Make ``self.put`` the C put when it can serve this store: it handles the
        same common case as :meth:`_put_python`'s first branch, the same way (small
        records copied into the mapping, big bodies written with ``pwritev`` and their
        request built by :meth:`_big_request`), under the same lock, and hands
        everything else (and the rare steps: rolling a file, pre-faulting pages, a
        full reput batch) to :meth:`_put_python` before touching anything.  A
        SYNC_FLUSH put then waits in :meth:`_sync_wait`, outside the lock; an injected
        clock is called under it, as in Python."""
        if _native_put is None or self.append_prop_crc:
            return
        self.put = _native_put.Putter(
            commitlog=self.commitlog,
            pending=self._pending,
            pending_reqs=self._pending_reqs,
            fallback=self._put_python,
            big_request=self._big_request,
            sync_wait=self._sync_wait if self.sync_flush else None,
            crc32=_fast_crc32,
            isal_from=_ISAL_FROM,
            fast_topics=self._fast_topics,
            queue_offsets=self._queue_offsets,
            lock=self._lock,
            result_type=PutMessageResult,
            ok=_OK,
            store_host=self.store_host,
            born_host=_DEFAULT_BORN_HOST,
            properties=(props.NAME_VALUE_SEPARATOR, props.PROPERTY_SEPARATOR, props.DELAY, props.WAIT),
            head_format=self._packer44.format,
            max_body=self._max_body,
            max_total=self._max_total,
            big_body=_BIG_BODY,
            reput_batch=self.reput_batch if self._inline else 0,
            blank_size=cl.BLANK_SIZE,
            message_type=Message,
            mapped_file_type=WritableMappedFile,
            clock=None if self._system_clock else self.clock,
        )

    def _put_python(self, msg: Message) -> PutMessageResult:
        """:meth:`put` in Python: the common case packed straight into the mapping,
        the rest through :meth:`_put_general`."""
        tinfo = self._fast_topics.get(msg.topic)
        raw = self._common_case(msg, tinfo)
        if raw is None:
            return self._put_general(msg)  # answers with the right status and reason
        pd = msg.properties
        body = msg.body
        blen = len(body)
        total = tinfo.fixed_size + blen + len(raw)
        topic = msg.topic
        qid = msg.queue_id
        clog = self.commitlog
        with self._lock:
            if self._shutdown:
                return self._fail(PutMessageStatus.SERVICE_NOT_AVAILABLE, "the message store is shut down")
            ts = msg.store_timestamp
            if ts is None:
                ts = _time_ns() // 1_000_000 if self._system_clock else self.clock.now_ms()
            key = (topic, qid)
            qoff = self._queue_offsets.get(key, 0)
            self._queue_offsets[key] = qoff + 1
            f = clog.files[-1]
            f = clog.room_for(f, f.wrote_position, total)
            pos = f.wrote_position
            phy = f.file_from_offset + pos
            end = pos + total
            try:
                self._write_common(f, pos, total, tinfo, msg, raw, qoff, phy, ts)
            except (struct.error, TypeError) as exc:  # nothing counts as written: give the offset back
                self._queue_offsets[key] = qoff
                return self._fail(PutMessageStatus.MESSAGE_ILLEGAL, f"a field does not fit its Java type: {exc}")
            except OSError:
                self._queue_offsets[key] = qoff  # nothing counts as written
                raise
            f.wrote_position = end
            clog.store_timestamp = ts
            clog.max_offset = phy + total
            if blen < _BIG_BODY:
                self._pending.append(phy)
            else:
                self._pending_reqs.append(self._big_request(topic, qid, phy, total, ts, qoff, pd, msg.prepared_transaction_offset))
        status = self._after_append(phy + total, pd.get(props.WAIT) if pd else None, ts)
        return _new_result(PutMessageResult, (status, phy, total, qoff, ts, self.store_host, 1, None, ""))

    def _common_case(self, msg: Message, tinfo) -> bytes | None:
        """The one test of the common case the fast paths take (:meth:`_put_python`,
        :meth:`_put_batch_fast`; ``_put.c`` takes the same case, and tests write the
        same messages through each and compare the bytes): a topic seen before
        (``tinfo``, from :meth:`_remember_topic`), properties as a dict without
        ``DELAY``, no raw properties, hosts or sysFlag of its own, a queue id, and
        sizes within the limits.  Returns its encoded properties, or ``None`` for
        :meth:`_put_general`, which also answers the limits with their reasons."""
        if tinfo is None or msg.sys_flag or msg.properties_raw is not None or msg.born_host is not None or msg.store_host is not None or msg.body is None or msg.queue_id < 0:
            return None
        pd = msg.properties
        if pd:
            if props.DELAY in pd:
                return None
            raw = _encode_props(pd)
        else:
            raw = b""
        blen = len(msg.body)
        if blen > self._max_body or len(raw) > cl.MAX_PROPERTIES_SIZE or tinfo.fixed_size + blen + len(raw) > self._max_total:
            return None
        return raw

    def _write_common(self, f, pos: int, total: int, tinfo, msg: Message, raw: bytes, qoff: int, phy: int, ts: int) -> None:
        """Write one common-case record (:meth:`_common_case`) of ``total`` bytes at
        ``pos`` of ``f``, under the put lock: packed whole into the mapping when a
        packer for its sizes exists, else its head packed and the parts copied in
        (big bodies with one ``pwritev``).  Raises ``struct.error``/``TypeError`` when
        a field does not fit its Java type (nothing is left written) or ``OSError``."""
        body = msg.body
        blen = len(body)
        plen = len(raw)
        end = pos + total
        clog = self.commitlog
        if blen < _BIG_BODY and end > f.populated:
            clog.prefault(f, end)
        whole = None if blen >= _BIG_BODY else WHOLE_RECORD_PACKERS.get((self._store_len, blen, len(tinfo.field), plen)) or whole_record_packer(self._store_len, blen, len(tinfo.field), plen)
        body_crc = (_zlib_crc32 if blen < _ISAL_FROM else _fast_crc32)(body) & 0x7FFFFFFF
        born_ts = msg.born_timestamp
        if born_ts is None:
            born_ts = ts
        if whole is not None:
            # the record's fields in Java's order (MessageRecord), then its variable parts
            try:
                whole.pack_into(
                    f.mm, pos, total, tinfo.magic, body_crc, msg.queue_id, msg.flag, qoff, phy, 0, born_ts, _BORN_ADDR, _BORN_PORT,
                    ts, self._store_addr, self._store_port, msg.reconsume_times, msg.prepared_transaction_offset, blen, body, tinfo.field, plen, raw,
                )
            except (struct.error, TypeError):
                f.mm[pos:end] = bytes(total)  # pack_into may have written a prefix
                raise
            return
        head = self._packer44.pack(
            total, tinfo.magic, body_crc, msg.queue_id, msg.flag, qoff, phy, 0, born_ts, _BORN_ADDR, _BORN_PORT,
            ts, self._store_addr, self._store_port, msg.reconsume_times, msg.prepared_transaction_offset, blen,
        )
        parts = (head, body, tinfo.field, plen.to_bytes(2, "big"), raw)
        if blen < _BIG_BODY:
            f.mm[pos:end] = b"".join(parts)
        else:
            # big bodies go in with one pwritev into the same page cache the mapping
            # shows: no copy to join the parts, no page fault per 4 KiB
            clog.write_parts(f, pos, parts, total)

    def _big_request(self, topic: str, qid: int, phy: int, total: int, ts: int, qoff: int, pd, pto: int) -> DispatchRequest:
        """The dispatch request of a record with a big body, built at put time: reading
        it back would touch two more pages per record, which costs more than this."""
        if pd:
            tags = pd.get(props.TAGS)
            code = 0
            if tags:
                code = self._tags_cache.get(tags)
                if code is None:
                    code = java_string_hash(tags)
                    if len(self._tags_cache) < 65536:
                        self._tags_cache[tags] = code
            return _new_result(DispatchRequest, (topic, qid, phy, total, code, ts, qoff, pd.get(props.KEYS) or None, pd.get(props.UNIQ_KEY) or None, 0, pto, None, 1, None, None))
        return _new_result(DispatchRequest, (topic, qid, phy, total, 0, ts, qoff, None, None, 0, pto, None, 1, None, None))

    def _put_general(self, msg: Message) -> PutMessageResult:
        """Every case: validation with reasons, DELAY rewrite, raw properties, CRC."""
        if self._shutdown:
            return self._fail(PutMessageStatus.SERVICE_NOT_AVAILABLE, "the message store is shut down")
        p = self._prepare(msg)
        if p.__class__ is PutMessageResult:
            return p
        with self._lock:
            if self._shutdown:
                return self._fail(PutMessageStatus.SERVICE_NOT_AVAILABLE, "the message store is shut down")
            try:
                phy, qoff, ts = self._append(p, self.clock.now_ms() if p.store_ts is None else 0)
            except _FieldRange as exc:
                return self._fail(PutMessageStatus.MESSAGE_ILLEGAL, str(exc))
        status = self._after_append(phy + p.total, p.wait, ts)
        if status is _OK and p.topic not in self._fast_topics and p.topic != SCHEDULE_TOPIC and not self.append_prop_crc and len(self._fast_topics) < 100_000:
            self._remember_topic(p.topic)
        return PutMessageResult(status, phy, p.total, qoff, ts, p.store_host)

    def _remember_topic(self, topic: str) -> None:
        if len(self._store_addr) != 4:
            return  # the fast paths write IPv4 hosts only (sysFlag 0, fixed part of 88 bytes)
        status, _, raw = self.validator.check_topic(topic)
        if status is not _OK:
            return
        magic, prefix = topic_field(raw)
        # the fixed part of a V1 IPv4 record holds a 1-byte topic length; V2's is 2
        self._fast_topics[topic] = FastTopic(prefix, magic, cl.FIXED_SIZE_V1_IPV4 + len(prefix) - 1)

    def put_batch(self, messages: "Sequence[Message] | MessageBatch", batch_properties: dict[str, str] | None = None) -> PutMessageResult:
        """Java ``putMessages``: many records under one lock and one store timestamp,
        consecutive queue offsets; each record's properties are its own followed by
        ``batch_properties`` (as Java's ``MessageExtBatch`` writes them).

        ``messages`` is either a :class:`MessageBatch` — what RocketMQ's store receives:
        one topic and queue, the entries encoded by the producer — written as Java
        does (all records in one commitlog file: a BLANK and the next file when they do
        not fit) and encoded for the whole batch at once with numpy; or a list of
        :class:`Message` s, any topics and queues, whose records may continue in the
        next commitlog file.  The answer covers the batch: ``wrote_offset`` and
        ``queue_offset`` of the first record, ``wrote_bytes`` of all, ``offsets`` of
        each; any invalid message fails the whole batch before anything is written.
        """
        if self._shutdown:
            return self._fail(PutMessageStatus.SERVICE_NOT_AVAILABLE, "the message store is shut down")
        if isinstance(messages, MessageBatch):
            return self._put_message_batch(messages, batch_properties)
        if not messages:
            return self._fail(PutMessageStatus.MESSAGE_ILLEGAL, "empty batch")
        if not batch_properties:
            fast = self._put_batch_fast(messages)
            if fast is not None:
                return fast
        bp = props.encode(batch_properties) if batch_properties else b""
        prepared = []
        for i, m in enumerate(messages):
            p = self._prepare(m, bp)
            if p.__class__ is PutMessageResult:
                return p.with_reason(f"message {i}: {p.reason}")
            prepared.append(p)
        with self._lock:
            if self._shutdown:
                return self._fail(PutMessageStatus.SERVICE_NOT_AVAILABLE, "the message store is shut down")
            now = self.clock.now_ms()
            done = []
            for i, p in enumerate(prepared):
                try:
                    done.append(self._append(p, now))
                except _FieldRange as exc:
                    return self._fail(PutMessageStatus.MESSAGE_ILLEGAL, f"message {i}: {exc}; the {i} messages before it were stored")
        status = self._after_append(done[-1][0] + prepared[-1].total, prepared[0].wait, done[-1][2])
        if not self.append_prop_crc and len(self._fast_topics) < 100_000:
            for p in prepared:
                if p.topic not in self._fast_topics and p.topic != SCHEDULE_TOPIC:
                    self._remember_topic(p.topic)
        phy0, qoff0, ts0 = done[0]
        return PutMessageResult(status, phy0, sum(p.total for p in prepared), qoff0, ts0, prepared[0].store_host, len(done), [d[0] for d in done])

    def _put_message_batch(self, batch: MessageBatch, batch_properties: dict[str, str] | None) -> PutMessageResult:
        """Java ``asyncPutMessages`` for a producer's encoded batch (see :meth:`put_batch`)."""
        status, reason, topic_raw = self.validator.check_topic(batch.topic)
        if status is not _OK:
            return self._fail(status, reason)
        # the entries: walked in C where it is built (_put.batch_entries, BatchLayout.of's
        # checks), else by numpy; a body C does not take goes to numpy, which says why
        counted = _native_put.batch_entries(batch.body) if _native_put is not None and self._native_put else None
        if counted is not None and batch.offsets is not None and len(batch.offsets) != counted[0] + 1:
            counted = None
        lay = None
        if counted is None:
            try:
                lay = batch.layout()
            except BatchFormatError as exc:
                return self._fail(PutMessageStatus.MESSAGE_ILLEGAL, str(exc))
            if not len(lay):
                return self._fail(PutMessageStatus.MESSAGE_ILLEGAL, "empty batch")
        qid = batch.queue_id
        if not isinstance(qid, int) or qid < 0:
            return self._fail(PutMessageStatus.MESSAGE_ILLEGAL, f"queueId {qid!r} is not a non-negative int")
        if batch_properties or batch.properties or self.append_prop_crc or batch.topic == SCHEDULE_TOPIC or batch.sys_flag & cl.TRANSACTION_MASK:
            # properties to append to every entry, a property CRC, delayed or
            # transactional records: the message-by-message path writes them
            extra = {**(batch.properties or {}), **(batch_properties or {})}
            return self.put_batch(batch.messages(), extra or None)
        born_host = batch.born_host or _DEFAULT_BORN_HOST
        store_host = batch.store_host or self.store_host
        sys_flag = batch.sys_flag & ~_V6_BITS
        sys_flag |= (cl.FLAG_BORNHOST_V6 if len(born_host[0]) == 16 else 0) | (cl.FLAG_STOREHOST_V6 if len(store_host[0]) == 16 else 0)
        magic, tfield = topic_field(topic_raw)
        born_v6, store_v6 = len(born_host[0]) == 16, len(store_host[0]) == 16
        if counted is not None:
            n, max_body = counted
            total = batch_records_bytes(len(batch.body), n, len(tfield), born_v6, store_v6)
        else:
            n, max_body = len(lay), int(lay.body_len.max())
            sizes = batch_record_sizes(lay, len(tfield), born_v6, store_v6)
            total = int(sizes.sum())
        # Java MessageExtEncoder.encode(MessageExtBatch): each body within maxMessageSize,
        # all the records within maxMessageSize + 64 KiB
        if max_body > self.validator.max_body:
            lay = batch.layout()
            i = int(np.argmax(lay.body_len))
            return self._fail(PutMessageStatus.MESSAGE_ILLEGAL, f"message {i}: body is {int(lay.body_len[i])} bytes, more than maxMessageSize={self.validator.max_body}")
        if total > self.validator.max_record or total > self.validator.max_fit:
            return self._fail(PutMessageStatus.MESSAGE_ILLEGAL, f"the batch's records are {total} bytes, more than {min(self.validator.max_record, self.validator.max_fit)} (maxMessageSize + 64 KiB, or a commitlog file)")
        if counted is None:
            crcs = crc32_slices(batch.body, lay.body_start, lay.body_start + lay.body_len) & 0x7FFFFFFF
            starts = np.zeros(n, dtype=np.int64)
            np.cumsum(sizes[:-1], out=starts[1:])
        key = (batch.topic, qid)
        clog = self.commitlog
        with self._lock:
            if self._shutdown:
                return self._fail(PutMessageStatus.SERVICE_NOT_AVAILABLE, "the message store is shut down")
            ts = _time_ns() // 1_000_000 if self._system_clock else self.clock.now_ms()
            f = clog.files[-1]
            f = clog.room_for(f, f.wrote_position, total)  # Java: END_OF_FILE, the whole batch goes to the next file
            pos = f.wrote_position
            phy = f.file_from_offset + pos
            end = pos + total
            qoff = self._queue_offsets.get(key, 0)
            if end > f.populated:
                clog.prefault(f, end)
            born_ts = ts if batch.born_timestamp is None else batch.born_timestamp
            if counted is not None:
                # the fixed fields the records share packed once (the schema's packer), the
                # six that differ written record by record in C
                try:
                    template = record_packer(len(born_host[0]), len(store_host[0])).pack(
                        0, magic, 0, qid, 0, 0, 0, sys_flag, born_ts, born_host[0], born_host[1], ts, store_host[0], store_host[1], 0, 0, 0)
                except (struct.error, OverflowError, TypeError) as exc:  # a batch field beyond its Java type; nothing written
                    return self._fail(PutMessageStatus.MESSAGE_ILLEGAL, f"a batch field does not fit its Java type: {exc}")
                offsets = _native_put.write_batch(f.mm, pos, batch.body, template, _BATCH_FIELDS_AT[born_v6 + 2 * store_v6], tfield, qoff, phy)
            else:
                dst = np.frombuffer(f.mm, np.uint8, count=total, offset=pos)
                try:
                    write_batch_records(
                        dst, batch.body, lay, topic=topic_raw, body_crc=crcs, queue_id=qid, queue_offset=qoff + np.arange(n), physical_offset=phy + starts,
                        sys_flag=sys_flag, born_timestamp=born_ts, born_host=born_host, store_timestamp=ts, store_host=store_host,
                    )
                except (OverflowError, ValueError, TypeError) as exc:  # a batch field beyond its Java type
                    dst[:] = 0
                    return self._fail(PutMessageStatus.MESSAGE_ILLEGAL, f"a batch field does not fit its Java type: {exc}")
                finally:
                    del dst  # the mapping must not stay exported
                offsets = (phy + starts).tolist()
            self._queue_offsets[key] = qoff + n
            f.wrote_position = end
            clog.store_timestamp = ts
            clog.max_offset = phy + total
            self._pending.extend(offsets)
        status = self._after_append(phy + total, None, ts)
        if status is _OK and batch.topic not in self._fast_topics and len(self._fast_topics) < 100_000:
            self._remember_topic(batch.topic)
        return _new_result(PutMessageResult, (status, phy, total, qoff, ts, store_host, len(offsets), offsets, ""))

    def _put_batch_fast(self, messages: Sequence[Message]) -> PutMessageResult | None:
        """:meth:`put`'s fast path for a whole batch (``None`` when some message needs
        the general path): properties encoded and sizes checked first, then one lock,
        one store timestamp, one pass."""
        fast = self._fast_topics
        raws = []
        for m in messages:
            raw = self._common_case(m, fast.get(m.topic))
            if raw is None:
                return None
            raws.append(raw)
        clog = self.commitlog
        room_for, write = clog.room_for, self._write_common
        qoffs = self._queue_offsets
        offsets = []
        entries = []  # for the pending list: offsets of the records to read back
        reqs = []  # and requests of big records (_big_request)
        wrote = 0
        with self._lock:
            if self._shutdown:
                return self._fail(PutMessageStatus.SERVICE_NOT_AVAILABLE, "the message store is shut down")
            now = _time_ns() // 1_000_000 if self._system_clock else self.clock.now_ms()
            first = None
            last_ts = 0  # store time of the last record written (for a batch cut short)
            f = clog.files[-1]
            pos = f.wrote_position
            for m, raw in zip(messages, raws):
                body = m.body
                topic = m.topic
                tinfo = fast[topic]
                blen = len(body)
                total = tinfo.fixed_size + blen + len(raw)
                ts = m.store_timestamp
                if ts is None:
                    ts = now
                qid = m.queue_id
                key = (topic, qid)
                qoff = qoffs.get(key, 0)
                qoffs[key] = qoff + 1
                g = room_for(f, pos, total)
                if g is not f:
                    f = g
                    pos = f.wrote_position
                phy = f.file_from_offset + pos
                end = pos + total
                try:
                    write(f, pos, total, tinfo, m, raw, qoff, phy, ts)
                except (struct.error, TypeError, OSError) as exc:
                    # the records before this one are complete and stay; this one is not written
                    qoffs[key] = qoff
                    f.wrote_position = pos
                    if offsets:
                        clog.store_timestamp = last_ts
                        clog.max_offset = f.file_from_offset + pos
                        self._pending.extend(entries)
                        self._pending_reqs.extend(reqs)
                    stored = f"the {len(offsets)} messages before it were stored"
                    if isinstance(exc, OSError):  # the disk's failure, not the message's
                        raise OSError(exc.errno, f"message {len(offsets)}: {exc.strerror}; {stored}") from exc
                    return self._fail(PutMessageStatus.MESSAGE_ILLEGAL, f"message {len(offsets)}: a field does not fit its Java type ({exc}); {stored}")
                pos = end
                if first is None:
                    first = (qoff, ts)
                last_ts = ts
                offsets.append(phy)
                if blen < _BIG_BODY:
                    entries.append(phy)
                else:
                    reqs.append(self._big_request(topic, qid, phy, total, ts, qoff, m.properties, m.prepared_transaction_offset))
                wrote += total
            f.wrote_position = pos
            clog.store_timestamp = ts
            clog.max_offset = phy + total
            self._pending.extend(entries)
            self._pending_reqs.extend(reqs)
        status = self._after_append(phy + total, None, ts)
        return _new_result(PutMessageResult, (status, offsets[0], wrote, first[0], first[1], self.store_host, len(offsets), offsets, ""))

    def _after_append(self, end: int, wait_prop, store_timestamp: int) -> PutMessageStatus:
        """Dispatch when a batch is full (inline mode), then honour SYNC_FLUSH."""
        if self._inline and self.dispatch_behind >= self.reput_batch:
            self.reput()
        return self._sync_wait(end, wait_prop, store_timestamp) if self.sync_flush else _OK

    def _sync_wait(self, end: int, wait_prop, store_timestamp: int) -> PutMessageStatus:
        """SYNC_FLUSH: wait for the group commit covering ``end``, the end of the
        record stored at ``store_timestamp`` (Java ``handleDiskFlush``)."""
        gc = self._group_commit
        if wait_prop is not None and wait_prop.lower() == "false":  # Java isWaitStoreMsgOK
            if gc is not None:
                gc.request(end, store_timestamp)
            return _OK
        if gc is None:
            self._flush_commitlog()
            return _OK
        if not gc.wait_for(end, self.config.sync_flush_timeout / 1000.0, store_timestamp):
            return PutMessageStatus.FLUSH_DISK_TIMEOUT
        return _OK

    # -- dispatch, flush ------------------------------------------------------------------------
    def reput(self, max_records: int | None = None) -> int:
        """Java ``ReputMessageService.doReput``: read the records appended since the
        last reput back from the commitlog and dispatch them (all, or the first
        ``max_records``) to consume queues and index; returns how many."""
        with self._reput_lock:
            with self._lock:
                offsets, reqs = self._pending, self._pending_reqs
                total = len(offsets) + len(reqs)
                if not total:
                    return 0
                if max_records is None or max_records >= total:
                    # the lists stay the same objects (the C put holds them)
                    offsets, reqs = offsets[:], reqs[:]
                    self._pending.clear()
                    self._pending_reqs.clear()
                else:
                    offsets, reqs = self._take_pending(max_records)
                files = list(self.commitlog.files)
            # most records are read back from the log; those with big bodies brought
            # their request (see _big_request)
            if not offsets:
                self.dispatcher.dispatch_batch(reqs)
                self.reput_from_offset = reqs[-1][2] + reqs[-1][3]
                return len(reqs)
            pos = np.asarray(offsets, dtype=np.int64)
            starts = np.asarray([f.file_from_offset for f in files], dtype=np.int64)
            which = np.searchsorted(starts, pos, side="right") - 1
            cut = np.flatnonzero(np.diff(which)) + 1
            parts = [DispatchColumns.from_requests(reqs)] if reqs else []
            for a, b in zip([0, *cut.tolist()], [*cut.tolist(), len(pos)]):
                f = files[int(which[a])]
                parts.append(read_dispatch_columns(f.mm, pos[a:b] - f.file_from_offset, file_base=f.file_from_offset, file=str(f.path), delay_levels=self.dispatcher.delay_levels))
            cols = DispatchColumns.concat(parts)
            if reqs:
                cols = cols.take(np.argsort(cols.commitlog_offset, kind="stable"))  # back in commitlog order
            self.dispatcher.dispatch_columns(cols)
            self.reput_from_offset = int(cols.commitlog_offset[-1] + cols.msg_size[-1])
            return len(offsets) + len(reqs)

    def _take_pending(self, k: int) -> tuple[list[int], list[DispatchRequest]]:
        """Under the put lock: remove and return the first ``k`` pending records in
        commitlog order (from the two lists, each already in that order)."""
        offsets, reqs = self._pending, self._pending_reqs
        i = j = 0
        while i + j < k:  # a merge of the heads; partial reputs are small (notebooks, tests)
            if j >= len(reqs) or (i < len(offsets) and offsets[i] < reqs[j][2]):
                i += 1
            else:
                j += 1
        taken = offsets[:i], reqs[:j]
        del offsets[:i], reqs[:j]
        return taken

    @property
    def dispatch_behind(self) -> int:
        """Records appended but not dispatched yet (Java ``dispatchBehindBytes``, counted
        in records)."""
        return len(self._pending) + len(self._pending_reqs)

    def flush_commitlog(self) -> int:
        """Force the commitlog now (what the flush services do); returns how far it is
        on disk."""
        return self._flush_commitlog()

    def _flush_commitlog(self) -> int:
        """Force the commitlog, and let it know the store timestamp of the newest
        record the force covers (read under the put lock: that record is whole)."""
        with self._lock:
            ts = self.commitlog.store_timestamp
        return self.commitlog.flush(ts)

    def flush_logics(self) -> None:
        """Java ``FlushConsumeQueueService.doFlush``: force consume queues, then the
        checkpoint with logicsMsgTimestamp of what was dispatched before the flush."""
        if self.dispatcher is None or self.checkpoint is None:
            return
        # physicMsgTimestamp: the newest record on disk, whoever forced it (the flush
        # services here, or the C group commit from its own thread)
        forced = self.commitlog.flushed_timestamp
        if forced > self.checkpoint.physic_msg_timestamp:
            self.checkpoint.physic_msg_timestamp = forced
        with self._reput_lock:
            logics = self.dispatcher.logics_msg_timestamp
        # entries dispatched before the snapshot are in the page cache: force them
        # without holding up dispatch
        self.dispatcher.flush_queues()
        if logics > 0:
            self.checkpoint.logics_msg_timestamp = logics
        self.checkpoint.flush()

    def _on_index_file_full(self, index_file) -> None:
        """Java ``IndexService.flush(prevFile)``: a full file's endTimestamp goes to the
        checkpoint's indexMsgTimestamp."""
        if self.checkpoint is not None and index_file.end_timestamp > 0:
            self.checkpoint.index_msg_timestamp = index_file.end_timestamp
            self.checkpoint.flush()

    def flush(self) -> None:
        """Dispatch what is pending and force everything: commitlog, consume queues,
        index files, checkpoint, broker metadata."""
        self.reput()
        self._flush_commitlog()
        with self._reput_lock:
            self.dispatcher.index.flush()
        self.flush_logics()
        self._persist_metadata()

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Java ``ConsumerOffsetManager.commitOffset``: ``group`` has consumed ``topic``/
        ``queue_id`` up to ``offset`` (the queue offset of its next message); written to
        ``config/consumerOffset.json`` at the next :meth:`persist_metadata` (flush, shutdown)."""
        self.metadata.consumer_offsets.setdefault(f"{topic}@{group}", {})[queue_id] = offset

    def queue_max_offset(self, topic: str, queue_id: int) -> int:
        """Java ``getMaxOffsetInQueue``: the queue offset the next message of the queue gets."""
        return self._queue_offsets.get((topic, queue_id), 0)

    def persist_metadata(self) -> None:
        """Java ``ConfigManager.persist`` of the broker's managers, as its scheduled task
        does (``flushConsumerOffsetInterval``), apart from any flush of the log."""
        self._persist_metadata()

    def _persist_metadata(self) -> None:
        """``config/topics.json`` (every queue written to), ``consumerOffset.json``,
        ``delayOffset.json`` — written safely."""
        if not self._keeps_metadata:
            return
        for topic, qid in list(self._queue_offsets):
            self.metadata.note_queue(topic, qid)
        self.metadata.persist(self.clock.now_ms())

    def _clean_if_due(self) -> None:
        """Java ``CleanCommitLogService.run``: clean when :func:`~.clean.cleanup_due`
        says so — a ``deleteWhen`` hour, or the commitlog's disk filling up (measured
        on the partition that holds it)."""
        import time as _time

        hour = _time.localtime(self.clock.now_ms() / 1000).tm_hour
        try:
            du = shutil.disk_usage(self.commitlog.directory)
            used = (du.total - du.free) / du.total if du.total else -1.0
        except OSError:
            used = -1.0  # Java getDiskPartitionSpaceUsedPercent answers -1: treated as full
        decision = cleanup_due(self.config, hour=hour, used_ratio=used)
        self.last_clean_decision = decision
        if decision.clean:
            self.last_clean_report = self.clean_expired_files(force=decision.immediately)

    last_clean_report: CleanReport | None = None
    last_clean_decision: CleanDecision | None = None

    def clean_expired_files(self, now_ms: int | None = None, *, force: bool = False) -> CleanReport:
        """Delete expired commitlog files (``fileReservedTime``), then consume-queue and
        index files that only point below the new minimum.  ``force`` deletes every
        file but the active one (Java ``executeDeleteFilesManually`` / disk full)."""
        self.reput()
        now = self.clock.now_ms() if now_ms is None else now_ms
        # the reput lock first, as everywhere: reput takes the put lock inside it
        with self._reput_lock, self._lock:
            # puts since that reput (or a manual dispatch mode) leave records to dispatch:
            # reput reads them back from the log, so their files stay
            firsts = ([self._pending[0]] if self._pending else []) + ([self._pending_reqs[0][2]] if self._pending_reqs else [])
            keep_from = min(firsts) if firsts else None
            return clean_expired(self.commitlog, self.dispatcher, now, self.config.file_reserved_time, force=force, keep_from=keep_from)

    # -- state ------------------------------------------------------------------------------------
    @property
    def max_phy_offset(self) -> int:
        """Java ``getMaxPhyOffset``: end of the last record."""
        return self.commitlog.max_offset

    @property
    def min_phy_offset(self) -> int:
        return self.commitlog.min_offset

    @property
    def flushed_where(self) -> int:
        """How far the commitlog is known to be on disk."""
        return self.commitlog.flushed_where

    def max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        """Java ``getMaxOffsetInQueue`` (assigned offsets; dispatch may lag)."""
        return self._queue_offsets.get((topic, queue_id), 0)

    # -- lookups (rmqlab.lookup over a reader of the same root) -----------------------------------
    def reader(self) -> StoreReader:
        """A read-only view of the store as it is now (pending records dispatched
        first).  Writes go through ``MAP_SHARED`` mappings, so the reader sees them."""
        if self._started:
            self.reput()
        return StoreReader(self.root, self.config, log_end=self.max_phy_offset if self.commitlog is not None else None)

    def get_message(self, topic: str, queue_id: int, queue_offset: int) -> Record:
        """Java ``getMessage`` for one offset: the record the consume queue points at."""
        with self.reader() as r:
            return _lookup.get_message(r, topic, queue_id, queue_offset)[1]

    def get_messages(self, topic: str, queue_id: int, start: int = 0, max_count: int = 32) -> list[Record]:
        with self.reader() as r:
            return [rec for _, rec in _lookup.get_messages(r, topic, queue_id, start, max_count)]

    def query_message(self, topic: str, key: str, max_num: int = 64, begin: int = 0, end: int = _lookup.LONG_MAX):
        """Java ``queryMessage``: index lookup, then the real key is checked."""
        with self.reader() as r:
            return _lookup.query_by_key(r, topic, key, max_num, begin, end)

    def look_message_by_offset(self, physical_offset: int) -> Record:
        with self.reader() as r:
            return r.commitlog.read(physical_offset)

    def view_message_by_id(self, msg_id: str) -> Record:
        with self.reader() as r:
            return _lookup.look_by_msg_id(r, msg_id)

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int, boundary: str = "LOWER") -> int:
        with self.reader() as r:
            return _lookup.offset_by_time(r, topic, queue_id, timestamp, boundary)

    def __repr__(self) -> str:
        state = "open" if self._started else "closed"
        return f"MessageStore({str(self.root)!r}, {state}, maxPhyOffset={self.commitlog.max_offset if self.commitlog else 0})"


def put_all(store: MessageStore, messages: Iterable[Message]) -> list[PutMessageResult]:
    """Put messages one by one; every answer, in order."""
    return [store.put(m) for m in messages]
