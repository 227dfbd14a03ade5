"""``rmqlab verify STORE`` — check every record, queue entry, index chain and state file.

Keeps going after damage and reports every finding with its kind, severity, file and
byte offset.  Exit status: 0 when there is no error, 1 when there are errors.
Read-only.
"""

from __future__ import annotations

import argparse

from .common import add_progress_option, add_store_options, commitlog_bytes, config_from_args, print_json, progress_bar


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("verify", help="check everything in a store and keep going", description=__doc__)
    add_store_options(p)
    p.add_argument("--json", action="store_true", help="print one JSON object: ok, stats, findings")
    p.add_argument("--errors-only", action="store_true", help="only print findings of severity error")
    add_progress_option(p)
    return p


def _what_recovery_does(rep, store, config) -> None:
    """Findings whose consequence depends on RocketMQ's recovery (a queue short of
    records of the log, keys no index reaches) completed with what its plan says
    (``rmqlab recover``'s dry run): records it does not put back are lost to
    consumers, and those findings become errors."""
    behind = rep.by_kind("CQ_BEHIND")
    missing = rep.by_kind("INDEX_MISSING")
    if not behind and not missing:
        return
    from ..errors import RmqlabError
    from ..forensics.verify import RECOVERY_DECIDES
    from ..recovery import plan as recovery_plan

    try:
        p = recovery_plan(store, config=config)
    except RmqlabError:
        return  # the store is past what recovery plans for; verify's findings say why
    r = p.report
    p.close()
    short = {q.queue: q for q in r.queues_short}
    for f in behind:
        f.message = f.message.replace(RECOVERY_DECIDES, "")
        q = short.get(f.message.split(" ", 1)[0])
        if q is not None:
            f.severity = "error"
            f.message += (f". RocketMQ's recovery re-dispatches from {q.redispatch_from}: it does not put these {q.missing} back, the queue stays short "
                          "(consumers never see them)")
        else:
            f.message += ". RocketMQ's recovery re-dispatches them"
    for f in missing:
        f.message = f.message.replace(RECOVERY_DECIDES, "")
        if r.index_unfindable:
            f.message += (f". After RocketMQ's recovery {r.index_unfindable} keyed record(s) stay unfindable by key (first at "
                          f"{', '.join(map(str, r.index_unfindable_first))}); re-dispatch indexes the records from where it starts")
        else:
            f.message += ". RocketMQ's recovery indexes them again (re-dispatch reaches them)"


def run(args) -> int:
    from ..forensics.verify import verify_store  # the compiled loops load with it: not for --help

    config = config_from_args(args)
    with progress_bar(args, commitlog_bytes(args.store), "verify") as bar:
        rep = verify_store(args.store, config, progress=bar)
    _what_recovery_does(rep, args.store, config)
    if args.errors_only:
        rep.findings = rep.errors
    if args.json:
        print_json(rep.to_dict())
    else:
        print(rep.to_text())
    return 0 if rep.ok else 1
