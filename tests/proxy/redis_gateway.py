"""A gateway and its scoring workers on a real Redis: the config, a worker that is consuming, a request."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from tests.conftest import gateway_config
from tests.proxy.scored_gateway import AUTH, AskingScorer
from tests.redis_server import free_port
from tests.servers import ServerThread


def redis_config(upstream_url: str, redis_url: str, **queue: Any) -> dict[str, Any]:
    config = gateway_config(upstream_url)
    # Clients choose the mode here; Trust_OV is Table 3, whose values the tests check; every kind of answer is
    # scored, whatever the fake upstream's echo reads as: these tests are about the queue, not triage.
    config["trustgate"] = {
        "scoring": {
            "allow_client_mode": "any",
            "combine": "paper",
            "applicability": {"score_kinds": "all"},
            "queue": {
                "backend": "redis",
                "redis_url": redis_url,
                "claim_idle_s": 1.0,
                "concurrency": 1,
                "scorer_timeout_s": 10,
                **queue,
            },
        }
    }
    return config


StartGateway = Callable[..., ServerThread]
StartWorker = Callable[..., subprocess.Popen[bytes]]


@dataclass
class RedisDeployment:
    """A test's scale-out deployment: gateways and worker processes on one real Redis, before the session's fake
    upstream. Its tests differ in the queue's settings and in what they start, not in how they start it."""

    upstream_url: str
    redis_url: str
    start_gateway: StartGateway
    start_worker: StartWorker

    def config(self, **queue: Any) -> dict[str, Any]:
        return redis_config(self.upstream_url, self.redis_url, **queue)

    def gateway(self, config: dict[str, Any], bc: float = 0.1) -> ServerThread:
        """A gateway whose own scorer gives Trust_BC ``bc``: on the worker path it never runs, the workers score."""
        return self.start_gateway(config, scorers=[AskingScorer("bc", bc)])


def start_ready_worker(
    start_worker: Callable[..., subprocess.Popen[bytes]], config: dict[str, Any], delay: float
) -> int:
    """A worker process that is consuming (its readiness probe answers 200); its pid.

    A worker spends seconds importing before it reads: jobs sent before then
    all go to the workers that are already reading.
    """
    port = free_port()
    worker = start_worker(config, delay, "--metrics-port", str(port))
    deadline = time.monotonic() + 60
    while True:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"http://127.0.0.1:{port}/health/readiness", timeout=2).status_code == 200:
                return worker.pid
        assert worker.poll() is None and time.monotonic() < deadline, "the worker did not become ready"
        time.sleep(0.1)


def chat(server: ServerThread, content: str, mode: str = "async") -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={**AUTH, "x-trustgate-mode": mode},
        timeout=30,
        json={"model": "fake", "messages": [{"role": "user", "content": content}]},
    )
