"""The "ev" component: evidence agreement, on CPU, with no upstream call.

A component of its own rather than a part of Trust_FC: Trust_FC is a judge's
verdict on the passages (an upstream call, or a local NLI model), while this
check reads the passages itself and abstains on most questions that are not
short facts. Kept apart, a combination can weigh each by what it shows on a
model (a strong judge, or a 135M one that calls nearly everything
"neutral"), and an abstaining check leaves the judge's verdict as it was.

``check(question, claim, entity)`` checks one claim; ``score(job, ask)`` checks
the whole answer as one claim; ``score_claims`` checks a long answer's claims
(``ChecksClaims``), each statement as the pipeline's claim splitter resolved
it. Of those, only the first may answer without stating the asked relation
("Canberra. It is home to Parliament House."): a later claim that does not
state it ("It lies on the Seine", for a question about a capital) says nothing
the evidence for the question can check, and its first name read as the
answer would be contradicted by evidence that is right about something else.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from ..cpu_pool import CpuWork
from ..settings import AgreementSettings
from ..types import (
    Ask,
    ChecksClaims,
    Claim,
    ComponentResult,
    EVDetails,
    EVStatement,
    FCEvidence,
    Scorer,
    ScoringJob,
    SplitsClaims,
)
from .cpu_part import AgreementFound, AgreementQuery, find_agreement

__all__ = ["EvidenceAgreementScorer"]

SNIPPET_CHARS = 300  # of each passage and statement kept in the record


def agreement_details(found: AgreementFound, claim: str | None) -> EVDetails:
    """The record's account of a check: its frame, entity, the passages read and the statements found (and the
    claim, when one was checked rather than the whole answer)."""
    agreement = found.agreement
    readings = agreement.readings
    details = EVDetails(
        verdict=agreement.verdict,
        reason=agreement.reason,
        subject=agreement.frame.subject if agreement.frame else None,
        relation=list(agreement.frame.relation) if agreement.frame else [],
        entity=agreement.entity.text if agreement.entity else None,
        entity_forms=list(agreement.entity_forms),
        queries=list(found.queries),
        evidence=[
            FCEvidence(id=e.id, title=e.title, score=round(e.score, 4), snippet=e.text[:SNIPPET_CHARS])
            for e in found.evidence
        ],
        statements=[
            EVStatement(
                evidence_id=r.statement.evidence_id,
                text=r.statement.text[:SNIPPET_CHARS],
                filler=r.statement.filler.text,
                agrees=r.agrees,
                strong=r.statement.strong,
            )
            for r in readings
        ],
        agreeing=agreement.agreeing,
        contradicting=agreement.contradicting,
    )
    if claim is not None:
        details.claim = claim
    return details


class EvidenceAgreementScorer(Scorer, ChecksClaims):
    """``score(job, ask)`` -> the "ev" component: agree (value above 0.5), contradict (below), or abstain (no
    value, ``label`` "abstain", ``details.reason`` says why). ``ask`` is never called."""

    name = "ev"

    def __init__(self, cpu: CpuWork, settings: AgreementSettings, claim_splitter: SplitsClaims | None = None) -> None:
        self._cpu = cpu  # holds the index and the lexicon, in a worker process or a thread
        self._settings = settings
        self.claim_splitter = claim_splitter

    async def check(self, question: str, claim: str, entity: str | None = None) -> ComponentResult:
        """One claim of an answer to ``question``; ``entity``: its answer entity, where the caller knows it."""
        return await self._checked(AgreementQuery(question, claim, entity), recorded_claim=claim)

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        query = AgreementQuery(job.question, job.answer)
        return await self._checked(query, recorded_claim=None)  # the record has the answer

    async def score_claims(self, job: ScoringJob, claims: Sequence[Claim], ask: Ask) -> list[ComponentResult]:
        """Each claim's ev, all at once: its statement checked against the evidence for the question; past the
        first claim, only a statement of the asked relation is read (the module docstring says why)."""
        queries = [
            AgreementQuery(job.question, claim.statement, relation_required=index > 0)
            for index, claim in enumerate(claims)
        ]
        return list(await asyncio.gather(*(self._checked(q, recorded_claim=q.claim) for q in queries)))

    async def _checked(self, query: AgreementQuery, recorded_claim: str | None) -> ComponentResult:
        started = time.perf_counter()
        found = await find_agreement(self._cpu, query, self._settings.top_k, self._settings.entity_top_k)
        return ComponentResult(
            component=self.name,
            value=found.agreement.value,
            label=found.agreement.verdict,
            details=agreement_details(found, recorded_claim),
            duration_s=time.perf_counter() - started,
        )
