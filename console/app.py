"""The trust console's routes: one page shell, and HTML fragments behind the gateway's keys.

The shell (``/ui``, ``/ui/records``, ``/ui/records/{id}``) holds no data and
needs no key. Its script keeps the key the person typed in session storage
and fetches the fragment for the current address with the key as a bearer
header, so a key never appears in a URL, a log line or the browser history.
Fragments are rendered server-side (Jinja2, autoescaped: answers are
untrusted text) through the same listing functions and ownership rule as the
JSON API. A label set on a record's page goes to the API itself
(``POST /v1/trust/{id}/feedback``), with the same key.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape
from pydantic import BaseModel, ConfigDict

from exporters.record_query import RecordQuery
from proxy import (
    Caller,
    Gateway,
    NotFound,
    SummaryQuery,
    calibration_standings,
    list_records,
    parse_params,
    summarize_records,
)
from scoring import FEEDBACK_STATUSES, MAX_FEEDBACK_COMMENT

from .charts import histogram, rate_line, reliability_chart, roc_chart
from .explain import explain
from .format import register_filters

__all__ = ["mount"]

PACKAGE = Path(__file__).resolve().parent
WINDOWS_S = {"1h": 3600, "6h": 6 * 3600, "24h": 24 * 3600, "7d": 7 * 24 * 3600}
RATE_BUCKETS = 24  # the low-trust rate's steps over the window: an hour each over a day
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'",
    "cache-control": "no-store",  # fragments hold questions and answers
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
}


class OverviewQuery(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    window: Literal["1h", "6h", "24h", "7d"] = "24h"


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(PACKAGE / "templates"),
        autoescape=select_autoescape(default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    register_filters(env)
    return env


def _router(env: Environment) -> APIRouter:
    router = APIRouter(prefix="/ui", include_in_schema=False)

    def render(template: str, **context: Any) -> HTMLResponse:
        return HTMLResponse(env.get_template(template).render(**context), headers=SECURITY_HEADERS)

    async def caller_of(request: Request) -> Caller:
        gateway: Gateway = request.app.state.gateway
        return await gateway.keys.authenticate(request.headers.get("authorization"))

    @router.get("")
    @router.get("/calibration")
    @router.get("/records")
    @router.get("/records/{record_id}")
    async def shell() -> HTMLResponse:
        return render("shell.html")

    @router.get("/partials/overview")
    async def overview(request: Request) -> HTMLResponse:
        caller = await caller_of(request)
        window = parse_params(OverviewQuery, request.query_params).window
        now = time.time()
        gateway: Gateway = request.app.state.gateway
        since = now - WINDOWS_S[window]
        summary = await summarize_records(
            gateway, caller, SummaryQuery.model_validate({"since": since, "until": now, "buckets": RATE_BUCKETS})
        )
        # Every key's spend: shown to a caller who reads every key's records
        everyone = caller.record_scope.owner is None
        spend = await gateway.spending.by_model(gateway.upstream.model_groups, since) if everyone else {}
        return render(
            "overview.html",
            summary=summary,
            spend=spend,
            window=window,
            windows=list(WINDOWS_S),
            histograms={model: histogram(part.histogram) for model, part in summary.models.items()},
            line=rate_line(summary.low_trust, summary.since, summary.until),
            caller=caller,
        )

    @router.get("/partials/calibration")
    async def calibration(request: Request) -> HTMLResponse:
        standings = await calibration_standings(request.app.state.gateway, await caller_of(request))  # master key only
        charted = [
            (s, None if s.report is None else (roc_chart(s.report.scores), reliability_chart(s.report.scores)))
            for s in standings
        ]
        return render("calibration.html", standings=charted)

    @router.get("/partials/records")
    async def records(request: Request) -> HTMLResponse:
        caller = await caller_of(request)
        query = parse_params(RecordQuery, request.query_params)
        page = await list_records(request.app.state.gateway, caller, query)
        next_params = None
        if page.next_cursor is not None:
            next_params = {
                **query.model_dump(mode="json", exclude_none=True, exclude_defaults=True),
                "cursor": page.next_cursor,
            }
        return render("records.html", page=page, query=query, next_params=next_params, caller=caller)

    @router.get("/partials/records/{record_id}")
    async def record(request: Request, record_id: str) -> HTMLResponse:
        caller = await caller_of(request)
        found = await request.app.state.gateway.trust.lookup(record_id, caller.record_scope)
        if found is None:  # missing, or another key's: the same answer
            raise NotFound(f"No trust record with id `{record_id}`", param="id", code="trust_record_not_found")
        return render(
            "record.html",
            view=explain(found),
            caller=caller,
            labellable=found.status in FEEDBACK_STATUSES,
            max_comment=MAX_FEEDBACK_COMMENT,
        )

    return router


async def favicon() -> FileResponse:
    """The console's icon where browsers look by default: the shell names its own, but a browser asks
    ``/favicon.ico`` of any page without one (a fragment opened on its own, the gateway's JSON)."""
    return FileResponse(PACKAGE / "static" / "favicon.ico", media_type="image/x-icon")


def mount(app: FastAPI) -> None:
    """Serve the console at /ui on ``app`` (the gateway's ``mounts`` hook), and its icon at /favicon.ico."""
    app.include_router(_router(_environment()))
    app.add_api_route("/favicon.ico", favicon, include_in_schema=False)
    app.mount("/ui/static", StaticFiles(directory=PACKAGE / "static"), name="console-static")
