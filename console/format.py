"""Jinja2 filters: how the console writes times, scores and excerpts."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment

__all__ = ["register_filters"]

MISSING = "—"


def when(seconds: float | None) -> str:
    return MISSING if seconds is None else time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


def clock(seconds: float | None) -> str:
    """A table cell's time: UTC, said once in the column header."""
    return MISSING if seconds is None else time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))


def figure(value: float | None, digits: int = 2) -> str:
    return MISSING if value is None else f"{value:.{digits}f}"


def percent(value: float | None) -> str:
    return MISSING if value is None else f"{value:.0%}"


def first_words(text: str | None, count: int = 12) -> str:
    if not text:
        return MISSING
    words = text.split()
    return " ".join(words[:count]) + (" …" if len(words) > count else "")


def seconds(value: float | None) -> str:
    if value is None:
        return MISSING
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def input_time(value: datetime | None) -> str:
    """A datetime-local input's value: the UTC wall time (the form labels its fields UTC)."""
    if value is None:
        return ""
    utc = value.astimezone(UTC) if value.tzinfo else value
    return utc.strftime("%Y-%m-%dT%H:%M:%S")


def query_string(params: dict[str, Any]) -> str:
    return urlencode({k: str(v).lower() if isinstance(v, bool) else v for k, v in params.items() if v is not None})


def register_filters(env: Environment) -> None:
    env.filters.update(when=when, clock=clock, figure=figure, percent=percent, first_words=first_words, seconds=seconds,
                       input_time=input_time, query_string=query_string)
