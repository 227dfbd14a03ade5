"""Every example in the package's docstrings runs and prints what it shows (doctest),
on the stores the package ships: what a user calls first, as the API pages show it."""

from __future__ import annotations

import doctest
import importlib

import pytest

#: the modules whose docstrings hold examples
MODULES = [
    "rmqlab.store",
    "rmqlab.store.checkpoint",
    "rmqlab.store.commitlog",
    "rmqlab.store.consume_queue",
    "rmqlab.store.index_file",
    "rmqlab.store.reader",
    "rmqlab.engine",
    "rmqlab.engine.message",
    "rmqlab.engine.message_store",
    "rmqlab.engine.results",
    "rmqlab.writers.clock",
    "rmqlab.writers.dispatch",
    "rmqlab.scan.dispatch_request",
    "rmqlab.recovery.next_start",
    "rmqlab.lookup",
    "rmqlab.recovery.recover",
    "rmqlab.recovery.model",
    "rmqlab.recovery.report",
    "rmqlab.forensics.verify",
    "rmqlab.forensics.salvage",
    "rmqlab.report",
]


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_run(name):
    module = importlib.import_module(name)
    found = doctest.DocTestFinder().find(module)
    assert any(t.examples for t in found), f"{name} holds no example"
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, report=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} example(s) of {name} failed (python -m doctest -v to see them)"
