"""What is in a store: files, sizes, offset ranges, counts, state (``rmqlab info``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..format import commitlog as cl
from ..format.record import RecordError
from .reader import StoreReader


@dataclass
class StoreSummary:
    root: str
    config: dict
    commitlog_files: list[tuple[str, int]]
    commitlog_min_offset: int
    commitlog_end_offset: int | None = None
    records: int = 0
    blanks: int = 0
    crc_failures: int = 0
    stopped_at: str | None = None  # the damage that ended the walk, if any
    per_queue: dict[str, int] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)
    consume_queues: list[dict] = field(default_factory=list)
    index_files: list[dict] = field(default_factory=list)
    checkpoint: dict | None = None
    abort: str | None = None  # None when absent, else its content
    lock: str = "absent"
    config_files: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def _repr_html_(self) -> str:  # notebooks
        from ..render.notebook import summary_html

        return summary_html(self)


def summarize(store: StoreReader, *, scan: bool = True) -> StoreSummary:
    """Collect a :class:`StoreSummary`; ``scan`` walks the whole commitlog for counts."""
    cfg = store.config
    s = StoreSummary(
        root=str(store.root),
        config={
            "mappedFileSizeCommitLog": cfg.mapped_file_size_commit_log,
            "maxHashSlotNum": cfg.max_hash_slot_num,
            "maxIndexNum": cfg.max_index_num,
        },
        commitlog_files=[(f.path.name, f.file_size) for f in store.commitlog.queue.files],
        commitlog_min_offset=store.commitlog.min_offset,
    )
    if scan:
        per_queue: Counter = Counter()
        feats: Counter = Counter()
        end = store.commitlog.min_offset
        for item in store.commitlog.walk(check_crc=True):
            if isinstance(item, RecordError):
                s.stopped_at = str(item)
                break
            if item.is_blank:
                s.blanks += 1
                continue
            s.records += 1
            end = item.end_offset
            per_queue[f"{item.topic}/{item.queue_id}"] += 1
            if not item.crc_ok:
                s.crc_failures += 1
            if item.is_v2:
                feats["V2 records (topic > 127 bytes)"] += 1
            if item.sys_flag & cl.FLAG_BORNHOST_V6:
                feats["IPv6 born host"] += 1
            if item.sys_flag & cl.FLAG_STOREHOST_V6:
                feats["IPv6 store host"] += 1
            if item.property_crc is not None:
                feats["__CRC32# property CRC"] += 1
            if item.transaction_type:
                feats[f"transaction {cl.TRANSACTION_NAMES[item.transaction_type]}"] += 1
            if item.sys_flag & cl.FLAG_COMPRESSED:
                feats["compressed body"] += 1
            if item.topic == "SCHEDULE_TOPIC_XXXX":
                feats["delayed (SCHEDULE_TOPIC_XXXX)"] += 1
        s.commitlog_end_offset = end
        s.per_queue = dict(sorted(per_queue.items()))
        s.features = dict(sorted(feats.items()))
    for qid in store.queue_ids():
        cq = store.consume_queue(qid.topic, qid.queue_id)
        lo, hi = cq.valid_range(store.commitlog.min_offset)
        s.consume_queues.append(
            {"queue": str(qid), "files": len(cq.queue.files), "min_offset": lo, "max_offset": hi, "max_physic_offset": cq.max_physic_offset(store.commitlog.min_offset)}
        )
    for f in store.index.files:
        h = f.header
        s.index_files.append(
            {
                "file": f.name,
                "begin_timestamp": h.begin_timestamp,
                "end_timestamp": h.end_timestamp,
                "begin_phy_offset": h.begin_phy_offset,
                "end_phy_offset": h.end_phy_offset,
                "hash_slot_count": h.hash_slot_count,
                "index_count": h.index_count,
            }
        )
    cp = store.checkpoint()
    s.checkpoint = cp.to_dict() if cp else None
    s.abort = store.abort_content()
    s.lock = store.lock_state()
    s.config_files = [p.name for p in store.config_files()]
    s.problems = [str(p) for p in store.problems]
    return s
