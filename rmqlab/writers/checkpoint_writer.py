"""The checkpoint file, write side (Java ``StoreCheckpoint``).

4096 bytes; the int64 fields of :data:`rmqlab.format.checkpoint.CheckpointV5` at its
start (offsets derived from the schema), the rest zero.  The engine writes as RocketMQ
5.3.3 does: ``logicsPhysicalOffset`` (5.5+) is kept as the file had it (0 in a store
rmqlab made), never advanced.  Java keeps the
values in memory and writes them all on ``flush()``, then forces the page.

* ``physicMsgTimestamp`` — store time of the last record of the commitlog flushed,
  set after each commitlog flush;
* ``logicsMsgTimestamp`` — store time of the last record dispatched to a consume
  queue, set after each consume-queue flush;
* ``indexMsgTimestamp`` — ``endTimestamp`` of the last index file that filled up
  and was flushed (Java ``IndexService.flush``).

Recovery after a crash starts at a commitlog file whose first record is older than
``min(physic, logics) − 3 s``, and drops index files newer than ``index``.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from ..format.checkpoint import CHECKPOINT_FILE_SIZE, FIELDS, CheckpointV5
from .mapped_file import WritableMappedFile, fsync_directory

LAYOUT = struct.Struct(">" + "q" * len(FIELDS))
assert LAYOUT.size == CheckpointV5.sizeof()


class StoreCheckpointWriter:
    """Java ``StoreCheckpoint``: values in memory, written and forced by :meth:`flush`."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        existed = self.path.exists() and self.path.stat().st_size > 0
        self.file = WritableMappedFile(self.path, CHECKPOINT_FILE_SIZE, 0)
        if existed:
            values = LAYOUT.unpack_from(self.file.mm, 0)
        else:
            values = (0,) * len(FIELDS)
            fsync_directory(self.path.parent)
        for name, v in zip(FIELDS, values):
            setattr(self, name, v)

    def values(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in FIELDS}

    def flush(self) -> None:
        """Java ``StoreCheckpoint.flush``: write every field, force the page."""
        if self.file.mm is None:
            return
        LAYOUT.pack_into(self.file.mm, 0, *(getattr(self, n) for n in FIELDS))
        os.fdatasync(self.file.fd)

    def close(self) -> None:
        self.file.close()
