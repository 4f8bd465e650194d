"""Translate upstream failures into the gateway's error tree, in one place.

Both backends (the pass-through HTTP path and litellm) report failures as an
HTTP status and a message; this module turns those into ``UpstreamError``
subclasses and scrubs configured secrets from any text that will reach a client.
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson

from .errors import UpstreamAuthFailed, UpstreamError, UpstreamRateLimited, UpstreamTimeout

__all__ = ["error_for_status", "message_from_body", "scrub"]

_INVALID_REQUEST_STATUSES = (400, 404, 413, 422)


def scrub(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret and secret in text:
            text = text.replace(secret, "***")
    return text


def message_from_body(body: bytes, status: int) -> str:
    """The upstream's own error message when it sent the OpenAI shape, else a generic one."""
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict):
        error = parsed.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
        if isinstance(error, str):
            return error
        if isinstance(parsed.get("message"), str):
            return parsed["message"]
        if isinstance(parsed.get("detail"), str):
            return parsed["detail"]
    return f"upstream returned HTTP {status}"


def error_for_status(status: int, message: str, secrets: Iterable[str] = ()) -> UpstreamError:
    text = "upstream error: " + scrub(message, secrets)
    if status in (401, 403):
        return UpstreamAuthFailed(text, status_code=status, code="upstream_auth")
    if status == 429:
        return UpstreamRateLimited(text, code="upstream_rate_limited")
    if status == 408:
        return UpstreamTimeout(text, code="upstream_timeout")
    error = UpstreamError(text, status_code=status, code=f"upstream_{status}")
    if status in _INVALID_REQUEST_STATUSES:
        error.error_type = "invalid_request_error"
    return error
