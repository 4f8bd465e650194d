"""RAG trust: citation quality, groundedness, refusal groundedness and claim correctness (Trust-Eval).

For a job that carries documents, ``RagScorer`` splits the answer into
statements, finds which decline to answer, and asks the entailment judge, per
answering statement: do its citations entail it (recall), is each citation
needed (precision), do the documents entail it at all (groundedness). With
the client's labels it also judges whether answering (or refusing) was right
and how many reference claims the answer makes. The value is Trust-Eval's
trust score for one answer: the mean of the parts that apply (``trust_value``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..factcheck.evidence import Evidence
from ..settings import ScoringSettings
from ..types import (
    Ask,
    ComponentResult,
    Failure,
    RAGCitationCheck,
    RAGClaim,
    RAGDetails,
    RagLabels,
    RAGStatement,
    Scorer,
    ScoringJob,
)
from .documents import Document, documents_from_job, evidence
from .entailment import EntailmentJudge, NLIJudge, Verdict
from .metrics import (
    StatementCheck,
    citation_precision,
    citation_recall,
    f1,
    groundedness,
    share_supported,
    statement_precision,
    statement_recall,
)
from .refusal import RefusalKind, is_refusal_statement, refusal_kind
from .statements import Statement, split_statements, strip_citations

__all__ = ["RagScorer", "build_rag_scorer", "trust_parts", "trust_value"]

MAX_STATEMENTS = 20  # statements judged per answer; each costs one to seven judge calls
MAX_CITATIONS = 3  # Trust-Eval's at_most_citations: later citations of a statement are not judged


def trust_parts(details: RAGDetails) -> dict[str, float | None]:
    """The metrics that make up the value. Citation F1 counts only when the answer cites something:
    an answer written without citations is judged on groundedness, not failed for its style."""
    return {
        "citation_f1": details.citation_f1 if details.citations_judged else None,
        "groundedness": details.groundedness,
        "refusal_grounded": details.refusal_grounded,
        "claim_correctness": details.claim_correctness,
    }


def trust_value(parts: dict[str, float | None]) -> float | None:
    """The mean of the parts that apply, as Trust-Eval's trust_score averages its three axes;
    None when none applies (a refusal without an answerability label)."""
    known = [v for v in parts.values() if v is not None]
    return sum(known) / len(known) if known else None


async def _precision_checks(
    check: StatementCheck, cited: dict[int, Document], claim: str, judge: EntailmentJudge
) -> None:
    """ALCE's two questions per citation of a supported statement: enough alone? still supported without it?"""
    alone = await asyncio.gather(*(judge(evidence([cited[c]]), claim) for c in check.cited))
    check.alone = dict(zip(check.cited, alone, strict=True))
    needing = [c for c, verdict in check.alone.items() if verdict is not None and verdict != "support"]
    rest = await asyncio.gather(*(judge(evidence(d for o, d in cited.items() if o != c), claim) for c in needing))
    check.without = dict(zip(needing, rest, strict=True))


async def _check(
    statement: Statement, documents: Sequence[Document], judge: EntailmentJudge, max_citations: int
) -> StatementCheck:
    check = StatementCheck(statement.citations[:max_citations])
    cited = {c: documents[c - 1] for c in check.cited}
    if cited:
        check.joint = await judge(evidence(cited.values()), statement.claim)
    if check.joint == "support" and len(cited) > 1:
        await _precision_checks(check, cited, statement.claim, judge)
    check.grounding = (
        check.joint if check.joint == "support" else await judge(evidence(documents), statement.claim, joint=False)
    )
    return check


async def _answerable(
    labels: RagLabels, documents: Sequence[Document], judge: EntailmentJudge
) -> tuple[bool | None, str | None]:
    """The client's label, or else whether the documents entail any reference claim (Trust-Eval's
    answerable: the documents hold an answer), and where it came from."""
    if labels.answerable is not None:
        return labels.answerable, "label"
    if not labels.reference_claims:
        return None, None
    verdicts = await asyncio.gather(*(judge(evidence(documents), c, joint=False) for c in labels.reference_claims))
    if "support" in verdicts:
        return True, "claims"
    return (None, None) if None in verdicts else (False, "claims")


async def _claims(answer: str, claims: Sequence[str], judge: EntailmentJudge) -> list[Verdict]:
    """Trust-Eval's claim match: the answer, without its citations, is the premise of each claim."""
    premise = [Evidence(id="answer", title="", text=strip_citations(answer), score=0.0)]
    return list(await asyncio.gather(*(judge(premise, claim) for claim in claims)))


def _statement_details(statement: Statement, refuses: bool, check: StatementCheck | None) -> RAGStatement:
    """The statement as the record keeps it: the judge's fields only on a judged one (only set fields are written)."""
    fields: dict[str, Any] = {
        "text": statement.text,
        "citations": list(statement.citations),
        "out_of_range": list(statement.out_of_range),
        "refusal": refuses,
        "judged": check is not None,
    }
    if check is not None:
        precision = statement_precision(check)
        fields.update(
            checked=list(check.cited),
            joint=check.joint,
            grounding=check.grounding,
            recall=statement_recall(check),
            precision=None if precision is None else list(precision),
        )
        if check.alone:
            fields["citation_checks"] = [
                RAGCitationCheck(id=c, alone=check.alone[c], without=check.without.get(c), relevant=check.relevant(c))
                for c in check.cited
            ]
    return RAGStatement(**fields)


class RagScorer(Scorer):
    """``score(job, ask)`` -> the "rag" component for a job with ``documents``.

    The judge is the LLM behind ``ask`` (``judge_model``, by default the
    deployment that answered, as for Trust_FC), or ``nli`` when given, which
    makes no upstream call. At most ``max_statements`` answering statements
    and ``max_citations`` citations per statement are judged, which bounds the
    calls per answer. Details keys the gateway reads: ``citation_recall``,
    ``citation_precision``, ``refusal`` (a whole-answer refusal),
    ``groundedness``, ``refusal_grounded``, ``claim_correctness``.
    """

    name = "rag"
    handles_documents = True  # the pipeline runs it, instead of the closed-book scorers, on jobs with documents

    def __init__(
        self,
        *,
        judge_model: str | None = None,
        nli: NLIJudge | None = None,
        max_statements: int = MAX_STATEMENTS,
        max_citations: int = MAX_CITATIONS,
        judge_concurrency: int = 4,
    ) -> None:
        self.judge_model = judge_model  # the pipeline asks this model group; None: the answerer
        self._nli = nli
        self._max_statements = max_statements
        self._max_citations = max_citations
        self._concurrency = judge_concurrency

    @property
    def judges_locally(self) -> bool:
        """True when the local NLI model judges, so no upstream call is made."""
        return self._nli is not None

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        started = time.perf_counter()
        documents = documents_from_job(job.documents)
        statements = split_statements(job.answer, len(documents))
        if not documents or not statements:
            skipped = "no documents" if not documents else "empty answer"
            return ComponentResult(
                component=self.name, details=RAGDetails(skipped=skipped), duration_s=time.perf_counter() - started
            )
        judge = (
            EntailmentJudge.local(self._nli, self._concurrency)
            if self._nli is not None
            else EntailmentJudge.llm(ask, job.question, self._concurrency)
        )
        details = await self._assess(job.answer, statements, documents, job.policy.rag or RagLabels(), judge)
        details.trust_parts = trust_parts(details)
        return ComponentResult(
            component=self.name,
            value=trust_value(details.trust_parts),
            label=details.kind,
            details=details,
            upstream_calls=judge.calls,
            duration_s=time.perf_counter() - started,
            failures=[Failure("judge", error) for error in judge.failures],
        )

    async def _assess(
        self,
        answer: str,
        statements: list[Statement],
        documents: list[Document],
        labels: RagLabels,
        judge: EntailmentJudge,
    ) -> RAGDetails:
        refusing = [is_refusal_statement(s) for s in statements]
        kind: RefusalKind = refusal_kind(statements, refusing)
        judged = [] if kind == "refusal" else [i for i, refuses in enumerate(refusing) if not refuses]
        judged = judged[: self._max_statements]
        claims = () if kind == "refusal" else labels.reference_claims  # a refusal makes no claim
        checks, (answerable, answerable_from), verdicts = await asyncio.gather(
            asyncio.gather(*(_check(statements[i], documents, judge, self._max_citations) for i in judged)),
            _answerable(labels, documents, judge),
            _claims(answer, claims, judge),
        )
        by_index = dict(zip(judged, checks, strict=True))
        recall, precision = citation_recall(checks), citation_precision(checks)
        return RAGDetails(
            documents=len(documents),
            judge=judge.kind,
            kind=kind,
            refusal=kind == "refusal",
            partial_refusal=kind == "partial",
            statements=[_statement_details(s, refusing[i], by_index.get(i)) for i, s in enumerate(statements)],
            statements_judged=len(judged),
            citations_judged=sum(len(c.cited) for c in checks),
            citation_recall=recall,
            citation_precision=precision,
            citation_f1=f1(precision, recall),
            groundedness=groundedness(checks),
            answerable=answerable,
            answerable_from=answerable_from,
            refusal_grounded=None if answerable is None else float((kind != "refusal") == answerable),
            reference_claims=len(labels.reference_claims),
            claims=[RAGClaim(claim=c, label=v) for c, v in zip(claims, verdicts, strict=True)],
            claim_correctness=share_supported(verdicts) if verdicts else None,
            words=len(answer.split()),
            judge_errors=judge.errors,
        )


def build_rag_scorer(settings: ScoringSettings) -> RagScorer:
    """The scorer the settings describe; the settings have checked that an NLI judge has its model."""
    rag = settings.rag
    nli = None
    if rag.judge == "nli" and settings.factcheck.nli_model_dir:
        from ..factcheck.nli import LocalNLIJudge  # torch and transformers are optional

        nli = LocalNLIJudge(Path(settings.factcheck.nli_model_dir), settings.factcheck.nli_labels)
    return RagScorer(
        judge_model=rag.judge_model,
        nli=nli,
        max_statements=rag.max_statements,
        max_citations=rag.max_citations,
        judge_concurrency=rag.judge_concurrency,
    )
