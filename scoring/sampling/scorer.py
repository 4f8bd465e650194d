"""``sc``: ask the request again a few times and measure how far the samples agree with the original answer.

A model that knows an answer tends to give it again when sampled; one that is
guessing scatters (SelfCheckGPT's and UQLM's sampled-consistency idea). Unlike
``lp`` this needs nothing from the upstream but text, so it works for providers
that give no log-probabilities.

The samples repeat the user's request: its messages (the job's context and
question), at its own temperature, at most its own ``max_tokens`` (and
``scoring.sc.max_tokens``), cut at its own stop sequences. A request sampled
greedily (temperature 0) or without a temperature is re-asked at the
upstream's default temperature: greedy re-asks would only repeat the answer.
Each sample carries a seed derived from the answer, so a rerun asks the same
samples. Each sample is one upstream call through the pipeline's ``Ask``, so
it is counted and held to the scoring budget like every scorer's call.

The value is the mean agreement (``similarity.agreement``) of the samples with
the original. A sample whose call failed (upstream error, budget spent) is
left out and its failure listed; when none was answered the scorer raises the
first failure, and the pipeline records the component's error.

A clearly consistent answer (Trust_BC ended on its first 3 checks, each one
choosing the answer itself) gets no samples (``skip_when_consistent``, on by
default): its agreement is what those checks already showed, and the 3 calls
would take the cost of scoring it from 4 calls to 7. ``sc`` then
waits for Trust_BC (``RunsAfter``): for its result, or for its word that it
will not end clearly consistent (``TellsEarly``), and for a spared answer
records why it is absent.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from typing import Any

from ..settings import SamplingSettings
from ..types import (
    SC_CLEARLY_CONSISTENT,
    Ask,
    BCDetails,
    ComponentResult,
    Failure,
    Reply,
    RunsAfter,
    SCDetails,
    Scorer,
    ScoringJob,
    SCSample,
)
from .similarity import agreement

__all__ = ["SAMPLE_CHARS_KEPT", "SamplingScorer", "clearly_consistent", "sample_seeds"]

SAMPLE_CHARS_KEPT = 300


def clearly_consistent(bc: ComponentResult) -> bool:
    """Trust_BC ended on its first 3 checks, every one of them choosing the answer's own option."""
    return bc.error is None and isinstance(bc.details, BCDetails) and bc.details.clearly_consistent()


def sample_seeds(seed: int, question: str, answer: str, count: int) -> list[int]:
    """``count`` seeds for one answer's samples, from a SHA-256 of (seed, question, answer): the same everywhere."""
    digest = hashlib.sha256(json.dumps([seed, question, answer]).encode()).digest()
    return [int.from_bytes(digest[4 * i : 4 * i + 4], "big") & 0x7FFFFFFF for i in range(count)]


def _cut_at_stops(text: str, stops: list[str] | None) -> str:
    """The reply up to the first of the request's stop sequences (the samples are not sent them)."""
    end = min((index for stop in stops or () if stop and (index := text.find(stop)) >= 0), default=len(text))
    return text[:end].strip()


class SamplingScorer(Scorer, RunsAfter):
    """The ``sc`` component; stateless apart from its settings."""

    name = "sc"

    def __init__(self, settings: SamplingSettings) -> None:
        self._settings = settings

    @property
    def after(self) -> str | None:
        """Trust_BC, whose first checks may spare the samples; None when every answer is sampled."""
        return "bc" if self._settings.skip_when_consistent else None

    def spared(self, earlier: ComponentResult) -> ComponentResult | None:
        """No samples for a clearly consistent answer: an absent sc that says why."""
        if not clearly_consistent(earlier):
            return None
        return ComponentResult(component=self.name, label="unscored", details=SCDetails(reason=SC_CLEARLY_CONSISTENT))

    def _temperature(self, job: ScoringJob) -> float | None:
        if self._settings.temperature is not None:
            return self._settings.temperature
        requested = job.sampling.temperature
        return requested if requested else None

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        started = time.perf_counter()
        settings, params = self._settings, job.sampling
        messages: list[dict[str, Any]] = params.messages or [*job.context, {"role": "user", "content": job.question}]
        temperature = self._temperature(job)
        max_tokens = min(settings.max_tokens, params.max_tokens or settings.max_tokens)
        seeds: list[int | None] = (
            list(sample_seeds(settings.seed, job.question, job.answer, settings.samples))
            if settings.seeded
            else [None] * settings.samples
        )
        replies = await asyncio.gather(
            *(ask(messages, max_tokens=max_tokens, temperature=temperature, seed=seed) for seed in seeds),
            return_exceptions=True,
        )
        failures = [r for r in replies if isinstance(r, BaseException)]
        if any(not isinstance(f, Exception) for f in failures):  # a cancellation is not the scorer's to keep
            raise next(f for f in failures if not isinstance(f, Exception))
        answered = [r for r in replies if isinstance(r, Reply)]
        if not answered:
            raise failures[0]
        samples = []
        for reply in answered:
            text = _cut_at_stops(reply.text, params.stop)
            measured = agreement(job.answer, text, question=job.question, short_words=settings.short_words)
            samples.append(SCSample(text=text[:SAMPLE_CHARS_KEPT], agreement=measured.value, kind=measured.kind))
        value = sum(s.agreement for s in samples) / len(samples)
        details = SCDetails(
            samples_asked=len(seeds), samples_answered=len(answered), temperature=temperature, samples=samples
        )
        return ComponentResult(
            component=self.name,
            value=min(1.0, max(0.0, value)),
            details=details,
            upstream_calls=len(seeds),
            failures=[Failure.of(f) for f in failures],
            duration_s=time.perf_counter() - started,
        )
