"""A key's lifetime as LiteLLM writes it (``duration``: ``30s``, ``30m``, ``1h``, ``7d``, ``2w``, ``1mo``).

A whole number and a unit, ``s`` seconds, ``m`` minutes, ``h`` hours, ``d``
days, ``w`` weeks, ``mo`` calendar months (the same day of a later month, or
its last day), as LiteLLM's proxy reads a key's ``duration``; the moment it
ends is what a key keeps, so that every replica agrees on it.
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, datetime

__all__ = ["DurationError", "ends_after"]

_FORM = re.compile(r"(\d+)(mo|[smhdw])")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_LONGEST_DAYS = 100 * 366  # a lifetime past a century is a typo, and past datetime's range a crash


class DurationError(ValueError):
    """Not a duration in LiteLLM's words; the message names the forms that are."""


def ends_after(duration: str, start: float) -> float:
    """The moment (Unix seconds) ``duration`` after ``start`` ends."""
    match = _FORM.fullmatch(duration.strip())
    if match is None or int(match.group(1)) < 1:
        raise DurationError(f"{duration!r} is not a duration: a whole number and a unit (30s, 30m, 1h, 7d, 2w, 1mo)")
    count, unit = int(match.group(1)), match.group(2)
    if unit != "mo":
        if count * _SECONDS[unit] > _LONGEST_DAYS * 86400:
            raise DurationError(f"{duration!r} is longer than a century")
        return start + count * _SECONDS[unit]
    if count > _LONGEST_DAYS // 31:
        raise DurationError(f"{duration!r} is longer than a century")
    moment = datetime.fromtimestamp(start, UTC)
    year, month = divmod(moment.month - 1 + count, 12)
    year += moment.year
    day = min(moment.day, calendar.monthrange(year, month + 1)[1])
    return moment.replace(year=year, month=month + 1, day=day).timestamp()
