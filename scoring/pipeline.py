"""Run the configured scorers on one job and fold their results into a TrustRecord.

A scorer that raises or overruns its timeout yields a component with ``error``
set; the record still completes with whatever the other scorers found. The
record is "failed" only when no component produced a value. Every failure met
(a scorer's exception, or one a scorer absorbed) is logged with its
traceback, rate-limited, and stays on the component for the error counter.

A long answer is checked claim by claim (``scoring.claims``): the claim
checkers (``ChecksClaims``: Trust_BC, Trust_FC, ``ev``) share a splitter, which the
pipeline asks first; where it finds several claims, each checker scores every
checked claim, each claim gets its own Trust_OV from its checks and the
answer's own signals (``lp``, ``sc``), and the answer's Trust_OV is their soft
minimum (``claims/aggregate.py``). An answer of one claim is scored whole, as
if there were no claims at all. A split that fails is logged and counted under
"claims", and the answer is then scored whole.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from .calibration import component_names, fitted_components
from .claims.aggregate import answer_component, claim_inputs, overall_of_claims
from .claims.selection import whole_answer
from .cost import CostTally
from .failures import FailureLog, describe
from .grounds import basis_of, informative_of, missing_of, trust_label
from .learning.apply import learned_overall
from .policy import TOO_LONG, own_fit_allowed, within_limits
from .settings import ScoringSettings
from .types import (
    Ask,
    ChecksClaims,
    Claim,
    ClaimResult,
    ComponentResult,
    Failure,
    OVDetails,
    RunsAfter,
    Scorer,
    ScoringJob,
    TellsEarly,
    TrustRecord,
    TrustStatus,
)

ClaimChecks = dict[str, list[ComponentResult]]  # a claim checker's name -> its result for each checked claim

if TYPE_CHECKING:
    from .calibration import Calibrator
    from .learning.report import CalibrationReport
    from .learning.store import FitStore

__all__ = ["COMBINED", "AskFactory", "Combiner", "ScoringPipeline"]

# (model group, purpose, the job) -> Ask bound to that deployment, for that job: a sync job's calls go first
# (scoring.lanes), and its key's share of the scoring budget pays for them
AskFactory = Callable[[str, str, ScoringJob], Ask]
Combiner = Callable[[Mapping[str, ComponentResult]], ComponentResult]  # a record's components -> Trust_OV
COMBINED = frozenset({"bc", "fc", "lp", "sc", "ev"})  # the components Trust_OV is made of

log = logging.getLogger("trustgate.scoring")


def _checked(claims: list[Claim]) -> list[int]:
    """The indexes of the claims to check."""
    return [index for index, claim in enumerate(claims) if claim.selected]


def _by_claim(claims: list[Claim]) -> bool:
    """Whether the answer is checked claim by claim: it has several claims to check (else it is checked whole)."""
    return len(_checked(claims)) > 1


def _per_claim(checks: ClaimChecks) -> list[dict[str, ComponentResult]]:
    """Each checked claim's own components, by name."""
    count = min((len(results) for results in checks.values()), default=0)
    return [{name: results[k] for name, results in checks.items()} for k in range(count)]


def _count_with_claim_checkers(results: list[ComponentResult], scorers: list[Scorer], failures: list[Failure]) -> None:
    """A failed split is counted with the first claim checker's component: the splitter is theirs."""
    checkers = {s.name for s in scorers if isinstance(s, ChecksClaims)}
    for result in results:
        if result.component in checkers:
            result.failures.extend(failures)
            return


class ScoringPipeline:
    def __init__(
        self,
        scorers: Sequence[Scorer],
        ask_for: AskFactory,
        settings: ScoringSettings,
        combine: Combiner | None = None,
        calibrator: Calibrator | None = None,
        learned: FitStore | None = None,
    ) -> None:
        self._scorers = list(scorers)
        self._ask_for = ask_for
        self._settings = settings
        self._combine = combine
        self._calibrator = calibrator
        self._learned = learned  # each model's learned combination, when the gateway learns from feedback
        self._calibrated_components = fitted_components(calibrator) if calibrator is not None else None
        self._failure_log = FailureLog(log)

    @property
    def has_scorers(self) -> bool:
        return bool(self._scorers)

    def _target_model(self, scorer: Scorer, job: ScoringJob) -> str:
        """The scorers re-ask the deployment that answered, except a judge configured elsewhere."""
        return scorer.judge_model or job.model

    def _ask(self, scorer: Scorer, job: ScoringJob, tally: CostTally) -> Ask:
        """The scorer's ``Ask`` for this job, its answered calls counted in the job's ``tally``."""
        return tally.counted(scorer.name, self._ask_for(self._target_model(scorer, job), scorer.name, job))

    async def _run_one(
        self, scorer: Scorer, job: ScoringJob, tally: CostTally, tell: Callable[[], None] | None = None
    ) -> ComponentResult:
        """One scorer's result, never its exception; ``tell`` goes to a scorer that ``TellsEarly``."""
        started = time.perf_counter()
        ask = self._ask(scorer, job, tally)
        scoring = (
            scorer.score_telling(job, ask, tell)
            if tell is not None and isinstance(scorer, TellsEarly)
            else scorer.score(job, ask)
        )
        try:
            result = await asyncio.wait_for(scoring, self._settings.queue.scorer_timeout_s)
        except TimeoutError as exc:
            result = ComponentResult(
                component=scorer.name,
                error="timeout",
                failures=[Failure.of(exc)],
                duration_s=time.perf_counter() - started,
            )
        except Exception as exc:  # a scorer's failure is recorded, never propagated to the user
            result = ComponentResult(
                component=scorer.name,
                error=describe(exc)[:500],
                failures=[Failure.of(exc)],
                duration_s=time.perf_counter() - started,
            )
        for failure in result.failures:
            self._failure_log.report(f"scorer {scorer.name}", failure.reason, failure.error)
        return result

    async def _run_after(
        self,
        scorer: Scorer,
        spared: Callable[[ComponentResult], ComponentResult | None],
        job: ScoringJob,
        tally: CostTally,
        earlier: asyncio.Future[ComponentResult],
        told: asyncio.Future[None],
    ) -> ComponentResult:
        """``scorer`` once the component it reads is in (spared by it, ``RunsAfter.spared``, or run), or as soon
        as that one told it will not spare it (``TellsEarly``)."""
        await asyncio.wait((earlier, told), return_when=asyncio.FIRST_COMPLETED)
        instead = spared(earlier.result()) if earlier.done() else None
        return instead if instead is not None else await self._run_one(scorer, job, tally)

    async def _run_claims(
        self,
        scorer: Scorer,
        job: ScoringJob,
        tally: CostTally,
        claims: list[Claim],
        indexes: list[int],
        into: ClaimChecks,
    ) -> ComponentResult:
        """A claim checker on every checked claim (``into`` gets each claim's result), as the answer's component:
        the lowest claim's (``claims/aggregate.py``). A raise or timeout is every claim's error."""
        assert isinstance(scorer, ChecksClaims)
        started = time.perf_counter()
        ask = self._ask(scorer, job, tally)
        try:
            results = await asyncio.wait_for(
                scorer.score_claims(job, claims, ask), self._settings.queue.scorer_timeout_s
            )
        except Exception as exc:  # a scorer's failure is recorded, never propagated to the user
            error = "timeout" if isinstance(exc, TimeoutError) else describe(exc)[:500]
            duration = time.perf_counter() - started
            results = [ComponentResult(component=scorer.name, error=error, duration_s=duration) for _ in claims]
            results[0].failures = [Failure.of(exc)]
        into[scorer.name] = results
        result = answer_component(scorer.name, results, indexes)
        for failure in result.failures:
            self._failure_log.report(f"scorer {scorer.name}", failure.reason, failure.error)
        return result

    async def _run_all(
        self,
        job: ScoringJob,
        scorers: list[Scorer],
        tally: CostTally,
        claims: list[Claim] | None = None,
        into: ClaimChecks | None = None,
    ) -> list[ComponentResult]:
        """Every scorer at once, except one that reads another's result first (``RunsAfter``, when that one
        runs too): it starts once that result is in, or once that one tells it will not be spared. The
        results in the scorers' order. With ``claims`` (several, each checked), a claim checker checks each
        of them (``_run_claims``) and tells nothing early."""
        names = {s.name for s in scorers}
        waits = {s.name: s.after for s in scorers if isinstance(s, RunsAfter) and s.after in names}
        waits = {name: after for name, after in waits.items() if after is not None and after not in waits}
        loop = asyncio.get_running_loop()
        told = {after: loop.create_future() for after in waits.values()}

        def teller(name: str) -> Callable[[], None] | None:
            future = told.get(name)
            return None if future is None else lambda: None if future.done() else future.set_result(None)

        checked = _checked(claims or [])

        def run(scorer: Scorer) -> Awaitable[ComponentResult]:
            if claims and into is not None and isinstance(scorer, ChecksClaims):
                return self._run_claims(scorer, job, tally, [claims[i] for i in checked], checked, into)
            return self._run_one(scorer, job, tally, teller(scorer.name))

        started = {s.name: asyncio.ensure_future(run(s)) for s in scorers if s.name not in waits}
        runs: list[Awaitable[ComponentResult]] = []
        for scorer in scorers:
            if scorer.name in started:
                runs.append(started[scorer.name])
            elif isinstance(scorer, RunsAfter):
                after = waits[scorer.name]
                runs.append(self._run_after(scorer, scorer.spared, job, tally, started[after], told[after]))
        return list(await asyncio.gather(*runs))

    async def _claims(self, job: ScoringJob, scorers: list[Scorer]) -> tuple[list[Claim], list[Failure]]:
        """The answer's claims, from the splitter its claim checkers share; none where nothing checks claims
        (no claim checker runs, a RAG job) or the split failed (then its failure)."""
        splitter = next(
            (s.claim_splitter for s in scorers if isinstance(s, ChecksClaims) and s.claim_splitter is not None), None
        )
        if splitter is None:
            return [], []
        try:
            return await asyncio.wait_for(splitter.split(job), self._settings.queue.scorer_timeout_s), []
        except Exception as exc:  # the answer is then checked whole, as without claims
            failure = Failure.of(exc)
            self._failure_log.report("claims", failure.reason, exc)
            return [], [failure]

    def _claim_results(
        self,
        job: ScoringJob,
        claims: list[Claim],
        checks: ClaimChecks,
        scores: list[ComponentResult],
        score: float | None,
        informative: bool | None,
    ) -> list[ClaimResult]:
        """The record's claims: each with its own checks and score where the answer was checked by claim (those
        beyond max_claims listed unscored), else the answer whole as one claim with the answer's verdict."""
        if not claims:
            return []
        if not checks:
            whole = whole_answer(job.answer)
            label = trust_label(score, self._settings, informative=informative)
            return [ClaimResult(text=whole.text, start=whole.start, end=whole.end, score=score, label=label)]
        per_claim = _per_claim(checks)
        values: list[float | None] = [s.value for s in scores] if scores else [None] * len(per_claim)
        found = dict(zip(_checked(claims), zip(values, per_claim, strict=True), strict=True))
        results = []
        for index, claim in enumerate(claims):
            value, own = found.get(index, (None, {}))
            results.append(
                ClaimResult(
                    text=claim.text,
                    start=claim.start,
                    end=claim.end,
                    statement=claim.statement if claim.statement != claim.text else None,
                    checked=claim.selected,
                    score=value,
                    label=trust_label(value, self._settings, informative=informative),
                    components=own,
                )
            )
        return results

    def _applicable(self, job: ScoringJob) -> list[Scorer]:
        """Document scorers for a request that carried documents (when any is configured), else the others.

        A scorer of the answer's log-probabilities does not run on an answer
        that came without them: its component is absent, never a zero.
        """
        with_documents = [s for s in self._scorers if s.handles_documents]
        if job.documents and with_documents:
            return with_documents
        return [
            s for s in self._scorers if not s.handles_documents and (job.answer_logprobs or not s.needs_answer_logprobs)
        ]

    def _absent(self, job: ScoringJob) -> list[ComponentResult]:
        """The components of the answer's log-probabilities, for an answer that came without them and a gateway
        that knows why (``job.logprobs_absent``): no value, and the reason, so that "absent" says why."""
        if job.answer_logprobs or job.logprobs_absent is None or job.documents:
            return []
        return [
            ComponentResult(component=s.name, label="unscored", details={"reason": job.logprobs_absent})
            for s in self._scorers
            if s.needs_answer_logprobs and not s.handles_documents
        ]

    def _probability(self, components: dict[str, ComponentResult]) -> float | None:
        """The calibrated probability, from the component the calibration was fitted on (Trust_OV as a rule).

        A record without that component (a RAG request, a failed scorer) gets
        none rather than a probability fitted on a different score; so does a
        Trust_OV that came from other scorers than the calibration's (Trust_FC
        alone after Trust_BC failed, when it was fitted on both).
        """
        if self._calibrator is None:
            return None
        result = components.get(self._calibrator.score)
        if result is None or result.value is None:
            return None
        source = component_names(result.details.source) if isinstance(result.details, OVDetails) else None
        if source is not None and self._calibrated_components is not None and source != self._calibrated_components:
            return None
        return self._calibrator.probability(result.value)

    async def _report(self, job: ScoringJob) -> tuple[CalibrationReport | None, list[Failure]]:
        """The calibration report of the fit the job's record gets: its key's own fit (``feedback.scope: key``,
        where ``own_fit_allowed``), else its model's shared one; None (the default combination) when the fit store
        cannot answer. That failure is logged here and counted with Trust_OV's failures.
        """
        if self._learned is None:
            return None, []
        try:
            owner = job.owner
            if owner is not None and own_fit_allowed(self._settings, model=job.model, key_name=owner):
                own = await self._learned.get(job.model, owner)
                if own is not None and own.combination == "fitted":
                    return own, []
            return await self._learned.get(job.model), []
        except Exception as exc:  # the default combination still scores
            failure = Failure.of(exc)
            self._failure_log.report("learned combination", failure.reason, exc)
            return None, [failure]

    def _probability_of(self, components: dict[str, ComponentResult]) -> float | None:
        """A learned Trust_OV is itself a probability; any other goes through the calibration file, if one."""
        overall = components.get("ov")
        if overall is not None and isinstance(overall.details, OVDetails) and overall.details.method == "learned":
            return overall.value
        return self._probability(components)

    async def run(self, job: ScoringJob) -> TrustRecord:
        started, queued_s = time.perf_counter(), max(0.0, time.time() - job.created_at)
        bounded = within_limits(job, self._settings.limits)
        if bounded is None:  # never parsed nor put in a prompt: its cost would be unbounded
            return TrustRecord.for_job(
                job,
                "skipped",
                error=f"skipped: {TOO_LONG}",
                finished_at=time.time(),
                timings={"queued_s": queued_s, "scoring_s": 0.0},
                question=job.question,
                answer=job.answer,
            )
        job = bounded
        scorers = self._applicable(job)
        claims, split_failures = await self._claims(job, scorers)
        checks: ClaimChecks = {}
        tally = CostTally()
        results = await self._run_all(job, scorers, tally, claims if _by_claim(claims) else None, checks)
        _count_with_claim_checkers(results, scorers, split_failures)
        components = {r.component: r for r in results}
        scored = [r for r in results if r.value is not None]
        claim_scores: list[ComponentResult] = []
        if self._combine is not None and components.keys() & COMBINED:
            report, failures = await self._report(job)
            claim_scores = [self._combine(claim_inputs(components, own)) for own in _per_claim(checks)]
            default = (
                overall_of_claims(claim_scores, _checked(claims), self._settings.claims.softmin_temperature)
                if claim_scores
                else self._combine(components)
            )
            overall = learned_overall(report, default, components, job.answer, _per_claim(checks))
            overall.failures.extend(failures)
            components[overall.component] = overall
            score = overall.value
        else:
            score = scored[0].value if scored else None
        informative = informative_of(components.get("ov"))
        claim_results = self._claim_results(job, claims, checks, claim_scores, score, informative)
        errors = [f"{r.component}: {r.error}" for r in results if r.error]
        # failed: every scorer broke; skipped: they ran but found nothing to score (e.g. an unlabelled refusal)
        status: TrustStatus = "done" if scored else ("failed" if results and len(errors) == len(results) else "skipped")
        components.update({absent.component: absent for absent in self._absent(job)})  # after the status: unrun
        return TrustRecord.for_job(
            job,
            status,
            components=components,
            score=score,
            label=trust_label(score, self._settings, informative=informative),
            basis=basis_of(components.get("ov")) if score is not None else None,
            informative=informative,
            missing=missing_of(results),
            probability=self._probability_of(components),
            error="; ".join(errors) or None,
            finished_at=time.time(),
            timings={"queued_s": queued_s, "scoring_s": time.perf_counter() - started},
            question=job.question,
            answer=job.answer,
            claims=claim_results,
            cost=tally.record_cost(job.answer_cost),
        )
