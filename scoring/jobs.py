"""Turn a chat request and its answer into a ScoringJob (pure: plain dicts in, a job out)."""

from __future__ import annotations

from typing import Any

from .types import Applicability, CallCost, JobPolicy, SamplingParams, ScoringJob

__all__ = ["last_question", "message_text", "scoring_job"]


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type", "text") == "text"
        )
    return str(content or "")


def _last_user(messages: list[dict[str, Any]]) -> int | None:
    return max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=None)


def last_question(messages: list[dict[str, Any]]) -> str:
    """The text of the last user message: what an answer answers ("" when there is none)."""
    last_user = _last_user(messages)
    return message_text(messages[last_user]) if last_user is not None else ""


def scoring_job(
    job_id: str,
    model: str,
    messages: list[dict[str, Any]],
    answer: str,
    answer_logprobs: list[float] | None = None,
    policy: JobPolicy | None = None,
    documents: list[dict[str, Any]] | None = None,
    owner: str | None = None,
    completion_id: str | None = None,
    traceparent: str | None = None,
    logprobs_absent: str | None = None,
    request_id: str | None = None,
    asked_model: str | None = None,
    sampling: SamplingParams | None = None,
    applicability: Applicability | None = None,
    answer_cost: CallCost | None = None,
) -> ScoringJob:
    """The question is the last user message; everything before it is context."""
    last_user = _last_user(messages)
    question = last_question(messages)
    context = messages[:last_user] if last_user is not None else list(messages)
    return ScoringJob(
        id=job_id,
        model=model,
        owner=owner,
        question=question,
        answer=answer,
        context=context,
        answer_logprobs=answer_logprobs,
        policy=policy or JobPolicy(),
        documents=documents,
        completion_id=completion_id or None,
        traceparent=traceparent,
        logprobs_absent=logprobs_absent,
        request_id=request_id,
        asked_model=asked_model,
        sampling=sampling or SamplingParams(),
        applicability=applicability,
        answer_cost=answer_cost,
    )
