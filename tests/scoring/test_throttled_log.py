"""The gateway's and the scorers' one rate-limited log: first line at once, then one per interval."""

from __future__ import annotations

import logging

import pytest

from scoring.throttled_log import ThrottledLog

pytestmark = pytest.mark.unit


def test_a_repeated_event_is_logged_once_per_interval_and_says_what_it_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    throttled = ThrottledLog(logging.getLogger("trustgate.test"), interval_s=30, clock=lambda: now[0])
    with caplog.at_level(logging.DEBUG, logger="trustgate.test"):
        for second in (0, 5, 10, 29, 31):
            now[0] = second
            throttled.warning("store-full", "store queue full for %s", "records")
        throttled.debug("other", "another kind is not held back")
        now[0] = 100
        throttled.warning("store-full", "store queue full for %s", "records")
    lines = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert lines == [
        (logging.WARNING, "store queue full for records"),
        (logging.WARNING, "store queue full for records (3 more left out of the log since the last)"),
        (logging.DEBUG, "another kind is not held back"),
        (logging.WARNING, "store queue full for records"),
    ]
