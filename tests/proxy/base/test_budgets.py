"""A key's budget_duration, read as LiteLLM reads it, and the calendar windows its budget resets on."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from litellm.litellm_core_utils.duration_parser import duration_in_seconds

from proxy.base.budgets import BudgetPeriod, KeyBudget

pytestmark = pytest.mark.unit


def _at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%S")


@pytest.mark.parametrize("text", ["60s", "30m", "1h", "12h", "1d", "2d", "1w", "3w", "hourly", "daily", "weekly"])
def test_a_fixed_length_is_litellms(text: str) -> None:
    start, end = BudgetPeriod.parse(text).window(_at("2026-03-18T10:17:00"))
    assert end - start == duration_in_seconds(text)


@pytest.mark.parametrize(
    ("text", "at", "window"),
    [
        ("1d", "2026-03-18T10:17:05", ("2026-03-18T00:00:00", "2026-03-19T00:00:00")),  # from midnight, UTC
        ("daily", "2026-03-18T23:59:59", ("2026-03-18T00:00:00", "2026-03-19T00:00:00")),
        ("7d", "2026-03-18T10:17:05", ("2026-03-16T00:00:00", "2026-03-23T00:00:00")),  # from Monday
        ("1w", "2026-03-16T00:00:00", ("2026-03-16T00:00:00", "2026-03-23T00:00:00")),
        ("30d", "2026-02-28T10:00:00", ("2026-02-01T00:00:00", "2026-03-01T00:00:00")),  # monthly, as LiteLLM
        ("monthly", "2026-12-31T23:00:00", ("2026-12-01T00:00:00", "2027-01-01T00:00:00")),
        ("1mo", "2026-03-18T10:17:05", ("2026-03-01T00:00:00", "2026-04-01T00:00:00")),
        ("3mo", "2026-05-02T00:00:00", ("2026-04-01T00:00:00", "2026-07-01T00:00:00")),  # quarters
        ("1h", "2026-03-18T10:17:05", ("2026-03-18T10:00:00", "2026-03-18T11:00:00")),
        ("6h", "2026-03-18T10:17:05", ("2026-03-18T06:00:00", "2026-03-18T12:00:00")),
        ("15m", "2026-03-18T10:17:05", ("2026-03-18T10:15:00", "2026-03-18T10:30:00")),
        ("120s", "2026-03-18T10:17:05", ("2026-03-18T10:16:00", "2026-03-18T10:18:00")),
    ],
)
def test_windows_follow_the_calendar_in_utc(text: str, at: str, window: tuple[str, str]) -> None:
    start, end = BudgetPeriod.parse(text).window(_at(at))
    assert (_iso(start), _iso(end)) == window


@pytest.mark.parametrize("text", ["1d", "7d", "30d", "2mo", "45m", "3h", "5d"])
def test_each_window_begins_where_the_last_ended(text: str) -> None:
    period = BudgetPeriod.parse(text)
    start, end = period.window(_at("2026-03-18T10:17:05"))
    assert start <= _at("2026-03-18T10:17:05") < end
    assert period.window(end)[0] == end
    assert period.window(end - 1)[1] == end


@pytest.mark.parametrize("text", ["", "30", "d", "1.5h", "0d", "-1d", "1y", "30 days", "30s", "90s"])
def test_what_is_not_a_budget_duration_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="budget_duration"):
        BudgetPeriod.parse(text)


def test_a_budget_without_a_duration_never_resets() -> None:
    assert KeyBudget(5.0).window_start(_at("2026-03-18T10:17:05")) == 0.0
    monthly = KeyBudget(5.0, BudgetPeriod.parse("1mo"))
    assert _iso(monthly.window_start(_at("2026-03-18T10:17:05"))) == "2026-03-01T00:00:00"
