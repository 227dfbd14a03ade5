"""Notebook (HTML) views of the package's objects, looked up by name.

The models sit below the renderers: a model's ``_repr_html_`` asks :func:`html` for the
view of its name, and :mod:`rmqlab.render.views` registers a function under each name when
it is imported (the package names it in :data:`RENDERER`, and :func:`html` imports it
when a model is first shown, so every use of rmqlab has them).  No model imports a
renderer.

    def _repr_html_(self):
        return reprs.html("record", self)          # a model

    @reprs.view("record")                          # rmqlab.render
    def record_html(rec): ...
"""

from __future__ import annotations

from typing import Any, Callable

_VIEWS: dict[str, Callable[[Any], str]] = {}
#: the module whose import registers the views, named by the package's top
#: (``rmqlab/__init__``): imported when a model is first shown, not before
RENDERER: str | None = None
_RENDERER_LOADED = False


def view(name: str):
    """Register the decorated function as the HTML view called ``name``."""

    def register(fn: Callable[[Any], str]) -> Callable[[Any], str]:
        _VIEWS[name] = fn
        return fn

    return register


def html(name: str, obj: Any) -> str | None:
    """The HTML of ``obj`` by the view ``name``; None (Jupyter then shows the text
    repr) if no renderer registered it."""
    global _RENDERER_LOADED
    if RENDERER and not _RENDERER_LOADED:
        import importlib

        importlib.import_module(RENDERER)  # registers every view, when a model is first shown
        _RENDERER_LOADED = True
    fn = _VIEWS.get(name)
    return fn(obj) if fn is not None else None
