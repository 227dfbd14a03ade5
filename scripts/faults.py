#!/usr/bin/env python3
"""The long fault campaign (the bounded one runs in ``make test``: tests/faults).

    python scripts/faults.py                         # 100,000 inputs, 1,000 kill points
    python scripts/faults.py --inputs 5000 --kills 50
    python scripts/faults.py --seeds 123 456         # rerun chosen input seeds

Prints the outcome tables and saves every input that is not answered or cleanly
refused (with its seed, mutation and command) to bench/out/faults/findings.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.faults import campaign as C  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", type=int, default=100_000)
    ap.add_argument("--kills", type=int, default=1_000)
    ap.add_argument("--seeds", type=int, nargs="*", help="rerun these input seeds only")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    out = ROOT / "bench" / "out" / "faults"
    out.mkdir(parents=True, exist_ok=True)
    seeds = args.seeds if args.seeds else range(args.first_seed, args.first_seed + args.inputs)
    t0 = time.time()
    counts, findings = C.run_inputs(seeds, workers=args.workers)
    t1 = time.time()
    kills = C.run_kill_points(range(args.first_seed, args.first_seed + (0 if args.seeds else args.kills)))
    t2 = time.time()
    (out / "findings.json").write_text(json.dumps(findings, indent=1))
    print(C.table(counts, kills))
    print(f"\ninputs {t1 - t0:.0f} s, kill points {t2 - t1:.0f} s; findings: {out / 'findings.json'} ({len(findings)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
