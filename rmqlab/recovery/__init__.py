"""Layer 4 — recovery: RocketMQ's start-up recovery (plan, dry run, apply) and a crash lab.

* :func:`recover` — Java ``DefaultMessageStore.recover``: normal/abnormal, consume
  queues, commitlog scan with CRC, truncation, re-dispatch; dry run by default.
* :class:`RecoveryReport` — what it decided and did (``to_text()``, ``to_dict()``).
* :mod:`rmqlab.recovery.crashlab` — deterministic crashes over the engine.
"""

from .crashlab import CrashLab, CrashResult, lab_config, workload
from ..store.reader import infer_config  # re-exported: recovery's callers used it from here
from .recover import recover
from .report import RecoveryReport

__all__ = ["CrashLab", "CrashResult", "RecoveryReport", "infer_config", "lab_config", "recover", "workload"]
