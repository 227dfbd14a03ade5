"""Layer 4 — the store engine: put, dispatch, flush, clean (Java ``DefaultMessageStore``).

Everything here writes; the read side lives in :mod:`rmqlab.store`.
"""

from .clock import ManualClock, SystemClock
from .dispatch import CommitLogDispatcher, DispatchRequest
from .message import Message, MessageInputError
from .message_store import MessageStore
from .results import PutMessageResult, PutMessageStatus

__all__ = [
    "CommitLogDispatcher",
    "DispatchRequest",
    "ManualClock",
    "Message",
    "MessageInputError",
    "MessageStore",
    "PutMessageResult",
    "PutMessageStatus",
    "SystemClock",
]
