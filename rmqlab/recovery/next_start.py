"""The end of the log: where the store's next start leaves it.

One number answers "where does the log end" in every command, page and JSON field:
where RocketMQ's next start on the store ends the log under its release's rules
(rocketmq-rust's for its stores), as the recovery plan decides it
(:func:`rmqlab.recovery.recover.plan`: ``report.commitlog_end``).  For a store a broker
shut down cleanly that is where it stopped writing; after a crash, where its recovery
cuts.  ``dump``, ``queue``, ``lookup``, ``export``, ``timers``, ``map``, ``verify``,
``salvage``, ``report`` and the Spark jobs read it here; other boundaries (where a
walk from the first file meets damage the next start never reads) carry other names.

Where rmqlab makes no plan for a store (a DLedger log, a log kept elsewhere, a store
whose checkpoint cannot be read), :func:`log_end` answers None and the reader falls
back on the end of the last file's record chain
(:meth:`rmqlab.store.commitlog.CommitLog.served_end`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..config import MessageStoreConfig
from ..errors import RmqlabError
from ..store.reader import StoreReader


@dataclass(frozen=True)
class NextStart:
    """What the store's next start leaves of the log and its queues."""

    #: where it ends the log (Java ``processOffset``)
    log_end: int
    #: whether it cuts the consume queues' units at or past that end (Java: wherever the
    #: queues reach it; rocketmq-rust compares its lowest dispatch progress, which can lie
    #: below: ``RecoveryReport.queues_truncated``)
    queues_truncated: bool


def next_start(store: str | os.PathLike, *, config: MessageStoreConfig | None = None, rocketmq_version: str | None = None) -> NextStart | None:
    """What the next start of the store at ``store`` leaves (read-only), or None where no
    recovery plan can be made for it.  Costs the plan's first steps only: the queues'
    last files, the start file, and the walk from it."""
    from .recover import plan

    try:
        p = plan(store, config=config, rocketmq_version=rocketmq_version, log_only=True)
    except RmqlabError:
        return None
    try:
        return NextStart(p.report.commitlog_end, p.report.queues_truncated) if p.report.modelled else None
    finally:
        p.close()


def log_end(store: str | os.PathLike, *, config: MessageStoreConfig | None = None, rocketmq_version: str | None = None) -> int | None:
    """Where the next start of the store at ``store`` ends its log (Java ``processOffset``
    of ``CommitLog.recoverNormally`` / ``recoverAbnormally``), read-only; None where no
    recovery plan can be made for it (:func:`next_start`).

    >>> from rmqlab.lab.samples import shipped_dir
    >>> log_end(shipped_dir() / "damaged")   # a crashed store: where its recovery cuts
    263650
    """
    ns = next_start(store, config=config, rocketmq_version=rocketmq_version)
    return None if ns is None else ns.log_end


class Asked:
    """The next start of one store, planned once when a reader first needs it: its
    :meth:`log_end` and :meth:`queues_truncated` are what a
    :class:`~rmqlab.store.reader.StoreReader` takes (``log_end``, ``queues_truncated``)."""

    def __init__(self, store: str | os.PathLike, config: MessageStoreConfig | None = None, rocketmq_version: str | None = None):
        self.store, self.config, self.rocketmq_version = store, config, rocketmq_version
        self._answer: list[NextStart | None] = []

    def _ask(self) -> NextStart | None:
        if not self._answer:
            self._answer.append(next_start(self.store, config=self.config, rocketmq_version=self.rocketmq_version))
        return self._answer[0]

    def log_end(self) -> int | None:
        ns = self._ask()
        return None if ns is None else ns.log_end

    def queues_truncated(self) -> bool:
        ns = self._ask()
        return True if ns is None else ns.queues_truncated


def open_served(root: str | os.PathLike, config: MessageStoreConfig | None = None, *, rocketmq_version: str | None = None, **kwargs) -> StoreReader:
    """A store opened read-only as its next start serves it: its log ends where
    :func:`log_end` says, its queues as that start leaves them (found on first use).
    Keyword arguments as :class:`~rmqlab.store.reader.StoreReader`'s.  What
    ``rmqlab.open_store`` is.

    >>> from rmqlab import open_store
    >>> from rmqlab.lab.samples import shipped_dir
    >>> with open_store(shipped_dir() / "clean") as store:
    ...     first = next(store.commitlog.iter_records())
    ...     print(first.topic, first.queue_id, first.queue_offset, first.keys)
    Orders 1 0 order-1 cust-1
    """
    asked = Asked(root, config, rocketmq_version)
    return StoreReader(root, config, log_end=asked.log_end, queues_truncated=asked.queues_truncated, **kwargs)
