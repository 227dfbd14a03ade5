"""What RocketMQ's recovery makes of verify's findings.

Some of :func:`rmqlab.forensics.verify.verify_store`'s findings end "what RocketMQ's
recovery does with them depends on where it starts re-dispatching": a queue short of
records of the log (``CQ_BEHIND``), keyed records no index chain reaches
(``INDEX_MISSING``).  Recovery's plan (``DefaultMessageStore.recover``, dry run) says:
:func:`complete_findings` finishes their sentences, and a queue recovery leaves short
becomes an error.  ``rmqlab verify`` and :func:`rmqlab.spark.verify` both call it.
"""

from __future__ import annotations

from ..errors import RmqlabError
from .verify import RECOVERY_DECIDES


def complete_findings(findings: list, store, config, rocketmq_version: str | None = None, recovery=None) -> None:
    """Findings whose consequence depends on RocketMQ's recovery (a queue short of
    records of the log, keys no index reaches) completed with what its plan says
    (``rmqlab recover``'s dry run): records it does not put back are lost to
    consumers, and those findings become errors.  ``rocketmq_version``: whose recovery
    (default: the release the store shows; where releases would recover it differently,
    the findings say which one they follow).  ``recovery``: the plan's dry-run report
    when the caller has a whole one, else it is planned here."""
    behind = [f for f in findings if f.kind == "CQ_BEHIND"]
    missing = [f for f in findings if f.kind == "INDEX_MISSING"]
    if not behind and not missing:
        return
    from ..recovery.recover import plan as recovery_plan

    try:
        p = recovery_plan(store, config=config, rocketmq_version=rocketmq_version)
    except RmqlabError:
        return  # the store is past what recovery plans for; verify's findings say why
    r = p.report
    p.close()
    short = {q.queue: q for q in r.queues_short}
    # where releases differ on this store, say whose recovery the sentence follows
    whose = f"RocketMQ {r.release}'s" if r.release_outcomes else "RocketMQ's"
    for f in behind:
        f.message = f.message.replace(RECOVERY_DECIDES, "")
        q = short.get(f.message.split(" ", 1)[0])
        if q is not None:
            f.severity = "error"
            f.message += (f". {whose} recovery re-dispatches from {q.redispatch_from}: it does not put these {q.missing} back, the queue stays short "
                          "(consumers never see them)")
        else:
            f.message += f". {whose} recovery re-dispatches them"
    for f in missing:
        f.message = f.message.replace(RECOVERY_DECIDES, "")
        if r.index_unfindable:
            f.message += (f". After {whose} recovery {r.index_unfindable} keyed record(s) stay unfindable by key (first at "
                          f"{', '.join(map(str, r.index_unfindable_first))}); re-dispatch indexes the records from where it starts")
        else:
            f.message += f". {whose} recovery indexes them again (re-dispatch reaches them)"
