"""The live RocketMQ oracle for the whole run: built once with Maven (its own cache
keeps later builds quick), one JVM shared by every test in this folder.

Outside CI a missing Maven or JDK skips these tests with the reason; in CI (and with
``RMQLAB_REQUIRE_ORACLE=1``) it fails the run, as a missing Spark does: a green suite
that never asked RocketMQ would not be green.
"""

from __future__ import annotations

import pytest

from tests.oracle.harness import Oracle, build_or_skip


def _built(release: str) -> list[str]:
    return build_or_skip(release)


@pytest.fixture(scope="session")
def oracle_command() -> list[str]:
    """The java command line of the harness built against RocketMQ 5.3.3 (once per run)."""
    return _built("5.3.3")


@pytest.fixture(scope="session")
def oracle(oracle_command):
    with Oracle(oracle_command) as rmq:
        yield rmq


@pytest.fixture(scope="session")
def oracle_49():
    """The same harness on RocketMQ 4.9.7's store, where its rules differ (V1 records
    only, no property CRC, normal recovery from the third-to-last file).  Two requests at
    a time, not six: several 4.9.7 stores in one JVM once failed inside RocketMQ
    (a NullPointerException from a shared tree map) while the suite's other worker
    loaded the machine; a broker runs one store per JVM."""
    with Oracle(_built("4.9.7"), threads=2) as rmq:
        yield rmq


@pytest.fixture(scope="session")
def broker_capture(oracle_command, tmp_path_factory):
    """A store a real RocketMQ 5.3.3 broker left when it was killed (SIGKILL) after a
    client sent, delayed, timed, batched and transacted messages and two consumer
    groups consumed (see tests/oracle/broker.py).  Read-only: copy it to change it."""
    from tests.oracle.broker import capture

    return capture(tmp_path_factory.mktemp("broker") / "capture", oracle_command)


@pytest.fixture(scope="session")
def broker_capture_49(tmp_path_factory):
    """The same application against a RocketMQ 4.9.7 name server and broker (no timer
    messages: a 4.9 client has none), killed the same way."""
    from tests.oracle.broker import capture

    return capture(tmp_path_factory.mktemp("broker49") / "capture", _built("4.9.7"))
