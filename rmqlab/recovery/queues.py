"""Each queue kind as RocketMQ's start-up leaves it, read-only: the part of
:mod:`rmqlab.recovery.recover`'s plan that belongs to the queues.

* consume queues (``ConsumeQueue.recover``) and batch queues (``BatchConsumeQueue
  .recover``): :class:`Queue`, :func:`recover_queue`; what truncation cuts
  (``truncateDirtyLogicFiles``): :func:`truncate_queue_plan`;
* ext files (``ConsumeQueueExt.recover`` / ``truncateByMaxAddress``): :func:`plan_ext`;
* the compaction store (``CompactionStore.load``): :func:`plan_compaction`.

What re-dispatch adds to them is :mod:`rmqlab.recovery.redispatch`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..config import MessageStoreConfig
from ..errors import StoreLayoutError
from ..format.consumequeue import BCQ_STORE_UNIT_SIZE, CQ_STORE_UNIT_SIZE, EXT_MAX_ADDR, EXT_UNIT_MIN_SIZE, batch_unit_is_valid, ext_offset
from ..rules import BATCH_CONSUMEQUEUE_DIR, CONSUMEQUEUE_DIR, CONSUMEQUEUE_EXT_DIR
from .model import STORE, Cut, Queue, RecoveryPlan, read_entries
from .report import RecoveryReport

def recover_queue(directory: Path, topic: str, queue_id: int, file_size: int, log: list[str], *, batch: bool = False) -> Queue:
    """Java ``ConsumeQueue.recover`` (``BatchConsumeQueue.recover`` with ``batch``):
    from the third-to-last file to the first invalid unit.  They differ in what is
    valid (a batch unit needs msgBaseOffset >= 0 and batchSize > 0 too), in what
    maxPhysicOffset is, and in what they log."""
    files = sorted((int(p.name), p) for p in directory.iterdir() if p.is_file() and p.name.isdigit() and len(p.name) == 20)
    if files and files[-1][1].stat().st_size == 0:
        files = files[:-1]  # Java MappedFileQueue.load deletes an empty last file
    q = Queue(topic, queue_id, directory, files, [], 0, 0, -1, batch=batch)
    if not files:
        return q
    unit, setting = (BCQ_STORE_UNIT_SIZE, "mapperFileSizeBatchConsumeQueue") if batch else (CQ_STORE_UNIT_SIZE, "mappedFileSizeConsumeQueue")
    if file_size % unit:
        raise StoreLayoutError(files[0][1], None, f"{setting} {file_size} is not a whole number of {unit}-byte units")
    for start, p in files:
        if p.stat().st_size != file_size:
            raise StoreLayoutError(p, None, f"queue file is {p.stat().st_size} bytes, {setting} is {file_size}: RocketMQ's load fails")
    index = max(0, len(files) - 3)
    process = files[index][0]
    rel_dir = f"{STORE}/{BATCH_CONSUMEQUEUE_DIR if batch else CONSUMEQUEUE_DIR}/{topic}/{queue_id}"
    for i in range(index, len(files)):
        start, p = files[i]
        e = read_entries(p, file_size, q.dtype)
        if batch:
            valid = batch_unit_is_valid(e["commitlog_offset"], e["size"], e["msg_base_offset"], e["batch_size"])
        else:
            valid = (e["commitlog_offset"] >= 0) & (e["size"] > 0)
        n = len(e) if valid.all() else int(np.argmin(valid))
        q.read.append((p, n))
        if not batch:
            ext = np.flatnonzero(e["tags_code"][:n] <= EXT_MAX_ADDR)
            if len(ext):
                q.max_ext_addr = int(e["tags_code"][ext[-1]])
        if n:
            last = e[n - 1]
            q.max_physic_offset = int(last["commitlog_offset"]) + (0 if batch else int(last["size"]))
        process = start + n * unit
        rel = f"{rel_dir}/{p.name}"
        if n < len(e):
            r = e[n]
            if batch:
                log.append(f"Recover current batch consume queue file over, file:{rel} offset:{int(r['commitlog_offset'])} size:{int(r['size'])} "
                           f"msgBaseOffset:{int(r['msg_base_offset'])} batchSize:{int(r['batch_size'])} mappedFileOffset:{n * unit}")
                log.append(f"Recover current batch consume queue file over:{rel} processOffset:{process}")
            else:
                log.append(f"recover current consume queue file over,  {rel} {int(r['commitlog_offset'])} {int(r['size'])} {int(r['tags_code'])}")
                log.append(f"recover current consume queue over {rel} {process}")
            break
        if i + 1 < len(files):
            log.append(f"Recover next batch consume queue file: {rel_dir}/{files[i + 1][1].name}" if batch
                       else f"recover next consume queue file, {rel_dir}/{files[i + 1][1].name}")
        else:
            log.append(f"Recover last batch consume queue file over, last mapped file:{rel}" if batch
                       else f"recover last consume queue file over, last mapped file {rel}")
    # earlier files are trusted as they are (Java does not look at them): read on demand
    q.early = [p for _, p in files[:index]]
    q.early_count = sum(file_size for _ in files[:index]) // unit
    q.file_size = file_size
    q.first_queue_offset = files[0][0] // unit
    q.end = process
    # Java MappedFileQueue.truncateDirtyFiles(processOffset): files starting after it go
    q.deleted = [p for start, p in files if start > process]
    q.files = [(s, p) for s, p in files if s <= process]
    return q


def truncate_queue_plan(q: Queue, phy_offset: int) -> Cut:
    """Java ``ConsumeQueue.truncateDirtyLogicFiles`` (``BatchConsumeQueue``'s, for a
    batch queue: the same cut, as its units below the recovered end are all valid):
    the units that go, and the byte ranges they occupy."""
    ranges: list[tuple[Path, int, int]] = []
    unit = q.unit
    e, base = q.suffix_from(phy_offset)
    offs = e["commitlog_offset"]
    n = len(e)
    # entries pointing at or past the cut; Java walks back file by file from the last
    # and stops at the first entry below it, so this is a suffix of the queue
    keep = n
    while keep > 0 and int(offs[keep - 1]) >= phy_offset:
        keep -= 1
    cut = n - keep
    if cut:
        first_byte = (base + keep) * unit
        end_byte = (base + n) * unit
        for start, p in q.files:
            a, b = max(first_byte, start), min(end_byte, start + q.file_size)
            if a < b:
                ranges.append((p, a - start, b - a))
    if not q.batch:
        return Cut(cut, ranges, cut, base + keep)
    after = int(e["msg_base_offset"][keep - 1]) + int(e["batch_size"][keep - 1]) if keep else 0
    return Cut(cut, ranges, q.messages(e[keep:]), after if cut else q.max_offset_in_queue)



def plan_compaction(plan: RecoveryPlan, cfg: MessageStoreConfig) -> None:
    """Java ``CompactionService.load`` (``enableCompaction``, on by default) →
    ``CompactionStore.load``: for each ``compactionLog/T/Q/`` with its
    ``compactionCq/T/Q/`` (a log without one is skipped), ``TopicPartitionLog.init``:
    a file of the wrong size fails the queue's load (``IOException``, caught: the queue
    is left as it is); ``SparseConsumeQueue.recover`` only positions; ``recover`` deletes
    the log files that start after the end of the last queue file's last valid unit
    (``getMaxPhyOffsetInLog``; nothing when that file has none); ``sanityCheck`` then
    wants every log file paired with a queue file of the same name and the other way
    round — else a RuntimeException fails the store's load.  Sub-folders of a
    compaction under way are not loaded."""
    from ..store.compaction import DEFAULT_COMPACTION_CQ_MAPPED_FILE_SIZE, DEFAULT_COMPACTION_MAPPED_FILE_SIZE, CompactionStore, compaction_file_sizes

    rep = plan.report
    if not cfg.extra_flag("enableCompaction", True):
        return
    log_size, cq_size = compaction_file_sizes(int(cfg.extra.get("compactionCqMappedFileSize", DEFAULT_COMPACTION_CQ_MAPPED_FILE_SIZE)),
                                              int(cfg.extra.get("compactionMappedFileSize", DEFAULT_COMPACTION_MAPPED_FILE_SIZE)))
    cs = CompactionStore(plan.root)
    for topic, qid in cs.queue_ids():
        q = cs.queue(topic, qid)
        try:
            name = f"{topic}/{qid}"
            if q.cq is None:
                rep.notes.append(f"compaction log {name} has no compactionCq/{name}/: RocketMQ skips it (\"compactionLog mismatch with compactionCq\")")
                continue
            wrong = [f"{f.name} ({f.stat().st_size} bytes, not {size})" for d, size in ((q.log.queue.directory, log_size), (q.cq.queue.directory, cq_size))
                     for f in listed_files(d)[:-1] + [x for x in listed_files(d)[-1:] if x.stat().st_size]  # MappedFileQueue.load drops an empty last file
                     if f.stat().st_size != size]
            if wrong:
                rep.notes.append(f"compaction queue {name}: {', '.join(wrong[:3])}: MappedFileQueue.load fails, and CompactionStore leaves the queue as it "
                                 "is (IOException, caught); give --config when the broker set compactionMappedFileSize / compactionCqMappedFileSize")
                continue
            files = q.cq.queue.files
            end = q.cq.max_phy_offset_in_log()
            logs = q.log.queue.files
            gone = [f.path for f in logs if end > 0 and f.file_from_offset > end]
            plan.compaction_deleted += gone
            if gone:
                rep.notes.append(f"compaction log {name}: {', '.join(p.name for p in gone)} start(s) past its queue's last unit (ends at {end}): "
                                 "RocketMQ's load deletes them (CompactionLog.TopicPartitionLog.recover)")
            kept = {f.path.name for f in logs} - {p.name for p in gone}
            cq_names = {f.path.name for f in files}
            for x in sorted(kept - cq_names):
                plan.fails_load.append(f"compaction log {name}: log file mismatch with consumeQueue file {x} (CompactionLog.sanityCheck)")
            for x in sorted(cq_names - kept):
                plan.fails_load.append(f"compaction log {name}: consumeQueue file mismatch with log file {x} (CompactionLog.sanityCheck)")
        finally:
            q.close()
    if plan.fails_load:
        rep.load_ok = False
        rep.load_problems += [p for p in plan.fails_load if "sanityCheck" in p]


def listed_files(d: Path) -> list[Path]:
    """The offset-named files of a directory, in order."""
    return sorted(p for p in d.iterdir() if p.is_file() and p.name.isdigit() and len(p.name) == 20) if d.is_dir() else []


def ext_setting(cfg: MessageStoreConfig, root: Path, rep: RecoveryReport) -> bool:
    """``enableConsumeQueueExt``: the config's, else on when the store has ext files
    (noted in the report)."""
    said = cfg.extra_flag("enableConsumeQueueExt")
    if said is not None:
        return said
    there = (root / CONSUMEQUEUE_EXT_DIR).is_dir()
    if there:
        rep.notes.append(f"{CONSUMEQUEUE_EXT_DIR}/ and no enableConsumeQueueExt in the config: taken to be on, as the broker that wrote it had it")
    return there


def plan_ext(plan: RecoveryPlan, ext_size: int) -> None:
    """Java ``ConsumeQueue.recover`` with ext files: ``ConsumeQueueExt.recover`` (no file
    deleted), then ``truncateByMaxAddress`` of the queue's last valid entry's ext address:
    the ext files after its unit are deleted (only for a queue with files: Java's recover
    does nothing for one without)."""
    for q in plan.queues.values():
        if q.batch or not q.files or q.max_ext_addr > EXT_MAX_ADDR:
            continue
        d = plan.root / CONSUMEQUEUE_EXT_DIR / q.topic / str(q.queue_id)
        files = sorted((int(p.name), p) for p in d.iterdir() if p.is_file() and p.name.isdigit() and len(p.name) == 20) if d.is_dir() else []
        real = ext_offset(q.max_ext_addr)
        holder = next((p for start, p in files if start <= real < start + ext_size), None)
        if holder is None:
            continue  # "[BUG] address ... of consume queue extend not found!": nothing truncated
        at = real - int(holder.name)
        with open(holder, "rb") as fh:
            fh.seek(at)
            head = fh.read(2)
        size = int.from_bytes(head, "big", signed=True) if len(head) == 2 else 0
        if size < EXT_UNIT_MIN_SIZE:
            continue
        q.ext_deleted = [p for start, p in files if start > real + size]
