"""What each kind of :class:`~rmqlab.forensics.verify.Finding` means for a broker.

A finding's own sentence says what is wrong at its file and offset; this catalogue says,
once per kind, what Apache RocketMQ does with such bytes when it starts on the store and
afterwards, when producers, consumers and lookups use it (the Java class and method
whose rule decides it in brackets).  ``rmqlab report`` prints it beside each group of
findings, and the documentation's table of finding kinds is generated from it: one
place for the fact.  ``tests/forensics/test_kinds.py`` checks that every kind ``verify``
can report has its entry.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    """One kind of finding: a title and what the broker does with it.

    >>> kind_of("BODY_CRC").title
    'body CRC differs'
    """

    title: str
    broker: str


def _k(title: str, broker: str) -> Kind:
    return Kind(title, broker)


#: every kind ``verify`` reports, by name
KINDS: dict[str, Kind] = {
    # -- the commitlog's records (CommitLog.checkMessageAndReturnSize) -------------------------
    "BAD_MAGIC": _k("record with an unknown magic code",
                    "Start-up's walk (CommitLog.recoverNormally / recoverAbnormally) stops here: the log ends at this record; every record after it "
                    "is cut, and consume-queue units and index entries pointing at or past it are removed."),
    "BAD_SIZE": _k("record size impossible",
                   "Start-up's walk stops here and the log ends at this record; what follows is cut."),
    "SIZE_MISMATCH": _k("record's length fields disagree with its size",
                        "Start-up's walk stops here (checkMessageAndReturnSize answers a failed request): the log ends at this record."),
    "BODY_CRC": _k("body CRC differs",
                   "Where start-up's walk reads it (checkCRCOnRecover, the default) the log ends here: this record and all after it are cut. "
                   "In a file before the walk's start it stays, and a consumer fetching it receives the damaged body."),
    "PROPERTY_CRC": _k("__CRC32# property differs",
                       "Checked only with forceVerifyPropCRC: then start-up's walk stops here; otherwise the record is served as it is."),
    "TRUNCATED": _k("record cut short by the end of the file",
                    "Start-up's walk stops here: the log ends at this record."),
    "BAD_BLANK": _k("BLANK end-of-file record of the wrong size",
                    "The walk moves to the next file at any BLANK, so RocketMQ accepts it; the bytes it claims are never read."),
    "PHYSICAL_OFFSET": _k("record names another physical offset",
                          "RocketMQ does not compare it on start-up (the walk reads sizes only); a consumer receives the record with the wrong offset, "
                          "and a message id built from it names another place."),
    "QUEUE_OFFSET_GAP": _k("queue offsets of a queue jump",
                           "Recovery rebuilds consume queues from the records as written: the queue's units follow the records, and the offsets "
                           "in the gap never hold a message (a consumer is moved past them)."),
    "TORN_RECORD": _k("last record torn at its end",
                      "Its CRC or sizes fail when start-up's walk reaches it (the body is what the CRC covers): the log ends before it, as for any "
                      "record a crash tore."),
    "TAIL_BYTES": _k("non-zero bytes after the end of the log",
                     "RocketMQ leaves them where they are and writes over them with the next records; `rmqlab salvage` reads any records in them first."),
    "DEAD_BYTES": _k("bytes past the log's end after a clean exit",
                     "Normal recovery starts from the checkpoint and stops at the same end: these bytes are overwritten by the next puts."),
    "RESYNC": _k("verify resumed after damage",
                 "Not RocketMQ's: its walk does not resume past damage; the records verify reads beyond it are cut by recovery."),
    "ZEROED_RANGE": _k("zeroed block inside data",
                       "Zeros read as the end of the log (magic 0): where start-up's walk reaches them it ends the log there, and what follows is "
                       "cut (then it is the cause, an error); in a file before the walk's start the records around them stay, damaged."),
    "MISSING_FILE": _k("a commitlog file is missing from the middle of the log",
                       "MappedFileQueue.load checks lengths only and checkSelf logs the gap: the broker starts, and the units its queues hold "
                       "in the missing file answer MESSAGE_WAS_REMOVING (findMappedFileByOffset finds no file): those records are gone."),
    "SHORT_FILE": _k("a commitlog file is not of the configured size",
                     "MappedFileQueue.load refuses a file of another length (\"length not matched message store config value\"): load() returns "
                     "false and the broker does not start; the records the queues name in the part a short file lacks are gone."),
    "UNWRITTEN": _k("records the queues name were never written to disk",
                    "The log's data ends before records its consume queues point at: the broker crashed before flushing them (the crash window). "
                    "Start-up's walk ends the log at the data's end; the units pointing past it are cut (ConsumeQueue.truncateDirtyLogicFiles)."),
    "DLEDGER_ENTRY": _k("DLedger entry damaged",
                        "DLedger's MmapFileList recovery truncates the entries from the damaged one on; the CommitLog above it loses them too."),
    "PREALLOCATED_FILE": _k("pre-allocated empty commitlog file",
                            "Normal: AllocateMappedFileService creates the next file ahead; recovery truncates (deletes) it when it lies after the end."),
    "EMPTY_FILE": _k("empty file",
                     "MappedFileQueue.load deletes a zero-length last file; elsewhere a file of the wrong size makes the load fail."),
    "STRAY_FILE": _k("file whose name is not an offset",
                     "Not one of the log's files: rmqlab reads around it. MappedFileQueue.load maps every file of the directory by its name, "
                     "so move it away before a broker starts on the store."),
    "LAYOUT": _k("file names or sizes RocketMQ's loader refuses",
                 "MappedFileQueue.load returns false for a file of the wrong size that is not the last: the broker does not start until it is fixed "
                 "(`rmqlab recover --out` zero-pads such files)."),
    # -- consume queues (ConsumeQueue.recover, ConsumeQueue.putMessagePositionInfo) ------------------
    "CQ_BEYOND_END": _k("queue unit points past the end of the log",
                        "The next start cuts it (ConsumeQueue.truncateDirtyLogicFiles), whether or not a readable record still lies there: the queue ends before "
                        "it and the offsets are written again by new messages."),
    "CQ_PAST_END": _k("queue unit points past the end of the log, and the next start keeps it",
                      "rocketmq-rust truncates its queues only where its lowest dispatch progress (the index's safe offset among them) reaches the "
                      "end of the log: the unit stays, the queue's max offset counts it, and a pull of it finds no message there."),
    "CQ_DANGLING": _k("queue unit points where no record starts",
                      "Not checked on start-up: a consumer pulling that offset receives the bytes there as a message, which its client fails "
                      "to decode (or decodes as another message)."),
    "CQ_MISMATCH": _k("queue unit disagrees with its record",
                      "Served as it is: a consumer of this queue receives the record the unit points at, and tag filtering uses the unit's tagsCode."),
    "CQ_BEHIND": _k("queue ends before the log's records of it",
                    "Recovery re-dispatches the log from its start point on: records after it reach the queue again; records before it stay missing "
                    "(consumers never see them) — the finding says which."),
    "CQ_MISSING_QUEUE": _k("queue directory missing",
                           "Abnormal recovery re-dispatches from its start file and rebuilds what it reaches; records before it stay unreachable by queue. "
                           "A topic longer than a file name may be has no directory to rebuild: RocketMQ's dispatch gives up there and writes no queue again "
                           "(the outcome `dispatch stops`) — the finding says which."),
    "CQ_STALE_ENTRIES": _k("valid-looking units after the queue's end",
                           "ConsumeQueue.recover stops at the first invalid unit and ignores them; the next put overwrites them."),
    "CQ_EXT_MISSING": _k("consume-queue ext file missing",
                         "Tag filtering by the ext unit (enableConsumeQueueExt) fails for those units: the broker serves them without their filter bits."),
    "CQ_EXT_UNIT": _k("consume-queue ext unit unreadable",
                      "ConsumeQueueExt.get answers nothing for it: the unit is served without its filter data."),
    "BCQ_OFFSET_GAP": _k("batch queue unit offsets jump",
                         "BatchConsumeQueue lookups by offset binary-search the units: offsets in the gap are not found."),
    "LMQ_DANGLING": _k("LMQ unit points where no record starts",
                       "A light message queue consumer pulling it gets a failed read."),
    "LMQ_MISMATCH": _k("LMQ unit points at a record of another queue",
                       "The LMQ consumer receives a record that was not dispatched to it."),
    "LMQ_OFFSET_SHIFT": _k("LMQ units below the offsets their records name",
                           "Served as they are: the consumer sees the queue offsets of the units."),
    "RDB_CQ_BEHIND": _k("RocksDB copy of a queue behind its files",
                        "RocksDB double write catches up on start-up (checkRocksdbCqWriteProgress) from the file queues."),
    "RDB_CQ_DIFFERS": _k("RocksDB copy of a unit differs from the file's",
                         "Which one consumers read depends on the queue type the broker is set to (storeType): the other is ignored."),
    "RDB_CQ_GAP": _k("RocksDB consume queue has a gap",
                     "RocksDBConsumeQueue lookups find no unit in the gap: consumers are moved past it."),
    "RDB_CQ_MAX": _k("RocksDB queue's max offset record wrong",
                     "Start-up trusts it (RocksDBConsumeQueueOffsetTable): the queue's max offset, and what re-dispatch rebuilds, follow it."),
    "RDB_KEY": _k("RocksDB key not readable",
                  "RocksDB keeps the row; RocketMQ's decoding of it fails when a lookup reaches it."),
    "RDB_MESSAGE_KEY": _k("RocksDB message-store key not readable",
                          "The key or transaction row is skipped by RocketMQ's readers of that family."),
    "RDB_PROGRESS_PAST_END": _k("RocksDB progress past the end of the log",
                                "Start-up's re-dispatch into RocksDB begins after it: records below it that the log no longer holds are not indexed again."),
    # -- index files (IndexFile.putKey, IndexService.load) -----------------------------------------
    "INDEX_HEADER": _k("index file header out of range",
                       "IndexFile.load takes the header as it is: lookups in this file read slots and entries it does not hold, or find nothing."),
    "INDEX_SLOT": _k("hash slot points outside the entries",
                     "A lookup of a key of this slot reads outside the file's entries and finds nothing (or garbage)."),
    "INDEX_CHAIN": _k("index entry points forward in its chain",
                      "IndexFile.selectPhyOffset stops at an invalid prevIndex: keys further down the chain are not found."),
    "INDEX_CYCLE": _k("index chain loops",
                      "selectPhyOffset stops after maxNum results, so lookups return the loop's entries again and again up to the limit."),
    "INDEX_ENTRY": _k("index entry with a negative time difference",
                      "The entry fails the time filter of every lookup: its key is not found."),
    "INDEX_SLOT_MISMATCH": _k("index entry in the wrong slot's chain",
                              "A lookup of its key walks its own slot's chain and does not find it."),
    "INDEX_DANGLING": _k("index entry points where no record starts",
                         "A lookup returning it reads a wrong or failed record at that offset."),
    "INDEX_HASH": _k("index entry's hash matches no key of its record",
                     "The broker answers a lookup of the entry's hash with the record it points at; the client's query (MQAdminImpl.queryMessage) "
                     "drops it, its keys not matching: the key the entry was made for is not found through it."),
    "INDEX_UNIQ_FORM": _k("UNIQ_KEYs indexed in another writer's form",
                          "rocketmq-rust indexes a UNIQ_KEY as topic#U#key (index_service.rs, INDEX_UNIQUE_TYPE), Java as topic#key "
                          "(IndexService.buildIndex): a broker of the other implementation looks the UNIQ_KEY up under its own form and finds nothing."),
    "INDEX_ORPHAN": _k("index entries no slot reaches",
                       "Never returned by a lookup: their keys are not findable through this file."),
    "INDEX_MISSING": _k("records with keys no index holds",
                        "Lookups by those keys find nothing; recovery indexes only what it re-dispatches (IndexService.buildIndex skips offsets below "
                        "the newest file's endPhyOffset) — the finding says which stay unfindable."),
    "INDEX_BEYOND_END": _k("index entry points past the end of the log",
                           "Lookups skip it (the offset is past the log's max); after recovery new records reuse those offsets."),
    "INDEX_AFTER_CHECKPOINT": _k("index file newer than the checkpoint",
                                 "Abnormal recovery (IndexService.load with lastExitOK false) deletes it and rebuilds its keys by re-dispatch."),
    # -- checkpoint, abort, lock (StoreCheckpoint, DefaultMessageStore.load) ------------------------
    "CHECKPOINT": _k("checkpoint unreadable",
                     "StoreCheckpoint reads whatever the bytes say: abnormal recovery starts from the file its physicMsgTimestamp names, "
                     "or from the first file."),
    "CHECKPOINT_MISSING": _k("no checkpoint",
                             "StoreCheckpoint starts from zeros: abnormal recovery walks the log from its first file."),
    "CHECKPOINT_SIZE": _k("checkpoint of an unusual size",
                          "StoreCheckpoint maps 4 KiB and reads its fields; a shorter file is extended with zeros."),
    "CHECKPOINT_AHEAD": _k("checkpoint says more was flushed than the log holds",
                           "Flushed data is gone (a file deleted or truncated by hand): recovery starts from an earlier file and ends where the data ends."),
    "ABORT_PRESENT": _k("the last exit was not clean",
                        "The abort file makes start-up run abnormal recovery (CommitLog.recoverAbnormally): it walks from the checkpoint's file, "
                        "cuts what fails the checks, rebuilds queues and index from there."),
    "LOCK_HELD": _k("a process holds the store",
                    "A second broker cannot start on it (DefaultMessageStore.load takes the lock); files may change while they are read."),
    # -- delayed messages (ScheduleMessageService) -------------------------------------------------
    "DELAY_OFFSET_FILE": _k("delayOffset.json unreadable",
                            "ScheduleMessageService.load fails and the broker does not start."),
    "DELAY_OFFSET_BELOW": _k("delivered offset below a delay queue's start",
                             "Delivery resumes from the queue's start: the delayed messages between were cleaned up before delivery."),
    "DELAY_OFFSET_BEYOND": _k("delivered offset past a delay queue's end",
                              "Delivery waits until the queue reaches that offset again: new delayed messages below it are never delivered."),
    "DELAY_LEVEL_UNKNOWN": _k("offset of an unknown delay level",
                              "ScheduleMessageService ignores it: that level's queue is delivered from its start."),
    # -- timer store (TimerMessageStore) -----------------------------------------------------------
    "TIMER_STORE": _k("timer store unreadable",
                      "TimerMessageStore.load fails: the broker does not start with the timer enabled."),
    "TIMER_WHEEL": _k("timer wheel unreadable",
                      "TimerWheel maps the file as it is: slots read wrong, timers fire late, early or never."),
    "TIMER_CHECK": _k("timer checkpoint unreadable",
                      "TimerCheckpoint starts from zeros: the timer store recovers from the start of its log."),
    "TIMER_LOG_TORN": _k("timer log torn at its end",
                         "TimerMessageStore.recover truncates the timer log at the torn unit; the timers in it are enqueued again from the timer topic."),
    "TIMER_MISMATCH": _k("timer unit names the wrong record",
                         "When its slot fires the broker reads that offset and delivers (or fails to read) another message."),
    "TIMER_PAST_END": _k("timer unit points past the end of the log",
                         "When its slot fires the read fails: a pending timer message never fires."),
    "TIMER_SLOT": _k("timer wheel slot inconsistent",
                     "The slot's timers fire from what the slot says: units it does not chain are not fired."),
    "TIMER_UNCHAINED": _k("pending timer units no slot reaches",
                          "Never fired by the wheel: those timer messages are not delivered."),
    # -- compaction (CompactionStore) ----------------------------------------------------------------
    "COMPACTION_COPY": _k("compaction log record differs from the commitlog's",
                          "Consumers of the compacted topic read the compaction log's copy."),
    "COMPACTION_CQ_MISSING": _k("compaction log without its queue",
                                "CompactionStore rebuilds the queue from the compaction log on load."),
    "COMPACTION_POSITION": _k("compaction position unreadable",
                              "CompactionPositionMgr cannot load it: compaction starts over for those queues."),
    # -- DLedger (DLedgerCommitLog) -----------------------------------------------------------------
    "DLEDGER_INDEX": _k("DLedger index unit wrong",
                        "DLedger rebuilds or truncates its index on recovery from the entries: lookups by entry index follow what it rebuilds."),
    "DLEDGER_CHECKPOINT": _k("DLedger checkpoint past the entries",
                             "DLedger recovers its committed index from the entries that remain: committed entries are lost."),
    # -- parts not judged --------------------------------------------------------------------------
    "NOT_CHECKED": _k("part rmqlab does not check",
                      "Not a fault: a layout or feature rmqlab recognises but does not decode; the finding says what and why."),
}


def kind_of(name: str) -> Kind:
    """The entry of ``name``; a kind outside the catalogue (a future one) gets a title
    of its own name and no claim about the broker.

    >>> kind_of("INDEX_UNIQ_FORM").title
    "UNIQ_KEYs indexed in another writer's form"
    >>> kind_of("SOMETHING_NEW")
    Kind(title='something new', broker='')
    """
    return KINDS.get(name) or Kind(name.replace("_", " ").lower(), "")
