"""ruff (its checks and its formatter) and mypy, as configured in pyproject.toml, run with the tests: a finding
fails the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

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


def test_make_lint_and_the_pre_commit_hooks_run_these_checks() -> None:
    """A contributor's ``make lint`` and the pre-commit hooks run the three checks above, so that they pass and
    fail with CI."""
    makefile = (ROOT / "Makefile").read_text()
    lint = makefile.split("\nlint:", 1)[1].split("\n\n", 1)[0]
    hooks = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    entries = [hook["entry"] for repo in hooks["repos"] for hook in repo["hooks"]]
    for check in ("ruff check", "ruff format --check", "mypy"):
        assert f"-m {check}" in lint, check
        assert [entry for entry in entries if f"-m {check}" in entry], check
