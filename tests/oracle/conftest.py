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


@pytest.fixture(scope="session")
def broker_capture(tmp_path_factory):
    """A store a real RocketMQ 5.3.3 broker left when it was killed (SIGKILL) after a
    client sent, delayed, timed, batched and transacted messages and two consumer
    groups consumed (see tests/oracle/broker.py).  Read-only: copy it to change it."""
    from tests.oracle.broker import capture

    required = bool(os.environ.get("CI") or os.environ.get("RMQLAB_REQUIRE_ORACLE"))
    try:
        command = build()
    except OracleUnavailable as exc:
        if required:
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    return capture(tmp_path_factory.mktemp("broker") / "capture", command)
