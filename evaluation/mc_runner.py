"""Run TruthfulQA MC1/MC2 against a model group: one cached copy-task call per distinct candidate."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from .asking import CachedAsk, CallCounter, Complete, alternatives, chosen_tokens
from .cache import CallSite, EvalCache
from .datasets import McQuestion
from .truthfulqa_mc import CandidateScore, McResult, candidate_score, mc_scores, repeat_prompt

__all__ = ["MC_DATASET", "McEvaluator", "NoLogprobs"]

MC_DATASET = "truthfulqa-mc"
TOP_LOGPROBS = 5


class NoLogprobs(RuntimeError):
    """The upstream returned no log-probabilities, which MC1/MC2 cannot do without."""


@dataclass
class McEvaluator:
    complete: Complete
    cache: EvalCache
    model: str
    counter: CallCounter = field(default_factory=CallCounter)

    async def candidate(self, question: McQuestion, text: str) -> CandidateScore:
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        site = CallSite(MC_DATASET, f"{question.id}/{digest}", "mc", self.model)
        body: dict[str, Any] = {
            "messages": [{"role": "user", "content": repeat_prompt(question.question, text)}],
            "max_tokens": len(text) // 3 + 8,
            "temperature": 0.0,
            "logprobs": True,
            "top_logprobs": TOP_LOGPROBS,
        }
        data = await CachedAsk(self.complete, self.cache, site, self.counter).completion(body)
        chosen = chosen_tokens(data)
        if chosen is None:
            raise NoLogprobs(f"model group {self.model} returned no logprobs; MC1/MC2 need them")
        return candidate_score(text, chosen, alternatives(data))

    async def question(self, question: McQuestion) -> McResult:
        """Each distinct candidate is asked once, in file order (the best answer is usually a true one too)."""
        scores: dict[str, CandidateScore] = {}
        for text in dict.fromkeys((question.best, *question.true, *question.false)):
            scores[text] = await self.candidate(question, text)
        return mc_scores(scores[question.best], [scores[t] for t in question.true], [scores[t] for t in question.false])
