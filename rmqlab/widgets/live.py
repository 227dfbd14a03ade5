"""``LiveStoreWatcher``: a store being written, and how each part catches up — the
records a follower reads as they land, the consume queues and the index behind the
log, the flushed position behind the written one, and what a ``kill -9`` leaves.

The store is :class:`rmqlab.lab.live.LiveStore` (rmqlab's engine, dispatch and flush
done when asked, a clock that moves one millisecond per record).  The buttons do one
step each; **run** does them on its own, a step every ``interval`` seconds, as a broker's
threads would.  Tests (and the lesson's checked cells) drive it with :meth:`step`.
"""

from __future__ import annotations

import threading

import ipywidgets as widgets

from ..render.notebook import positions_html, records_html
from .base import Panel, scratch_dir


class LiveStoreWatcher(Panel):
    """``w = LiveStoreWatcher(); w.step(); w.state()`` — see the module docs."""

    def __init__(self, live=None, *, interval: float = 0.5, per_step: int = 5):
        from ..lab.live import LiveStore

        self.live = live if live is not None else LiveStore(scratch_dir("live"))
        self.interval = interval
        self.per_step = per_step
        self.steps = 0
        buttons = {
            "put": ("put 10", "plus", lambda: self.live.put(10)),
            "dispatch": ("dispatch", "arrow-right", lambda: self.live.dispatch()),
            "flush": ("flush", "hdd-o", lambda: self.live.flush()),
            "kill": ("kill -9", "bolt", lambda: self.live.kill()),
            "restart": ("restart", "refresh", lambda: self.live.restart()),
        }
        self.buttons = {}
        for key, (text, icon, act) in buttons.items():
            b = widgets.Button(description=text, icon=icon, tooltip=text, layout=widgets.Layout(width="auto"))
            b.on_click(lambda _, act=act: self._do(act))
            self.buttons[key] = b
        self.run = widgets.ToggleButton(description="run", icon="play", tooltip="put, follow, dispatch and flush on their own", layout=widgets.Layout(width="auto"))
        self.run.observe(self._on_run, "value")
        super().__init__([widgets.HBox([*self.buttons.values(), self.run], layout=widgets.Layout(flex_flow="row wrap"))], primary=self.buttons["put"])
        self._timer = None
        self._lock = threading.Lock()
        self.refresh()

    # -- what it does -----------------------------------------------------------------------
    def _do(self, act) -> None:
        with self._lock:
            if self.guarded(act) is None and self.error:
                return
            if self.live.running:
                self.live.follow()
            self.refresh()

    def step(self) -> dict:
        """One step of a running broker: ``per_step`` puts, the follower reads, dispatch
        every second step, flush every fourth; returns :meth:`state`."""
        with self._lock:
            n = self.steps + 1
            self.live.put(self.per_step)
            self.live.follow()
            if n % 2 == 0:
                self.live.dispatch()
            if n % 4 == 0:
                self.live.flush()
            # counted once done: ``steps`` read from another thread (run's timer) never
            # names a step whose puts have not been followed yet
            self.steps = n
            self.refresh()
            return self.state()

    def _on_run(self, change) -> None:
        if change["new"]:
            self.run.icon = "pause"
            self._tick()
        else:
            self.run.icon = "play"
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def _tick(self) -> None:
        if not self.run.value:
            return
        if not self.live.running:  # killed: wait for restart
            self.run.value = False
            return
        self.step()
        self._timer = threading.Timer(self.interval, self._tick)
        self._timer.daemon = True
        self._timer.start()

    # -- what it shows ----------------------------------------------------------------------
    def state(self) -> dict:
        p = self.live.positions() if self.live.running else None
        return {"running": self.live.running, "positions": p, "followed": len(self.live.followed), "events": [str(e) for e in self.live.events]}

    def refresh(self) -> None:
        if not self.live.running:
            self.show("<div><b>killed</b> (kill -9): nothing was flushed or dispatched on the way out; the page cache still holds what was appended. "
                      "Press <b>restart</b>: recovery runs.</div>" + records_html(self.live.followed[-6:], caption="last records the follower read"))
            return
        p = self.live.positions()
        rec = self.live.recovery
        note = f"<div>last start: <b>{rec.mode}</b> recovery</div>" if rec is not None else ""
        events = "".join(f"<div style='color:#e65100'>{e}</div>" for e in self.live.events[-3:])
        self.show(positions_html(p, caption="where each part of the store is (physical offsets)") + note + events
                  + records_html(self.live.followed[-6:], caption=f"last records the follower read ({len(self.live.followed)} in all)"))

    def close(self) -> None:
        self.run.value = False
        super().close()
