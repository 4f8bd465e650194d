"""The fast path: forward OpenAI-compatible requests as bytes over one shared httpx client.

litellm's per-call translation costs more CPU than the network round trip to a
local upstream; for deployments that already speak OpenAI's wire format the
gateway only needs to swap the model name and the credentials. What comes back
is bounded before anyone sees it: the deployment's ``timeout`` is a deadline for
the whole call (a body dripped byte by byte included; for a stream, its
``stream_timeout`` when set), replies are capped at
``max_response_bytes`` — counted after decoding, for an upstream that
compresses although asked not to (``content_decoding``) — a non-streamed 200
must have its endpoint's shape, and a stream must be ``text/event-stream``
whose first event has it (``replies``). A redirect is refused, or followed
only within its origin (``redirects``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson

from .completion import Completion, Forwarded, UpstreamStream, bounded_chunks, checked_completion, checked_forwarded
from .config import Deployment
from .content_decoding import BoundedDecoder, DecodedTooLarge, UnsupportedEncoding, bounded_body, decoder_for
from .redirects import MAX_REDIRECTS, RedirectRefused, check_redirect
from .replies import MalformedReply, check_stream_start, media_type
from .sdk_params import Endpoint
from .sse import first_event_data
from .upstream_errors import UpstreamErrors, message_from_body, parse_retry_after

__all__ = ["PATHS", "PassthroughBackend"]

# Where each endpoint lives under a deployment's api_base.
PATHS: dict[Endpoint, str] = {"chat": "/chat/completions", "completions": "/completions",
                              "embeddings": "/embeddings", "responses": "/responses"}

_ERROR_BODY_BYTES = 64 * 1024  # enough of an error reply to log its message


class PassthroughBackend:
    def __init__(self, http: httpx.AsyncClient, *, default_timeout: float, errors: UpstreamErrors,
                 max_response_bytes: int, follow_redirects: bool = False) -> None:
        self._http = http
        self._default_timeout = default_timeout
        self._errors = errors
        self._max_bytes = max_response_bytes
        self._follow_redirects = follow_redirects

    def _request(self, deployment: Deployment, body: dict[str, Any], endpoint: Endpoint) -> httpx.Request:
        # Uncompressed: max_response_bytes then bounds what is held, not only what crossed the wire.
        headers = {"content-type": "application/json", "accept-encoding": "identity"}
        if deployment.api_key is not None:
            headers["authorization"] = f"Bearer {deployment.api_key.get_secret_value()}"
        payload = orjson.dumps({**body, "model": deployment.wire_model})
        timeout = deployment.deadline(self._default_timeout)
        return self._http.build_request(
            "POST", f"{deployment.api_base}{PATHS[endpoint]}", content=payload, headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
        )

    async def _send(self, request: httpx.Request) -> httpx.Response:
        """The response with its status checked; its body is still unread."""
        try:
            response = await self._followed(request)
        except RedirectRefused as exc:
            raise self._errors.redirected(str(exc)) from exc
        except httpx.HTTPError as exc:
            raise self._errors.for_exception(exc) from exc
        if response.status_code >= 400:
            body = await self._read(response, _ERROR_BODY_BYTES, truncate=True)
            raise self._errors.for_status(response.status_code, message_from_body(body, response.status_code),
                                          parse_retry_after(response.headers.get("retry-after")))
        return response

    async def _followed(self, request: httpx.Request) -> httpx.Response:
        """The first answer that is not a redirect; a redirect is refused unless allowed (``redirects``)."""
        response = await self._http.send(request, stream=True, follow_redirects=False)
        for _ in range(MAX_REDIRECTS):
            try:
                check_redirect(request, response, follow=self._follow_redirects)
            except RedirectRefused:
                await response.aclose()
                raise
            if response.next_request is None:
                return response
            await response.aclose()
            request = response.next_request
            response = await self._http.send(request, stream=True, follow_redirects=False)
        await response.aclose()
        raise RedirectRefused(f"more than {MAX_REDIRECTS} redirects")

    def _decoder(self, response: httpx.Response, limit: int) -> BoundedDecoder:
        try:
            return decoder_for(response.headers.get("content-encoding"), limit)
        except UnsupportedEncoding as exc:
            raise self._errors.undecodable(str(exc)) from exc

    async def _read(self, response: httpx.Response, limit: int, *, truncate: bool = False) -> bytes:
        """The body, decoded, at most ``limit`` bytes (more is an error unless ``truncate``); the response is closed.

        ``truncate`` reads an error reply for its message: what cannot be read of it reads as nothing.
        """
        body = bytearray()
        try:
            declared = response.headers.get("content-length", "")
            if not truncate and declared.isdigit() and int(declared) > limit:
                raise self._errors.too_large(limit)
            decoder = decoder_for(response.headers.get("content-encoding"), limit)
            async for piece in bounded_body(response.aiter_raw(), decoder, limit):
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
        except httpx.HTTPError as exc:
            if truncate:
                return b""
            raise self._errors.for_exception(exc) from exc
        finally:
            await response.aclose()

    async def _fetch(self, deployment: Deployment, body: dict[str, Any], endpoint: Endpoint) -> bytes:
        deadline = deployment.deadline(self._default_timeout)
        try:
            async with asyncio.timeout(deadline):
                response = await self._send(self._request(deployment, body, endpoint))
                return await self._read(response, self._max_bytes)
        except TimeoutError as exc:
            raise self._errors.timed_out(f"no complete reply within {deadline:g}s") from exc

    async def complete(self, deployment: Deployment, body: dict[str, Any]) -> Completion:
        raw = await self._fetch(deployment, body, "chat")
        return checked_completion(raw, deployment.model_name, max_bytes=self._max_bytes, errors=self._errors)

    async def forward(self, deployment: Deployment, body: dict[str, Any], endpoint: Endpoint) -> Forwarded:
        """A whole reply of another endpoint (completions, embeddings, Responses), checked for its shape."""
        raw = await self._fetch(deployment, body, endpoint)
        return checked_forwarded(raw, deployment.model_name, endpoint, max_bytes=self._max_bytes,
                                 errors=self._errors)

    async def open_stream(self, deployment: Deployment, body: dict[str, Any],
                          endpoint: Endpoint = "chat") -> UpstreamStream:
        """The opened stream, once it is an event stream whose first event has the endpoint's shape.

        Read up to that first event before the client's response starts, so that
        a page of HTML (or an error) answered with 200 is a 502, not a stream.
        """
        started = asyncio.get_running_loop().time()
        whole = deployment.stream_deadline(self._default_timeout)
        deadline = min(deployment.deadline(self._default_timeout), whole)
        try:
            async with asyncio.timeout(deadline):
                response = await self._send(self._request(deployment, body, endpoint))
                chunks = bounded_chunks(self._chunks(response), self._max_bytes, self._errors,
                                        seconds=whole, started=started)
                try:
                    first = await self._opening(response, chunks, endpoint)
                except BaseException:
                    await chunks.aclose()
                    await response.aclose()
                    raise
        except TimeoutError as exc:
            raise self._errors.timed_out(f"no first event within {deadline:g}s") from exc
        return UpstreamStream(chunks=chunks, close=response.aclose, model_group=deployment.model_name, first=first)

    async def _opening(self, response: httpx.Response, chunks: AsyncIterator[bytes], endpoint: Endpoint) -> list[bytes]:
        """The stream's chunks up to and including its first event, checked (``replies.check_stream_start``)."""
        kind = media_type(response.headers.get("content-type"))
        if kind != "text/event-stream":
            raise self._errors.malformed(f"a stream answered as {kind[:60]!r}, not text/event-stream")
        seen: list[bytes] = []
        async for chunk in chunks:
            seen.append(chunk)
            data = first_event_data(b"".join(seen)) if b"\n" in chunk or b"\r" in chunk else None
            if data is not None:
                try:
                    check_stream_start(data, endpoint)
                except MalformedReply as exc:
                    raise self._errors.malformed(str(exc)) from exc
                return seen
        raise self._errors.malformed("the stream ended before its first event")

    async def _chunks(self, response: httpx.Response) -> AsyncIterator[bytes]:
        """The stream's body as it arrives, decoded and held to the cap."""
        try:
            async for piece in bounded_body(response.aiter_raw(), self._decoder(response, self._max_bytes),
                                            self._max_bytes):
                yield piece
        except DecodedTooLarge:
            raise self._errors.too_large(self._max_bytes) from None
        except UnsupportedEncoding as exc:
            raise self._errors.undecodable(str(exc)) from exc
        except httpx.HTTPError as exc:
            raise self._errors.for_exception(exc) from exc
