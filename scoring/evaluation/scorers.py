"""Open the gateway's scorers for an evaluation, from the built assets, once per run."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence

from ..consistency import open_consistency_scorer
from ..consistency.scorer import ConsistencyScorer
from ..factcheck import FactCheckScorer, NLIModelError
from ..factcheck.assets import load_evidence_index
from ..logprob import LogprobScorer
from ..settings import ScoringSettings
from ..types import Scorer

__all__ = ["ASSETS_HINT", "PAPER_VARIANTS", "MissingAssets", "open_scorers"]

ASSETS_HINT = "build them with `python -m scoring.consistency.assets` and `python -m scoring.factcheck.assets`"


class MissingAssets(RuntimeError):
    """A requested scorer's assets (graph, vectors, evidence index) are not built."""


# The paper's procedures, run beside the configured ones so that one run measures both on the same answers.
PAPER_VARIANTS = {"bc_paper": "bc", "fc_text": "fc"}


def _family(name: str) -> str:
    return PAPER_VARIANTS.get(name, name)


@contextlib.asynccontextmanager
async def open_scorers(settings: ScoringSettings, components: Sequence[str]) -> AsyncIterator[dict[str, Scorer]]:
    """The requested scorers ("bc", "fc", "lp", "bc_paper", "fc_text") by name, loaded as the gateway loads them.

    ``bc_paper`` is Trust_BC as the paper runs it (random positions, binary: stop
    at the first inconsistent check) and ``fc_text`` Trust_FC with the paper's
    text judge; they share the loaded parts of ``bc`` / ``fc``.
    """
    scorers: dict[str, Scorer] = {}
    families = {_family(name) for name in components}
    async with contextlib.AsyncExitStack() as stack:
        if "bc" in families:
            try:
                bc = await stack.enter_async_context(open_consistency_scorer(settings))
            except FileNotFoundError as exc:
                raise MissingAssets(f"Trust_BC assets are missing ({exc.filename}): {ASSETS_HINT}") from exc
            paper = settings.consistency.model_copy(update={"procedure": "paper", "mode": "binary"})
            scorers.update(bc=bc, bc_paper=ConsistencyScorer(paper, bc.generator))
        if "fc" in families:
            index = await asyncio.to_thread(load_evidence_index, settings)
            if index is None:
                raise MissingAssets(f"no evidence index under {settings.data_dir}: {ASSETS_HINT}")
            try:
                scorers["fc"] = FactCheckScorer(index, settings.factcheck)
                scorers["fc_text"] = FactCheckScorer(
                    index, settings.factcheck.model_copy(update={"judge_procedure": "text"}))
            except NLIModelError as exc:
                raise MissingAssets(str(exc)) from exc
        if "lp" in families:
            scorers["lp"] = LogprobScorer()
        yield {name: scorers[name] for name in components if name in scorers}
