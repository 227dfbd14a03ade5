"""Importing this module registers every notebook view (:mod:`rmqlab.reprs`): the
``@reprs.view`` functions of the modules below.  :mod:`rmqlab.reprs` imports it when
a model is first shown (``rmqlab/__init__`` names it)."""

from . import html, notebook, storemap  # noqa: F401  (their @reprs.view functions register on import)
