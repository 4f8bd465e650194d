"""Fixtures of the gateway's tests on Redis: a real redis-server, and worker processes on it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fake_upstream import FakeUpstream
from tests.proxy.redis_gateway import RedisDeployment, StartGateway, StartWorker
from tests.redis_server import RedisServer


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path).start()
    yield server
    server.stop()


@pytest.fixture
def start_worker(tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    processes: list[subprocess.Popen[bytes]] = []

    def start(config: dict[str, Any], delay: float = 0.0, *extra: str) -> subprocess.Popen[bytes]:
        path = tmp_path / f"worker-{len(processes)}.yaml"
        path.write_text(yaml.safe_dump(config))
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.redis_worker", str(path), "--delay", str(delay), *extra],
            env={**os.environ, "PYTHONPATH": str(Path.cwd())},
        )
        processes.append(process)
        return process

    yield start
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


@pytest.fixture
def redis_deployment(
    fake_upstream: FakeUpstream, redis_server: RedisServer, start_gateway: StartGateway, start_worker: StartWorker
) -> RedisDeployment:
    """This test's Redis and the session's fake upstream, with the starters that stop what they start when the test
    ends."""
    return RedisDeployment(fake_upstream.url, redis_server.url, start_gateway, start_worker)  # type: ignore[attr-defined]
