"""The seams between scoring and its neighbours: jobs in, component results and trust records out.

Every exporter and the result API read a ``TrustRecord``; it is the same JSON
shape in memory, in SQLite and in Redis. Scorers see only a ``ScoringJob`` and
an ``Ask`` callable, never HTTP types, so they run the same in the gateway, in
a worker process and in tests.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

__all__ = [
    "Ask",
    "ComponentResult",
    "RecordScope",
    "Reply",
    "Scorer",
    "ScoringJob",
    "StoreUnavailable",
    "TrustRecord",
    "TrustStatus",
]

TrustStatus = Literal["pending", "done", "failed", "shed", "skipped"]


class Reply(BaseModel):
    """One upstream answer as a scorer needs it."""

    text: str
    # Per generated token, its top alternatives as {token: logprob}; None when the
    # upstream returns no log-probabilities.
    top_logprobs: list[dict[str, float]] | None = None


class Ask(Protocol):
    """Ask the *same* deployment that produced the answer; each call is one upstream call."""

    def __call__(self, messages: list[dict[str, Any]], *, max_tokens: int = 16, temperature: float = 0.0,
                 logprobs: bool = False, top_logprobs: int | None = None) -> Awaitable[Reply]: ...


class ScoringJob(BaseModel):
    id: str
    model: str
    owner: str | None = None  # the name of the key that asked, carried to the record (never the key)
    question: str
    answer: str
    context: list[dict[str, Any]] = Field(default_factory=list)  # the conversation before the answer
    answer_logprobs: list[float] | None = None
    documents: list[dict[str, Any]] | None = None
    policy: dict[str, Any] = Field(default_factory=dict)
    created_at: float = Field(default_factory=time.time)
    # Joins the scores to the request they score: the upstream's completion id (``chatcmpl-…``)
    # and the request span's W3C traceparent (None when tracing is off).
    completion_id: str | None = None
    traceparent: str | None = None


class ComponentResult(BaseModel):
    """One scorer's verdict: a value in [0, 1] (None when it could not score) and why."""

    component: str
    value: float | None = Field(default=None, ge=0.0, le=1.0)
    label: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    upstream_calls: int = 0
    duration_s: float = 0.0
    error: str | None = None


class Scorer(Protocol):
    name: str

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult: ...


class StoreUnavailable(Exception):
    """A record store cannot answer now (Redis down, database unreadable): "try again", never "no such record"."""


class TrustRecord(BaseModel):
    id: str
    status: TrustStatus
    model: str | None = None
    # The name of the key that asked (never the key): only that key, or an admin, may read the record.
    # None on records written before owners were kept; those are for admins only.
    owner: str | None = None
    components: dict[str, ComponentResult] = Field(default_factory=dict)
    score: float | None = None  # Trust_OV (or the best available component)
    probability: float | None = None  # calibrated, when a calibration file is loaded
    label: str | None = None  # trusted / uncertain / untrusted
    error: str | None = None
    created_at: float = Field(default_factory=time.time)
    finished_at: float | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    # What was scored, so that a reader of the record (the console) can see the score's subject.
    question: str | None = None
    answer: str | None = None

    @classmethod
    def for_job(cls, job: ScoringJob, status: TrustStatus, **fields: Any) -> TrustRecord:
        """A record of ``job``: its id, model, owner and creation time carried over, so none is ever lost."""
        return cls(id=job.id, status=status, model=job.model, owner=job.owner, created_at=job.created_at, **fields)

    @property
    def upstream_calls(self) -> int:
        return sum(c.upstream_calls for c in self.components.values())


@dataclass(frozen=True)
class RecordScope:
    """Whose trust records a reader may see: one key's (by name), or everyone's (master and admin keys).

    Every record read — by id today, a listing later — goes through a scope, so
    a store can filter by owner itself (SQLite: ``WHERE owner = ?``) rather than
    leave the check to each endpoint.
    """

    owner: str | None  # None: every record

    @classmethod
    def everyone(cls) -> RecordScope:
        return cls(owner=None)

    @classmethod
    def owned_by(cls, name: str) -> RecordScope:
        return cls(owner=name)

    def allows(self, record: TrustRecord) -> bool:
        return self.owner is None or record.owner == self.owner
