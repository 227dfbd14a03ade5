"""Lessons in a real browser: JupyterLab in headless Chromium, Run All, every widget
rendered, no error (scripts/lesson-browser.py; skipped without Chromium, its driver
and selenium)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "lesson-browser.py"


def _missing():
    spec = importlib.util.spec_from_file_location("lesson_browser", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.missing()


@pytest.mark.skipif(bool(_missing()), reason=_missing() or "")
def test_widget_lessons_run_all_in_a_browser(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--screenshots", str(tmp_path), "01", "03", "08", "11"], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("ok   ") == 4 and "0 widget(s)" not in proc.stdout
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["01_tour.png", "03_writing.png", "08_crash_recovery.png", "11_live.png"]
