"""A gateway's claim checkers played by a script, for tests of what shows claims (records, streams, the console).

The fake upstream answers every question with ``ANSWER``, three sentences of which the second is false; the
scripted judge (``fc``) asks it about each claim, one call a claim, and it says "contradict" to the false one;
the scripted evidence agreement (``ev``) contradicts the false claim and agrees with the first, with no call.
Both carry the details the real checkers write (passages, statements), so that a reader has evidence to show.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from scoring import (
    ChecksClaims,
    ComponentResult,
    EVDetails,
    EVStatement,
    FCDetails,
    FCEvidence,
    Scorer,
    ScoringJob,
)
from scoring.claims.selection import select_claims
from scoring.types import Ask, Claim, SplitsClaims
from tests.fake_upstream import last_user_text

__all__ = ["ANSWER", "FALSE_CLAIM", "QUESTION", "claim_checkers", "claims_model"]

QUESTION = "Tell me about Paris."
ANSWER = "Paris is the capital of France. It lies on the Thames. It is home to the Louvre."
FALSE_CLAIM = "It lies on the Thames."
FALSE_STATEMENT = "Paris lies on the Thames."
PASSAGE = FCEvidence(
    id="wikipedia:Paris",
    title="Paris",
    score=9.5,
    snippet="Paris is the capital and largest city of France. It lies on the river Seine.",
)
_SENTENCE = re.compile(r"[^.!?]+[.!?]")
_CHECK = "check: "


def claims_model(messages: list[dict[str, Any]]) -> str:
    """The fake upstream's replies: the judge's verdict on a claim it is asked about, else ANSWER."""
    prompt = last_user_text(messages)
    if prompt.startswith(_CHECK):
        return "contradict" if "Thames" in prompt else "support"
    return ANSWER


class SentenceSplitter(SplitsClaims):
    """Every sentence a claim, a leading "It" read as Paris (the real splitter resolves pronouns)."""

    async def split(self, job: ScoringJob) -> list[Claim]:
        found = []
        for match in _SENTENCE.finditer(job.answer):
            start = match.start() + len(match.group()) - len(match.group().lstrip())
            text = job.answer[start : match.end()]
            statement = "Paris" + text[2:] if text.startswith("It ") else text
            found.append(Claim(start, match.end(), text, statement, weight=2.0))
        return select_claims(job.answer, found, 3)


class ScriptedJudge(Scorer, ChecksClaims):
    """Trust_FC: one judge call a claim, on one passage."""

    name = "fc"

    def __init__(self, splitter: SplitsClaims) -> None:
        self.claim_splitter = splitter

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        reply = await ask([{"role": "user", "content": f"{_CHECK}{job.answer}"}])
        label = "contradict" if reply.text == "contradict" else "support"
        details = FCDetails(query=job.answer, evidence=[PASSAGE], judge="llm", judge_reply=reply.text, label=label)
        value = 0.0 if label == "contradict" else 1.0
        return ComponentResult(component="fc", value=value, label=label, details=details, upstream_calls=1)

    async def score_claims(self, job: ScoringJob, claims: Sequence[Claim], ask: Ask) -> list[ComponentResult]:
        return [await self.score(job.model_copy(update={"answer": claim.statement}), ask) for claim in claims]


class ScriptedAgreement(Scorer, ChecksClaims):
    """ev: the passage names the Seine, so it contradicts the Thames; it agrees with the first claim, and abstains
    on the others, which do not state what the question asks."""

    name = "ev"

    def __init__(self, splitter: SplitsClaims) -> None:
        self.claim_splitter = splitter

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        return self._check(job.answer, first=True)

    async def score_claims(self, job: ScoringJob, claims: Sequence[Claim], ask: Ask) -> list[ComponentResult]:
        return [self._check(claim.statement, first=index == 0) for index, claim in enumerate(claims)]

    @staticmethod
    def _check(statement: str, first: bool) -> ComponentResult:
        if statement == FALSE_STATEMENT:
            said = EVStatement(
                evidence_id=PASSAGE.id, text="It lies on the river Seine.", filler="Seine", agrees=False, strong=True
            )
            details = EVDetails(
                verdict="contradict", reason="contradict", claim=statement, entity="Thames", evidence=[PASSAGE]
            )
            details.statements, details.contradicting = [said], 1
            return ComponentResult(component="ev", value=0.25, label="contradict", details=details)
        if first:
            details = EVDetails(verdict="agree", reason="agree", claim=statement, entity="Paris", evidence=[PASSAGE])
            return ComponentResult(component="ev", value=0.75, label="agree", details=details)
        details = EVDetails(verdict="abstain", reason="unstated", claim=statement)
        return ComponentResult(component="ev", label="abstain", details=details)


def claim_checkers() -> list[Scorer]:
    """The scripted judge and evidence agreement, sharing one splitter as the gateway's checkers do."""
    splitter = SentenceSplitter()
    return [ScriptedJudge(splitter), ScriptedAgreement(splitter)]
