"""Start-up benchmark: what a command costs before it reads a byte.

Times whole processes, in one run, interleaved round by round (the machine drifts): a
bare interpreter (``python -c pass``, the baseline), ``rmqlab --help``, ``rmqlab
--version``, and read commands on a sample store (``info``, ``dump``, ``verify``), and
prints each one's median wall time, its ratio to the bare interpreter and its peak
memory (resident, the largest process), with the goals of ``rmqlab --help`` ≤ 0.1 s and
a read command on a sample store ≤ 0.25 s.

    python bench/bench_startup.py [--rounds 11]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOALS = {"rmqlab --help": 0.1, "rmqlab info": 0.25, "rmqlab dump": 0.25, "rmqlab verify": 0.25}


def _run(argv: list[str]) -> tuple[float, int]:
    """(wall seconds, peak resident KiB) of one whole process (os.wait4: that child's own
    accounting)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
    return wall, usage.ru_maxrss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=11)
    args = ap.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([py, "-m", "rmqlab", "samples", tmp], check=True, stdout=subprocess.DEVNULL)
        store = str(Path(tmp) / "clean")
        cases = {
            "python -c pass": [py, "-c", "pass"],
            "rmqlab --help": [py, "-m", "rmqlab", "--help"],
            "rmqlab --version": [py, "-m", "rmqlab", "--version"],
            "rmqlab info": [py, "-m", "rmqlab", "info", store],
            "rmqlab dump": [py, "-m", "rmqlab", "dump", store],
            "rmqlab verify": [py, "-m", "rmqlab", "verify", store],
        }
        walls: dict[str, list[float]] = {k: [] for k in cases}
        peaks: dict[str, int] = {}
        for name, argv in cases.items():  # one uncounted run each: caches, compiled loops
            _run(argv)
        for _ in range(args.rounds):
            for name, argv in cases.items():
                wall, peak = _run(argv)
                walls[name].append(wall)
                peaks[name] = max(peaks.get(name, 0), peak)
    base = statistics.median(walls["python -c pass"])
    print(f"start-up, {args.rounds} rounds, medians (min-max); baseline: a bare interpreter, {base * 1000:.0f} ms; cpus {os.cpu_count()}")
    for name, w in walls.items():
        med = statistics.median(w)
        goal = GOALS.get(name)
        said = "" if goal is None else f"  goal ≤ {goal:.2f} s: {'met' if med <= goal else 'missed'}"
        print(f"  {name:<18} {med:6.3f} s ({min(w):.3f}-{max(w):.3f})  {med / base:5.1f}× the bare interpreter"
              + f"  peak {peaks[name] / 1024:.0f} MiB" + said)
    return 0


if __name__ == "__main__":
    sys.exit(main())
