"""A scorer for tests of whether a request is scored at all, not of what its score is."""

from __future__ import annotations

from scoring import ComponentResult, Scorer, ScoringJob
from scoring.types import Ask


class FixedScorer(Scorer):
    """A component of a fixed value, without an upstream call."""

    name = "bc"

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        return ComponentResult(component=self.name, value=0.9, label="consistent")
