"""Feedback replay: a labeled set through a real gateway, labels for the first half, the refit, then the rest.

Each question is asked through the gateway's chat endpoint (sync scoring), its
trust record read back, and the answer labelled by gold-answer matching. The
first half's labels are sent as feedback (``POST /v1/trust/{id}/feedback``), as
users would; the gateway refits on its own every ``refit_every`` labels, and
the replay waits until ``GET /v1/trust/calibration`` shows the refit on them.
The second half is then scored by whatever combination the gateway chose, and
is the held-out set the report measures: the learned Trust_OV (the record's
score), the default Trust_OV (kept beside it on the record), and the free
signals of the same records.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from scoring import OVDetails, TrustRecord, features_of

from .datasets import EvalItem
from .matching import gold_match

__all__ = ["ReplayAnswer", "ReplayOutcome", "ReplaySpec", "replay"]

RECORD_TIMEOUT_S = 900.0  # a sync request that outlived sync_timeout_s leaves a pending record to wait for
REFIT_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class ReplaySpec:
    model: str
    key: str  # the master key: feedback on every record, and the calibration endpoint
    system: str | None = None  # a system message before each question (None: the question alone)
    max_tokens: int = 48
    refit_every: int = 25
    # Ask for the answer's log-probabilities as a client may (logprobs with top_logprobs 1): an upstream that
    # gives none for ``logprobs`` alone (the embedded llama.cpp server) then still gives the gateway its lp.
    ask_logprobs: bool = False


@dataclass(frozen=True)
class ReplayAnswer:
    """One scored answer of the replay, as the report needs it."""

    item_id: str
    fed: bool  # its label was sent to the gateway (first half)
    correct: bool
    answer: str
    score: float | None  # Trust_OV as the gateway gave it
    default: float | None  # the default combination's Trust_OV of the same components
    method: str | None  # what made the score: the default's method, or "learned"
    fit_id: str | None
    informative: bool | None
    features: dict[str, float]


@dataclass
class ReplayOutcome:
    answers: list[ReplayAnswer] = field(default_factory=list)
    calibration: dict[str, Any] | None = None  # the gateway's report after the refit on the fed half
    failures: list[str] = field(default_factory=list)
    upstream_calls: int = 0


def _auth(spec: ReplaySpec) -> dict[str, str]:
    return {"authorization": f"Bearer {spec.key}"}


async def _record(client: httpx.AsyncClient, spec: ReplaySpec, record_id: str) -> TrustRecord:
    deadline = time.monotonic() + RECORD_TIMEOUT_S
    while True:
        response = await client.get(f"/v1/trust/{record_id}", headers=_auth(spec))
        response.raise_for_status()
        record = TrustRecord.model_validate(response.json())
        if record.status != "pending":
            return record
        if time.monotonic() > deadline:
            raise TimeoutError(f"trust record {record_id} still pending")
        await asyncio.sleep(0.5)


def _answer(item: EvalItem, record: TrustRecord, text: str, fed: bool) -> ReplayAnswer:
    ov = record.components.get("ov")
    details = ov.details if ov is not None and isinstance(ov.details, OVDetails) else OVDetails()
    learned = details.method == "learned"
    return ReplayAnswer(
        item_id=item.id,
        fed=fed,
        correct=gold_match(text, item.gold, item.question),
        answer=text,
        score=record.score,
        default=details.default if learned else record.score,
        method=details.method,
        fit_id=details.fit_id,
        informative=details.informative,
        features=features_of(record.components, text),
    )


async def _ask(client: httpx.AsyncClient, spec: ReplaySpec, item: EvalItem, fed: bool) -> tuple[ReplayAnswer, int]:
    messages = ([{"role": "system", "content": spec.system}] if spec.system else []) + [
        {"role": "user", "content": item.question}
    ]
    response = await client.post(
        "/v1/chat/completions",
        headers={**_auth(spec), "x-trustgate-mode": "sync"},
        json={
            "model": spec.model,
            "messages": messages,
            "max_tokens": spec.max_tokens,
            "temperature": 0,
            **({"logprobs": True, "top_logprobs": 1} if spec.ask_logprobs else {}),
        },
    )
    response.raise_for_status()
    text = str(response.json()["choices"][0]["message"].get("content") or "").strip()
    record = await _record(client, spec, response.headers["x-trust-id"])
    answer = _answer(item, record, text, fed)
    if fed:
        label = await client.post(
            f"/v1/trust/{record.id}/feedback", headers=_auth(spec), json={"correct": answer.correct}
        )
        label.raise_for_status()
    return answer, 1 + record.upstream_calls


async def _calibration(client: httpx.AsyncClient, spec: ReplaySpec, labels: int) -> dict[str, Any] | None:
    """The gateway's report on at least ``labels`` labels, once its refit has written it."""
    deadline = time.monotonic() + REFIT_TIMEOUT_S
    while time.monotonic() < deadline:
        response = await client.get("/v1/trust/calibration", headers=_auth(spec))
        response.raise_for_status()
        for entry in response.json()["data"]:
            if entry["model"] == spec.model and entry["labels"] >= labels:
                return dict(entry)
        await asyncio.sleep(1.0)
    return None


async def replay(
    client: httpx.AsyncClient,
    spec: ReplaySpec,
    items: Sequence[EvalItem],
    *,
    on_done: Callable[[], None] = lambda: None,
) -> ReplayOutcome:
    """Feedback for the first half (rounded down to whole refits), the refit, then the held-out half.

    The wait is for a refit on the labels actually sent (an item that failed sent none), rounded down to
    the last refit the gateway made on its own.
    """
    fed_count = (len(items) // 2) // spec.refit_every * spec.refit_every
    outcome = ReplayOutcome()
    for index, item in enumerate(items):
        if index == fed_count and fed_count:
            sent = sum(answer.fed for answer in outcome.answers)
            outcome.calibration = await _calibration(client, spec, sent // spec.refit_every * spec.refit_every)
        try:
            answer, calls = await _ask(client, spec, item, fed=index < fed_count)
        except (httpx.HTTPError, TimeoutError, KeyError) as exc:
            outcome.failures.append(f"{item.id}: {type(exc).__name__}: {exc}"[:300])
            on_done()
            continue
        outcome.answers.append(answer)
        outcome.upstream_calls += calls
        on_done()
    return outcome
