"""Report benchmark: is ``rmqlab report`` of a large capture made in about the time
``rmqlab verify`` takes, in bounded memory?

On one generated store (default 1 GiB of ~200-byte records, with consume queues and an
index, as a broker leaves them) it runs, in turn and each in its own process,
``rmqlab verify`` (the baseline: every check on) and ``rmqlab report -o report.html``
(verify's pass, which feeds the map and the timeline, recovery's dry run, every
file's SHA-256), and prints each one's median wall time, the ratio report / verify and the peak
*anonymous* memory of the process tree (``RssAnon``: the mapped store files are page
cache, not the command's memory), beside the goals (report ≤ 1.25× verify's time, peak
anonymous memory ≤ 512 MiB).

    python bench/bench_report.py                       # 1 GiB store, generated once, reused
    python bench/bench_report.py --size 256MiB --runs 1
    python bench/bench_report.py --store /path/to/store
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from rmqlab.lab.generate import parse_size  # noqa: E402
from _stores import save_results  # noqa: E402
from bench_forensics import RMQLAB, ensure_store, run_watched  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="1GiB", help="generated store size (default 1GiB)")
    ap.add_argument("--store", type=Path, help="an existing store instead of a generated one")
    ap.add_argument("--workdir", type=Path, default=HERE / "out" / "stores")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    size = parse_size(args.size)
    store = args.store or ensure_store(args.workdir, size)
    out = Path(tempfile.mkdtemp(prefix="bench_report.")) / "report.html"
    commands = {"verify": RMQLAB + ["verify", str(store)], "report": RMQLAB + ["report", str(store), "-o", str(out)]}
    walls: dict[str, list[float]] = {k: [] for k in commands}
    peaks: dict[str, list[int]] = {k: [] for k in commands}
    for r in range(args.runs):
        for name, cmd in commands.items():
            wall, peak, _ = run_watched(cmd)
            walls[name].append(wall)
            peaks[name].append(peak)
        print(f"  round {r + 1}/{args.runs}: verify {walls['verify'][-1]:.2f} s, report {walls['report'][-1]:.2f} s", flush=True)
    verify, report = (statistics.median(walls[k]) for k in commands)
    print(f"\nstore {store} ({sum(p.stat().st_size for p in (store / 'commitlog').iterdir()) >> 20} MiB of commitlog files), report {out.stat().st_size:,} bytes")
    print(f"{'command':<10}{'wall s (median)':>16}{'× verify':>10}{'peak anon MiB':>15}  goal   [runs]")
    results = {}
    for name in commands:
        w, peak = statistics.median(walls[name]), max(peaks[name]) / 2**20
        goal = f"≤ 512 MiB {'met' if peak <= 512 else 'NOT met'}" + (f"; ≤ 1.25× verify {'met' if report / verify <= 1.25 else 'NOT met'}" if name == "report" else "")
        print(f"{name:<10}{w:>16.2f}{w / verify:>10.2f}{peak:>15.0f}  {goal}   [{' '.join(f'{x:.2f}' for x in walls[name])}]")
        results[name] = {"wall_s": walls[name], "peak_anon_mib": peak}
    results["ratio"] = report / verify
    print(f"results: {save_results('bench_report', results)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
