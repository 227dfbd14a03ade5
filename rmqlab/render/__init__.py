"""Turning values into human text and HTML (used by the CLI, notebooks and widgets).

Importing the package registers the notebook views (:mod:`rmqlab.reprs`) the models'
``_repr_html_`` look up by name."""

from . import html, notebook, storemap  # noqa: F401  (their @reprs.view functions register on import)
