"""Write the stores of tests/stores/rocketmq-rust/ with rocketmq-rust's own store.

Builds ``scripts/rocketmq-rust-writer`` (cargo; crates pinned in its Cargo.lock — the
first build compiles about 300 crates), then for each case writes a store, records what
was put (``manifest.json``), and starts rocketmq-rust again on a copy to record what it
reads back after its own load and recovery (``rust-read.json``: the log's offsets, every
queue's range, and its ``query_message`` answers to ``queries.json``).  The suite reads
these files; it never needs cargo.

    python scripts/rocketmq_rust_stores.py [--out tests/stores/rocketmq-rust]
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
    "timers": ("as clean, with the timer wheel on (its v2 files) and every tenth message delayed (SCHEDULE_TOPIC_XXXX)", 600),
}


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
    for t in sorted({r["topic"] for r in manifest["messages"]}):
        out += [{"topic": t, "key": f"shared-{i}"} for i in range(3)]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE.parent / "tests" / "stores" / "rocketmq-rust")
    ap.add_argument("--target", type=Path, default=Path(tempfile.gettempdir()) / "rocketmq-rust-writer-target")
    args = ap.parse_args()
    exe = build(args.target)
    args.out.mkdir(parents=True, exist_ok=True)
    for case, (what, count) in CASES.items():
        dest = args.out / case
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir()
        run = subprocess.run([str(exe), "write", str(dest / "store"), "--case", case, "--messages", str(count)], capture_output=True, text=True)
        if run.returncode != 0 and not (case == "killed" and run.returncode in (-6, 134)):
            sys.exit(f"{case}: the writer failed ({run.returncode}): {run.stderr[-2000:]}")
        manifest = json.loads(run.stdout)
        manifest["what"] = what
        (dest / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
        (dest / "queries.json").write_text(json.dumps(queries(manifest), indent=1) + "\n")
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "store"
            shutil.copytree(dest / "store", copy)
            read = subprocess.run([str(exe), "read", str(copy), str(dest / "queries.json")], capture_output=True, text=True, check=True)
        (dest / "rust-read.json").write_text(json.dumps(json.loads(read.stdout), indent=1) + "\n")
        print(f"{case}: {count} messages, {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
