"""What each answer cost, and each key held to its dollar budget.

An answer is priced by the deployment that gave it (``PriceList``: two
multiplications) and charged to the spend ledger (``exporters.spend``: a
dictionary update, flushed off the request path) under the key that asked and
the model group that answered, and to ``trustgate_spend_usd_total``. A key
whose ``Caller`` carries a budget (``KeyBudget``) is refused, before its
request costs anything, once its answers in this budget window have cost
``max_budget``: the ledger's figure, which counts what every replica sharing
its store spent, a second behind at most, and what this one spent at once.

A key made at run time is held to its budget the same way: whatever builds
its ``Caller`` gives it a ``KeyBudget``, and its spend is the ledger's
``key:<name>`` subject (``SpendLedger.spent``), which ``/key/info`` can read as
well.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from exporters import GatewayMetrics, SpendLedger, Spent, key_subject, model_subject
from scoring import CallCost, StoreUnavailable

from ..base.errors import BudgetExceeded, ServiceUnavailable
from ..upstream.prices import PriceList
from ..upstream.replies import TokenUsage
from .auth import Caller

__all__ = ["RESPONSE_COST_HEADER", "Spending", "asking_for_usage", "response_cost_headers"]

RESPONSE_COST_HEADER = "x-trustgate-response-cost"  # as LiteLLM's x-litellm-response-cost: US dollars


class Spending:
    def __init__(self, prices: PriceList, ledger: SpendLedger, metrics: GatewayMetrics) -> None:
        self.prices = prices
        self.ledger = ledger
        self._metrics = metrics

    async def admit(self, caller: Caller) -> None:
        """Refuse a key whose answers in this budget window have cost its budget (BudgetExceeded: a 400)."""
        budget = caller.budget
        if budget is None:
            return
        now = self.ledger.now()
        try:
            spent = await self.ledger.spent(key_subject(caller.name), budget.window_start(now))
        except StoreUnavailable:
            raise ServiceUnavailable(
                "The spend ledger is unavailable, so the key's budget cannot be checked; retry later",
                code="spend_ledger_unavailable",
            ) from None
        if spent.answer_usd < budget.max_usd:
            return
        resets = (
            f"; it starts again at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(budget.period.window(now)[1]))}"
            if budget.period is not None
            else ""
        )
        raise BudgetExceeded(
            f"Budget has been exceeded! Key {caller.name}: current cost {spent.answer_usd:.6g} USD, "
            f"max budget {budget.max_usd:g} USD{resets}"
        )

    async def by_model(self, groups: Iterable[str], since: float) -> dict[str, Spent]:
        """What each model group's answers and their scoring cost since ``since``, every key's (for the operator)."""
        return {group: await self.ledger.read(model_subject(group), since) for group in groups}

    def price(self, group: str, deployment: int, usage: TokenUsage | None) -> CallCost:
        """What an answer of ``group``'s ``deployment``-th entry cost (``usd`` None: no price, or no usage)."""
        return self.prices.cost(group, deployment, usage)

    def charge(self, key: str, group: str, cost: CallCost) -> None:
        """An answer's cost on ``key``'s and ``group``'s spend, and in the metrics."""
        self._metrics.observe_answer_cost(model=group, key=key, cost=cost)
        if cost.usd:
            self.ledger.charge(key=key, model=group, purpose="answer", usd=cost.usd)

    def answered(self, key: str, group: str, deployment: int, usage: TokenUsage | None) -> CallCost:
        """What an answer cost (``price``), charged to ``key`` (``charge``)."""
        cost = self.price(group, deployment, usage)
        self.charge(key, group, cost)
        return cost


def response_cost_headers(cost: CallCost) -> dict[str, str]:
    """The answer's cost header; none when its cost is unknown (no price, or no usage reported)."""
    return {RESPONSE_COST_HEADER: format(cost.usd, ".12g")} if cost.usd is not None else {}


def asking_for_usage(body: dict[str, Any], ask: bool) -> tuple[dict[str, Any], bool]:
    """A stream asked to report its usage (``ask``: its model group is priced, and its stream may be asked:
    ``UpstreamClient.streams_usage_when_asked``); whether the gateway asked on its own.

    A chat or legacy completions stream reports its usage only when asked
    (``stream_options.include_usage``), and its answer can be priced only from
    it; the usage chunk the client did not ask for is then taken out of its
    stream (``StreamTap.hiding_usage``).
    """
    if not ask or not body.get("stream"):
        return body, False
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        return body, False
    if (options or {}).get("include_usage"):
        return body, False
    return {**body, "stream_options": {**(options or {}), "include_usage": True}}, True
