"""``rmqlab.spark.verify(spark, store)`` — :func:`rmqlab.forensics.verify.verify_store`
as a distributed job: the same findings, for stores too big for one process.

``rmqlab verify`` reads the log once, in order, joining each window of records with the
queue and index entries that point into it.  Here the log is cut at its files, and each
task runs that same code on one part (the ``rocketmq.checks`` source below), so a rule
has one owner.  Two Spark stages, a third only where damage ends the log early:

1. **prepare**: one task per index file (header, slots, chains: which entries a
   lookup reaches, ``check_index_file``) and per group of consume queues (valid range,
   stale entries, ``prepare_queue``).  Their summaries — each queue's range and each
   index file's reached entries, packed — go to every task of stage 2.
2. **the log**: one task per commitlog file: the walk as RocketMQ's recovery walks it
   and on past damage (``walk_file``), each window of its records joined with the queue
   and index entries pointing into the file (``_join_window``: ``CQ_DANGLING``,
   ``CQ_MISMATCH``, ``QUEUE_OFFSET_GAP``, ``INDEX_DANGLING``, ``INDEX_HASH``, the keys no
   chain reaches).  Each task returns its findings (at most ``LISTED_PER_FILE`` per kind
   and file, and how many more) and, per queue, its first and last record.
3. **files after the end** (only when a file before the last ends the log): walked
   again knowing where the log ends, as ``rmqlab verify`` walks them
   (``CQ_BEYOND_END``, ``INDEX_BEYOND_END``, no torn record, nothing counted live).

On the driver, what is small and store-wide: where the log ends (from each file's
summary), queue offsets that jump between files, each queue's end against its records
(``finish_queues``: ``CQ_BEHIND``, ``CQ_MISSING_QUEUE``, ``INDEX_MISSING``), the
checkpoint, abort and lock, ``delayOffset.json``, the timer store, dead bytes and the cap
of findings listed per kind and file.  What reaches the driver is bounded by files,
queues and finding kinds, never the store's records or entries.  The store must be a
path every worker can read (local disk on ``local[N]``, a shared mount on a cluster):
the tasks memory-map its files.
"""

from __future__ import annotations

import base64
import json
import os
import zlib
from dataclasses import asdict, dataclass

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import LongType, StringType, StructField, StructType

from . import _paths

#: the findings' columns, those of ``rmqlab verify --json``
FINDING_COLUMNS = ("kind", "severity", "file", "offset", "message")
FINDINGS_SCHEMA = StructType(
    [
        StructField("kind", StringType()),
        StructField("severity", StringType()),
        StructField("file", StringType()),
        StructField("offset", LongType()),
        StructField("message", StringType()),
    ]
)
#: what the tasks give: findings (``part`` = ``finding``, ``phy`` the log position one
#: is about; ``more``: how many of a kind in a file were left out, in ``offset``) and one
#: summary per file or queue (``info``: JSON)
CHECKS_SCHEMA = StructType(
    [StructField("part", StringType())]
    + FINDINGS_SCHEMA.fields
    + [StructField("phy", LongType()), StructField("info", StringType())]
)
QUEUES_PER_TASK = 256


# -- the store's config, as the tasks must read it --------------------------------------------
def config_option(config) -> str:
    """A :class:`~rmqlab.config.MessageStoreConfig` (or None: infer from the files) as
    the string an option carries to the tasks."""
    if config is None:
        return ""
    d = asdict(config)
    d.pop("extra", None)
    return json.dumps(d)


def config_from_option(text: str | None):
    from ..config import MessageStoreConfig

    return MessageStoreConfig.from_mapping(json.loads(text)) if text else None


def _verifier(options):
    from ..forensics.verify import _Verifier

    # what the driver's recovery plan gave (rmqlab.forensics.verify.judged_by)
    judged = json.loads(options.get("judgedby") or '{"log_end": null}')
    return _Verifier(options["path"], config_from_option(options.get("storeconfig")), **judged)




def pack(obj) -> str:
    """What stage 1 hands every task of stage 2, as an option string (JSON, deflated)."""
    return base64.b64encode(zlib.compress(json.dumps(obj).encode(), 6)).decode()


def unpack(text: str):
    return json.loads(zlib.decompress(base64.b64decode(text)))


# -- the tasks ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Unit(InputPartition):
    """One commitlog file (``log``), one index file (``index``) or some consume queues
    (``queues``: ``(topic, queue id)`` pairs)."""

    part: str
    index: int = -1
    queues: tuple = ()


class ChecksDataSource(DataSource):
    """``rocketmq.checks``: verify's checks of one part of the store per task (see the
    module docstring).  Options: ``path`` (a store root), ``storeConfig`` (JSON, from
    :func:`config_option`), ``stage`` (``prepare``: index files and queues; ``log``:
    commitlog files, with ``prepared`` from :func:`pack`, and optionally ``files``,
    their numbers, and ``end``, where the log ends)."""

    @classmethod
    def name(cls) -> str:
        return "rocketmq.checks"

    def schema(self):
        return CHECKS_SCHEMA

    def reader(self, schema):
        return ChecksReader(_paths.lower_keys(self.options))


class ChecksReader(DataSourceReader):
    def __init__(self, options: dict):
        self.options = options

    def partitions(self):
        v = _verifier(self.options)
        try:
            store = v.store
            if self.options.get("stage") == "log":
                chosen = self.options.get("files")
                numbers = [int(i) for i in chosen.split(",")] if chosen else range(len(store.commitlog.queue.files))
                units = [Unit("log", i) for i in numbers]
            else:
                units = [Unit("index", i) for i in range(len(store.index.files))]
                lay = store.layout
                qids = [(q.topic, q.queue_id) for q in store.queue_ids() if not lay.apart_from_join(q.topic)]
                units += [Unit("queues", queues=tuple(qids[i : i + QUEUES_PER_TASK])) for i in range(0, len(qids), QUEUES_PER_TASK)]
        finally:
            v._worker.shutdown(wait=False)
            v.store.close()
        return units or [Unit("none")]

    def read(self, unit: Unit):
        v = _verifier(self.options)
        stop = None
        try:
            if unit.part == "log":
                end = self.options.get("end")
                rows = _check_log_file(v, unit.index, unpack(self.options["prepared"]), int(end) if end else None)
                stop = v.walk_end if v.stopped else None
            elif unit.part == "index":
                rows = _check_index_file(v.unit(), unit.index)
            elif unit.part == "queues":
                rows = _prepare_queues(v.unit(), unit.queues)
            else:
                rows = []
        finally:
            v._worker.shutdown(wait=True)
            v.store.close()
        yield from rows
        yield from _capped(v.raw or [], stop, f"{unit.part}:{unit.index}")


def _summary(part: str, file: str, **info) -> tuple:
    return (part, None, None, file, None, None, None, json.dumps(info))


def _rank(item) -> tuple:
    """The order findings of one kind and file are listed in: by offset, then by the
    log position they are about (none first)."""
    f, phy = item
    return (f.offset is not None, f.offset or 0, phy is not None, phy or 0)


def _capped(raw: list, stop: int | None, task: str):
    """A task's findings, at most ``LISTED_PER_FILE`` per kind and file (the first by
    :func:`_rank`: the first over all tasks are among them) and a ``more`` row with how
    many were left; ``info`` names the task.  Those about log positions at or past
    where this task's walk stopped are kept apart (``info`` ends in `` past``): if that
    is the end of the log and what follows is dead bytes, they are dropped, counted
    ones included."""
    from collections import defaultdict

    from ..forensics.verify import LISTED_PER_FILE

    groups = defaultdict(list)
    for f, phy in raw:
        groups[(f.kind, f.file, phy is not None and stop is not None and phy >= stop)].append((f, phy))
    for (kind, file, past), items in groups.items():
        items.sort(key=_rank)
        tag = f"{task} past" if past else task
        for f, phy in items[:LISTED_PER_FILE]:
            yield ("finding", f.kind, f.severity, f.file, f.offset, f.message, phy, tag)
        if len(items) > LISTED_PER_FILE:
            yield ("more", kind, items[0][0].severity, file, len(items) - LISTED_PER_FILE, None, None, tag)


def _check_index_file(v, index: int) -> list:
    """Stage 1: an index file on its own; which entries a lookup reaches, packed."""
    f = v.store.index.files[index]
    ix = v.check_index_file(f)
    reached = base64.b64encode(zlib.compress(ix.reached.tobytes(), 6)).decode()
    return [_summary("index", str(f.path), index=index, count=ix.count, sorted=ix.order is None, reached=reached, end_phy=int(f.header.end_phy_offset))]


def _prepare_queues(v, queues) -> list:
    """Stage 1: consume queues on their own; each one's valid range and, per file,
    whether its commitlog offsets ascend (what the joins need to find the entries
    pointing into a part of the log without reading the rest)."""
    from ..format.consumequeue import EXT_MAX_ADDR
    from ..store.consume_queue import ConsumeQueue
    from ..store.reader import QueueId

    rows = []
    min_off = v.store.commitlog.min_offset
    for topic, qid in queues:
        Q = v.prepare_queue(QueueId(topic, qid), min_off)
        if Q is None:
            continue
        # the entries as the files hold them (no ext address to resolve): stage 2 maps them again
        plain = type(Q.cq) is ConsumeQueue and not any(bool((e["tags_code"] <= EXT_MAX_ADDR).any()) for _, e in Q.cq.parts(Q.lo, Q.hi))
        files = [(f.file_from_offset, len(f.buf), str(f.path)) for f in Q.cq.queue.files]
        # empty: no unit at all, so prepare_queue gave it no end (files with an empty valid range have one)
        rows.append(_summary("queue", str(Q.cq.directory), topic=topic, queue_id=qid, lo=Q.lo, hi=Q.hi, files=files, empty=Q.key not in v.queue_end,
                             plain=plain, parts=[(q0, asc) for q0, _, asc in Q.parts]))
    return rows


def _check_log_file(v, index: int, prepared: dict, end: int | None) -> list:
    """Stage 2 (and 3): one commitlog file walked, its records joined with the entries
    of every queue and index file that point into it — ``rmqlab verify``'s own walk and
    window joins, on the part of the log from this file's first byte to the next's
    (the first part from the start, the last to the end).  ``end``: where the log
    ends, when the file comes after it.  Returns the file's summary; findings stay in
    ``v.raw``."""
    import numpy as np

    from ..files.extent import nonzero_extent
    from ..forensics.verify import _NO_END, _Index, _Queue
    from ..scan import kernels
    from ..store.reader import QueueId

    kernels.set_threads(1)
    v.raw = []  # findings kept whole, capped when the task ends
    files = v.store.commitlog.queue.files
    f = files[index]
    v.window_lo = f.file_from_offset if index else -_NO_END
    v.window_hi = files[index + 1].file_from_offset if index + 1 < len(files) else _NO_END
    min_off = v.store.commitlog.min_offset
    for q in prepared["queues"]:
        qid = QueueId(q["topic"], q["queue_id"])
        if not q["plain"]:  # ext addresses resolved as stage 1 resolved them (its findings are stage 1's)
            n = len(v.raw)
            v.prepare_queue(qid, min_off)
            del v.raw[n:]
            continue
        cq = v.store.consume_queue(qid.topic, qid.queue_id)
        key = v._key_of(qid.topic, qid.queue_id)
        parts = [(q0, e, asc) for (q0, e), (_, asc) in zip(cq.parts(q["lo"], q["hi"]), q["parts"])] if q["parts"] else []
        v.queues.append(_Queue(qid, cq, key, q["lo"], q["hi"], parts))
        if not q["empty"]:
            v.queue_end[key] = q["hi"]
    for ix in prepared["indexes"]:
        fi = v.store.index.files[ix["index"]]
        reached = np.frombuffer(zlib.decompress(base64.b64decode(ix["reached"])), np.uint8)
        order = None
        if not ix["sorted"]:
            order = np.argsort(fi.entries()["phy_offset"][1 : ix["count"]].astype(np.int64), kind="stable") + 1
        v.indexes.append(_Index(fi, ix["count"], reached, order))
    v.index_end = prepared["index_end"]
    if end is not None:  # a file after the end of the log: walked as rmqlab verify walks it once the log has ended
        v.stopped, v.walk_end = True, end
    all_zero = nonzero_extent(f.path, 0) is None
    v.walk_file(f, index == len(files) - 1)
    v._flush_window(final=True)
    v._wait()
    queues = []
    for key, (last_q, last_p) in v.queue_prev.items():
        topic, qid = v._queue_of(key)
        first = v.queue_first.get(key, (None, None))
        live = v.queue_last.get(key, (None, None))
        queues.append((topic, qid, *first, last_q, last_p, *live, v.first_missing.get(key)))
    for key in v.first_missing.keys() - v.queue_prev.keys():
        queues.append((*v._queue_of(key), None, None, None, None, None, None, v.first_missing[key]))
    return [_summary("log", str(f.path), index=index, base=f.file_from_offset, stopped=v.stopped, stop_at=v.walk_end if v.stopped else None,
                     by_damage=v.stopped_by_damage, end=v.walk_end if not v.stopped and v.n_records else None, all_zero=all_zero,
                     queues=queues, missing=v.missing, max_store_ts=v.max_store_ts)]


class _QueueFiles:
    """A consume queue the driver names findings in (``where``) without reading it:
    opened when first asked."""

    def __init__(self, store, topic: str, queue_id: int):
        self._open = lambda: store.consume_queue(topic, queue_id)
        self._cq = None

    def __getattr__(self, name):
        if self._cq is None:
            self._cq = self._open()
        return getattr(self._cq, name)


# -- the job --------------------------------------------------------------------------------------
def verify(spark, path, *, config=None):
    """The findings of ``rmqlab verify --json PATH`` as a DataFrame (columns ``kind``,
    ``severity``, ``file``, ``offset``, ``message``), computed by Spark::

        import rmqlab.spark
        findings = rmqlab.spark.verify(spark, "/mnt/captures/broker-a/store")
        findings.where("severity = 'error'").show(truncate=False)
        findings.write.parquet("/mnt/reports/broker-a-verify")

    ``path``: a store root every worker can read (local, or a shared mount: the tasks
    memory-map files, so not ``s3://``).  ``config``: a
    :class:`~rmqlab.config.MessageStoreConfig` when the broker's settings differ from
    what the files say (as ``rmqlab verify --config``).  One task per commitlog file,
    index file and group of queues (see the module docstring).  Nothing is modified.

    The findings are those of :func:`rmqlab.forensics.verify.verify_store`, completed
    as the ``verify`` command completes them (:mod:`rmqlab.forensics.consequences`); they
    are bounded (at most ``LISTED_PER_FILE`` per kind and file, then how many more) and
    the DataFrame holds them, so using it twice does not walk the store twice.
    """
    from ..forensics.verify import _Verifier, judged_by, next_start_report

    path = str(path)
    if "://" in path and not path.startswith("file://"):
        raise _paths.OptionError(f"spark.verify: {path}: the per-file checks memory-map the store's files; give a path every worker can read "
                                 "(a local disk or a shared mount), not a URI")
    root = os.path.abspath(path[len("file://") :] if path.startswith("file://") else path)
    spark.dataSource.register(ChecksDataSource)
    # the next start's dry run, once on the driver: every task judges against its end of the log
    recovery = next_start_report(root, config)
    judged = judged_by(recovery)
    opts = {"path": root, "storeConfig": config_option(config), "judgedBy": json.dumps(judged)}
    drv = _Verifier(root, config, **judged).unit()
    drv.recovery = recovery
    try:
        if drv.store.layout.rocksdb_consume_queue:
            raise _paths.OptionError(f"spark.verify: {root}: the consume queues are (also) in RocksDB (storeType=defaultRocksDB or rocksdbCQDoubleWriteEnable); "
                                     "the distributed checks read consume-queue files only: run rmqlab verify (one process), which reads RocksDB")
        return _Job(spark, drv, opts, config).run()
    finally:
        drv.store.close()


class _Job:
    """One distributed verify: the driver's :class:`_Verifier` (``drv``, in unit mode:
    its findings are collected whole in ``drv.raw``) holds what is store-wide."""

    def __init__(self, spark, drv, options: dict, config):
        self.spark, self.drv, self.options, self.config = spark, drv, options, config
        self.root = options["path"]
        self.found: list[tuple] = []  # the tasks' finding and more rows

    def stage(self, **extra) -> list[tuple]:
        """One Spark stage of ``rocketmq.checks``: its findings kept, its summaries returned."""
        from .worker_errors import worker_errors

        with worker_errors():
            rows = self.spark.read.format("rocketmq.checks").options(**self.options, **{k: str(v) for k, v in extra.items()}).load().collect()
        out = []
        for r in rows:
            (self.found if r.part in ("finding", "more") else out).append(tuple(r))
        return out

    def run(self):
        drv = self.drv
        if not drv.check_recognised():
            return self.finish()
        drv.check_layout()
        drv.index_problems()
        # stage 1: index files and queues on their own
        summaries = [(r[0], r[3], json.loads(r[7])) for r in self.stage(stage="prepare")]
        indexes = sorted((i for p, _, i in summaries if p == "index"), key=lambda i: i["index"])
        queues = sorted((i for p, _, i in summaries if p == "queue"), key=lambda i: (i["topic"], i["queue_id"]))
        index_end = indexes[-1]["end_phy"] if indexes else 0
        prepared = pack({"queues": queues, "indexes": indexes, "index_end": index_end})
        # stage 2: the log, a file per task
        logs = {i["index"]: i for _, _, i in (self.parse(s) for s in self.stage(stage="log", prepared=prepared))}
        late = self.end_of_log([logs[k] for k in sorted(logs)])
        if late:  # stage 3: files after the end of the log, walked again knowing it
            tasks = {f"log:{i}" for i in late}
            self.found = [r for r in self.found if r[7].split()[0] not in tasks]
            for _, _, i in (self.parse(s) for s in self.stage(stage="log", prepared=prepared, files=",".join(map(str, late)), end=drv.walk_end)):
                logs[i["index"]] = i
        self.merge([logs[k] for k in sorted(logs)], queues, index_end)
        drv.finish_queues()
        drv.check_state()
        drv.check_batch_queues()  # batch queue units against their records: reads by position, on the driver
        drv.check_lmq_queues()  # LMQ entries against their parent records: random reads, on the driver
        from ..store.dledger import DLedgerCommitLog

        if isinstance(drv.store.commitlog, DLedgerCommitLog):
            # DLedger's index and checkpoint against the entries up to the end of the log:
            # entry headers only, read here (cheap next to the records)
            for f, w in drv.store.commitlog.entry_walks():
                drv.check_dledger_file(f.file_from_offset, w)
            drv.check_dledger()
        drv.check_delay_offsets()
        drv.check_timers()
        return self.finish()

    @staticmethod
    def parse(row: tuple) -> tuple:
        return row[0], row[3], json.loads(row[7])

    # -- where the log ends ---------------------------------------------------------------------
    def end_of_log(self, logs: list[dict]) -> list[int]:
        """Where RocketMQ's walk stops, from each file's summary in offset order (the
        first file whose walk stopped, else the end of the last record); the files
        after it that hold anything (pre-allocated ones noted as the walk notes them)."""
        drv = self.drv
        files = drv.store.commitlog.queue.files
        late = []
        for s in logs:
            if drv.stopped:
                if s["all_zero"]:
                    drv.preallocated(files[s["index"]])
                else:
                    late.append(s["index"])
                continue
            if s["end"] is not None:
                drv.walk_end = s["end"]
            if s["stopped"]:
                drv._stop(s["stop_at"], by_damage=s["by_damage"])
        drv._stop(drv.walk_end)
        return late

    # -- the parts put together --------------------------------------------------------------------
    def merge(self, logs: list[dict], queues: list[dict], index_end: int) -> None:
        """The driver's verifier given what one pass over the whole log would have left
        it: each queue's range, last record before the end of the log and first record
        past its end; the keys no chain reaches; and the queue offsets that jump where
        one file's records of a queue meet the next's (QUEUE_OFFSET_GAP, as
        ``_queue_offsets`` says it within a file)."""
        from ..forensics.verify import ERROR, _Queue
        from ..store.reader import QueueId

        drv = self.drv
        for q in queues:
            key = drv._key_of(q["topic"], q["queue_id"])
            drv.queues.append(_Queue(QueueId(q["topic"], q["queue_id"]), _QueueFiles(drv.store, q["topic"], q["queue_id"]), key, q["lo"], q["hi"], []))
            if not q["empty"]:
                drv.queue_end[key] = q["hi"]
        drv.index_end = index_end
        prev: dict[int, tuple[int, int]] = {}
        for s in logs:
            for topic, qid, first_q, first_p, last_q, last_p, live_q, live_p, missing_at in s["queues"]:
                key = drv._key_of(topic, qid)
                before = prev.get(key)
                if first_q is not None and before is not None and first_q != before[0] + 1:
                    file, fpos = drv._where(first_p)
                    drv.add("QUEUE_OFFSET_GAP", ERROR, file, fpos, f"{topic}/{qid} queue offset {first_q} follows {before[0]} (record at {before[1]})", phy=first_p)
                if last_q is not None:
                    prev[key] = (last_q, last_p)
                cur = drv.queue_last.get(key)
                if live_q is not None and (cur is None or live_q > cur[0]):
                    drv.queue_last[key] = (live_q, live_p)
                if missing_at is not None and key not in drv.first_missing:
                    drv.first_missing[key] = missing_at
            for name, (count, first) in s["missing"].items():
                slot = drv.missing[name]
                slot[0] += count
                slot[1].extend(first[: 5 - len(slot[1])])
            drv.max_store_ts = max(drv.max_store_ts, s["max_store_ts"])

    # -- the findings --------------------------------------------------------------------------------
    def finish(self):
        """Everything found, as ``rmqlab verify --json`` lists it: dead bytes, the cap
        per kind and file, what recovery makes of CQ_BEHIND and INDEX_MISSING; a
        DataFrame of them (small: bounded by files and kinds)."""
        from collections import defaultdict

        from ..forensics.verify import LISTED_PER_FILE, Finding
        from ..forensics.consequences import complete_findings

        drv = self.drv
        later = []
        rows = []  # (finding row, phy, past, more)
        for f, phy in drv.raw:  # what recovery completes is finished here, on the driver
            if f.kind in ("CQ_BEHIND", "INDEX_MISSING"):
                later.append(f)
            else:
                rows.append(((f.kind, f.severity, f.file, f.offset, f.message), phy, False, 0))
        for part, kind, severity, file, offset, message, phy, tag in self.found:
            past = tag.endswith(" past")
            if part == "more":
                rows.append(((kind, severity, file, None, None), None, past, offset))
            else:
                rows.append(((kind, severity, file, offset, message), phy, past, 0))
        end = drv.walk_end
        if drv.stopped_by_damage and any(past or (phy is not None and phy >= end) for _, phy, past, _ in rows) and drv.store.dead_past(end):
            dead = drv.dead_bytes_finding()
            rows = [r for r in rows if not r[2] and (r[1] is None or r[1] < end)]
            rows.append(((dead.kind, dead.severity, dead.file, dead.offset, dead.message), None, False, 0))
        groups = defaultdict(lambda: ([], [0, None]))
        for row, phy, _, more in rows:
            kept, extra = groups[(row[0], row[2])]
            if more:
                extra[0] += more
                extra[1] = extra[1] or row[1]
            else:
                kept.append((row, phy))
        out = []
        for (kind, file), (kept, (more, severity)) in groups.items():
            kept.sort(key=lambda x: (x[0][3] is not None, x[0][3] or 0, x[1] is not None, x[1] or 0))
            out.extend(row for row, _ in kept[:LISTED_PER_FILE])
            more += max(0, len(kept) - LISTED_PER_FILE)
            if more:
                severity = kept[LISTED_PER_FILE][0][1] if len(kept) > LISTED_PER_FILE else severity
                out.append((kind, severity, file, None, f"and {more} more {kind} finding(s) in this file (the first {LISTED_PER_FILE} are listed)"))
        completed = [Finding(f.kind, f.severity, f.file, f.offset, f.message) for f in later]
        complete_findings(completed, self.root, self.config, recovery=drv.recovery)
        out.extend((f.kind, f.severity, f.file, f.offset, f.message) for f in completed)
        if drv.recovery is not None:  # the finding that ends the log is an error, as verify says it
            from ..forensics.verify import cause_first

            found = [Finding(*r) for r in out]
            cause_first(found, drv.recovery)
            out = [(f.kind, f.severity, f.file, f.offset, f.message) for f in found]
        out.sort(key=lambda r: (r[2], r[3] is not None, r[3] or 0, r[0]))
        return self.spark.createDataFrame(out, FINDINGS_SCHEMA)
