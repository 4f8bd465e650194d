"""The harness's ``Ask``: the gateway's upstream behind the evaluation cache.

Scorers receive an ``Ask`` exactly as they do in the gateway and send the same
request bodies (``proxy.trust.ask.UpstreamAsk``'s shape), so an evaluation measures
what the gateway would compute. The only difference is memory: each call site
(dataset, item, component, model) first looks for the same request in the
cache, and a reply from the upstream is stored before it is used.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from proxy import ask_body, parse_completion, reply_from_completion
from scoring import Reply

from .cache import CallSite, EvalCache

__all__ = ["CachedAsk", "CallCounter", "Complete", "alternatives", "chosen_tokens", "reply_text"]

Complete = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]  # (model group, body) -> completion JSON


@dataclass
class CallCounter:
    """Upstream calls a run made, and those it answered from the cache instead."""

    made: int = 0
    cached: int = 0


class CachedAsk:
    def __init__(self, complete: Complete, cache: EvalCache, site: CallSite, counter: CallCounter) -> None:
        self._complete = complete
        self._cache = cache
        self._site = site
        self._counter = counter

    async def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        """The completion JSON for ``body``: from the cache, or from the upstream (then cached)."""
        cached = self._cache.reply(self._site, body)
        if cached is not None:
            self._counter.cached += 1
            return cached
        data = await self._complete(self._site.model, body)
        self._counter.made += 1
        self._cache.store_reply(self._site, body, data)
        return data

    async def __call__(
        self,
        messages: list[dict[str, Any]],
        *,
        max_tokens: int = 16,
        temperature: float | None = 0.0,
        logprobs: bool = False,
        top_logprobs: int | None = None,
        seed: int | None = None,
    ) -> Reply:
        body = ask_body(
            messages,
            max_tokens=max_tokens,
            temperature=temperature,
            logprobs=logprobs,
            top_logprobs=top_logprobs,
            seed=seed,
        )
        return reply_from_completion(await self.completion(body))


def chosen_tokens(data: dict[str, Any]) -> list[tuple[str, float]] | None:
    """The generated tokens with their own log-probabilities, or None when the upstream sent none."""
    first = parse_completion(data).first
    return (first.chosen_tokens() if first is not None else []) or None


def alternatives(data: dict[str, Any]) -> list[dict[str, float]]:
    """Per generated token, its top alternatives as {token: logprob} (as the scorers see them)."""
    return reply_from_completion(data).top_logprobs or []


def reply_text(data: dict[str, Any]) -> str:
    return reply_from_completion(data).text
