"""Scoring's budget is counted in one-minute windows of the wall clock: a test whose requests must share one
waits out a window about to end."""

from __future__ import annotations

import time


def in_one_window(seconds: float) -> None:
    """Wait out the current minute if fewer than ``seconds`` of it are left (the budget's window)."""
    left = 60 - time.time() % 60
    if left < seconds:
        time.sleep(left + 0.05)
