"""The store engine: put, dispatch, flush, clean (Java ``DefaultMessageStore``).

What to call first is :meth:`MessageStore.open` and :meth:`MessageStore.put`; the store
it writes is RocketMQ's, byte for byte, and reads back with :func:`rmqlab.open_store`:

>>> import tempfile
>>> from rmqlab import lookup, open_store
>>> from rmqlab.engine import Message, MessageStore
>>> root = tempfile.mkdtemp()
>>> with MessageStore.open(root) as store:
...     result = store.put(Message("Orders", b"paid", {"KEYS": "order-7"}, queue_id=1))
>>> result.status.name, result.wrote_offset, result.queue_offset
('PUT_OK', 0, 0)
>>> with open_store(root) as store:
...     [r.body for r in lookup.query_by_key(store, "Orders", "order-7").records]
[b'paid']

Everything here writes; the read side lives in :mod:`rmqlab.store`.  One module per
on-disk concept or service, each naming its Java counterpart:

* :mod:`.message_store` — :class:`MessageStore` (``DefaultMessageStore``): open/lock/
  abort, ``put``/``put_batch``, reput, flush, shutdown/crash, lookups, cleanup
* :mod:`.commitlog_writer` — ``CommitLog`` + ``MappedFileQueue`` + ``doAppend``
* :mod:`.dispatch` — ``doDispatch`` / ``DispatchRequest`` / ``CommitLogDispatcher``
* :mod:`.consume_queue_writer` — ``ConsumeQueue.putMessagePositionInfo``
* :mod:`.index_writer` — ``IndexFile.putKey`` / ``IndexService.buildIndex``
* :mod:`.flush` — ``FlushRealTimeService`` (ASYNC), ``GroupCommitService`` (SYNC)
* ``_put.c``, ``_group_commit.c`` — optional C modules: ``put``'s common case, and the
  SYNC group commit with a flusher thread that never takes the GIL (Python
  counterparts: ``MessageStore._put_python``, ``flush.GroupCommitService``)
* :mod:`.checkpoint_writer` — ``StoreCheckpoint``
* :mod:`.clean` — ``CleanCommitLogService`` / ``CleanConsumeQueueService``
* :mod:`.metadata` — ``config/*.json`` through ``MixAll.string2File``
* :mod:`.validation`, :mod:`.results`, :mod:`.message`, :mod:`.clock`, :mod:`.mapped_file`
"""

from ..writers.clock import ManualClock, SystemClock
from ..scan.dispatch_request import DispatchRequest
from ..writers.dispatch import CommitLogDispatcher
from .message import Message, MessageBatch, MessageInputError
from .message_store import MessageStore
from .results import PutMessageResult, PutMessageStatus

__all__ = [
    "CommitLogDispatcher",
    "DispatchRequest",
    "ManualClock",
    "Message",
    "MessageBatch",
    "MessageInputError",
    "MessageStore",
    "PutMessageResult",
    "PutMessageStatus",
    "SystemClock",
]
