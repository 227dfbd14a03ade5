"""Expired-file cleanup (Java ``DefaultMessageStore.CleanCommitLogService`` and
``CleanConsumeQueueService``, plus ``IndexService.deleteExpiredFile``).

CommitLog files not modified for ``fileReservedTime`` hours are deleted, oldest
first, stopping at the first one still within its time and never touching the
active (last) file.  Then every consume queue drops its files whose entries all
point below the new commitlog minimum (never a queue's last file), and index files
whose ``endPhyOffset`` is below it go too (never the last one).

Java runs this at ``deleteWhen`` (04 o'clock), when the disk is nearly full, or when
asked: :func:`cleanup_due` is that decision; the store's clean-up service asks it
every ``cleanResourceInterval``, and
:meth:`rmqlab.engine.message_store.MessageStore.clean_expired_files` runs the clean-up
when called.

Not modelled: Java's reference count on a mapped file.  A file a reader still holds
is not unmapped until the reader lets go or ``destroyMapedFileIntervalForcibly``
(120 s) has passed since the first attempt (``MappedFile.destroy``), so deletion of
the next files waits for it; here a deleted file's mapping stays valid for whoever
holds it (POSIX keeps an unlinked file's pages until the last mapping goes).
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


@dataclass
class CleanDecision:
    """Whether the clean-up runs now, and whether it deletes files that are not
    expired yet (Java's ``cleanImmediately``)."""

    clean: bool
    immediately: bool
    reasons: list[str]


def _clamped(value: float, lo: float, hi: float) -> float:
    return min(hi, max(lo, value))


def cleanup_due(config, *, hour: int, used_ratio: float | None, manual: bool = False) -> CleanDecision:
    """Java ``CleanCommitLogService.deleteExpiredFiles``' decision, for one commitlog
    directory on one disk partition (``replicasPerDiskPartition`` 1).

    * ``isTimeToDelete``: ``hour`` is one of ``deleteWhen``'s (``"04"``, ``"04;05"``);
    * ``isSpaceToDelete``: ``used_ratio`` (0..1, the partition's used share) above
      ``diskSpaceWarningLevelRatio`` (clamped to 35–90 %) marks the disk full and
      cleans at once, above ``diskSpaceCleanForciblyRatio`` (clamped to 30–85 %)
      cleans at once, above ``diskMaxUsedSpaceRatio`` (clamped to 10–95 %) cleans
      expired files; a ratio Java could not measure (negative) counts as full;
    * ``manual``: ``executeDeleteFilesManually`` (the admin's ``deleteExpiredCommitLog``).

    "At once" (``cleanImmediately`` with ``cleanFileForciblyEnable``) deletes the
    oldest files whether or not ``fileReservedTime`` has passed.
    """
    reasons: list[str] = []
    wanted = {int(h) for h in config.delete_when.split(";") if h.strip().isdigit()}
    if hour in wanted:
        reasons.append(f"it is {hour:02d}h, a deleteWhen hour ({config.delete_when})")
    immediately = False
    if used_ratio is not None:
        warning = _clamped(config.disk_space_warning_level_ratio / 100.0, 0.35, 0.90)
        forcibly = _clamped(config.disk_space_clean_forcibly_ratio / 100.0, 0.30, 0.85)
        most = _clamped(config.disk_max_used_space_ratio / 100.0, 0.10, 0.95)
        used = f"{used_ratio:.0%}" if used_ratio >= 0 else "unknown"
        if used_ratio > warning:
            reasons.append(f"disk {used} used > diskSpaceWarningLevelRatio {warning:.0%}: disk marked full, clean at once")
            immediately = True
        elif used_ratio > forcibly:
            reasons.append(f"disk {used} used > diskSpaceCleanForciblyRatio {forcibly:.0%}: clean at once")
            immediately = True
        elif used_ratio < 0 or used_ratio > most:
            reasons.append(f"disk {used} used > diskMaxUsedSpaceRatio {most:.0%}: delete expired files")
    if manual:
        reasons.append("asked for (executeDeleteFilesManually)")
    return CleanDecision(bool(reasons), immediately and config.clean_file_forcibly_enable, reasons)


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
