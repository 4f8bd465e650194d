"""Trust_FC: retrieve evidence for an answer, ask the judge whether it supports it (paper §2.2, A.5.2).

The scorer holds where retrieval runs (``scoring.cpu_pool``: the loaded index,
in a worker process or a thread), the settings and, when configured, a local
NLI model; nothing per request. The LLM judge is whatever ``Ask`` the pipeline
binds (``judge_model``, by default the deployment that answered). Retrieval
and the NLI model run off the event loop because they take CPU time that the
event loop, which also serves user traffic, should not spend.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path

from ..cpu_pool import CpuWork
from ..settings import FactCheckSettings
from ..types import (
    Ask,
    ChecksClaims,
    Claim,
    ComponentResult,
    FCDetails,
    FCEvidence,
    Reply,
    Scorer,
    ScoringJob,
    SplitsClaims,
)
from .cpu_part import retrieve_evidence
from .evidence import Evidence
from .judge import (
    CONTENT_FREE,
    JUDGE_MAX_TOKENS,
    LABELS,
    Label,
    choice_probabilities,
    choice_prompt,
    choice_reply_label,
    debiased,
    evidence_lines,
    judge_prompt,
    label_probabilities,
    label_value,
    parse_judge_label,
)
from .text import evidence_query

__all__ = ["FactCheckScorer"]

SNIPPET_CHARS = 300  # of each passage, kept in the record so a reader sees what the judge was shown
CHOICE_TOP_LOGPROBS = 20  # the constrained choice reads "yes"/"no" among the first token's alternatives
CHOICE_MAX_TOKENS = 8  # the answer token, and a few words for the fallback reading


class FactCheckScorer(Scorer, ChecksClaims):
    """``score(job, ask)`` -> the "fc" component: the judge's label on the top-k passages.

    ``details`` holds ``label`` and ``label_probs`` (what ``scoring.combine``
    reads), the query, the evidence (ids, titles, BM25 scores, snippets), which judge
    ruled ("llm", "llm-choice" or "nli"), where the probabilities came from ("logprobs",
    "nli", or "label": one-hot), and the LLM judge's raw reply. With no passage sharing a word with the query the label
    is "neutral" and no judge is asked. With ``nli_model_dir`` set, the local
    NLI model judges and no upstream call is made. With a ``claim_splitter``, a
    long answer is checked claim by claim: evidence retrieved for each claim's
    statement, and the judge asked about that claim alone.
    """

    name = "fc"

    def __init__(self, cpu: CpuWork, settings: FactCheckSettings, claim_splitter: SplitsClaims | None = None) -> None:
        self._cpu = cpu  # retrieves the evidence, in a worker process or a thread
        self._settings = settings
        self.claim_splitter = claim_splitter
        self._nli = None
        if settings.nli_model_dir:
            from .nli import LocalNLIJudge  # torch and transformers are optional

            self._nli = LocalNLIJudge(Path(settings.nli_model_dir), settings.nli_labels)
        self.judge_model = settings.judge_model  # the pipeline asks this model group; None: the answerer
        # The constrained-choice judge's answer to the content-free probe, per judging model: asked once.
        self._priors: dict[str, dict[Label, float] | None] = {}
        self._prior_lock = asyncio.Lock()

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        started = time.perf_counter()
        query = evidence_query(job.question, job.answer, self._settings.max_query_chars)
        evidence = await retrieve_evidence(self._cpu, query, self._settings.top_k)
        details = FCDetails(
            query=query,
            evidence=[
                FCEvidence(id=e.id, title=e.title, score=round(e.score, 4), snippet=e.text[:SNIPPET_CHARS])
                for e in evidence
            ],
            judge=None,
        )
        label: Label = "neutral"
        probabilities: dict[Label, float] | None = None
        calls = 0
        if evidence and self._nli is not None:
            probabilities = await asyncio.to_thread(self._nli.judge, evidence, job.answer)
            label = max(probabilities, key=probabilities.__getitem__)
            details.judge = "nli"
        elif evidence and self._settings.judge_procedure == "choice":
            label, probabilities, calls = await self._choose(evidence, job, ask, details)
            details.judge = "llm-choice"
        elif evidence:
            label, probabilities, details.judge_reply = await self._ask_judge(evidence, job, ask)
            details.judge, calls = "llm", 1
        details.label = label
        one_hot = {name: float(name == label) for name in LABELS}
        details.label_probs = dict((probabilities or one_hot).items())
        details.probs_from = ("nli" if self._nli else "logprobs") if probabilities else "label"
        return ComponentResult(
            component=self.name,
            value=label_value(label, probabilities),
            label=label,
            details=details,
            upstream_calls=calls,
            duration_s=time.perf_counter() - started,
        )

    async def score_claims(self, job: ScoringJob, claims: Sequence[Claim], ask: Ask) -> list[ComponentResult]:
        """Each claim's Trust_FC, all at once: its statement checked as the answer, on its own evidence."""
        return list(
            await asyncio.gather(*(self.score(job.model_copy(update={"answer": c.statement}), ask) for c in claims))
        )

    async def _ask_judge(
        self, evidence: list[Evidence], job: ScoringJob, ask: Ask
    ) -> tuple[Label, dict[Label, float] | None, str]:
        prompt = judge_prompt(evidence, job.question, job.answer)
        logprobs = self._settings.judge_logprobs
        reply = await ask(
            [{"role": "user", "content": prompt}],
            max_tokens=JUDGE_MAX_TOKENS,
            temperature=0.0,
            logprobs=logprobs,
            top_logprobs=self._settings.judge_top_logprobs if logprobs else None,
        )
        label = parse_judge_label(reply.text)
        return label, label_probabilities(reply.top_logprobs, label), reply.text

    async def _yes_or_no(self, prompt: str, ask: Ask) -> Reply:
        return await ask(
            [{"role": "user", "content": prompt}],
            max_tokens=CHOICE_MAX_TOKENS,
            temperature=0.0,
            logprobs=self._settings.judge_logprobs,
            top_logprobs=CHOICE_TOP_LOGPROBS if self._settings.judge_logprobs else None,
        )

    async def _prior(self, model: str, ask: Ask) -> tuple[dict[Label, float] | None, int]:
        """The judge's label probabilities on the content-free probe (asked once per model), and calls spent."""
        async with self._prior_lock:
            if model in self._priors:
                return self._priors[model], 0
            reply = await self._yes_or_no(choice_prompt(CONTENT_FREE, CONTENT_FREE, CONTENT_FREE), ask)
            self._priors[model] = choice_probabilities(reply.top_logprobs)
            return self._priors[model], 1

    async def _choose(
        self, evidence: list[Evidence], job: ScoringJob, ask: Ask, details: FCDetails
    ) -> tuple[Label, dict[Label, float] | None, int]:
        """The constrained choice: yes/no token probabilities over the probe's, else the reply's words."""
        reply = await self._yes_or_no(choice_prompt(evidence_lines(evidence), job.question, job.answer), ask)
        details.judge_reply = reply.text
        raw = choice_probabilities(reply.top_logprobs)
        if raw is None:
            return choice_reply_label(reply.text), None, 1
        prior, probe_calls = await self._prior(self.judge_model or job.model, ask)
        probabilities = debiased(raw, prior)
        details.raw_label_probs = dict(raw.items())
        details.judge_prior = None if prior is None else dict(prior.items())
        return max(probabilities, key=probabilities.__getitem__), probabilities, 1 + probe_calls
