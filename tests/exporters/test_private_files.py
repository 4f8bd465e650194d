"""Files holding traffic are private (0600 in 0700) whatever the umask, and older, looser ones are tightened."""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluation.cache import EvalCache
from exporters.store import SqliteRecordStore
from scoring.types import TrustRecord

pytestmark = pytest.mark.unit


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def loose_umask() -> Iterator[None]:
    previous = os.umask(0o022)  # a common shell default: files 0644, directories 0755
    yield
    os.umask(previous)


def write_one(path: Path) -> None:
    async def scenario() -> None:
        store = SqliteRecordStore(path, max_age_s=3600, max_records=10)
        await store.open()
        await store.put(TrustRecord(id="r1", status="done", model="m", owner="team-a"))
        await store.close()

    asyncio.run(scenario())


def test_a_new_store_is_0600_in_a_0700_directory(tmp_path: Path, loose_umask: None) -> None:
    path = tmp_path / "var" / "trustgate" / "records.sqlite3"
    write_one(path)
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700 and mode(path.parent.parent) == 0o700
    assert all(mode(side) == 0o600 for side in path.parent.iterdir())  # WAL and shared-memory files too


def test_an_older_world_readable_store_is_tightened_with_a_warning(
    tmp_path: Path, loose_umask: None, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "older"  # as an older version left it: created under umask 022
    directory.mkdir(mode=0o755)
    path = directory / "records.sqlite3"
    sqlite3.connect(path).close()
    os.chmod(path, 0o644)
    with caplog.at_level(logging.WARNING, logger="trustgate.files"):
        write_one(path)
    assert mode(path) == 0o600 and mode(directory) == 0o700
    assert sum("open to other users" in r.getMessage() for r in caplog.records) == 2


def test_a_shared_directory_is_left_alone_but_the_file_is_private(
    tmp_path: Path, loose_umask: None, caplog: pytest.LogCaptureFixture
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # like /tmp
    with caplog.at_level(logging.WARNING, logger="trustgate.files"):
        write_one(shared / "records.sqlite3")
    assert mode(shared) == 0o1777 and mode(shared / "records.sqlite3") == 0o600
    assert any("use a private directory" in r.getMessage() for r in caplog.records)


def test_the_evaluation_cache_is_private(tmp_path: Path, loose_umask: None) -> None:
    path = tmp_path / "eval" / "cache.sqlite3"
    with EvalCache(path):
        pass
    assert mode(path) == 0o600 and mode(path.parent) == 0o700
