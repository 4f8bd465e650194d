"""``on_low_trust`` set up for its tests: two model groups, sync scoring, a scorer whose verdict the question
decides, and the calls that read its outcome."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import openai

from scoring.types import Ask, ComponentResult, Scorer, ScoringJob
from tests.conftest import MASTER_KEY, gateway_config, sdk_client
from tests.servers import ServerThread

LOW, HIGH = "Is this in doubt?", "Who built the first temple?"


class VerdictScorer(Scorer):
    """0.1 for an answer in doubt, else 0.9; ``by_model`` overrides that for a model group (and may wait)."""

    name = "bc"

    def __init__(self, by_model: dict[str, float] | None = None, delay: dict[str, float] | None = None) -> None:
        self.by_model, self.delay = by_model or {}, delay or {}

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        await asyncio.sleep(self.delay.get(job.model, 0.0))
        value = self.by_model.get(job.model, 0.1 if "doubt" in job.answer else 0.9)
        return ComponentResult(component="bc", value=value, label="trusted" if value >= 0.5 else "untrusted")


def config(
    upstream: str, path: str, *, strong_base: str | None = None, keys: list[dict[str, Any]] | None = None, **policy: Any
) -> dict[str, Any]:
    """Groups ``cheap`` and ``strong`` on the fake upstream, sync scoring, and ``policy`` as on_low_trust."""
    base = gateway_config(upstream)
    deployment = base["model_list"][0]
    strong = {
        "model_name": "strong",
        "litellm_params": {**deployment["litellm_params"], "api_base": strong_base or f"{upstream}/v1"},
    }
    base["model_list"] = [{**deployment, "model_name": "cheap"}, strong]
    base["trustgate"] = {
        "passthrough": path == "passthrough",
        "keys": keys or [],
        # Table 3 passes the one component's value through: the scores below are the scorer's
        "scoring": {
            "mode": "sync",
            "sync_timeout_s": 5,
            "queue": {"scorer_timeout_s": 4},
            "combine": "paper",
            "on_low_trust": {"below": 0.4, **policy},
        },
    }
    return base


def ask_chat(server: ServerThread, question: str, key: str = MASTER_KEY) -> Any:
    return sdk(server, key).chat.completions.with_raw_response.create(
        model="cheap", messages=[{"role": "user", "content": question}]
    )


def record(server: ServerThread, record_id: str, key: str = MASTER_KEY) -> httpx.Response:
    return httpx.get(f"{server.url}/v1/trust/{record_id}", headers={"authorization": f"Bearer {key}"}, timeout=10)


def sdk(server: ServerThread, key: str = MASTER_KEY) -> openai.OpenAI:
    return sdk_client(server, key)
