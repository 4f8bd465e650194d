"""Open the scorers the settings ask for, once per process: the gateway, ``trustgate worker`` and ``trustgate eval``.

Each scorer's module is imported inside the function that opens it, not at
the top of this one: spaCy, gensim, bm25s (and torch for an NLI judge) load
only in a process that scores, never in a gateway with scoring off or one
whose Redis workers score.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Collection
from typing import TYPE_CHECKING, Literal

from .calibration import Calibrator, LogisticCombination
from .combine import default_trust, fitted_trust, paper_trust
from .pipeline import COMBINED, Combiner
from .settings import ScoringSettings
from .types import Scorer, SplitsClaims

if TYPE_CHECKING:
    from .cpu_pool import CpuWork

__all__ = [
    "ASSETS_HINT",
    "PAPER_VARIANTS",
    "ScorerAssetsError",
    "combiner_for",
    "default_combination",
    "enabled_components",
    "open_scorers",
    "scoring_configured",
]

ASSETS_HINT = "build them with `trustgate build-assets` (or `make install`)"

MissingEvidence = Literal["warn", "raise"]

log = logging.getLogger("trustgate.scorers")


# The paper's procedures, opened beside the configured ones (``trustgate eval``) so that one run measures both
# on the same answers: each shares the loaded parts of the scorer it varies.
PAPER_VARIANTS = {"bc_paper": "bc", "fc_text": "fc"}


class ScorerAssetsError(RuntimeError):
    """A requested scorer cannot load what it needs: built assets (graph, vectors, evidence index) or its NLI model.

    Also a ``combine: fitted`` whose calibration file is not a logistic fit.
    """


def enabled_components(settings: ScoringSettings) -> tuple[str, ...]:
    """The scorers the settings enable, by component name."""
    enabled = {
        "bc": settings.consistency.enabled,
        "fc": settings.factcheck.enabled,
        "rag": settings.rag.enabled,
        "lp": settings.logprob.enabled,
        "sc": settings.sc.enabled,
        "ev": settings.agreement.enabled,
    }
    return tuple(name for name, on in enabled.items() if on)


def scoring_configured(settings: ScoringSettings) -> bool:
    """Whether any scorer is enabled, without loading one (a gateway whose workers score)."""
    return bool(enabled_components(settings))


async def _open_cpu_work(
    settings: ScoringSettings, families: Collection[str], stack: contextlib.AsyncExitStack
) -> CpuWork:
    """Where Trust_BC's, Trust_FC's and the evidence agreement check's CPU work runs, each registering its part
    with the pool, loaded there (and the embedded graph served for BC); the claim parser beside them when
    answers are checked claim by claim."""
    from .cpu_pool import CpuRecipe, PartLoader, open_cpu_work

    loaders: dict[str, PartLoader] = {}
    try:
        if "bc" in families:
            from .consistency.cpu_part import DISTRACTORS, distractor_loader
            from .consistency.runtime import local_sparql_endpoint

            endpoint = await stack.enter_async_context(local_sparql_endpoint(settings))
            loaders[DISTRACTORS.name] = distractor_loader(settings, endpoint)
        if "fc" in families:
            from .factcheck.cpu_part import EVIDENCE, evidence_loader

            loaders[EVIDENCE.name] = evidence_loader(settings)
        if settings.claims.enabled:
            from .claims.cpu_part import CLAIM_PARSER, claim_parser_loader

            loaders[CLAIM_PARSER.name] = claim_parser_loader(settings.consistency.spacy_model)
        if "ev" in families:
            from .agreement.cpu_part import AGREEMENT, agreement_loader

            loaders[AGREEMENT.name] = agreement_loader(settings)
        return await stack.enter_async_context(open_cpu_work(CpuRecipe(loaders), settings.cpu))
    except FileNotFoundError as exc:
        raise ScorerAssetsError(f"Trust_BC assets are missing ({exc.filename}): {ASSETS_HINT}") from exc


def _claim_splitter(settings: ScoringSettings, cpu: CpuWork) -> SplitsClaims | None:
    """The splitter the claim checkers share; None when answers are checked whole (``claims.enabled: false``)."""
    if not settings.claims.enabled:
        return None
    from .claims.splitter import ClaimSplitter

    return ClaimSplitter(cpu, settings.claims)


def _consistency(
    settings: ScoringSettings, cpu: CpuWork, wanted: Collection[str], splitter: SplitsClaims | None
) -> dict[str, Scorer]:
    """``bc`` and, when wanted, ``bc_paper``: the paper's procedure (random positions, binary) on the same parts,
    checking answers whole."""
    from .consistency.scorer import ConsistencyScorer

    bc = ConsistencyScorer(settings.consistency, cpu, splitter, settings.claims.checks_per_claim)
    if "bc_paper" not in wanted:
        return {"bc": bc}
    paper = settings.consistency.model_copy(update={"procedure": "paper", "mode": "binary"})
    return {"bc": bc, "bc_paper": ConsistencyScorer(paper, cpu)}


def _no_evidence(settings: ScoringSettings, missing_evidence: MissingEvidence, scorer: str) -> None:
    """A scorer that reads the evidence index finds none: an error, or a warning that it is off."""
    message = f"no evidence index under {settings.data_dir}: {ASSETS_HINT}"
    if missing_evidence == "raise":
        raise ScorerAssetsError(message)
    log.warning("%s; %s is off", message, scorer)


def _factcheck(
    settings: ScoringSettings,
    cpu: CpuWork,
    missing_evidence: MissingEvidence,
    wanted: Collection[str],
    splitter: SplitsClaims | None,
) -> dict[str, Scorer]:
    """``fc`` and, when wanted, ``fc_text``: the paper's text judge on the same index."""
    from .factcheck.cpu_part import EVIDENCE
    from .factcheck.scorer import FactCheckScorer

    if not cpu.has(EVIDENCE):
        _no_evidence(settings, missing_evidence, "Trust_FC")
        return {}
    scorers: dict[str, Scorer] = {"fc": FactCheckScorer(cpu, settings.factcheck, splitter)}
    if "fc_text" in wanted:
        scorers["fc_text"] = FactCheckScorer(cpu, settings.factcheck.model_copy(update={"judge_procedure": "text"}))
    return scorers


def _agreement(
    settings: ScoringSettings, cpu: CpuWork, missing_evidence: MissingEvidence, splitter: SplitsClaims | None
) -> dict[str, Scorer]:
    """``ev``, over Trust_FC's evidence index, claim by claim beside Trust_BC and Trust_FC; absent (with a
    warning) or an error without an index, as Trust_FC."""
    from .agreement.cpu_part import AGREEMENT
    from .agreement.scorer import EvidenceAgreementScorer

    if not cpu.has(AGREEMENT):
        _no_evidence(settings, missing_evidence, "evidence agreement")
        return {}
    return {"ev": EvidenceAgreementScorer(cpu, settings.agreement, splitter)}


def _open_logprob() -> Scorer:
    from .logprob import LogprobScorer

    return LogprobScorer()


def _open_sampling(settings: ScoringSettings) -> Scorer:
    from .sampling import SamplingScorer

    return SamplingScorer(settings.sc)


def _open_rag(settings: ScoringSettings) -> Scorer:
    from .rag import build_rag_scorer

    return build_rag_scorer(settings)


async def open_scorers(
    settings: ScoringSettings,
    stack: contextlib.AsyncExitStack,
    *,
    components: Collection[str] | None = None,
    missing_evidence: MissingEvidence = "warn",
) -> dict[str, Scorer]:
    """The scorers by name ("bc", "fc", "rag", "lp", "sc", "ev"): ``components``, or those the settings enable.

    ``components`` may also name ``PAPER_VARIANTS`` (``trustgate eval``); each
    comes with the scorer it varies, which is opened too but returned only when
    named.

    Services they need (the embedded SPARQL server, the CPU worker processes of
    ``scoring.cpu``) live on ``stack``. A
    missing evidence index turns Trust_FC off with a warning (a gateway still
    serves) or, with ``missing_evidence="raise"``, is an error (an evaluation
    that asked for Trust_FC measures nothing without it); the same goes for the evidence agreement check,
    which reads that index. Missing Trust_BC
    assets and an NLI model that cannot be loaded raise ``ScorerAssetsError``.
    """
    wanted = enabled_components(settings) if components is None else tuple(components)
    if not wanted:
        return {}
    families = {PAPER_VARIANTS.get(name, name) for name in wanted}
    from .factcheck.nli import NLIModelError

    scorers: dict[str, Scorer] = {}
    try:
        if families & {"bc", "fc", "ev"}:
            cpu = await _open_cpu_work(settings, families, stack)
            splitter = _claim_splitter(settings, cpu)
            if "bc" in families:
                scorers.update(_consistency(settings, cpu, wanted, splitter))
            if "fc" in families:
                scorers.update(_factcheck(settings, cpu, missing_evidence, wanted, splitter))
            if "ev" in families:
                scorers.update(_agreement(settings, cpu, missing_evidence, splitter))
        if "rag" in families:
            scorers["rag"] = _open_rag(settings)
        if "lp" in families:
            scorers["lp"] = _open_logprob()
        if "sc" in families:
            scorers["sc"] = _open_sampling(settings)
    except NLIModelError as exc:  # Trust_FC's and the RAG judge's model both come from factcheck.nli_model_dir
        raise ScorerAssetsError(f"trustgate.scoring.factcheck.nli_model_dir: {exc}") from exc
    return {name: scorers[name] for name in wanted if name in scorers}


def combiner_for(
    scorers: Collection[Scorer], settings: ScoringSettings, calibrator: Calibrator | None
) -> Combiner | None:
    """Trust_OV whenever Trust_BC, Trust_FC, lp or sc runs: the shipped prior, the paper's Table 3, or the fitted
    combination.

    ``combine: fitted`` needs the calibration file to be a logistic fit; anything else raises ``ScorerAssetsError``.
    """
    if not {s.name for s in scorers} & COMBINED:
        return None
    return default_combination(settings, calibrator)


def default_combination(settings: ScoringSettings, calibrator: Calibrator | None) -> Combiner:
    """The configured Trust_OV, whichever scorers run: what a learned fit must beat (``scoring.learning``)."""
    if settings.combine == "default":
        return default_trust
    if settings.combine == "paper":
        return paper_trust
    if not isinstance(calibrator, LogisticCombination):
        raise ScorerAssetsError(
            "trustgate.scoring.combine: fitted needs calibration_path to be a logistic fit "
            "(`trustgate eval run --calibration-method logistic --calibration-out ...`)"
        )
    return functools.partial(fitted_trust, model=calibrator)
