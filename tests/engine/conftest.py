"""Fixtures for the engine tests."""

from __future__ import annotations

import pytest

from tests.engine.engine_support import reference_records


@pytest.fixture(scope="session")
def ref_records():
    cache: dict[str, list] = {}

    def get(case: str):
        if case not in cache:
            cache[case] = reference_records(case)
        return cache[case]

    return get
