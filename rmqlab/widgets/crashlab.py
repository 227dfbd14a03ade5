"""``CrashLab``: choose a flush mode, a workload and a crash point; crash; recover;
see what was acknowledged, what survived, what was cut and why.

The crashes are :class:`rmqlab.lab.crashlab.CrashLab`'s: the engine runs with
a manual clock and no background threads, a second copy of the store receives only
what was forced to disk, and the crash decides which copy survives.  Recovery is
:func:`rmqlab.recovery.recover`, RocketMQ's start-up recovery.
"""

from __future__ import annotations

import atexit
import os
import shutil
from pathlib import Path

import ipywidgets as widgets

from ..config import ASYNC_FLUSH, SYNC_FLUSH
from ..render.notebook import crash_result_html
from .base import Panel, scratch_dir

SCENARIOS = {
    "power loss": "the machine loses power after the chosen put: only what was forced to disk survives",
    "kill -9": "the process dies after the chosen put (the OS keeps its page cache); the last puts were not dispatched yet",
    "torn write": "power fails while the chosen put is being written: half of its bytes reach the disk",
}
#: kill -9: how many of the last puts were appended but not dispatched yet
DISPATCH_LAG = 5


def run_scenario(lab, messages, scenario: str, flush: str, crash_at: int):
    """One crash with the lab; ``crash_at`` = how many puts were made (the last one is
    the one in flight for a torn write)."""
    crash_at = max(1, min(crash_at, len(messages)))
    if scenario == "power loss":
        return lab.power_loss(messages, flush=flush, crash_after=crash_at)
    if scenario == "kill -9":
        return lab.kill_before_dispatch(messages[:crash_at], dispatched=max(0, crash_at - DISPATCH_LAG), flush=flush)
    if scenario == "torn write":
        # where the in-flight put's record lies: a first run (a kill with everything in
        # the page cache changes nothing) tells its offset and size
        probe = lab.kill_before_dispatch(messages[:crash_at], dispatched=crash_at, flush=flush)
        last = probe.puts[-1]
        _discard(probe)
        return lab.torn_write(messages[:crash_at], at_byte=last.physical_offset + last.size // 2, flush=flush)
    raise ValueError(f"unknown scenario {scenario!r}; choose one of {', '.join(SCENARIOS)}")


def _discard(result) -> None:
    run = Path(result.image).parent
    shutil.rmtree(run, ignore_errors=True)


class CrashLab(Panel):
    """``lab = CrashLab(); lab.flush.value = "SYNC_FLUSH"; lab.crash_at.value = 80;
    lab.run.click(); lab.result.lost``."""

    def __init__(self, workdir: str | os.PathLike | None = None, *, messages: int = 120, seed: int = 0):
        from ..lab.crashlab import CrashLab as Lab
        from ..lab.crashlab import workload

        self.workdir = Path(workdir) if workdir is not None else scratch_dir("crashlab", numbered=True)
        if workdir is None:  # our own scratch directory: gone when the kernel exits
            atexit.register(shutil.rmtree, self.workdir, True)
        self.lab = Lab(self.workdir)
        self._workload = workload
        self.seed = seed
        self.flush = widgets.ToggleButtons(options=[ASYNC_FLUSH, SYNC_FLUSH], value=ASYNC_FLUSH, description="flush")
        self.scenario = widgets.Dropdown(options=list(SCENARIOS), value="power loss", description="crash")
        self.messages = widgets.IntSlider(value=messages, min=10, max=400, step=10, description="messages")
        self.crash_at = widgets.IntSlider(value=messages * 3 // 4, min=1, max=messages, description="crash at put")
        self.run = widgets.Button(description="crash, then recover", button_style="danger")
        self.explain = widgets.HTML()
        super().__init__([widgets.HBox([self.flush, self.scenario]), widgets.HBox([self.messages, self.crash_at]), self.explain, self.run])
        self.result = None
        self.messages.observe(self._on_messages, "value")
        self.scenario.observe(lambda _: self._explain(), "value")
        self.run.on_click(lambda _: self.do_run())
        self._explain()
        self.show("<div>choose, then press <b>crash, then recover</b></div>")

    def _on_messages(self, change) -> None:
        self.crash_at.max = change["new"]
        self.crash_at.value = min(self.crash_at.value, change["new"])

    def _explain(self) -> None:
        self.explain.value = f"<div style='color:#555'>{SCENARIOS[self.scenario.value]}</div>"

    def do_run(self):
        previous = self.result
        msgs = self._workload(self.messages.value, seed=self.seed)
        result = self.guarded(run_scenario, self.lab, msgs, self.scenario.value, self.flush.value, self.crash_at.value)
        if result is None:
            return None
        if previous is not None:
            _discard(previous)  # keep only the latest run on disk
        self.result = result
        self.show(crash_result_html(result))
        return result
