"""Which scorers a gateway runs, built once at start-up from the scoring settings."""

from __future__ import annotations

import contextlib

from scoring.pipeline import Combiner
from scoring.settings import ScoringSettings
from scoring.types import Scorer

__all__ = ["build_scorers", "combiner", "scoring_configured"]


def scoring_configured(settings: ScoringSettings) -> bool:
    """Whether any scorer is enabled, without loading one (a gateway whose workers score)."""
    return settings.consistency.enabled or settings.factcheck.enabled


async def build_scorers(settings: ScoringSettings, stack: contextlib.AsyncExitStack) -> list[Scorer]:
    """Load each enabled scorer's models and indexes once; services they need live on ``stack``."""
    return []


def combiner(scorers: list[Scorer]) -> Combiner | None:
    return None
