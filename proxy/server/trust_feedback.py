"""POST /v1/trust/{id}/feedback: a user's label on a scored answer — was it right?

Labels are what the gateway learns each model from. A label is scoped like a
read: the record's own key or an admin key; another key's record is a 404,
exactly as for ``GET /v1/trust/{id}``. A record keeps its latest label and
when it arrived. A bad body, an unknown id, or a record that takes no label
(still pending, or never scored) is refused in OpenAI's error shape and
nothing is stored. The function behind the handler takes the gateway and the
caller, so the console labels through exactly the same rules.
"""

from __future__ import annotations

import time

from fastapi import APIRouter, Request, Response
from pydantic import ValidationError

from scoring import Feedback, FeedbackRefused, TrustRecord

from ..base.errors import InvalidRequest, NotFound
from .auth import Caller
from .gateway import Gateway
from .json_body import json_object
from .request_context import gateway_of, read_body

__all__ = ["MAX_FEEDBACK_BODY", "label_record", "parse_feedback", "router"]

router = APIRouter()

# A label and a short comment (MAX_FEEDBACK_COMMENT characters, up to 4 bytes each) fit well within this.
MAX_FEEDBACK_BODY = 16 * 1024
_SET_BY_GATEWAY = "labelled_at"


def parse_feedback(raw: bytes, now: float) -> Feedback:
    """The label in a request body; a 400 naming the bad field. The gateway sets when it was labelled."""
    body = json_object(raw, "invalid_feedback")
    if _SET_BY_GATEWAY in body:
        raise InvalidRequest(
            f"`{_SET_BY_GATEWAY}` is set by the gateway", param=_SET_BY_GATEWAY, code="invalid_feedback"
        )
    try:
        return Feedback.model_validate({**body, _SET_BY_GATEWAY: now})
    except ValidationError as exc:
        error = exc.errors()[0]
        param = str(error["loc"][0]) if error["loc"] else None
        message = "unknown field" if error["type"] == "extra_forbidden" else error["msg"]
        raise InvalidRequest(f"Invalid `{param}`: {message}", param=param, code="invalid_feedback") from exc


async def label_record(gateway: Gateway, caller: Caller, record_id: str, feedback: Feedback) -> TrustRecord:
    """Keep the label, count it and emit its event; the record as labelled."""
    try:
        record = await gateway.trust.label(record_id, feedback, caller.record_scope)
    except FeedbackRefused as exc:
        reason = "is still being scored" if exc.status == "pending" else f"was not scored ({exc.status})"
        raise InvalidRequest(
            f"Trust record `{record_id}` {reason}: it takes no feedback",
            param="id",
            code="trust_record_not_scored",
            status_code=409,
        ) from None
    if record is None:  # missing, or another key's: the same answer as a read, so ids cannot be probed
        raise NotFound(f"No trust record with id `{record_id}`", param="id", code="trust_record_not_found")
    gateway.telemetry.emit_feedback(record)
    if gateway.learning is not None and record.model is not None:  # refits every refit_every labels, off the loop
        gateway.learning.note_label(record.model)
    return record


@router.post("/v1/trust/{record_id}/feedback")
async def post_feedback(record_id: str, request: Request) -> Response:
    gateway = gateway_of(request)
    caller = await gateway.keys.authenticate(request.headers.get("authorization"))
    feedback = parse_feedback(await read_body(request, MAX_FEEDBACK_BODY), time.time())
    record = await label_record(gateway, caller, record_id, feedback)
    # As a read shows it: another key's blocked answer is not sent to an admin key other than the master key.
    return Response(caller.record_scope.shown(record).model_dump_json(), media_type="application/json")
