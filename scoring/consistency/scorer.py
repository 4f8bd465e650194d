"""Trust_BC: does the model pick its own answer again among distractors? (TrustScore, §2.1)

For one job: build the distractor pool once (off the event loop: it parses and
queries), then run multiple-choice checks against the deployment that answered,
through the ``Ask`` the pipeline binds. Each check gets fresh distractors and a
new position for the original, all drawn from generators seeded by (``seed``,
question, answer) (``check_rngs``): the same answer gets the same checks in the
same order wherever it is scored. Checks are sent in waves no larger than
``concurrency`` and never larger than the number the stop rule is sure to need,
so parallelism never costs an extra upstream call.

The result's value is the binary Trust_BC (``mode: binary``) or the fraction
of consistent checks (``graded``, ``adaptive``); the details carry both, the
log-probability score when the upstream returned log-probabilities, and every
check's options, letters and raw reply.

With ``procedure: debiased`` the original visits every letter position equally
often, every planned check is run (the stop rule needs a whole round to
estimate the letter prior), and the value is the agreement beyond the model's
letter prior (``debias.py``); the details then carry ``debiased``, ``kappa``
and the estimated ``letter_prior`` beside the paper's figures.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..cpu_pool import CpuWork
from ..failures import describe
from ..settings import ConsistencySettings
from ..types import (
    Ask,
    BCCheck,
    BCDetails,
    ChecksClaims,
    Claim,
    ComponentResult,
    Failure,
    Reply,
    Scorer,
    ScoringJob,
    SplitsClaims,
    TellsEarly,
)
from .cpu_part import draw_distractors
from .debias import agreement_beyond_prior, balanced_positions, letter_distribution
from .distractors import DistractorDeck, DistractorPool
from .mcq import MultipleChoice, build_choice, letter_probabilities, parse_choice, render_prompt
from .stopping import StopRule, checks_before_possible_stop, decide_stop, graded_label, settled_label

__all__ = ["ConsistencyScorer", "check_rngs"]

DISTRACTORS_PER_CHECK = 3
TOP_LOGPROBS = 5
REPLY_CHARS_KEPT = 300


def check_rngs(seed: int, question: str, answer: str) -> tuple[random.Random, random.Random]:
    """The random generators of one answer's checks: one for its distractor pool, one for the rest.

    Both are seeded from a SHA-256 of (seed, question, answer), never from a job id or Python's
    ``hash()`` (salted per process), so the gateway, a worker and ``trustgate eval`` build the same
    checks for the same answer. The pool has its own generator so that the checks' draws (the deck,
    the original's letter) do not depend on how many draws building the pool happened to take.
    """
    digest = hashlib.sha256(json.dumps([seed, question, answer]).encode()).hexdigest()
    return random.Random(f"{digest}:distractors"), random.Random(f"{digest}:checks")


@dataclass(frozen=True)
class Check:
    choice: MultipleChoice
    reply: Reply

    @cached_property
    def chosen(self) -> str | None:
        return parse_choice(self.reply.text, self.choice)

    @property
    def consistent(self) -> bool:
        return self.chosen == self.choice.original

    @cached_property
    def letter_probabilities(self) -> dict[str, float] | None:
        return letter_probabilities(self.reply.top_logprobs, self.choice.letters)

    @property
    def original_probability(self) -> float | None:
        probabilities = self.letter_probabilities
        return None if probabilities is None else probabilities[self.choice.original]

    @property
    def distribution(self) -> dict[str, float]:
        return letter_distribution(self.choice.letters, self.chosen, self.letter_probabilities)

    def details(self) -> BCCheck:
        return BCCheck(
            options=list(self.choice.options),
            original=self.choice.original,
            chosen=self.chosen,
            consistent=self.consistent,
            original_probability=self.original_probability,
            letter_probabilities=self.letter_probabilities,
            reply=self.reply.text[:REPLY_CHARS_KEPT],
        )


class ConsistencyScorer(Scorer, TellsEarly, ChecksClaims):
    """The ``bc`` component. Holds only read-only collaborators; safe to share across jobs.

    With a ``claim_splitter`` it checks a long answer claim by claim: each claim's statement is the answer
    of its own checks, its distractors substituted inside it, with at most ``checks_per_claim`` checks under
    the paper's procedure (the debiased one needs a whole round of letters, four checks, per claim).
    """

    name = "bc"

    def __init__(
        self,
        settings: ConsistencySettings,
        cpu: CpuWork,
        claim_splitter: SplitsClaims | None = None,
        checks_per_claim: int = 1,
    ) -> None:
        self._settings = settings
        self._cpu = cpu  # generates the distractors, in a worker process or a thread
        self.claim_splitter = claim_splitter
        self._checks_per_claim = checks_per_claim
        self._rule = StopRule(
            settings.mode,
            settings.max_checks,
            settings.adaptive_low,
            settings.adaptive_high,
            settings.adaptive_credibility,
        )

    async def _ask(self, ask: Ask, choice: MultipleChoice) -> Check:
        messages = [{"role": "user", "content": render_prompt(choice, self._settings.prompt_examples)}]
        want = self._settings.logprobs
        reply = await ask(
            messages,
            max_tokens=self._settings.answer_max_tokens,
            temperature=0.0,
            logprobs=want,
            top_logprobs=TOP_LOGPROBS if want else None,
        )
        return Check(choice, reply)

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        return await self.score_telling(job, ask, lambda: None)

    @cached_property
    def _per_claim(self) -> ConsistencyScorer:
        """The scorer of one claim: this one's settings, under the paper's procedure, capped at checks_per_claim."""
        capped = min(self._settings.max_checks, self._checks_per_claim)
        return ConsistencyScorer(
            self._settings.model_copy(update={"max_checks": capped, "procedure": "paper"}), self._cpu
        )

    async def score_claims(self, job: ScoringJob, claims: Sequence[Claim], ask: Ask) -> list[ComponentResult]:
        """Each claim's Trust_BC, all at once: the claim's statement checked as the answer."""
        scorer = self._per_claim
        return list(
            await asyncio.gather(*(scorer.score(job.model_copy(update={"answer": c.statement}), ask) for c in claims))
        )

    async def score_telling(
        self, job: ScoringJob, ask: Ask, not_clearly_consistent: Callable[[], None]
    ) -> ComponentResult:
        """Trust_BC, calling ``not_clearly_consistent`` once, as soon as a check chose another option or before
        asking a check past the first 3 (``TellsEarly``: ``sc`` then starts without waiting for the rest)."""
        started = time.perf_counter()
        pool_rng, rng = check_rngs(self._settings.seed, job.question, job.answer)
        wanted = DISTRACTORS_PER_CHECK * self._settings.max_checks
        pool = await draw_distractors(self._cpu, job.question, job.answer, wanted, pool_rng)
        if not pool.distractors:
            return ComponentResult(
                component=self.name,
                details=BCDetails(**self._pool_details(pool, None)),
                label="unscored",
                duration_s=time.perf_counter() - started,
                failures=list(pool.failures),
            )
        deck = DistractorDeck(pool.distractors, rng)
        positions = self._positions(len(pool.distractors), rng)
        checks: list[Check] = []
        calls, error, failures = 0, None, list(pool.failures)
        told = False
        while (reason := self._stop(checks, positions)) is None:
            wave = min(self._settings.concurrency, self._safe_wave(checks, positions))
            if not told and (len(checks) + wave > BCDetails.CLEAR_CHECKS or not all(c.consistent for c in checks)):
                told = True  # it goes on past its first 3 checks, or one already chose another option
                not_clearly_consistent()
            choices = [
                build_choice(
                    job.question,
                    job.answer,
                    [d.text for d in deck.draw(DISTRACTORS_PER_CHECK)],
                    rng,
                    None if positions is None else positions[len(checks) + i],
                )
                for i in range(wave)
            ]
            calls += wave
            outcomes = await asyncio.gather(*(self._ask(ask, c) for c in choices), return_exceptions=True)
            checks += [o for o in outcomes if isinstance(o, Check)]
            if failed := [o for o in outcomes if isinstance(o, BaseException)]:
                # an upstream failure ends scoring; what was asked is still reported
                error = f"upstream: {describe(failed[0])}"[:500]
                failures.append(Failure.of(failed[0]))
                break
        result = self._result(pool, deck, checks, calls, reason, error, time.perf_counter() - started)
        result.failures = failures
        return result

    def _positions(self, distractors: int, rng: random.Random) -> list[int] | None:
        """The debiased procedure's planned positions of the original, one per check; None for the paper's."""
        if self._settings.procedure != "debiased":
            return None
        per_round = min(distractors, DISTRACTORS_PER_CHECK) + 1
        rounds = max(1, self._settings.max_checks // per_round)
        return balanced_positions(per_round, rounds * per_round, rng)

    def _stop(self, checks: list[Check], positions: list[int] | None) -> str | None:
        if positions is not None:
            return "planned_checks" if len(checks) >= len(positions) else None
        return decide_stop(self._rule, sum(c.consistent for c in checks), len(checks))

    def _safe_wave(self, checks: list[Check], positions: list[int] | None) -> int:
        if positions is not None:
            return len(positions) - len(checks)
        return checks_before_possible_stop(self._rule, sum(c.consistent for c in checks), len(checks))

    def _pool_details(self, pool: DistractorPool, deck: DistractorDeck | None) -> dict[str, Any]:
        return {
            "distractor_sources": pool.sources(),
            "distractors_available": len(pool.distractors),
            "fewer_than_3_distractors": len(pool.distractors) < DISTRACTORS_PER_CHECK,
            "distractors_reused": bool(deck and deck.reused),
            "substitution_level": pool.level,
            "generation_s": round(pool.duration_s, 4),
            "source_errors": pool.errors,
            "reason": None if pool.distractors else "no_distractors",
        }

    def _result(
        self,
        pool: DistractorPool,
        deck: DistractorDeck,
        checks: list[Check],
        calls: int,
        reason: str | None,
        error: str | None,
        duration_s: float,
    ) -> ComponentResult:
        done, consistent = len(checks), sum(c.consistent for c in checks)
        binary = 1.0 if done and consistent == done else 0.0
        graded = consistent / done if done else None
        probabilities = [p for p in (c.original_probability for c in checks) if p is not None]
        source_of = {d.text: d.source for d in pool.distractors}
        shown = Counter(source_of[o] for c in checks for o in c.choice.options if o in source_of)
        details = BCDetails(
            mode=self._settings.mode,
            binary=binary if done else None,
            graded=graded,
            logprob=sum(probabilities) / len(probabilities) if probabilities else None,
            checks_run=done,
            stop_reason=reason if error is None else "error",
            distractor_sources_shown=dict(shown),
            procedure=self._settings.procedure,
            checks=[c.details() for c in checks],
            **self._pool_details(pool, deck),
        )
        agreement = agreement_beyond_prior([c.distribution for c in checks], [c.choice.original for c in checks])
        if agreement is not None:
            details.debiased, details.kappa, details.letter_prior = agreement.value, agreement.kappa, agreement.prior
            details.observed_agreement, details.expected_agreement = agreement.observed, agreement.expected
            details.letter_probabilities_used = len(probabilities) == done
        if error is not None or not done:
            return ComponentResult(
                component=self.name, details=details, upstream_calls=calls, duration_s=duration_s, error=error
            )
        value: float | None
        if agreement is not None and self._settings.procedure == "debiased":
            value = agreement.value
            label = graded_label(value, self._settings.adaptive_low, self._settings.adaptive_high)
        elif self._settings.mode == "binary":
            value, label = binary, "consistent" if binary else "inconsistent"
        else:
            value, label = graded, settled_label(self._rule, consistent, done)
        return ComponentResult(
            component=self.name, value=value, label=label, details=details, upstream_calls=calls, duration_s=duration_s
        )
