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

The calls and tokens are shared fairly between keys: the jobs of one key (the
name of the key whose answer they score) may spend ``budget.key_share`` of a
group's calls and tokens per minute, counted apart; past that share its jobs
are shed (``key_call_budget`` / ``key_token_budget``) and its running jobs'
further calls refused, while the other keys spend the rest. One key spending
its share sheds only its own jobs. The spend limits are the group's as a
whole: the ledger keeps a group's spend and a key's, not a key's on a group.

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

BudgetReason = Literal[
    "call_budget", "token_budget", "key_call_budget", "key_token_budget", "spend_share", "spend_per_hour"
]
SPEND_WINDOW_S = 3600.0  # the spend limits' rolling window: the past hour

# The limiter's counter kinds: distinct from the per-key and per-deployment ones; a key's share of a group's
# budget counts under kinds of its own, by "<group>:<key>".
_CALLS, _TOKENS = "scoring_calls", "scoring_tokens"
_KEY_CALLS, _KEY_TOKENS = "scoring_key_calls", "scoring_key_tokens"


def _share(limit: int | None, share: float) -> int | None:
    return None if limit is None else max(1, int(limit * share))


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

    def _key_limits(self, model: str) -> BudgetLimits:
        """What one key's jobs may spend of ``model``'s budget: its share of each limit (none apart from the
        group's when the share is the whole)."""
        limits, share = self.limits_for(model), self._settings.key_share
        if share >= 1.0:
            return BudgetLimits()
        return BudgetLimits(
            calls_per_minute=_share(limits.calls_per_minute, share),
            tokens_per_minute=_share(limits.tokens_per_minute, share),
        )

    async def spent(self, model: str, key: str | None = None) -> BudgetReason | None:
        """Which of ``model``'s budgets (or of the key named ``key``'s share of them) this minute has used up
        already, if one has (nothing is counted)."""
        limits, mine = self.limits_for(model), self._key_limits(model)
        checks: list[tuple[BudgetReason, str, str, int | None]] = [
            ("call_budget", _CALLS, model, limits.calls_per_minute),
            ("token_budget", _TOKENS, model, limits.tokens_per_minute),
            ("key_call_budget", _KEY_CALLS, _per_key(model, key), mine.calls_per_minute),
            ("key_token_budget", _KEY_TOKENS, _per_key(model, key), mine.tokens_per_minute),
        ]
        for reason, kind, name, limit in checks:
            if limit is not None and await self._limiter.used_up(kind, name, limit) is not None:
                return reason
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

    async def take_call(self, model: str, key: str | None = None) -> None:
        """Count one scoring call to ``model`` for the key named ``key``; ``BudgetSpent`` (the call is not to be
        made) beyond the group's budget or the key's share of it.

        The key's call is counted before the group's: a call its share refuses never counts on the group, so a
        key past its share cannot spend the other keys' part with calls it was refused."""
        reason = await self.spent(model, key) or await self._count_call(model, key)
        if reason is not None:
            self._on_call_refused(model, reason)
            raise BudgetSpent(f"scoring call not made: {self._describe(model, reason)}")

    async def _count_call(self, model: str, key: str | None) -> BudgetReason | None:
        """Count the call on the key's share, then on the group's budget; the first it goes past, if one."""
        limits, mine = self.limits_for(model), self._key_limits(model)
        counted: list[tuple[BudgetReason, str, str, int | None]] = [
            ("key_call_budget", _KEY_CALLS, _per_key(model, key), mine.calls_per_minute),
            ("call_budget", _CALLS, model, limits.calls_per_minute),
        ]
        for reason, kind, name, limit in counted:
            if limit is not None and await self._limiter.count_one(kind, name, limit) is not None:
                return reason
        return None

    async def add_tokens(self, model: str, tokens: int, key: str | None = None) -> None:
        """The tokens a scoring call to ``model`` used for the key named ``key``, when its group has a token budget."""
        if self.limits_for(model).tokens_per_minute is not None:
            await self._limiter.add(_TOKENS, model, tokens)
            await self._limiter.add(_KEY_TOKENS, _per_key(model, key), tokens)

    def gate(self, process: Process) -> Process:
        """``process``, shedding a job whose model group's budget (or its key's share) is spent instead of running
        it."""

        async def within_budget(job: ScoringJob) -> TrustRecord:
            reason = await self.spent(job.model, job.owner)
            if reason is None:
                return await process(job)
            return TrustRecord.for_job(
                job,
                "shed",
                shed_reason=reason,
                finished_at=time.time(),
                error=f"not scored: {self._describe(job.model, reason)}",
            )

        return within_budget

    def _describe(self, model: str, reason: BudgetReason) -> str:
        limits = self._key_limits(model) if reason.startswith("key_") else self.limits_for(model)
        if reason.endswith("call_budget"):
            what = f"{limits.calls_per_minute} calls per minute"
        elif reason.endswith("token_budget"):
            what = f"{limits.tokens_per_minute} tokens per minute"
        elif reason == "spend_share":
            what = f"{limits.max_spend_share:g} of what its answers cost over the past hour"
        else:
            what = f"{limits.max_spend_usd_per_hour:g} USD over the past hour"
        if reason.startswith("key_"):
            return f"this key's share of the scoring budget of model `{model}` ({what}) is spent"
        return f"the scoring budget of model `{model}` ({what}) is spent"


def _per_key(model: str, key: str | None) -> str:
    """A key's counter name for a group: neither name can end the other's (a unit separator between them)."""
    return f"{model}\x1f{key or ''}"
