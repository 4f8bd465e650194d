"""``lp``: the answer's own token log-probabilities, mean and minimum, as a trust component.

A white-box signal that costs nothing: the gateway asks the upstream for the
log-probabilities of the user's own call (and strips them from the response
when the client did not ask), so the answer arrives with them. On SmolLM2's
own answers the mean token log-probability separated right from wrong answers
far better than Trust_BC or Trust_FC did, and any score the gateway sells has
to beat it.

Normalised to [0, 1] as probabilities: the value is ``exp(mean logprob)``, the
geometric mean of the chosen tokens' probabilities (1 when every token was
certain); the details also carry ``exp(min logprob)``, the least likely token's
probability, which catches one invented name in an otherwise fluent sentence.
A job without log-probabilities is not this scorer's to score: the pipeline
does not run it, so a missing signal is never read as a zero. Where the gateway
knows why they are missing (the provider gives none, the upstream returned
none, the call could not ask), the record's ``lp`` carries no value and that
reason.
"""

from __future__ import annotations

import math
import time

from ..types import Ask, ComponentResult, LPDetails, Scorer, ScoringJob

__all__ = ["LogprobScorer", "logprob_component"]


def logprob_component(answer_logprobs: list[float] | None) -> ComponentResult:
    """``lp`` of an answer's token log-probabilities: a pure reading, so that an answer triage leaves unscored
    (a poem, code) still gets it where it is read, with no job and no scorer."""
    started = time.perf_counter()
    logprobs = [lp for lp in answer_logprobs or () if math.isfinite(lp)]
    if not logprobs:
        return ComponentResult(
            component=LogprobScorer.name,
            label="unscored",
            details=LPDetails(reason="no_logprobs"),
            duration_s=time.perf_counter() - started,
        )
    mean, least = sum(logprobs) / len(logprobs), min(logprobs)
    value = min(1.0, math.exp(mean))
    return ComponentResult(
        component=LogprobScorer.name,
        value=value,
        label=None,
        details=LPDetails(
            mean_logprob=mean,
            min_logprob=least,
            mean_probability=value,
            min_probability=min(1.0, math.exp(least)),
            tokens=len(logprobs),
        ),
        duration_s=time.perf_counter() - started,
    )


class LogprobScorer(Scorer):
    """The ``lp`` component; stateless, never calls the upstream."""

    name = "lp"
    needs_answer_logprobs = True

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        return logprob_component(job.answer_logprobs)
