"""Scoring's budget per model group: upstream calls and tokens per minute, set by the operator.

What the scorers spend re-asking a model is the operator's bill too, so
``trustgate.scoring.budget`` caps it per model group, on the rate limiter's
counters (``proxy.base.limits``: fixed one-minute windows, in Redis when the gateway
has one, so gateways and ``trustgate worker`` processes share one budget).
Only scoring's calls are counted: a user's call to the same model never is,
and is never refused for it.

- A job whose model group (the one that answered the user) has spent its
  calls or tokens for this minute is shed before it runs: its record is
  ``shed`` with ``shed_reason`` ``call_budget`` / ``token_budget`` and an
  error that says so, counted in ``trustgate_scoring_shed_jobs_total{reason}``.
- A job that started within the budget and runs past it mid-way has its
  further calls refused: each ``Ask`` beyond the budget raises ``BudgetSpent``
  without calling the upstream (counted in
  ``trustgate_scoring_calls_shed_total{reason}``), so the component that made
  it fails with reason ``budget`` (``trustgate_scorer_errors_total``) — or
  absorbs it, as a RAG judge absorbs a failed verdict — and the record keeps
  what the other components found.

- A job whose model group's scoring spent, over the past hour, its share of
  what the group's answers cost (``max_spend_share``), or its dollars
  (``max_spend_usd_per_hour``), is shed before it runs: ``shed_reason``
  ``spend_share`` / ``spend_per_hour``. Spend is the spend ledger's
  (``exporters.spend``): answers as the gateways served them, scoring as the
  records were published, a second behind at most on another process. A
  group whose answers have no known price spends nothing known, and is never
  shed for its share.

A call counts when it is made (its retries are bounded by the retry budget,
``proxy.upstream.retries``, not counted again); its tokens count when its answer comes
back with ``usage``, against the group that answered. The token budget is
checked before a call, so the call that crosses it still completes. Counters
that cannot be read (their Redis is down) fail the job's scoring like any other
error of it; the user's answer does not wait on them.
"""

from __future__ import annotations

import time
from typing import Literal

from exporters import SpendLedger, model_subject
from scoring import BudgetLimits, BudgetSettings, BudgetSpent, Process, ScoringJob, TrustRecord

from ..base.limits import Limiter
from ..upstream.retries import OnScoringShed

__all__ = ["BudgetReason", "ScoringBudget"]

BudgetReason = Literal["call_budget", "token_budget", "spend_share", "spend_per_hour"]
SPEND_WINDOW_S = 3600.0  # the spend limits' rolling window: the past hour

# The limiter's counter kinds: distinct from the per-key and per-deployment ones.
_CALLS, _TOKENS = "scoring_calls", "scoring_tokens"


class ScoringBudget:
    def __init__(
        self,
        settings: BudgetSettings,
        limiter: Limiter,
        spend: SpendLedger,
        *,
        on_call_refused: OnScoringShed = lambda group, reason: None,
    ) -> None:
        self._settings = settings
        self._limiter = limiter
        self._spend = spend
        self._on_call_refused = on_call_refused

    def limits_for(self, model: str) -> BudgetLimits:
        return self._settings.for_model(model)

    async def spent(self, model: str) -> BudgetReason | None:
        """Which of ``model``'s budgets this minute has used up already, if one has (nothing is counted)."""
        limits = self.limits_for(model)
        if (
            limits.calls_per_minute is not None
            and await self._limiter.used_up(_CALLS, model, limits.calls_per_minute) is not None
        ):
            return "call_budget"
        if (
            limits.tokens_per_minute is not None
            and await self._limiter.used_up(_TOKENS, model, limits.tokens_per_minute) is not None
        ):
            return "token_budget"
        return await self._spent_dollars(model, limits)

    async def _spent_dollars(self, model: str, limits: BudgetLimits) -> BudgetReason | None:
        """Which of ``model``'s spend limits scoring has reached over the past hour, if one."""
        if limits.max_spend_share is None and limits.max_spend_usd_per_hour is None:
            return None
        spent = await self._spend.spent(model_subject(model), self._spend.now() - SPEND_WINDOW_S)
        if limits.max_spend_usd_per_hour is not None and spent.scoring_usd >= limits.max_spend_usd_per_hour:
            return "spend_per_hour"
        if (
            limits.max_spend_share is not None
            and spent.scoring_usd > 0
            and spent.scoring_usd >= limits.max_spend_share * spent.answer_usd
        ):
            return "spend_share"
        return None

    async def take_call(self, model: str) -> None:
        """Count one scoring call to ``model``; ``BudgetSpent`` (the call is not to be made) beyond its budget."""
        limits = self.limits_for(model)
        reason: BudgetReason | None = None
        if (
            limits.tokens_per_minute is not None
            and await self._limiter.used_up(_TOKENS, model, limits.tokens_per_minute) is not None
        ):
            reason = "token_budget"
        elif (
            limits.calls_per_minute is not None
            and await self._limiter.count_one(_CALLS, model, limits.calls_per_minute) is not None
        ):
            reason = "call_budget"
        if reason is not None:
            self._on_call_refused(model, reason)
            raise BudgetSpent(f"scoring call not made: {_describe(model, reason, limits)}")

    async def add_tokens(self, model: str, tokens: int) -> None:
        """The tokens a scoring call to ``model`` used, when its group has a token budget."""
        if self.limits_for(model).tokens_per_minute is not None:
            await self._limiter.add(_TOKENS, model, tokens)

    def gate(self, process: Process) -> Process:
        """``process``, shedding a job whose model group's budget is spent instead of running it."""

        async def within_budget(job: ScoringJob) -> TrustRecord:
            reason = await self.spent(job.model)
            if reason is None:
                return await process(job)
            return TrustRecord.for_job(
                job,
                "shed",
                shed_reason=reason,
                finished_at=time.time(),
                error=f"not scored: {_describe(job.model, reason, self.limits_for(job.model))}",
            )

        return within_budget


def _describe(model: str, reason: BudgetReason, limits: BudgetLimits) -> str:
    if reason == "call_budget":
        what = f"{limits.calls_per_minute} calls per minute"
    elif reason == "token_budget":
        what = f"{limits.tokens_per_minute} tokens per minute"
    elif reason == "spend_share":
        what = f"{limits.max_spend_share:g} of what its answers cost over the past hour"
    else:
        what = f"{limits.max_spend_usd_per_hour:g} USD over the past hour"
    return f"the scoring budget of model `{model}` ({what}) is spent"
