"""Open the gateway's scorers for an evaluation, from the built assets, once per run."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence

from ..consistency import open_consistency_scorer
from ..factcheck import FactCheckScorer, NLIModelError
from ..factcheck.assets import load_evidence_index
from ..settings import ScoringSettings
from ..types import Scorer

__all__ = ["ASSETS_HINT", "MissingAssets", "open_scorers"]

ASSETS_HINT = "build them with `python -m scoring.consistency.assets` and `python -m scoring.factcheck.assets`"


class MissingAssets(RuntimeError):
    """A requested scorer's assets (graph, vectors, evidence index) are not built."""


@contextlib.asynccontextmanager
async def open_scorers(settings: ScoringSettings, components: Sequence[str]) -> AsyncIterator[dict[str, Scorer]]:
    """The requested scorers ("bc", "fc") by name, loaded as the gateway loads them."""
    scorers: dict[str, Scorer] = {}
    async with contextlib.AsyncExitStack() as stack:
        if "bc" in components:
            try:
                scorers["bc"] = await stack.enter_async_context(open_consistency_scorer(settings))
            except FileNotFoundError as exc:
                raise MissingAssets(f"Trust_BC assets are missing ({exc.filename}): {ASSETS_HINT}") from exc
        if "fc" in components:
            index = await asyncio.to_thread(load_evidence_index, settings)
            if index is None:
                raise MissingAssets(f"no evidence index under {settings.data_dir}: {ASSETS_HINT}")
            try:
                scorers["fc"] = FactCheckScorer(index, settings.factcheck)
            except NLIModelError as exc:
                raise MissingAssets(str(exc)) from exc
        yield scorers
