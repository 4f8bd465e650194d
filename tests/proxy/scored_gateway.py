"""A gateway that scores with stand-in scorers, and the calls its tests make: the operator's config, the
scorers, a chat request, a trust record read or awaited."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from scoring.types import Ask, ComponentResult, Scorer, ScoringJob
from tests.conftest import MASTER_KEY, gateway_config
from tests.servers import ServerThread

AUTH = {"authorization": f"Bearer {MASTER_KEY}"}


class AskingScorer(Scorer):
    """Re-asks the upstream once (as the real scorers do) and scores by what it heard."""

    def __init__(self, name: str, value: float, delay: float = 0.0, label: str = "neutral") -> None:
        self.name, self.value, self.delay, self.label = name, value, delay, label

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        await asyncio.sleep(self.delay)
        reply = await ask([{"role": "user", "content": f"check: {job.answer}"}])
        return ComponentResult(
            component=self.name,
            value=self.value,
            label=self.label,
            upstream_calls=1,
            details={"heard": reply.text, "question": job.question},
        )


class FollowingScorer(AskingScorer):
    """Starts once ``after``'s result is in (``RunsAfter``) and is never spared by it: with it, a job's scorers
    run one after the other, and the job outlasts a sync wait that each of them ends within."""

    def __init__(self, name: str, value: float, after: str, delay: float = 0.0) -> None:
        super().__init__(name, value, delay)
        self.after = after

    def spared(self, earlier: ComponentResult) -> ComponentResult | None:
        return None


def one_after_the_other(delay: float) -> list[Scorer]:
    """Trust_BC (0.3), then a component the paper's combination leaves out: each takes ``delay`` and more."""
    return [AskingScorer("bc", 0.3, delay=delay), FollowingScorer("sc", 0.9, after="bc", delay=delay)]


class RaisingScorer(Scorer):
    name = "fc"

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        raise RuntimeError("evidence index exploded")


def scoring_config(upstream_url: str, **scoring: Any) -> dict[str, Any]:
    """An operator who lets clients choose the scoring mode (the default only lets them lower it:
    tests/proxy/whole_gateway/test_tenant_isolation.py), with Trust_OV by the paper's Table 3, whose values the
    tests work out by hand (the default combination: tests/scoring/test_default_combination.py)."""
    config = gateway_config(upstream_url)
    config["trustgate"] = {
        "scoring": {"queue": {"scorer_timeout_s": 1.0}, "allow_client_mode": "any", "combine": "paper", **scoring}
    }
    return config


def chat(
    server: ServerThread,
    content: str = "Who built the first temple?",
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={**AUTH, **(headers or {})},
        timeout=20,
        json={"model": "fake", "messages": [{"role": "user", "content": content}], **extra},
    )


def wait_for_record(server: ServerThread, record_id: str, timeout: float = 10) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = httpx.get(f"{server.url}/v1/trust/{record_id}", headers=AUTH).json()
        if record["status"] != "pending":
            return record
        time.sleep(0.05)
    raise AssertionError(f"record {record_id} still pending")


def record(server: ServerThread, response: httpx.Response) -> dict[str, Any]:
    found: dict[str, Any] = httpx.get(f"{server.url}/v1/trust/{response.headers['x-trust-id']}", headers=AUTH).json()
    return found
