"""Which RocketMQ release wrote a store, as far as its bytes say.

The start-up rules differ by release (:mod:`rmqlab.releases`), and nothing in a store
names the broker's version.  What does tell, read-only and cheaply:

* ``config/topics.json`` without TopicConfig ``attributes``: a 4.x broker
  (:func:`rmqlab.store.metadata.written_by_4x`);
* the checkpoint's sixth long (``logicsPhysicalOffset``, byte 40) set: 5.5+ — no earlier
  release writes there (``StoreCheckpoint.flush``);
* ``consumequeue_rocksdb/`` (``StorePathConfigHelper.getStorePathRocksDBConsumeQueue``):
  5.5+;
* ``rocksdbstore/`` (``MessageRocksDBStorage``, which 5.4+ opens on every start, empty
  unless RocksDB keys, timers or transactions are on) or a timer-wheel snapshot
  (``timerwheel.<offset>``, ``TimerWheel.selectSnapshotByFlag``): 5.4+;
* ``logicsMsgTimestamp`` set while ``logicsPhysicalOffset`` is not: not 5.5, which sets
  the two together (``ConsumeQueue.putMessagePositionInfoWrapper`` → the thorough flush)
  — unless the last record dispatched was the log's first, at offset 0.

Another implementation's bytes say so too.  rocketmq-rust (:data:`rmqlab.releases.WRITERS`)
is told by what no Java release writes: ``pid=N`` in the ``lock`` file (Java writes
``lock`` there: ``DefaultMessageStore.start``; rust's ``root_lock.rs`` its PID), its
timer store's v2 files (``timer-v2/FORMAT``, ``timerwheel.v2/``, ``config/timer-role.meta``;
``timer_message_store.rs``), or a checkpoint whose byte 40 is no record's start (5.5's
``logicsPhysicalOffset`` is the start of the last record dispatched; rust's
``indexSafePhyOffset`` there is the end of the last record indexed: the log's end on a
clean store).

What is left open is a set of candidates; the recovery plan is made under each whose
rules would choose differently, and says so when they disagree instead of guessing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..config import MessageStoreConfig
from ..format import timer_v2
from ..format.layout import store_timestamp_at
from ..releases import DISTINCT_RELEASES, Release, release
from .checkpoint import read_checkpoint_fields
from ..rules import COMMITLOG_DIR, CONFIG_DIR, CONSUMEQUEUE_ROCKSDB_DIR, MESSAGE_ROCKSDB_DIR, TIMER_LOG_DIR, timer_wheel_snapshot_flag

_5X = tuple(r for r in DISTINCT_RELEASES if not r.startswith("4."))


@dataclass
class ReleaseReading:
    """The releases a store may come from (oldest first), and why."""

    candidates: tuple[str, ...]
    #: each piece of evidence, in words ("checkpoint's logicsPhysicalOffset is set: 5.5+")
    evidence: list[str] = field(default_factory=list)
    #: the user said which (``--rocketmq-version``)
    told: bool = False

    @property
    def known(self) -> Release | None:
        """The one release, when the store or the user says which."""
        return release(self.candidates[0]) if len(self.candidates) == 1 else None

    @property
    def writer(self) -> str:
        """Who wrote the store: ``"apache"`` or another implementation's name."""
        return release(self.candidates[0]).writer

    def describe(self) -> str:
        if self.writer != "apache":
            what = release(self.candidates[0]).title
            return f"{what} (given)" if self.told else f"{what} ({'; '.join(self.evidence)})"
        if self.told:
            return f"RocketMQ {self.candidates[0]} (given)"
        what = " or ".join(self.candidates)
        return f"RocketMQ {what}" + (f" ({'; '.join(self.evidence)})" if self.evidence else " (nothing in the store tells them apart)")

    def to_dict(self) -> dict:
        return {"candidates": list(self.candidates), "evidence": list(self.evidence), "told": self.told}

    @classmethod
    def from_dict(cls, d: dict) -> "ReleaseReading":
        return cls(tuple(d["candidates"]), list(d["evidence"]), d["told"])


def _first_record_time(root: Path) -> int | None:
    """The store time of the record at offset 0, when the log still starts there."""
    first = Path(root) / COMMITLOG_DIR / ("0" * 20)
    try:
        with open(first, "rb") as fh:
            head = fh.read(128)
    except OSError:
        return None
    return store_timestamp_at(head, 0)


def is_timer_wheel_snapshot(name: str) -> bool:
    """``timerwheel.<timer log offset>``: a 5.4+ snapshot of the wheel (TimerWheel.selectSnapshotByFlag)."""
    return timer_wheel_snapshot_flag(name) is not None


#: rocketmq-rust's timer store, v2 layout (timer_message_store.rs, role.rs): none of it is Java's
RUST_TIMER_PATHS = (timer_v2.FORMAT_DIR, timer_v2.WHEEL_DIR, os.path.join(CONFIG_DIR, timer_v2.ROLE_FILE), os.path.join(TIMER_LOG_DIR, timer_v2.LOG_V2_DIR))


def rust_timer_paths(root: str | os.PathLike) -> list[str]:
    """Which of :data:`RUST_TIMER_PATHS` the store at ``root`` holds."""
    return [p for p in RUST_TIMER_PATHS if (Path(root) / p).exists()]


def byte_40_starts_no_record(root: str | os.PathLike, cp: dict | None, config: MessageStoreConfig | None = None) -> bool:
    """Whether the checkpoint's byte 40 (5.5's logicsPhysicalOffset, rocketmq-rust's
    indexSafePhyOffset) is set and no record (nor a file's end-of-file blank) begins
    there; False also when the commitlog file holding it is not there."""
    from ..format.commitlog import MAGIC_BLANK, MESSAGE_MAGICS

    if not cp or cp["logics_physical_offset"] <= 0:
        return False
    root, offset = Path(root), cp["logics_physical_offset"]
    if config is not None:
        file_size = config.mapped_file_size_commit_log
    else:  # the files' own size: every commitlog file is pre-allocated whole
        files = sorted(p for p in (root / COMMITLOG_DIR).glob("[0-9]" * 20) if p.is_file()) if (root / COMMITLOG_DIR).is_dir() else []
        file_size = files[0].stat().st_size if files else 0
    if file_size <= 0:
        return False
    base = offset - offset % file_size
    try:
        with open(root / COMMITLOG_DIR / f"{base:020d}", "rb") as fh:
            fh.seek(offset - base)
            head = fh.read(8)
    except OSError:
        return False
    return len(head) < 8 or int.from_bytes(head[4:8], "big") not in (*MESSAGE_MAGICS, MAGIC_BLANK)


def rust_evidence(root: str | os.PathLike, config: MessageStoreConfig | None = None, cp: dict | None = None) -> list[str]:
    """What in the store at ``root`` says rocketmq-rust wrote it (see the module); empty
    when nothing does.  ``cp``: its checkpoint's fields, when the caller has read them."""
    root = Path(root)
    said = []
    try:
        with open(root / "lock", "rb") as fh:
            lock = fh.read(64)
    except OSError:
        lock = b""
    if lock.startswith(b"pid="):
        pid = lock.splitlines()[0].decode("ascii", "replace")
        said.append(f"the lock file holds {pid!r} (rocketmq-rust's root_lock.rs; Java writes 'lock' there)")
    present = rust_timer_paths(root)
    if present:
        said.append(f"rocketmq-rust's v2 timer layout ({', '.join(present)})")
    cp = cp if cp is not None else read_checkpoint_fields(root)
    if byte_40_starts_no_record(root, cp, config):
        said.append(f"the checkpoint's byte 40 ({cp['logics_physical_offset']}) is no record's start: rocketmq-rust's "
                    "indexSafePhyOffset (the end of the last record indexed), not 5.5's logicsPhysicalOffset")
    return said


def tell_release(root: str | os.PathLike, config: MessageStoreConfig | None = None, told: str | None = None) -> ReleaseReading:
    """The releases that may have written the store at ``root`` (see the module).
    ``told``: the release the user names, which wins (an unknown name raises ValueError)."""
    if told:
        given = release(told)
        how = "--writer" if given.writer != "apache" else "--rocketmq-version"
        return ReleaseReading((given.name,), [f"given with {how}"], told=True)
    from .metadata import written_by_4x

    root = Path(root)
    cp = read_checkpoint_fields(root)
    rust = rust_evidence(root, config, cp)
    if rust:
        return ReleaseReading((release("rocketmq-rust").name,), rust)
    evidence: list[str] = []
    by_4x = written_by_4x(root)
    if by_4x:
        return ReleaseReading(("4.9.7",), ["config/topics.json has no TopicConfig attributes: a 4.x broker"])
    candidates = list(_5X)
    if by_4x is None:
        # as before releases were told apart: a 4.x store is known by its topics.json alone
        evidence.append("no config/topics.json to tell 4.x: a 5.x broker taken")

    def keep(allowed: tuple[str, ...], why: str) -> None:
        nonlocal candidates
        narrowed = [c for c in candidates if c in allowed]
        if narrowed != candidates and narrowed:
            candidates = narrowed
            evidence.append(why)

    if cp and cp["logics_physical_offset"] > 0:
        keep(("5.5.0",), "the checkpoint's logicsPhysicalOffset (byte 40) is set: 5.5+")
    if (root / CONSUMEQUEUE_ROCKSDB_DIR).is_dir():
        keep(("5.5.0",), f"{CONSUMEQUEUE_ROCKSDB_DIR}/ exists: 5.5+")
    if (root / MESSAGE_ROCKSDB_DIR).is_dir():
        keep(("5.4.0", "5.5.0"), f"{MESSAGE_ROCKSDB_DIR}/ exists (MessageRocksDBStorage): 5.4+")
    if any(is_timer_wheel_snapshot(p.name) for p in root.iterdir()):
        keep(("5.4.0", "5.5.0"), "a timer-wheel snapshot exists: 5.4+")
    if cp and cp["logics_msg_timestamp"] > 0 and cp["logics_physical_offset"] == 0 and _first_record_time(root) != cp["logics_msg_timestamp"]:
        keep(("5.3.3", "5.4.0"), "the checkpoint's logicsMsgTimestamp is set and its logicsPhysicalOffset is not: before 5.5")
    if not {"5.3.3"} & set(candidates):
        evidence = [e for e in evidence if not e.startswith("no config/topics.json")]  # 5.4+ evidence says 5.x itself
    return ReleaseReading(tuple(candidates), evidence)
