"""Private files: created 0600, an existing one tightened by its path, never opened (a descriptor closed on a
database drops the SQLite locks this process's connections hold on it)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from scoring.private_files import FILE_MODE, private_file

pytestmark = pytest.mark.unit


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_missing_file_is_created_private(tmp_path: Path) -> None:
    path = private_file(tmp_path / "store" / "records.sqlite3")
    assert path.exists() and _mode(path) == FILE_MODE and _mode(path.parent) == 0o700


def test_an_existing_file_is_tightened_by_its_path_and_never_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "records.sqlite3"
    path.write_bytes(b"")
    path.chmod(0o644)
    opened: list[Any] = []
    real_open = os.open

    def recording_open(file: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(file)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", recording_open)
    private_file(path)
    assert opened == [] and _mode(path) == FILE_MODE
    assert "was open to other users" in caplog.text
