"""Forensics benchmark: do the commands an operator runs keep up with the bulk decoder,
in bounded memory?

On one generated store (default 2 GiB of ~200-byte records, with consume queues and an
index, as a broker leaves them) it runs, in one session, each as its own process:

1. the baseline: rmqlab's bulk decoder (``rmqlab.scan.decode``) over every commitlog
   file, all columns built, CRCs checked, told where each file's data ends (as the
   commands are: the holes past it not read) — records/s;
2. the read commands, each timed and watched for its peak *anonymous* memory
   (``RssAnon`` of the process and its children, polled every 10 ms: the mapped store
   files are page cache, not the command's memory): ``info``, ``verify`` (every check
   on), ``verify --against 5.5.1`` (the conformance report), ``dump --json > /dev/null``, ``recover`` (dry run), ``salvage`` (what lies
   past the cut, to a file),
   ``diff`` (the store against itself), ``queue`` (its largest queue), ``lookup --key``,
   ``report`` (to an HTML file) and ``export`` (Parquet, into a new directory each run);
3. start-up: ``rmqlab --help`` and ``info`` on a small sample store;

and prints each command's records/s as a ratio of the baseline's, beside the goals
(verify, the conformance report and export ≥ 0.5×, info ≥ 0.8×, dump --json ≥ 0.4×, report ≤ 1.25× verify's
time, peak anonymous memory ≤ 512 MiB; start-up, measured apart by ``bench_startup.py``, < 0.5 s here).  Every figure is the median of ``--runs`` runs (default 3), the
baseline measured in the same rounds.

    python bench/bench_forensics.py                    # 2 GiB store, generated once, reused
    python bench/bench_forensics.py --size 256MiB --runs 1   # a smoke run
    python bench/bench_forensics.py --store /path/to/store    # an existing store
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from rmqlab.lab.generate import parse_size  # noqa: E402
from _stores import generated  # noqa: E402

RMQLAB = [sys.executable, "-m", "rmqlab"]

BASELINE = r"""
import mmap, sys
from pathlib import Path
from rmqlab.files.extent import data_end
from rmqlab.scan import decode as fd
n = 0
for p in sorted(Path(sys.argv[1], "commitlog").iterdir()):
    with open(p, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
        for b in fd.decode_file(m, int(p.name), file=str(p), mode="lenient", data_end=data_end(p, len(m))):
            n += b.num_rows
print(n)
"""


# -- anonymous memory of a process tree ------------------------------------------------------
def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as fh:
                    todo.extend(int(c) for c in fh.read().split())
        except OSError:
            pass
    return out


def _rss_anon(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_watched(cmd: list[str], stdout=subprocess.DEVNULL) -> tuple[float, int, int]:
    """(wall seconds, peak anonymous bytes of the process tree, exit code)."""
    peak = 0
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, cwd=ROOT)
    done = threading.Event()

    def watch():
        nonlocal peak
        while not done.is_set():
            peak = max(peak, sum(_rss_anon(p) for p in _tree(proc.pid)))
            done.wait(0.01)

    th = threading.Thread(target=watch, daemon=True)
    th.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - t
    done.set()
    th.join()
    if proc.returncode not in (0, 1, 2) or (proc.returncode and b"Traceback" in err):
        sys.stderr.write(err.decode(errors="replace"))
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode})")
    return wall, peak, proc.returncode


def ensure_store(workdir: Path, size: int) -> Path:
    return generated(workdir / f"forensics-{size}", size, "~200-byte records, queues and index", seed=1)


def alternate(commands: dict, labels: tuple[str, str], runs: int, units: int, rates=("verify",)) -> None:
    """Each of ``commands`` (name -> ``argv(label)``) run ``runs`` times on the two
    stores ``labels`` name, in turn, each in its own process: a row per command of
    median wall seconds, the ratio first / second and median peak anonymous memory
    (``run_watched``), and units/s for the commands ``rates`` names.  A command that
    exits with more than 1 (verify's "findings") stops the benchmark."""
    a, b = labels
    print(f"{'command':<14} {a + ' s':>11} {b + ' s':>11} {'ratio':>7} {a + ' MiB':>12} {b + ' MiB':>12}   (median wall, peak RssAnon)")
    for name, cmd in commands.items():
        got = {a: [], b: []}
        for _ in range(runs):
            for which in labels:
                wall, peak, code = run_watched(cmd(which))
                if code not in (0, 1):
                    raise SystemExit(f"{name} on {which} exited {code}")
                got[which].append((wall, peak))
        wa, wb = (statistics.median(w for w, _ in got[k]) for k in labels)
        ma, mb = (statistics.median(m for _, m in got[k]) / 2**20 for k in labels)
        print(f"{name:<14} {wa:>11.2f} {wb:>11.2f} {wa / wb:>6.2f}x {ma:>12.0f} {mb:>12.0f}")
        if name in rates:
            print(f"{'':<14} units/s: {a} {units / wa:,.0f}, {b} {units / wb:,.0f}")


def _largest_queue(store: Path) -> tuple[str, str]:
    best, size = None, -1
    for t in (store / "consumequeue").iterdir():
        for q in t.iterdir():
            n = sum(f.stat().st_size for f in q.iterdir())
            if n > size:
                best, size = (t.name, q.name), n
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="2GiB", help="generated store size (default 2GiB)")
    ap.add_argument("--store", type=Path, help="an existing store instead of a generated one")
    ap.add_argument("--workdir", type=Path, default=HERE / "out" / "stores")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", help="comma-separated command names to run (default all)")
    args = ap.parse_args()
    store = args.store or ensure_store(args.workdir, parse_size(args.size))
    s = str(store)
    topic, qid = _largest_queue(store)
    tmp = Path(tempfile.mkdtemp(prefix="bench_forensics."))
    sample = ROOT / "sample_stores" / "clean"
    commands = {
        "baseline (bulk decoder)": [sys.executable, "-c", BASELINE, s],
        "info": RMQLAB + ["info", s],
        "verify": RMQLAB + ["verify", s],
        "verify --against 5.5.1": RMQLAB + ["verify", "--against", "5.5.1", s],
        "dump --json": RMQLAB + ["dump", "--json", s],
        "recover (dry run)": RMQLAB + ["recover", s],
        "salvage": RMQLAB + ["salvage", "--out", str(tmp / "salvaged.jsonl"), s],
        "diff (itself)": RMQLAB + ["diff", s, s],
        "queue (largest)": RMQLAB + ["queue", s, "--topic", topic, "--queue-id", qid],
        "lookup --key": RMQLAB + ["lookup", s, "--topic", topic, "--key", "no-such-key"],
        "report": RMQLAB + ["report", s, "-o", str(tmp / "report.html")],
        "export (Parquet)": RMQLAB + ["export", s, str(tmp / "export")],
        "--help": RMQLAB + ["--help"],
        "info (sample store)": RMQLAB + ["info", str(sample)],
    }
    if args.only:
        keep = {c.strip() for c in args.only.split(",")}
        commands = {k: v for k, v in commands.items() if k in keep or k.startswith("baseline")}
    records = int(subprocess.run(commands["baseline (bulk decoder)"], capture_output=True, text=True, check=True, cwd=ROOT).stdout)
    print(f"store {s}: {records:,} records (the baseline's count)")
    walls: dict[str, list[float]] = {k: [] for k in commands}
    peaks: dict[str, list[int]] = {k: [] for k in commands}
    codes: dict[str, int] = {}
    for r in range(args.runs):
        for name, cmd in commands.items():
            out = subprocess.DEVNULL
            shutil.rmtree(tmp / "export", ignore_errors=True)  # an export continues a finished one: each round writes anew
            wall, peak, code = run_watched(cmd, stdout=out)
            walls[name].append(wall)
            peaks[name].append(peak)
            codes[name] = code
        print(f"  round {r + 1}/{args.runs} done", flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    base = statistics.median(walls["baseline (bulk decoder)"])
    goals = {"verify": 0.5, "verify --against 5.5.1": 0.5, "info": 0.8, "dump --json": 0.4, "export (Parquet)": 0.5}
    verify_w = statistics.median(walls["verify"]) if walls.get("verify") else None
    print(f"\n{'command':<26}{'wall s (median)':>16}{'records/s':>14}{'× baseline':>12}{'peak anon MiB':>15}  goal")
    for name in commands:
        w = statistics.median(walls[name])
        peak = max(peaks[name]) / 2**20
        startup = name in ("--help", "info (sample store)")
        rate = "" if startup else f"{records / w:>14,.0f}"
        ratio = "" if startup else f"{base / w:>12.2f}"
        goal = ""
        if name in goals:
            goal = f"≥ {goals[name]}× {'met' if base / w >= goals[name] else 'NOT met'}"
        elif name == "report" and verify_w:
            goal = f"{w / verify_w:.2f}× verify, ≤ 1.25× {'met' if w <= 1.25 * verify_w else 'NOT met'}"
        elif startup:
            goal = f"< 0.5 s {'met' if w < 0.5 else 'NOT met'}"
        if not startup and not name.startswith("baseline"):
            goal += ("; " if goal else "") + f"≤ 512 MiB {'met' if peak <= 512 else 'NOT met'}"
        runs = " ".join(f"{x:.2f}" for x in walls[name])
        print(f"{name:<26}{w:>16.2f}{rate:>14}{ratio:>12}{peak:>15.0f}  {goal}   [runs: {runs}; exit {codes[name]}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
