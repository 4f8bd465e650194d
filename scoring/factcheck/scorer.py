"""Trust_FC: retrieve evidence for an answer, ask the judge whether it supports it (paper §2.2, A.5.2).

The scorer holds the loaded index, the settings and, when configured, a local
NLI model; nothing per request. The LLM judge is whatever ``Ask`` the pipeline
binds (``judge_model``, by default the deployment that answered). Retrieval
and the NLI model run in a worker thread because they take CPU time that the
event loop, which also serves user traffic, should not spend.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from ..settings import FactCheckSettings
from ..types import Ask, ComponentResult, FCDetails, FCEvidence, Scorer, ScoringJob
from .index import Evidence, EvidenceIndex
from .judge import JUDGE_MAX_TOKENS, LABELS, Label, judge_prompt, label_probabilities, label_value, parse_judge_label
from .text import evidence_query, tokenize

__all__ = ["FactCheckScorer"]

SNIPPET_CHARS = 300  # of each passage, kept in the record so a reader sees what the judge was shown


class FactCheckScorer(Scorer):
    """``score(job, ask)`` -> the "fc" component: the judge's label on the top-k passages.

    ``details`` holds ``label`` and ``label_probs`` (what ``scoring.combine``
    reads), the query, the evidence (ids, titles, BM25 scores, snippets), which judge
    ruled ("llm" or "nli"), where the probabilities came from ("logprobs",
    "nli", or "label": one-hot), and the LLM judge's raw reply. With no passage sharing a word with the query the label
    is "neutral" and no judge is asked. With ``nli_model_dir`` set, the local
    NLI model judges and no upstream call is made.
    """

    name = "fc"

    def __init__(self, index: EvidenceIndex, settings: FactCheckSettings) -> None:
        self._index = index
        self._settings = settings
        self._nli = None
        if settings.nli_model_dir:
            from .nli import LocalNLIJudge  # torch and transformers are optional

            self._nli = LocalNLIJudge(Path(settings.nli_model_dir), settings.nli_labels)
        self.judge_model = settings.judge_model  # the pipeline asks this model group; None: the answerer

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        started = time.perf_counter()
        query = evidence_query(job.question, job.answer)
        evidence = await asyncio.to_thread(self._index.search, tokenize(query), self._settings.top_k)
        details = FCDetails(query=query, evidence=[FCEvidence(id=e.id, title=e.title, score=round(e.score, 4),
                                                              snippet=e.text[:SNIPPET_CHARS]) for e in evidence],
                            judge=None)
        label: Label = "neutral"
        probabilities: dict[Label, float] | None = None
        calls = 0
        if evidence and self._nli is not None:
            probabilities = await asyncio.to_thread(self._nli.judge, evidence, job.answer)
            label = max(probabilities, key=probabilities.__getitem__)
            details.judge = "nli"
        elif evidence:
            label, probabilities, details.judge_reply = await self._ask_judge(evidence, job, ask)
            details.judge, calls = "llm", 1
        details.label = label
        one_hot = {name: float(name == label) for name in LABELS}
        details.label_probs = dict((probabilities or one_hot).items())
        details.probs_from = ("nli" if self._nli else "logprobs") if probabilities else "label"
        return ComponentResult(component=self.name, value=label_value(label, probabilities), label=label,
                               details=details, upstream_calls=calls, duration_s=time.perf_counter() - started)

    async def _ask_judge(self, evidence: list[Evidence], job: ScoringJob,
                         ask: Ask) -> tuple[Label, dict[Label, float] | None, str]:
        prompt = judge_prompt(evidence, job.question, job.answer)
        logprobs = self._settings.judge_logprobs
        reply = await ask([{"role": "user", "content": prompt}], max_tokens=JUDGE_MAX_TOKENS, temperature=0.0,
                          logprobs=logprobs, top_logprobs=self._settings.judge_top_logprobs if logprobs else None)
        label = parse_judge_label(reply.text)
        return label, label_probabilities(reply.top_logprobs, label), reply.text
