"""The checkpoint file, read side (Java ``StoreCheckpoint``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .. import reprs
from ..errors import StoreFormatError
from ..format.checkpoint import CHECKPOINT_FILE_SIZE, CheckpointV5, min_timestamp
from ..format.parse import parse_at


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The five checkpoint fields (4.x files read with the last two zero)."""

    physic_msg_timestamp: int
    logics_msg_timestamp: int
    index_msg_timestamp: int
    master_flushed_offset: int = 0
    confirm_phy_offset: int = 0

    @property
    def min_timestamp(self) -> int:
        """Java ``getMinTimestamp``: where abnormal recovery may start."""
        return min_timestamp(self.physic_msg_timestamp, self.logics_msg_timestamp)

    def to_dict(self) -> dict:
        return {
            "physic_msg_timestamp": self.physic_msg_timestamp,
            "logics_msg_timestamp": self.logics_msg_timestamp,
            "index_msg_timestamp": self.index_msg_timestamp,
            "master_flushed_offset": self.master_flushed_offset,
            "confirm_phy_offset": self.confirm_phy_offset,
        }

    def _repr_html_(self) -> str:  # notebooks
        return reprs.html("checkpoint", self)


def read_checkpoint(path: str | os.PathLike) -> Checkpoint:
    """Parse a checkpoint file; errors name the file and offset."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StoreFormatError(path, None, f"cannot read checkpoint: {exc.strerror}") from None
    if len(data) < CheckpointV5.sizeof():
        raise StoreFormatError(path, len(data), f"checkpoint is {len(data)} bytes, needs at least {CheckpointV5.sizeof()} (normally {CHECKPOINT_FILE_SIZE})")
    c = parse_at(CheckpointV5, data, 0, file=str(path), what="checkpoint")
    return Checkpoint(c.physic_msg_timestamp, c.logics_msg_timestamp, c.index_msg_timestamp, c.master_flushed_offset, c.confirm_phy_offset)
