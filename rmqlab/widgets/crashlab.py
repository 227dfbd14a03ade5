"""``CrashLab``: choose a flush mode, a workload and a crash point; crash; recover;
see what was acknowledged, what survived, what was cut and why.

The crashes are :class:`rmqlab.lab.crashlab.CrashLab`'s: the engine runs with
a manual clock and no background threads, a second copy of the store receives only
what was forced to disk, and the crash decides which copy survives.  Recovery is
:func:`rmqlab.recovery.recover`, RocketMQ's start-up recovery.
"""

from __future__ import annotations

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
    "torn write": "power fails while the chosen put's record is being written out: what was forced survives, plus the first half of that record (a torn page)",
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
        return lab.torn_write(messages[:crash_at], flush=flush)
    raise ValueError(f"unknown scenario {scenario!r}; choose one of {', '.join(SCENARIOS)}")


def _discard(result) -> None:
    run = Path(result.image).parent
    shutil.rmtree(run, ignore_errors=True)


class CrashLab(Panel):
    """``lab = CrashLab(); lab.crash(flush="SYNC_FLUSH", crash_at=80).lost``.

    Once a first crash has been run, moving a control runs it again (the slider acts
    when released); :meth:`crash` sets several controls and runs once.
    """

    def __init__(self, workdir: str | os.PathLike | None = None, *, messages: int = 120, seed: int = 0):
        from ..lab.crashlab import CrashLab as Lab
        from ..lab.crashlab import workload

        self.workdir = Path(workdir) if workdir is not None else scratch_dir("crashlab")
        self.lab = Lab(self.workdir)
        self._workload = workload
        self.seed = seed
        self.flush = widgets.ToggleButtons(options=[ASYNC_FLUSH, SYNC_FLUSH], value=ASYNC_FLUSH, description="flush")
        self.scenario = widgets.Dropdown(options=list(SCENARIOS), value="power loss", description="crash")
        self.messages = widgets.IntSlider(value=messages, min=10, max=400, step=10, description="messages", continuous_update=False)
        self.crash_at = widgets.IntSlider(value=messages * 3 // 4, min=1, max=messages, description="crash at put", continuous_update=False)
        self.run = widgets.Button(description="crash, then recover", button_style="danger", icon="bolt")
        self.explain = widgets.HTML()
        super().__init__([widgets.HBox([self.flush, self.scenario]), widgets.HBox([self.messages, self.crash_at]), self.explain, self.run], primary=self.scenario)
        self.result = None
        self.runs = 0  # crashes run so far (the tests count re-runs with it)
        self._holding = False
        self.messages.observe(self._on_messages, "value")
        self.scenario.observe(lambda _: self._explain(), "value")
        for w in (self.flush, self.scenario, self.messages, self.crash_at):
            w.observe(self._on_control, "value")
        self.run.on_click(lambda _: self.do_run())
        self._explain()
        self.show("<div>choose, then press <b>crash, then recover</b></div>")

    def _on_messages(self, change) -> None:
        self.crash_at.max = change["new"]
        self.crash_at.value = min(self.crash_at.value, change["new"])

    def _on_control(self, _change) -> None:
        # after a first crash the controls act at once; before it the button starts
        if self.result is not None and not self._holding:
            self.do_run()

    def _explain(self) -> None:
        self.explain.value = f"<div style='color:#555'>{SCENARIOS[self.scenario.value]}</div>"

    def crash(self, *, flush: str | None = None, scenario: str | None = None, crash_at: int | None = None, messages: int | None = None):
        """Set the given controls, then crash and recover once; the result."""
        self._holding = True
        try:
            if messages is not None:
                self.messages.value = messages
            if flush is not None:
                self.flush.value = flush
            if scenario is not None:
                self.scenario.value = scenario
            if crash_at is not None:
                self.crash_at.value = crash_at
        finally:
            self._holding = False
        return self.do_run()

    def do_run(self):
        previous = self.result
        # a run takes a moment: say so, and keep a second click from queueing another
        self.run.disabled, self.run.description, self.run.icon = True, "crashing…", "spinner"
        self.show("<div style='color:#555'>running the workload, crashing, recovering…</div>")
        try:
            msgs = self._workload(self.messages.value, seed=self.seed)
            result = self.guarded(run_scenario, self.lab, msgs, self.scenario.value, self.flush.value, self.crash_at.value)
        finally:
            self.run.disabled, self.run.description, self.run.icon = False, "crash, then recover", "bolt"
        if result is None:
            return None
        self.runs += 1
        if previous is not None:
            _discard(previous)  # keep only the latest run on disk
        self.result = result
        self.show(crash_result_html(result))
        return result
