"""Recovery: RocketMQ's start-up recovery (plan, dry run, apply).

* :func:`recover` — Java ``DefaultMessageStore.recover``: normal/abnormal, consume
  queues, commitlog scan with CRC, truncation, re-dispatch; dry run by default.
* :class:`RecoveryReport` — what it decided and did (``to_text()``, ``to_dict()``).
"""

from ..store.reader import infer_config  # re-exported: recovery's callers used it from here
from .recover import recover
from .report import RecoveryReport

__all__ = ["RecoveryReport", "infer_config", "recover"]
