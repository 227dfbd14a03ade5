"""Spark for the lessons: :func:`rmqlab.spark.session.local_spark` with the JVM's
output sent to a log file in the lessons' scratch directory, so that it never lands
in a cell's output."""

from __future__ import annotations

import os

from ..spark.session import local_spark as _local_spark
from .base import scratch_dir


def local_spark(cores: int = 2, app: str = "rmqlab-lesson", *, shuffle_partitions: int = 4, jvm_log: str | os.PathLike | None = None):
    """A ``local[cores]`` session for a lesson (see :func:`rmqlab.spark.session.local_spark`)."""
    return _local_spark(cores, app, shuffle_partitions=shuffle_partitions, jvm_log=jvm_log or scratch_dir("spark-jvm") / "spark-jvm.log")
