"""The RocketMQ releases rmqlab models, and what each does differently at start-up.

A release is a parameter of the rules, not a copy of them: the recovery planner asks
the :class:`Release` it was given which way to go where releases part, and each such
difference is one field here, with the Java it comes from.  Read from each release's
``rocketmq-store`` sources (``CommitLog.recoverNormally``, ``recoverAbnormally``,
``isMappedFileMatchedRecover``; ``StoreCheckpoint``; ``ConsumeQueueStore``)::

                     normal start file            abnormal start file                 walk cap  checkpoint
    4.9.7            third-to-last                first record's magic, ts ≤ minTs    none      3 longs (5 read)
    5.3.3 (5.3.2+)   last file ≤ maxPhyOffsetInCQ first record's magic, ts ≤ minTs    none      5 longs
    5.4.0            walk back: first record whole first record whole, ts ≤ minTs     10 files  5 longs
                     (checkMessageAndReturnSize),
                     its offset ≤ maxPhyOffsetInCQ
    5.5.0, 5.5.1     as 5.4                       first record whole, its offset ≤     10 files  6 longs
                                                  logicsPhysicalOffset (0: its ts ≤
                                                  logicsMsgTimestamp, no slack)

rocketmq-rust (crates.io ``rocketmq-store`` 1.0.0) writes the same files with rules of its
own, read from its sources and modelled as one more :class:`Release` (``writer`` is not
``"apache"``)::

    rocketmq-rust    the last maxRecoveryCommitLogFiles (30) files   newest file whose first record has a magic and a
    1.0.0            (normal_window.rs plan_normal_recovery_file_window)   storeTimestamp ≤ minTs, then 30 files further back, or
                                                  the file of the queues' max physical offset if earlier
                                                  (commit_log_recovery.rs find_checkpoint_recovery_start_index,
                                                  recovery.rs plan_abnormal_recovery_window_from_ranges); none: file 0
                     checkpoint: 6 longs, byte 40 its indexSafePhyOffset (the end of the last record indexed),
                     where 5.5 keeps logicsPhysicalOffset (store_checkpoint.rs); the index holds a record's
                     UNIQ_KEY as ``topic#U#uniq`` (index_service.rs build_index_admitted, INDEX_UNIQUE_TYPE),
                     where Java's IndexService.buildIndex writes ``topic#uniq``.

From 5.4 the index also holds each record's TAGS (``topic#T#tags``, after its keys), and
with keys or transactions in RocksDB (``indexRocksDBEnable``, ``transRocksDBEnable``) a
start file must also begin at or before their writers' ``lastOffsetPy``.
"ts" is the record's storeTimestamp; "minTs" the checkpoint's ``getMinTimestamp``
(``min(physic, logics) − 3 s``, or with ``messageIndexSafe`` also ``≤ indexMsgTimestamp``);
the walk cap is ``commitLogRecoverMaxNum`` (default 10; ``≤ 0`` reads as 10).  Which
release wrote a store, :func:`rmqlab.store.release.tell_release` reads from its bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

#: Java ``MessageStoreConfig.commitLogRecoverMaxNum`` (5.4+): how many commitlog files,
#: newest first, recovery looks at for its start file before it takes the last one looked at
COMMIT_LOG_RECOVER_MAX_NUM = 10


@dataclass(frozen=True)
class Release:
    """One RocketMQ release's start-up rules (see the module's table)."""

    #: the release, as Maven Central names it
    name: str
    #: how normal recovery picks its start file: ``"third_to_last"`` (4.x, 5 up to 5.3.1),
    #: ``"queue_max_file"`` (5.3.2–5.3.3: the newest file starting at or before
    #: maxPhyOffsetOfConsumeQueue) or ``"walk_back"`` (5.4+: isMappedFileMatchedRecover)
    normal_start: str
    #: isMappedFileMatchedRecover decodes the file's whole first record with
    #: checkMessageAndReturnSize (CRC per checkCRCOnRecover), not only its magic (5.4+)
    full_first_record: bool
    #: the start-file walks stop after commitLogRecoverMaxNum files (5.4+)
    capped_walk: bool
    #: abnormal recovery's test is the checkpoint's logicsPhysicalOffset (or, when it is 0,
    #: storeTimestamp ≤ logicsMsgTimestamp) instead of getMinTimestamp (5.5+:
    #: ConsumeQueueStore.isMappedFileMatchedRecover)
    abnormal_by_logics_offset: bool
    #: how many checkpoint longs the release writes (StoreCheckpoint.flush)
    checkpoint_longs: int
    #: IndexService.buildIndex also indexes a record's TAGS, as ``topic#T#tags``
    #: (MessageConst.INDEX_TAG_TYPE; 5.4+)
    index_tags: bool
    #: re-dispatch after recovery starts at the lowest progress of every
    #: CommitLogDispatchStore, the RocksDB keys' and transactions' lastOffsetPy included,
    #: and the transaction store is asked for the start file whenever transRocksDBEnable
    #: (5.5+: DefaultMessageStore.recover, registerCommitLogDispatchStore).  5.4 asks
    #: the RocksDB stores for the start file only, the transactions' only with
    #: transWriteOriginTransHalfEnable=false (CommitLog.isMappedFileMatchedRecover)
    dispatch_from_all_stores: bool = False
    #: after recovery, ConsumeQueueStore.recoverOffsetTable's ConsumeQueue.correctMinOffset
    #: sets a consume queue left with no file (truncateDirtyLogicFiles deleted them all)
    #: to minLogicOffset 0 and maxPhysicOffset -1; before 5.5.1 it returns first
    #: (``minLogicOffset >= maxOffset``) and the queue keeps the end of the log it was cut
    #: at as its maxPhysicOffset (5.5.1+)
    empty_queue_resets_max: bool = False
    #: who wrote it: ``"apache"`` (Apache RocketMQ's Java store) or ``"rocketmq-rust"``
    writer: str = "apache"
    #: whether recovery checks each body CRC when the config does not say (checkCRCOnRecover:
    #: Java's ``MessageStoreConfig`` default true; rocketmq-rust 1.0.0's
    #: ``MessageStoreConfig::default`` check_crc_on_recover false, config/message_store_config.rs)
    check_crc_on_recover: bool = True
    #: what goes between ``topic#`` and a record's UNIQ_KEY in its index key: nothing in
    #: Java (IndexService.buildIndex), ``"U#"`` in rocketmq-rust (MessageConst.INDEX_UNIQUE_TYPE)
    uniq_index_type: str = ""
    #: abnormal recovery's start (rocketmq-rust): the checkpoint-matched file, then this
    #: many files further back (maxRecoveryCommitLogFiles), or the file of the queues' max
    #: physical offset if that is earlier; 0: Java's rule (the matched file itself)
    abnormal_files_back: int = 0
    #: normal recovery scans the last this many files (rocketmq-rust's
    #: maxRecoveryCommitLogFiles); 0: the rule ``normal_start`` names
    normal_last_files: int = 0
    #: with ``enableAcceleratedRecovery=true``, abnormal recovery walks its start file from
    #: dispatchFromPhyOffset (the checkpoint's logicsPhysicalOffset, or RocksDB's max
    #: physical offset, lowered to a RocksDB key or transaction store's lastOffsetPy), not
    #: from its first byte: what lies before it is neither checked nor re-dispatched
    #: (5.5+: CommitLog.recoverAbnormally, ConsumeQueueStore.getDispatchFromPhyOffset).
    #: 5.4.0 reads the setting only with a RocksDB consume queue: ``accelerated_rocksdb``
    accelerated_abnormal: bool = False
    #: with ``enableAcceleratedRecovery=true`` and a RocksDB consume queue, both
    #: recoveries walk their start file from RocksDB's max physical offset (5.4.0:
    #: CommitLog.recoverNormally when it lies past the file's first byte,
    #: recoverAbnormally when it is not before the file; isEnableRocksDBStore() &&
    #: isEnableAcceleratedRecovery())
    accelerated_rocksdb: bool = False
    #: ``rocksdbCQDoubleWriteEnable`` makes the queue store a CombineConsumeQueueStore
    #: (5.4+: DefaultMessageStore.createConsumeQueueStore): the start file must suit the
    #: RocksDB copy too, or be at most combineCQMaxExtraSearchCommitLogFiles files past
    #: one that does not; re-dispatch starts at the lower of the two progresses, the
    #: truncation of both runs when that lower one reaches the new end, and start()
    #: re-initialises a copy's queue whose max differs from the file queue's
    #: (verifyAndInitOffsetForAllStore).  Before 5.4 the copy (enableRocksdbCQWrite) is
    #: only fed by dispatch.  ``combine_skips_unstarted`` (5.5+): a copy that never ran
    #: (max physical offset ≤ 0) is not asked
    combined_queue_store: bool = False
    combine_skips_unstarted: bool = False
    #: start() restarts the reput at the consume queues' max physical offset (at least
    #: the log's min) and waits, with no timeout, until it reaches the log's max offset
    #: (4.x: DefaultMessageStore.start, dispatchBehindBytes() <= 0); 5.x restarts it at
    #: the log's max offset and does not wait
    start_waits_for_reput: bool = False
    #: with ``checkCommitLogOffsetOnRecover=true``, abnormal recovery's walk also ends at a
    #: record whose physicalOffset field lies outside [fileFromOffset, fileFromOffset +
    #: fileSize] of the file it is in (5.5+: CommitLog.recoverAbnormally)
    commit_log_offset_check: bool = False
    #: a record the walk does not accept ends its file's walk, not the log's: the walk
    #: goes on with the next file and the log ends after the last record it accepted
    #: (rocketmq-rust 1.0.0's default, optimized recovery: ``recovery.rs
    #: NormalRecoveryState`` / ``AbnormalRecoveryState`` with ``Optimized`` policy turn
    #: InvalidRecord and SourceEnded into ContinueNextSegment; Java stops the walk there)
    invalid_record_skips_file: bool = False
    #: the index takes a record only where it starts at the end of the last one it took
    #: (its safe offset, from the kept index files at load), else its build stops for good
    #: (rocketmq-rust 1.0.0: ``IndexService.build_index_admitted`` marks its progress
    #: failed, the checkpoint's index-safe offset becomes -1); recovery dispatches no
    #: file-end blank, so re-indexing stops at the first commitlog file it crosses.  Java
    #: indexes every record from the newest index file's endPhyOffset on
    index_rebuild_contiguous: bool = False
    #: the start's dispatch recovery offset is the lowest progress of its dispatchers: the
    #: consume queues' max physical offset and the index's safe frontier (the checkpoint's
    #: indexSafePhyOffset, at least the log's min offset; none once an index build failed).
    #: Recovery takes it for maxPhyOffsetOfConsumeQueue (the abnormal start window, whether
    #: the queues are truncated), and after a normal recovery start() moves the reput back
    #: to it and dispatches from the record that starts exactly there (rocketmq-rust 1.0.0:
    #: ``recovery.rs get_dispatch_recovery_offset``, ``dispatch.rs
    #: do_recheck_reput_offset_from_dispatchers``, ``index_dispatch.rs`` /
    #: ``build_consume_queue.rs dispatch_progress_offset``).  Java takes the queues' max
    #: alone, and ``CommitLog.recoverNormally`` dispatches only records past it
    #: (``getCommitLogOffset() > maxPhyOffsetOfConsumeQueue``): the record that starts
    #: there stays out of its queue
    lowest_dispatch_progress: bool = False

    def with_legacy_start(self) -> "Release":
        """The same release with normal recovery from the third-to-last file (a broker up
        to 5.3.1 on a 5.x store)."""
        return replace(self, normal_start="third_to_last")

    @property
    def line(self) -> str:
        """``"4.9"``, ``"5.3"``, ``"5.4"``, ``"5.5"``: the release line the rules follow
        (another writer's: its name)."""
        return ".".join(self.name.split(".")[:2]) if self.writer == "apache" else self.writer

    @property
    def title(self) -> str:
        """How a sentence names it: ``"RocketMQ 5.5.0"``, ``"rocketmq-rust 1.0.0"``."""
        return f"RocketMQ {self.name}" if self.writer == "apache" else self.name.replace(":", " ")


RELEASES: dict[str, Release] = {
    r.name: r
    for r in (
        Release("4.9.7", "third_to_last", False, False, False, 3, False, start_waits_for_reput=True),
        Release("5.3.3", "queue_max_file", False, False, False, 5, False),
        Release("5.4.0", "walk_back", True, True, False, 5, True, accelerated_rocksdb=True, combined_queue_store=True),
        Release("5.5.0", "walk_back", True, True, True, 6, True, True,
                accelerated_abnormal=True, commit_log_offset_check=True, combined_queue_store=True, combine_skips_unstarted=True),
        Release("5.5.1", "walk_back", True, True, True, 6, True, True, True,
                accelerated_abnormal=True, commit_log_offset_check=True, combined_queue_store=True, combine_skips_unstarted=True),
        # rocketmq-rust: checkMessageAndReturnSize-free matching of the first record
        # (probe_store_timestamp: magic and a non-zero storeTimestamp), no 10-file cap
        Release("rocketmq-rust:1.0.0", "last_files", False, False, False, 6, True,
                writer="rocketmq-rust", uniq_index_type="U#", abnormal_files_back=30, normal_last_files=30, check_crc_on_recover=False,
                invalid_record_skips_file=True, index_rebuild_contiguous=True, lowest_dispatch_progress=True),
    )
}
#: the other writers rmqlab knows, by name (``--writer rocketmq-rust[:1.0.0]``)
WRITERS = ("apache", "rocketmq-rust")
#: what rmqlab assumed before it told releases apart, and still the default of the
#: writers (the engine writes as 5.3.3 does)
DEFAULT_RELEASE = "5.3.3"
#: the releases whose start-up rules differ, oldest first: a store that cannot be told
#: is planned under each of these (5.5.1's start-up rules are 5.5.0's; it differs after
#: the log's end is found: Release.empty_queue_resets_max)
DISTINCT_RELEASES = ("4.9.7", "5.3.3", "5.4.0", "5.5.0")


def release(name: str) -> Release:
    """The release called ``name`` (``"5.5"`` or ``"5.5.0"``; a line names its newest
    modelled release's rules); ValueError naming the known ones otherwise."""
    if name in RELEASES:
        return RELEASES[name]
    if name.startswith("apache:"):
        name = name[len("apache:"):]
        if name in RELEASES:
            return RELEASES[name]
    line = [r for r in RELEASES.values() if r.line == name]
    if line:
        return line[-1]
    raise ValueError(f"unknown RocketMQ release {name!r}: rmqlab models {', '.join(RELEASES)}")
