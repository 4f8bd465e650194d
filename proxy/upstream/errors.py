"""Translate upstream failures into the gateway's error tree — one mapping for both upstream paths.

The pass-through path (aiohttp) and the litellm path (httpx) report a failure as one of a
few kinds: an HTTP status, a timeout, an unreachable host, a 200 whose body is
not a chat completion, or a reply larger than allowed. ``UpstreamErrors`` turns
each kind into the same ``UpstreamError`` whichever path saw it.

What a client reads is generic — the status class and what to do about it —
because an upstream's own text carries what must not leak: file paths of a
local server, litellm's deployment hashes, a provider's echo of a wrong key.
That text is logged here, once per failure, with every configured secret masked.
Which of LiteLLM's fallback lists a failure calls for (``fallback_kind``) is
read here too, from that text, as LiteLLM reads it: the error carries the kind
of refusal (``UpstreamError.refusal``), never the text.
"""

from __future__ import annotations

import email.utils
import logging
import time
from collections.abc import Iterable, Iterator

import aiohttp
import httpx
import orjson

from ..base.errors import (
    Refusal,
    UpstreamAuthFailed,
    UpstreamError,
    UpstreamRateLimited,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from ..config.settings import FallbackKind

__all__ = ["MALFORMED_REPLY", "UpstreamErrors", "fallback_kind", "message_from_body", "parse_retry_after", "scrub"]

MALFORMED_REPLY = "upstream_malformed_reply"  # the error code of a 200 that is not an answer of its endpoint

log = logging.getLogger("trustgate.upstream")

_INVALID_REQUEST_STATUSES = (400, 404, 413, 422)
# Refused, reset or cut connections, as each HTTP client names them (aiohttp: a body cut short is a payload error).
_BROKEN = (httpx.TransportError, aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, OSError)


def scrub(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret and secret in text:
            text = text.replace(secret, "***")
    return text


def message_from_body(body: bytes, status: int) -> str:
    """The upstream's own error message when it sent the OpenAI shape, else a generic one (for the log)."""
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
    return body[:500].decode("utf-8", "replace") or f"upstream returned HTTP {status}"


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header: delay-seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - (time.time() if now is None else now))


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it was raised from, innermost last (bounded: chains can loop)."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen and len(seen) < 16:
        seen.add(id(link))
        yield link
        link = link.__cause__ or link.__context__


def _retry_after_in(causes: list[BaseException]) -> float | None:
    """A ``Retry-After`` the provider sent, from the first exception in the chain that kept its headers.

    litellm keeps the provider's headers as ``litellm_response_headers`` (its
    ``response`` attribute is a stand-in); httpx's status errors carry the response.
    """
    for cause in causes:
        headers = getattr(cause, "litellm_response_headers", None)
        if headers is None and isinstance(cause, httpx.HTTPStatusError):
            headers = cause.response.headers
        if headers:
            return parse_retry_after(headers.get("retry-after"))
    return None


def _client_message(status: int) -> str:
    if status in (401, 403):
        return f"The upstream model refused the gateway's credentials (HTTP {status})"
    if status == 429:
        return "The upstream model is rate limited; retry later (HTTP 429)"
    if status == 408:
        return "The upstream model did not answer in time (HTTP 408)"
    if status in _INVALID_REQUEST_STATUSES:
        return f"The upstream model rejected the request (HTTP {status})"
    if status < 500:
        return f"The upstream model refused the request (HTTP {status})"
    return f"The upstream model failed (HTTP {status})"


_CONTEXT_WINDOW = ("context_length_exceeded", "context window", "maximum context length", "too many tokens")
_CONTENT_POLICY = ("content_policy", "content_filter", "content management policy", "safety system")


def fallback_kind(exc: UpstreamError) -> FallbackKind | None:
    """Which of LiteLLM's fallback lists applies to a failure, if any.

    A failing or unreachable group falls back on ``fallbacks``. A refused
    request falls back only when the refusal is one another model may not
    share: a prompt too long for this one (``context_window_fallbacks``) or
    its content policy (``content_policy_fallbacks``), as the translator read
    it from the provider's text.
    """
    if not exc.client_fault:
        return "fallbacks"
    if exc.refusal == "context_window":
        return "context_window_fallbacks"
    if exc.refusal == "content_policy":
        return "content_policy_fallbacks"
    return None


def _refusal(detail: str) -> Refusal | None:
    """The kind of refusal a provider's text names, as LiteLLM reads it."""
    text = detail.lower()
    if any(marker in text for marker in _CONTEXT_WINDOW):
        return "context_window"
    if any(marker in text for marker in _CONTENT_POLICY):
        return "content_policy"
    return None


class UpstreamErrors:
    """Builds the error a client sees for each kind of upstream failure, and logs the real cause once."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self._secrets = list(secrets)

    def _logged(self, error: UpstreamError, detail: str) -> UpstreamError:
        """``error``, its provider's text logged once (secrets masked) and read for the kind of refusal."""
        if error.client_fault:
            error.refusal = _refusal(detail)
        log.warning("upstream failure (%s, %s): %s", error.status_code, error.code, scrub(detail, self._secrets))
        return error

    def for_status(self, status: int, detail: str, retry_after: float | None = None) -> UpstreamError:
        """An upstream HTTP error status, passed on with the status it had (and the wait it asked for)."""
        message = _client_message(status)
        error: UpstreamError
        if status in (401, 403):
            error = UpstreamAuthFailed(message, status_code=status, code="upstream_auth")
        elif status == 429:
            error = UpstreamRateLimited(message, code="upstream_rate_limited", retry_after=retry_after)
        elif status == 408:
            error = UpstreamTimeout(message, code="upstream_timeout")
        elif 400 <= status < 600:
            error = UpstreamError(message, status_code=status, code=f"upstream_{status}", retry_after=retry_after)
            if status in _INVALID_REQUEST_STATUSES:
                error.error_type = "invalid_request_error"
        else:  # a library's own 5xx stand-in, or no status at all
            error = UpstreamError(_client_message(502), code="upstream_error")
        return self._logged(error, detail)

    def for_exception(self, exc: BaseException) -> UpstreamError:
        """The error for an exception raised by an upstream call, by what its chain of causes shows.

        Both paths end in the same few causes: aiohttp's directly on the pass-through
        path; on the litellm path, litellm's exception wraps the openai SDK's,
        which wraps httpx's. An HTTP status in the chain is passed on; then a
        timeout; then a broken connection. With none of these the upstream did
        answer and the library could not read what it said (litellm calls that
        a 500 or a connection error): a malformed reply, as the pass-through
        path names it.
        """
        detail = f"{type(exc).__name__}: {exc}"
        causes = list(_causes(exc))
        retry_after = _retry_after_in(causes)
        for cause in causes:
            if isinstance(cause, httpx.HTTPStatusError):
                return self.for_status(cause.response.status_code, detail, retry_after)
        if any(isinstance(cause, (TimeoutError, httpx.TimeoutException)) for cause in causes):
            return self.timed_out(detail)
        if any(isinstance(cause, _BROKEN) for cause in causes):
            return self.unreachable(detail)
        status = getattr(exc, "status_code", None)
        if isinstance(status, int) and 400 <= status < 500:  # litellm's own errors carry the provider's status
            return self.for_status(status, detail, retry_after)
        return self.malformed(detail)

    def timed_out(self, detail: str) -> UpstreamError:
        return self._logged(
            UpstreamTimeout("The upstream model did not answer in time", code="upstream_timeout"), detail
        )

    def unreachable(self, detail: str) -> UpstreamError:
        """Refused, reset or otherwise broken connections: the upstream gave no usable answer."""
        return self._logged(
            UpstreamUnavailable(
                "The upstream model could not be reached or dropped the connection", code="upstream_unreachable"
            ),
            detail,
        )

    def malformed(self, detail: str) -> UpstreamError:
        return self._logged(
            UpstreamError(
                "The upstream model sent a reply that is not an answer of this endpoint", code=MALFORMED_REPLY
            ),
            detail,
        )

    def redirected(self, detail: str) -> UpstreamError:
        """A redirect the gateway did not follow (``redirects``): nothing went to its target."""
        return self._logged(
            UpstreamError(
                "The upstream model answered with a redirect, which the gateway does not follow",
                code="upstream_redirect",
            ),
            detail,
        )

    def undecodable(self, detail: str) -> UpstreamError:
        """A body in a content coding the gateway does not decode, or corrupt in one it does."""
        return self._logged(
            UpstreamError(
                "The upstream model sent a reply in an encoding the gateway does not read", code="upstream_bad_encoding"
            ),
            detail,
        )

    def too_large(self, limit: int) -> UpstreamError:
        return self._logged(
            UpstreamError(f"The upstream model's reply exceeded {limit} bytes", code="upstream_reply_too_large"),
            f"reply over {limit} bytes",
        )
