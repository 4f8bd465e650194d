"""A judge whose every verdict can be worked out by hand, and the gateway's path to it.

Marker words (all-capital, four letters or more: ALPHA, BETA...) stand for
facts. The fake upstream, scripted with ``marker_judge``, answers "Support"
when every marker of the judged answer appears in the evidence of the
prompt, else a messy "neutral" sentence. The scorer reaches it as it reaches
any judge in the gateway: ``proxy.trust.ask.UpstreamAsk`` over
``proxy.upstream.client.UpstreamClient`` over real HTTP.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from prometheus_client import CollectorRegistry

from exporters import build_metrics
from proxy import settings_from_dict
from proxy.trust.ask import UpstreamAsk
from proxy.upstream.client import UpstreamClient
from proxy.upstream.prices import PriceList
from scoring.types import Ask
from tests.conftest import gateway_config
from tests.fake_upstream import FakeUpstream, last_user_text

MARKER = re.compile(r"\b[A-Z]{4,}\b")


def prompt_parts(prompt: str) -> tuple[str, str]:
    """(evidence, answer) of a Table 6 judge prompt."""
    evidence = prompt.split("Evidence: ", 1)[1].split("\nQuestion: ", 1)[0]
    answer = prompt.rsplit("\nAnswer: ", 1)[1].split("\nRelation:", 1)[0]
    return evidence, answer


def marker_judge(messages: list[dict[str, Any]]) -> str:
    evidence, answer = prompt_parts(last_user_text(messages))
    needed = set(MARKER.findall(answer))
    if needed and needed <= set(MARKER.findall(evidence)):
        return "Support"
    return "The evidence is neutral on this."


def with_gateway_ask(fake: FakeUpstream, scenario: Callable[[Ask], Awaitable[Any]]) -> Any:
    """Run ``scenario(ask)`` with an ``Ask`` on model group "fake", which the fake upstream serves."""

    async def run() -> Any:
        async with httpx.AsyncClient() as http:
            settings = settings_from_dict(gateway_config(fake.url))  # type: ignore[attr-defined]
            upstream = UpstreamClient(settings, http)
            prices = PriceList.of(settings)
            try:
                return await scenario(
                    UpstreamAsk(upstream, build_metrics(CollectorRegistry()), "fake", "rag", prices=prices)
                )
            finally:
                await upstream.aclose()

    return asyncio.run(run())
