"""ruff (its checks and its formatter) and mypy, as configured in pyproject.toml, run with the tests: a finding
fails the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, timeout=900)


def test_ruff_finds_nothing() -> None:
    done = _run("ruff", "check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_format_changes_nothing() -> None:
    done = _run("ruff", "format", "--no-cache", "--check", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing() -> None:
    """proxy, scoring, exporters and evaluation (``[tool.mypy] packages``)."""
    done = _run("mypy")
    assert done.returncode == 0, done.stdout + done.stderr
