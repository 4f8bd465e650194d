"""The scorers' door to the upstream: an ``Ask`` bound to one model group and a purpose.

Scoring calls go through the same UpstreamClient as user traffic (same
timeouts and fallbacks; retries within scoring's budget, shed while the group
is rate limited) and are counted by purpose, so dashboards can tell user calls
from scoring calls.
"""

from __future__ import annotations

from typing import Any

from exporters import GatewayMetrics
from scoring.types import Reply, UnreadableReply, UpstreamFailure

from .errors import GatewayError
from .replies import ChatCompletion, parse_completion
from .slots import Priority
from .upstream import UpstreamClient
from .upstream_errors import MALFORMED_REPLY

__all__ = ["UpstreamAsk", "ask_body", "reply_from_completion", "scoring_reply"]


def ask_body(messages: list[dict[str, Any]], *, max_tokens: int, temperature: float, logprobs: bool,
             top_logprobs: int | None) -> dict[str, Any]:
    """The chat request an ``Ask`` sends; every Ask implementation builds it here."""
    body: dict[str, Any] = {"messages": messages, "max_tokens": max_tokens, "temperature": temperature}
    if logprobs:
        body["logprobs"] = True
        body["top_logprobs"] = top_logprobs or 5
    return body


def scoring_reply(completion: ChatCompletion) -> Reply:
    """What a scorer reads from a validated completion: the first choice's text and top log-probabilities."""
    choice = completion.first
    if choice is None:
        return Reply(text="")
    return Reply(text=choice.answer_text or "", top_logprobs=choice.top_logprobs() or None)


def reply_from_completion(data: dict[str, Any]) -> Reply:
    """The same from completion JSON (the evaluation cache keeps JSON); ``MalformedReply`` if it is not one."""
    return scoring_reply(parse_completion(data))


class UpstreamAsk:
    def __init__(self, upstream: UpstreamClient, metrics: GatewayMetrics, model: str, purpose: str) -> None:
        self._upstream = upstream
        self._metrics = metrics
        self._model = model
        self._purpose = purpose

    async def __call__(self, messages: list[dict[str, Any]], *, max_tokens: int = 16, temperature: float = 0.0,
                       logprobs: bool = False, top_logprobs: int | None = None) -> Reply:
        body = ask_body(messages, max_tokens=max_tokens, temperature=temperature, logprobs=logprobs,
                        top_logprobs=top_logprobs)
        self._metrics.upstream_calls.labels(model=self._model, purpose=self._purpose).inc()
        try:
            completion = await self._upstream.complete(self._model, body, priority=Priority.SCORING)
        except GatewayError as exc:  # scoring knows no HTTP errors, only that the upstream failed, and how
            unreadable = exc.code == MALFORMED_REPLY
            raise (UnreadableReply if unreadable else UpstreamFailure)(str(exc)) from exc
        return scoring_reply(completion.reply)
