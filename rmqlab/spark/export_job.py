"""``rmqlab.spark.export(spark, store, out)`` — ``rmqlab export`` with the work spread over
a Spark cluster: each task decodes one split of the log and writes its rows as Parquet
files with pyarrow, on the worker, so rows never cross into the JVM; the driver plans the
run and commits it (the dataset's layout and guarantees: :mod:`rmqlab.scan.export`).

The store and ``out`` must be paths every worker and the driver see alike (a shared
mount); the run's end is where RocketMQ serves the log up to when the run is planned.
Spark Connect has no RDDs to run the tasks on: export there with ``rmqlab export``.
"""

from __future__ import annotations

from .commitlog_source import DEFAULT_SPLIT_SIZE, plan_splits, read_split
from ..errors import RmqlabError
from .worker_errors import worker_errors


def export(spark, store: str, out: str, *, mode: str = "strict", include_body: bool = True, verify_crc: bool = True, split_size: int = DEFAULT_SPLIT_SIZE):
    """Export (or continue exporting) the records of the store at ``store`` into ``out``;
    returns the run (:class:`rmqlab.scan.export.ExportRun`) and its notes."""
    from ..scan.export import begin, commit, plan_run, settings_of, write_batches
    from ..store.reader import StoreReader
    from ..recovery.next_start import log_end

    try:
        sc = spark.sparkContext
    except Exception as err:  # Spark Connect: no SparkContext
        raise RuntimeError(f"rmqlab.spark.export needs a SparkContext to run its tasks (not Spark Connect: {err}); export with `rmqlab export`") from None
    with StoreReader(store, strict=False, log_end=lambda: log_end(store)) as s:  # the next start's end (rmqlab.recovery.next_start)
        log_min, log_end, root = s.commitlog.min_offset, s.commitlog.served_end(), str(s.root)
    manifest, run = begin(out, root, settings_of(mode, include_body, verify_crc))
    start, notes = plan_run(manifest, log_min, log_end, out)
    splits = [sp for sp in plan_splits(root, split_size) if sp.file_base + sp.stop > start and sp.file_base + sp.start < log_end]
    if not splits:
        return commit(out, manifest, run, start, log_end, []), notes

    def task(items):
        from ..errors import StoreFormatError
        from ..scan import kernels
        from ..scan.decode import with_crc_errors

        kernels.set_threads(1)  # a task per core already
        for n, split in items:
            batches = read_split(split, mode=mode, verify_crc=verify_crc, include_body=include_body)
            batches = (with_crc_errors(b, split.file, split.file_base) for b in batches)  # as Spark's source says them
            try:
                yield from write_batches(out, run, n, batches, start=start, end=log_end)
            except StoreFormatError as err:  # strict: this split's first damage, for the driver to weigh
                yield [None, split.file_base + (err.offset or 0), str(err)]

    with worker_errors():
        written = sc.parallelize(list(enumerate(splits)), len(splits)).mapPartitions(task).collect()
    damage = [w for w in written if w[0] is None]
    if damage:
        # The run fails on the first damage in the log, as `rmqlab export` does, whichever
        # task met its damage first: a task that raised would stop the job with its own.
        raise RmqlabError(min(damage, key=lambda w: w[1])[2])
    return commit(out, manifest, run, start, log_end, [list(w) for w in written]), notes
