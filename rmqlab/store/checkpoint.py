"""The checkpoint file, read side (Java ``StoreCheckpoint``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .. import reprs
from ..errors import StoreFormatError
from ..format.checkpoint import CHECKPOINT_FILE_SIZE, FIELDS, CheckpointV5, min_timestamp
from ..format.parse import parse_at
from ..rules import CHECKPOINT_FILE


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The checkpoint's fields (older releases' files read with the later ones zero);
    Java ``StoreCheckpoint``.

    >>> from rmqlab import open_store
    >>> from rmqlab.lab.samples import shipped_dir
    >>> with open_store(shipped_dir() / "clean") as store:
    ...     cp = store.checkpoint()
    >>> cp.physic_msg_timestamp, cp.index_msg_timestamp
    (1767261697485, 1767261692726)
    >>> cp.min_timestamp       # where an abnormal start looks from: 3 s before the older of the first two
    1767261694485
    """

    physic_msg_timestamp: int
    logics_msg_timestamp: int
    index_msg_timestamp: int
    master_flushed_offset: int = 0
    confirm_phy_offset: int = 0
    logics_physical_offset: int = 0  # 5.5+

    @property
    def min_timestamp(self) -> int:
        """Java ``getMinTimestamp``: where abnormal recovery may start."""
        return min_timestamp(self.physic_msg_timestamp, self.logics_msg_timestamp)

    def to_dict(self) -> dict:
        return {name: getattr(self, name) for name in FIELDS}

    def _repr_html_(self) -> str:  # notebooks
        return reprs.html("checkpoint", self)


def read_checkpoint(path: str | os.PathLike) -> Checkpoint:
    """Parse a checkpoint file; errors name the file and offset.

    >>> from rmqlab.lab.samples import shipped_dir
    >>> read_checkpoint(shipped_dir() / "clean" / "checkpoint").logics_msg_timestamp
    1767261697485
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StoreFormatError(path, None, f"cannot read checkpoint: {exc.strerror}") from None
    if len(data) < CheckpointV5.sizeof():
        raise StoreFormatError(path, len(data), f"checkpoint is {len(data)} bytes, needs at least {CheckpointV5.sizeof()} (normally {CHECKPOINT_FILE_SIZE})")
    c = parse_at(CheckpointV5, data, 0, file=str(path), what="checkpoint")
    return Checkpoint(**{name: int(c[name]) for name in FIELDS})


def read_checkpoint_fields(root: str | os.PathLike) -> dict[str, int] | None:
    """The checkpoint's fields of the store at ``root`` as Java reads them: it maps the
    file a page long, so a short file reads zero-padded (where :func:`read_checkpoint`,
    for a reader, refuses it); None without a file."""
    path = Path(root) / CHECKPOINT_FILE
    try:
        data = path.read_bytes()[: CheckpointV5.sizeof()]
    except OSError:
        return None
    c = CheckpointV5.parse(data.ljust(CheckpointV5.sizeof(), b"\0"))
    return {name: int(c[name]) for name in FIELDS}
