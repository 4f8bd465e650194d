"""The fast path: forward OpenAI-compatible requests as bytes over one pooled aiohttp session.

litellm's per-call translation costs more CPU than the network round trip to a
local upstream; for deployments that already speak OpenAI's wire format the
gateway only needs to swap the model name and the credentials. The session is
aiohttp's rather than httpx's: on this path httpx/httpcore cost about three
times the CPU per request (a scan of the pool and anyio's cancel scopes on every
request, and separate writes for a request's head and body; BENCHMARKS.md).

What comes back is bounded before anyone sees it: the deployment's ``timeout``
is a deadline for the whole call (a body dripped byte by byte included; for a
stream, its ``stream_timeout`` when set, kept by the session's own timer for the
stream, not by work per chunk), replies are capped at ``max_response_bytes`` —
counted after decoding, for an upstream that compresses although asked not to
(``content_decoding``) — a non-streamed 200 must have its endpoint's shape, and
a stream must be ``text/event-stream`` whose first event has it (``replies``).
A redirect is refused, or followed only within its origin (``redirects``).
"""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import aiohttp
import httpx
import orjson

from ..base.sdk_params import Endpoint
from ..config.settings import Deployment
from .completion import Completion, Forwarded, UpstreamStream, checked_completion, checked_forwarded
from .content_decoding import DecodedTooLarge, UnsupportedEncoding, bounded_body, decoder_for
from .errors import UpstreamErrors, message_from_body, parse_retry_after
from .redirects import MAX_REDIRECTS, RedirectRefused, redirect_target, without_credentials
from .replies import MalformedReply, check_stream_start, media_type
from .sse import FirstEventReader

__all__ = ["PATHS", "PassthroughBackend", "upstream_session"]

# Where each endpoint lives under a deployment's api_base.
PATHS: dict[Endpoint, str] = {
    "chat": "/chat/completions",
    "completions": "/completions",
    "embeddings": "/embeddings",
    "responses": "/responses",
}

_ERROR_BODY_BYTES = 64 * 1024  # enough of an error reply to log its message
_CONNECT_SECONDS = 5.0  # the most a connection may take, within the call's own deadline
_HEADER_BYTES = 64 * 1024  # the longest status line or header an upstream may send (aiohttp's default is 8 KiB)
_FAILURES = (aiohttp.ClientError, OSError)  # what the session raises for a call that got no usable answer


def upstream_session() -> aiohttp.ClientSession:
    """The pooled session for all pass-through traffic (call inside the event loop that will use it).

    Bodies are not decoded by aiohttp (``content_decoding`` does, bounded), no
    cookie is kept (one upstream's cookie must not follow another tenant's
    request), and TLS and proxies are as they were under httpx: its certificate
    authorities (certifi's, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``) and the
    proxy variables, read once.
    """
    connector = aiohttp.TCPConnector(limit=1000, keepalive_timeout=30, ssl=httpx.create_ssl_context())
    return aiohttp.ClientSession(
        connector=connector,
        auto_decompress=False,
        cookie_jar=aiohttp.DummyCookieJar(),
        trust_env=bool(urllib.request.getproxies()),
        max_line_size=_HEADER_BYTES,
        max_field_size=_HEADER_BYTES,
        timeout=aiohttp.ClientTimeout(total=None),
    )


class PassthroughBackend:
    """Pass-through calls; its session opens on the first call and closes with ``aclose``."""

    def __init__(
        self, *, default_timeout: float, errors: UpstreamErrors, max_response_bytes: int, follow_redirects: bool = False
    ) -> None:
        self._session: aiohttp.ClientSession | None = None
        self._default_timeout = default_timeout
        self._errors = errors
        self._max_bytes = max_response_bytes
        self._follow_redirects = follow_redirects

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _send(
        self, deployment: Deployment, body: dict[str, Any], endpoint: Endpoint, total: float | None
    ) -> aiohttp.ClientResponse:
        """The response with its status checked; its body is still unread.

        ``total``: the session's timer for the whole call, body included (a
        stream's deadline); None where the caller holds the call to its deadline.
        """
        if self._session is None:
            self._session = upstream_session()
        # Uncompressed: max_response_bytes then bounds what is held, not only what crossed the wire.
        headers = {"content-type": "application/json", "accept-encoding": "identity"}
        if deployment.api_key is not None:
            headers["authorization"] = f"Bearer {deployment.api_key.get_secret_value()}"
        payload = orjson.dumps({**body, "model": deployment.wire_model})
        deadline = deployment.deadline(self._default_timeout)
        timeout = aiohttp.ClientTimeout(total=total, sock_connect=min(deadline, _CONNECT_SECONDS))
        try:
            response = await self._followed(
                self._session, f"{deployment.api_base}{PATHS[endpoint]}", payload, headers, timeout
            )
        except RedirectRefused as exc:
            raise self._errors.redirected(str(exc)) from exc
        except _FAILURES as exc:
            raise self._errors.for_exception(exc) from exc
        if response.status >= 400:
            error_body = await self._read(response, _ERROR_BODY_BYTES, truncate=True)
            raise self._errors.for_status(
                response.status,
                message_from_body(error_body, response.status),
                parse_retry_after(response.headers.get("retry-after")),
            )
        return response

    async def _followed(
        self,
        session: aiohttp.ClientSession,
        url: str,
        payload: bytes | None,
        headers: dict[str, str],
        timeout: aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        """The first answer that is not a redirect; a redirect is refused unless allowed (``redirects``).

        A followed 307/308 re-sends the request as it was, less its credentials
        (``redirects.without_credentials``); any other redirect is followed with
        a GET without a body, as HTTP clients do.
        """
        method = "POST"
        for _ in range(MAX_REDIRECTS + 1):
            response = await session.request(
                method, url, data=payload, headers=headers, timeout=timeout, allow_redirects=False
            )
            try:
                target = redirect_target(
                    url, response.status, response.headers.get("location"), follow=self._follow_redirects
                )
            except RedirectRefused:
                response.close()
                raise
            if target is None:
                return response
            response.close()
            headers = without_credentials(headers)
            if response.status not in (307, 308):
                method, payload = "GET", None
                headers = {k: v for k, v in headers.items() if k != "content-type"}
            url = target
        raise RedirectRefused(f"more than {MAX_REDIRECTS} redirects")

    async def _read(self, response: aiohttp.ClientResponse, limit: int, *, truncate: bool = False) -> bytes:
        """The body, decoded, at most ``limit`` bytes (more is an error unless ``truncate``); the response is done.

        ``truncate`` reads an error reply for its message: what cannot be read of it reads as nothing.
        """
        body = bytearray()
        try:
            declared = response.content_length
            coding = response.headers.get("content-encoding")
            if coding is None and declared is not None and declared <= limit:
                return await response.read()  # the parser reads exactly the declared length
            if not truncate and declared is not None and declared > limit:
                raise self._errors.too_large(limit)
            async for piece in bounded_body(response.content.iter_any(), decoder_for(coding, limit), limit):
                body += piece
            return bytes(body)
        except DecodedTooLarge:
            if truncate:
                return bytes(body[:limit])
            raise self._errors.too_large(limit) from None
        except UnsupportedEncoding as exc:
            if truncate:
                return b""
            raise self._errors.undecodable(str(exc)) from exc
        except _FAILURES as exc:
            if truncate:
                return b""
            raise self._errors.for_exception(exc) from exc
        finally:
            response.release()  # back to the pool when read to its end, else its connection is closed

    async def _fetch(self, deployment: Deployment, body: dict[str, Any], endpoint: Endpoint) -> bytes:
        deadline = deployment.deadline(self._default_timeout)
        try:
            async with asyncio.timeout(deadline):
                response = await self._send(deployment, body, endpoint, None)
                return await self._read(response, self._max_bytes)
        except TimeoutError as exc:
            raise self._errors.timed_out(f"no complete reply within {deadline:g}s") from exc

    async def complete(self, deployment: Deployment, body: dict[str, Any]) -> Completion:
        raw = await self._fetch(deployment, body, "chat")
        return checked_completion(raw, deployment.model_name, max_bytes=self._max_bytes, errors=self._errors)

    async def forward(self, deployment: Deployment, body: dict[str, Any], endpoint: Endpoint) -> Forwarded:
        """A whole reply of another endpoint (completions, embeddings, Responses), checked for its shape."""
        raw = await self._fetch(deployment, body, endpoint)
        return checked_forwarded(raw, deployment.model_name, endpoint, max_bytes=self._max_bytes, errors=self._errors)

    async def open_stream(
        self, deployment: Deployment, body: dict[str, Any], endpoint: Endpoint = "chat"
    ) -> UpstreamStream:
        """The opened stream, once it is an event stream whose first event has the endpoint's shape.

        Read up to that first event before the client's response starts, so that
        a page of HTML (or an error) answered with 200 is a 502, not a stream.
        The whole stream is held to its deadline by the session's timer, which
        ends a read that stalls, drips or is still running at the deadline.
        """
        whole = deployment.stream_deadline(self._default_timeout)
        deadline = min(deployment.deadline(self._default_timeout), whole)
        try:
            async with asyncio.timeout(deadline):
                response = await self._send(deployment, body, endpoint, whole)
                chunks = self._chunks(response, whole)
                try:
                    first = await self._opening(response, chunks, endpoint)
                except BaseException:
                    await chunks.aclose()
                    response.release()
                    raise
        except TimeoutError as exc:
            raise self._errors.timed_out(f"no first event within {deadline:g}s") from exc

        async def close() -> None:
            response.release()

        return UpstreamStream(chunks=chunks, close=close, model_group=deployment.model_name, first=first)

    async def _opening(
        self, response: aiohttp.ClientResponse, chunks: AsyncIterator[bytes], endpoint: Endpoint
    ) -> list[bytes]:
        """The stream's chunks up to and including its first event, checked (``replies.check_stream_start``)."""
        kind = media_type(response.headers.get("content-type"))
        if kind != "text/event-stream":
            raise self._errors.malformed(f"a stream answered as {kind[:60]!r}, not text/event-stream")
        seen: list[bytes] = []
        first_event = FirstEventReader()
        async for chunk in chunks:
            seen.append(chunk)
            data = first_event.feed(chunk)
            if data is not None:
                try:
                    check_stream_start(data, endpoint)
                except MalformedReply as exc:
                    raise self._errors.malformed(str(exc)) from exc
                return seen
        raise self._errors.malformed("the stream ended before its first event")

    async def _chunks(self, response: aiohttp.ClientResponse, whole: float) -> AsyncGenerator[bytes, None]:
        """The stream's body as it arrives, decoded and held to the cap and to the stream's deadline."""
        try:
            decoder = decoder_for(response.headers.get("content-encoding"), self._max_bytes)
            async for piece in bounded_body(response.content.iter_any(), decoder, self._max_bytes):
                yield piece
        except DecodedTooLarge:
            raise self._errors.too_large(self._max_bytes) from None
        except UnsupportedEncoding as exc:
            raise self._errors.undecodable(str(exc)) from exc
        except TimeoutError as exc:
            raise self._errors.timed_out(f"stream still running after {whole:g}s") from exc
        except _FAILURES as exc:
            raise self._errors.for_exception(exc) from exc
