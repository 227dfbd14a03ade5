"""The live RocketMQ oracle for the whole run: built once with Maven (its own cache
keeps later builds quick), one JVM shared by every test in this folder.

Outside CI a missing Maven or JDK skips these tests with the reason; in CI (and with
``RMQLAB_REQUIRE_ORACLE=1``) it fails the run, as a missing Spark does: a green suite
that never asked RocketMQ would not be green.
"""

from __future__ import annotations

import os

import pytest

from tests.oracle.harness import Oracle, OracleUnavailable, build


@pytest.fixture(scope="session")
def oracle():
    required = bool(os.environ.get("CI") or os.environ.get("RMQLAB_REQUIRE_ORACLE"))
    try:
        command = build()
    except OracleUnavailable as exc:
        if required:
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    with Oracle(command) as rmq:
        yield rmq
