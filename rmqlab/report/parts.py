"""The parts of a store's report, each computed from what the layers below already
know: the store's summary (``rmqlab info``), ``verify``'s findings, recovery's dry run,
the map and the timeline (counted on verify's pass over the log), the consumer offsets,
the files.

Each ``*_part`` function returns plain JSON-ready data.  :func:`guarded` runs one and
turns any failure into the stated reason the part could not be read, so a store damaged
where a part looks never costs the report its other parts.
"""

from __future__ import annotations

import hashlib
import os
import stat
import traceback
from collections import Counter
from pathlib import Path

from ..errors import RmqlabError
from ..forensics.kinds import kind_of

#: the report's sections in the order it shows them: (key, heading)
SECTIONS = (
    ("verdict", "Verdict"),
    ("timeline", "Timeline"),
    ("map", "The store map"),
    ("findings", "Findings"),
    ("recovery", "Recovery"),
    ("consumers", "Consumers"),
    ("evidence", "Evidence"),
)

#: findings listed per (kind, severity) group; the rest are counted
LISTED_PER_KIND = 12
#: bytes of the hex excerpt shown at a finding's offset
EXCERPT_BYTES = 32
#: rows of the consumer table listed at most (those with a loss or a lag first)
LISTED_QUEUES = 200
#: the bytes read and hashed at a time for a file's digest: 1 MiB stays in the CPU's cache
#: between the read and the hash (32 MiB at a time took 1.7x as long); hashing the file's
#: mapping in place was slower in a report of 10 GiB (89.8 s against 69.7 s), its page
#: faults beside verify's
DIGEST_CHUNK = 1 << 20


class Unavailable(dict):
    """A part that could not be read: ``{"unavailable": "could not be read because …"}``."""

    def __init__(self, why: str):
        super().__init__(unavailable=f"could not be read because {why}")


def guarded(fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, or :class:`Unavailable` with the reason it failed:
    rmqlab's own errors and OS errors in their words, anything else with its type and
    where it was raised (a bug of rmqlab's, which the report says rather than hides)."""
    try:
        return fn(*args, **kwargs)
    except (RmqlabError, OSError, ValueError) as err:
        return Unavailable(str(err) or type(err).__name__)
    except Exception as err:  # noqa: BLE001 - the report must stand whatever one part meets
        where = traceback.extract_tb(err.__traceback__)[-1]
        return Unavailable(f"of an error in rmqlab ({type(err).__name__}: {err}, at {Path(where.filename).name}:{where.lineno}); please report it")


def relative(root: Path, path) -> str:
    """``path`` relative to the store's root when it is inside it."""
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except (ValueError, OSError):
        return str(path)


# -- timeline -------------------------------------------------------------------------------------
def timeline_part(timeline, summary: dict) -> dict:
    """The records' timeline, with the checkpoint's flushed times, the crash window (what
    was stored after the last flush the checkpoint records) and clean-up's deletions."""
    d = timeline.to_dict()
    cp = summary.get("checkpoint") or {}
    d["checkpoint"] = {k: v for k, v in cp.items() if isinstance(v, int)}  # the flushed times, then the positions the release keeps
    after = sum(d["after_flush"].values())
    #: a crash's window: what was stored after the last flush the checkpoint records (with
    #: the abort file there; after a clean exit everything was flushed)
    d["crash_window"] = None
    if summary.get("abort") is not None and d["flushed_store_timestamp"]:
        d["crash_window"] = {"from": d["flushed_store_timestamp"], "to": max(d["last_store_timestamp"] or 0, d["flushed_store_timestamp"]),
                             "records": after, "per_topic": d["after_flush"]}
    files = summary.get("commitlog_files") or []
    size = summary.get("config", {}).get("mapped_file_size_commit_log") or 0
    first = summary.get("commitlog_min_offset") or 0
    d["cleaned_up"] = None
    if files and first > 0:
        d["cleaned_up"] = {"below_offset": first, "files": first // size if size else None}
    return d


# -- findings --------------------------------------------------------------------------------------
def excerpt(path, offset: int | None) -> str | None:
    """Up to :data:`EXCERPT_BYTES` bytes of ``path`` at ``offset``, as hex (None without
    an offset or when the file cannot be read there)."""
    if offset is None or offset < 0:
        return None
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read(EXCERPT_BYTES)
    except OSError:
        return None
    return " ".join(f"{b:02x}" for b in data) if data else None


def findings_part(root: Path, report) -> dict:
    """verify's findings grouped by kind and severity (errors first), each group with
    what RocketMQ does with such bytes and its first findings with a hex excerpt."""
    order = {"error": 0, "warning": 1, "info": 2}
    groups: dict[tuple[str, str], list] = {}
    for f in report.findings:
        groups.setdefault((f.kind, f.severity), []).append(f)
    out = []
    for (kind, severity), items in sorted(groups.items(), key=lambda kv: (order.get(kv[0][1], 3), -len(kv[1]), kv[0][0])):
        k = kind_of(kind)
        out.append({
            "kind": kind, "severity": severity, "count": len(items), "title": k.title, "broker": k.broker,
            "listed": [{"file": relative(root, f.file), "offset": f.offset, "message": f.message, "hex": excerpt(f.file, f.offset)} for f in items[:LISTED_PER_KIND]],
        })
    counts = Counter(f.severity for f in report.findings)
    return {"ok": report.ok, "counts": {s: counts.get(s, 0) for s in ("error", "warning", "info")}, "stats": report.stats, "groups": out}


# -- recovery --------------------------------------------------------------------------------------
def _rebuilt(rep) -> dict:
    """What a recovery report says its start-up rebuilds: queues changed, index files."""
    return {"queues_changed": len(rep.changed_queues), "index": [{"file": Path(i.file).name, "action": i.action} for i in rep.index],
            "lost_per_topic": dict(Counter(r.topic for r in rep.lost_records).most_common())}


def recovery_part(root: Path, rep, others: dict | None = None) -> dict:
    """What start-up recovery would do, for the release the store shows and each other
    candidate whose recovery would differ (``others``: release → that release's own dry
    run, for what it rebuilds), and the command that applies it to a copy."""
    own = _rebuilt(rep)
    copy = f"{root}.recovered"
    base = f"rmqlab recover {root} --out {copy}"
    candidates = [{"release": rep.release, "start_file": rep.start_file, "start_reason": rep.start_reason, "commitlog_end": rep.commitlog_end,
                   "records_lost": rep.records_lost, "records_scanned": rep.records_scanned, "rule": rep.rule, **own,
                   "command": base + (f" --rocketmq-version {rep.release}" if rep.release_outcomes else "")}]
    for o in rep.release_outcomes:
        first = o.release.split(" and ")[0]
        other = (others or {}).get(first)
        candidates.append({"release": o.release, "start_file": o.start_file, "start_reason": o.start_reason, "commitlog_end": o.commitlog_end,
                           "records_lost": o.records_lost, "records_scanned": o.records_scanned, "rule": o.rule,
                           **(_rebuilt(other) if other is not None else {"queues_changed": None, "index": None, "lost_per_topic": None}),
                           "command": f"{base} --rocketmq-version {first}"})
    changed = rep.changed_queues
    return {
        "mode": rep.mode, "mode_reason": rep.mode_reason, "release": rep.release, "release_reading": rep.release_reading,
        "load_ok": rep.load_ok, "load_problems": rep.load_problems, "start_hangs": rep.start_hangs, "not_modelled": rep.not_modelled,
        "candidates": candidates, "releases_differ": bool(rep.release_outcomes),
        "commitlog_end": rep.commitlog_end, "commitlog_end_before": rep.commitlog_end_before,
        "stop": None if rep.stop is None else {"file": relative(root, rep.stop.file), "file_offset": rep.stop.file_offset, "physical_offset": rep.stop.physical_offset,
                                               "kind": rep.stop.kind, "message": rep.stop.message, "zero_tail": rep.stop.zero_tail},
        "records_lost": rep.records_lost, "records_lost_readable": rep.records_lost_readable, "lost_per_topic": own["lost_per_topic"],
        "consequence": rep.consequence, "outcome": rep.outcome(), "records_missing": rep.records_missing, "missing_files": rep.missing_files,
        "cause": None if rep.cause is None else {**rep.cause.to_dict(), "file": relative(root, rep.cause.file)},
        "cut_bytes": rep.cut_bytes, "deleted_commitlog_files": rep.deleted_commitlog_files,
        "queues_changed": len(changed),
        "queues": [{"queue": q.queue, "cut_entries": q.cut_entries, "added_entries": q.added_entries, "created": q.created, "unmakeable": q.unmakeable, "deleted_files": q.deleted_files,
                    "max_offset_before": q.max_offset_before, "max_offset_after": q.max_offset_after} for q in changed[:LISTED_QUEUES]],
        "queues_short": [{"queue": q.queue, "missing": q.missing, "redispatch_from": q.redispatch_from} for q in rep.queues_short],
        "index": [{"file": relative(root, i.file), "action": i.action, "entries_added": i.entries_added} for i in rep.index],
        "index_unfindable": rep.index_unfindable, "timers_cut": len(rep.timers_cut),
        "notes": rep.notes, "text": rep.to_text(),
    }


# -- consumers -------------------------------------------------------------------------------------
def consumers_part(root: Path, config, recovery) -> dict:
    """Each group's committed offsets and lag at the capture, and where recovery's cut
    meets what they committed (``recovery``: the dry-run report, or None)."""
    from ..lookup import consumer_progress
    from ..store.metadata import read_consumer_offsets
    from ..store.reader import StoreReader

    offsets = read_consumer_offsets(root)
    if offsets.source is None:
        return {"source": None, "notes": offsets.notes, "groups": [], "rows": [], "rows_left_out": 0, "losses": []}
    end = None if recovery is None or not recovery.modelled else recovery.commitlog_end  # the queues as the next start leaves them
    cut = True if recovery is None or not recovery.modelled else recovery.queues_truncated
    with StoreReader(root, config, strict=False, log_end=end, queues_truncated=cut) as store:
        rows = consumer_progress(store, offsets)
    losses = [] if recovery is None else [
        {"group": g.group, "queue": g.queue, "committed_offset": g.committed_offset, "cut_from": g.cut_from, "cut_to": g.cut_to,
         "unconsumed_lost": g.unconsumed_lost, "new_max_offset": g.new_max_offset, "committed_past_end": g.committed_past_end}
        for g in recovery.group_losses]
    groups: dict[str, dict] = {}

    def group(name: str) -> dict:
        return groups.setdefault(name, {"group": name, "queues": 0, "lag": 0, "committed_past_end": 0, "past_end_after_recovery": 0, "lost_unconsumed": 0})

    for r in rows:
        g = group(r.group)
        g["queues"] += 1
        g["lag"] += max(r.lag, 0)
        g["committed_past_end"] += r.lag < 0
    for loss in losses:
        g = group(loss["group"])
        g["lost_unconsumed"] += loss["unconsumed_lost"]
        g["past_end_after_recovery"] += loss["committed_past_end"]
    touched = {(loss["group"], loss["queue"]) for loss in losses}
    ranked = sorted(rows, key=lambda r: ((r.group, f"{r.topic}/{r.queue_id}") not in touched, r.lag >= 0 and not r.note, -abs(r.lag), r.group, r.topic, r.queue_id))
    return {"source": relative(root, offsets.source), "notes": offsets.notes, "groups": list(groups.values()),
            "rows": [r.to_dict() for r in ranked[:LISTED_QUEUES]], "rows_left_out": max(0, len(rows) - LISTED_QUEUES), "losses": losses}


# -- evidence --------------------------------------------------------------------------------------
def store_files(root: Path) -> list[Path]:
    """Every file under ``root``, in name order (symbolic links not followed)."""
    out = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        out += [Path(d) / f for f in sorted(files)]
    return out


def digest(path: Path) -> str:
    """The SHA-256 of a regular file, read :data:`DIGEST_CHUNK` bytes at a time into one
    buffer; a sparse file's holes (never written: zeros, RocketMQ's pre-allocated file
    past its last record) are hashed as the zeros they read as, without reading them."""
    from ..files.extent import data_regions

    h = hashlib.sha256()
    buf = memoryview(bytearray(DIGEST_CHUNK))
    with open(path, "rb", buffering=0) as fh:
        size = os.fstat(fh.fileno()).st_size
        at = 0
        for a, b in data_regions(fh.fileno(), 0, size) + [(size, None)]:
            _hash_zeros(h, a - at)
            fh.seek(a)
            while b is None or a < b:  # past the size taken: what a writer added since
                n = fh.readinto(buf if b is None else buf[: min(DIGEST_CHUNK, b - a)])
                if not n:
                    return h.hexdigest()  # the end of the file (sooner than said: it shrank)
                h.update(buf[:n])
                a += n
            at = b
    return h.hexdigest()


def _hash_zeros(h, n: int) -> None:
    zeros = memoryview(bytes(min(n, DIGEST_CHUNK)))
    while n > 0:
        h.update(zeros[: min(n, len(zeros))])
        n -= len(zeros)


def evidence_part(root: Path, *, digests: dict | None = None, progress=None) -> dict:
    """The store's files with their sizes and SHA-256 digests (``digests``: path
    relative to the root → digest, computed elsewhere, as Spark's tasks do)."""
    files, done = [], 0
    for p in store_files(root):
        rel = relative(root, p)
        try:
            st = p.lstat()
            size = st.st_size
            if digests is None and not stat.S_ISREG(st.st_mode) and not stat.S_ISLNK(st.st_mode):  # a FIFO's open would wait for a writer
                files.append({"path": rel, "size": size, "sha256": None, "error": "not a regular file: not read"})
            else:
                sha = digests.get(rel) if digests is not None else (None if stat.S_ISLNK(st.st_mode) else digest(p))
                files.append({"path": rel, "size": size, "sha256": sha})
        except OSError as err:
            files.append({"path": rel, "size": None, "sha256": None, "error": str(err)})
        done += files[-1]["size"] or 0
        if progress is not None:
            progress.update(done, len(files))
    return {"files": files, "bytes": sum(f["size"] or 0 for f in files)}


# -- verdict ---------------------------------------------------------------------------------------
def verdict_part(summary: dict, findings: dict, recovery: dict, consumers: dict) -> dict:
    """The report's first paragraph and the facts it states: what the next start means
    for the store (the consequence), then why (the cause of the cut, its file and offset,
    what the records it costs were and whether their producers were told they were
    stored), then the rest.  The colour follows the consequence (``level``)."""
    from ..recovery.cause import CLEAN, DISPATCH_STOPS, DOES_NOT_START, NOT_JUDGED, RECORDS_LOST, RECOVERS_WITHOUT_LOSS
    from ..store.release import ReleaseReading

    facts: dict = {}
    words: list[str] = []
    ok = findings.get("ok") if "unavailable" not in findings else None
    counts = findings.get("counts", {})
    facts["errors"], facts["warnings"] = counts.get("error"), counts.get("warning")
    facts["clean_exit"] = None if "unavailable" in summary else summary.get("abort") is None
    # a store whose start-up rmqlab does not model (DLedger, RocksDB parts): no plan, so
    # nothing is said of what recovery cuts
    planned = "unavailable" not in recovery and recovery["mode"] != "not modelled"
    lost = recovery["records_lost"] if planned else None
    facts["records_cut"], facts["cut_per_topic"] = lost, ({} if lost is None else recovery["lost_per_topic"])
    facts["commitlog_end"] = recovery["commitlog_end"] if planned else None
    facts["cause"] = recovery.get("cause") if planned else None
    facts["consequence"] = recovery.get("consequence", NOT_JUDGED) if planned else NOT_JUDGED
    facts["writer"] = ReleaseReading.from_dict(summary["release"]).describe() if summary.get("release") else None
    clean = ok is True and facts["clean_exit"] is True and not lost
    facts["clean"] = clean if ok is not None and lost is not None else None
    if "unavailable" not in recovery and not planned:
        facts["clean"] = None
    consequence, cause = facts["consequence"], facts["cause"]
    if consequence == RECORDS_LOST:
        per = ", ".join(f"{t}: {n}" for t, n in list(recovery["lost_per_topic"].items())[:8]) + (", …" if len(recovery["lost_per_topic"]) > 8 else "")
        said = recovery["outcome"].replace("the next start", "the broker's next start", 1)
        words.append(f"Records lost: {said}" + (f" ({per})." if per else "."))
        if cause:
            words.append(f"The cause: {cause['line']}. {cause['meaning']}")
        if lost:
            words.append(f"{recovery['records_lost_readable']} of the records it cuts are still readable in the cut bytes (`rmqlab salvage` gives exactly those back).")
    elif consequence == DOES_NOT_START:
        words.append(f"Does not start: {recovery['outcome']}.")
        if cause:
            words.append(f"The cause: {cause['line']}. {cause['meaning']}")
    elif consequence == DISPATCH_STOPS:
        said = recovery["outcome"].replace("the next start", "the broker's next start", 1)
        words.append(f"Dispatch stops: {said}. Every later start stops at the same record: RocketMQ's dispatch gives up on a queue whose directory cannot be made "
                     "and then writes no consume queue at all (RunningFlags.makeLogicsQueueError).")
    elif consequence == RECOVERS_WITHOUT_LOSS:
        words.append(f"Crashed, recovers without loss: the broker's last exit was not clean, and its next start ends the log at {recovery['commitlog_end']:,} "
                     "without cutting a message record.")
    elif consequence == CLEAN:
        words.append(f"The last exit was clean and the next start cuts nothing: the log ends at {recovery['commitlog_end']:,}.")
    else:
        gone = [p for p, d in (("the checks", findings), ("recovery's plan", recovery)) if "unavailable" in d]
        if gone:
            words.append(f"The store could not be judged whole: {' and '.join(gone)} could not be read (below, why).")
        else:
            words.append("The store could not be judged whole: rmqlab does not model what RocketMQ's start-up does with parts of it (Recovery, below).")
    if counts.get("error") and consequence in (CLEAN, RECOVERS_WITHOUT_LOSS):
        words.append(f"{counts['error']} error(s) were found all the same: damage the next start does not cut, which RocketMQ keeps and serves as it is (Findings, below).")
    elif counts.get("error") and consequence in (RECORDS_LOST, DOES_NOT_START, DISPATCH_STOPS):
        words.append(f"{counts['error']} error(s) and {counts.get('warning', 0)} warning(s) in all (Findings, below).")
    if facts["writer"]:
        words.append(f"Its bytes say it was written by {facts['writer']}.")
    if "unavailable" not in recovery and recovery["not_modelled"] and planned:
        words.append("rmqlab does not model what start-up does with some parts of the store; what is said of recovery covers the rest (Recovery, below).")
    if planned:
        if recovery["queues_short"]:
            words.append(f"{sum(q['missing'] for q in recovery['queues_short'])} record(s) stay missing from {len(recovery['queues_short'])} queue(s) after recovery: consumers never see them.")
        if recovery["index_unfindable"]:
            words.append(f"{recovery['index_unfindable']} record(s) with keys stay unfindable by key lookups after recovery.")
        if recovery["releases_differ"]:
            words.append("The bytes do not say which RocketMQ release wrote the store, and releases would recover it differently (Recovery, below).")
    lost_by_groups = sum(g["lost_unconsumed"] for g in consumers.get("groups", [])) if "unavailable" not in consumers else 0
    facts["unconsumed_lost"] = lost_by_groups
    if lost_by_groups:
        words.append(f"{lost_by_groups} of the cut messages had not been consumed by the groups that committed offsets on their queues.")
    # the colour: what the next start costs, then what the checks found
    facts["level"] = ("bad" if consequence in (RECORDS_LOST, DOES_NOT_START, DISPATCH_STOPS) or counts.get("error") else "warn" if consequence == RECOVERS_WITHOUT_LOSS
                      else "good" if consequence == CLEAN else "unknown")
    return {"text": " ".join(words), **facts}
