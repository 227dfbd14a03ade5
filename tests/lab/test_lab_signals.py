"""``rmqlab lab`` passes the signals that stop it on to JupyterLab and waits for it: a
SIGTERM (a service manager, a container runtime) or a SIGHUP (a closed terminal) does
not leave JupyterLab running, adopted by init."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from rmqlab.cli.lab import FORWARDED

#: the lab's runner around a stand-in for JupyterLab that says which signal ended it (with
#: os.write: the signal may land while the child's print of "child up" is still in
#: stdout's buffered writer, and a print from the handler then raises "reentrant call")
RUNNER = r'''
import sys
from rmqlab.cli.lab import run_forwarding_signals
child = [sys.executable, "-c", "import os, signal, sys, time\nfor s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):\n    signal.signal(s, lambda n, f: (os.write(1, f'child got {signal.Signals(n).name}\\n'.encode()), sys.exit(3)))\nprint('child up', flush=True)\ntime.sleep(60)"]
sys.exit(run_forwarding_signals(child, "."))
'''


@pytest.mark.parametrize("name", FORWARDED)
def test_a_signal_to_the_lab_reaches_jupyterlab_and_the_lab_waits_for_it(name):
    proc = subprocess.Popen([sys.executable, "-c", RUNNER], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "child up"
        proc.send_signal(getattr(signal, name))
        assert proc.wait(20) == 3  # the child's own exit status: it ended, and the lab after it
        assert proc.stdout.read().strip() == f"child got {name}"
    finally:
        proc.kill()
