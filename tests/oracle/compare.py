"""What rmqlab reads against what Apache RocketMQ read: one comparison for every source
of RocketMQ's answers — the frozen reference stores' ``dump.json`` and the live
oracle's ``load`` answers, which have the same shape.

Each function returns a list of differences (strings naming the record, queue or key),
empty when rmqlab agrees; tests assert ``== []`` so a failure lists every difference at
once, and the long differential run saves them as reproducers.

``end`` is where the log ends for the reader: RocketMQ's recovered end when the store
was recovered (rmqlab's recovery leaves the cut bytes in the last file, as RocketMQ
does), else the end of the log as rmqlab reads it.
"""

from __future__ import annotations

import base64
from typing import Any, Mapping, NamedTuple

from rmqlab import lookup
from rmqlab.rules import parse_delay_levels
from rmqlab.scan.dispatch_request import request_from_record
from rmqlab.errors import RmqlabError
from rmqlab.format.record import RecordError, decode_record
from rmqlab.format.msgid import format_host
from rmqlab.recovery.report import RecoveryReport


def compare_all(store, dump: Mapping[str, Any], *, end: int | None = None, index: str = "exact", limit: int = 50) -> list[str]:
    """Every comparison below; at most ``limit`` differences of each kind.  ``index``:
    "exact", "set" (see :func:`compare_index`) or "skip"."""
    out: list[str] = []
    for f in (compare_walk, compare_queues, compare_messages, compare_time_lookups):
        out += f(store, dump, end=end)[:limit]
    if index != "skip":
        out += compare_index(store, dump, mode=index)[:limit]
    return out


def compare_recovery(report: RecoveryReport, dump: Mapping[str, Any]) -> list[str]:
    """The recovery's outcome: mode, the end of the log, the max physical offset the
    consume queues hold afterwards."""
    r = dump["recovery"]
    out = []
    if not r.get("loadResult", True) or not report.load_ok:
        if r.get("loadResult", True) == report.load_ok:
            return []  # both refuse the store
        if report.load_ok:
            return [f"RocketMQ refuses to load the store; rmqlab recovers it ({report.mode}, end {report.commitlog_end})"]
        return [f"rmqlab says RocketMQ refuses the store ({'; '.join(report.load_problems)}); RocketMQ loads it"]
    if r["mode"].split()[0] != report.mode:
        out.append(f"recovery mode: rmqlab {report.mode}, RocketMQ {r['mode']}")
    if report.commitlog_end != r["commitLogMaxOffsetAfterRecovery"]:
        out.append(f"end of the log: rmqlab {report.commitlog_end}, RocketMQ {r['commitLogMaxOffsetAfterRecovery']}")
    # abnormal recovery logs its start file (CommitLog.recoverAbnormally)
    logged = [line.rsplit("/", 1)[1] for line in r.get("logLines", []) if "recover from this mapped file" in line]
    if logged and logged != [report.start_file]:
        out.append(f"start file: rmqlab {report.start_file} ({report.start_reason}), RocketMQ {logged}")
    want_cq = r["maxPhyOffsetInConsumeQueueAfterRecovery"]
    if report.max_phy_offset_in_cq_after != want_cq and not (want_cq == -1 and report.max_phy_offset_in_cq_after in (-1, 0)):
        out.append(f"max physical offset in the consume queues: rmqlab {report.max_phy_offset_in_cq_after}, RocketMQ {want_cq}")
    return out


def index_file_name_collisions(recovery: Mapping[str, Any]) -> list[str]:
    """Index files RocketMQ named twice.  ``IndexService.getAndCreateLastIndexFile``
    names a new file by the wall clock in milliseconds; when a file fills within the
    millisecond it was created in (small index files, a fast rebuild during recovery),
    its successor gets the same name and opens the same path, and what RocketMQ's
    index then answers depends on timing: no oracle for that run.  ``recovery`` is a
    load answer's ``recovery`` (the harness lists the index files RocketMQ holds)."""
    names = recovery.get("indexFiles") or []
    return sorted({n for n in names if names.count(n) > 1})


class _Invalid(NamedTuple):
    """Where a file's walk fails (the harness's INVALID)."""

    physical_offset: int
    kind: str = "INVALID"
    is_blank: bool = False


def _walk_by_file(store, end: int) -> list:
    """The harness's walk of the loaded store (Oracle.walk): each file from its start,
    checkMessageAndReturnSize record by record up to its write position (the file's
    size; the end of the log in the last), stopping at a BLANK or at the first record
    that fails (a bad magic or size, zeros, a body CRC mismatch): INVALID, then the next
    file.  Damage inside the log — which 5.4+ keeps when it starts recovery after it —
    so ends one file's walk, not the whole."""
    out: list = []
    crc = store.config.check_crc_on_recover is not False  # the harness's walk checks as recovery does (Java's default: it checks)
    for f in store.commitlog.queue.files:
        if f.file_from_offset >= end:
            break
        limit = min(len(f.buf), end - f.file_from_offset)
        pos = 0
        while pos < limit:
            try:
                rec = decode_record(f.buf, pos, file=str(f.path), file_base=f.file_from_offset, check_crc=True)
            except RecordError:
                rec = None
            if rec is None or (crc and not rec.is_blank and not rec.body_crc_ok):
                out.append(_Invalid(f.file_from_offset + pos))
                break
            out.append(rec)
            if rec.is_blank:
                break
            pos += rec.total_size
    return out


def compare_walk(store, dump: Mapping[str, Any], *, end: int | None = None) -> list[str]:
    """RocketMQ's commitlog walk (CommitLog.checkMessageAndReturnSize over every file)."""
    walk = dump["commitLogWalk"]
    end = store.commitlog.max_offset() if end is None else end
    try:
        recs = _walk_by_file(store, end)
    except RmqlabError as exc:
        return [f"walk: rmqlab stopped with {exc}"]
    delay_levels = parse_delay_levels(store.config.message_delay_level)
    out = []
    if len(recs) != len(walk):
        out.append(f"walk: rmqlab reads {len(recs)} records and BLANKs, RocketMQ {len(walk)}")
    for rec, w in zip(recs, walk):
        where = f"walk @{w['physicalOffset']}"
        if rec.physical_offset != w["physicalOffset"] or rec.kind != w["kind"]:
            out.append(f"{where}: rmqlab {rec.kind} @{rec.physical_offset}, RocketMQ {w['kind']}")
            break
        if isinstance(rec, _Invalid):
            continue
        if rec.is_blank:
            if rec.total_size != w["bytesToFileEnd"]:
                out.append(f"{where}: BLANK of {rec.total_size} bytes, RocketMQ {w['bytesToFileEnd']} to the file's end")
            continue
        req = request_from_record(rec, delay_levels)  # what dispatch reads from the record
        mine = {
            "size": rec.total_size, "topic": rec.topic, "queueId": rec.queue_id, "queueOffset": rec.queue_offset,
            "sysFlag": rec.sys_flag, "storeTimestamp": rec.store_timestamp, "preparedTransactionOffset": rec.prepared_transaction_offset,
            # Java's DispatchRequest.keys starts as "" and is read from the properties only
            # when there are some (checkMessageAndReturnSize); both index nothing
            "keys": req.keys if rec.properties_raw else "", "uniqKey": req.uniq_key, "tagsCode": req.tags_code,
        }
        for k, v in mine.items():
            if k in w and w[k] != v:
                out.append(f"{where}: {k} rmqlab {v!r}, RocketMQ {w[k]!r}")
        if not rec.body_crc_ok:  # what checkCRCOnRecover checks (the property CRC only with forceVerifyPropCRC)
            out.append(f"{where}: rmqlab finds a body CRC mismatch RocketMQ's walk accepted")
    if dump.get("recovery", {}).get("commitLogMaxOffsetAfterRecovery") is not None and end != dump["recovery"]["commitLogMaxOffsetAfterRecovery"]:
        out.append(f"walk: end of the log rmqlab {end}, RocketMQ {dump['recovery']['commitLogMaxOffsetAfterRecovery']}")
    return out


def _entries(store, topic: str, queue_id: int):
    """The queue's units as RocketMQ's iterator gives them: an ext address
    (enableConsumeQueueExt) read as the tagsCode its ext unit holds (ConsumeQueueExt.get)."""
    from rmqlab.format.consumequeue import is_ext_addr

    q = store.consume_queue(topic, queue_id)
    ext = store.consume_queue_ext(topic, queue_id)
    out = []
    for e in q.entries(store.commitlog.min_offset):
        d = e.to_dict()
        if ext is not None and is_ext_addr(e.tags_code):
            d["tags_code"] = ext.unit(e.tags_code).tags_code
        out.append(d)
    return q, out


def compare_queues(store, dump: Mapping[str, Any], *, end: int | None = None) -> list[str]:
    """Which queues exist, their min/max offsets and max physical offset, every unit."""
    cqs = dump["consumeQueues"]
    out = []
    mine = sorted(str(q) for q in store.queue_ids())
    # a queue RocketMQ holds with no unit and no file is made in memory by a lookup
    # (findConsumeQueue; 4.9's ScheduleMessageService opens one per delay level)
    theirs = sorted(k for k, cq in cqs.items() if cq["cqUnits"] or k in mine)
    if mine != theirs:
        out.append(f"queues: rmqlab {sorted(set(mine) - set(theirs))} not in RocketMQ, RocketMQ {sorted(set(theirs) - set(mine))} not in rmqlab")
    for key, cq in cqs.items():
        if key not in mine:
            continue
        q, got = _entries(store, cq["topic"], cq["queueId"])
        rng = q.valid_range(store.commitlog.min_offset)
        if rng != (cq["minOffset"], cq["maxOffset"]):
            out.append(f"queue {key}: offsets rmqlab {rng}, RocketMQ {(cq['minOffset'], cq['maxOffset'])}")
        want = [{"queue_offset": u["queueOffset"], "commitlog_offset": u["physicalOffset"], "size": u["size"], "tags_code": u["tagsCode"]} for u in cq["cqUnits"]]
        if got != want:
            diff = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            out.append(f"queue {key}: units differ from #{diff}: rmqlab {got[diff:diff + 1]}, RocketMQ {want[diff:diff + 1]} ({len(got)} vs {len(want)} units)")
        mpo = q.max_physic_offset(store.commitlog.min_offset)
        # ConsumeQueue.truncateDirtyLogicFiles first sets maxPhysicOffset to the new end
        # of the log and lowers it only for entries it keeps: a queue whose every entry
        # was cut holds the end in memory, which no file records (after a restart it is
        # the files' -1 again); a reader of the files cannot see it, and nothing depends
        # on it (later records all end past it)
        cut_to_nothing = not cq["cqUnits"] and cq["maxPhysicOffset"] == dump.get("recovery", {}).get("commitLogMaxOffsetAfterRecovery")
        if mpo != cq["maxPhysicOffset"] and not (cut_to_nothing and mpo == -1):
            out.append(f"queue {key}: maxPhysicOffset rmqlab {mpo}, RocketMQ {cq['maxPhysicOffset']}")
    return out


def _unit_size(store, cq: Mapping[str, Any], queue_offset: int) -> int | None:
    try:
        return lookup.get_message(store, cq["topic"], cq["queueId"], queue_offset)[0].size
    except (RmqlabError, LookupError, KeyError):
        return None


def compare_messages(store, dump: Mapping[str, Any], *, end: int | None = None) -> list[str]:
    """Every field of every message RocketMQ's getMessage returned."""
    out = []
    for key, cq in dump["consumeQueues"].items():
        for m in cq["messages"]:
            where = f"getMessage {key}@{m['queueOffset']}"
            if str(m.get("status", "")).startswith("exception"):  # RocketMQ itself threw: no oracle here
                continue
            if "physicalOffset" not in m:  # RocketMQ returned no message there
                try:
                    _, rec = lookup.get_message(store, cq["topic"], cq["queueId"], m["queueOffset"])
                except (RmqlabError, LookupError, KeyError):
                    continue
                if m.get("decoded") is False and rec.java_decode_problem:
                    continue  # RocketMQ served bytes its MessageDecoder cannot decode, and rmqlab says why
                out.append(f"{where}: RocketMQ answers {m.get('status')} without a message; rmqlab returns one")
                continue
            try:
                # getMessage(maxMsgNums=1): the first message from this queue offset on
                # (units into a missing commitlog file skipped, as Java's rollNextFile does)
                entry, rec = next(lookup.get_messages(store, cq["topic"], cq["queueId"], m["queueOffset"], max_count=1))
            except (RmqlabError, LookupError, KeyError, StopIteration) as exc:
                out.append(f"{where}: rmqlab fails ({exc!r}); RocketMQ returns the record @{m['physicalOffset']}")
                continue
            mine = {
                # MessageExt.commitLogOffset is the record's physicalOffset field
                "physicalOffset": rec.stored_physical_offset, "size": rec.total_size, "topic": rec.topic, "queueId": rec.queue_id,
                "tags": rec.tags, "keys": rec.keys, "properties": rec.java_properties,
                "bodyBase64": base64.b64encode(rec.body).decode() if rec.body else None, "bodyCRC": rec.body_crc,
                "flag": rec.flag, "sysFlag": rec.sys_flag, "reconsumeTimes": rec.reconsume_times,
                "preparedTransactionOffset": rec.prepared_transaction_offset, "bornTimestamp": rec.born_timestamp,
                "storeTimestamp": rec.store_timestamp, "bornHost": format_host(*rec.born_host), "storeHost": format_host(*rec.store_host),
                "msgId": rec.msg_id,
            }
            if m.get("bodyCRCRecomputed") is not None:
                mine["bodyCRCRecomputed"] = rec.body_crc_computed
            for k, v in mine.items():
                if k in m and m[k] != v:
                    out.append(f"{where}: {k} rmqlab {v!r}, RocketMQ {m[k]!r}")
            if rec.stored_physical_offset != rec.physical_offset:
                continue  # a damaged physicalOffset field: the msgId leads elsewhere, in RocketMQ too
            if rec.total_size != m.get("size", rec.total_size) or rec.total_size != _unit_size(store, cq, m["queueOffset"]):
                # a damaged totalSize (served from the unit's bytes): by msgId RocketMQ's
                # lookMessageByOffset selects totalSize bytes, past its file: null, as rmqlab fails
                continue
            try:
                by_id = lookup.look_by_msg_id(store, m["msgId"]).physical_offset
            except RmqlabError as exc:
                by_id = f"error {exc}"
            if by_id != m["physicalOffset"]:
                out.append(f"{where}: msgId {m['msgId']} leads rmqlab to {by_id}")
    return out


def compare_time_lookups(store, dump: Mapping[str, Any], *, end: int | None = None) -> list[str]:
    """getOffsetInQueueByTime with RocketMQ 5.3's default boundary (LOWER), LOWER and UPPER.
    Not compared with 4.9's answers: 4.9 has no boundary and searches differently."""
    out = []
    for key, cq in dump["consumeQueues"].items():
        for ts, answer in cq["offsetInQueueByTime"].items():
            if "LOWER" not in answer:
                continue  # RocketMQ 4.9: another binary search, which rmqlab does not model (it answers as 5.3)
            for boundary in ("default", "LOWER", "UPPER"):
                if isinstance(answer[boundary], str):  # RocketMQ itself threw: no oracle for this probe
                    continue
                try:
                    if boundary == "default":
                        got = lookup.offset_by_time(store, cq["topic"], cq["queueId"], int(ts))
                    else:
                        got = lookup.offset_by_time(store, cq["topic"], cq["queueId"], int(ts), boundary)
                except RmqlabError as exc:
                    got = f"error {exc}"
                if got != answer[boundary]:
                    out.append(f"offset by time {key} @{ts} {boundary}: rmqlab {got}, RocketMQ {answer[boundary]}")
    return out


def compare_index(store, dump: Mapping[str, Any], *, mode: str = "exact", end: int | None = None) -> list[str]:
    """Every (topic, key) RocketMQ was asked: the raw index answer (hash matches, newest
    first, collisions included; ``mode="set"`` compares them as sets, for a store read
    as a crash left it against RocketMQ's rebuilt index) and the verified records, which
    must all be among queryMessage's answer."""
    out = []
    for q in dump["indexQueries"]:
        where = f"key {q['topic']}#{q['key']}"
        try:
            res = lookup.query_by_key(store, q["topic"], q["key"])
        except RmqlabError as exc:
            out.append(f"{where}: rmqlab fails: {exc}")
            continue
        raw, want = res.raw_offsets, q["indexPhyOffsets"]
        if (set(raw) != set(want)) if mode == "set" else (raw != want):
            out.append(f"{where}: raw index answer rmqlab {raw}, RocketMQ {want}")
        # the harness reports queryMessage's records by MessageExt.commitLogOffset: the field
        # a record Java's MessageDecoder cannot decode (Record.java_decode_problem) is in
        # queryMessage's answer as null, or not at all where its lookMessageByOffset threw
        verified = [r.stored_physical_offset for r in res.records if not r.java_decode_problem]
        if not set(verified) <= set(q["queryMessagePhyOffsets"]):
            out.append(f"{where}: rmqlab's verified records {verified} are not all in RocketMQ's queryMessage answer {q['queryMessagePhyOffsets']}")
    return out
