"""The timer store of a 5.x broker, read side: ``timerwheel``, ``timerlog/``,
``config/timercheck`` (layouts in :mod:`rmqlab.format.timer`), and which timer
messages are pending, as RocketMQ's ``TimerMessageStore`` would see them at its next
start.

A timer message is a record of ``rmq_sys_wheel_timer`` (its consume queue lists them).
Its state, decided as ``TimerMessageStore.recover`` and the dequeue services would:

* ``pending`` — not yet in the timer log (the broker enqueues it from the timer queue
  at start, ``TimerMessageStore.enqueue``), or in it with a slot at or after the
  checkpoint's ``lastReadTimeMs`` (``currReadTimeMs`` resumes there, so it fires after
  the start: again, if it had fired after the last checkpoint);
* ``fired`` — its slot lies before ``lastReadTimeMs``: put back to its real topic;
* ``rolled`` — fired from a slot before ``lastReadTimeMs`` with ``MAGIC_ROLL``: its
  time lay past the roll window, so the broker re-put it to the timer topic (a later
  record, ``TIMER_ROLL_TIMES`` + 1, carries it on);
* ``cancel`` — a delete marker (``TIMER_DEL_UNIQKEY``), and ``cancelled`` the pending
  message it names.

Nothing here writes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import StoreFormatError, StoreLayoutError
from ..files import MappedFileQueue
from ..format import properties as props
from ..format.layout import fixed_dtype
from ..format.parse import parse_at
from ..format.timer import (
    BLANK_MAGIC_CODE, DEFAULT_PRECISION_MS, MAGIC_ROLL, SLOT_DTYPE, SLOT_ROWS, SLOTS_TOTAL, SLOT_SIZE, TIMER_DEL_UNIQKEY, TIMER_OUT_MS,
    TIMER_ROLL_TIMES, TIMER_TOPIC, UNIT_SIZE, WHEEL_LENGTH, TimerCheck, TimerLogEnd, TimerLogUnit, delete_key, magic_ok, slot_time,
)
from ..rules import CONFIG_DIR, TIMER_CHECK_FILE, TIMER_LOG_DIR, TIMER_WHEEL_FILE, timer_wheel_snapshot_flag
from .timer_v2 import RustTimerStore, is_rust_timer_store

UNIT_DTYPE = fixed_dtype(TimerLogUnit)
assert UNIT_DTYPE.itemsize == UNIT_SIZE
#: what units() returns: where each is, then its fields in native order
UNIT_ROWS = np.dtype([("position", np.int64)] + [(n, UNIT_DTYPE[n].newbyteorder("=")) for n in UNIT_DTYPE.names])

PENDING, FIRED, ROLLED, CANCEL, CANCELLED = "pending", "fired", "rolled", "cancel", "cancelled"


@dataclass
class TimerMessage:
    """One record of ``rmq_sys_wheel_timer`` and what the timer store holds of it."""

    physical_offset: int
    size: int
    queue_id: int
    queue_offset: int
    real_topic: str | None
    real_queue_id: int | None
    deliver_ms: int | None  # TIMER_OUT_MS
    state: str
    uniq_key: str | None
    keys: str | None
    roll_times: int
    timerlog_position: int | None  # its unit in the timer log (None: not enqueued yet)
    cancels: str | None = None  # a delete marker: TIMER_DEL_UNIQKEY (real topic + "+" + UNIQ_KEY)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


class TimerStore:
    """``timerwheel``, ``timerlog/`` and ``config/timercheck`` of a store root.
    ``precision_ms``: ``timerPrecisionMs`` (default 1000); ``log_file_size``:
    ``mappedFileSizeTimerLog`` (default: inferred from the files)."""

    def __init__(self, root: str | os.PathLike, *, precision_ms: int = DEFAULT_PRECISION_MS, log_file_size: int | None = None,
                 snapshot_flush: bool | None = None):
        self.root = Path(root)
        self.precision_ms = precision_ms
        #: the newest ``timerwheel.<offset>`` snapshot's offset when the broker loads the wheel
        #: from it (``timerWheelSnapshotFlush``, 5.4+), else None; and why
        self.snapshot_offset, self.snapshot_reason = self._snapshot(snapshot_flush)
        self.wheel_path = self.root / (TIMER_WHEEL_FILE if self.snapshot_offset is None else f"{TIMER_WHEEL_FILE}.{self.snapshot_offset}")
        self.check_path = self.root / CONFIG_DIR / TIMER_CHECK_FILE
        d = self.root / TIMER_LOG_DIR
        self.log = MappedFileQueue(d, log_file_size, strict=False) if d.is_dir() else None
        self._units = None

    def _snapshot(self, flush: bool | None) -> tuple[int | None, str | None]:
        """Java ``TimerMessageStore``'s constructor: with ``timerWheelSnapshotFlush`` the
        wheel is loaded from the snapshot of the highest offset
        (``TimerWheel.getMaxSnapshotFlag``), and the timer log is revised from that
        offset on (``setLastTimerLogFlushPos``: recovery chains every unit after it into
        the wheel again).  The setting not given: on when snapshots are there (only a
        broker with it on writes them)."""
        flags = [f for f in (timer_wheel_snapshot_flag(p.name) for p in self.root.iterdir() if p.is_file()) if f is not None] if self.root.is_dir() else []
        if flush is False or not flags:
            return None, None
        why = "timerWheelSnapshotFlush=true" if flush else "timerwheel.<offset> snapshots are there (timerWheelSnapshotFlush, not given, taken as on)"
        return max(flags), why

    def revised_from(self, checkpoint: dict | None) -> int | None:
        """The timer-log position ``TimerMessageStore.recover`` chains units into the
        wheel again from: the snapshot's offset when the wheel is a snapshot (the
        checkpoint's ``lastTimerLogFlushPos`` otherwise, not modelled here: None)."""
        return self.snapshot_offset if self.snapshot_offset is not None and self.snapshot_offset > 0 else None

    @classmethod
    def of(cls, root: str | os.PathLike, config=None) -> "TimerStore | None":
        """The timer store of a store root (None when it has none; rocketmq-rust's v2 one,
        :class:`rmqlab.store.timer_v2.RustTimerStore`, where its ``timer-v2/FORMAT`` is), with
        ``timerPrecisionMs`` / ``mappedFileSizeTimerLog`` from ``config``'s settings."""
        root = Path(root)
        if is_rust_timer_store(root):
            return RustTimerStore(root)
        if not (root / TIMER_WHEEL_FILE).exists() and not (root / TIMER_LOG_DIR).is_dir():
            return None
        extra = config.extra if config is not None else {}
        try:
            precision = int(extra.get("timerPrecisionMs", DEFAULT_PRECISION_MS))
            size = int(extra["mappedFileSizeTimerLog"]) if "mappedFileSizeTimerLog" in extra else None
        except ValueError as exc:
            raise StoreLayoutError(root, None, f"timerPrecisionMs / mappedFileSizeTimerLog: {exc}") from None
        flush = config.extra_flag("timerWheelSnapshotFlush") if config is not None else None
        return cls(root, precision_ms=precision or DEFAULT_PRECISION_MS, log_file_size=size, snapshot_flush=flush)

    # -- the checkpoint -------------------------------------------------------------------------------
    def checkpoint(self) -> dict | None:
        """``config/timercheck`` (None without it)."""
        if not self.check_path.exists():
            return None
        data = self.check_path.read_bytes()
        c = parse_at(TimerCheck, data, 0, file=str(self.check_path), what="timer checkpoint")
        return {k: v for k, v in c.items() if not k.startswith("_")}

    # -- the wheel --------------------------------------------------------------------------------------
    def slots(self) -> np.ndarray:
        """The wheel's used slots: a structured array (``index``, ``time_ms``, and the
        Slot fields), those whose stored time belongs to their index
        (``TimerWheel.getSlot`` answers -1 for the others)."""
        if not self.wheel_path.exists():
            return np.zeros(0, SLOT_ROWS)
        data = np.fromfile(self.wheel_path, np.uint8)
        if len(data) != WHEEL_LENGTH:
            raise StoreFormatError(self.wheel_path, None, f"timer wheel is {len(data)} bytes, TimerWheel expects {WHEEL_LENGTH} (TimerWheel: \"Timer wheel length\" refuses it)")
        raw = data.view(SLOT_DTYPE)
        index = np.arange(len(raw), dtype=np.int64)
        t = raw["delayed_time"].astype(np.int64)
        used = (t != 0) & (t % (SLOTS_TOTAL * 2) == index)
        out = np.zeros(int(used.sum()), SLOT_ROWS)
        out["index"] = index[used]
        out["time_ms"] = t[used] * self.precision_ms
        for n in SLOT_DTYPE.names:
            out[n] = raw[n][used]
        return out

    # -- the log ------------------------------------------------------------------------------------------
    def units(self) -> tuple[np.ndarray, TimerLogEnd | None]:
        """Every unit before the end of the timer log: a structured array (``position``
        and the unit's fields, native order), and where the log ends."""
        if self._units is not None:
            return self._units
        parts, end = [], None
        files = self.log.files if self.log is not None else []
        for i, f in enumerate(files):
            a = np.frombuffer(f.buf, np.uint8)
            n = len(a) // UNIT_SIZE
            u = a[: n * UNIT_SIZE].view(UNIT_DTYPE)
            good = (u["size"] == UNIT_SIZE) & magic_ok(u["magic"].astype(np.int64))
            bad = np.flatnonzero(~good)
            stop = int(bad[0]) if len(bad) else n
            if stop:
                part = np.zeros(stop, UNIT_ROWS)
                part["position"] = f.file_from_offset + np.arange(stop, dtype=np.int64) * UNIT_SIZE
                for k in UNIT_DTYPE.names:
                    part[k] = u[k][:stop]
                parts.append(part)
            at = stop * UNIT_SIZE
            if stop < n and int(u["magic"][stop]) == BLANK_MAGIC_CODE:
                continue  # the file's blank: the log goes on in the next file
            if stop == n and i + 1 < len(files):
                continue
            torn = bool(a[at : at + UNIT_SIZE].any())
            end = TimerLogEnd(f.file_from_offset + at, str(f.path), at, torn)
            break
        units = np.concatenate(parts) if parts else np.zeros(0, UNIT_ROWS)
        self._units = (units, end)
        return self._units

    def locate(self, position: int) -> tuple[str, int]:
        """The timer-log file and byte offset of the unit at ``position``."""
        f = self.log.find(position) if self.log is not None else None
        return (str(f.path), position - f.file_from_offset) if f is not None else (str(self.root / TIMER_LOG_DIR), position)

    def slot_location(self, index: int) -> tuple[str, int]:
        """The wheel file and byte offset of slot ``index``."""
        return str(self.wheel_path), index * SLOT_SIZE

    def problems(self) -> list:
        """Java's timer files have no checksums of their own: what verify finds is all."""
        return []

    def unit_slot_ms(self, units: np.ndarray) -> np.ndarray:
        """The slot each unit was chained into (write time + delay, to the precision)."""
        return slot_time(units["write_time"].astype(np.int64) + units["delay"].astype(np.int64), self.precision_ms)

    def to_fire(self, units: np.ndarray, read_ms: int) -> np.ndarray:
        """Which units are still to fire: their slot lies at or after ``read_ms`` (the
        checkpoint's ``lastReadTimeMs``: ``currReadTimeMs`` resumes there at start)."""
        return self.unit_slot_ms(units) >= read_ms

    def close(self) -> None:
        if self.log is not None:
            self.log.close()


def read_time_ms(checkpoint: dict | None) -> int:
    """The timer checkpoint's ``lastReadTimeMs`` (0 without a checkpoint: nothing has fired)."""
    return checkpoint["last_read_time_ms"] if checkpoint else 0


def timer_messages(store, timer: TimerStore | None = None, *, end: int | None = None):
    """Every timer message of the store (the records ``rmq_sys_wheel_timer``'s queues list
    before the end of the log, ``end``: default where RocketMQ serves up to), in queue
    order, each with its state (see the module's docstring)."""
    timer = timer or TimerStore.of(store.root, store.config)
    end = store.commitlog.served_end() if end is None else end
    if timer is not None:
        units, _ = timer.units()
        fire = timer.to_fire(units, read_time_ms(timer.checkpoint()))
        order = np.argsort(units["commitlog_offset"], kind="stable")
        u_off = units["commitlog_offset"].astype(np.int64)[order]
    else:
        units = fire = order = u_off = None
    out = []
    min_off = store.commitlog.min_offset
    for qid in store.queue_ids():
        if qid.topic != TIMER_TOPIC:
            continue
        cq = store.consume_queue(qid.topic, qid.queue_id)
        lo, hi = cq.valid_range(min_off)
        for q0, e in cq.parts(lo, hi):
            for k in range(len(e)):
                phy, size = int(e["commitlog_offset"][k]), int(e["size"][k])
                if phy + size > end:
                    continue
                rec = store.commitlog.read(phy, check_crc=False)
                p = rec.properties
                pos = None
                state = PENDING
                if units is not None and len(u_off):
                    # the last unit of this record: a roll re-enqueues a new record, never this one
                    j = np.searchsorted(u_off, phy, side="right") - 1
                    if j >= 0 and u_off[j] == phy:
                        i = order[j]
                        pos = int(units["position"][i])
                        if not fire[i]:
                            state = ROLLED if int(units["magic"][i]) & MAGIC_ROLL else FIRED
                cancels = p.get(TIMER_DEL_UNIQKEY)
                if cancels is not None and state == PENDING:
                    state = CANCEL
                out.append(TimerMessage(
                    phy, size, qid.queue_id, q0 + k, p.get(props.REAL_TOPIC), _int_or_none(p.get(props.REAL_QID)), _int_or_none(p.get(TIMER_OUT_MS)), state,
                    p.get(props.UNIQ_KEY), p.get(props.KEYS), _int_or_none(p.get(TIMER_ROLL_TIMES)) or 0, pos, cancels,
                ))
    # a pending delete marker cancels the pending message it names when their slot fires
    # (TimerMessageStore's dequeue: deleteList.contains(buildDeleteKey(realTopic, uniqKey)))
    names = {m.cancels for m in out if m.state == CANCEL}
    for m in out:
        if m.state == PENDING and m.uniq_key is not None and delete_key(m.real_topic or "", m.uniq_key) in names:
            m.state = CANCELLED
    return out


def _int_or_none(s: str | None) -> int | None:
    try:
        return int(s) if s is not None else None
    except ValueError:
        return None
