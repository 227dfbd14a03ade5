"""The sample stores, generated deterministically and shipped inside the package
(``sample_stores/`` of the source tree, ``rmqlab/lessons/stores/`` of an installed
package: beside the lessons that open them).

``rmqlab samples [DIR]`` writes them again; ``tests/lab/test_samples.py`` checks that
the shipped files equal a fresh generation byte for byte.  Everything that could vary
is fixed: the clock (:class:`~rmqlab.writers.clock.ManualClock`), the store host, the
random workload (a seeded :class:`random.Random`), and the time zone used for index
file names (UTC; Java names them in the broker's local time).

=============  =========================================================================
``clean/``     a store closed normally: three topics, several CommitLog files, BLANK
               end-of-file records, keys that collide in the index (``Aa``/``BB``), a
               batch sharing one store timestamp, a producer retry (duplicate UNIQ_KEY)
``crashed/``   the same workload, then the broker died: ``abort`` left behind, the last
               puts never flushed (their bytes are zero on disk), queues and index
               flushed less far than the CommitLog
``damaged/``   ``crashed/`` with damage a disk can do: one byte flipped inside a body
               in the middle of the log (a CRC failure) and the last record torn
               (its second half zeroed); ``damage.json`` lists every changed byte
=============  =========================================================================

The file sizes are tiny (64 KiB CommitLog files, 50-entry consume-queue files, 128
index slots) so that the structures fit on a screen; ``broker.conf`` in each store
says so, and every rmqlab reader infers them from the files anyway.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


from ..config import ASYNC_FLUSH, MessageStoreConfig
from ..format.consumequeue import CQ_STORE_UNIT_SIZE
from ..rules import ABORT_FILE, COMMITLOG_DIR

#: 2026-01-01T10:00:00Z: the fixed clock starts here
START_MS = 1_767_261_600_000
SEED = 20260101
STORE_HOST = (b"\x7f\x00\x00\x01", 10911)
SAMPLES = ("clean", "crashed", "damaged")
#: the stores other writers of the format wrote, that ``rmqlab samples`` copies beside the
#: sample stores (``DIR/rocketmq-rust/clean``): a source checkout holds them in
#: ``tests/stores/rocketmq-rust/CASE/store`` (scripts/rocketmq_rust_stores.py writes
#: them); a wheel carries them as one archive, :data:`OTHER_WRITERS_ARCHIVE`, made by the
#: build (setup.py reads this table)
OTHER_WRITERS = {"rocketmq-rust": ("clean", "killed", "timers")}
OTHER_WRITERS_ARCHIVE = "other-writers.tar.gz"


def sample_config() -> MessageStoreConfig:
    """The sizes every sample store uses (see the module docstring)."""
    return MessageStoreConfig(
        mapped_file_size_commit_log=64 * 1024,
        mapped_file_size_consume_queue=50 * CQ_STORE_UNIT_SIZE,
        max_hash_slot_num=128,
        max_index_num=512,
        flush_disk_type=ASYNC_FLUSH,
    )


def shipped_dir() -> Path:
    """The sample stores as the package ships them (read them; never write here: in an
    installed package this is the install folder)."""
    from .lessons import LESSONS_DIR

    return LESSONS_DIR / "stores"


def reference_dir() -> Path:
    """The stores Apache RocketMQ itself wrote, shipped for the lessons that compare
    with them (and the tests' fixtures): see ``PROVENANCE.md`` there."""
    return shipped_dir() / "reference"


def source_checkout() -> Path | None:
    """The root of the source tree rmqlab is imported from, or None for an installed
    package (a checkout has ``pyproject.toml`` beside the package)."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "sample_stores").is_dir() else None


def default_dir() -> Path:
    """Where ``rmqlab samples`` writes by default: in a source checkout the shipped copy
    (a maintainer regenerates it with ``--force``); in an installed package the
    platform's per-user data folder (``platformdirs.user_data_path``, e.g.
    ``~/.local/share/rmqlab/samples`` on Linux), never the install folder."""
    if source_checkout() is not None:
        return shipped_dir()
    import platformdirs

    return platformdirs.user_data_path("rmqlab") / "samples"


# -- the workload ----------------------------------------------------------------------------
@dataclass
class Put:
    """One producer send: ``messages`` (more than one = a batch), then the clock moves."""

    messages: list[dict]
    advance_ms: int


def uniq_key(seq: int, born_ms: int) -> str:
    """A producer-style ``UNIQ_KEY`` (Java ``MessageClientIDSetter``): ip, pid,
    class-loader hash, ms since the start of the month, counter — in hex."""
    month_start = 1_767_225_600_000  # 2026-01-01T00:00:00Z
    return f"7F000001{0x1F2E:04X}{0x5EED0001:08X}{(born_ms - month_start) & 0xFFFFFFFF:08X}{seq & 0xFFFF:04X}"


def workload(seed: int = SEED, count: int = 900) -> list[Put]:
    """The sends of the clean store, in order.

    Topics ``Orders`` (4 queues; tags created/paid/shipped; keys ``order-N cust-M``),
    ``Payments`` (2 queues; tags card/wallet; key ``order-N``), ``Audit`` (1 queue; no
    tags, no keys).  60–160 ms between sends, so the log spans about 100 s of store
    time; each message is born a few ms before it is stored.  Planted on purpose:
    messages keyed ``Aa`` and ``BB`` (equal Java hash), one batch of three (one store
    timestamp), one producer retry that repeats a ``UNIQ_KEY``, and a few large bodies
    that make CommitLog files roll sooner.
    """
    rng = random.Random(seed)
    puts: list[Put] = []
    order = 0
    for seq in range(count):
        kind = rng.random()
        if kind < 0.55 or seq in (40, 41, 300, 610):
            order += 1
            tag = rng.choice(["created", "paid", "shipped"])
            cust = rng.randint(1, 40)
            body = json.dumps({"order": order, "customer": cust, "status": tag, "amount": round(rng.uniform(3, 400), 2), "note": "x" * rng.randint(0, 200)})
            msg = dict(topic="Orders", queue_id=order % 4, tags=tag, keys=f"order-{order} cust-{cust}", body=body.encode())
            if seq in (40, 41, 300, 610):  # Aa / BB: same Java String.hashCode, different keys
                msg["keys"] = {40: "Aa", 41: "BB", 300: "BB", 610: "Aa"}[seq]
        elif kind < 0.85:
            ref = max(1, order - rng.randint(0, 5))
            tag = rng.choice(["card", "wallet"])
            body = json.dumps({"order": ref, "method": tag, "ok": rng.random() > 0.1})
            msg = dict(topic="Payments", queue_id=ref % 2, tags=tag, keys=f"order-{ref}", body=body.encode())
        else:
            body = bytes(rng.getrandbits(8) for _ in range(rng.randint(16, 96)))  # not a layout: body sizes
            msg = dict(topic="Audit", queue_id=0, tags=None, keys=None, body=body)
        if seq % 150 == 75:
            msg["body"] = (b"large payload " * 300)[: rng.randint(3000, 4000)]
        puts.append(Put([msg], advance_ms=rng.randint(60, 160)))
    # a batch: three messages in one send share one store timestamp (lesson 4: LOWER/UPPER)
    batch = [dict(topic="Orders", queue_id=2, tags="created", keys=f"batch-{i}", body=f"batch message {i}".encode()) for i in range(3)]
    puts.insert(200, Put(batch, advance_ms=100))
    # a producer retry: the same message (same UNIQ_KEY) stored twice, as after a timeout
    retry = dict(puts[400].messages[0], retry_of=puts[400].messages[0])
    puts.insert(402, Put([retry], advance_ms=90))
    # born timestamps follow the store clock: born a few ms before stored
    now, seq = START_MS, 0
    for p in puts:
        now += p.advance_ms
        born = now - rng.randint(1, 9)
        for m in p.messages:
            m["born_timestamp"] = born
            m["born_host"] = ("127.0.0.1", 50000 + seq % 7)
            original = m.pop("retry_of", None)
            m["uniq_key"] = original["uniq_key"] if original else uniq_key(seq, born)
            seq += 1
    return puts


# -- determinism helpers ----------------------------------------------------------------------
@contextmanager
def utc_time_zone():
    """Index files are named in local time (Java ``timeMillisToHumanString``): pin
    the zone so the names do not depend on the machine."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old
        time.tzset()


def _write_broker_conf(root: Path, cfg: MessageStoreConfig) -> None:
    keep = ("mappedFileSizeCommitLog", "mappedFileSizeConsumeQueue", "maxHashSlotNum", "maxIndexNum", "flushDiskType")
    java = cfg.to_java()
    (root / "broker.conf").write_text("".join(f"{k}={java[k]}\n" for k in keep))


def _message(m: dict):
    from ..engine.message import Message
    from ..format.msgid import parse_host

    properties = {}
    if m.get("keys"):
        properties["KEYS"] = m["keys"]
    properties["UNIQ_KEY"] = m["uniq_key"]
    if m.get("tags"):
        properties["TAGS"] = m["tags"]
    host, port = m["born_host"]
    return Message(m["topic"], m["body"], properties, queue_id=m["queue_id"], born_timestamp=m["born_timestamp"], born_host=parse_host(f"{host}:{port}"))


#: the sends after which the clean and crashed stores flush everything (the flush
#: service's work, at fixed points so that the result does not depend on timing)
FLUSH_EVERY = 100
#: the crashed store: how many sends come after the last full flush
UNFLUSHED_SENDS = 12
#: the abort file holds the writer's PID (Java ``createTempFile``); the samples hold
#: this one instead, so that a regeneration is byte-identical
SAMPLE_PID = "4242"


def _fill(store, puts: list[Put], clock) -> list:
    """Put every send, flushing everything every ``FLUSH_EVERY`` sends; the answers."""
    answers = []
    for i, p in enumerate(puts):
        clock.advance(p.advance_ms)
        msgs = [_message(m) for m in p.messages]
        r = store.put(msgs[0]) if len(msgs) == 1 else store.put_batch(msgs)
        if not r.ok:
            raise RuntimeError(f"sample put {i} failed: {r.status} {r.reason}")
        answers.append(r)
        if (i + 1) % FLUSH_EVERY == 0:
            store.flush()
    return answers


#: consumer groups of the Orders topic (committed offsets in config/consumerOffset.json):
#: ``billing`` keeps up with every message acknowledged, ``analytics`` is half way
GROUPS = ("billing", "analytics")


def _commit_groups(store) -> None:
    """What the two groups have consumed when the broker last persisted its offsets."""
    for q in range(4):
        end = store.queue_max_offset("Orders", q)
        store.commit_offset("billing", "Orders", q, end)
        store.commit_offset("analytics", "Orders", q, end // 2)


def _open(root: Path, clock):
    from ..engine.message_store import MessageStore

    return MessageStore.open(root, sample_config(), clock=clock, store_host=STORE_HOST, services=False)


def write_clean(root: Path) -> dict:
    """The workload, then a normal shutdown (checkpoint written, ``abort`` removed)."""
    from ..writers.clock import ManualClock

    clock = ManualClock(START_MS)
    puts = workload()
    store = _open(root, clock)
    answers = _fill(store, puts, clock)
    _commit_groups(store)
    store.shutdown()
    return {"sends": len(puts), "records": sum(len(p.messages) for p in puts), "end_offset": answers[-1].wrote_offset + answers[-1].wrote_bytes}


def write_crashed(root: Path) -> dict:
    """The same workload, but the broker dies near the end.

    After the last full flush, ``UNFLUSHED_SENDS`` more sends are acknowledged
    (ASYNC_FLUSH answers before the disk is forced); their consume-queue entries and
    index entries are flushed by their own service, the CommitLog pages are not. Then
    the machine loses power: the process stops without a shutdown (``abort`` stays,
    the pre-allocated next file stays) and the CommitLog bytes after the last flush
    never reached the disk — they are zero.  So the consume queues point at records
    that are not there: what lesson 8 recovers.
    """
    from ..writers.clock import ManualClock

    clock = ManualClock(START_MS)
    puts = workload()
    cut = len(puts) - UNFLUSHED_SENDS
    store = _open(root, clock)
    answers = _fill(store, puts[:cut], clock)
    store.flush()
    flushed = store.flushed_where
    answers += _fill(store, puts[cut:], clock)
    store.reput()
    # billing consumed the acknowledged messages the crash is about to take; the broker
    # persisted its offsets (its own timer, apart from the log's flush)
    _commit_groups(store)
    store.persist_metadata()
    store.flush_logics()  # consume queues and checkpoint (logicsMsgTimestamp) reach the disk
    store.dispatcher.index.flush()
    end = store.max_phy_offset
    store.crash()
    lost = _zero_commitlog_after(root, flushed, end, sample_config().mapped_file_size_commit_log)
    (root / ABORT_FILE).write_text(SAMPLE_PID)
    return {"sends": len(puts), "acknowledged_end": end, "flushed": flushed, "lost_bytes": lost, "acknowledged_but_lost": len(answers) - cut}


def _zero_commitlog_after(root: Path, start: int, end: int, file_size: int) -> int:
    """Power loss: the CommitLog bytes in ``[start, end)`` were only in the page cache."""
    n = 0
    pos = start
    while pos < end:
        base = pos - pos % file_size
        path = root / COMMITLOG_DIR / f"{base:020d}"
        upto = min(end, base + file_size)
        with open(path, "r+b") as fh:
            fh.seek(pos - base)
            fh.write(bytes(upto - pos))
        n += upto - pos
        pos = upto
    return n


def write_damaged(root: Path, crashed: Path) -> dict:
    """``crashed/`` plus two kinds of disk damage, listed in ``damage.json``:

    * a bit flip inside a body in the middle of the log, in a file that abnormal
      recovery does not scan (it starts at the checkpoint): RocketMQ never notices,
      only ``verify`` does;
    * a bit flip inside a body early in the last file: its body CRC fails, so
      recovery ends the log there and throws away every good record after it
      (lesson 9 salvages them);
    * the last record torn: its second half is zero, as after a write cut short.
    """
    from ..store.reader import open_store

    shutil.copytree(crashed, root)
    with open_store(root) as s:
        records = [r for r in s.commitlog.iter_records(check_crc=False) if not r.is_blank]
    last = records[-1]
    in_last_file = [r for r in records if r.file == last.file]
    middle = next(r for r in records[len(records) // 2 :] if r.topic == "Orders" and len(r.body) > 40)
    early = next(r for r in in_last_file[4:] if r.topic == "Orders" and len(r.body) > 40)
    changes = [
        _flip_body_bit(root, middle, "bit flip in a body, in a file abnormal recovery does not scan: only verify sees it"),
        _flip_body_bit(root, early, "bit flip in a body early in the last file: recovery ends the log here"),
    ]
    half = last.total_size // 2
    changes.append(_patch(root, Path(last.file).name, last.file_offset + half, lambda b: bytes(len(b)), last.total_size - half, "torn write: second half of the last record zeroed"))
    (root / "damage.json").write_text(json.dumps({"based_on": "crashed", "changes": changes}, indent=2) + "\n")
    return {"flipped_unscanned": middle.physical_offset, "flipped_scanned": early.physical_offset, "torn_record": last.physical_offset}


def _flip_body_bit(root: Path, rec, why: str) -> dict:
    # the body ends where topicLength (1 byte in V1), topic, propertiesLength (2) and
    # properties begin; flip one bit in the middle of it
    body_at = rec.file_offset + rec.total_size - len(rec.properties_raw) - 2 - len(rec.topic_raw) - 1 - len(rec.body)
    return _patch(root, Path(rec.file).name, body_at + len(rec.body) // 2, lambda b: bytes([b[0] ^ 0x10]), 1, why)


def _patch(root: Path, name: str, offset: int, change, length: int, why: str) -> dict:
    path = root / COMMITLOG_DIR / name
    with open(path, "r+b") as fh:
        fh.seek(offset)
        old = fh.read(length)
        new = change(old)
        fh.seek(offset)
        fh.write(new)
    return {"file": f"{COMMITLOG_DIR}/{name}", "offset": offset, "length": length, "old": old.hex(), "new": new.hex(), "why": why}


def other_writers_source() -> tuple[str, Path] | None:
    """Where the stores of :data:`OTHER_WRITERS` come from: ``("dir", tests/stores)`` in a
    source checkout, ``("archive", path)`` in an installed package, None where neither is."""
    root = source_checkout()
    if root is not None and (root / "tests" / "stores").is_dir():
        return "dir", root / "tests" / "stores"
    archive = shipped_dir() / OTHER_WRITERS_ARCHIVE
    return ("archive", archive) if archive.is_file() else None


def write_other_writers(target: Path) -> dict[str, dict]:
    """Copy the stores of :data:`OTHER_WRITERS` to ``target/WRITER/CASE``, holes kept (a
    timer wheel is tens of MB of mostly zeros); what was written, by name."""
    import tarfile

    source = other_writers_source()
    if source is None:
        return {}
    out = {}
    kind, where = source
    if kind == "dir":
        for writer, cases in OTHER_WRITERS.items():
            for case in cases:
                store = where / writer / case / "store"
                for p in sorted(store.rglob("*")):
                    dest = target / writer / case / p.relative_to(store)
                    if p.is_dir():
                        dest.mkdir(parents=True, exist_ok=True)
                    else:
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        with open(p, "rb") as src:
                            _write_sparse(src, dest, p.stat().st_size)
                out[f"{writer}/{case}"] = {"written by": writer}
        return out
    with tarfile.open(where, "r:gz") as tar:
        for m in tar.getmembers():
            parts = Path(m.name).parts  # WRITER/CASE/...
            if m.isdir() or len(parts) < 3 or ".." in parts or parts[0] not in OTHER_WRITERS:
                continue
            dest = target.joinpath(*parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            _write_sparse(tar.extractfile(m), dest, m.size)
            out[f"{parts[0]}/{parts[1]}"] = {"written by": parts[0]}
    return out


def _write_sparse(src, dest: Path, size: int, chunk: int = 1 << 16) -> None:
    """``size`` bytes of ``src`` into ``dest``, runs of zeros left as holes."""
    zeros = bytes(chunk)
    with open(dest, "wb") as out:
        while True:
            block = src.read(chunk)
            if not block:
                break
            if block == zeros[: len(block)]:
                out.seek(len(block), os.SEEK_CUR)
            else:
                out.write(block)
        out.truncate(size)


def generate_samples(target: str | os.PathLike | None = None, *, force: bool = False) -> dict[str, dict]:
    """Write ``clean/``, ``crashed/`` and ``damaged/`` under ``target``, and beside them the
    stores other writers wrote (:data:`OTHER_WRITERS`: ``rocketmq-rust/clean``, …), except
    into the package's own shipped folder (a source checkout holds those in ``tests/``).

    Existing sample stores are replaced only with ``force`` (they are shipped data).
    """
    target = Path(target) if target is not None else default_dir()
    target.mkdir(parents=True, exist_ok=True)
    others = target.resolve() != shipped_dir().resolve()
    existing = [n for n in SAMPLES if (target / n).exists()] + ([w for w in OTHER_WRITERS if (target / w).exists()] if others else [])
    if existing and not force:
        from ..errors import RmqlabError

        raise RmqlabError(f"{target}: {', '.join(existing)} already exist; pass --force to write them again")
    for n in existing:
        shutil.rmtree(target / n)
    out = {}
    with utc_time_zone():
        out["clean"] = write_clean(target / "clean")
        out["crashed"] = write_crashed(target / "crashed")
        out["damaged"] = write_damaged(target / "damaged", target / "crashed")
    _write_broker_conf(target, sample_config())
    (target / "README.md").write_text(SAMPLES_README)
    if others:
        out.update(write_other_writers(target))
    return out


SAMPLES_README = """# Sample stores

Small RocketMQ stores for the lessons beside this folder, written by rmqlab's engine
(`rmqlab.engine.MessageStore`: the bytes are RocketMQ's) with a fixed clock starting
2026-01-01T10:00:00Z. Do not edit them: `rmqlab samples --force` writes them again,
byte for byte, and rmqlab's test suite checks that the shipped files equal a fresh
generation. How they are made: `rmqlab/lab/samples.py`.

| store | what happened |
|---|---|
| `clean/` | 904 messages in topics `Orders` (4 queues), `Payments` (2), `Audit` (1); normal shutdown. Keys `Aa` and `BB` (equal Java hash), a batch of three sharing one store timestamp, a producer retry (duplicate `UNIQ_KEY`), BLANK end-of-file records. |
| `crashed/` | the same workload; the last 12 sends were acknowledged (ASYNC_FLUSH), their consume-queue and index entries flushed, but the CommitLog bytes were not: the machine lost power. `abort` left behind; the lost bytes are zero. |
| `damaged/` | `crashed/` plus disk damage listed in `damage.json`: a flipped bit in a body that recovery never scans, a flipped bit early in the last file (recovery ends the log there), and a torn last record. |
| `rocketmq-rust/` | where written with `rmqlab samples DIR`: stores rocketmq-rust 1.0.0's own store wrote (`clean`, `killed`: its process aborted, `timers`: its timer wheel on), for the guide on other writers. |

File sizes are tiny so that the structures fit on a screen (`broker.conf`): 64 KiB
CommitLog files, 50-entry consume-queue files, 128 index slots and 512 entries per
index file. rmqlab infers them from the files. The `abort` files hold `4242` instead of
the writer's PID, so that generation is reproducible.
"""


def sample_files(root: str | os.PathLike) -> dict[str, bytes]:
    """Every file under ``root`` (relative path → bytes): what the shipped-samples
    test compares."""
    root = Path(root)
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
