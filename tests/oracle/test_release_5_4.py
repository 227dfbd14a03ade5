"""rmqlab against a live Apache RocketMQ 5.4.0 (the checks: tests/oracle/release_checks.py)."""

from tests.oracle.release_checks import *  # noqa: F401,F403 (the tests, run for this release)

RELEASE = "5.4.0"
