"""Generate big, realistic stores fast — for benchmarks and the Spark lesson.

Java counterpart: none; the bytes are what ``CommitLog.DefaultAppendMessageCallback
.doAppend`` writes, because every record is built by
:func:`rmqlab.format.encode.encode_record` (verified byte-exact against RocketMQ's
own records) and every file ends with :func:`~rmqlab.format.encode.encode_blank`
exactly as Java rolls a file (``recordSize + 8 > bytes left``).  Consume queues and
the index are built by the writers' :class:`rmqlab.writers.dispatch.CommitLogDispatcher`
(the same code recovery uses), fed :class:`~rmqlab.scan.dispatch_request.DispatchRequest`\\ s
made from what was written, so no record is parsed back.

The workload is deterministic for a seed:

* ``topics`` topics ``Topic00``.. with ``queues`` queues each, messages spread over
  them (a skewed, Zipf-like topic mix, so ``groupBy('topic')`` is not uniform);
* ``TAGS`` ``TagA``..``TagE`` on most messages, ``KEYS`` (one ``order-N`` key, or
  two keys) on about half, a producer-style ``UNIQ_KEY`` on every message;
* bodies of ``body_size`` bytes (or a ``min-max`` range): JSON-ish text;
* a clock that starts at ``start_ms`` and advances ``interval_us`` per message, so
  "messages per minute" is a meaningful question (born = store − a few ms);
* optional ``duplicates``: that fraction of messages re-sent with the ``UNIQ_KEY`` of
  an earlier one (a producer retry: what ``dropDuplicates`` in Spark is for).
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..rules import CHECKPOINT_FILE, COMMITLOG_DIR, fits_in_file
from ..config import MessageStoreConfig
from ..errors import RmqlabError
from ..files.mapped_file_queue import file_name_for_offset
from ..format import commitlog as cl
from ..format import properties as props
from ..format.checkpoint import CHECKPOINT_FILE_SIZE, CheckpointV5, zero_checkpoint
from ..format.encode import encode_blank, encode_record
from ..format.hashing import java_string_hash

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40}


def parse_size(text: str | int) -> int:
    """``"2GiB"``, ``"512m"``, ``"4096"`` → bytes (binary units)."""
    if isinstance(text, int):
        return text
    s = str(text).strip().lower().replace(" ", "").replace("_", "")
    num = s.rstrip("kmgtib")
    unit = s[len(num) :]
    if unit not in _UNITS or not num:
        raise ValueError(f"cannot read size {text!r} (examples: 2GiB, 512MiB, 4096)")
    return int(float(num) * _UNITS[unit])


def parse_range(text: str | int) -> tuple[int, int]:
    """``"200"`` → (200, 200); ``"100-300"`` → (100, 300); sizes may carry units."""
    if isinstance(text, int):
        return text, text
    lo, _, hi = str(text).partition("-")
    a = parse_size(lo)
    b = parse_size(hi) if hi else a
    if a < 0 or b < a:
        raise ValueError(f"bad range {text!r}")
    return a, b


@dataclass
class GenerateResult:
    root: Path
    records: int = 0
    bytes_written: int = 0  # commitlog bytes up to the end of the last record
    files: int = 0
    duplicates: int = 0
    seconds: float = 0.0
    first_store_timestamp: int = 0
    last_store_timestamp: int = 0
    topics: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "root": str(self.root),
            "records": self.records,
            "bytes_written": self.bytes_written,
            "files": self.files,
            "duplicates": self.duplicates,
            "seconds": round(self.seconds, 3),
            "first_store_timestamp": self.first_store_timestamp,
            "last_store_timestamp": self.last_store_timestamp,
            "records_per_topic": self.topics,
        }


class _FixedClock:
    """Index file names from the generated store time, not the wall clock."""

    def __init__(self):
        self.ms = 0

    def now_ms(self) -> int:
        return self.ms


_WORDS = [b"order", b"payment", b"user", b"item", b"status", b"shipped", b"created", b"amount", b"currency", b"EUR", b"region", b"eu-west"]


def _body_pool(rng: random.Random, size: int) -> bytes:
    parts = []
    total = 0
    while total < size:
        w = rng.choice(_WORDS)
        piece = b'"' + w + b'":' + str(rng.randrange(100000)).encode() + b","
        parts.append(piece)
        total += len(piece)
    return b"".join(parts)[:size]


def generate_store(
    root: str | os.PathLike,
    size: int | str,
    *,
    topics: int = 4,
    queues: int = 4,
    body_size: str | int | tuple[int, int] = 40,
    seed: int = 0,
    mapped_file_size: int | str = 1 << 30,
    start_ms: int = 1_767_225_600_000,  # 2026-01-01T00:00:00Z
    interval_us: int = 500,
    duplicates: float = 0.0,
    index: bool = True,
    consume_queues: bool = True,
    config: MessageStoreConfig | None = None,
    progress=None,
) -> GenerateResult:
    """Write a new store of about ``size`` commitlog bytes under ``root``.

    ``root`` must not hold a commitlog already (evidence is never overwritten).
    ``progress`` (:mod:`rmqlab.progress`) hears the bytes and records written so far.
    Returns counts and timings.
    """
    t0 = time.perf_counter()
    root = Path(root)
    size = parse_size(size)
    file_size = parse_size(mapped_file_size)
    body_lo, body_hi = body_size if isinstance(body_size, tuple) else parse_range(body_size)
    if size <= 0:
        raise ValueError(f"--size must be a positive number of bytes, not {size}")
    if file_size < 4096:
        raise ValueError(f"--file-size must be at least 4096 bytes, not {file_size}")
    if topics < 1 or queues < 1:
        raise ValueError("topics and queues must be at least 1")
    if body_hi > cl.MAX_MESSAGE_SIZE_DEFAULT:
        raise ValueError(f"body size {body_hi} is over maxMessageSize {cl.MAX_MESSAGE_SIZE_DEFAULT}")
    cdir = root / COMMITLOG_DIR
    if cdir.exists() and any(cdir.iterdir()):
        raise RmqlabError(f"{cdir}: already holds files; generate writes new stores only")
    cdir.mkdir(parents=True, exist_ok=True)
    cfg = (config or MessageStoreConfig()).replace(mapped_file_size_commit_log=file_size, store_path_root_dir=str(root))
    if not index:
        cfg = cfg.replace(message_index_enable=False)

    rng = random.Random(seed)
    pool = _body_pool(rng, max(body_hi, 1) * 2 + 4096)
    topic_names = [f"Topic{i:02d}" for i in range(topics)]
    topic_bytes = [t.encode() for t in topic_names]
    # skewed topic mix: weight 1/(i+1)
    weights = [1.0 / (i + 1) for i in range(topics)]
    cum = []
    acc = 0.0
    for w in weights:
        acc += w
        cum.append(acc / sum(weights))
    tags = ["TagA", "TagB", "TagC", "TagD", "TagE"]
    tag_codes = {t: java_string_hash(t) for t in tags}
    store_host = (b"\x0a\x00\x00\x01", 10911)
    born_hosts = [(bytes([10, 0, 1, i + 1]), 50000 + i) for i in range(8)]
    pid = rng.randrange(1, 0xFFFF)
    loader = rng.randrange(0, 1 << 32)
    month_start = start_ms - (start_ms % (30 * 86_400_000))  # a stable reference; only hex digits depend on it
    queue_offsets = [[0] * queues for _ in range(topics)]
    sent_uniq: list[str] = []

    dispatcher = None
    clock = _FixedClock()
    if consume_queues or index:
        from ..writers.dispatch import CommitLogDispatcher
        from ..scan.dispatch_request import DispatchRequest

        dispatcher = CommitLogDispatcher(root, cfg, clock=clock)
    result = GenerateResult(root=root)
    written = 0  # bytes of records so far
    file_index = 0
    seq = 0
    reqs = []
    rand = rng.random
    randrange = rng.randrange
    try:
        while written < size:
            base = file_index * file_size
            path = cdir / file_name_for_offset(base)
            with open(path, "wb") as fh:
                fh.truncate(file_size)  # full size, sparse, zero-filled (Java MappedFile)
                pos = 0
                parts = []
                pending = 0
                while written < size:
                    t = 0
                    r = rand()
                    while cum[t] < r:
                        t += 1
                    q = randrange(queues)
                    store_ts = start_ms + (seq * interval_us) // 1000
                    born_ts = store_ts - 1 - (seq % 7)
                    is_dup = bool(duplicates and sent_uniq and rand() < duplicates)
                    if is_dup:
                        uniq = sent_uniq[randrange(len(sent_uniq))]
                    else:
                        uniq = "0A000101%04X%08X%08X%04X" % (pid, loader, (born_ts - month_start) & 0xFFFFFFFF, seq & 0xFFFF)
                    pairs = []
                    tag = None
                    if rand() < 0.85:
                        tag = tags[randrange(5)]
                        pairs.append(("TAGS", tag))
                    keys = None
                    kr = rand()
                    if kr < 0.4:
                        keys = f"order-{seq // 3}"
                    elif kr < 0.5:
                        keys = f"order-{seq // 3} user-{seq % 1000}"
                    if keys:
                        pairs.append(("KEYS", keys))
                    pairs.append((props.UNIQ_KEY, uniq))
                    pairs.append(("WAIT", "true"))
                    properties = props.encode(pairs)
                    blen = body_lo if body_lo == body_hi else randrange(body_lo, body_hi + 1)
                    bstart = (seq * 37) % (len(pool) - blen) if len(pool) > blen else 0
                    body = pool[bstart : bstart + blen]
                    topic = topic_bytes[t]
                    rec_size = cl.record_size(len(body), len(topic), len(properties))
                    if not fits_in_file(rec_size, file_size - pos):
                        # Java: END_OF_FILE — a BLANK with the bytes left, then the next file
                        if pos == 0:
                            raise ValueError(f"a {rec_size}-byte record does not fit a {file_size}-byte commitlog file")
                        parts.append(encode_blank(file_size - pos))
                        break
                    if is_dup:
                        result.duplicates += 1
                    elif duplicates and len(sent_uniq) < 100_000:
                        sent_uniq.append(uniq)
                    qo = queue_offsets[t][q]
                    queue_offsets[t][q] = qo + 1
                    bh = born_hosts[seq % len(born_hosts)]
                    parts.append(
                        encode_record(
                            topic=topic,
                            body=body,
                            properties=properties,
                            queue_id=q,
                            flag=0,
                            queue_offset=qo,
                            physical_offset=base + pos,
                            sys_flag=0,
                            born_timestamp=born_ts,
                            born_host=bh,
                            store_timestamp=store_ts,
                            store_host=store_host,
                        )
                    )
                    if dispatcher is not None:
                        reqs.append(
                            DispatchRequest(
                                topic_names[t], q, base + pos, rec_size, tag_codes[tag] if tag else 0, store_ts, qo, keys, uniq, 0, 0
                            )
                        )
                    if result.records == 0:
                        result.first_store_timestamp = store_ts
                    result.last_store_timestamp = store_ts
                    result.topics[topic_names[t]] = result.topics.get(topic_names[t], 0) + 1
                    result.records += 1
                    seq += 1
                    pos += rec_size
                    written += rec_size
                    pending += rec_size
                    if pending >= (8 << 20):
                        fh.write(b"".join(parts))
                        parts, pending = [], 0
                        if dispatcher is not None:
                            clock.ms = store_ts
                            dispatcher.dispatch_batch(reqs)
                            reqs = []
                        if progress is not None:
                            progress.update(written, result.records)
                fh.write(b"".join(parts))
                result.bytes_written = base + pos
            file_index += 1
        if dispatcher is not None and reqs:
            clock.ms = result.last_store_timestamp
            dispatcher.dispatch_batch(reqs)
    finally:
        if dispatcher is not None:
            dispatcher.flush()
            dispatcher.close()
    result.files = file_index
    _write_checkpoint(root, result.last_store_timestamp)
    result.seconds = time.perf_counter() - t0
    return result


def _write_checkpoint(root: Path, ts: int) -> None:
    """A checkpoint as a clean shutdown leaves it (Java ``StoreCheckpoint.flush``)."""
    data = CheckpointV5.build(
        zero_checkpoint() | {"physic_msg_timestamp": ts, "logics_msg_timestamp": ts, "index_msg_timestamp": ts}
    )
    (root / CHECKPOINT_FILE).write_bytes(data + b"\0" * (CHECKPOINT_FILE_SIZE - len(data)))


