"""``spark.readStream.format("rocketmq")`` — the records of a log a broker is writing, as
a Structured Streaming source (Python ``DataSourceStreamReader``).

Offsets are the log's physical offsets: each micro-batch reads the whole records from
where the last one ended up to where the whole records end now
(:meth:`rmqlab.store.follow.LogFollower.extent`: headers walked, the last record's CRCs
checked — a record still being copied in waits for the next batch), within the read
limit.  A query restarted from its checkpoint continues from the offset Spark
committed, so each record is read exactly once.  The options, as Kafka's source names
them (declared once, in :data:`OPTIONS`).

Every option of the batch source applies too (``columns``, ``topics``, ``mode``,
``verifyCrc``, ``includeBody`` ...), with the same columns; a stream gives message rows
only (no BLANK rows).  The store must be on a local path or a mount every executor sees:
object storage holds no file being written (an object appears whole, when it is
closed), so ``s3://`` and the like are refused with that reason, and so are DLedger logs
and a log spread over several directories.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from pyspark.sql.datasource import DataSourceStreamReader

from ..errors import RmqlabError
from . import _paths

LOG = logging.getLogger("rmqlab.spark.stream")


STARTING_OFFSETS = _paths.Option("startingOffsets", "text", "latest", (
    "``latest``: what is appended from the query's start; ``earliest``: the oldest file; or a physical offset (a record "
    "boundary). Only for a new query; a restarted one continues from its checkpoint."))
MAX_RECORDS_PER_TRIGGER = _paths.Option("maxRecordsPerTrigger", "int", None, (
    "admission control: at most this many records a micro-batch (Spark's ``ReadMaxRows``; ``Trigger.AvailableNow`` "
    "reads everything)."))
MAX_BYTES_PER_TRIGGER = _paths.Option("maxBytesPerTrigger", "size", None, "at most this many bytes a micro-batch (Spark's ``ReadMaxBytes``).")
FAIL_ON_DATA_LOSS = _paths.Option("failOnDataLoss", "bool", True, (
    "``true``: the query fails when records it has not read were deleted (the broker's clean-up, "
    "``CommitLog.deleteExpiredFile``), or when records it has read are no longer in the log as they were (a restart's "
    "recovery cut the log before them). ``false``: it goes on at the oldest file left, or re-reads from the record "
    "that changed, and says so on the driver's log."))
#: ``spark.readStream.format("rocketmq")``'s own options (the batch source's apply too)
OPTIONS = (STARTING_OFFSETS, MAX_RECORDS_PER_TRIGGER, MAX_BYTES_PER_TRIGGER, FAIL_ON_DATA_LOSS)


class DataLossError(RmqlabError):
    """Records lost to the query (deleted, or rewritten), with ``failOnDataLoss=true``."""


class CommitLogStreamReader(DataSourceStreamReader):
    def __init__(self, batch):
        from ..rules import COMMITLOG_DIR

        self.batch = batch  # the batch source's reader: options, columns, read()
        options = batch.options
        if "://" in batch.path and not batch.path.startswith("file://"):
            raise _paths.OptionError(f"{batch.path}: a live store is followed on a local path or a mount every executor sees; object storage "
                                     "holds no file being written (an object appears whole when it is closed)")
        if batch.commitlog_dirs:
            raise _paths.OptionError("commitlogDirs: a stream follows a log in one directory")
        self.root = batch.path.removeprefix("file://")
        from pathlib import Path

        if not (Path(self.root) / COMMITLOG_DIR).is_dir() and not Path(self.root).name == COMMITLOG_DIR:
            raise _paths.OptionError(f"{self.root}: no {COMMITLOG_DIR}/ to follow (a DLedger log is not followed)")
        start = STARTING_OFFSETS.read(options).strip()
        if start not in ("earliest", "latest") and not start.isdigit():
            raise _paths.OptionError(f"option startingOffsets: earliest, latest or an offset, not {start!r}")
        self.starting = start if not start.isdigit() else int(start)
        self.fail_on_data_loss = FAIL_ON_DATA_LOSS.read(options)
        self.max_records = MAX_RECORDS_PER_TRIGGER.read(options)
        self.max_bytes = MAX_BYTES_PER_TRIGGER.read(options)
        self._f = None

    def __getstate__(self):  # executors get the options, not the driver's open files
        d = dict(self.__dict__)
        d["_f"] = None
        return d

    def _follower(self):
        from ..store.follow import LogFollower

        if self._f is None:
            self._f = LogFollower(self.root, self.starting)
        return self._f

    # -- offsets ------------------------------------------------------------------------
    def initialOffset(self) -> dict:
        at = self._follower().first_position() or 0
        return {"offset": at, "from": at, "recent": None}

    def getDefaultReadLimit(self):
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxBytes, ReadMaxRows

        if self.max_records:
            return ReadMaxRows(self.max_records)
        if self.max_bytes:
            return ReadMaxBytes(self.max_bytes)
        return ReadAllAvailable()

    def latestOffset(self, start: dict | None = None, limit=None) -> dict:
        from pyspark.sql.streaming.datasource import ReadMaxBytes, ReadMaxRows

        if start is None:  # Spark before 4.2 asks without a start: the last end given
            start = getattr(self, "_last_end", None) or self.initialOffset()
        f = self._follower()
        at = int(start["offset"])
        recent = [tuple(r) for r in start.get("recent") or ()]
        i = f.first_changed(recent)
        if i is not None:
            exact = i > 0
            at = recent[i][0] if exact else f.file_start(recent[0][0])
            what = (f"records already read are no longer in the log as they were from offset {recent[i][0]}{'' if exact else ' (or before)'}: "
                    "a restart's recovery cut the log there")
            if self.fail_on_data_loss:
                raise DataLossError(f"{self.root}: {what} (failOnDataLoss=false reads on from the cut)")
            LOG.warning("%s: %s; reading on from %s%s", self.root, what, at, "" if exact else " (records there may be read twice)")
        max_records = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        max_bytes = limit.max_bytes if isinstance(limit, ReadMaxBytes) else None
        ext = f.extent(at, max_records=max_records, max_bytes=max_bytes)
        if ext.skipped is not None:
            if self.fail_on_data_loss:
                raise DataLossError(f"{self.root}: {ext.skipped} (failOnDataLoss=false goes on at the oldest file)")
            LOG.warning("%s: %s", self.root, ext.skipped)
        if ext.records == 0 and ext.start == int(start["offset"]):
            end = start
        else:
            end = {"offset": ext.end, "from": ext.start, "recent": [list(r) for r in ext.recent] or start.get("recent")}
        self._last_end = end
        return end

    def reportLatestOffset(self):
        end = self._follower().log_end()
        return None if end is None else {"offset": end}

    def partitions(self, start: dict, end: dict):
        lo, hi = int(end.get("from", start["offset"])), int(end["offset"])
        if lo >= hi:
            return []
        out = []
        for s in self.batch.file_splits():  # one split per file: the range holds whole records
            a, b = max(lo, s.file_base), min(hi, s.file_base + s.file_size)
            if a < b:
                out.append(replace(s, start=a - s.file_base, stop=b - s.file_base, whole=True))
        return out

    def read(self, partition):
        yield from self.batch.read(partition)

    def commit(self, end: dict) -> None:
        pass
