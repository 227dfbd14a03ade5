"""What every rmqlab widget shares: an HTML output and errors shown, not raised."""

from __future__ import annotations

import html
import atexit
import os
import shutil
import tempfile
from pathlib import Path

import ipywidgets as widgets

from ..errors import RmqlabError
from ..store.reader import StoreReader, open_store


#: the CSS class of every rmqlab widget's box, and of the one control whose use shows
#: what the widget is for (the browser test moves or clicks it and expects the widget to
#: show something else)
WIDGET_CLASS, PRIMARY_CLASS = "rmqlab-widget", "rmqlab-primary"
#: the CSS class of a widget's static picture (the site hides it once the live view is drawn)
PICTURE_CLASS = "rmqlab-widget-picture"


PRESSED = " aria-pressed='true' style='font-weight:bold'"


def picture(widget) -> str:
    """A static HTML picture of ``widget`` as it is now: what a saved lesson shows where no
    widget manager runs (a page of the documentation site opened offline, a notebook
    viewer, JupyterLab before the cell is run).  Boxes lay their children out as the
    live view does, an ``HTML`` output is its value, a control its label and value
    (disabled: it does nothing without a kernel), a map canvas its SVG; a hidden child is
    left out, as the live view hides it."""
    if getattr(getattr(widget, "layout", None), "display", None) == "none":
        return ""
    desc = getattr(widget, "description", "") or ""
    label = f"<span class='rmqlab-picture-label'>{html.escape(desc)}</span> " if desc else ""
    if isinstance(widget, widgets.Box):
        direction = "row" if isinstance(widget, widgets.HBox) else "column"
        inner = "".join(picture(w) for w in widget.children)
        return f"<div style='display:flex;flex-direction:{direction};gap:4px;flex-wrap:wrap'>{inner}</div>"
    if hasattr(widget, "svg"):  # the store map's canvas
        return widget.svg or ""
    if isinstance(widget, (widgets.HTML, widgets.HTMLMath)):
        return f"<div>{widget.value}</div>"
    if isinstance(widget, widgets.Button):
        return f"<button disabled>{html.escape(desc)}</button>"
    if isinstance(widget, widgets.ToggleButton):
        return f"<button disabled{PRESSED if widget.value else ''}>{html.escape(desc)}</button>"
    if isinstance(widget, widgets.ToggleButtons):
        buttons = "".join(f"<button disabled{PRESSED if lab == widget.label else ''}>{html.escape(str(lab))}</button>"
                          for lab in widget._options_labels)
        return f"<div>{label}{buttons}</div>"
    if isinstance(widget, widgets.Dropdown):
        shown = "" if widget.label is None else str(widget.label)
        return f"<div>{label}<select disabled><option>{html.escape(shown)}</option></select></div>"
    if isinstance(widget, widgets.Textarea):
        return f"<div>{label}<textarea disabled rows=3>{html.escape(str(widget.value))}</textarea></div>"
    if hasattr(widget, "value"):  # text and number fields, sliders
        return f"<div>{label}<input disabled value='{html.escape(str(widget.value), quote=True)}'></div>"
    return ""


class Picture:
    """Mixed into a widget: its saved output carries :func:`picture` (``text/html``) beside
    the live view (``application/vnd.jupyter.widget-view+json``), which a front end with
    a widget manager shows instead."""

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is not None:
            bundle["text/html"] = f"<div class='{PICTURE_CLASS}'>{picture(self)}</div>"
        return bundle


class StatusLine(Picture, widgets.HTML):
    """One ``HTML`` line a lesson shows on its own (a scratch store's size)."""


def _controls(children):
    for w in children:
        yield w
        yield from _controls(getattr(w, "children", ()))


class Panel(Picture, widgets.VBox):
    """A ``VBox`` of controls above one ``HTML`` output (:attr:`output`).

    A store error (damaged bytes, a missing file) becomes a red line in the output
    naming the file and offset: in a lesson the reader should see what is wrong with
    the store, not a traceback from the widget.

    Every control's label and every button is given the width its text needs
    (ipywidgets cuts both at a fixed width with an ellipsis: "crash at p…"); ``primary`` is the control a
    first-time user would try, marked with :data:`PRIMARY_CLASS`.
    """

    def __init__(self, controls: list, primary=None, **kwargs):
        self.output = widgets.HTML()
        self.error: str | None = None
        super().__init__(children=[*controls, self.output], **kwargs)
        self.add_class(WIDGET_CLASS)
        for w in _controls(controls):
            if getattr(w, "description", "") and hasattr(getattr(w, "style", None), "description_width"):
                w.style.description_width = "initial"
            if isinstance(w, widgets.Button) and not w.layout.width:
                w.layout.width = "auto"  # a button as wide as its text, not a fixed width and "crash, then rec…"
        if primary is not None:
            primary.add_class(PRIMARY_CLASS)

    def __repr__(self) -> str:
        # the text a notebook shows where the live widget is not (a saved lesson opened
        # before it is run, a plain-text front end): one line, not the children's reprs
        return f"{type(self).__name__}: run this cell in a live kernel to use the widget"

    def show(self, content: str) -> None:
        self.error = None
        self.output.value = content

    def show_error(self, err: Exception) -> None:
        self.error = str(err)
        self.output.value = f"<div style='color:#c62828'><b>{type(err).__name__}</b>: {html.escape(str(err))}</div>"

    def guarded(self, fn, *args, **kwargs):
        """Run ``fn``; a store error is shown in the output and ``None`` returned."""
        try:
            return fn(*args, **kwargs)
        except (RmqlabError, OSError, ValueError) as err:
            self.show_error(err)
            return None


def as_store(store: StoreReader | str | os.PathLike) -> StoreReader:
    """A path opens the store read-only (non-strict: a damaged store still opens)."""
    if isinstance(store, StoreReader):
        return store
    return open_store(Path(store), strict=False)


def topics_of(store: StoreReader) -> list[str]:
    return sorted({q.topic for q in store.queue_ids()})


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive, not ours to judge
        return True
    return True


def scratch_dir(name: str) -> Path:
    """A new, empty directory for one lesson run's scratch data:
    ``$TMPDIR/rmqlab-lessons-<uid>/<name>-<pid>-<random>``, removed when the kernel
    exits.

    Per run, not per user: two kernels running the same lesson at once (a learner and
    the test suite, two notebooks) each get their own.  A killed kernel's exit handler
    never runs, so directories whose process is gone are removed here, the next time
    any lesson asks for one.

    >>> d = scratch_dir("demo")
    >>> d.parent.name.startswith("rmqlab-lessons-"), list(d.iterdir())
    (True, [])
    """
    uid = os.getuid() if hasattr(os, "getuid") else 0
    base = Path(tempfile.gettempdir()) / f"rmqlab-lessons-{uid}"
    base.mkdir(parents=True, exist_ok=True)
    for old in base.iterdir():
        pid = old.name.rsplit("-", 2)[-2] if old.name.count("-") >= 2 else ""
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    d = Path(tempfile.mkdtemp(prefix=f"{name}-{os.getpid()}-", dir=base))
    atexit.register(shutil.rmtree, d, True)
    return d
