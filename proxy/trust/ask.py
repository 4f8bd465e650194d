"""The scorers' door to the upstream: an ``Ask`` bound to one model group and a purpose.

Scoring calls go through the same UpstreamClient as user traffic (same
timeouts and fallbacks; retries within scoring's budget, shed while the group
is rate limited) and are counted by purpose, so dashboards can tell user calls
from scoring calls; their tokens are counted too, and held to the group's
scoring budget (``proxy.trust.scoring_budget``) when the operator set one.
Each reply carries what its call cost (``Reply.cost``), priced by the
deployment that answered, which the pipeline sums into the record's cost.
"""

from __future__ import annotations

from typing import Any

from exporters import GatewayMetrics
from scoring import Lane, Reply, UnreadableReply, UpstreamFailure

from ..base.errors import GatewayError
from ..upstream.client import UpstreamClient
from ..upstream.completion import Completion
from ..upstream.errors import MALFORMED_REPLY
from ..upstream.prices import PriceList
from ..upstream.replies import ChatCompletion, parse_completion
from ..upstream.slots import Priority
from .scoring_budget import ScoringBudget

__all__ = ["UpstreamAsk", "ask_body", "reply_from_completion", "scoring_priority", "scoring_reply"]


def scoring_priority(lane: Lane) -> Priority:
    """A sync job's calls wait only behind users' calls for a model slot; an async job's, behind both."""
    return Priority.SYNC_SCORING if lane == "sync" else Priority.SCORING


def ask_body(
    messages: list[dict[str, Any]],
    *,
    max_tokens: int,
    temperature: float | None,
    logprobs: bool,
    top_logprobs: int | None,
    seed: int | None = None,
) -> dict[str, Any]:
    """The chat request an ``Ask`` sends; every Ask implementation builds it here.

    No ``temperature`` when it is None (the upstream's default), a ``seed`` only when given.
    """
    body: dict[str, Any] = {"messages": messages, "max_tokens": max_tokens}
    if temperature is not None:
        body["temperature"] = temperature
    if seed is not None:
        body["seed"] = seed
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
    """An ``Ask`` of one scorer (``purpose``) at one model group, within the group's scoring budget if given
    (and the share of it of the key named ``owner``), for a job of ``lane``."""

    def __init__(
        self,
        upstream: UpstreamClient,
        metrics: GatewayMetrics,
        model: str,
        purpose: str,
        *,
        prices: PriceList,
        budget: ScoringBudget | None = None,
        lane: Lane = "async",
        owner: str | None = None,
    ) -> None:
        self._upstream = upstream
        self._prices = prices
        self._priority = scoring_priority(lane)
        self._owner = owner  # the name of the key whose answer is scored: its share of the budget pays
        self._metrics = metrics
        self._model = model
        self._purpose = purpose
        self._budget = budget

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
        if self._budget is not None:
            await self._budget.take_call(self._model, self._owner)  # BudgetSpent: not made, the scorer told why
        self._metrics.upstream_calls.labels(model=self._model, purpose=self._purpose).inc()
        try:
            completion = await self._upstream.complete(self._model, body, priority=self._priority)
        except GatewayError as exc:  # scoring knows no HTTP errors, only that the upstream failed, and how
            unreadable = exc.code == MALFORMED_REPLY
            raise (UnreadableReply if unreadable else UpstreamFailure)(str(exc)) from exc
        await self._meter(completion)
        reply = scoring_reply(completion.reply)
        cost = self._prices.cost(completion.model_group, completion.deployment, completion.reply.usage)
        return reply.model_copy(update={"cost": cost})

    async def _meter(self, completion: Completion) -> None:
        """The call's tokens, on the bill of the group that answered (a fallback's, if one did)."""
        usage = completion.reply.usage
        if usage is None:
            return
        group = completion.model_group
        self._metrics.observe_scoring_usage(
            model=group,
            component=self._purpose,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
        )
        if self._budget is not None:
            await self._budget.add_tokens(group, usage.prompt_tokens + usage.completion_tokens, self._owner)
