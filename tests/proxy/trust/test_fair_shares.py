"""No key starves another of scoring: one key filling the queue or spending a model's budget sheds only its own jobs.

Over real sockets: the in-memory queue and the Redis one (a real redis-server, a real worker process), and the
scoring budget counted per key. Before the shares, another key's jobs were shed ``queue_full`` or
``call_budget``, and under a block policy their answers went out unscored.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from scoring.types import Ask, ComponentResult, Scorer, ScoringJob
from tests.fake_upstream import FakeUpstream
from tests.proxy.metric_samples import metric
from tests.proxy.scored_gateway import wait_for_record
from tests.proxy.tenants import bearer, operator_config
from tests.proxy.trust.budget_window import in_one_window
from tests.redis_server import RedisServer
from tests.servers import ServerThread
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


class SlowScorer(Scorer):
    """Asks the upstream once, then takes ``delay`` seconds: jobs pile up behind it."""

    name = "bc"

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        await ask([{"role": "user", "content": f"check: {job.answer}"}])
        await asyncio.sleep(self.delay)
        return ComponentResult(component="bc", value=0.9, upstream_calls=1)


def ask(server: ServerThread, key: str, content: str, mode: str = "async") -> httpx.Response:
    response = httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={**bearer(key), "x-trustgate-mode": mode},
        timeout=30,
        json={"model": "fake", "messages": [{"role": "user", "content": content}]},
    )
    assert response.status_code == 200, response.text
    return response


def shares(**queue: Any) -> dict[str, Any]:
    """The scoring section: clients choose the mode, Table 3 (one component's value), a queue of 4, half a key's."""
    return {
        "allow_client_mode": "any",
        "combine": "paper",
        "queue": {"max_size": 4, "key_share": 0.5, "concurrency": 1, "scorer_timeout_s": 20, **queue},
    }


def test_a_key_filling_the_memory_queue_sheds_only_its_own_jobs(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = start_gateway(operator_config(fake_upstream.url, **shares()), scorers=[SlowScorer(delay=1.0)])  # type: ignore[attr-defined]
    flood = [ask(server, "sk-team-a", f"What is question {i}?") for i in range(6)]
    statuses = [r.headers["x-trust-status"] for r in flood]
    # one in the worker's hands (once it has taken it), two waiting (its share of 4), the rest shed: its own
    assert statuses[:2] == ["pending", "pending"] and statuses.count("shed") >= 3, statuses
    shed = [wait_for_record(server, r.headers["x-trust-id"]) for r in flood if r.headers["x-trust-status"] == "shed"]
    assert {record["shed_reason"] for record in shed} == {"key_share"}
    other = ask(server, "sk-team-b", "Who is my own question?", mode="sync")  # the other key: scored, not shed
    assert other.headers["x-trust-status"] == "done" and other.headers["x-trust-score"] == "0.9000"
    assert metric(server, "trustgate_scoring_shed_jobs_total", model="fake", reason="key_share") == len(shed)
    assert metric(server, "trustgate_scoring_shed_jobs_total", model="fake", reason="queue_full") == 0


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[Callable[[dict[str, Any]], None]]:
    """Starts one ``trustgate worker`` (tests.redis_worker's test scorer) on a config, stopped at the end."""
    started: list[subprocess.Popen[bytes]] = []

    def start(config: dict[str, Any]) -> None:
        path = tmp_path / "worker.yaml"
        path.write_text(yaml.safe_dump(config))
        started.append(subprocess.Popen([sys.executable, "-m", "tests.redis_worker", str(path)]))

    yield start
    for process in started:
        process.kill()
        process.wait(timeout=10)


def test_a_key_filling_the_redis_stream_sheds_only_its_own_jobs_until_a_worker_takes_them(
    fake_upstream: FakeUpstream,
    redis_server: RedisServer,
    start_gateway: Callable[..., ServerThread],
    worker: Callable[[dict[str, Any]], None],
) -> None:
    queue = {"backend": "redis", "redis_url": redis_server.url, "claim_idle_s": 1.0}
    config = operator_config(fake_upstream.url, **shares(**queue))  # type: ignore[attr-defined]
    server = start_gateway(config, scorers=None)  # workers score; none yet: every accepted job waits in the stream
    flood = [ask(server, "sk-team-a", f"What is question {i}?") for i in range(4)]
    assert [r.headers["x-trust-status"] for r in flood] == ["pending", "pending", "shed", "shed"]
    other = ask(server, "sk-team-b", "Who is my own question?")
    assert other.headers["x-trust-status"] == "pending"  # accepted: the stream had room for it
    assert redis_server.client().hgetall("trustgate:jobs:per-key") == {"team-a": "2", "team-b": "1"}
    worker(config)  # it scores the jobs; each acknowledged one leaves its key's count
    for response in (*flood[:2], other):
        assert wait_for_record(server, response.headers["x-trust-id"], timeout=60)["status"] == "done"
    assert wait_until(lambda: redis_server.client().hget("trustgate:jobs:per-key", "team-a") == "0")
    assert ask(server, "sk-team-a", "What is one more?").headers["x-trust-status"] == "pending"


def test_a_key_spending_its_share_of_the_budget_sheds_only_its_own_jobs(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    scoring = {"mode": "sync", "combine": "paper", "budget": {"calls_per_minute": 4, "key_share": 0.5}}
    server = start_gateway(operator_config(fake_upstream.url, **scoring), scorers=[SlowScorer()])  # type: ignore[attr-defined]
    in_one_window(15)
    spender = [ask(server, "sk-team-a", f"What is question {i}?", mode="sync") for i in range(4)]
    assert [r.headers["x-trust-status"] for r in spender] == ["done", "done", "shed", "shed"]
    shed = wait_for_record(server, spender[-1].headers["x-trust-id"])
    assert shed["shed_reason"] == "key_call_budget" and "this key's share" in shed["error"]
    others = [ask(server, "sk-team-b", f"What is mine {i}?", mode="sync") for i in range(2)]
    assert [r.headers["x-trust-status"] for r in others] == ["done", "done"]  # the other half is theirs
    assert metric(server, "trustgate_scoring_shed_jobs_total", model="fake", reason="key_call_budget") == 2
    assert metric(server, "trustgate_scoring_shed_jobs_total", model="fake", reason="call_budget") == 0
