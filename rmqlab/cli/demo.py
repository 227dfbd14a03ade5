"""``rmqlab demo`` — a guided run over the sample stores shipped with the package.

It reads, writes, crashes, recovers and inspects, printing what each step shows, and
changes nothing of the stores it reads: writes and recoveries go to a temporary
directory (or ``--workdir``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from .. import lookup
from ..rules import COMMITLOG_DIR
from ..errors import RmqlabError
from ..forensics.hexview import HexView
from ..render.text import record_line
from . import HELP


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("demo", help=HELP["demo"], description=__doc__)
    p.add_argument("--samples", help="a folder holding the sample stores (clean/, crashed/, damaged/ as `rmqlab samples` writes them; default: the copy shipped with the package)")
    p.add_argument("--workdir", help="where scratch stores go (default: a temporary directory, removed afterwards)")
    return p


def heading(n: int, text: str) -> None:
    print(f"\n{'═' * 78}\n {n}. {text}\n{'═' * 78}")


def run(args) -> int:
    from ..lab.samples import SAMPLES, shipped_dir

    samples = Path(args.samples) if args.samples else shipped_dir()
    for name in SAMPLES:
        if not (samples / name / COMMITLOG_DIR).is_dir():
            hint = f"write them with `rmqlab samples {samples}`" if args.samples else "this installation of rmqlab lacks its package data (reinstall it)"
            raise RmqlabError(f"{samples / name}: sample store missing; {hint}")
    work = Path(args.workdir).resolve() if args.workdir else Path(tempfile.mkdtemp(prefix="rmqlab-demo-"))
    # the stores named as the lessons name them (stores/clean), not by the folder the
    # package is installed in: the tour runs beside them
    here = os.getcwd()
    os.chdir(samples.resolve().parent)
    try:
        _tour(Path(samples.resolve().name), work)
    finally:
        os.chdir(here)
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\nThe stores are in {samples.resolve()}; `rmqlab samples DIR` writes a copy of your own to try the commands on.")
    print("Next: `rmqlab lab` opens the eleven lessons in JupyterLab; `rmqlab --help` lists every command.")
    return 0


def _tour(samples: Path, work: Path) -> None:
    from ..engine import ManualClock, Message, MessageStore
    from ..forensics.salvage import salvage_path
    from ..forensics.verify import verify_store
    from ..recovery import recover
    from ..lab.samples import sample_config
    from ..store import open_store
    from ..store.summary import summarize

    clean = samples / "clean"
    heading(1, f"What is in a store: {clean}")
    with open_store(clean) as store:
        s = summarize(store)
        print(f"{len(s.commitlog_files)} commitlog files named by start offset, log ends at {s.commitlog_end_offset}")
        print(f"{s.records} messages, {s.blanks} BLANK end-of-file records, {s.crc_failures} CRC failures")
        print(f"{len(s.consume_queues)} consume queues, {len(s.index_files)} index files; abort file: {'present' if s.abort is not None else 'absent (clean shutdown)'}")

        heading(2, "The first records, in commitlog order")
        for i, rec in enumerate(store.commitlog.iter_records()):
            if i == 5:
                break
            print(record_line(rec))

        heading(3, "The bytes of the first record, field by field (from the construct schema)")
        first = store.commitlog.queue.files[0].path
        print(HexView(first, 0, 64).to_text())

        heading(4, "Lookup by key: 'Aa' and 'BB' share a Java hash, so the index cannot tell them apart")
        for key in ("Aa", "BB"):
            res = lookup.query_by_key(store, "Orders", key)
            print(f"Orders#{key}: {len(res.raw_offsets)} index hits {res.raw_offsets} -> {len(res.records)} record(s) really carry the key, {len(res.collisions)} collision(s)")

    heading(5, "Writing: three puts into a scratch store with rmqlab's engine")
    scratch = work / "scratch"
    store = MessageStore.open(scratch, sample_config(), clock=ManualClock(1_767_261_600_000), store_host="127.0.0.1:10911")
    try:
        for i, tags in enumerate(("TagA", "TagB", "TagA")):
            r = store.put(Message("DemoTopic", f"hello {i}".encode(), {"TAGS": tags, "KEYS": f"order-{i}"}, queue_id=0))
            print(r)
        store.reput()
        rec = store.query_message("DemoTopic", "order-1").records[0]
        print(f"lookup DemoTopic#order-1 -> {record_line(rec)}")
    finally:
        store.shutdown()

    crashed = samples / "crashed"
    heading(6, f"Recovery of a crashed store (dry run: nothing is written): {crashed}")
    print(recover(crashed).to_text())

    damaged = samples / "damaged"
    heading(7, f"Forensics on a damaged store: verify keeps going, salvage finds what recovery cuts: {damaged}")
    report = verify_store(damaged)
    text = report.to_text().splitlines()
    print("\n".join(text[: len(text) - len(report.findings)]))  # the verdict, the cause, the counts
    by_kind: dict[str, list] = {}
    for f in report.findings:
        by_kind.setdefault(f.kind, []).append(f)
    for kind, found in by_kind.items():  # the first finding of each kind; `rmqlab verify` lists all
        print(f"  {found[0]}" + (f"   (+{len(found) - 1} more {kind})" if len(found) > 1 else ""))
    found = salvage_path(damaged)
    print(f"salvage: {len(found)} readable record(s) the next start cuts, recognised by magic, size, self-recorded offset and CRC "
          "(`rmqlab salvage` writes them; the records RocketMQ keeps are not among them)")
    print(f"all of it in one picture: rmqlab map {damaged} -o damaged.svg (or .png; StoreMapViewer in a notebook)")
