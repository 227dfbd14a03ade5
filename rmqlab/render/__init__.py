"""Turning values into human text and HTML (used by the CLI, notebooks and widgets).

The notebook views (:mod:`rmqlab.reprs`) the models' ``_repr_html_`` look up by name
are registered by :mod:`rmqlab.render.views`, imported when a model is first shown: a
command that prints text does not load them."""
