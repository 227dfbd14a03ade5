"""Write the stores of tests/stores/rocketmq-rust/ with rocketmq-rust's own store.

Builds ``scripts/rocketmq-rust-writer`` (cargo; crates pinned in its Cargo.lock — the
first build compiles about 300 crates), then for each case writes a store, records what
was put (``manifest.json``), and starts rocketmq-rust again on a copy to record what it
reads back after its own load and recovery (``rust-read.json``: the log's offsets, every
queue's range, its ``query_message`` answers to ``queries.json``, and with timers the
wheel's slot of each timer message's time and the timer checkpoint it recovered).  The
two ``window-*`` stores have more commitlog files than rocketmq-rust's recovery window
(``maxRecoveryCommitLogFiles``, 30); each is also damaged in a file inside the window and in one before it (``damage``), and
rocketmq-rust started on each damaged copy: ``damaged.json`` holds the damage (byte edits)
and what it read back.  The ``clean`` and ``killed`` stores are damaged too (``DAMAGES``:
a body byte flipped in the newest and in the oldest file, a zeroed page, the abort file
deleted, the unit of the log's last record zeroed with it) and read back under
rocketmq-rust's own default settings (no body CRC check on recovery).  The suite reads
these files; it never needs cargo.

    python scripts/rocketmq_rust_stores.py [--out tests/stores/rocketmq-rust] [--cases timers window-clean] [--damage-only]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CRATE = HERE / "rocketmq-rust-writer"
CASES = {
    # case: (what happened, messages)
    "clean": ("puts, every record dispatched, then a clean shutdown", 600),
    "killed": ("puts, every record dispatched, then the process aborted: no shutdown, the abort file left", 600),
    "timers": ("as clean, with the timer wheel on (its v2 files), every tenth message delayed (SCHEDULE_TOPIC_XXXX) "
               "and every tenth a timer message (rmq_sys_wheel_timer, TIMER_OUT_MS): half due two seconds after the first put "
               "(fired before the shutdown), half hours ahead (still in the wheel)", 600),
    "window-clean": ("puts to 16 KiB commitlog files (more than the 30-file recovery window), then a clean shutdown", 800),
    "window-killed": ("puts to 16 KiB commitlog files (more than the 30-file recovery window), then the process aborted", 800),
}
#: the damaged copies of the window stores, by the file counted back from the log's last
#: (rocketmq-rust's recovery window is the last 30 files: 20 back is inside it, 35 before it)
DAMAGE_FILES_BACK = {"inside the window": 20, "before the window": 35}
#: Java's message layout up to the body (MessageDecoder, v1: IPv4 hosts): the body starts at
#: byte 88 of a record (totalSize … preparedTransactionOffset, then bodyLength)
BODY_AT = 88
CQ_UNIT = 20


def file_size(case: str) -> int:
    return 16 * 1024 if case.startswith("window") else 128 * 1024


def build(target: Path) -> Path:
    subprocess.run(["cargo", "build", "--release", "--locked", "--manifest-path", str(CRATE / "Cargo.toml")],
                   check=True, env={**os.environ, "CARGO_TARGET_DIR": str(target)})
    return target / "release" / "rocketmq-rust-writer"


def queries(manifest: dict) -> list[dict]:
    """Every 25th record's UNIQ_KEY (typed U, as rocketmq-rust's query by unique key, and
    untyped, as a Java broker's queryMessage), its first KEYS token, and the shared keys."""
    out = []
    for r in manifest["messages"][::25]:
        t = r["topic"]
        out.append({"topic": t, "key": r["uniqKey"], "indexType": "U"})
        out.append({"topic": t, "key": r["uniqKey"]})
        if r["keys"]:
            out.append({"topic": t, "key": r["keys"].split()[0]})
    # a timer message's slot is its time rounded up to the precision (1 s): ask for both seconds
    out += [{"timerSlotMs": r["timerOutMs"] + d} for r in manifest["messages"] if r.get("timerOutMs") for d in (0, 1000)]
    for t in sorted({r["topic"] for r in manifest["messages"]}):
        out += [{"topic": t, "key": f"shared-{i}"} for i in range(3)]
    return out


def damage(manifest: dict, case: str, back: int) -> dict:
    """The damage of a window store ``back`` files before the log's last, as a list of
    byte edits (``apply_edits``), and the record it aims at.

    window-clean: one body byte of the second record of that file flipped (its CRC fails;
    a normal recovery walks the last 30 files).  window-killed: the checkpoint's three
    timestamps set 3 s past the storeTimestamp of the last file's first record (minTimestamp
    is then that record's: the abnormal start is 30 files before the last), and the consume queue of that file's first
    record zeroed from its unit on (an abnormal recovery dispatches again what it walks)."""
    size = file_size(case)
    last = manifest["maxPhyOffset"] // size
    base = (last - back) * size
    msgs = manifest["messages"]
    in_file = [r for r in msgs if base <= r["physicalOffset"] < base + size]
    if case == "window-clean":
        rec = [r for r in in_file if r["bodyLength"] >= 2][1]
        at = rec["physicalOffset"] + BODY_AT + rec["bodyLength"] // 2
        return {"record": rec["physicalOffset"], "edits": [{"file": f"commitlog/{base:020d}", "at": at - base, "xor": 255}]}
    rec = in_file[0]
    # minTimestamp is the checkpoint's smallest timestamp less 3 s (StoreCheckpoint.getMinTimestamp)
    late = min(r["storeTimestamp"] for r in msgs if r["physicalOffset"] >= last * size) + 3000
    queue = f"consumequeue/{rec['topic']}/{rec['queueId']}/{0:020d}"
    units = sum(1 for r in msgs if (r["topic"], r["queueId"]) == (rec["topic"], rec["queueId"]))
    return {"record": rec["physicalOffset"], "queue": [rec["topic"], rec["queueId"], rec["queueOffset"]],
            "edits": [{"file": "checkpoint", "at": 0, "write": late.to_bytes(8, "big").hex() * 3},
                      {"file": queue, "at": rec["queueOffset"] * CQ_UNIT, "zero": (units - rec["queueOffset"]) * CQ_UNIT}]}


#: the damaged copies of the ``clean`` and ``killed`` stores, read back with rocketmq-rust's
#: default settings: what each does, by name (``edits_for``)
DAMAGES = {
    "flip-newest": "one body byte flipped in a record of the newest file",
    "flip-oldest": "one body byte flipped in a record of the first file",
    "zeroed-page": "a 4 KiB page zeroed in the newest file, amid its records",
    "abort-deleted": "the abort file deleted: the next start takes the last exit for clean (normal recovery)",
    "boundary": ("the abort file deleted and the consume queue unit of the log's last record zeroed: the queues' max physical "
                 "offset is then where that record starts"),
}


def edits_for(manifest: dict, case: str, name: str) -> list[dict] | None:
    """The byte edits of damage ``name`` to a copy of ``case``'s store, or None where it
    does not apply (no abort file to delete in a clean store)."""
    size = file_size(case)
    msgs = sorted(manifest["messages"], key=lambda r: r["physicalOffset"])
    newest = msgs[-1]["physicalOffset"] // size
    if name.startswith("flip"):
        n = newest if name == "flip-newest" else 0
        rec = [r for r in msgs if r["physicalOffset"] // size == n and r["bodyLength"] >= 2][1]
        at = rec["physicalOffset"] + BODY_AT + rec["bodyLength"] // 2
        return [{"file": f"commitlog/{n * size:020d}", "at": at - n * size, "xor": 255}]
    if name == "zeroed-page":
        in_file = [r for r in msgs if r["physicalOffset"] // size == newest]
        page = (in_file[len(in_file) // 2]["physicalOffset"] - newest * size) // 4096 * 4096
        return [{"file": f"commitlog/{newest * size:020d}", "at": page, "zero": 4096}]
    if case != "killed":
        return None
    edits = [{"file": "abort", "delete": True}]
    if name == "boundary":
        last = msgs[-1]
        units = 100  # the writer's mappedFileSizeConsumeQueue: 100 units a file
        f = last["queueOffset"] // units * units * CQ_UNIT
        edits.append({"file": f"consumequeue/{last['topic']}/{last['queueId']}/{f:020d}", "at": last["queueOffset"] % units * CQ_UNIT, "zero": CQ_UNIT})
    return edits


def apply_edits(root: Path, edits: list[dict]) -> None:
    """Byte edits to a store copy: ``xor`` a byte, ``write`` hex bytes, ``zero`` a run;
    ``delete`` a file."""
    for e in edits:
        if e.get("delete"):
            (root / e["file"]).unlink()
            continue
        with open(root / e["file"], "r+b") as f:
            f.seek(e["at"])
            if "xor" in e:
                b = f.read(1)
                f.seek(e["at"])
                f.write(bytes([b[0] ^ e["xor"]]))
            elif "write" in e:
                f.write(bytes.fromhex(e["write"]))
            else:
                f.write(bytes(e["zero"]))


def read_back(exe: Path, dest: Path, case: str, edits: list[dict] | None = None, default_crc: bool = False, tries: int = 4) -> dict:
    """rocketmq-rust started on a copy of the store (with ``edits`` applied; with
    ``default_crc`` its own default, no body CRC check on recovery).  rocketmq-rust 1.0.0
    sometimes leaves its reput idle after start() moved it back (its log: "CommitLog have
    not finish to be dispatched"), and its queues then read short: such a read is made
    again on a new copy, up to ``tries`` times, and its log printed."""
    for attempt in range(tries):
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "store"
            shutil.copytree(dest / "store", copy)
            apply_edits(copy, edits or [])
            read = subprocess.run([str(exe), "read", str(copy), str(dest / "queries.json"), "--file-size", str(file_size(case)),
                                   *(["--default-crc"] if default_crc else [])], capture_output=True, text=True, check=True)
        out = json.loads(read.stdout)
        if not out.get("dispatchBehindBytes"):
            out.pop("dispatchBehindBytes", None)
            return out
        print(f"{case}: rocketmq-rust's dispatch was {out['dispatchBehindBytes']} byte(s) behind after its start (try {attempt + 1}); "
              f"its log:\n{read.stderr[-3000:]}", file=sys.stderr)
    sys.exit(f"{case}: rocketmq-rust did not dispatch the whole log in {tries} starts")


def write_damaged(exe: Path, dest: Path, case: str, manifest: dict) -> None:
    """``damaged.json`` of the ``clean`` and ``killed`` stores: each of ``DAMAGES`` that
    applies, and what rocketmq-rust read back from it under its default settings."""
    if case not in ("clean", "killed"):
        return
    damaged = []
    for name, what in DAMAGES.items():
        edits = edits_for(manifest, case, name)
        if edits is not None:
            damaged.append({"name": name, "what": what, "edits": edits, "rust": read_back(exe, dest, case, edits, default_crc=True)})
    (dest / "damaged.json").write_text(json.dumps(damaged, indent=1) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE.parent / "tests" / "stores" / "rocketmq-rust")
    ap.add_argument("--target", type=Path, default=Path(tempfile.gettempdir()) / "rocketmq-rust-writer-target")
    ap.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES), help="the stores to write again (default: all)")
    ap.add_argument("--damage-only", action="store_true", help="keep the stores; read back only their damaged copies (damaged.json)")
    args = ap.parse_args()
    exe = build(args.target)
    args.out.mkdir(parents=True, exist_ok=True)
    for case in args.cases:
        what, count = CASES[case]
        dest = args.out / case
        if args.damage_only:
            write_damaged(exe, dest, case, json.loads((dest / "manifest.json").read_text()))
            continue
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir()
        run = subprocess.run([str(exe), "write", str(dest / "store"), "--case", case, "--messages", str(count)], capture_output=True, text=True)
        if run.returncode != 0 and not (case.endswith("killed") and run.returncode in (-6, 134)):
            sys.exit(f"{case}: the writer failed ({run.returncode}): {run.stderr[-2000:]}")
        manifest = json.loads(run.stdout)
        manifest["what"] = what
        (dest / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
        (dest / "queries.json").write_text(json.dumps(queries(manifest), indent=1) + "\n")
        (dest / "rust-read.json").write_text(json.dumps(read_back(exe, dest, case), indent=1) + "\n")
        if case.startswith("window"):
            damaged = []
            for where, back in DAMAGE_FILES_BACK.items():
                d = damage(manifest, case, back)
                how = ("one body byte flipped in a record" if case == "window-clean" else
                       "the checkpoint's timestamps set to the last file's first record, and a consume queue zeroed from the unit of a record")
                damaged.append({"what": f"{how} {back} files before the last, {where}", **d, "rust": read_back(exe, dest, case, d["edits"])})
            (dest / "damaged.json").write_text(json.dumps(damaged, indent=1) + "\n")
        write_damaged(exe, dest, case, manifest)
        print(f"{case}: {count} messages, {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
