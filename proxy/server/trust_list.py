"""GET /v1/trust and GET /v1/trust/summary: many trust records at once, for their owner (or an admin).

The query parameters are typed models; a bad one is a 400 in OpenAI's error
shape naming the parameter. The functions behind the handlers take the
gateway and the caller, so the console (an app on top) reads through exactly
the same ownership rule as the API.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TypeVar

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from starlette.datastructures import QueryParams

from exporters.record_query import RecordPage, RecordQuery
from exporters.record_summary import TrustSummary
from scoring import TrustRecord

from ..base.errors import InvalidRequest
from .auth import Caller
from .gateway import Gateway

__all__ = ["SummaryQuery", "list_records", "parse_params", "router", "summarize_records"]

router = APIRouter()

Params = TypeVar("Params", bound=BaseModel)

DEFAULT_WINDOW_S = 24 * 3600
MAX_BUCKETS = 200


class SummaryQuery(BaseModel):
    """The overview's window (default: the last 24 hours) cut into ``buckets`` for the low-trust rate."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    since: datetime | None = None
    until: datetime | None = None
    buckets: int = Field(default=24, ge=1, le=MAX_BUCKETS)

    @model_validator(mode="after")
    def _ordered(self) -> SummaryQuery:
        if self.since is not None and self.until is not None and self.since >= self.until:
            raise ValueError("since must be before until")
        return self

    def window(self, now: float) -> tuple[float, float]:
        until = _seconds(self.until) if self.until is not None else now
        since = _seconds(self.since) if self.since is not None else until - DEFAULT_WINDOW_S
        if since >= until:
            raise InvalidRequest("since must be before until", param="since", code="invalid_filter")
        return since, until


def _seconds(value: datetime) -> float:
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()


def parse_params(model: type[Params], params: QueryParams) -> Params:
    """The query string as ``model``; a repeated, unknown or invalid parameter is a 400 naming it."""
    repeated = sorted({key for key in params if len(params.getlist(key)) > 1})
    if repeated:
        raise InvalidRequest(
            f"Query parameter `{repeated[0]}` given more than once", param=repeated[0], code="invalid_filter"
        )
    try:
        return model.model_validate(dict(params))
    except ValidationError as exc:
        error = exc.errors()[0]
        param = str(error["loc"][0]) if error["loc"] else None
        where = f"query parameter `{param}`" if param else "query"
        message = error["msg"] if error["type"] != "extra_forbidden" else "unknown parameter"
        raise InvalidRequest(f"Invalid {where}: {message}", param=param, code="invalid_filter") from exc


async def list_records(gateway: Gateway, caller: Caller, query: RecordQuery) -> RecordPage:
    return await gateway.trust.list_records(query, caller.record_scope)


async def summarize_records(gateway: Gateway, caller: Caller, query: SummaryQuery) -> TrustSummary:
    since, until = query.window(time.time())
    return await gateway.trust.summarize(caller.record_scope, since=since, until=until, buckets=query.buckets)


class RecordList(BaseModel):
    """OpenAI's list shape, with the cursor for the next page."""

    object: str = "list"
    data: list[TrustRecord]
    has_more: bool
    next_cursor: str | None


@router.get("/v1/trust")
async def get_trust_records(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    caller = await gateway.keys.authenticate(request.headers.get("authorization"))
    page = await list_records(gateway, caller, parse_params(RecordQuery, request.query_params))
    body = RecordList(data=page.data, has_more=page.next_cursor is not None, next_cursor=page.next_cursor)
    return Response(body.model_dump_json(), media_type="application/json")


@router.get("/v1/trust/summary")
async def get_trust_summary(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    caller = await gateway.keys.authenticate(request.headers.get("authorization"))
    summary = await summarize_records(gateway, caller, parse_params(SummaryQuery, request.query_params))
    return Response(summary.model_dump_json(), media_type="application/json")
