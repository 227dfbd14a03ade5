"""Batch consume queues benchmark: what do verify and recovery cost on a store whose
topics are ``queue.type=BatchCQ`` against the same store with file queues?

On one generated store (default 512 MiB of ~200-byte records) and a copy whose every
topic keeps its queues in ``batchconsumequeue/`` (46-byte units of one message each,
as ``BatchConsumeQueue.putBatchMessagePositionInfo`` writes a plain message's, the
store time the record's; ``config/topics.json`` says ``queue.type=BatchCQ``), it runs
each as its own process, in the same rounds:

* ``verify`` (every check): units/s and the ratio batch / files;
* ``recover --out`` after a crash that lost every queue (``abort`` present, a zero
  checkpoint, the queue directories gone): the whole log re-dispatched into batch
  queues by ``BatchConsumeQueueWriter`` against consume queues by ``ConsumeQueueWriter``;
* the peak *anonymous* memory of each (``RssAnon`` of the process tree).

Every figure is the median of ``--runs`` runs (default 3).

    python bench/bench_batch_queue.py                     # 512 MiB, generated once, reused
    python bench/bench_batch_queue.py --size 1GiB --runs 2
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from rmqlab.lab.generate import parse_size  # noqa: E402
from _stores import derived_copy, generated, store_times  # noqa: E402
from bench_forensics import RMQLAB, alternate  # noqa: E402


def batch_queues(store: Path, out: Path) -> dict:
    """Give ``out``, a copy of ``store`` without its queues (``derived_copy``), every
    topic's queues as batch queues of the same units, and topics.json saying so."""
    import numpy as np

    from rmqlab.store import open_store
    from rmqlab.store.batch_consume_queue import BCQ_DTYPE
    from rmqlab.format.consumequeue import DEFAULT_MAPPED_FILE_SIZE_BATCH_CONSUME_QUEUE as FILE

    phy, when = store_times(store)
    n, topics = 0, set()
    with open_store(store) as s:
        for qid in s.queue_ids():
            cq = s.consume_queue(qid.topic, qid.queue_id)
            lo, hi = cq.valid_range()
            u = np.zeros(hi - lo, BCQ_DTYPE)
            at = 0
            for q0, e in cq.parts(lo, hi):
                part = u[at : at + len(e)]
                for f in ("commitlog_offset", "size", "tags_code"):
                    part[f] = e[f]
                part["store_timestamp"] = when[np.searchsorted(phy, e["commitlog_offset"].astype(np.int64))]
                part["msg_base_offset"] = np.arange(q0, q0 + len(e))
                at += len(e)
            u["batch_size"], u["compacted_offset"] = 1, -1
            d = out / "batchconsumequeue" / qid.topic / str(qid.queue_id)
            d.mkdir(parents=True)
            per = FILE // BCQ_DTYPE.itemsize
            for i in range(0, max(len(u), 1), per):
                chunk = u[i : i + per].tobytes()
                (d / f"{i * BCQ_DTYPE.itemsize:020d}").write_bytes(chunk + bytes(FILE - len(chunk)))
            n += len(u)
            topics.add(qid.topic)
    (out / "config").mkdir(exist_ok=True)
    table = {t: {"topicName": t, "readQueueNums": 8, "writeQueueNums": 8, "perm": 6, "attributes": {"queue.type": "BatchCQ"}} for t in sorted(topics)}
    (out / "config" / "topics.json").write_text(json.dumps({"topicConfigTable": table}))
    return {"units": n}


def crashed(store: Path, queues: str) -> Path:
    """A copy of ``store`` as a crash that lost its queues leaves it (made once)."""
    out = store.with_name(store.name + "-crashed")
    if (out / "CRASHED").exists():
        return out
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(store, out, ignore=shutil.ignore_patterns(queues, "index"))
    (out / "abort").write_bytes(b"")
    (out / "checkpoint").write_bytes(bytes(4096))  # minTimestamp 0: abnormal recovery from the first file
    (out / "CRASHED").write_text("")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="512MiB")
    ap.add_argument("--workdir", type=Path, default=HERE / "out" / "stores")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    size = parse_size(args.size)
    files = generated(args.workdir / f"forensics-{size}", size, "~200-byte records, queues and index", seed=1)
    batch, made = derived_copy(files, "batch", batch_queues)
    units = made["units"]
    lost = {"files": crashed(files, "consumequeue"), "batch": crashed(batch, "batchconsumequeue")}
    scratch = args.workdir / "recovered"

    def recover(which: str):
        shutil.rmtree(scratch, ignore_errors=True)
        return [*RMQLAB, "recover", str(lost[which]), "--out", str(scratch)]

    commands = {
        "verify": lambda which: [*RMQLAB, "verify", str({"files": files, "batch": batch}[which])],
        "recover --out": recover,
    }
    print(f"store: {files} ({units} units) and its batch-queue copy; {args.runs} run(s) each, alternating")
    alternate(commands, ("files", "batch"), args.runs, units, rates=tuple(commands))
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
