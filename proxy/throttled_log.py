"""A log line per kind of event per interval, for events that can repeat on every request.

A refused override, a skipped fallback, a full store queue or a process out of
file descriptors is worth a line for the operator, but an event repeated on
every request (or every accept) must not flood the log; the counters in
``/metrics`` carry the exact numbers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable

__all__ = ["ThrottledLog"]


class ThrottledLog:
    def __init__(self, logger: logging.Logger, *, interval_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._logger = logger
        self._interval_s = interval_s
        self._clock = clock
        self._last: dict[Hashable, float] = {}  # keyed by kind of event: bounded by the config, not by clients

    def debug(self, kind: Hashable, message: str, *args: object) -> None:
        self._log(logging.DEBUG, kind, message, args)

    def warning(self, kind: Hashable, message: str, *args: object) -> None:
        self._log(logging.WARNING, kind, message, args)

    def _log(self, level: int, kind: Hashable, message: str, args: tuple[object, ...]) -> None:
        now = self._clock()
        last = self._last.get(kind)
        if last is not None and now - last < self._interval_s:
            return
        self._last[kind] = now
        self._logger.log(level, message, *args)
