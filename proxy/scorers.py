"""Which scorers a gateway (or worker) runs, built once at start-up from the scoring settings."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Sequence

from scoring.combine import fitted_trust, paper_trust
from scoring.evaluation.calibration import Calibrator, LogisticCombination
from scoring.consistency import open_consistency_scorer
from scoring.factcheck import FactCheckScorer, NLIModelError
from scoring.factcheck.assets import load_evidence_index
from scoring.logprob import LogprobScorer
from scoring.pipeline import COMBINED, Combiner
from scoring.rag import build_rag_scorer
from scoring.settings import ScoringSettings
from scoring.types import Scorer

from .config import ConfigError

__all__ = ["build_scorers", "combiner", "scoring_configured"]

log = logging.getLogger("trustgate.scorers")

BUILD_HINT = "build them with `make install` (or `python -m scoring.consistency.assets` and " \
             "`python -m scoring.factcheck.assets`)"


def scoring_configured(settings: ScoringSettings) -> bool:
    """Whether any scorer is enabled, without loading one (a gateway whose workers score)."""
    return (settings.consistency.enabled or settings.factcheck.enabled or settings.rag.enabled
            or settings.logprob.enabled)


async def build_scorers(settings: ScoringSettings, stack: contextlib.AsyncExitStack) -> list[Scorer]:
    """Load each enabled scorer's models and indexes once; services they need live on ``stack``."""
    scorers: list[Scorer] = []
    if settings.consistency.enabled:
        try:
            scorers.append(await stack.enter_async_context(open_consistency_scorer(settings)))
        except FileNotFoundError as exc:
            raise ConfigError(f"Trust_BC assets are missing ({exc.filename}): {BUILD_HINT}") from exc
    try:
        if settings.factcheck.enabled:
            index = await asyncio.to_thread(load_evidence_index, settings)
            if index is None:
                log.warning("no evidence index under %s: Trust_FC is off; %s", settings.data_dir, BUILD_HINT)
            else:
                scorers.append(FactCheckScorer(index, settings.factcheck))
        if settings.rag.enabled:
            scorers.append(build_rag_scorer(settings))
        if settings.logprob.enabled:
            scorers.append(LogprobScorer())
    except NLIModelError as exc:  # Trust_FC's and the RAG judge's model both come from factcheck.nli_model_dir
        raise ConfigError(f"trustgate.scoring.factcheck.nli_model_dir: {exc}") from exc
    return scorers


def combiner(scorers: Sequence[Scorer], settings: ScoringSettings, calibrator: Calibrator | None) -> Combiner | None:
    """Trust_OV whenever Trust_BC, Trust_FC or lp runs: the paper's Table 3, or the fitted combination.

    ``combine: fitted`` needs the calibration file to be a logistic fit; anything else is a config error.
    """
    if not {s.name for s in scorers} & COMBINED:
        return None
    if settings.combine == "paper":
        return paper_trust
    if not isinstance(calibrator, LogisticCombination):
        raise ConfigError("trustgate.scoring.combine: fitted needs calibration_path to be a logistic fit "
                          "(`trustgate eval run --calibration-method logistic --calibration-out ...`)")
    return functools.partial(fitted_trust, model=calibrator)
