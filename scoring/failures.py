"""Scoring failures in the log: one line per failure, rate-limited, secrets masked.

A scorer that fails never fails the user's response (the record says what
broke); this makes the failure visible to the operator too. The counters
(``trustgate_scorer_errors_total{component,reason}``, the queue's errors) are
the exporters' job; the log is this module's. A failure of a known kind (an
upstream that refused, a timeout, a spent budget, an unreadable reply, a
Redis outage) is one line: where, why and what the error said; its traceback
would only repeat the scorer's own lines. A failure of no known kind
(``internal``: a bug) keeps its traceback, which is where its cause is. The
log formatter adds the id of the request whose answer was being scored
(``scoring.request_context``).
"""

from __future__ import annotations

import logging
import re
import time
import traceback
from collections.abc import Callable

from .throttled_log import ThrottledLog
from .types import FailureReason, ScoringFailure

__all__ = ["UNEXPECTED", "FailureLog", "describe", "mask_secrets"]

UNEXPECTED: FailureReason = "internal"  # the reason of a failure of no known kind: a bug, logged with its traceback

# Credentials that an exception's text can carry, and what each becomes.
_SECRETS = (
    (re.compile(r"(?i)(bearer\s+)[^\s\"',;]+"), r"\1***"),
    (re.compile(r"(?i)((?:api[_-]?key|token|password|secret)[\"']?\s*[=:]\s*[\"']?)[^\s\"'&,;]+"), r"\1***"),
    (re.compile(r"(://[^/\s:@]*:)[^/\s@]+@"), r"\1***@"),  # user:password@ in a URL (Redis, SPARQL)
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}"), "sk-***"),  # OpenAI-style keys
)


def mask_secrets(text: str) -> str:
    """``text`` with what looks like a credential replaced by ``***``."""
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


def describe(error: BaseException) -> str:
    """A record's ``error`` text, "Type: message" with secrets masked, of the original error if one was wrapped.

    A ``ScoringFailure`` raised from another error (an ``Ask``'s upstream
    failure) names that one, as the record did before scoring had a reason.
    """
    shown = error.__cause__ if isinstance(error, ScoringFailure) and error.__cause__ is not None else error
    return mask_secrets(f"{type(shown).__name__}: {shown}")


class FailureLog:
    """Logs failures by (where, reason) through a ``ThrottledLog``: the first at once, then one per interval.

    One instance per owner (a pipeline, a queue), no global state.
    """

    def __init__(
        self, logger: logging.Logger, *, interval_s: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._log = logger
        self._throttle = ThrottledLog(logger, interval_s=interval_s, clock=clock)

    def report(self, where: str, reason: str, error: BaseException) -> None:
        """Log ``error`` (met by ``where``: a component, a queue operation) unless one like it just was: with its
        traceback only when its reason is ``internal`` (no known kind)."""
        left_out = self._throttle.admit((where, reason))
        if left_out is None:
            return
        note = f" ({left_out} more left out of the log since the last)" if left_out else ""
        if reason != UNEXPECTED:
            self._log.warning("%s failed (%s)%s: %s", where, reason, note, describe(error))
            return
        trace = "".join(traceback.format_exception(error)).rstrip()
        self._log.warning("%s failed (%s)%s: %s", where, reason, note, mask_secrets(trace))
