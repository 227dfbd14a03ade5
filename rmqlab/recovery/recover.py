"""Start-up recovery, as Apache RocketMQ 5.3 does it (spec section 5).

Java: ``DefaultMessageStore.load`` → ``IndexService.load(lastExitOK)`` →
``DefaultMessageStore.recover`` → ``ConsumeQueue.recover`` for every queue, then
``CommitLog.recoverNormally`` or ``CommitLog.recoverAbnormally``.

This module is the order of the steps, the commitlog's scan and applying; each queue
kind's part is :mod:`rmqlab.recovery.queues`, re-dispatch :mod:`rmqlab.recovery.redispatch`,
the plan's types :mod:`rmqlab.recovery.model`, what the start costs (records cut, keys
unfindable, queues short, group losses, timers) :mod:`rmqlab.recovery.costs`, why
:mod:`rmqlab.recovery.cause`, the end of the log as every command reads it
:mod:`rmqlab.recovery.next_start`.

The steps, in RocketMQ's order::

    abort file?  ── no ──► normal   (clean exit)
         │ yes
         └────────────► abnormal (crash): index files with endTimestamp >
                        checkpoint.indexMsgTimestamp are deleted
    every consume queue: scan from its third-to-last file to the first invalid
        entry; files past it are deleted; maxPhyOffsetOfConsumeQueue = max(offset+size)
    commitlog start file
        normal   (5.3.2+): the last file starting at or before maxPhyOffsetOfConsumeQueue
                 (older brokers: the third-to-last file — ``legacy_three_files=True``)
        abnormal: newest → oldest, the first file whose first record is a message with
                 0 < storeTimestamp ≤ checkpoint.minTimestamp; none → file 0
    scan forward with checkMessageAndReturnSize (body CRC when checkCRCOnRecover);
        BLANK → next file; the first failure is the new end of the log (processOffset)
        re-dispatch: abnormal every record scanned; normal those after
        maxPhyOffsetOfConsumeQueue (idempotent: what queues and index hold is skipped)
    maxPhyOffsetOfConsumeQueue ≥ processOffset → cut consume-queue entries at it
    commitlog files starting after processOffset are deleted; in the file holding it
        only the write position moves back — the bytes are NOT zeroed

:func:`recover` plans all of that read-only (``dry run``, the default) and, when asked,
applies it to a copy (``out=``) or in place (``in_place=True``).  In place, every byte
that is cut or deleted is first saved to a sidecar directory next to the store, with a
``manifest.json``, so nothing is lost.  After applying, the store is left as a clean
RocketMQ shutdown leaves it (checkpoint written, ``abort`` removed) unless
``mark_clean=False``: then the next start recovers again, abnormally.

Re-dispatch uses the writers' :class:`~rmqlab.writers.dispatch.CommitLogDispatcher`
(the same code that writes queues and index on put), so rebuilt files are RocketMQ's.
Records the consume queues and index already hold are filtered out in bulk first
(numpy over record positions), which is what keeps a 1 GiB abnormal recovery fast;
the rest (every record, when the newest index file was dropped) are decoded in bulk
by :mod:`rmqlab.scan.decode` and dispatched as columns
(:meth:`~rmqlab.writers.dispatch.CommitLogDispatcher.dispatch_columns`), with no Python
work per record.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..config import MessageStoreConfig
from ..releases import COMMIT_LOG_RECOVER_MAX_NUM, Release
from ..releases import release as release_named
from ..store.checkpoint import read_checkpoint_fields
from ..store.release import tell_release
from ..errors import StoreFormatError, StoreLayoutError
from ..files import MappedFileQueue
from ..format import commitlog as cl
from ..format.checkpoint import CheckpointV5, zero_checkpoint, min_timestamp as cp_min_timestamp, min_timestamp_index as cp_min_timestamp_index
from ..format.indexfile import IndexHeader, index_file_size
from ..format import layout
from ..format.layout import store_timestamp_at
from ..format.record import decode_record
from ..rules import ABORT_FILE, BATCH_CONSUMEQUEUE_DIR, CHECKPOINT_FILE, COMMITLOG_DIR, CONSUMEQUEUE_DIR, CONSUMEQUEUE_EXT_DIR, INDEX_DIR, LOCK_FILE
from ..files.extent import data_regions, nonzero_extent, zero_runs
from ..store.layout import commitlog_dirs, recognise
from ..store.reader import infer_config, lock_state
from .report import NOT_MODELLED, ReleaseOutcome, IndexChange, RecoveryReport, StopPoint
from ..scan.acceptance import ILLEGAL_OFFSET, Check, FileScan, check_record, scan_file, shift_scan
from .costs import group_losses, queues_left_short, timers_cut, unfindable_keys, what_the_cut_costs
from .model import STORE, Queue, RecoveryPlan
from .queues import ext_setting, plan_compaction, plan_ext, recover_queue, truncate_queue_plan
from .redispatch import dispatch_stop, file_view, multi_dispatch_settings, records_to_dispatch, rocksdb_copy_changes, rocksdb_queue_changes, simulate_queues


@dataclass(frozen=True)
class StartChoice:
    """Where one release's recovery starts its commitlog scan: the file's index, the
    rule in words, why this file, and the offset after which records are re-dispatched
    (-2: every record scanned)."""

    index: int
    rule: str
    reason: str
    dispatch_from: int
    log: tuple[str, ...] = ()
    #: where in the start file the walk begins (enableAcceleratedRecovery: the log offset
    #: dispatchFromPhyOffset); -1: at its first byte
    scan_at: int = -1
    #: why RocketMQ's load() fails before it walks (an exception of its recovery); "" if not
    load_error: str = ""


class _Planner:
    def __init__(self, root: Path, cfg: MessageStoreConfig, *, release: Release, check_crc: bool | None, force_verify_prop_crc: bool,
                 rocksdb=None, rocksdb_copy=None):
        self.root = root
        #: the consume queues' RocksDB (RocksDBMessageStore, storeType=defaultRocksDB), read-only; None: file queues
        self.rocksdb = rocksdb
        #: the RocksDB copy beside file queues (rocksdbCQDoubleWriteEnable), read-only; None: none
        self.copy = rocksdb_copy
        self.copy_max = rocksdb_copy.max_phy_offset() if rocksdb_copy is not None else None
        self.cfg = cfg
        #: whose start-up rules the plan follows (rmqlab.releases)
        self.release = release
        # the caller's, the config's, else the writer's default (Java checks, rocketmq-rust does not)
        self.check_crc = check_crc if check_crc is not None else cfg.check_crc_on_recover if cfg.check_crc_on_recover is not None else release.check_crc_on_recover
        self.force_prop = force_verify_prop_crc
        self.log: list[str] = []
        #: release name -> the RocksDB stores its start-up asks (rmqlab.store.rocksdb_message.DispatchStores)
        self._stores_by_release: dict = {}

    def plan(self) -> RecoveryPlan:
        """Java ``DefaultMessageStore.load`` then ``recover``, read-only, step by step."""
        t0 = time.perf_counter()
        root, log = self.root, self.log
        self.log_dirs = commitlog_dirs(root, self.cfg)
        if not self.log_dirs[0].is_dir():
            raise StoreLayoutError(root, None, "no commitlog/ directory: not a RocketMQ store root (a log kept elsewhere: --commitlog-dir)")
        abort = (root / ABORT_FILE).exists()
        mode = "abnormal" if abort else "normal"
        reason = "abort file present: the last exit was not clean" if abort else "no abort file: the last exit was clean"
        rep = RecoveryReport(str(root), "dry-run", None, mode, reason, release=self.release.name)
        log.append(f"last shutdown {'abnormally' if abort else 'normally'}, store path root dir: {STORE}")
        plan = RecoveryPlan(root, self.cfg, rep)
        self._load_commitlog(plan)
        cp = self._read_checkpoint(plan)
        self._load_index(plan, abort, cp)
        log.append("message store recover mode: normal")  # Java: recoverConcurrently off
        if self.rocksdb is None:
            self._recover_queues(plan)
            max_cq = max((q.max_physic_offset for q in plan.queues.values()), default=-1)
        else:
            # RocksDBConsumeQueueStore: recover() only starts RocksDB; its max physical
            # offset is dispatch's CHECKPOINT_TOPIC progress (RocksDBConsumeQueueOffsetTable.getMaxPhyOffset)
            max_cq = self.rocksdb.max_phy_offset()
        rep.max_phy_offset_in_cq_before = max_cq
        files = plan.files
        if self.release.lowest_dispatch_progress and self.cfg.message_index_enable and plan.index_safe_at_load >= 0 and files:
            # rocketmq-rust's get_dispatch_recovery_offset: the lowest dispatcher progress,
            # the index's safe frontier among them (IndexService.initialize_dispatch_frontier)
            frontier = max(plan.index_safe_at_load, files[0].file_from_offset)
            if frontier < max_cq:
                rep.notes.append(f"{self.release.title} recovers from its lowest dispatch progress: the index's safe offset {frontier}, "
                                 f"below the consume queues' max physical offset {max_cq} (get_dispatch_recovery_offset)")
                max_cq = frontier
        if not files:
            rep.notes.append("the commitlog has no files: RocketMQ deletes every consume queue (\"The commitlog files are deleted\")")
            rep.start_file = ""
            rep.start_reason = "no commitlog files"
            rep.commitlog_end = 0
            plan.wipe_queues = True
            return plan
        self.abort, self.max_cq, self.cp = abort, max_cq, cp
        choice = self.start_choice(plan, self.release)
        index = self._choose_start(plan, choice)
        if choice.load_error:
            # an exception in DefaultMessageStore.recover: load() returns false (the plan
            # still walks the log from the start file, for what it would read)
            rep.load_ok = False
            rep.load_problems.append(choice.load_error)
            plan.fails_load.append(choice.load_error)
        else:
            plan.scan_at = choice.scan_at
        self._scan(plan, index, abort)
        process = plan.process
        # truncation of consume queues (after the scan, as Java does); a CombineConsumeQueueStore
        # passes the lower of its stores' progress (getDispatchFromPhyOffset), for both
        if self.copy is not None and self.release.combined_queue_store:
            max_cq = min(max_cq, self.copy_max)
        plan.truncate_cq = max_cq >= process
        rep.queues_truncated = plan.truncate_cq
        if plan.truncate_cq:
            log.append(f"maxPhyOffsetOfConsumeQueue({max_cq}) >= processOffset({process}), truncate dirty logic files")
        # commitlog files after the new end
        plan.delete_commitlog = [f for f in files if f.file_from_offset > process]
        for f in plan.delete_commitlog:
            log.append(f"delete file[REF:0] {STORE}/{COMMITLOG_DIR}/{f.path.name} OK")
            rep.deleted_commitlog_files.append(f.path.name)
        rep.timings["plan_s"] = time.perf_counter() - t0
        return plan

    def _load_commitlog(self, plan: RecoveryPlan) -> None:
        """Java ``MappedFileQueue.load`` (``MultiPathMappedFileQueue.load`` over every
        directory of a spread log): an empty last file is deleted, a file of the wrong
        size makes the load fail."""
        clq = MappedFileQueue(self.log_dirs, self.cfg.mapped_file_size_commit_log, strict=False)
        plan.empty_last = [p for p in clq.ignored if p.stat().st_size == 0]
        for p in clq.problems:
            if p in clq.gaps:
                # Java MappedFileQueue.checkSelf only logs a gap; the scan's next file is the
                # next one there is (a BLANK at the end of the one before moves to it)
                plan.report.notes.append(f"{p}: a commitlog file is missing; RocketMQ loads the log all the same (checkSelf logs it)")
                continue
            plan.report.load_ok = False
            plan.report.load_problems.append(str(p))
        plan.commitlog = clq

    def _read_checkpoint(self, plan: RecoveryPlan) -> dict:
        """Java ``StoreCheckpoint``: a missing file reads as zeros."""
        rep = plan.report
        cp_path = self.root / CHECKPOINT_FILE
        cp = zero_checkpoint()
        if cp_path.exists():
            cp = read_checkpoint_fields(self.root)
            if cp is None:
                raise StoreFormatError(cp_path, None, "the checkpoint cannot be read (not a file?); RocketMQ would not start either")
            size = cp_path.stat().st_size
            if size < CheckpointV5.sizeof():
                rep.notes.append(f"checkpoint is {size} bytes: RocketMQ maps it a page long, so it reads zero-padded")
        else:
            rep.notes.append("no checkpoint file: RocketMQ creates one of zeros (minTimestamp 0)")
        rep.checkpoint = cp
        if self.cfg.message_index_enable and self.cfg.message_index_safe:
            # Java isMappedFileMatchedRecover with messageIndexSafe: the start file is
            # old enough for the index too, so re-dispatch rebuilds what a dropped
            # index file held
            rep.min_timestamp = cp_min_timestamp_index(cp["physic_msg_timestamp"], cp["logics_msg_timestamp"], cp["index_msg_timestamp"])
        else:
            rep.min_timestamp = cp_min_timestamp(cp["physic_msg_timestamp"], cp["logics_msg_timestamp"])
        return cp

    def _load_index(self, plan: RecoveryPlan, abort: bool, cp: dict) -> None:
        """Java ``IndexService.load(lastExitOK)``: after a crash, index files newer than
        the checkpoint's indexMsgTimestamp are deleted."""
        rep, cfg, log = plan.report, self.cfg, self.log
        idx_dir = self.root / INDEX_DIR
        idx_files = sorted(p for p in idx_dir.iterdir() if p.is_file() and p.name.isdigit()) if idx_dir.is_dir() else []
        plan.index_files = idx_files
        kept_index: list[tuple[Path, dict]] = []
        dropped: list[Path] = []
        for p in idx_files:
            with open(p, "rb") as fh:
                raw = fh.read(IndexHeader.sizeof())
            if len(raw) < IndexHeader.sizeof():
                raw = raw + bytes(IndexHeader.sizeof() - len(raw))  # Java maps it full size: zeros
            h = IndexHeader.parse(raw)
            if abort and h.end_timestamp > cp["index_msg_timestamp"]:
                dropped.append(p)
                rep.index.append(IndexChange(p.name, "dropped", int(h.end_timestamp), cp["index_msg_timestamp"]))
                log.append(f"delete file[REF:0] {STORE}/{INDEX_DIR}/{p.name} OK")
                continue
            log.append(f"load index file OK, {STORE}/{INDEX_DIR}/{p.name}")
            size = p.stat().st_size
            if size < cfg.index_file_size:
                rep.notes.append(
                    f"index file {p.name} is {size} bytes, not {cfg.index_file_size}: RocketMQ maps it full size (zeros past "
                    "its end) and keeps it; applying the recovery pads it so"
                )
            if h.index_count <= 0:
                # Java IndexHeader.load: indexCount <= 0 reads as 1; endPhyOffset 0 makes
                # buildIndex re-index every dispatched record into this file
                rep.notes.append(
                    f"index file {p.name} has a zero header (created, never flushed): RocketMQ keeps it and re-indexes "
                    "every re-dispatched record into it, so older records get duplicate index entries"
                )
            kept_index.append((p, {"end_phy_offset": int(h.end_phy_offset), "end_timestamp": int(h.end_timestamp), "index_count": int(h.index_count)}))
        plan.dropped_index = dropped
        # endPhyOffset is the offset of the last record indexed (IndexFile.putKey); -1: none
        plan.index_end_phy = kept_index[-1][1]["end_phy_offset"] if kept_index else -1
        plan.index_safe_at_load = _index_safe_offset(kept_index, cp.get("logics_physical_offset", 0), bool(dropped))

    def _recover_queues(self, plan: RecoveryPlan) -> None:
        """Java ``ConsumeQueueStore.load`` then ``recover``: consumequeue/, then
        batchconsumequeue/, every queue recovered (one that fails to load makes the
        store's load fail, and so does a queue in the directory of the other type:
        ``queueTypeShouldBe`` asks the topic's config).  The batch topics are those
        config/topics.json says (``queue.type=BatchCQ``); without a readable
        topics.json, those with a batchconsumequeue/ directory."""
        from ..store.metadata import batch_topics

        rep, log = plan.report, self.log
        queues: dict[tuple[str, int], Queue] = {}
        known, source = batch_topics(self.root)
        on_disk = sorted(p.name for p in (self.root / BATCH_CONSUMEQUEUE_DIR).iterdir() if p.is_dir()) if (self.root / BATCH_CONSUMEQUEUE_DIR).is_dir() else []
        if known is None:
            plan.batch_topics = set(on_disk)
            if on_disk:
                rep.notes.append(f"no readable config/topics.json: {', '.join(on_disk)} taken to be batch topics (queue.type=BatchCQ) from "
                                 f"{BATCH_CONSUMEQUEUE_DIR}/; RocketMQ asks the broker's topic table")
        else:
            plan.batch_topics = set(known)
        for base, batch, size in ((CONSUMEQUEUE_DIR, False, self.cfg.mapped_file_size_consume_queue),
                                  (BATCH_CONSUMEQUEUE_DIR, True, self.cfg.mapper_file_size_batch_consume_queue)):
            d = self.root / base
            if not d.is_dir():
                continue
            for tdir in sorted(d.iterdir()):
                if not tdir.is_dir():
                    continue
                qdirs = [q for q in sorted(tdir.iterdir()) if q.is_dir() and q.name.isdigit()]
                if qdirs and known is not None and (tdir.name in plan.batch_topics) != batch:
                    # ConsumeQueueStore.queueTypeShouldBe throws; DefaultMessageStore.load returns false
                    rep.load_ok = False
                    want, have = ("BatchCQ", "SimpleCQ") if batch else ("SimpleCQ", "BatchCQ")
                    problem = f"{tdir}: The queue type of topic: {tdir.name} should be {want}, but is {have} ({source})"
                    rep.load_problems.append(problem)
                    plan.fails_load.append(f"{problem} (ConsumeQueueStore.queueTypeShouldBe)")
                    continue
                for qdir in qdirs:
                    try:
                        q = recover_queue(qdir, tdir.name, int(qdir.name), size, log, batch=batch)
                    except StoreLayoutError as err:
                        rep.load_ok = False
                        rep.load_problems.append(str(err))
                        continue
                    queues[(q.topic, q.queue_id)] = q
        plan.queues = queues

    def _choose_start(self, plan: RecoveryPlan, choice: StartChoice) -> int:
        """Put ``choice`` (the plan's release's start) in the report; returns its file index."""
        rep = plan.report
        rep.rule, rep.start_reason, rep.dispatch_from = choice.rule, choice.reason, choice.dispatch_from
        rep.start_file = plan.files[choice.index].path.name
        self.log.extend(choice.log)
        return choice.index

    def start_choice(self, plan: RecoveryPlan, release: Release) -> StartChoice:
        """The commitlog file ``release``'s recovery scans from (Java
        ``CommitLog.recoverNormally`` / ``recoverAbnormally``), and where its re-dispatch
        starts.  Read-only and cheap (each file's first record at most), so that the
        plan can ask every release the store may come from."""
        files, abort, max_cq, cp, cfg = plan.files, self.abort, self.max_cq, self.cp, self.cfg
        fsize = cfg.mapped_file_size_commit_log
        index_safe = cfg.message_index_enable and cfg.message_index_safe
        if release.writer == "rocketmq-rust":
            return self._rust_start(plan, release)
        if not abort and release.normal_start == "third_to_last":
            legacy = release.name if release.name.startswith("4.") else "RocketMQ ≤ 5.3.1"
            return StartChoice(max(0, len(files) - 3), f"normal, last three files ({legacy})", "third-to-last file", max_cq)
        if not abort and release.normal_start == "queue_max_file":
            index = len(files) - 1
            while index > 0 and files[index].file_from_offset > max_cq:
                index -= 1
            return StartChoice(index, "normal, from the consume queues' max physical offset (RocketMQ 5.3.2–5.3.3)",
                               f"the file holding maxPhyOffsetOfConsumeQueue={max_cq}", max_cq)
        if not release.full_first_record:
            # ≤ 5.3 isMappedFileMatchedRecover: the first record's magic and storeTimestamp only
            if self.rocksdb is not None:
                def matches(buf) -> str | None:
                    if len(buf) < 8 + layout.PHYSICAL_OFFSET_AT or struct.unpack_from(">I", buf, 4)[0] not in cl.MESSAGE_MAGICS:
                        return None
                    phy = struct.unpack_from(">q", buf, layout.PHYSICAL_OFFSET_AT)[0]
                    return f"newest file whose first record's physicalOffset {phy} ≤ RocksDB's max physical offset {max_cq}" if phy <= max_cq else None

                rule, none = "abnormal, from RocksDB's max physical offset (enableRocksDBStore)", f"at or below RocksDB's max physical offset {max_cq}"
            else:
                min_ts = plan.report.min_timestamp

                def matches(buf) -> str | None:
                    ts = _first_record_stored_by(buf, min_ts)
                    return f"newest file whose first record was stored at {ts} ≤ minTimestamp {min_ts}" if ts else None

                rule, none = "abnormal, from the checkpoint's minTimestamp", f"stored at or before minTimestamp {min_ts}"
        else:
            stores = self._dispatch_stores(release)
            if stores.unread and stores.unread not in plan.report.not_modelled:
                plan.report.not_modelled.append(stores.unread)
            combined = self.copy is not None and release.combined_queue_store
            copy_test = self._copy_test(release) if combined else None
            matches, rule, none = self._matched_recover(release, abort, max_cq, cp, index_safe, stores, copy_test)
            if combined:
                rule += " and the RocksDB copy's (CombineConsumeQueueStore)"
                # CombineConsumeQueueStore.getDispatchFromPhyOffset: the lower of the two
                max_cq = min(max_cq, self.copy_max)
            if not abort and release.dispatch_from_all_stores:
                # DefaultMessageStore.recover: re-dispatch from the lowest progress of the
                # queue store and every registered CommitLogDispatchStore that has one (> 0)
                max_cq = min([max_cq] + [v for v in stores.last_offsets.values() if v > 0])
        cap = None
        if release.capped_walk:
            cap = cfg.commit_log_recover_max_num if cfg.commit_log_recover_max_num > 0 else COMMIT_LOG_RECOVER_MAX_NUM
        # the walk, newest file first: normal stops at file 0 without looking at it, abnormal
        # looks at file 0 too; a capped walk (5.4+) takes the cap-th file it looked at
        index, left, why, log = len(files) - 1, cap, None, []
        lowest = 1 if not abort else 0
        while index >= lowest:
            if left is not None:
                left -= 1
            why = matches(file_view(files[index], fsize))  # a short file reads as Java maps it
            if why or (left is not None and left <= 0):
                if abort:
                    log.append(f"recover from this mapped file {STORE}/{COMMITLOG_DIR}/{files[index].path.name}")
                break
            index -= 1
        if index < 0 or (not abort and index < lowest):
            index = 0
            reason = f"no file starts with a record {none}: first file"
        elif why:
            reason = why
        else:
            reason = f"commitLogRecoverMaxNum={cap}: no newer file starts with a record {none}; the walk stops at the last file it may look at ({cap} counting the newest)"
        choice = StartChoice(index, rule, reason, max_cq if not abort else -2, tuple(log))
        if cfg.extra_flag("enableAcceleratedRecovery", False):
            if abort and release.accelerated_abnormal:
                choice = self._accelerated(plan, release, choice)
            elif release.accelerated_rocksdb and self.rocksdb is not None:
                choice = self._accelerated_rocksdb(plan, release, choice, abort)
        return choice

    def _accelerated_rocksdb(self, plan: RecoveryPlan, release: Release, choice: StartChoice, abort: bool) -> StartChoice:
        """Java 5.4.0 ``CommitLog.recoverNormally`` / ``recoverAbnormally`` with
        ``enableRocksDBStore`` and ``enableAcceleratedRecovery``: the walk begins inside
        the start file at RocksDB's max physical offset (``dispatchFromPhyOffset``,
        ``maxPhyOffsetOfConsumeQueue``: the same value, ``RocksDBConsumeQueueStore.recover``).
        The normal one moves there only when it lies past the file's first byte, the
        abnormal one unless it lies before the file; either throws past the file's end
        (``ByteBuffer.position``: load() fails).  What lies before it is neither checked
        nor re-dispatched."""
        f = plan.files[choice.index]
        at = self.max_cq - f.file_from_offset
        which = "recoverAbnormally" if abort else "recoverNormally"
        if at < 0 or (at == 0 and not abort):
            return replace(choice, reason=choice.reason + f"; enableAcceleratedRecovery: RocksDB's max physical offset {self.max_cq} is not past the "
                                                          "file's first byte, so from its first byte")
        if at > self.cfg.mapped_file_size_commit_log:
            return replace(choice, load_error=(
                f"enableAcceleratedRecovery=true: RocksDB's max physical offset {self.max_cq} is {at} bytes into start file {f.path.name}, past its "
                f"{self.cfg.mapped_file_size_commit_log} bytes; RocketMQ {release.name}'s ByteBuffer.position throws (CommitLog.{which})"))
        return replace(choice, scan_at=self.max_cq,
                       reason=choice.reason + f"; enableAcceleratedRecovery: the walk begins {at} bytes into it, at RocksDB's max physical offset {self.max_cq}",
                       log=choice.log + (f"recover using acceleration, recovery offset is {self.max_cq}",))

    def _accelerated(self, plan: RecoveryPlan, release: Release, choice: StartChoice) -> StartChoice:
        """Java 5.5 ``CommitLog.recoverAbnormally`` with ``enableAcceleratedRecovery``: the
        walk begins inside the start file at dispatchFromPhyOffset (``DefaultMessageStore.recover``:
        the queue store's ``getDispatchFromPhyOffset(false)`` — the checkpoint's
        logicsPhysicalOffset, or RocksDB's max physical offset — lowered to each other
        CommitLogDispatchStore's above 0); a dispatchFromPhyOffset before the file falls
        back to its first byte.  What lies before it is neither checked nor re-dispatched.
        ``ConsumeQueueStore.getDispatchFromPhyOffset`` throws on a checkpoint with a
        physicMsgTimestamp but no logicsPhysicalOffset, and ``ByteBuffer.position`` on an
        offset past the file's end: load() fails."""
        cp, f = self.cp, plan.files[choice.index]
        if self.rocksdb is not None:
            base = self.max_cq  # RocksDBConsumeQueueStore.recover: getMaxPhyOffsetInConsumeQueue
        else:
            base = cp["logics_physical_offset"]
            if cp["physic_msg_timestamp"] > 0 and base <= 0:
                return replace(choice, load_error=(
                    f"enableAcceleratedRecovery=true and the checkpoint's logicsPhysicalOffset is {base}: RocketMQ {release.name} throws "
                    "\"Accelerated recovery is enabled but checkpoint's logicsPhysicalOffset is invalid\" (ConsumeQueueStore.getDispatchFromPhyOffset)"))
        lower = [v for v in self._dispatch_stores(release).last_offsets.values() if v > 0]
        if self.copy is not None and release.combined_queue_store:
            lower.append(self.copy_max)  # CombineConsumeQueueStore.getDispatchFromPhyOffset: the copy's too, 0 included
        dispatch_from = min([base] + lower)
        at = dispatch_from - f.file_from_offset
        if at < 0:
            return replace(choice, reason=choice.reason + f"; enableAcceleratedRecovery: dispatchFromPhyOffset {dispatch_from} is before the file, so from its first byte")
        if at > self.cfg.mapped_file_size_commit_log:
            return replace(choice, load_error=(
                f"enableAcceleratedRecovery=true: dispatchFromPhyOffset {dispatch_from} is {at} bytes into start file {f.path.name}, past its "
                f"{self.cfg.mapped_file_size_commit_log} bytes; RocketMQ {release.name}'s ByteBuffer.position throws (CommitLog.recoverAbnormally)"))
        return replace(choice, scan_at=dispatch_from,
                       reason=choice.reason + f"; enableAcceleratedRecovery: the walk begins {at} bytes into it, at dispatchFromPhyOffset {dispatch_from}",
                       log=choice.log + (f"recover using acceleration, recovery offset is {dispatch_from}",))

    def _rust_start(self, plan: RecoveryPlan, release: Release) -> StartChoice:
        """rocketmq-rust 1.0.0's start file (crates.io ``rocketmq-store``): normal recovery
        scans the last ``maxRecoveryCommitLogFiles`` files (``plan_normal_recovery_file_window``);
        abnormal recovery finds the newest file whose first record has a magic and a
        non-zero storeTimestamp at or before minTimestamp (``commit_log_recovery.rs
        find_checkpoint_recovery_start_index`` → ``header::probe_store_timestamp``), then
        starts that many files further back, or at the file holding the consume queues'
        max physical offset if that is earlier (``plan_abnormal_recovery_window_from_ranges``:
        the minimum of the three indexes; the confirm offset's file, the log's last without
        a controller, is never lower); no file matched, or the queues' offset outside the
        log: file 0."""
        files, max_cq = plan.files, self.max_cq
        if not self.abort:
            back = release.normal_last_files
            return StartChoice(max(0, len(files) - back), f"normal, the last {back} files (maxRecoveryCommitLogFiles; {release.title})",
                               f"{back} files before the newest", max_cq)
        fsize = self.cfg.mapped_file_size_commit_log
        min_ts = plan.report.min_timestamp
        matched = next((i for i in range(len(files) - 1, -1, -1) if _first_record_stored_by(file_view(files[i], fsize), min_ts)), None)
        rule = f"abnormal, {release.abnormal_files_back} files before the newest file whose first record was stored by minTimestamp ({release.title})"
        if matched is None:
            return StartChoice(0, rule, f"no file starts with a record stored at or before minTimestamp {min_ts}: first file", -2)
        lo, hi = files[0].file_from_offset, files[-1].file_from_offset + fsize
        if not lo <= max_cq <= hi:
            return StartChoice(0, rule, f"the consume queues' max physical offset {max_cq} is outside the log: first file", -2)
        dispatch = max(i for i, f in enumerate(files) if f.file_from_offset <= max_cq)
        back = max(0, matched - release.abnormal_files_back)
        index = min(back, dispatch)
        why = (f"file {files[matched].path.name} starts with a record stored at or before minTimestamp {min_ts}; "
               + (f"{release.abnormal_files_back} files before it" if index == back else f"the file holding the queues' max physical offset {max_cq} is earlier"))
        return StartChoice(index, rule, why, -2)

    def _copy_test(self, release: Release):
        """Java ``CombineConsumeQueueStore.isMappedFileMatchedRecover`` (5.4+,
        ``rocksdbCQDoubleWriteEnable``; the file queues assign offsets and are read, the
        defaults), its part after the file queues' test: the RocksDB copy's (the first
        record's physicalOffset at or below the copy's progress, ``RocksDBConsumeQueueStore``);
        a file the copy does not suit is taken anyway once ``combineCQMaxExtraSearchCommitLogFiles``
        such files were passed (each call counts one).  5.5 does not ask a copy that never
        ran (max physical offset ≤ 0).  Returns the test: phyOffset → what to add to the
        reason, or None (no match)."""
        copy_max = self.copy_max
        budget = [self.cfg.extra_int("combineCQMaxExtraSearchCommitLogFiles", 3)]
        if release.combine_skips_unstarted and copy_max <= 0:
            return lambda phy: "; the RocksDB copy never ran (max physical offset ≤ 0): not asked"

        def test(phy: int) -> str | None:
            if phy <= copy_max:
                return f", and ≤ the RocksDB copy's max physical offset {copy_max}"
            left = budget[0]
            budget[0] -= 1  # AtomicInteger.getAndDecrement
            if left <= 0:
                return (f"; the RocksDB copy's max physical offset {copy_max} is below it, but combineCQMaxExtraSearchCommitLogFiles files "
                        "were passed already (CombineConsumeQueueStore): the copy is left short")
            return None

        return test

    def _dispatch_stores(self, release: Release):
        """The RocksDB key and transaction stores ``release``'s start-up asks (cached per
        release: opening the RocksDB copies its small files)."""
        from ..store.rocksdb_message import dispatch_stores

        if release.name not in self._stores_by_release:
            self._stores_by_release[release.name] = dispatch_stores(self.root, self.cfg, release)
        return self._stores_by_release[release.name]

    def _matched_recover(self, release: Release, abort: bool, max_cq: int, cp: dict, index_safe: bool, stores=None, copy_test=None):
        """Java 5.4+ ``CommitLog.isMappedFileMatchedRecover(mappedFile, recoverNormally)``:
        the file's first record decoded whole (``checkMessageAndReturnSize``), a message
        with a storeTimestamp, then every registered store asked
        (``isMappedFileMatchedRecover(phyOffset, storeTimestamp, recoverNormally)``):
        the queue store, the index (``messageIndexSafe``: stored at or before
        indexMsgTimestamp), and the RocksDB key and transaction stores (``stores``: the
        record's physicalOffset at or below each one's ``lastOffsetPy``,
        ``IndexRocksDBStore`` / ``TransMessageRocksDBStore.isMappedFileMatchedRecover``).
        Returns (test, rule, what no file had)."""
        check_crc, force_prop = self.check_crc, self.force_prop
        if self.rocksdb is not None or not abort:
            # ConsumeQueueStore (normal) and RocksDBConsumeQueueStore (both): the record's
            # physicalOffset at or below the queues' max physical offset
            def queue_ok(phy: int, ts: int) -> bool:
                return phy <= max_cq

            whose = "RocksDB's" if self.rocksdb is not None else "the consume queues'"
            rule = f"{'normal' if not abort else 'abnormal'}, walking back to a whole first record at or below {whose} max physical offset ({release.name})"
            cond = f"its physicalOffset ≤ {whose} max physical offset {max_cq}"
        elif release.abnormal_by_logics_offset and cp["logics_physical_offset"] > 0:
            lp = cp["logics_physical_offset"]

            def queue_ok(phy: int, ts: int) -> bool:
                return phy <= lp

            rule, cond = f"abnormal, walking back to a whole first record at or below the checkpoint's logicsPhysicalOffset ({release.name})", f"its physicalOffset ≤ logicsPhysicalOffset {lp}"
        elif release.abnormal_by_logics_offset:
            # ConsumeQueueStore.isMappedFileMatchedRecover "for the sake of compatibility":
            # a checkpoint without logicsPhysicalOffset, compared by logicsMsgTimestamp, no slack
            lt = cp["logics_msg_timestamp"]

            def queue_ok(phy: int, ts: int) -> bool:
                return ts <= lt

            rule, cond = f"abnormal, walking back to a whole first record stored by the checkpoint's logicsMsgTimestamp ({release.name}; no logicsPhysicalOffset)", f"stored at or before logicsMsgTimestamp {lt}"
        else:
            min_ts = cp_min_timestamp(cp["physic_msg_timestamp"], cp["logics_msg_timestamp"])

            def queue_ok(phy: int, ts: int) -> bool:  # ConsumeQueueStore.dispatchFromStoreTimestamp = getMinTimestamp()
                return ts <= min_ts

            rule, cond = f"abnormal, walking back to a whole first record stored by the checkpoint's minTimestamp ({release.name})", f"stored at or before minTimestamp {min_ts}"
        index_ts = cp["index_msg_timestamp"]
        if index_safe:
            cond += f", and stored at or before indexMsgTimestamp {index_ts} (messageIndexSafe)"
        last_offsets = dict(stores.last_offsets) if stores is not None else {}
        for name, last in last_offsets.items():
            cond += f", and ≤ {name}'s lastOffsetPy {last} ({stores.reasons[name]})"

        def matches(buf) -> str | None:
            c = check_record(buf, 0, check_crc=check_crc, force_verify_prop_crc=force_prop)
            if not c.ok or c.size <= 0:
                return None
            ts = store_timestamp_at(buf, 0)
            if not ts:
                return None
            phy = struct.unpack_from(">q", buf, layout.PHYSICAL_OFFSET_AT)[0]
            if index_safe and ts > index_ts:
                return None
            if not queue_ok(phy, ts):
                return None
            copy_why = copy_test(phy) if copy_test is not None else ""  # the same store's test in Java: before the others
            if copy_why is None or any(phy > last for last in last_offsets.values()):
                return None
            return f"newest file whose first record is whole (physicalOffset {phy}, stored at {ts}), {cond}{copy_why}"

        return matches, rule, f"that is whole, {cond}"

    def _scan(self, plan: RecoveryPlan, index: int, abort: bool) -> None:
        """Java's walk from the start file with ``checkMessageAndReturnSize``: a BLANK
        moves to the next file, the first failure is the new end of the log.  The
        consume queues' offsets are hints that let whole runs be verified at once.
        ``plan.scan_at``: where in the start file the walk begins (enableAcceleratedRecovery).
        Abnormal, with ``checkCommitLogOffsetOnRecover`` (5.5+), a record whose
        physicalOffset lies outside its file ends the walk too.  Under
        ``Release.invalid_record_skips_file`` (rocketmq-rust) a failure ends only its
        file's walk (``rep.skipped``) and the log ends after the last record accepted."""
        rep, log, files, queues = plan.report, self.log, plan.files, plan.queues
        fsize = self.cfg.mapped_file_size_commit_log
        start_at = plan.scan_at - files[index].file_from_offset if plan.scan_at >= 0 else 0
        check_offsets = abort and self.release.commit_log_offset_check and self.cfg.extra_flag("checkCommitLogOffsetOnRecover", False)
        t1 = time.perf_counter()
        # every unit pointing into the scanned files (those before are not dispatched again)
        hint_parts = [q.offsets_from(files[index].file_from_offset + start_at) for q in queues.values()]
        owners = [np.full(len(p), i, np.int32) for i, p in enumerate(hint_parts)]
        hints = np.concatenate(hint_parts) if hint_parts else np.zeros(0, np.int64)
        order = np.argsort(hints, kind="stable")
        hints = hints[order]
        plan.hints = hints
        # which queue each hint is an entry of (index into plan.queues.values())
        plan.hint_owner = np.concatenate(owners)[order] if owners else np.zeros(0, np.int32)
        scans: list[tuple[int, FileScan]] = []
        process = files[index].file_from_offset
        skip_invalid, last_end = self.release.invalid_record_skips_file, None
        i = index
        while True:
            f = files[i]
            buf = file_view(f, fsize)
            rep.files_scanned.append(f.path.name)
            _will_need(f.path)
            at = start_at if i == index else 0
            s = scan_file(buf[at:], check_crc=self.check_crc, force_verify_prop_crc=self.force_prop, hints=_hints(hints, f.file_from_offset + at, len(buf) - at))
            if at:
                s = shift_scan(s, at)
            if check_offsets:
                s = _offsets_in_file(s, buf, f.file_from_offset, fsize)
            scans.append((i, s))
            rep.records_scanned += len(s.starts)
            if self.check_crc:
                rep.records_checked_crc += len(s.starts)
            if s.blank:
                if len(s.starts):
                    last_end = f.file_from_offset + s.end
                i += 1
                if i >= len(files):
                    process = f.file_from_offset + s.end
                    log.append(
                        ("recover physics file over, last mapped file " if abort else "recover last 3 physics file over, last mapped file ")
                        + f"{STORE}/{COMMITLOG_DIR}/{f.path.name}"
                    )
                    break
                log.append(f"recover next physics file, {STORE}/{COMMITLOG_DIR}/{files[i].path.name}")
                continue
            c = s.stop
            if skip_invalid and i + 1 < len(files):
                # rocketmq-rust: the file's walk ends here, the log's goes on with the next file
                if len(s.starts):
                    last_end = f.file_from_offset + s.end
                if c is not None and nonzero_extent(f.path, s.end) is not None:
                    rep.skipped.append(StopPoint(c.kind or "", str(f.path), s.end, f.file_from_offset + s.end,
                                                 c.message + f"; {self.release.title} goes on with the next file", False))
                i += 1
                continue
            process = f.file_from_offset + s.end
            if skip_invalid and not len(s.starts) and last_end is not None:
                process = last_end  # the end of the last record accepted, in an earlier file
            zero_tail = False
            if c is not None:
                ext = nonzero_extent(f.path, s.end)
                zero_tail = c.kind == "BAD_MAGIC" and ext is None
                if c.java_log:
                    log.append(c.java_log.replace("{offset}", str(process)).replace("{file}", f"{STORE}/{COMMITLOG_DIR}/{f.path.name}"))
                rep.stop = StopPoint(c.kind or "", str(f.path), s.end, process, c.message, zero_tail)
                if ext is not None:  # zeros amid data after the stop: name them (a zeroed page)
                    rep.stop.zeroed = [list(z) for z in zero_runs(f.buf, s.end, ext[1])]
            log.append(f"recover physics file end, {STORE}/{COMMITLOG_DIR}/{f.path.name}" + (f" pos={c.java_pos if c else s.end}" if abort else ""))
            break
        rep.commitlog_end = process
        rep.timings["scan_s"] = time.perf_counter() - t1

        positions = np.concatenate([files[fi].file_from_offset + s.starts for fi, s in scans]) if scans else np.zeros(0, np.int64)
        sizes = np.concatenate([s.sizes for _, s in scans]) if scans else np.zeros(0, np.int64)
        plan.scans, plan.positions, plan.sizes, plan.process, plan.start_index = scans, positions, sizes, process, index


def _first_record_stored_by(buf, min_ts: int) -> int | None:
    """The storeTimestamp of a commitlog file's first record when it has a message magic
    and 0 < storeTimestamp ≤ ``min_ts``, else None: the start-file test of abnormal
    recovery up to 5.3 (Java ``CommitLog.isMappedFileMatchedRecover``) and of
    rocketmq-rust (``header::probe_store_timestamp``)."""
    if len(buf) < 8 or struct.unpack_from(">I", buf, 4)[0] not in cl.MESSAGE_MAGICS:
        return None
    ts = store_timestamp_at(buf, 0)
    return ts if ts and ts <= min_ts else None


def _index_safe_offset(kept_index: list, persisted: int, removed: bool) -> int:
    """rocketmq-rust's index safe offset at load (``service.rs restore_index_safe_offset``):
    the endPhyOffset of the newest kept index file with entries (0 without one) where an
    unsafe file was dropped or either is 0, else the smaller of it and the checkpoint's
    (byte 40, its indexSafePhyOffset); -1 where the checkpoint says an earlier build failed."""
    if persisted == -1:
        return -1
    loaded = next((max(0, m["end_phy_offset"]) for _, m in reversed(kept_index) if m["index_count"] > 1), 0)
    return loaded if removed or not loaded or not persisted else min(persisted, loaded)


def _index_stops_at(plan: RecoveryPlan) -> int | None:
    """Where rocketmq-rust's re-dispatch stops indexing (Release.index_rebuild_contiguous,
    ``IndexService.build_index_admitted``): from its safe offset on, each record the walk
    hands on must start where the last one taken ended; the first that does not (the
    record after a file-end blank, which recovery does not dispatch) ends the build."""
    at = plan.index_safe_at_load
    if at < 0:
        return -1
    pos, size = plan.positions, plan.sizes
    for i in np.flatnonzero(pos + size > at).tolist():
        if int(pos[i]) != at:
            return int(pos[i])
        at = int(pos[i] + size[i])
    return None


def _will_need(path: Path) -> None:
    """Ask the kernel to read the file's data in ahead of the scan (``POSIX_FADV_WILLNEED``):
    faults on a memory map read small pieces synchronously; this turns a cold scan into
    one large sequential read that overlaps with the checking."""
    if not hasattr(os, "posix_fadvise"):
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        size = os.fstat(fd).st_size
        for a, b in data_regions(fd, 0, size):
            os.posix_fadvise(fd, a, b - a, os.POSIX_FADV_WILLNEED)
    except OSError:
        pass
    finally:
        os.close(fd)


def _offsets_in_file(s: FileScan, buf, file_from: int, fsize: int) -> FileScan:
    """Java 5.5 ``recoverAbnormally`` with ``checkCommitLogOffsetOnRecover``: the first
    kept record whose physicalOffset field is below the file's fromOffset or above
    fromOffset + fileSize ends the walk there, as a failed check does ("found illegal
    commitlog offset ..., it will be truncated")."""
    if not len(s.starts):
        return s
    a = np.frombuffer(buf, dtype=np.uint8)
    cols = s.starts[:, None] + np.arange(layout.PHYSICAL_OFFSET_AT, layout.PHYSICAL_OFFSET_AT + 8)
    phy = np.ascontiguousarray(a[cols]).view(">i8").reshape(-1)
    bad = np.flatnonzero((phy < file_from) | (phy > file_from + fsize))
    if not len(bad):
        return s
    k = int(bad[0])
    pos = int(s.starts[k])
    why = Check(False, -1, ILLEGAL_OFFSET, f"its physicalOffset {int(phy[k])} lies outside the file [{file_from}, {file_from + fsize}] (checkCommitLogOffsetOnRecover)",
                f"found illegal commitlog offset {int(phy[k])} in {{file}}, current pos={{offset}}, it will be truncated.", pos)
    sched = s.schedule_idx[s.schedule_idx < k] if s.schedule_idx is not None else None
    return FileScan(s.starts[:k], s.sizes[:k], pos, False, why, sched)


def _hints(hints: np.ndarray, base: int, n: int) -> np.ndarray:
    lo, hi = np.searchsorted(hints, [base, base + n])
    return hints[lo:hi] - base


def _plan_reindex(plan: RecoveryPlan, cfg: MessageStoreConfig) -> None:
    """Every index file goes (saved to the sidecar when applied in place), and every
    record of the log is handed to dispatch: those the scan accepted, and those of the
    files before the start file, walked with the same acceptance rule (Java trusts
    them and does not look; a damaged older file ends its part of the rebuild there,
    which the report notes)."""
    rep = plan.report
    dropped = set(plan.dropped_index)
    for p in plan.index_files:
        if p not in dropped:
            plan.dropped_index.append(p)
            rep.index.append(IndexChange(p.name, "dropped"))
    plan.index_end_phy = -1
    plan.reindex = True
    fsize = cfg.mapped_file_size_commit_log
    parts = []
    for f in plan.files[: plan.start_index]:
        s = scan_file(file_view(f, fsize), check_crc=False)
        parts.append(f.file_from_offset + s.starts)
        if not s.blank:
            rep.notes.append(f"reindex: {f.path.name}, before the start file, ends its records at {s.end} ({s.stop.kind if s.stop else 'end'}): the records after it are not re-indexed")
    plan.reindex_positions = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    rep.notes.append(
        f"reindex: every index file is rebuilt from the {len(plan.reindex_positions) + len(plan.positions)} records of the log "
        "(beyond RocketMQ, which rebuilds only what it re-dispatches)"
    )


class _Sidecar:
    """Saves every byte before it is cut: ``<dir>/<relative path>@<offset>`` + manifest.json."""

    def __init__(self, root: Path, directory: Path | None):
        self.root = root
        self.dir = directory
        self.entries: list[dict] = []

    def _rel(self, path: Path) -> Path:
        """Where a file is in the store: relative to its root, or, for a directory of the
        log outside it (storePathCommitLog), its absolute path under ``outside-root/``."""
        try:
            return path.relative_to(self.root)
        except ValueError:
            return Path("outside-root", *path.resolve().parts[1:])

    def save(self, path: Path, offset: int, length: int, why: str) -> str | None:
        if self.dir is None or length <= 0:
            return None
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read(length)
        rel = self._rel(path)
        dest = self.dir / f"{rel}@{offset}"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        self.entries.append({"file": str(rel), "offset": offset, "length": len(data), "sha256": hashlib.sha256(data).hexdigest(), "saved_as": str(dest.relative_to(self.dir)), "why": why})
        return str(dest)

    def save_file(self, path: Path, why: str) -> str | None:
        if self.dir is None:
            return None
        size = path.stat().st_size
        ext = nonzero_extent(path, 0)
        if ext is None:
            rel = self._rel(path)
            self.entries.append({"file": str(rel), "offset": 0, "length": 0, "file_size": size, "sha256": None, "saved_as": None, "why": why + " (all zeros: nothing to save)"})
            return None
        return self.save(path, 0, ext[1], why + f" (file was {size} bytes; saved up to its last non-zero byte)")

    def note(self, what: str, value) -> None:
        if self.dir is not None:
            self.entries.append({"note": what, "value": value})

    def finish(self) -> None:
        if self.dir is not None:
            self.dir.mkdir(parents=True, exist_ok=True)
            (self.dir / "manifest.json").write_text(json.dumps({"store": str(self.root), "cuts": self.entries}, indent=2))


def _apply(rep: RecoveryReport, plan: RecoveryPlan, target: Path, cfg: MessageStoreConfig, sidecar: _Sidecar, *, clock, zero_tail: bool, mark_clean: bool) -> None:
    from ..writers.dispatch import CommitLogDispatcher

    t = _in_target(plan, target)

    # 1. what RocketMQ's load deletes: an empty last commitlog file
    for p in plan.empty_last:
        q = t(p)
        if q.exists():
            q.unlink()
    # 2. index files newer than the checkpoint (abnormal)
    for p in plan.dropped_index:
        q = t(p)
        sidecar.save_file(q, "index file newer than checkpoint indexMsgTimestamp (abnormal recovery deletes it)")
        q.unlink()
    # 3. consume-queue files past the first invalid entry, ext files past the last entry's unit
    for q in plan.queues.values():
        for p in q.deleted:
            tp = t(p)
            sidecar.save_file(tp, "consume-queue file past the first invalid entry")
            tp.unlink()
        for p in q.ext_deleted:
            tp = t(p)
            sidecar.save_file(tp, "ext file past the unit of the queue's last valid entry (ConsumeQueueExt.truncateByMaxAddress)")
            tp.unlink()
    for p in plan.compaction_deleted:
        tp = t(p)
        sidecar.save_file(tp, "compaction log file past its queue's last unit (CompactionLog's load deletes it)")
        tp.unlink()
    # 4. consume-queue entries that truncation will cut (saved before the dispatcher runs)
    if plan.truncate_cq:
        for q in plan.queues.values():
            ranges = truncate_queue_plan(q, plan.process).ranges
            for p, off, length in ranges:
                sidecar.save(t(p), off, length, f"consume-queue entries pointing at or past the new end of the log {plan.process}")
    if plan.wipe_queues:  # ConsumeQueueStore.destroy: both kinds
        for d in (target / CONSUMEQUEUE_DIR, target / BATCH_CONSUMEQUEUE_DIR) + ((target / CONSUMEQUEUE_EXT_DIR,) if plan.consume_queue_ext else ()):
            if d.is_dir():
                for p in sorted(d.rglob("*")):
                    if p.is_file():
                        sidecar.save_file(p, "consume queue of a store without commitlog files")
                shutil.rmtree(d)
    # 5. commitlog bytes past the new end (saved now; RocketMQ leaves the tail in place)
    for c in rep.cut:
        p = t(Path(c.file))
        if c.what == "tail":
            c.sidecar = sidecar.save(p, c.file_offset, c.length, f"commitlog bytes after the new end of the log {rep.commitlog_end}")
    for f in plan.delete_commitlog:
        p = t(f.path)
        saved = sidecar.save_file(p, "commitlog file after the new end of the log")
        for c in rep.cut:
            if c.file == str(f.path):
                c.sidecar = saved
    # close our read mappings of the original before files change under them; the
    # records are read back from the target's own log (the same bytes before the end)
    log_dirs = sorted({t(f.path).parent for f in plan.files})
    log_min = plan.files[0].file_from_offset if plan.files else 0
    plan.close()
    # 6. re-dispatch, then cut the queues (Java order: dispatch during the scan, truncate after)
    before_files = {p.name for p in (target / INDEX_DIR).iterdir()} if (target / INDEX_DIR).is_dir() else set()
    records = plan.dispatch_records
    cut_any = any(q.cut_entries for q in rep.queues)
    logics_ts = logics_offset = 0
    index_end_ts = None
    # (rocksdb_changes: truncation, then the re-dispatch; a copy is truncated with the
    # file queues by CombineConsumeQueueStore.truncateDirty, 5.4+)
    rocksdb = copy = None
    if plan.rocksdb_dir is not None and (len(records) or plan.truncate_cq):
        rocksdb = _queue_rocksdb_writer(plan, target, plan.rocksdb_dir, sidecar, "the consume queues", plan.truncate_cq, log_min)
    if plan.rocksdb_copy_dir is not None and (len(records) or plan.truncate_cq or plan.copy_reinit):
        copy = _queue_rocksdb_writer(plan, target, plan.rocksdb_copy_dir, sidecar, "the queues' copy",
                                     plan.truncate_cq and release_named(rep.release).combined_queue_store, log_min)
    message_rocksdb = props_log = None
    if plan.message_rocksdb and len(records):
        message_rocksdb, props_log = _open_message_rocksdb(plan, target, log_dirs, cfg, sidecar)
    if len(records) or cut_any or rocksdb is not None or copy is not None:
        d = CommitLogDispatcher(target, cfg, clock=clock, batch_topics=plan.batch_topics, multi_dispatch=plan.multi_dispatch, enable_lmq=plan.enable_lmq,
                                consume_queue_ext=plan.consume_queue_ext, release=rep.release, index_before=rep.index_stops_at, rocksdb_queues=rocksdb,
                                message_rocksdb=message_rocksdb, write_index_files=plan.index_files_written, rocksdb_copy=copy)
        t_dispatch = time.perf_counter()
        if len(records):
            log = MappedFileQueue(log_dirs, cfg.mapped_file_size_commit_log, strict=False)
            try:
                for chunk in records.over(log.files, cfg.mapped_file_size_commit_log):  # a chunk at a time: bounded memory
                    if isinstance(chunk, list):
                        d.dispatch_batch(chunk)
                    else:
                        d.dispatch_columns(chunk)
            finally:
                records.over([], 0)
                log.close()
        rep.timings["dispatch_s"] = time.perf_counter() - t_dispatch
        if plan.truncate_cq and cut_any and rocksdb is None:  # (with nothing at or past the end it is a no-op)
            d.truncate_dirty(plan.process, zero_tail=True)
        if release_named(rep.release).empty_queue_resets_max and rocksdb is None:
            d.correct_min_offsets()
        d.flush()
        rep.max_phy_offset_in_cq_after = d.max_physic_offset
        if rocksdb is not None:
            rocksdb.close()
        if message_rocksdb is not None:
            message_rocksdb.close()
            props_log.close()
        if copy is not None:
            # CombineConsumeQueueStore.start → verifyAndInitOffsetForAllStore (5.4+)
            for queue, offset in plan.copy_reinit.items():
                topic, _, qid = queue.rpartition("/")
                copy.initialize_with_offset(topic, int(qid), offset, log_min)
            copy.close()
        logics_ts, logics_offset = d.logics_msg_timestamp, d.logics_physical_offset
        index_last = d.index.last
        index_end_ts = index_last.end_timestamp if index_last is not None and hasattr(index_last, "end_timestamp") else None
        d.close()
    else:
        # nothing to add and nothing to cut: the queues stay exactly as recovered
        rep.max_phy_offset_in_cq_after = max((q.max_physic_offset for q in plan.queues.values()), default=-1)
    after_files = sorted(p.name for p in (target / INDEX_DIR).iterdir()) if (target / INDEX_DIR).is_dir() else []
    for name in after_files:
        if name not in before_files:
            rep.index.append(IndexChange(name, "created"))
    # 7. commitlog: later files deleted; the tail stays (RocketMQ) unless zero_tail
    for f in plan.delete_commitlog:
        p = t(f.path)
        if p.exists():
            p.unlink()
    if zero_tail:
        rep.tail_zeroed = True
        for c in rep.cut:
            if c.what == "tail":
                with open(t(Path(c.file)), "r+b") as fh:
                    fh.seek(c.file_offset)
                    fh.write(bytes(c.length))
    # 8. leave it as a clean shutdown does: checkpoint written, abort removed
    if mark_clean:
        cp_path = target / CHECKPOINT_FILE
        sidecar.note("checkpoint before", rep.checkpoint)
        last_ts = _last_store_timestamp(plan, cfg.mapped_file_size_commit_log)
        cp = dict(rep.checkpoint)
        if last_ts:
            cp["physic_msg_timestamp"] = last_ts
        if logics_ts:
            cp["logics_msg_timestamp"] = max(logics_ts, cp["logics_msg_timestamp"]) if rep.mode == "normal" else logics_ts
            if release_named(rep.release).checkpoint_longs >= 6 and release_named(rep.release).writer == "apache":
                # 5.5's first consume-queue flush after start copies what re-dispatch
                # last put (StoreCheckpoint.tmpLogicsPhysicalOffset) into the checkpoint
                cp["logics_physical_offset"] = logics_offset
        if index_end_ts:
            cp["index_msg_timestamp"] = index_end_ts
        else:
            cp["index_msg_timestamp"] = _index_end_timestamp(target / INDEX_DIR) or cp["index_msg_timestamp"]
        body = CheckpointV5.build(cp)
        old = cp_path.read_bytes() if cp_path.exists() else b""
        data = body + (old[len(body) : 4096] if len(old) >= 4096 else bytes(4096 - len(body)))
        cp_path.write_bytes(data[:4096])
        ab = target / ABORT_FILE
        if ab.exists():
            sidecar.note("abort file content", ab.read_bytes().decode("utf-8", "replace"))
            ab.unlink()


def _queue_rocksdb_writer(plan: RecoveryPlan, target: Path, directory: Path, sidecar: "_Sidecar", what: str, truncate: bool, log_min: int):
    """A RocksDB of consume queues (or their copy) in ``target``, its files saved in the
    sidecar first (in place), opened for writing and, with ``truncate``, truncated at
    the new end of the log (``truncateDirty``)."""
    from ..writers.rocksdb_consume_queue_writer import RocksDBConsumeQueueWriter

    d = target / directory.relative_to(plan.root)
    _save_rocksdb(sidecar, d, what)
    w = RocksDBConsumeQueueWriter(d)
    if truncate:
        w.truncate_dirty(plan.process, log_min)
    return w


def _open_message_rocksdb(plan: RecoveryPlan, target: Path, log_dirs: list, cfg: MessageStoreConfig, sidecar: "_Sidecar"):
    """``rocksdbstore/`` of ``target`` opened for the writers re-dispatch feeds, its files
    saved in the sidecar first (in place), and the target's log it reads the half and op
    messages' properties from (the caller closes both)."""
    from ..rules import MESSAGE_ROCKSDB_DIR
    from ..writers.message_rocksdb_writer import MessageRocksDBWriter

    d = target / MESSAGE_ROCKSDB_DIR
    _save_rocksdb(sidecar, d, "keys and transactions (IndexRocksDBStore, TransMessageRocksDBStore)")
    log = MappedFileQueue(log_dirs, cfg.mapped_file_size_commit_log, strict=False)

    def read_properties(offset: int) -> dict:
        f = log.find(offset)
        rec = decode_record(file_view(f, cfg.mapped_file_size_commit_log), offset - f.file_from_offset, check_crc=False) if f is not None else None
        return rec.properties if rec is not None and not rec.is_blank else {}

    try:
        w = MessageRocksDBWriter(d, index=bool(plan.message_rocksdb.get("index")), trans=bool(plan.message_rocksdb.get("trans")), read_properties=read_properties)
    except BaseException:
        log.close()
        raise
    return w, log


def _index_end_timestamp(d: Path) -> int | None:
    if not d.is_dir():
        return None
    files = sorted(p for p in d.iterdir() if p.is_file() and p.name.isdigit())
    if not files:
        return None
    with open(files[-1], "rb") as fh:
        head = fh.read(IndexHeader.sizeof())
    if len(head) < IndexHeader.sizeof():  # cut short or empty: Java maps it as zeros
        return None
    return int(IndexHeader.parse(head).end_timestamp)


def _last_store_timestamp(plan: RecoveryPlan, fsize: int) -> int:
    pos = plan.positions
    if not len(pos):
        return 0
    files = plan.files
    phy = int(pos[-1])
    for f in reversed(files):
        if f.file_from_offset <= phy:
            rec = decode_record(file_view(f, fsize), phy - f.file_from_offset, check_crc=False, read_body=False)
            return rec.store_timestamp if rec is not None else 0
    return 0


# -- the entry points -----------------------------------------------------------------------------------
def plan(
    store: str | os.PathLike,
    *,
    config: MessageStoreConfig | None = None,
    legacy_three_files: bool | None = None,
    check_crc: bool | None = None,
    force_verify_prop_crc: bool = False,
    reindex: bool = False,
    rocketmq_version: str | None = None,
    log_only: bool = False,
    outcome_only: bool = False,
) -> RecoveryPlan:
    """Decide, read-only, what RocketMQ 5.3's start-up recovery does to the store at
    ``store``: one scan of the log, the consume queues and the index, and a read-only
    simulation of re-dispatch and truncation.  ``plan(...).report`` is the dry run's
    report; :func:`apply` carries the plan out.

    ``rocketmq_version`` names the release whose rules to follow (``"5.5.0"``, ``"5.4"``,
    ``"4.9.7"``: :mod:`rmqlab.releases`); None (the default) reads it from the store
    (:func:`rmqlab.store.release.tell_release`).  When the store leaves several releases
    open and they would start or end its recovery differently, the report lists each
    one's outcome (``release_outcomes``) and :func:`apply` refuses until one is named.
    ``legacy_three_files`` starts normal recovery at the third-to-last file, as 5.x up
    to 5.3.1 did; ``check_crc`` overrides ``checkCRCOnRecover``.

    ``reindex`` goes beyond RocketMQ: every index file is dropped and rebuilt from every
    record of the log (those before the start file too), so that no key a crash left
    unindexed stays unfindable (apache/rocketmq#8007).  Queues are as RocketMQ leaves
    them: records already in their queue are skipped there as Java's dispatch skips them.

    ``log_only`` stops once the end of the log is decided (the start file, the walk and
    its stop: ``report.commitlog_end``, ``report.stop``), before re-dispatch and what it
    changes are worked out: :func:`rmqlab.recovery.next_start.log_end` asks that much.
    ``outcome_only`` goes on to what the cut costs and why (``lost_records``,
    ``missing_files``, ``cause``) and stops there (``report.scope`` says so): what verify
    judges its findings against, without re-dispatch's simulation.

    >>> from rmqlab.lab.samples import shipped_dir
    >>> p = plan(shipped_dir() / "damaged")
    >>> p.report.commitlog_end, p.report.cause.kind, len(p.report.lost_records)
    (263650, 'BODY_CRC', 52)
    >>> p.close()
    """
    root = Path(store)
    if not root.is_dir():
        raise StoreLayoutError(root, None, "store root is not a directory")
    t0 = time.perf_counter()
    cfg = infer_config(root, config)
    lay = recognise(root, cfg)
    unplanned = lay.log_elsewhere or lay.recovery_unmodelled
    rocksdb = copy = copy_problem = None
    if not unplanned and lay.rocksdb_queues:
        # RocksDBMessageStore: the plan reads RocksDB's progress; applying writes what
        # RocketMQ's start-up writes there (rmqlab.writers.rocksdb_consume_queue_writer)
        rocksdb, unplanned = _open_queue_rocksdb(lay, "the consume queues' RocksDB")
    elif not unplanned and lay.rocksdb_double_write:
        # the RocksDB copy beside file queues: read for the start (5.4+) and what start-up
        # does to it; applying writes the same into it
        copy, copy_problem = _open_queue_rocksdb(lay, "the RocksDB copy of the queues (rocksdbCQDoubleWriteEnable)")
    if unplanned:
        # the classic recovery's decisions would be wrong here (e.g. delete every queue of
        # a DLedger store, whose log is not in commitlog/): no plan is made
        rep = RecoveryReport(str(root), "dry-run", None, NOT_MODELLED, unplanned)
        rep.not_modelled = [f"{p.path}: {p.kind} — {p.recovery}" for p in lay.refusals()] or [unplanned]
        return RecoveryPlan(root, cfg, rep)
    # whose rules: the release the user names, else what the store's bytes say
    # (rmqlab.store.release); left open, the plan follows the oldest 5.x candidate and
    # asks the others where they would start
    reading = tell_release(root, cfg, told=rocketmq_version)
    releases = [release_named(c) for c in reading.candidates]
    if legacy_three_files:
        releases = [r.with_legacy_start() for r in releases]
    planner = _Planner(root, cfg, release=releases[0], check_crc=check_crc, force_verify_prop_crc=force_verify_prop_crc, rocksdb=rocksdb, rocksdb_copy=copy)
    try:
        p = planner.plan()
        rep = p.report
        rep.release_reading = reading.to_dict()
        if copy_problem:
            rep.not_modelled.append(copy_problem)
    except BaseException:
        for db in (rocksdb, copy):
            if db is not None:
                db.close()
        raise
    if log_only or outcome_only:
        for db in (rocksdb, copy):
            if db is not None:
                db.close()
        if outcome_only and p.files:
            rep.scope = "outcome"
            what_the_cut_costs(rep, p, cfg, mode_said=config is not None)
            if rocksdb is None:  # RocksDB's queues have no directory per topic
                dispatch_stop(rep, p, cfg)
        return p
    if reindex and cfg.message_index_enable and p.files:
        _plan_reindex(p, cfg)
    from ..rules import parse_delay_levels

    t1 = time.perf_counter()
    p.multi_dispatch, p.enable_lmq = multi_dispatch_settings(cfg, lay, rep)
    if rocksdb is not None and p.enable_lmq:
        rep.not_modelled.append("enableLmq with RocksDB's consume queues: the LMQ units re-dispatch puts there "
                                "(RocksDBConsumeQueueStore.dispatchLMQ) are not modelled")
    plan_compaction(p, cfg)
    p.consume_queue_ext = ext_setting(cfg, root, rep)
    if p.consume_queue_ext:
        from ..writers.dispatch import ext_file_size

        plan_ext(p, ext_file_size(cfg, root / CONSUMEQUEUE_EXT_DIR))
    if planner.release.index_rebuild_contiguous and cfg.message_index_enable and p.files and not p.reindex:
        rep.index_stops_at = _index_stops_at(p)
        if rep.index_stops_at is not None:
            rep.notes.append(
                f"{planner.release.title} indexes again only up to {rep.index_stops_at}: each record must start where the last one it indexed "
                "ended, and the walk hands on no file-end blank (IndexService.build_index_admitted): its index build stops there for good "
                "and its checkpoint's index-safe offset becomes -1")
    _plan_message_rocksdb(p, planner._dispatch_stores(planner.release), cfg)
    if copy is not None:
        p.rocksdb_copy_dir = Path(lay.rocksdb_dir)
    p.dispatch_records = records_to_dispatch(rep, p, cfg).over(p.files, cfg.mapped_file_size_commit_log) if p.files else ()
    rep.records_redispatched = len(p.dispatch_records)
    rep.log_lines = planner.log
    # mkdir lines and per-queue changes (read-only simulation of dispatch + truncation)
    if rocksdb is not None:
        p.rocksdb_dir = Path(lay.rocksdb_dir)
        try:
            rocksdb_queue_changes(rep, p, rocksdb)
        finally:
            rocksdb.close()
    else:
        simulate_queues(rep, p, p.dispatch_records, parse_delay_levels(cfg.message_delay_level))
    if copy is not None:
        try:
            _plan_copy(rep, p, copy, cfg, planner.release)
        finally:
            copy.close()
    _start_waits_forever(rep, p, planner.release)
    what_the_cut_costs(rep, p, cfg, mode_said=config is not None)
    unfindable_keys(rep, p, cfg)
    queues_left_short(rep, p, cfg)
    group_losses(rep, root)
    timers_cut(rep, root, cfg)
    rep.timings["dispatch_plan_s"] = time.perf_counter() - t1
    if not rep.load_ok:
        rep.notes.append("RocketMQ's load() returns false for this store and the broker does not start; rmqlab reads short files as zero-padded")
    if config is None and p.index_files_written:
        p.index_size_unknown = _index_size_unknown(p.index_files, cfg, rep)
        if p.index_size_unknown:
            rep.notes.append(p.index_size_unknown)
    rep.log_lines.append(f"message store recover end, and the max phy offset = {rep.commitlog_end}")
    rep.not_modelled = [f"{p.path}: {p.kind} — {p.recovery}" for p in lay.refusals()] + rep.not_modelled
    if p.files and len(releases) > 1:
        _other_releases(p, planner, releases[1:], root, config, legacy_three_files=legacy_three_files, check_crc=check_crc,
                        force_verify_prop_crc=force_verify_prop_crc, reindex=reindex)
    rep.timings["total_s"] = time.perf_counter() - t0
    return p


def _open_queue_rocksdb(lay, what: str):
    """The store's RocksDB of consume queues (or their copy), read-only, and why not:
    ``(store, None)`` or ``(None, reason)``."""
    from ..files.rocksdb import RocksDBUnavailable
    from ..store.rocksdb_queue import RocksDBConsumeQueueStore

    try:
        return RocksDBConsumeQueueStore(Path(lay.rocksdb_dir)), None
    except RocksDBUnavailable as err:
        return None, f"{what} cannot be read here: {err.message}"
    except StoreLayoutError as err:
        return None, f"{what} cannot be opened: {err}"


def _save_rocksdb(sidecar: "_Sidecar", directory: Path, what: str) -> None:
    """Every file of a RocksDB about to be written, into the sidecar (in place: RocksDB
    rewrites its manifest and may compact table files away)."""
    for p in sorted(directory.iterdir()) if directory.is_dir() else []:
        if p.is_file() and p.name != "LOCK":
            sidecar.save_file(p, f"RocksDB file of {what} before the writes of RocketMQ's start-up")


def _plan_copy(rep: RecoveryReport, p: RecoveryPlan, copy, cfg: MessageStoreConfig, release: Release) -> None:
    """The RocksDB copy beside file queues (``rocksdbCQDoubleWriteEnable``): what start-up
    does to it (:func:`rocksdb_copy_changes`), with the settings that change it named
    rather than guessed: a copy of some topics only (5.5's
    ``rocksdbCQSelectiveDoubleWriteEnable``), LMQ queues kept in it
    (``combineCQUseRocksdbForLmq``), the copy as the store that assigns or is read
    (``combineAssignOffsetCQType`` / ``combineCQPreferCQType``), LMQ units in it."""
    odd = [f"{k}={cfg.extra[k]}" for k, default in (("rocksdbCQSelectiveDoubleWriteEnable", "false"), ("combineCQUseRocksdbForLmq", "false"),
                                                   ("combineAssignOffsetCQType", "default"), ("combineCQPreferCQType", "default"))
           if str(cfg.extra.get(k, default)).strip().lower() != default]
    if odd:
        rep.not_modelled.append("the RocksDB copy of the queues with " + ", ".join(odd) + ": what start-up does to it is not modelled")
    if p.enable_lmq:
        rep.not_modelled.append("enableLmq with a RocksDB copy of the queues: the LMQ units re-dispatch puts there are not modelled")
    rocksdb_copy_changes(rep, p, copy, release)


def _plan_message_rocksdb(p: RecoveryPlan, stores, cfg: MessageStoreConfig) -> None:
    """Which of ``rocksdbstore/``'s writers re-dispatch feeds (Java
    ``CommitLogDispatcherBuildIndex`` with ``indexRocksDBEnable``,
    ``CommitLogDispatcherBuildTransIndex`` with ``transRocksDBEnable``), what they get
    (every record at or past their ``lastOffsetPy``), and whether index files are
    written beside them (``indexFileWriteEnable``; not given: not when the store has
    no index file and keeps its keys in RocksDB)."""
    p.message_rocksdb = {k: v for k, v in stores.writers.items() if v}
    written = cfg.extra_flag("indexFileWriteEnable")
    if written is None:
        written = not (p.message_rocksdb.get("index") and not [f for f in p.index_files if f not in p.dropped_index] and "IndexRocksDBStore" in stores.last_offsets)
    p.index_files_written = bool(written)
    rep, pos = p.report, p.handed_to_dispatch()  # (all of them reach these writers: nothing is skipped for them)
    for name, which in (("IndexRocksDBStore", "index"), ("TransMessageRocksDBStore", "trans")):
        if not p.message_rocksdb.get(which):
            continue
        last = stores.last_offsets.get(name)
        if last is None:  # (5.4's transactions: fed, not asked where to start)
            continue
        n = int((pos >= last).sum())
        rep.notes.append(f"{name} (rocksdbstore/) gets the {n} re-dispatched record(s) at or past its lastOffsetPy {last}; below it, it skips them")


def _start_waits_forever(rep: RecoveryReport, plan: RecoveryPlan, release: Release) -> None:
    """Java 4.x ``DefaultMessageStore.start``: after recovery the reput restarts at the
    consume queues' max physical offset (at least the log's min offset) and start()
    sleeps until it has reached the log's max offset (``dispatchBehindBytes() <= 0``),
    with no timeout.  A commitlog file missing between the two stops the reput for good
    (``ReputMessageService.doReput``: ``getData`` finds no file there, and at a BLANK
    ``rollNextFile`` points into the gap): the broker never finishes starting.  Found
    live with RocketMQ 4.9.7 (the last file holding data deleted after a crash, the
    queues pointing into it).  Applying refuses, as for a store RocketMQ does not load."""
    if not release.start_waits_for_reput or not plan.files or plan.commitlog is None:
        return
    reput = max(plan.files[0].file_from_offset, plan.queues_max_after)
    end = rep.commitlog_end
    gaps = [(a, b) for a, b in plan.commitlog.missing if b > reput and a < end]
    if reput < end and gaps:
        a, b = gaps[0]
        rep.start_hangs = (f"RocketMQ {release.name}'s reput restarts at the consume queues' max physical offset {reput} and cannot pass the "
                           f"missing commitlog file [{a}, {b}) to reach the log's end {end}; start() waits for it forever "
                           "(DefaultMessageStore.start: dispatchBehindBytes() <= 0)")
        plan.fails_load.append(rep.start_hangs)


def _outcome(rep: RecoveryReport) -> tuple:
    """What a recovery leaves, for telling two releases' plans apart: the end of the
    log, each queue's change, the index, what is lost (not where the scan started)."""
    return (rep.commitlog_end, rep.records_lost, rep.index_unfindable, len(rep.queues_short),
            tuple((q.queue, q.cut_entries, q.added_entries, q.created, q.max_offset_after) for q in rep.queues),
            tuple((i.file, i.action) for i in rep.index if i.action == "dropped"))


def _other_releases(p: RecoveryPlan, planner: _Planner, others: list[Release], root: Path, cfg: MessageStoreConfig, **options) -> None:
    """Each other release the store may come from: where it would start (cheap); when
    that is not the plan's start, its whole plan, and its outcome in the report when
    that differs (a different start whose re-dispatch adds nothing new agrees)."""
    rep = p.report
    # releases whose start is the plan's agree with it; others are planned once per start
    seen: dict[tuple[int, int, int], ReleaseOutcome | str | None] = {(p.start_index, rep.dispatch_from, p.scan_at): None}
    for r in others:
        choice = planner.start_choice(p, r)
        key = (choice.index, choice.dispatch_from, choice.scan_at)
        if key in seen:
            known = seen[key]
            if isinstance(known, ReleaseOutcome):
                known.release += f" and {r.name}"  # the same start: the same outcome
            continue
        alt = plan(root, config=cfg, rocketmq_version=r.name, **options)
        ar = alt.report
        alt.close()
        if _outcome(ar) != _outcome(rep):
            seen[key] = ReleaseOutcome(r.name, ar.rule, ar.start_file, ar.start_reason, ar.commitlog_end, ar.records_scanned, ar.records_lost)
            rep.release_outcomes.append(seen[key])
        else:
            seen[key] = r.name
            rep.notes.append(f"RocketMQ {r.name} would start at {ar.start_file} ({ar.start_reason}) and leave the store the same")


def apply(
    plan: RecoveryPlan,
    *,
    out: str | os.PathLike | None = None,
    in_place: bool = False,
    sidecar: str | os.PathLike | None = None,
    clock=None,
    zero_tail: bool = False,
    mark_clean: bool = True,
) -> RecoveryReport:
    """Carry out a :func:`plan` on a copy (``out=DIR``, which must not exist) or on the
    store itself (``in_place=True``, after saving every byte to be cut in ``sidecar``,
    default ``<store>.rmqlab-cut-<time>`` next to it); with neither, nothing is written
    and the plan's report is returned (a dry run).  The plan's mappings are closed
    either way; the store must not have changed since it was planned.

    ``zero_tail`` zeroes the commitlog bytes after the new end (RocketMQ leaves them);
    ``mark_clean=False`` leaves ``abort`` (the next start recovers again); ``clock``
    names new index files (``now_ms()``), as the engine's clock does.

    >>> import os, tempfile
    >>> from rmqlab import open_store
    >>> from rmqlab.lab.samples import shipped_dir
    >>> copy = os.path.join(tempfile.mkdtemp(), "recovered")
    >>> rep = apply(plan(shipped_dir() / "crashed"), out=copy)   # the sample is left as it is
    >>> rep.applied, rep.commitlog_end
    ('copy', 276681)
    >>> with open_store(copy) as store:
    ...     print(store.abort_exists, store.consume_queue("Orders", 0).valid_range())
    False (0, 122)
    """
    if out is not None and in_place:
        raise ValueError("choose --out DIR or --in-place, not both")
    rep, root, cfg = plan.report, plan.root, plan.config
    if out is None and not in_place:
        plan.close()
        return rep
    if rep.not_modelled:
        plan.close()
        raise StoreLayoutError(root, None, "rmqlab does not model what RocketMQ's start-up does with "
                               + "; ".join(rep.not_modelled) + "; nothing was written (the dry run reports what it can)")
    if rep.release_outcomes:
        plan.close()
        others = "; ".join(f"{o.release} ends the log at {o.commitlog_end} (from {o.start_file})" for o in rep.release_outcomes)
        raise StoreLayoutError(root, None, f"the store does not say which RocketMQ release wrote it, and their recoveries differ: {rep.release} ends the log at "
                               f"{rep.commitlog_end} (from {rep.start_file}), {others}; name the broker's with --rocketmq-version; nothing was written")
    if plan.fails_load:
        plan.close()
        raise StoreLayoutError(root, None, "RocketMQ does not load or does not start this store: " + "; ".join(plan.fails_load)
                               + "; nothing was written (what RocketMQ would do with it is not a recovery)")
    if plan.index_size_unknown:
        plan.close()
        raise StoreLayoutError(root / INDEX_DIR, None, plan.index_size_unknown + "; nothing was written")
    if rep.dispatch_stop is not None:
        stop = rep.dispatch_stop
        f = next(f for f in reversed(plan.files) if f.file_from_offset <= stop.physical_offset)  # the log's own file (storePathCommitLog may name several dirs)
        plan.close()
        raise StoreLayoutError(f.path, stop.physical_offset - f.file_from_offset, f"the next start's dispatch stops for good at this record of {stop.queue}: no "
                               "directory can have its topic's name, so RocketMQ's start leaves the queues short of the log's end and the store unwriteable, "
                               "and no recovery can finish it; nothing was written (the dry run says what the start does)")
    t0 = time.perf_counter()
    if out is not None:
        target = Path(out)
        if target.exists():
            plan.close()
            raise StoreLayoutError(target, None, "--out directory already exists; give a new path")
        plan.close()
        shutil.copytree(root, target)
        _gather_log(plan, target, rep)
        rep.applied, rep.target = "copy", str(target)
        side = _Sidecar(target, Path(sidecar) if sidecar else None)
    else:
        target = root
        side_dir = Path(sidecar) if sidecar else _fresh_sidecar(root)
        if side_dir.exists():
            plan.close()
            raise StoreLayoutError(side_dir, None, "sidecar directory already exists")
        rep.applied, rep.target = "in-place", str(root)
        side = _Sidecar(root, side_dir)
        rep.sidecar = str(side_dir)
    if rep.load_ok is False:
        _pad_short_files(target, plan, cfg)
    _pad_short_index_files(target, plan, cfg)
    _apply(rep, plan, target, cfg, side, clock=clock, zero_tail=zero_tail, mark_clean=mark_clean)
    side.finish()
    if out is not None and sidecar:
        rep.sidecar = str(sidecar)
    rep.timings["apply_s"] = time.perf_counter() - t0
    rep.timings["total_s"] = rep.timings.get("total_s", 0.0) + rep.timings["apply_s"]
    return rep


def recover(
    store: str | os.PathLike,
    *,
    config: MessageStoreConfig | None = None,
    out: str | os.PathLike | None = None,
    in_place: bool = False,
    sidecar: str | os.PathLike | None = None,
    clock=None,
    legacy_three_files: bool | None = None,
    check_crc: bool | None = None,
    force_verify_prop_crc: bool = False,
    zero_tail: bool = False,
    mark_clean: bool = True,
    check_lock: bool = False,
    reindex: bool = False,
    rocketmq_version: str | None = None,
) -> RecoveryReport:
    """Recover the store at ``store`` as RocketMQ 5.3 would on start-up: :func:`plan`,
    then :func:`apply` (see both for the options).

    Default: a dry run — nothing is written, the report says what would happen.
    ``out=DIR``: copy the store to DIR and recover the copy; ``in_place=True``: recover
    the store itself, every cut byte saved to a sidecar first.  ``check_lock`` refuses
    an in-place run while another process holds the store's lock (the CLI sets it; the
    engine, which holds the lock itself, does not).

    >>> from rmqlab.lab.samples import shipped_dir
    >>> rep = recover(shipped_dir() / "damaged")       # a dry run: nothing is written
    >>> rep.consequence, rep.commitlog_end, rep.records_lost
    ('records lost', 263650, 52)
    >>> print(rep.cause.line())
    BODY_CRC at 263650 (.../damaged/commitlog/00000000000000262144 @ 1506): a body CRC failure: ...
    """
    root = Path(store)
    if out is not None and in_place:
        raise ValueError("choose --out DIR or --in-place, not both")
    if not root.is_dir():
        raise StoreLayoutError(root, None, "store root is not a directory")
    if in_place and check_lock:
        from ..errors import StoreLockedError

        if lock_state(root) == "held":  # before anything is inferred: no sizes needed
            raise StoreLockedError(f"{root / LOCK_FILE}: a running broker (or rmqlab writer) holds this store; stop it before recovering in place")
    p = plan(root, config=config, legacy_three_files=legacy_three_files, check_crc=check_crc, force_verify_prop_crc=force_verify_prop_crc, reindex=reindex,
             rocketmq_version=rocketmq_version)
    return apply(p, out=out, in_place=in_place, sidecar=sidecar, clock=clock, zero_tail=zero_tail, mark_clean=mark_clean)


def _index_size_unknown(index_files: list[Path], cfg: MessageStoreConfig, rep: RecoveryReport) -> str:
    """Why applying would build an index file of a size nothing says, or "".  Sizes
    come from a config, or from an index file's length; with neither, RocketMQ's
    defaults are what the store's other files imply only when its commitlog files
    are of RocketMQ's default size too.  Otherwise a store written with small files
    would get a 420 MB index file that its own broker (or rmqlab's engine, given the
    store's real config) refuses."""
    if not rep.records_redispatched or not cfg.message_index_enable:
        return ""
    if any(p.stat().st_size > 0 for p in index_files):
        return ""
    default = MessageStoreConfig()
    if cfg.mapped_file_size_commit_log == default.mapped_file_size_commit_log:
        return ""
    size = index_file_size(cfg.max_hash_slot_num, cfg.max_index_num)
    return (
        f"re-dispatch would build a new index file, and nothing says its size: no index file to infer it from and no "
        f"--config, --max-hash-slot-num or --max-index-num; RocketMQ's defaults (a {size:,}-byte file) do not fit a store "
        f"of {cfg.mapped_file_size_commit_log:,}-byte commitlog files: give the store's sizes to apply the recovery"
    )


def _fresh_sidecar(root: Path) -> Path:
    """``<store>.rmqlab-cut-<time>`` next to the store, with ``-2``, ``-3``... when a
    recovery in the same second (a crash soon after a start) already made one."""
    base = root.parent / f"{root.name}.rmqlab-cut-{time.strftime('%Y%m%d%H%M%S')}"
    side, n = base, 1
    while side.exists():
        n += 1
        side = base.with_name(f"{base.name}-{n}")
    return side


def _pad_short_index_files(target: Path, plan: RecoveryPlan, cfg: MessageStoreConfig) -> None:
    """Index files shorter than the configured size (a capture cut short, an empty
    newest file) are zero-extended to it, as Java's mapping of them leaves them, so
    that the recovered store loads in RocketMQ and in rmqlab alike."""
    d = target / INDEX_DIR
    dropped = {p.name for p in plan.dropped_index}
    for p in sorted(d.iterdir()) if d.is_dir() else []:
        if p.is_file() and p.name.isdigit() and p.name not in dropped and p.stat().st_size < cfg.index_file_size:
            with open(p, "r+b") as fh:
                fh.truncate(cfg.index_file_size)


def _in_target(plan: RecoveryPlan, target: Path):
    """The function from a file of the planned store to the same file in ``target``: the
    store itself (in place) or its copy, where every file of the log is in commitlog/
    (see :func:`_gather_log`)."""
    root = Path(plan.report.root)
    log_dirs = {Path(d).resolve() for d in plan.commitlog.directories} if plan.commitlog is not None else set()

    def t(p: Path) -> Path:
        p = Path(p)
        if target == root:
            return p
        if p.parent.resolve() in log_dirs:
            return target / COMMITLOG_DIR / p.name
        return target / p.relative_to(root)

    return t


def _gather_log(plan: RecoveryPlan, target: Path, rep: RecoveryReport) -> None:
    """A copy (``--out``) of a store whose log spans several directories keeps the whole
    log in its ``commitlog/``: RocketMQ's ``MultiPathMappedFileQueue.load`` only lists the
    directories' files, so where each file lies is placement, not content, and the copy
    is a store RocketMQ (and rmqlab) load without ``storePathCommitLog``."""
    if plan.commitlog is None or len(plan.commitlog.directories) < 2 and plan.commitlog.directory.resolve() == (Path(rep.root) / COMMITLOG_DIR).resolve():
        return
    root = Path(rep.root)
    own = (root / COMMITLOG_DIR).resolve()
    dest = target / COMMITLOG_DIR
    dest.mkdir(exist_ok=True)
    moved = []
    for d in plan.commitlog.directories:
        if d.resolve() == own:
            continue
        for f in sorted(d.iterdir()):
            if not (f.is_file() and f.name.isdigit()):
                continue
            if f.resolve().is_relative_to(root.resolve()):  # copied with the root: moved into commitlog/
                shutil.move(target / f.relative_to(root), dest / f.name)
            else:
                shutil.copy2(f, dest / f.name)
            moved.append(f.name)
        if d.resolve().is_relative_to(root.resolve()) and (target / d.relative_to(root)).is_dir():
            shutil.rmtree(target / d.relative_to(root))
    rep.notes.append(f"the log's {len(plan.commitlog.directories)} directories ({', '.join(str(d) for d in plan.commitlog.directories)}) are one log; "
                     f"the copy keeps all of it in {COMMITLOG_DIR}/ ({len(moved)} file(s) gathered), a store that loads without storePathCommitLog")


def _pad_short_files(target: Path, plan: RecoveryPlan, cfg: MessageStoreConfig) -> None:
    """A short last commitlog file is zero-extended to the configured size (what Java's
    mapping of it would show) so that the recovered store loads."""
    t = _in_target(plan, target)
    for f in plan.files:
        p = t(f.path)
        if p.exists() and 0 < p.stat().st_size < cfg.mapped_file_size_commit_log:
            with open(p, "r+b") as fh:
                fh.truncate(cfg.mapped_file_size_commit_log)
