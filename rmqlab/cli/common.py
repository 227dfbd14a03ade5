"""Options and output helpers shared by the commands."""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from ..config import MessageStoreConfig
from ..format.consumequeue import CQ_STORE_UNIT_SIZE
from ..rules import COMMITLOG_DIR
from ..errors import StoreLayoutError
from ..store.layout import commitlog_bytes  # noqa: F401 - the commands take it from here
from ..store.reader import StoreReader, infer_sizes


def number(minimum: int = 0, *, multiple_of: int = 1, what: str = "a number"):
    """An argparse type: an integer of at least ``minimum`` (and a multiple of
    ``multiple_of``), refused in one line naming the rule otherwise."""

    def parse(text: str) -> int:
        try:
            value = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum or value % multiple_of:
            rule = f"at least {minimum}" + (f" and a multiple of {multiple_of}" if multiple_of > 1 else "")
            raise argparse.ArgumentTypeError(f"{value} is not {what}: it must be {rule}")
        return value

    return parse


#: a mapped file holds at least one page (RocketMQ maps whole files; a record alone needs ~100 bytes)
COMMITLOG_FILE_SIZE = number(4096, what="a commitlog file size")
#: a consume queue file is whole 20-byte units (Java ConsumeQueue.CQ_STORE_UNIT_SIZE)
CONSUMEQUEUE_FILE_SIZE = number(CQ_STORE_UNIT_SIZE, multiple_of=CQ_STORE_UNIT_SIZE, what="a consume queue file size")
OFFSET = number(0, what="an offset")


def store_time(text: str) -> int:
    """A time as users hold it, as epoch milliseconds: epoch ms (what the store keeps) or
    ISO 8601 as every output prints it (``2026-01-01T10:00:01Z``, ``…+08:00``; no zone:
    UTC)."""
    import datetime as dt

    t = text.strip()
    if t.lstrip("-").isdigit():
        return int(t)
    try:
        when = dt.datetime.fromisoformat(t[:-1] + "+00:00" if t.endswith(("Z", "z")) else t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is no time: give epoch milliseconds (1767261601000) or ISO 8601 (2026-01-01T10:00:01Z)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return round(when.timestamp() * 1000)


def add_store_options(p: argparse.ArgumentParser, store_help: str = "store root directory (holds commitlog/, consumequeue/, index/ ...)") -> None:
    """STORE plus the ways to give file sizes (else they are inferred from the files)."""
    p.add_argument("store", help=store_help)
    p.add_argument("--config", metavar="BROKER_CONF", help="broker.conf-style properties file with the store's settings")
    p.add_argument("--commitlog-file-size", type=COMMITLOG_FILE_SIZE, metavar="BYTES", help="mappedFileSizeCommitLog")
    p.add_argument("--consumequeue-file-size", type=CONSUMEQUEUE_FILE_SIZE, metavar="BYTES", help="mappedFileSizeConsumeQueue")
    p.add_argument("--max-hash-slot-num", type=number(1, what="a slot count"), metavar="N", help="maxHashSlotNum")
    p.add_argument("--max-index-num", type=number(2, what="an index entry count"), metavar="N", help="maxIndexNum")
    p.add_argument("--commitlog-dir", action="append", metavar="DIR",
                   help="a directory of a log spread over several (storePathCommitLog=/d1/commitlog,/d2/commitlog; readOnlyCommitLogStorePaths); "
                        "repeat it for each; STORE/commitlog/ is read with them. Default: from --config, else STORE/commitlog/")


def log_paths(args: argparse.Namespace, cfg: MessageStoreConfig | None) -> MessageStoreConfig | None:
    """``cfg`` with the log's directories set from ``--commitlog-dir`` (which win over
    --config's, whose paths are the broker's): STORE/commitlog/ first when it is a
    directory, then each one given.  ``cfg`` unchanged when none is given."""
    given = getattr(args, "commitlog_dir", None)
    if not given:
        return cfg
    dirs: list[str] = []
    own = Path(args.store) / COMMITLOG_DIR
    for d in ([str(own)] if own.is_dir() else []) + list(given):
        if not Path(d).is_dir():
            raise StoreLayoutError(d, None, "--commitlog-dir: not a directory")
        if all(Path(d).resolve() != Path(x).resolve() for x in dirs):
            dirs.append(d)
    return (cfg or MessageStoreConfig()).replace(store_path_commit_log=",".join(dirs), read_only_commit_log_store_paths="")


#: the size settings a store's files are read with: each one's Java name and flag
SIZE_SETTINGS = {
    "mapped_file_size_commit_log": ("mappedFileSizeCommitLog", "--commitlog-file-size", "commitlog_file_size"),
    "mapped_file_size_consume_queue": ("mappedFileSizeConsumeQueue", "--consumequeue-file-size", "consumequeue_file_size"),
    # no flag of its own: --config, or the batch queues' files (queue.type=BatchCQ topics only)
    "mapper_file_size_batch_consume_queue": ("mapperFileSizeBatchConsumeQueue", None, "batch_consumequeue_file_size"),
    "max_hash_slot_num": ("maxHashSlotNum", "--max-hash-slot-num", "max_hash_slot_num"),
    "max_index_num": ("maxIndexNum", "--max-index-num", "max_index_num"),
}


def config_from_args(args: argparse.Namespace) -> MessageStoreConfig | None:
    """--config and the size flags; ``None`` means: infer everything from the files.
    See :func:`sizes_from_args`."""
    if not getattr(args, "config", None) and not getattr(args, "commitlog_dir", None) and all(getattr(args, attr, None) is None for _, _, attr in SIZE_SETTINGS.values()):
        return None
    return sizes_from_args(args)[0]


def sizes_from_args(args: argparse.Namespace) -> tuple[MessageStoreConfig, dict[str, str]]:
    """The config to read the store with, and where each size setting came from (by
    Java name).  A size flag wins, then a size the ``--config`` file sets; every size
    neither gives is inferred from the store's files (a broker.conf that sets only
    some sizes must not impose RocketMQ's defaults on the others)."""
    path = getattr(args, "config", None)
    cfg = None
    given: dict[str, tuple[int, str]] = {}
    if path:
        values = MessageStoreConfig.read_properties(path)
        cfg = MessageStoreConfig.from_mapping(values, source=str(path))
        for py, (java, _, _) in SIZE_SETTINGS.items():
            if java in values:
                given[py] = (getattr(cfg, py), f"set by --config {path}")
    for py, (_, flag, attr) in SIZE_SETTINGS.items():
        if getattr(args, attr, None) is not None:
            given[py] = (getattr(args, attr), f"given by {flag}")
    index_sizes = None
    if "max_hash_slot_num" in given or "max_index_num" in given:
        # given index sizes are not inferred (an index file of another shape would fail);
        # one alone: the other as Java's defaults relate them (4 entries per slot)
        if "max_hash_slot_num" not in given:
            n, where = given["max_index_num"]
            given["max_hash_slot_num"] = (max(1, n // 4), f"maxIndexNum / 4 (Java's default ratio; maxIndexNum {where})")
        if "max_index_num" not in given:
            n, where = given["max_hash_slot_num"]
            given["max_index_num"] = (4 * n, f"4 x maxHashSlotNum (Java's default ratio; maxHashSlotNum {where})")
        index_sizes = (given["max_hash_slot_num"][0], given["max_index_num"][0])
    paths = log_paths(args, cfg)
    inferred, sources = infer_sizes(args.store, index_sizes=index_sizes, paths=paths)
    out = {java: given[py][1] if py in given else sources[py] for py, (java, _, _) in SIZE_SETTINGS.items()}
    base = paths or inferred
    return base.replace(**{py: given[py][0] if py in given else getattr(inferred, py) for py in SIZE_SETTINGS}, store_path_root_dir=str(args.store)), out


def _release_name(text: str) -> str:
    from ..releases import release

    try:
        return release(text).name
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _writer_name(text: str) -> str:
    """``--writer``: ``rocketmq-rust``, ``rocketmq-rust:1.0.0``, ``apache:5.5.1`` (``apache``
    alone: nothing more said than the default)."""
    from ..releases import release

    if text == "apache":
        return None
    try:
        return release(text).name
    except ValueError:
        raise argparse.ArgumentTypeError(f"unknown writer {text!r}: rocketmq-rust[:1.0.0] or apache:RELEASE") from None


def add_release_option(p: argparse.ArgumentParser) -> None:
    """``--rocketmq-version``: whose start-up rules to follow when the store's bytes do
    not say which release wrote it (rmqlab.store.release)."""
    from ..releases import RELEASES, WRITERS

    java = [r for r, rel in RELEASES.items() if rel.writer == "apache"]
    p.add_argument("--rocketmq-version", type=_release_name, metavar="RELEASE",
                   help=f"the RocketMQ release of the broker that wrote the store ({', '.join(java)}; 5.4, 5.5 name a line): its recovery rules; "
                   "default: told from the store, and where it cannot be told and releases would differ, each one's outcome is shown")
    p.add_argument("--writer", type=_writer_name, metavar="WRITER[:VERSION]", dest="rocketmq_version",
                   help=f"the implementation that wrote the store ({', '.join(WRITERS)}; e.g. rocketmq-rust:1.0.0, apache:5.5.1): its rules "
                   "for the index keys, the checkpoint and recovery; default: told from the store")


def add_progress_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--progress", action="store_true", help="show progress on stderr also when it is not a terminal (never on stdout)")


class _Bar:
    """rmqlab.progress.Progress as a tqdm bar on stderr: bytes/s, ETA, records/s."""

    def __init__(self, total: int, what: str):
        from tqdm import tqdm

        self.bar = tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=what, file=sys.stderr, dynamic_ncols=True, leave=False)
        self.started = time.monotonic()

    def update(self, done_bytes: int, records: int) -> None:
        self.bar.update(max(0, min(done_bytes, self.bar.total) - self.bar.n))
        rate = records / max(time.monotonic() - self.started, 1e-9)
        self.bar.set_postfix_str(f"{records:,} records, {rate:,.0f}/s", refresh=False)

    def close(self) -> None:
        self.bar.close()


@contextmanager
def progress_bar(args: argparse.Namespace, total: int, what: str):
    """A progress bar on stderr when it is a terminal or ``--progress`` was given, else
    ``None`` (a pass then reports to nobody)."""
    if not (getattr(args, "progress", False) or sys.stderr.isatty()) or total <= 0:
        yield None
        return
    bar = _Bar(total, what)
    try:
        yield bar
    finally:
        bar.close()


def open_from_args(args: argparse.Namespace, *, strict: bool = True) -> StoreReader:
    """Open STORE read-only with sizes from --config / size flags / the files, for a
    command that answers from the log: a store whose log is not records in commitlog
    files (DLedger) is refused with the reason rather than answered from the wrong
    bytes.  The log ends where the store's next start ends it (the recovery plan,
    :mod:`rmqlab.recovery.next_start`; --rocketmq-version where the command has it)."""
    from ..store.layout import recognise

    config = config_from_args(args)
    elsewhere = Path(args.store).is_dir() and recognise(args.store, config).log_elsewhere
    if elsewhere:
        raise StoreLayoutError(args.store, None, f"{elsewhere}; rmqlab does not answer from a log it cannot read whole (`rmqlab info` lists what it recognises)")
    try:
        asked = next_start_of(args, config)
        store = StoreReader(args.store, config, strict=strict, log_end=asked.log_end, queues_truncated=asked.queues_truncated)
    except StoreLayoutError as err:
        # a commitlog file of another length: RocketMQ's load refuses the store, but the
        # evidence is read all the same (short files as if zero-padded), with a warning
        if not strict or Path(err.file) not in {p for _, p, _ in _misfits(args, config)}:
            raise
        store = StoreReader(args.store, config, strict=False, log_end=asked.log_end, queues_truncated=asked.queues_truncated)
    warn_gaps(args, store)
    return store


def _misfits(args: argparse.Namespace, config: MessageStoreConfig | None) -> list:
    """The commitlog files of STORE whose length is not the configured size."""
    from ..files import MappedFileQueue
    from ..store.layout import commitlog_dirs

    try:
        dirs = commitlog_dirs(Path(args.store), config)
        return MappedFileQueue(dirs, config.mapped_file_size_commit_log if config is not None else None, strict=False).misfits
    except (StoreLayoutError, OSError):
        return []


def next_start_of(args: argparse.Namespace, config: MessageStoreConfig | None):
    """STORE's next start (the end of its log, whether it cuts its queues there), asked of
    the recovery plan on first use (:class:`rmqlab.recovery.next_start.Asked`;
    --rocketmq-version where the command has it): what a StoreReader takes."""
    from ..recovery.next_start import Asked

    return Asked(args.store, config, getattr(args, "rocketmq_version", None))


def warn_gaps(args: argparse.Namespace, store: StoreReader) -> None:
    """One warning on stderr per commitlog file missing from the middle of the log: the
    store is read as RocketMQ reads it (its ``MappedFileQueue.load`` checks lengths only,
    ``checkSelf`` logs the gap, ``findMappedFileByOffset`` finds the file holding an
    offset), what lay in the missing file is not there to serve."""
    queue = store.commitlog.queue
    for base, path, size in getattr(queue, "misfits", []):
        print(f"rmqlab {args.command}: warning: {path} is {size} bytes, not the configured {queue.mapped_file_size}: RocketMQ's load refuses "
              "the store (MappedFileQueue.load) and the broker does not start; read here as it is" + (" (its end as zeros)" if size < (queue.mapped_file_size or 0) else "")
              + " (`rmqlab recover` says what is lost)", file=sys.stderr)
    for (a, b), gap in zip(queue.missing, queue.gaps):
        print(f"rmqlab {args.command}: warning: the log has no file for offsets [{a}, {b}) (before {Path(gap.file).name}): a file was deleted; "
              "RocketMQ loads the log all the same (MappedFileQueue.load checks lengths only) and serves what the other files hold, as here", file=sys.stderr)


def write_bytes(data: bytes | memoryview) -> None:
    """UTF-8 bytes to stdout (its binary buffer; a text stdout without one, as a test's
    capture, gets them decoded)."""
    buf = getattr(sys.stdout, "buffer", None)
    if buf is not None:
        sys.stdout.flush()
        buf.write(data)
        buf.flush()
    else:
        sys.stdout.write(bytes(data).decode("utf-8"))


def print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
