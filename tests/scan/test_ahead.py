"""``rmqlab.scan.ahead.read_ahead``: the source's items in order from another thread, its
exception after the items before it, and an early stop that closes the source."""

from __future__ import annotations

import threading

import pytest

from rmqlab.scan import kernels
from rmqlab.scan.ahead import read_ahead


@pytest.fixture(params=[1, 2], ids=["in-place", "threaded"])
def threads(request, monkeypatch):
    monkeypatch.setattr(kernels, "_WORKERS", request.param)
    return request.param


def test_items_arrive_in_order_from_the_source_thread(threads):
    where = []

    def source():
        for i in range(500):
            where.append(threading.current_thread() is threading.main_thread())
            yield i

    assert list(read_ahead(source())) == list(range(500))
    assert all(where) == (threads == 1)  # produced on the caller's thread only without a second


def test_the_source_error_comes_after_the_items_before_it(threads):
    def source():
        yield from range(10)
        raise ValueError("damage at offset 1234")

    got = []
    with pytest.raises(ValueError, match="offset 1234"):
        for item in read_ahead(source(), depth=1):
            got.append(item)
    assert got == list(range(10))


def test_stopping_early_closes_the_source_and_its_thread(threads):
    closed = threading.Event()

    def source():
        try:
            i = 0
            while True:
                yield i
                i += 1
        finally:
            closed.set()

    ahead = read_ahead(source())
    assert [next(ahead) for _ in range(3)] == [0, 1, 2]
    ahead.close()
    assert closed.is_set()
    assert not any(t.name == "rmqlab-read-ahead" for t in threading.enumerate())
