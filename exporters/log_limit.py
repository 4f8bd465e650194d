"""A warning that repeats at most once per interval, saying how many it stood for.

A failure that happens on every request (a full write queue, a process out of
file descriptors) would otherwise write one line per event: gigabytes of log
that hide everything else. The count is kept in a Prometheus counter by the
caller; this only keeps the log readable.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

__all__ = ["LogLimiter"]


class LogLimiter:
    """``warn`` logs the first event and then at most one line per ``interval_s``, with the suppressed count."""

    def __init__(self, logger: logging.Logger, interval_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._logger = logger
        self._interval_s = interval_s
        self._clock = clock
        self._next_at = float("-inf")
        self._suppressed = 0
        self._lock = threading.Lock()  # the store's writer and the event loop may both warn

    def warn(self, message: str, *args: object) -> bool:
        """Log ``message % args`` unless one was logged less than ``interval_s`` ago; True when logged."""
        with self._lock:
            now = self._clock()
            if now < self._next_at:
                self._suppressed += 1
                return False
            suppressed, self._suppressed = self._suppressed, 0
            self._next_at = now + self._interval_s
        if suppressed:
            message += " (%d more like this since the last such line)"
            args = (*args, suppressed)
        self._logger.warning(message, *args)
        return True
