"""Jinja2 filters: how the console writes times, scores and excerpts."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment

__all__ = ["register_filters"]

MISSING = "—"
# A record's timings and details by the names people read, not the record's field names.
FIELD_LABELS = {"queued_s": "Waited in the queue", "scoring_s": "Scoring took", "generation_s": "Distractors took"}
# Why a record was not scored (scoring.policy.skip_reason), as a person would say it.
SKIP_REASONS = {
    "tool_calls": "the answer calls tools (no text to score)",
    "empty": "the answer is empty",
    "refusal": "the answer is a refusal",
}
SKIPPED_PREFIX = "skipped: "


def when(seconds: float | None) -> str:
    return MISSING if seconds is None else time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


def clock(seconds: float | None) -> str:
    """A table cell's time: UTC, said once in the column header."""
    return MISSING if seconds is None else time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))


def figure(value: float | None, digits: int = 2) -> str:
    return MISSING if value is None else f"{value:.{digits}f}"


def percent(value: float | None) -> str:
    return MISSING if value is None else f"{value:.0%}"


def usd(value: float | None) -> str:
    """Dollars: cents for what is worth them, six decimals below a cent, where scoring's calls often cost."""
    if value is None:
        return MISSING
    return f"${value:,.2f}" if value >= 0.01 or value == 0 else f"${value:.6f}"


def first_words(text: str | None, count: int = 12) -> str:
    if not text:
        return MISSING
    words = text.split()
    return " ".join(words[:count]) + (" …" if len(words) > count else "")


def seconds(value: float | None) -> str:
    if value is None:
        return MISSING
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def field_label(name: str) -> str:
    """``queued_s`` → "Waited in the queue"; a name without a label of its own is at least words."""
    return FIELD_LABELS.get(name) or name.removesuffix("_s").replace("_", " ").capitalize()


def skip_reason(error: str | None) -> str:
    """What a skipped record's ``error`` field (``skipped: tool_calls``) means: not a failure, a reason."""
    reason = (error or "").removeprefix(SKIPPED_PREFIX)
    return "Not scored: " + SKIP_REASONS.get(reason, reason.replace("_", " ") or "nothing to score")


def input_time(value: datetime | None) -> str:
    """A datetime-local input's value: the UTC wall time (the form labels its fields UTC)."""
    if value is None:
        return ""
    utc = value.astimezone(UTC) if value.tzinfo else value
    return utc.strftime("%Y-%m-%dT%H:%M:%S")


def query_string(params: dict[str, Any]) -> str:
    return urlencode({k: str(v).lower() if isinstance(v, bool) else v for k, v in params.items() if v is not None})


def register_filters(env: Environment) -> None:
    env.filters.update(
        when=when,
        clock=clock,
        figure=figure,
        percent=percent,
        usd=usd,
        first_words=first_words,
        seconds=seconds,
        input_time=input_time,
        query_string=query_string,
        field_label=field_label,
        skip_reason=skip_reason,
    )
