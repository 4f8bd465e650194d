"""A JSONL file of RAG cases, read into scoring jobs and scored as live traffic is.

Each line is one case: ``question``, ``documents`` (as the request field:
``{id, title, text}`` objects or strings, cited as [1..n]), ``answer``, and
optionally ``id``, ``answerable`` (bool) and ``reference_claims`` (strings).
``trustgate eval rag`` runs ``score_cases`` with ``RagScorer`` over the
gateway's upstream path and aggregates with ``rag_report`` (``aggregate.py``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..types import Ask, JobPolicy, ScoringJob
from .documents import job_documents
from .request import InvalidRagField, parse_documents, parse_labels
from .scorer import RagScorer

__all__ = ["CaseError", "load_cases", "score_cases"]


class CaseError(ValueError):
    """A line of the cases file is not a case; the message names the line."""


def _job(line: str, number: int, model: str) -> ScoringJob:
    case = json.loads(line)
    if not isinstance(case, dict):
        raise ValueError("a case must be a JSON object")
    question, answer = case.get("question"), case.get("answer")
    if not isinstance(question, str) or not isinstance(answer, str):
        raise ValueError("'question' and 'answer' must be strings")
    documents = parse_documents(case.get("documents"))
    labels = parse_labels(case)
    return ScoringJob(
        id=str(case.get("id", f"case-{number}")),
        model=model,
        question=question,
        answer=answer,
        documents=job_documents(documents),
        policy=JobPolicy(rag=labels),
    )


def load_cases(path: Path, model: str) -> list[ScoringJob]:
    """One scoring job per non-empty line; raises ``CaseError`` naming the first bad line.

    Ids must be unique: the evaluation cache and the report key each case by its id.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise CaseError(f"{path}: not UTF-8 text ({exc})") from exc
    jobs: list[ScoringJob] = []
    lines: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            job = _job(line, number, model)
        except (ValueError, InvalidRagField) as exc:
            raise CaseError(f"{path}:{number}: {exc}") from exc
        if job.id in lines:
            raise CaseError(f"{path}:{number}: id {job.id!r} was already used on line {lines[job.id]}")
        lines[job.id] = number
        jobs.append(job)
    if not jobs:
        raise CaseError(f"{path}: no cases (one JSON object per line)")
    return jobs


async def score_cases(
    jobs: Sequence[ScoringJob],
    scorer: RagScorer,
    ask_for: Callable[[ScoringJob], Ask],
    *,
    concurrency: int = 4,
    on_done: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Each case's ``rag`` details, with its id and the upstream calls its judge made, in file order.

    ``ask_for(job)`` gives the judge's ``Ask`` per case, so that a caller can
    remember each case's calls apart (the evaluation cache does).
    """
    slots = asyncio.Semaphore(concurrency)

    async def one(job: ScoringJob) -> dict[str, Any]:
        async with slots:
            result = await scorer.score(job, ask_for(job))
        details = result.details.model_dump() if isinstance(result.details, BaseModel) else result.details
        case = {"id": job.id, **details, "value": result.value, "upstream_calls": result.upstream_calls}
        if on_done is not None:
            on_done(case)
        return case

    return list(await asyncio.gather(*(one(job) for job in jobs)))
