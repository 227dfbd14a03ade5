"""``rmqlab lab [DIR]`` — the eleven lessons in JupyterLab, from a folder of your own.

    rmqlab lab                     # copy into ./rmqlab-lessons, then start JupyterLab there
    rmqlab lab ~/lessons --no-browser
    rmqlab lab --copy-only         # copy, do not start JupyterLab

Copies the lessons, their glossary and every store they open (the sample stores and
the stores Apache RocketMQ wrote, which some lessons compare with) out of the installed
package, then starts JupyterLab in that folder. Running it again brings lessons you have
not touched up to the installed release and keeps the ones you changed (``--force``
replaces those too). Starting JupyterLab needs the notebook extra:
``pip install 'rmqlab[notebook]'``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from ..errors import RmqlabError
from . import HELP

#: what ``rmqlab lab`` copies into when given no folder
DEFAULT_DIR = "rmqlab-lessons"


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("lab", help=HELP["lab"], description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", nargs="?", default=DEFAULT_DIR, help=f"the folder to copy the lessons into (default: ./{DEFAULT_DIR})")
    p.add_argument("--copy-only", action="store_true", help="copy the lessons and stores, do not start JupyterLab")
    p.add_argument("--no-browser", action="store_true", help="start JupyterLab without opening a browser (it prints the address to open)")
    p.add_argument("--force", action="store_true", help="also replace lessons you changed since they were copied")
    return p


def run(args) -> int:
    from ..lab.lessons import copy_lessons

    dest = Path(args.dir).expanduser()
    if not args.copy_only and importlib.util.find_spec("jupyterlab") is None:
        from ..errors import install_hint

        raise RmqlabError(f"starting JupyterLab needs the notebook extra: {install_hint('notebook')} (or --copy-only to copy the lessons alone)")
    report = copy_lessons(dest, force=args.force)
    print(report.to_text())
    if args.copy_only:
        print(f"open them with: jupyter lab {dest}")
        return 0
    cmd = [sys.executable, "-m", "jupyterlab", "--ServerApp.root_dir", str(dest.resolve())]
    if args.no_browser:
        cmd.append("--no-browser")
    if hasattr(os, "getuid") and os.getuid() == 0:
        cmd.append("--allow-root")  # JupyterLab refuses root unless told; containers often are root
    sys.stdout.flush()
    return run_forwarding_signals(cmd, cwd=dest)


#: what a terminal, a service manager or a container runtime sends to stop ``rmqlab lab``
FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP")


def run_forwarding_signals(cmd: list[str], cwd) -> int:
    """Run ``cmd`` and pass each of ``FORWARDED`` on to it, waiting for it to end: a
    SIGTERM to ``rmqlab lab`` stops JupyterLab too instead of leaving it running, adopted
    by init.  Its exit status (128 + the signal where one ended it)."""
    import signal

    proc = subprocess.Popen(cmd, cwd=cwd)
    sigs = [getattr(signal, n) for n in FORWARDED if hasattr(signal, n)]
    before = {s: signal.signal(s, lambda num, _frame: proc.send_signal(num)) for s in sigs}
    try:
        while True:
            try:
                code = proc.wait()
                break
            except InterruptedError:  # pragma: no cover - wait() retries on EINTR itself
                continue
    finally:
        for s, h in before.items():
            signal.signal(s, h)
    return 128 - code if code < 0 else code
