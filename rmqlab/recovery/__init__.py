"""Recovery: RocketMQ's start-up recovery (plan, dry run, apply).

* :func:`plan` — Java ``DefaultMessageStore.recover``'s decisions, read-only, in one
  scan: normal/abnormal, consume queues, commitlog scan with CRC, truncation,
  re-dispatch; a typed :class:`RecoveryPlan` whose ``report`` is the dry run's;
* :func:`apply` — carries a plan out on a copy or in place (cut bytes saved first);
* :func:`recover` — the two in one call; a dry run by default.
* :class:`RecoveryReport` — what it decided and did (``to_text()``, ``to_dict()``).
"""

from ..store.reader import infer_config  # re-exported: recovery's callers used it from here
from .recover import RecoveryPlan, apply, plan, recover
from .report import RecoveryReport

__all__ = ["RecoveryPlan", "RecoveryReport", "apply", "infer_config", "plan", "recover"]
