"""A log line per kind of event per interval, for events that can repeat on every request.

A refused override, a skipped fallback, a full store queue, a scorer's failure
or a process out of file descriptors is worth a line for the operator, but an
event repeated on every request (or every accept) must not flood the log: the
first is logged at once, then at most one per interval, and a line after a
quiet spell says how many were left out. The counters in ``/metrics`` carry
the exact numbers. It lives in ``scoring`` so that both the gateway and the
scorers' failure log (``failures.py``) use this one implementation.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable

__all__ = ["ThrottledLog"]


class ThrottledLog:
    def __init__(
        self, logger: logging.Logger, *, interval_s: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._logger = logger
        self._interval_s = interval_s
        self._clock = clock
        # keyed by kind of event: bounded by the config and the code, never by what clients send
        self._logged_at: dict[Hashable, float] = {}
        self._left_out: dict[Hashable, int] = {}

    def admit(self, kind: Hashable) -> int | None:
        """How many of ``kind`` were left out since its last line if one may be logged now, else None.

        For callers whose line is costly to build (a formatted traceback):
        they build it only when admitted.
        """
        now = self._clock()
        last = self._logged_at.get(kind)
        if last is not None and now - last < self._interval_s:
            self._left_out[kind] = self._left_out.get(kind, 0) + 1
            return None
        self._logged_at[kind] = now
        return self._left_out.pop(kind, 0)

    def debug(self, kind: Hashable, message: str, *args: object) -> None:
        self.log(logging.DEBUG, kind, message, *args)

    def warning(self, kind: Hashable, message: str, *args: object) -> None:
        self.log(logging.WARNING, kind, message, *args)

    def log(self, level: int, kind: Hashable, message: str, *args: object) -> None:
        left_out = self.admit(kind)
        if left_out is None:
            return
        if left_out:
            message, args = message + " (%d more left out of the log since the last)", (*args, left_out)
        self._logger.log(level, message, *args)
