"""Access-log lines without query strings' values: a key sent as ``?key=...`` must not reach the log.

uvicorn's access logger prints each request's path with its query string.
The gateway reads no query parameters, so their values are never needed in a
log and may be secrets a client put there by mistake (a master key, say):
they become ``[redacted]``. Parameter names stay when they are plain
identifiers, so that a log still says what was sent.
"""

from __future__ import annotations

import logging
import re

__all__ = ["REDACTED", "RedactQueryFilter", "install_access_log_redaction", "redact_query"]

REDACTED = "[redacted]"
ACCESS_LOGGER = "uvicorn.access"
_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")


def redact_query(target: str) -> str:
    """``/path?key=secret&x`` → ``/path?key=[redacted]&[redacted]``; a target without a query is unchanged."""
    path, mark, query = target.partition("?")
    if not mark:
        return target
    parts = []
    for item in query.split("&"):
        name, equals, _ = item.partition("=")
        parts.append(f"{name}={REDACTED}" if equals and _PLAIN_NAME.match(name) else REDACTED)
    return f"{path}?{'&'.join(parts)}"


class RedactQueryFilter(logging.Filter):
    """Rewrites every string argument of an access-log record that carries a query string."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact_query(a) if isinstance(a, str) and "?" in a else a for a in record.args)
        return True


def install_access_log_redaction() -> None:
    """Attach the filter to uvicorn's access logger once (call after uvicorn has configured logging)."""
    logger = logging.getLogger(ACCESS_LOGGER)
    if not any(isinstance(f, RedactQueryFilter) for f in logger.filters):
        logger.addFilter(RedactQueryFilter())
