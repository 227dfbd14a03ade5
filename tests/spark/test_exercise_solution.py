"""The Spark lesson's exercise: its solution, run through Spark, is what ``check``
computes with the single-process reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqlab.lab import exercises as ex

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


@pytest.mark.spark
def test_spark_solution_is_right(spark):
    # the lesson's paths are relative to notebooks/, where its kernel (and so its
    # Spark) starts; this session started elsewhere
    code = ex.solution("10.cq_entries").replace('"../', f'"{NOTEBOOKS.parent}/')
    answer = eval(code, {"spark": spark})
    assert ex.check("10.cq_entries", answer), (answer, ex.EXERCISES["10.cq_entries"].answer())
