"""The crash lab: deterministic crashes over the engine, then RocketMQ's recovery.

Java counterpart: none — this is what you would do with a broker, a power switch and
a lot of patience.  A workload is put through :class:`rmqlab.engine.MessageStore`
with the background services off, so every flush happens at a known point, decided
by the same rules the broker's services follow (``flushCommitLogLeastPages`` dirty
pages or ``flushIntervalCommitLog`` for ASYNC_FLUSH, a forced flush per put for
SYNC_FLUSH, consume queues and checkpoint every ``flushIntervalConsumeQueue``),
with time taken from a :class:`~rmqlab.writers.clock.ManualClock`.

While it runs, the lab keeps a second copy of the store — the **disk** — that only
receives bytes when the engine forces them (``fdatasync``): the flushed part of the
commitlog, consume-queue entries up to their flushed position, index files and the
checkpoint when they are flushed, files when they are created.  Everything else
lives only in the page cache (the live directory).  A crash then picks what
survives::

    power loss          the disk; dirty 4 KiB pages are lost (or, with ``writeback``,
                        a seeded share of them had been written back by the OS)
    torn write          a put in flight: its bytes reached the disk up to byte X only
    kill -9             the page cache survives: everything written, nothing dispatched
                        after the last reput
    crash during roll   the BLANK and the new file's first record were not flushed
    crash during index  a new index file exists (created, zero-filled) but nothing in
      file creation     it was flushed

and :func:`rmqlab.recovery.recover` recovers a copy of that.  Each
:class:`CrashResult` names what was acknowledged, what was on disk, what recovery
kept, and what was lost and why.
"""

from __future__ import annotations

import os
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from .. import reprs
from ..rules import ABORT_FILE, CHECKPOINT_FILE, COMMITLOG_DIR, CONSUMEQUEUE_DIR, INDEX_DIR, LOCK_FILE
from ..config import ASYNC_FLUSH, SYNC_FLUSH, MessageStoreConfig
from ..format.consumequeue import CQ_STORE_UNIT_SIZE
from ..format.record import RecordError, decode_record
from ..recovery.recover import recover
from ..recovery.report import RecoveryReport

PAGE = 4096


def lab_config(**overrides) -> MessageStoreConfig:
    """Small files so crashes cross file boundaries quickly (overridable)."""
    base = dict(
        mapped_file_size_commit_log=64 * 1024,
        mapped_file_size_consume_queue=CQ_STORE_UNIT_SIZE * 40,
        max_hash_slot_num=16,
        max_index_num=64,
    )
    base.update(overrides)
    return MessageStoreConfig().replace(**base)


def workload(n: int, seed: int = 0, *, topics: Sequence[str] = ("TopicA", "TopicB"), queues: int = 2, body_sizes: tuple[int, int] = (0, 1500)):
    """``n`` deterministic messages (engine ``Message``s): tags, keys, varied bodies."""
    from ..engine.message import Message

    rng = random.Random(seed)
    out = []
    for i in range(n):
        size = rng.randint(*body_sizes)
        body = bytes(rng.getrandbits(8) for _ in range(min(size, 64))) * (size // 64 + 1)
        props = {"TAGS": f"Tag{i % 3}", "KEYS": f"k{i} order-{i % 7}", "UNIQ_KEY": f"LAB{seed:04d}{i:08d}"}
        out.append(Message(topics[i % len(topics)], body[:size], props, queue_id=rng.randrange(queues)))
    return out


@dataclass
class Acked:
    """One put the store answered."""

    seq: int
    status: str
    physical_offset: int
    size: int
    topic: str
    queue_id: int
    queue_offset: int
    acknowledged: bool  # PUT_OK (under SYNC_FLUSH: forced to disk before the answer)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class CrashResult:
    """What one crash did: acknowledged / on disk / kept / lost (with reasons)."""

    scenario: str
    description: str
    flush_disk_type: str
    puts: list[Acked]
    on_disk: list[int]  # seq of records intact (every byte) in the crashed image
    kept: list[int]  # seq of records in the log after recovery
    lost: list[tuple[int, str]]  # acknowledged but not kept: (seq, why)
    report: RecoveryReport
    image: str  # the crashed store (as the disk / page cache left it)
    recovered: str  # the recovered copy
    flushed_where: int  # commitlog bytes forced before the crash
    written_where: int  # commitlog bytes written before the crash
    notes: list[str] = field(default_factory=list)

    @property
    def acknowledged(self) -> list[int]:
        return [p.seq for p in self.puts if p.acknowledged]

    @property
    def lost_acknowledged(self) -> list[int]:
        return [s for s, _ in self.lost]

    def lost_by_reason(self) -> list[tuple[list[int], str]]:
        """The losses grouped: each reason once, with the puts it took (in put order).

        A power loss takes a dozen puts for one reason; saying it once per put buries
        the answer."""
        groups: dict[str, list[int]] = {}
        for seq, why in self.lost:
            groups.setdefault(why, []).append(seq)
        return [(seqs, why) for why, seqs in groups.items()]

    def to_dict(self) -> dict:
        return {
            "scenario": self.scenario,
            "description": self.description,
            "flush_disk_type": self.flush_disk_type,
            "acknowledged": self.acknowledged,
            "on_disk": self.on_disk,
            "kept": self.kept,
            "lost": [{"seq": s, "why": w} for s, w in self.lost],
            "flushed_where": self.flushed_where,
            "written_where": self.written_where,
            "puts": [p.to_dict() for p in self.puts],
            "recovery": self.report.to_dict(),
            "image": self.image,
            "recovered": self.recovered,
            "notes": self.notes,
        }

    def to_text(self) -> str:
        out = [f"crash lab: {self.scenario} ({self.flush_disk_type})", f"  {self.description}"]
        out.append(f"  puts           {len(self.puts)}, acknowledged {len(self.acknowledged)}")
        out.append(f"  commitlog      written up to {self.written_where}, forced to disk up to {self.flushed_where}")
        out.append(f"  on disk        {len(self.on_disk)} record(s) intact after the crash")
        out.append(f"  recovery       {self.report.mode}, end of log {self.report.commitlog_end}" + (f", stopped by {self.report.stop.kind}" if self.report.stop and not self.report.stop.zero_tail else ""))
        out.append(f"  kept           {len(self.kept)} record(s)")
        if self.lost:
            out.append(f"  LOST           {len(self.lost)} acknowledged record(s):")
            for seqs, why in self.lost_by_reason():
                out.append(f"                 {seq_ranges(seqs)}: {why}")
        else:
            out.append("  lost           nothing that was acknowledged")
        for n in self.notes:
            out.append(f"  note           {n}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:  # notebooks: counts, one square per put, why each loss
        return reprs.html("crash_result", self)


class _Disk:
    """The durable copy: receives bytes only when the engine forced them."""

    def __init__(self, live: Path, disk: Path):
        self.live = live
        self.disk = disk
        self.cl_durable = 0
        self.cq_durable: dict[str, int] = {}

    def _ensure(self, rel: str) -> Path:
        src, dst = self.live / rel, self.disk / rel
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            with open(dst, "wb") as fh:
                fh.truncate(src.stat().st_size)  # created (the engine fsyncs the directory), zero-filled
        return dst

    def copy_range(self, rel: str, start: int, end: int) -> None:
        if end <= start:
            return
        dst = self._ensure(rel)
        with open(self.live / rel, "rb") as fh:
            fh.seek(start)
            data = fh.read(end - start)
        with open(dst, "r+b") as fh:
            fh.seek(start)
            fh.write(data)

    def copy_whole(self, rel: str) -> None:
        src = self.live / rel
        dst = self._ensure(rel)
        shutil.copyfile(src, dst)

    def sync_files_only(self, store) -> None:
        """Files that exist now exist on disk (creation is forced: the engine fsyncs
        directories), zero-filled unless their bytes were forced."""
        for sub in (COMMITLOG_DIR, CONSUMEQUEUE_DIR, INDEX_DIR):
            d = self.live / sub
            if d.is_dir():
                for p in d.rglob("*"):
                    if p.is_file():
                        self._ensure(str(p.relative_to(self.live)))

    def sync(self, store) -> None:
        """Bring the disk up to what the engine has forced so far."""
        live = self.live
        self.sync_files_only(store)
        # commitlog: the forced prefix
        cl = store.commitlog
        fw = cl.flushed_where
        if fw > self.cl_durable:
            size = cl.mapped_file_size
            pos = self.cl_durable
            while pos < fw:
                base = pos - pos % size
                end = min(fw, base + size)
                self.copy_range(f"{COMMITLOG_DIR}/{base:020d}", pos - base, end - base)
                pos = end
            self.cl_durable = fw
        # consume queues: each file up to its flushed position
        for q in store.dispatcher.queues.values():
            for f in q.files:
                rel = str(Path(f.path).relative_to(live))
                old = self.cq_durable.get(rel, 0)
                if f.flushed_position > old:
                    self.copy_range(rel, old, f.flushed_position)
                    self.cq_durable[rel] = f.flushed_position
        # index files: whole file when flushed (not dirty any more)
        for f in store.dispatcher.index.files:
            rel = str(Path(f.file.path).relative_to(live))
            if not f.dirty and (self.disk / rel).read_bytes() != (live / rel).read_bytes():
                self.copy_whole(rel)
        # checkpoint: its live bytes change only when it is flushed
        cp = live / CHECKPOINT_FILE
        if cp.exists():
            dst = self.disk / CHECKPOINT_FILE
            if not dst.exists() or dst.read_bytes() != cp.read_bytes():
                self.copy_whole(CHECKPOINT_FILE)
        for name in (ABORT_FILE, LOCK_FILE):
            if (live / name).exists() and not (self.disk / name).exists():
                self.copy_whole(name)


class CrashLab:
    """Run workloads on the engine and crash them in chosen ways (see the module docs).

    ``workdir`` receives one directory per run (``live``, ``disk``, ``image``,
    ``recovered``).  ``config`` defaults to :func:`lab_config` (small files).
    """

    def __init__(self, workdir: str | os.PathLike, config: MessageStoreConfig | None = None, *, start_ms: int = 1_800_000_000_000, tick_ms: int = 10):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config = config or lab_config()
        self.start_ms = start_ms
        self.tick_ms = tick_ms
        self._runs = 0

    # -- the engine run ------------------------------------------------------------------------
    def _run(self, messages, flush: str, *, stop_after: int | None = None, dispatched: int | None = None, stop_when=None, stop_before_flush: bool = False):
        from ..writers.clock import ManualClock
        from ..engine.message_store import MessageStore

        self._runs += 1
        run = self.workdir / f"run{self._runs:03d}"
        if run.exists():
            shutil.rmtree(run)
        live, disk = run / "live", run / "disk"
        cfg = self.config.replace(flush_disk_type=flush)
        clock = ManualClock(self.start_ms, tick_ms=0)
        store = MessageStore(live, cfg, clock=clock, services=False, dispatch="manual")
        store.start()
        d = _Disk(live, disk)
        d.sync(store)
        puts: list[Acked] = []
        last_cl_flush = last_cq_flush = clock.ms
        n = len(messages) if stop_after is None else min(stop_after, len(messages))
        for i in range(n):
            clock.advance(self.tick_ms)
            r = store.put(messages[i])
            status = str(getattr(r.status, "name", r.status))
            puts.append(Acked(i, status, int(r.wrote_offset), int(r.wrote_bytes), messages[i].topic, messages[i].queue_id, int(r.queue_offset), status == "PUT_OK"))
            if dispatched is None or i < dispatched:
                store.reput()
            if stop_before_flush and stop_when is not None and stop_when(i, store):
                break  # the crash comes before anything else is forced
            # the broker's flush services, on the simulated clock
            if flush == ASYNC_FLUSH:
                dirty = store.commitlog.dirty_bytes()
                if dirty >= cfg.flush_commit_log_least_pages * PAGE or clock.ms - last_cl_flush >= cfg.flush_interval_commit_log:
                    (store.flush_commitlog if hasattr(store, "flush_commitlog") else store._flush_commitlog)()
                    last_cl_flush = clock.ms
            if clock.ms - last_cq_flush >= cfg.flush_interval_consume_queue:
                store.flush_logics()
                last_cq_flush = clock.ms
            d.sync(store)
            if not stop_before_flush and stop_when is not None and stop_when(i, store):
                break
        written = store.commitlog.max_offset
        flushed = store.commitlog.flushed_where
        return store, d, run, puts, written, flushed, cfg

    def _finish(self, scenario, description, store, disk: _Disk, run: Path, puts, written, flushed, cfg, *, image_from: str, writeback: float = 0.0, seed: int = 0, tear_at: int | None = None, torn_from: int | None = None, notes=None) -> CrashResult:
        store.crash()  # kill -9: no flush, no checkpoint, abort stays; page cache intact
        image = run / "image"
        if image_from == "live":  # process death only: the page cache survives
            shutil.copytree(run / "live", image)
        else:
            shutil.copytree(disk.disk, image)
            if writeback:
                self._writeback(run / "live", image, disk.cl_durable, written, cfg, writeback, seed)
        if tear_at is not None:
            if torn_from is not None:  # the torn page: the record's first bytes did land
                self._overlay(run / "live", image, torn_from, tear_at, cfg)
            self._tear(image, tear_at, written, cfg)
        # the lock file is not evidence; config/ is broker metadata
        recovered = run / "recovered"
        rep = recover(image, config=cfg, out=recovered, clock=_clock_after(self.start_ms, len(puts), self.tick_ms))
        on_disk = _intact(image, puts, cfg, run / "live")
        kept = _intact(recovered, puts, cfg, run / "live", end=rep.commitlog_end)
        lost = []
        kept_set = set(kept)
        for p in puts:
            if p.acknowledged and p.seq not in kept_set:
                lost.append((p.seq, _why(p, rep, flushed, tear_at, image_from, on_disk)))
        return CrashResult(scenario, description, cfg.flush_disk_type, puts, on_disk, kept, lost, rep, str(image), str(recovered), flushed, written, notes or [])

    @staticmethod
    def _writeback(live: Path, image: Path, durable: int, written: int, cfg, share: float, seed: int) -> None:
        """The OS had written back a seeded share of the dirty commitlog pages."""
        rng = random.Random(seed)
        size = cfg.mapped_file_size_commit_log
        first = durable - durable % PAGE
        for page in range(first, written, PAGE):
            if rng.random() >= share:
                continue
            base = page - page % size
            rel = f"{COMMITLOG_DIR}/{base:020d}"
            if not (live / rel).exists():
                continue
            with open(live / rel, "rb") as fh:
                fh.seek(page - base)
                data = fh.read(PAGE)
            lo = max(page, durable) - page
            with open(image / rel, "r+b") as fh:
                fh.seek(page - base + lo)
                fh.write(data[lo:])

    @staticmethod
    def _overlay(live: Path, image: Path, start: int, end: int, cfg) -> None:
        """Log bytes ``[start, end)`` reached the disk (copied from the page cache)."""
        size = cfg.mapped_file_size_commit_log
        pos = start
        while pos < end:
            base = pos - pos % size
            stop = min(end, base + size)
            rel = f"{COMMITLOG_DIR}/{base:020d}"
            with open(live / rel, "rb") as fh:
                fh.seek(pos - base)
                data = fh.read(stop - pos)
            with open(image / rel, "r+b") as fh:
                fh.seek(pos - base)
                fh.write(data)
            pos = stop

    @staticmethod
    def _tear(image: Path, at: int, written: int, cfg) -> None:
        """Bytes of the log from ``at`` on never reached the disk (zeros)."""
        size = cfg.mapped_file_size_commit_log
        for p in sorted((image / COMMITLOG_DIR).iterdir()):
            start = int(p.name)
            if start + size <= at:
                continue
            lo = max(0, at - start)
            with open(p, "r+b") as fh:
                fh.seek(lo)
                fh.write(bytes(size - lo))

    # -- scenarios ---------------------------------------------------------------------------------
    def power_loss(self, messages, *, flush: str = ASYNC_FLUSH, crash_after: int | None = None, writeback: float = 0.0, seed: int = 0) -> CrashResult:
        """Power fails after ``crash_after`` puts: only what was forced survives (plus a
        ``writeback`` share of dirty pages the OS happened to write)."""
        store, disk, run, puts, written, flushed, cfg = self._run(messages, flush, stop_after=crash_after)
        desc = f"power loss after {len(puts)} puts; dirty pages {'dropped' if not writeback else f'dropped except a {writeback:.0%} share written back by the OS'}"
        return self._finish("power loss", desc, store, disk, run, puts, written, flushed, cfg, image_from="disk", writeback=writeback, seed=seed)

    def torn_write(self, messages, *, at_byte: int | None = None, flush: str = SYNC_FLUSH) -> CrashResult:
        """Power fails while the last put's record is being written out: a power loss
        (only what was forced survives) plus a torn page — the in-flight record's bytes
        before ``at_byte`` reached the disk, the rest did not.  ``at_byte`` defaults to
        the middle of the last record.  The put in flight (and any put whose record
        reaches past ``at_byte``) was never answered.

        Under SYNC_FLUSH everything before the record in flight had been forced, so
        only that record is torn; under ASYNC_FLUSH the unforced puts before it are lost
        exactly as in :meth:`power_loss` after the same put, and the torn record lies
        beyond a gap of zeros."""
        store, disk, run, puts, written, flushed, cfg = self._run(messages, flush)
        inflight = puts[-1]
        if at_byte is None:
            at_byte = inflight.physical_offset + inflight.size // 2
        for p in puts:
            if p.physical_offset + p.size > at_byte:
                p.acknowledged = False  # in flight: no answer was sent
        desc = f"power loss while the record at {inflight.physical_offset} was being written: the log reached the disk up to byte {min(flushed, at_byte)}, and the torn record up to byte {at_byte}"
        result = self._finish("torn write", desc, store, disk, run, puts, written, flushed, cfg, image_from="disk", tear_at=at_byte, torn_from=inflight.physical_offset)
        return result

    def kill_before_dispatch(self, messages, *, dispatched: int, flush: str = ASYNC_FLUSH) -> CrashResult:
        """The process is killed after every put was appended but only the first
        ``dispatched`` were dispatched to consume queues and index (page cache survives)."""
        store, disk, run, puts, written, flushed, cfg = self._run(messages, flush, dispatched=dispatched)
        desc = f"kill -9 between append and dispatch: {len(puts)} appended, {dispatched} dispatched"
        return self._finish("kill between append and dispatch", desc, store, disk, run, puts, written, flushed, cfg, image_from="live")

    def crash_during_roll(self, messages, *, flush: str = ASYNC_FLUSH) -> CrashResult:
        """Power fails inside the put that rolled the commitlog to a new file: the new
        file exists (creation is forced), but neither the BLANK that closes the old file
        nor the new record had been forced; the put was never answered."""

        def rolled(i, store):
            files = store.commitlog.files
            return len(files) > 1 and files[-1].wrote_position > 0

        store, disk, run, puts, written, flushed, cfg = self._run(messages, flush, stop_when=rolled, stop_before_flush=True)
        if not rolled(0, store):
            store.crash()
            raise ValueError("the workload never rolled to a second commitlog file: use more or bigger messages")
        roller = puts[-1]
        roller.acknowledged = False
        size = cfg.mapped_file_size_commit_log
        # under SYNC_FLUSH the put had forced its bytes before it could answer; the crash
        # comes before that force: the disk is what the previous puts forced
        forced = disk.cl_durable
        disk.sync_files_only(store)
        desc = f"crash during the roll to file {roller.physical_offset - roller.physical_offset % size:020d} (put #{roller.seq} in flight)"
        return self._finish("crash during roll", desc, store, disk, run, puts, written, forced, cfg, image_from="disk")

    def crash_during_index_creation(self, messages, *, flush: str = SYNC_FLUSH) -> CrashResult:
        """Power fails right after a new index file was created because the previous one
        was full: the new file exists, zero-filled, nothing in it flushed."""
        state: dict = {}

        def created(i, store):
            n = len(store.dispatcher.index.files)
            grew = state.get("n") is not None and n > state["n"]
            state["n"] = n
            return grew

        store, disk, run, puts, written, flushed, cfg = self._run(messages, flush, stop_when=created)
        if not created(0, store) and state.get("n", 0) < 2:
            store.crash()
            raise ValueError("the workload never filled an index file: use more messages or a smaller maxIndexNum")
        desc = f"power loss right after index file #{len(store.dispatcher.index.files)} was created (nothing in it flushed)"
        return self._finish("crash during index file creation", desc, store, disk, run, puts, written, disk.cl_durable, cfg, image_from="disk")


def seq_ranges(seqs: Sequence[int]) -> str:
    """``#3, #7–#12`` (puts numbered as the lab numbers them)."""
    out: list[str] = []
    run: list[int] = []
    for s in sorted(seqs):
        if run and s != run[-1] + 1:
            out.append(f"#{run[0]}" if len(run) == 1 else f"#{run[0]}–#{run[-1]}")
            run = []
        run.append(s)
    if run:
        out.append(f"#{run[0]}" if len(run) == 1 else f"#{run[0]}–#{run[-1]}")
    return ", ".join(out)


def _clock_after(start: int, n: int, tick: int):
    from ..writers.clock import ManualClock

    return ManualClock(start + (n + 100) * tick + 60_000, tick_ms=1)


def _intact(root: Path, puts: list[Acked], cfg, live: Path, end: int | None = None) -> list[int]:
    """Puts whose record is in ``root`` byte for byte as it was written (live), below ``end``."""
    out = []
    size = cfg.mapped_file_size_commit_log
    cache: dict[str, bytes] = {}
    live_cache: dict[str, bytes] = {}
    for p in puts:
        if p.physical_offset < 0 or p.status != "PUT_OK":
            continue
        if end is not None and p.physical_offset + p.size > end:
            continue
        base = p.physical_offset - p.physical_offset % size
        rel = f"{COMMITLOG_DIR}/{base:020d}"
        if rel not in cache:
            f = root / rel
            cache[rel] = f.read_bytes() if f.exists() else b""
            lf = live / rel
            live_cache[rel] = lf.read_bytes() if lf.exists() else b""
        a = p.physical_offset - base
        got = cache[rel][a : a + p.size]
        if len(got) == p.size and got == live_cache[rel][a : a + p.size]:
            try:
                rec = decode_record(cache[rel], a, check_crc=True, read_body=False)
            except RecordError:
                continue
            if rec is not None and rec.crc_ok:
                out.append(p.seq)
    return out


def _why(p: Acked, rep: RecoveryReport, flushed: int, tear_at: int | None, image_from: str, on_disk: list[int]) -> str:
    if p.seq not in set(on_disk):
        if tear_at is not None and p.physical_offset + p.size > tear_at:
            return f"its bytes after {tear_at} never reached the disk (torn write)"
        if image_from == "disk" and p.physical_offset + p.size > flushed:
            return f"its pages were not forced before the crash (flushed up to {flushed}; ASYNC_FLUSH acknowledges before forcing)"
        return "its bytes on disk are not what was written"
    stop = rep.stop
    if stop is not None and p.physical_offset >= rep.commitlog_end:
        what = "end of the written data" if stop.zero_tail else f"{stop.kind} at {stop.physical_offset}"
        return f"intact on disk, but after the point where recovery stopped ({what}): cut"
    return "not kept by recovery"


@dataclass
class FarBackCrash:
    """A crashed store whose recovery depends on the RocketMQ release (see
    :func:`far_back_crash`): where it is, its settings, each put's ``(offset, size)``
    and the offset of the damaged record."""

    root: Path
    config: MessageStoreConfig
    puts: list[tuple[int, int]]
    damaged_at: int


def far_back_crash(root: str | os.PathLike, *, messages: int = 300, file_size: int = 4096) -> FarBackCrash:
    """A store of ~``messages * 520 / file_size`` small commitlog files, crashed before
    any flush (so its checkpoint is zeros), with one body byte flipped in the first
    record of the second file.  RocketMQ up to 5.3.3 walks back to file 0 (nothing is
    old enough by a zero checkpoint) and ends the log at the damage; 5.4+ looks back
    at most ``commitLogRecoverMaxNum`` (10) files and keeps everything after them, the
    damaged record included (rmqlab.releases)."""
    from ..engine import Message, MessageStore
    from ..format import properties as props
    from ..writers.clock import ManualClock

    root = Path(root)
    cfg = MessageStoreConfig(mapped_file_size_commit_log=file_size, mapped_file_size_consume_queue=CQ_STORE_UNIT_SIZE * 50)
    store = MessageStore.open(root, cfg, clock=ManualClock(1_700_000_000_000, tick_ms=1))
    puts = []
    for i in range(messages):
        r = store.put(Message("T", b"body-%04d-" % i + b"x" * 400, queue_id=i % 2, properties={props.TAGS: f"tag{i % 3}", props.KEYS: f"k{i}"}))
        puts.append((r.wrote_offset, r.wrote_bytes))
    store.crash()
    (root / CHECKPOINT_FILE).write_bytes(bytes(PAGE))
    bad = next(o for o, _ in puts if o >= file_size)
    path = root / COMMITLOG_DIR / f"{bad - bad % file_size:020d}"
    data = bytearray(path.read_bytes())
    data[bad % file_size + 200] ^= 0xFF  # inside the body ("body-…xxxx")
    path.write_bytes(bytes(data))
    return FarBackCrash(root, cfg, puts, bad)
