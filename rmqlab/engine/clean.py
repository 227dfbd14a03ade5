"""Expired-file cleanup (Java ``DefaultMessageStore.CleanCommitLogService`` and
``CleanConsumeQueueService``, plus ``IndexService.deleteExpiredFile``).

CommitLog files not modified for ``fileReservedTime`` hours are deleted, oldest
first, stopping at the first one still within its time and never touching the
active (last) file.  Then every consume queue drops its files whose entries all
point below the new commitlog minimum (never a queue's last file), and index files
whose ``endPhyOffset`` is below it go too (never the last one).

Java runs this at ``deleteWhen`` (04 o'clock), when the disk is nearly full, or when
asked; :meth:`rmqlab.engine.message_store.MessageStore.clean_expired_files` runs it
when called.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CleanReport:
    """What one cleanup removed."""

    commitlog_files: list[str] = field(default_factory=list)
    consume_queue_files: dict[str, int] = field(default_factory=dict)  # "topic/queueId" -> files removed
    index_files: list[str] = field(default_factory=list)
    min_offset: int = 0  # the commitlog's minimum offset afterwards

    def to_dict(self) -> dict:
        return {
            "commitlog_files": self.commitlog_files,
            "consume_queue_files": self.consume_queue_files,
            "index_files": self.index_files,
            "min_offset": self.min_offset,
        }


def clean_expired(commitlog, dispatcher, now_ms: int, file_reserved_hours: int, *, force: bool = False, keep_from: int | None = None) -> CleanReport:
    """Delete expired commitlog files (none holding offset ``keep_from`` or later: the
    records there are not dispatched yet), then the consume-queue and index files that
    only point below the new minimum."""
    rep = CleanReport()
    rep.commitlog_files = commitlog.delete_expired(now_ms - file_reserved_hours * 3_600_000, force=force, keep_from=keep_from)
    rep.min_offset = commitlog.min_offset
    if rep.commitlog_files:
        for (topic, qid), q in dispatcher.queues.items():
            n = q.delete_expired(rep.min_offset)
            if n:
                rep.consume_queue_files[f"{topic}/{qid}"] = n
        idx = dispatcher.index
        while len(idx.files) > 1 and idx.files[0].end_phy_offset < rep.min_offset:
            f = idx.files.pop(0)
            rep.index_files.append(f.name)
            f.destroy()
    return rep
