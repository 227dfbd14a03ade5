"""Decoding on a thread of its own while the caller writes what was decoded before.

Java counterpart: none.  ``dump --json`` and ``export`` decode a batch, then write it
(JSON lines, Parquet); both halves spend most of their time in compiled code that
releases the GIL (the decoder's loops, the JSON writer, Arrow's Parquet writer), so on
two cores the next batch is decoded while the last is written.
"""

from __future__ import annotations

import queue
import threading
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")

#: batches decoded ahead of the writer: two keep both busy; each is a few MiB
DEPTH = 2
_DONE = object()


def read_ahead(items: Iterable[T], depth: int = DEPTH) -> Iterator[T]:
    """The items of ``items`` in order, produced on another thread up to ``depth``
    ahead of the caller.  An exception the source raises is raised here after the items
    before it; closing this iterator early (a ``break``, a broken pipe) stops the source
    and closes it on its thread.  With one thread allowed
    (:func:`rmqlab.scan.kernels.set_threads`: Spark's tasks) it iterates in place."""
    from .kernels import threads

    if threads() < 2:
        yield from items
        return
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce():
        it = iter(items)
        try:
            for item in it:
                if not _put(q, stop, (item, None)):
                    return
        except BaseException as err:  # handed to the caller, in order
            _put(q, stop, (_DONE, err))
            return
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()
        _put(q, stop, (_DONE, None))

    th = threading.Thread(target=produce, name="rmqlab-read-ahead", daemon=True)
    th.start()
    try:
        while True:
            item, err = q.get()
            if item is _DONE:
                if err is not None:
                    raise err
                return
            yield item
    finally:
        stop.set()
        th.join()


def _put(q: queue.Queue, stop: threading.Event, item) -> bool:
    """``item`` into ``q`` once there is room; False if the caller stopped first."""
    while not stop.is_set():
        try:
            q.put(item, timeout=0.05)
            return True
        except queue.Full:
            continue
    return False
