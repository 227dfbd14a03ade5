"""An IndexFile, read side (Java ``IndexFile``), and the list of them (``IndexService``).

The hash-chain walk follows Java ``IndexFile.selectPhyOffset`` step by step,
including its stop rules (a prevIndex that is out of range or points at itself,
a negative timeDiff, an entry older than ``begin``), so that answers — collisions
included — equal RocketMQ's.  :meth:`IndexFile.walk_chain` also returns every step,
which is what the hash-chain lesson and ``verify`` show.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import StoreFormatError, StoreLayoutError
from ..files import MappedFile
from ..format.hashing import index_key_hash
from ..format.indexfile import (
    HASH_SLOT_SIZE,
    INDEX_ENTRY_SIZE,
    INDEX_HEADER_SIZE,
    entry_position,
    INVALID_INDEX,
    IndexEntry,
    IndexHeader,
    index_file_size,
    index_key,
)
from ..format.layout import fixed_dtype
from ..format.parse import parse_at

ENTRY_DTYPE = fixed_dtype(IndexEntry)
assert ENTRY_DTYPE.itemsize == INDEX_ENTRY_SIZE


@dataclass(frozen=True, slots=True)
class ChainStep:
    """One entry visited while walking a hash chain."""

    file: str
    number: int  # entry number in the file
    key_hash: int
    phy_offset: int
    time_diff: int
    prev_index: int
    timestamp: int  # beginTimestamp + timeDiff*1000
    hash_matches: bool
    time_matches: bool


class IndexFile:
    """One ``index/yyyyMMddHHmmssSSS`` file, read-only (Java ``IndexFile``): its header,
    and a key's hash chain walked slot first (:meth:`walk_chain`, as
    ``IndexFile.selectPhyOffset`` walks it).

    >>> from rmqlab import open_store
    >>> from rmqlab.lab.samples import shipped_dir
    >>> with open_store(shipped_dir() / "clean") as store:
    ...     f = store.index.files[0]
    ...     key_hash, slot, steps = f.walk_chain("Orders#order-1")
    ...     print(f.name, f.index_count, slot, [(s.phy_offset, s.hash_matches) for s in steps][-1])
    20260101100010555 ... (0, True)
    """

    def __init__(self, path: str | os.PathLike, max_hash_slot_num: int, max_index_num: int):
        self.path = Path(path)
        self.max_hash_slot_num = max_hash_slot_num
        self.max_index_num = max_index_num
        self.file = MappedFile(self.path)
        expected = index_file_size(max_hash_slot_num, max_index_num)
        if self.file.file_size != expected:
            raise StoreLayoutError(
                self.path,
                None,
                f"index file is {self.file.file_size} bytes; maxHashSlotNum={max_hash_slot_num} and "
                f"maxIndexNum={max_index_num} make {expected}",
            )
        self.header = parse_at(IndexHeader, self.file.buf, 0, file=str(self.path), what="index header")

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def begin_timestamp(self) -> int:
        return self.header.begin_timestamp

    @property
    def end_timestamp(self) -> int:
        return self.header.end_timestamp

    @property
    def index_count(self) -> int:
        return self.header.index_count

    def slots(self) -> np.ndarray:
        return np.frombuffer(self.file.buf, dtype=">i4", count=self.max_hash_slot_num, offset=INDEX_HEADER_SIZE)

    def entries(self) -> np.ndarray:
        """All ``maxIndexNum`` entry slots (entry 0 is never used)."""
        off = INDEX_HEADER_SIZE + self.max_hash_slot_num * HASH_SLOT_SIZE
        return np.frombuffer(self.file.buf, dtype=ENTRY_DTYPE, count=self.max_index_num, offset=off)

    def is_time_matched(self, begin: int, end: int) -> bool:
        """Java ``IndexFile.isTimeMatched``."""
        b, e = self.begin_timestamp, self.end_timestamp
        return (begin < b and end > e) or (b <= begin <= e) or (b <= end <= e)

    def walk_chain(self, key: str, begin: int = 0, end: int = 2**63 - 1, max_num: int | None = None) -> tuple[int, int, list[ChainStep]]:
        """Walk the chain for ``key`` (already ``topic#key``) as Java
        ``selectPhyOffset`` does.  Returns ``(key_hash, slot, steps)``."""
        key_hash = index_key_hash(key)
        slot = key_hash % self.max_hash_slot_num
        return key_hash, slot, self.walk_slot(slot, key_hash, begin, end, max_num)

    def walk_slot(self, slot: int, key_hash: int | None = None, begin: int = 0, end: int = 2**63 - 1, max_num: int | None = None) -> list[ChainStep]:
        """The chain of one hash slot, every step, with Java ``selectPhyOffset``'s stop
        rules; ``key_hash`` marks the steps whose hash matches (None: every step
        counts as a match, for showing a slot's whole chain)."""
        steps: list[ChainStep] = []
        count = self.index_count
        if not 0 <= slot < self.max_hash_slot_num:
            raise StoreFormatError(self.path, None, f"slot {slot} is outside [0, maxHashSlotNum={self.max_hash_slot_num})")
        slot_value = int(self.slots()[slot])
        if slot_value <= INVALID_INDEX or slot_value > count or count <= 1:
            return steps
        entries = self.entries()
        nxt = slot_value
        matched = 0
        seen: set[int] = set()
        while True:
            if nxt in seen:
                # a damaged prevIndex makes a loop; Java's selectPhyOffset would circle it
                # until maxNum matches (forever when none matches): stop and say where
                raise StoreFormatError(
                    self.path, entry_position(self.max_hash_slot_num, steps[-1].number),
                    f"the hash chain of slot {slot} loops: entry {steps[-1].number}'s prevIndex leads back to entry {nxt} (damaged index file)")
            seen.add(nxt)
            if max_num is not None and matched >= max_num:
                break
            if nxt >= len(entries):  # damaged slot/prev beyond the file: stop, do not read past
                break
            e = entries[nxt]
            time_diff = int(e["time_diff"])
            prev = int(e["prev_index"])
            if time_diff < 0:
                break
            ts = self.begin_timestamp + time_diff * 1000
            hm = key_hash is None or int(e["key_hash"]) == key_hash
            tm = begin <= ts <= end
            steps.append(ChainStep(self.name, nxt, int(e["key_hash"]), int(e["phy_offset"]), time_diff, prev, ts, hm, tm))
            if hm and tm:
                matched += 1
            if prev <= INVALID_INDEX or prev > count or prev == nxt or ts < begin:
                break
            nxt = prev
        return steps

    def close(self) -> None:
        self.file.close()


class IndexService:
    """All index files of a store, oldest first (Java ``IndexService``).

    >>> from rmqlab import open_store
    >>> from rmqlab.lab.samples import shipped_dir
    >>> with open_store(shipped_dir() / "clean") as store:
    ...     print(len(store.index.files), store.index.query_offset("Orders", "order-1"))
    5 [0]

    A file that cannot be read as an index file of these sizes (cut short, extended)
    is left out and its error kept in :attr:`problems`: one damaged file must not
    hide the others (key lookups then miss only what it held)."""

    def __init__(self, directory: str | os.PathLike, max_hash_slot_num: int, max_index_num: int):
        self.directory = Path(directory)
        self.files: list[IndexFile] = []
        self.problems: list[StoreFormatError] = []
        if self.directory.is_dir():
            for p in sorted(self.directory.iterdir()):
                if p.is_file() and p.name.isdigit():
                    try:
                        self.files.append(IndexFile(p, max_hash_slot_num, max_index_num))
                    except StoreFormatError as err:
                        self.problems.append(err)

    def query_offset(self, topic: str, key: str, max_num: int = 2**31 - 1, begin: int = 0, end: int = 2**63 - 1) -> list[int]:
        """Java ``IndexService.queryOffset``: raw hash matches, newest file first."""
        out: list[int] = []
        for f, steps in self.query_steps(topic, key, max_num, begin, end):
            for s in steps:
                if s.hash_matches and s.time_matches and len(out) < max_num:
                    out.append(s.phy_offset)
        return out

    def query_steps(self, topic: str, key: str, max_num: int = 2**31 - 1, begin: int = 0, end: int = 2**63 - 1):
        """``[(file, steps)]`` for every file searched, newest first, with Java's stop rules."""
        full = index_key(topic, key)
        out = []
        found = 0
        for f in reversed(self.files):
            steps: list[ChainStep] = []
            if f.is_time_matched(begin, end):
                _, _, steps = f.walk_chain(full, begin, end, max_num - found)
                found += sum(1 for s in steps if s.hash_matches and s.time_matches)
            out.append((f, steps))
            if f.begin_timestamp < begin or found >= max_num:
                break
        return out

    def close(self) -> None:
        for f in self.files:
            f.close()
