"""rocketmq-rust's timer store (v2 layout), read side: ``timer-v2/FORMAT``,
``timerwheel.v2/``, ``timerlog/v2/log/``, ``config/timercheck.a|b`` and
``config/timer-role.meta`` (layouts in :mod:`rmqlab.format.timer_v2`), read as
rocketmq-rust 1.0.0's ``TimerMessageStore.load`` reads them, and each checked as it
checks them.

:class:`RustTimerStore` answers what :class:`rmqlab.store.timer.TimerStore` answers for
Java's files (the timer-log units, the wheel's slots, the checkpoint, which units are
still to fire), so ``rmqlab timers``, ``verify``, ``info`` and recovery's list of cut
timers read either; :meth:`RustTimerStore.problems` lists what rocketmq-rust would
refuse, cut or rebuild at load, each with its file and byte offset.  Nothing here writes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import StoreFormatError
from ..format import timer_v2 as v2
from ..format.hashing import crc32c
from ..format.layout import fixed_dtype
from ..format.parse import parse_at
from ..format.timer import SLOT_DTYPE, SLOT_ROWS, SLOT_SIZE, TimerCheck, TimerLogEnd
from ..rules import CONFIG_DIR, TIMER_CHECK_FILE, TIMER_LOG_DIR

FORMAT_PATH = os.path.join(v2.FORMAT_DIR, v2.FORMAT_FILE)
_LEAD = fixed_dtype(v2.LogRecord)  # the integer fields before the reserved bytes and the checksum
#: one 80-byte timer-log record viewed in place (its leading fields, the record's stride)
RECORD_DTYPE = np.dtype({"names": _LEAD.names, "formats": [_LEAD[n] for n in _LEAD.names],
                         "offsets": [_LEAD.fields[n][1] for n in _LEAD.names], "itemsize": v2.RECORD_SIZE})
#: what units() returns: the logical offset, then the record's fields (native order)
UNIT_ROWS = np.dtype([("position", np.int64)] + [(n, _LEAD[n].newbyteorder("=")) for n in _LEAD.names])


@dataclass
class Problem:
    """Something rocketmq-rust's load refuses, cuts or rebuilds: ``kind`` is a finding
    kind of :mod:`rmqlab.forensics.kinds`, ``fatal`` when its load of the timer store
    fails there."""

    kind: str
    file: str
    offset: int | None
    message: str
    fatal: bool = False


def is_rust_timer_store(root: str | os.PathLike) -> bool:
    """A store root holding rocketmq-rust's v2 timer store (its ``timer-v2/FORMAT``)."""
    return (Path(root) / FORMAT_PATH).is_file()


class RustTimerStore:
    """rocketmq-rust's v2 timer store of a store root."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.format_path = self.root / FORMAT_PATH
        self.wheel_dir = self.root / v2.WHEEL_DIR
        self.log_dir = self.root / TIMER_LOG_DIR / v2.LOG_DIR
        self.check_path = self.root / CONFIG_DIR / TIMER_CHECK_FILE
        self._problems: list[Problem] = []
        self.fingerprint = self._format()
        self._checkpoint = None
        self._units = None
        self._slots = None
        self._gens = None

    # -- timer-v2/FORMAT ------------------------------------------------------------------------------
    def _format(self) -> dict | None:
        """``TimerStorageFingerprint.decode_checked``: magic, version, length, checksum and
        policy hash; anything else fails rocketmq-rust's load of the timer store."""
        f = str(self.format_path)
        data = self.format_path.read_bytes()
        if len(data) != v2.FORMAT_SIZE:
            return self._fail("TIMER_STORE", f, None, f"timer-v2/FORMAT is {len(data)} bytes, rocketmq-rust expects {v2.FORMAT_SIZE} "
                              "(TimerStorageFingerprint.decode_checked: InvalidLength; the timer store does not load)")
        c = parse_at(v2.StorageFormat, data, 0, file=f, what="timer storage format")
        why = None
        if c.magic != v2.FORMAT_MAGIC or c.version != v2.FORMAT_VERSION or c.size != v2.FORMAT_SIZE:
            why = f"magic 0x{c.magic:08x}, version {c.version}, size {c.size}: not TMR2 v2 of 64 bytes"
        elif crc32c(data[:60]) != c.checksum:
            why = "its CRC-32C does not match bytes 0–59"
        elif v2.policy_hash(c.precision_ms, c.wheel_slots, c.segment_size, c.page_size, c.record_version, c.delete_key_mode) != c.policy_hash:
            why = "its policy hash does not match its fields"
        elif not (c.precision_ms and c.wheel_slots and c.page_size > v2.PAGE_HEADER_SIZE and (c.page_size - v2.PAGE_HEADER_SIZE) % SLOT_SIZE == 0
                  and c.segment_size >= 2 * v2.RECORD_SIZE and c.segment_size % v2.RECORD_SIZE == 0):
            why = f"its policy (precision {c.precision_ms} ms, {c.wheel_slots} slots, {c.page_size}-byte pages, {c.segment_size}-byte segments) is invalid"
        if why:
            return self._fail("TIMER_STORE", f, 0, f"timer-v2/FORMAT: {why} (TimerStorageFingerprint.decode_checked; the timer store does not load)")
        return {k: v for k, v in c.items() if not k.startswith("_") and not k.startswith("reserved")}

    def _fail(self, kind: str, file: str, offset: int | None, message: str, fatal: bool = True):
        self._problems.append(Problem(kind, file, offset, message, fatal))
        return None

    # -- the checkpoint -------------------------------------------------------------------------------
    def checkpoint(self) -> dict | None:
        """The checkpoint rocketmq-rust's load uses (``TimerCheckpoint.new_with_policy``,
        ``select_for_storage``): of ``timercheck.a`` and ``.b``, the valid copy of the
        highest generation (magic, length, CRC-32C, FORMAT's policy hash, a durable length
        the timer log has); with neither file there, ``config/timercheck``'s seven longs.
        Keys as Java's (``last_read_time_ms`` …), with ``source`` naming the file.  Raises
        :class:`StoreFormatError` where rocketmq-rust's load fails (copies there, none valid)."""
        if self._checkpoint is None:
            self._checkpoint = self._read_checkpoint()
        return self._checkpoint or None

    def _read_checkpoint(self) -> dict:
        copies, rejected = [], []
        log_len = self.log_length()
        for name in ("a", "b"):
            p = self.check_path.with_name(f"{TIMER_CHECK_FILE}.{name}")
            if not p.exists():
                continue
            data = p.read_bytes()
            if len(data) != v2.CHECKPOINT_SIZE:
                rejected.append(f"{p.name}: {len(data)} bytes, not {v2.CHECKPOINT_SIZE}")
                continue
            c = parse_at(v2.CheckpointV2, data, 0, file=str(p), what="timer checkpoint v2")
            if c.magic != v2.CHECKPOINT_MAGIC or c.version != 2 or c.size != v2.CHECKPOINT_SIZE or crc32c(data[:124]) != c.checksum:
                rejected.append(f"{p.name}: its magic, version, length or CRC-32C is invalid")
            elif self.fingerprint and c.policy_hash != self.fingerprint["policy_hash"]:
                rejected.append(f"{p.name}: policy hash {c.policy_hash} is not timer-v2/FORMAT's {self.fingerprint['policy_hash']}")
            elif not 0 <= c.last_timer_log_flush_pos <= log_len:
                rejected.append(f"{p.name}: timer log durable length {c.last_timer_log_flush_pos} is unavailable; the log holds {log_len}")
            else:
                d = {k: v for k, v in c.items() if not k.startswith("_") and not k.startswith("reserved")}
                copies.append(dict(d, source=str(p)))
        for r in rejected:
            self._problems.append(Problem("TIMER_CHECK", str(self.check_path.parent), None,
                                          f"rocketmq-rust rejects timer checkpoint copy {r} (VersionedTimerCheckpointStore.load_best)"))
        if copies:
            return max(copies, key=lambda c: c["generation"])
        if rejected:
            raise StoreFormatError(self.check_path.parent, None, "no valid timer checkpoint copy (" + "; ".join(rejected)
                                   + "): rocketmq-rust's TimerCheckpoint.new_with_policy fails and the timer store does not load")
        if not self.check_path.exists():
            return {}
        data = self.check_path.read_bytes()
        c = parse_at(TimerCheck, data, 0, file=str(self.check_path), what="timer checkpoint")
        return dict({k: v for k, v in c.items() if not k.startswith("_")}, source=str(self.check_path), wheel_generation=None)

    # -- the timer log --------------------------------------------------------------------------------
    def _segments(self) -> list[tuple[int, Path]]:
        if not self.log_dir.is_dir():
            return []
        return sorted((int(p.name), p) for p in self.log_dir.iterdir() if p.is_file() and len(p.name) == 20 and p.name.isdigit())

    @property
    def records_per_segment(self) -> int:
        return int(self.fingerprint["segment_size"]) // v2.RECORD_SIZE - 1 if self.fingerprint else 0

    def log_length(self) -> int:
        """The timer log's logical length as rocketmq-rust's load finds it (the next
        record's logical offset)."""
        units, end = self.units()
        return end.position if end is not None else (int(units["position"][-1]) + v2.LOGICAL_RECORD_SIZE if len(units) else 0)

    def units(self) -> tuple[np.ndarray, TimerLogEnd | None]:
        """Every record before the timer log's end as ``SegmentedTimerLog.load_checked``
        finds it: sealed segments whole (each must be ``segment_size`` bytes ending in a
        blank record, else the load fails), the active segment up to its first record
        that does not decode (magic, version, size, CRC-32C) — the load cuts the file
        there.  A structured array (``position``: the logical offset, then the fields)."""
        if self._units is not None:
            return self._units
        segs = self._segments()
        per = self.records_per_segment
        span = per * v2.LOGICAL_RECORD_SIZE
        parts, end = [], None
        for k, (start, path) in enumerate(segs):
            if k and span and start != segs[k - 1][0] + span:
                self._fail("TIMER_STORE", str(path), None, f"timer log segment hole: expected a segment at {segs[k - 1][0] + span}, found {start} "
                           "(SegmentedTimerLog.load_checked: SegmentHole; the timer store does not load)")
            a = np.fromfile(path, np.uint8)
            n = min(len(a) // v2.RECORD_SIZE, per + 1)
            recs = a[: n * v2.RECORD_SIZE].view(RECORD_DTYPE)
            good = self._good_records(a, recs, v2.DATA_MAGIC)
            last = k + 1 == len(segs)
            bad = np.flatnonzero(~good[:per])
            stop = int(bad[0]) if len(bad) else min(n, per)
            blank_ok = n == per + 1 and bool(self._good_records(a[per * v2.RECORD_SIZE:], recs[per:per + 1], v2.BLANK_MAGIC)[0])
            if not last and (len(a) != self.fingerprint["segment_size"] or not blank_ok or stop < per):
                self._fail("TIMER_STORE", str(path), stop * v2.RECORD_SIZE if stop < per else per * v2.RECORD_SIZE,
                           f"sealed timer log segment {start} is {len(a)} bytes" + (f" and its record {stop} does not decode" if stop < per else "")
                           + f"; rocketmq-rust expects {self.fingerprint['segment_size']} bytes of records ending in a blank record "
                           "(SegmentedTimerLog.validate_sealed_segment; the timer store does not load)")
            if stop:
                part = np.zeros(stop, UNIT_ROWS)
                part["position"] = start + np.arange(stop, dtype=np.int64) * v2.LOGICAL_RECORD_SIZE
                for name in RECORD_DTYPE.names:
                    part[name] = recs[name][:stop]
                parts.append(part)
            if last:
                at = stop * v2.RECORD_SIZE
                sealed = stop == per and blank_ok
                tail = a[at:] if not sealed else a[:0]
                if not sealed:
                    end = TimerLogEnd(start + stop * v2.LOGICAL_RECORD_SIZE, str(path), at, bool(tail.any()))
                else:
                    end = TimerLogEnd(start + span, str(path), len(a), False)
        units = np.concatenate(parts) if parts else np.zeros(0, UNIT_ROWS)
        self._units = (units, end)
        return self._units

    @staticmethod
    def _good_records(a: np.ndarray, recs: np.ndarray, magic: int) -> np.ndarray:
        """Which 80-byte records decode (``TimerLogV2Record.decode_checked`` /
        ``is_blank_record``): the magic, version 2, size 80, and the CRC-32C of bytes 0–75."""
        ok = (recs["record_magic"] == magic) & (recs["version"] == v2.RECORD_VERSION) & (recs["size"] == v2.RECORD_SIZE)
        for i in np.flatnonzero(ok).tolist():
            b = a[i * v2.RECORD_SIZE:(i + 1) * v2.RECORD_SIZE].tobytes()
            ok[i] = crc32c(b[:76]) == int.from_bytes(b[76:80], "big")
        return ok

    def locate(self, position: int) -> tuple[str, int]:
        """The segment file and byte offset of the record at logical ``position``."""
        span = self.records_per_segment * v2.LOGICAL_RECORD_SIZE
        start = position // span * span if span else 0
        return str(self.log_dir / f"{start:020d}"), (position - start) // v2.LOGICAL_RECORD_SIZE * v2.RECORD_SIZE

    def unit_slot_ms(self, units: np.ndarray) -> np.ndarray:
        """The slot each record is chained into (its ``slot_time_ms``)."""
        return units["slot_time_ms"].astype(np.int64)

    def to_fire(self, units: np.ndarray, read_ms: int) -> np.ndarray:
        """Records still to fire: their slot at or after ``read_ms`` (the checkpoint's
        ``dequeue_slot_ms``, where rocketmq-rust's read cursor resumes,
        ``TimerPolicy.recover_read_time_ms``)."""
        return self.unit_slot_ms(units) >= read_ms

    def revised_from(self, checkpoint: dict | None) -> int | None:
        """rocketmq-rust rebuilds no slot from the log at a normal load (only when the
        wheel's pages are invalid, ``rebuild_timer_wheel_from_log``)."""
        return None

    # -- the wheel -------------------------------------------------------------------------------------
    @property
    def slots_per_page(self) -> int:
        return (int(self.fingerprint["page_size"]) - v2.PAGE_HEADER_SIZE) // SLOT_SIZE if self.fingerprint else 0

    def slot_location(self, index: int) -> tuple[str, int]:
        """The pages file and byte offset of slot ``index`` as loaded (the file of its
        page's generation: even ``pages.a``, odd ``pages.b``)."""
        page, k = divmod(index, self.slots_per_page)
        gen = self._page_generations().get(page, 0)
        return (str(self.wheel_dir / (v2.PAGES_A if gen % 2 == 0 else v2.PAGES_B)),
                page * int(self.fingerprint["page_size"]) + v2.PAGE_HEADER_SIZE + k * SLOT_SIZE)

    def _page_generations(self) -> dict[int, int]:
        """``PagedTimerWheel.load_expected_generations``: the generation each page must
        hold, from the ``generations`` journal up to the checkpoint's wheel generation
        (a record that does not decode, skips a generation or comes after it ends the
        journal; rocketmq-rust cuts the file there)."""
        if self._gens is not None:
            return self._gens
        path = self.wheel_dir / v2.GENERATIONS
        data = path.read_bytes() if path.exists() else b""
        try:
            committed = (self.checkpoint() or {}).get("wheel_generation")
        except StoreFormatError:
            committed = None
        load_all = committed is None
        at, last, gens = 0, 0, {}
        while len(data) - at >= v2.GENERATION_HEADER_SIZE + 4:
            h = parse_at(v2.GenerationHeader, data, at, file=str(path), what="generation record")
            size = v2.GENERATION_HEADER_SIZE + 4 * h.page_count + 4
            if (h.magic != v2.GENERATION_MAGIC or h.version != 2 or h.header_size != v2.GENERATION_HEADER_SIZE or h.record_size != size
                    or at + size > len(data) or crc32c(data[at:at + size - 4]) != int.from_bytes(data[at + size - 4:at + size], "big")
                    or h.generation != last + 1 or (not load_all and h.generation > committed)):
                break
            for i in range(h.page_count):
                gens[int.from_bytes(data[at + 24 + 4 * i:at + 28 + 4 * i], "big")] = h.generation
            last, at = h.generation, at + size
        if at != len(data):
            self._problems.append(Problem("TIMER_WHEEL", str(path), at, f"the generations journal ends at byte {at} of {len(data)}: rocketmq-rust cuts the rest at load "
                                          "(PagedTimerWheel.load_expected_generations: a record that does not decode, or one past the checkpoint's wheel generation)"))
        if not load_all and last != committed:
            self._problems.append(Problem("TIMER_WHEEL", str(path), at, f"the generations journal reaches generation {last}, the checkpoint's wheel generation is {committed}: "
                                          "rocketmq-rust rebuilds the wheel from the timer log (MissingGeneration → rebuild_timer_wheel_from_log)"))
        self._gens = gens
        return gens

    def slots(self) -> np.ndarray:
        """The wheel's used slots as rocketmq-rust loads them: each page from the file of
        the generation the journal names (``read_page``: magic, version, page id,
        generation, CRC-32C), slots with ``num > 0``; ``time_ms`` as stored (rocketmq-rust
        keeps the slot's time in ms)."""
        if self._slots is not None:
            return self._slots
        if not self.fingerprint:
            return np.zeros(0, SLOT_ROWS)
        psize, per = int(self.fingerprint["page_size"]), self.slots_per_page
        total = int(self.fingerprint["wheel_slots"])
        pages = -(-total // per)
        gens = self._page_generations()
        maps = {}
        for name in (v2.PAGES_A, v2.PAGES_B):
            p = self.wheel_dir / name
            if not p.exists() or p.stat().st_size < pages * psize:
                self._problems.append(Problem("TIMER_WHEEL", str(p), None, f"{name} is missing or shorter than {pages} pages of {psize} bytes: rocketmq-rust's load of the wheel fails "
                                              "and it rebuilds the wheel from the timer log"))
                maps[name] = None
            else:
                maps[name] = np.memmap(p, np.uint8, "r", shape=(pages * psize,))
        out = []
        for page in range(pages):
            gen = gens.get(page, 0)
            name = v2.PAGES_A if gen % 2 == 0 else v2.PAGES_B
            m = maps[name]
            if m is None:
                continue
            raw = np.asarray(m[page * psize:(page + 1) * psize])
            if gen == 0 and not raw.any():
                continue
            b = bytearray(raw.tobytes())
            h = v2.WheelPageHeader.parse(bytes(b[:v2.PAGE_HEADER_SIZE]))
            why = None
            if h.magic != v2.PAGE_MAGIC or h.version != 2 or h.header_size != v2.PAGE_HEADER_SIZE or h.page_id != page:
                why = "its header is not a TWP2 v2 page of this id"
            elif h.generation != gen:
                why = f"it holds generation {h.generation}, the journal names {gen}"
            elif h.payload_len > psize - v2.PAGE_HEADER_SIZE or h.payload_len % SLOT_SIZE:
                why = f"its payload length {h.payload_len} is invalid"
            else:
                b[28:32] = b"\0\0\0\0"
                if crc32c(bytes(b)) != h.checksum:
                    why = "its CRC-32C does not match"
            if why:
                self._problems.append(Problem("TIMER_WHEEL", str(self.wheel_dir / name), page * psize,
                                              f"wheel page {page}: {why}; rocketmq-rust falls back to an earlier checkpoint or rebuilds the wheel from the timer log (PagedTimerWheel.read_page)"))
                continue
            n = h.payload_len // SLOT_SIZE
            s = raw[v2.PAGE_HEADER_SIZE:v2.PAGE_HEADER_SIZE + n * SLOT_SIZE].view(SLOT_DTYPE)
            used = np.flatnonzero(s["num"] > 0)
            if len(used):
                rows = np.zeros(len(used), SLOT_ROWS)
                rows["index"] = page * per + used
                for f in SLOT_DTYPE.names:
                    rows[f] = s[f][used]
                rows["time_ms"] = rows["delayed_time"]
                out.append(rows)
        self._slots = np.concatenate(out) if out else np.zeros(0, SLOT_ROWS)
        return self._slots

    # -- the role -------------------------------------------------------------------------------------
    def role_epoch(self) -> int | None:
        """``TimerRoleState.load``: the highest valid epoch of ``config/timer-role.meta``'s
        two slots (None without the file)."""
        p = self.root / CONFIG_DIR / v2.ROLE_FILE
        if not p.exists():
            return None
        data = p.read_bytes()
        epochs = []
        for at in (0, 24):
            if len(data) < at + 24:
                continue
            r = v2.RoleRecord.parse(data[at:at + 24])
            if r.magic == v2.ROLE_MAGIC and r.version == v2.ROLE_VERSION and r.checksum == v2.role_checksum(r.epoch):
                epochs.append(r.epoch)
            elif any(data[at:at + 24]):
                self._problems.append(Problem("TIMER_STORE", str(p), at, "a role record whose magic, version or checksum is invalid: rocketmq-rust ignores it (TimerRoleState.load)"))
        return max(epochs, default=0)

    # -- all of it ------------------------------------------------------------------------------------
    def problems(self) -> list[Problem]:
        """Everything rocketmq-rust's load would refuse, cut or rebuild (reading each
        part first), but a checkpoint with no valid copy: :meth:`checkpoint` raises that."""
        if self.fingerprint:
            try:
                self.checkpoint()
            except StoreFormatError:
                pass
            self.units()
            self.slots()
        self.role_epoch()
        seen, out = set(), []
        for p in self._problems:
            if (p.kind, p.file, p.offset, p.message) not in seen:
                seen.add((p.kind, p.file, p.offset, p.message))
                out.append(p)
        return out

    def close(self) -> None:
        pass
