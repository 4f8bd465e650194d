"""Access-log lines without query strings' values, and with each request's id.

uvicorn's access logger prints each request's path with its query string.
The gateway reads no query parameters, so their values are never needed in a
log and may be secrets a client put there by mistake (a master key, say):
they become ``[redacted]``. Parameter names stay when they are plain
identifiers, so that a log still says what was sent.

Each line ends with ``request_id=…``, the id the response carries in
``x-request-id`` (``proxy.request_ids``), so a client's complaint, a trust
record and a log line can be joined.
"""

from __future__ import annotations

import logging
import re

from uvicorn.logging import AccessFormatter

from .request_ids import current_request_id

__all__ = ["REDACTED", "RedactQueryFilter", "RequestIdFilter", "install_access_log", "install_access_log_redaction",
           "redact_query"]

REDACTED = "[redacted]"
ACCESS_LOGGER = "uvicorn.access"
_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")
_REQUEST_ID_FIELD = " request_id=%(request_id)s"


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


class RequestIdFilter(logging.Filter):
    """Gives every access-log record the id of the request it logs (uvicorn logs it in the request's task)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current_request_id.get()
        return True


def install_access_log() -> None:
    """Redact query values and add the request id to uvicorn's access log (call after uvicorn configured it)."""
    install_access_log_redaction()
    logger = logging.getLogger(ACCESS_LOGGER)
    if not any(isinstance(f, RequestIdFilter) for f in logger.filters):
        logger.addFilter(RequestIdFilter())
    for handler in logger.handlers:
        formatter = handler.formatter
        if not isinstance(formatter, AccessFormatter):
            continue
        fmt = formatter._fmt or ""
        if _REQUEST_ID_FIELD not in fmt:
            handler.setFormatter(AccessFormatter(fmt + _REQUEST_ID_FIELD, datefmt=formatter.datefmt,
                                                 use_colors=formatter.use_colors))
