"""The Spark lesson's exercise: its solution, run through Spark, is what ``check``
computes with the single-process reader."""

from __future__ import annotations


import pytest

from rmqlab.lab import exercises as ex

from tests.support import LESSONS


@pytest.mark.spark
def test_spark_solution_is_right(spark):
    # the lesson's paths are relative to the lesson folder, where its kernel (and so
    # its Spark) starts; this session started elsewhere
    code = ex.solution("10.cq_entries").replace('"stores/', f'"{LESSONS}/stores/')
    answer = eval(code, {"spark": spark})
    assert ex.check("10.cq_entries", answer), (answer, ex.EXERCISES["10.cq_entries"].answer())
