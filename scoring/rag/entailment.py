"""Does this evidence entail that statement? One job's judge, LLM (through ``Ask``) or local NLI.

Citation recall and precision (Trust-Eval, after ALCE) and claim correctness
all reduce to that question, asked of different premises. The LLM judge is
Trust_FC's (``scoring.factcheck.judge``: the Table 6 prompt and its label
parser) with the statement as the answer; the local NLI judge is the one
``scoring.factcheck.nli`` loads. Verdicts are memoised per (premise,
hypothesis): precision's "without this citation" premise is often another
check's "this citation alone". A judge that fails gives None, never an
exception, so one bad call costs one metric rather than the whole score.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from ..factcheck.evidence import Evidence
from ..factcheck.judge import JUDGE_MAX_TOKENS, Label, judge_prompt, parse_judge_label
from ..failures import describe
from ..types import Ask

__all__ = ["EntailmentJudge", "NLIJudge", "Verdict"]

Verdict = Label | None  # None: the judge failed
MAX_ERRORS_KEPT = 5


class NLIJudge(Protocol):
    """``scoring.factcheck.nli.LocalNLIJudge``: label probabilities from the most decisive passage."""

    def judge(self, evidence: Sequence[Evidence], answer: str) -> dict[Label, float]: ...


class _LLMBackend:
    """Trust_FC's judge prompt with the statement as the answer to the user's question."""

    kind = "llm"
    joint_matters = False  # one prompt reads every passage either way

    def __init__(self, ask: Ask, question: str) -> None:
        self._ask = ask
        self._question = question
        self.calls = 0

    async def label(self, premise: Sequence[Evidence], hypothesis: str, joint: bool) -> Label:
        self.calls += 1
        prompt = judge_prompt(premise, self._question, hypothesis)
        reply = await self._ask([{"role": "user", "content": prompt}], max_tokens=JUDGE_MAX_TOKENS, temperature=0.0)
        return parse_judge_label(reply.text)


class _NLIBackend:
    """A joint premise is one text formatted as Trust-Eval's AutoAIS premise ("Title: T\\ntext" per passage)."""

    kind = "nli"
    joint_matters = True
    calls = 0  # never an upstream call

    def __init__(self, nli: NLIJudge) -> None:
        self._nli = nli

    async def label(self, premise: Sequence[Evidence], hypothesis: str, joint: bool) -> Label:
        if joint and len(premise) > 1:
            text = "\n".join(f"Title: {e.title}\n{e.text}" for e in premise)
            premise = [Evidence(id="joint", title="", text=text, score=0.0)]
        probabilities = await asyncio.to_thread(self._nli.judge, premise, hypothesis)
        return max(probabilities, key=probabilities.__getitem__)


class EntailmentJudge:
    """Judges hypotheses against premises for one job; counts its upstream calls and keeps its errors.

    ``joint=True`` reads the premise passages as one text, as Trust-Eval's
    citation recall does; ``joint=False`` asks whether any one of them
    entails the hypothesis. The LLM reads all passages in one prompt either
    way; the NLI model, whose input is short, gets them concatenated or one
    by one. Build one with ``llm(ask, question)`` or ``local(nli)``.
    """

    def __init__(self, backend: _LLMBackend | _NLIBackend, concurrency: int = 4) -> None:
        self._backend = backend
        self._slots = asyncio.Semaphore(concurrency)
        self._verdicts: dict[tuple[tuple[tuple[str, str], ...], str, bool], asyncio.Future[Verdict]] = {}
        self.errors: list[str] = []  # the first few, as the details show them
        self.failures: list[BaseException] = []  # every one, for the log and the error counter

    @classmethod
    def llm(cls, ask: Ask, question: str, concurrency: int = 4) -> EntailmentJudge:
        return cls(_LLMBackend(ask, question), concurrency)

    @classmethod
    def local(cls, nli: NLIJudge, concurrency: int = 4) -> EntailmentJudge:
        return cls(_NLIBackend(nli), concurrency)

    @property
    def kind(self) -> str:
        return self._backend.kind

    @property
    def calls(self) -> int:
        """Upstream calls made so far (the NLI judge makes none)."""
        return self._backend.calls

    async def __call__(self, premise: Sequence[Evidence], hypothesis: str, *, joint: bool = True) -> Verdict:
        key = (tuple((e.title, e.text) for e in premise), hypothesis, joint and self._backend.joint_matters)
        if key not in self._verdicts:
            self._verdicts[key] = asyncio.ensure_future(self._judge(premise, hypothesis, joint))
        return await self._verdicts[key]

    async def _judge(self, premise: Sequence[Evidence], hypothesis: str, joint: bool) -> Verdict:
        async with self._slots:
            try:
                return await self._backend.label(premise, hypothesis, joint)
            except Exception as exc:  # an upstream or model failure costs this verdict only
                self.failures.append(exc)
                if len(self.errors) < MAX_ERRORS_KEPT:
                    self.errors.append(describe(exc)[:300])
                return None
