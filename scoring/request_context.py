"""Which request the current task is working for, so that every log line about one request names it.

The gateway sets it while it serves a request (``proxy.base.request_ids``);
a scoring queue sets it while it scores that request's answer, which happens in
the queue's own task (or another process), not the request's. The log
formatter (``proxy.base.log_format``) reads it. It lives here, below the
gateway, because scoring sets it and scoring imports nothing above itself.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

__all__ = ["NO_REQUEST", "current_request_id", "working_for"]

NO_REQUEST = "-"
current_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("trustgate_request_id", default=NO_REQUEST)


@contextlib.contextmanager
def working_for(request_id: str | None) -> Iterator[None]:
    """Within the block, this task works for ``request_id`` (None: for no request)."""
    token = current_request_id.set(request_id or NO_REQUEST)
    try:
        yield
    finally:
        current_request_id.reset(token)
