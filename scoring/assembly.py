"""Open the scorers the settings ask for, once per process: the gateway, ``trustgate worker`` and ``trustgate eval``.

Each scorer's module is imported inside the function that opens it, not at
the top of this one: spaCy, gensim, bm25s (and torch for an NLI judge) load
only in a process that scores, never in a gateway with scoring off or one
whose Redis workers score.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Collection
from typing import Literal

from .combine import combine
from .pipeline import Combiner
from .settings import ScoringSettings
from .types import Scorer

__all__ = ["ASSETS_HINT", "ScorerAssetsError", "combiner_for", "enabled_components", "open_scorers",
           "scoring_configured"]

ASSETS_HINT = "build them with `trustgate build-assets` (or `make install`)"

MissingEvidence = Literal["warn", "raise"]

log = logging.getLogger("trustgate.scorers")


class ScorerAssetsError(RuntimeError):
    """A requested scorer cannot load what it needs: built assets (graph, vectors, evidence index) or its NLI model."""


def enabled_components(settings: ScoringSettings) -> tuple[str, ...]:
    """The scorers the settings enable, by component name."""
    enabled = {"bc": settings.consistency.enabled, "fc": settings.factcheck.enabled, "rag": settings.rag.enabled}
    return tuple(name for name, on in enabled.items() if on)


def scoring_configured(settings: ScoringSettings) -> bool:
    """Whether any scorer is enabled, without loading one (a gateway whose workers score)."""
    return bool(enabled_components(settings))


async def _open_consistency(settings: ScoringSettings, stack: contextlib.AsyncExitStack) -> Scorer:
    from .consistency import open_consistency_scorer

    try:
        return await stack.enter_async_context(open_consistency_scorer(settings))
    except FileNotFoundError as exc:
        raise ScorerAssetsError(f"Trust_BC assets are missing ({exc.filename}): {ASSETS_HINT}") from exc


async def _open_factcheck(settings: ScoringSettings, missing_evidence: MissingEvidence) -> Scorer | None:
    from .factcheck.scorer import FactCheckScorer
    from .factcheck.assets import load_evidence_index

    index = await asyncio.to_thread(load_evidence_index, settings)
    if index is not None:
        return FactCheckScorer(index, settings.factcheck)
    message = f"no evidence index under {settings.data_dir}: {ASSETS_HINT}"
    if missing_evidence == "raise":
        raise ScorerAssetsError(message)
    log.warning("%s; Trust_FC is off", message)
    return None


def _open_rag(settings: ScoringSettings) -> Scorer:
    from .rag import build_rag_scorer

    return build_rag_scorer(settings)


async def open_scorers(settings: ScoringSettings, stack: contextlib.AsyncExitStack, *,
                       components: Collection[str] | None = None,
                       missing_evidence: MissingEvidence = "warn") -> dict[str, Scorer]:
    """The scorers by component name ("bc", "fc", "rag"): ``components``, or those the settings enable.

    Services they need (the embedded SPARQL server) live on ``stack``. A
    missing evidence index turns Trust_FC off with a warning (a gateway still
    serves) or, with ``missing_evidence="raise"``, is an error (an evaluation
    that asked for Trust_FC measures nothing without it). Missing Trust_BC
    assets and an NLI model that cannot be loaded raise ``ScorerAssetsError``.
    """
    wanted = enabled_components(settings) if components is None else tuple(components)
    if not wanted:
        return {}
    from .factcheck.nli import NLIModelError

    scorers: dict[str, Scorer] = {}
    try:
        if "bc" in wanted:
            scorers["bc"] = await _open_consistency(settings, stack)
        if "fc" in wanted and (fc := await _open_factcheck(settings, missing_evidence)) is not None:
            scorers["fc"] = fc
        if "rag" in wanted:
            scorers["rag"] = _open_rag(settings)
    except NLIModelError as exc:  # Trust_FC's and the RAG judge's model both come from factcheck.nli_model_dir
        raise ScorerAssetsError(f"trustgate.scoring.factcheck.nli_model_dir: {exc}") from exc
    return scorers


def combiner_for(scorers: Collection[Scorer]) -> Combiner | None:
    """Trust_OV (paper Table 3, graded) whenever Trust_BC or Trust_FC runs."""
    return combine if {s.name for s in scorers} & {"bc", "fc"} else None
