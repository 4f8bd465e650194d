"""Spend is read back as the fewest buckets that tile a span: days in the middle, hours and minutes at its ends."""

from __future__ import annotations

import itertools
import random

import pytest

from exporters.spend_store import DAY, HOUR, MINUTE, buckets

pytestmark = pytest.mark.unit

NOW = 1_800_000_000.0  # a moment to count retention from


def _covered(found: list[tuple[int, int]]) -> tuple[int, int]:
    """The span the buckets cover, checked to be one piece with no gap or overlap."""
    for (size, start), (_, after) in itertools.pairwise(found):
        assert start + size == after
    return found[0][1], found[-1][1] + found[-1][0]


@pytest.mark.parametrize("seed", range(20))
def test_buckets_tile_the_span_from_its_first_minute_to_its_last(seed: int) -> None:
    draw = random.Random(seed)
    until = NOW - draw.uniform(0, DAY)
    since = until - draw.uniform(0, 30 * DAY)
    found = buckets(since, until, now=NOW)
    start, end = _covered(found)
    if since >= NOW - 2 * DAY:  # minutes are kept two days: counted from the minute since falls in
        assert start == since // MINUTE * MINUTE
    else:  # older: from the whole hour
        assert start == since // HOUR * HOUR
    assert end == (until // MINUTE + 1) * MINUTE
    assert all(start % size == 0 for size, start in found)
    assert len(found) <= 2 * 60 + 2 * 24 + 31  # never a month of minutes


def test_a_month_is_read_as_days_with_hours_and_minutes_at_its_end() -> None:
    month_start = NOW // DAY * DAY - 20 * DAY
    until = month_start + 20 * DAY + 5 * HOUR + 30 * MINUTE + 10
    sizes = [size for size, _ in buckets(month_start, until, now=until)]
    assert sizes == [DAY] * 20 + [HOUR] * 5 + [MINUTE] * 31


def test_nothing_older_than_the_days_kept_is_read() -> None:
    assert _covered(buckets(0.0, NOW, now=NOW))[0] >= NOW - 801 * DAY
