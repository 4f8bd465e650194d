"""POST /v1/trust/{id}/feedback: a user's label on a scored answer — was it right?

Labels are what the gateway learns each model from. A label is scoped like a
read: the record's own key or an admin key; another key's record is a 404,
exactly as for ``GET /v1/trust/{id}``. A record keeps its latest label, when
it arrived and the name of the key that gave it (``by``), which decides what
it teaches (``scoring.learning.teachers``: the shared fit learns only from the
master key and labellers). A relabel replaces the label and never brings a
refit nearer. Each key may send ``feedback.labels_per_minute`` labels a minute;
past that it gets a 429 with ``retry-after``. A bad body, an unknown id, or a
record that takes no label (still pending, or never scored) is refused in
OpenAI's error shape and nothing is stored. The function behind the handler
takes the gateway and the caller, so the console labels through exactly the
same rules.
"""

from __future__ import annotations

import time

from fastapi import APIRouter, Request, Response
from pydantic import ValidationError

from scoring import Feedback, FeedbackRefused, TrustRecord

from ..base.errors import InvalidRequest, NotFound, RateLimited
from .auth import Caller
from .gateway import Gateway
from .json_body import json_object
from .request_context import gateway_of, read_body

__all__ = ["MAX_FEEDBACK_BODY", "label_record", "parse_feedback", "router", "within_label_rate"]

router = APIRouter()

# A label and a short comment (MAX_FEEDBACK_COMMENT characters, up to 4 bytes each) fit well within this.
MAX_FEEDBACK_BODY = 16 * 1024
_SET_BY_GATEWAY = ("labelled_at", "by")
_FEEDBACK_LIMIT = "feedback"  # the limiter's counter kind for labels, apart from every other kind


def parse_feedback(raw: bytes, now: float, by: str) -> Feedback:
    """The label in a request body; a 400 naming the bad field. The gateway sets when it was labelled and by
    which key (its name)."""
    body = json_object(raw, "invalid_feedback")
    for field in _SET_BY_GATEWAY:
        if field in body:
            raise InvalidRequest(f"`{field}` is set by the gateway", param=field, code="invalid_feedback")
    try:
        return Feedback.model_validate({**body, "labelled_at": now, "by": by})
    except ValidationError as exc:
        error = exc.errors()[0]
        param = str(error["loc"][0]) if error["loc"] else None
        message = "unknown field" if error["type"] == "extra_forbidden" else error["msg"]
        raise InvalidRequest(f"Invalid `{param}`: {message}", param=param, code="invalid_feedback") from exc


async def within_label_rate(gateway: Gateway, caller: Caller) -> None:
    """Count one label of ``caller``; a 429 with ``retry-after`` past ``feedback.labels_per_minute``."""
    limit = gateway.settings.trustgate.scoring.feedback.labels_per_minute
    if limit is None:
        return
    wait = await gateway.limits.count_one(_FEEDBACK_LIMIT, caller.name, limit)
    if wait is not None:
        gateway.metrics.feedback_refused.labels(key=caller.name).inc()
        raise RateLimited(
            f"Rate limit reached: labels per minute ({limit})", code="feedback_rate_limit_exceeded", retry_after=wait
        )


async def label_record(gateway: Gateway, caller: Caller, record_id: str, feedback: Feedback) -> TrustRecord:
    """Keep the label, count it and emit its event; the record as labelled."""
    try:
        labelled = await gateway.trust.label(record_id, feedback, caller.record_scope)
    except FeedbackRefused as exc:
        reason = "is still being scored" if exc.status == "pending" else f"was not scored ({exc.status})"
        raise InvalidRequest(
            f"Trust record `{record_id}` {reason}: it takes no feedback",
            param="id",
            code="trust_record_not_scored",
            status_code=409,
        ) from None
    if labelled is None:  # missing, or another key's: the same answer as a read, so ids cannot be probed
        raise NotFound(f"No trust record with id `{record_id}`", param="id", code="trust_record_not_found")
    gateway.telemetry.emit_feedback(labelled.record)
    if gateway.refits is not None:  # counts the label; every refit_every new records, a refit in its own process
        gateway.refits.note_label(labelled)
    return labelled.record


@router.post("/v1/trust/{record_id}/feedback")
async def post_feedback(record_id: str, request: Request) -> Response:
    gateway = gateway_of(request)
    caller = await gateway.keys.authenticate(request.headers.get("authorization"))
    await within_label_rate(gateway, caller)
    feedback = parse_feedback(await read_body(request, MAX_FEEDBACK_BODY), time.time(), caller.name)
    record = await label_record(gateway, caller, record_id, feedback)
    # As a read shows it: another key's blocked answer is not sent to an admin key other than the master key.
    return Response(caller.record_scope.shown(record).model_dump_json(), media_type="application/json")
