"""The fast path: forward OpenAI-compatible requests as bytes over one shared httpx client.

litellm's per-call translation costs more CPU than the network round trip to a
local upstream; for deployments that already speak OpenAI's wire format the
gateway only needs to swap the model name and the credentials. What comes back
is bounded before anyone sees it: the deployment's ``timeout`` is a deadline for
the whole call (a body dripped byte by byte included; for a stream, its
``stream_timeout`` when set), replies are capped at
``max_response_bytes``, and a non-streamed 200 must parse as a chat completion.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson

from .completion import Completion, Forwarded, UpstreamStream, bounded_chunks, checked_completion, checked_forwarded
from .config import Deployment
from .sdk_params import Endpoint
from .upstream_errors import UpstreamErrors, message_from_body, parse_retry_after

__all__ = ["PATHS", "PassthroughBackend"]

# Where each endpoint lives under a deployment's api_base.
PATHS: dict[Endpoint, str] = {"chat": "/chat/completions", "completions": "/completions",
                              "embeddings": "/embeddings", "responses": "/responses"}

_ERROR_BODY_BYTES = 64 * 1024  # enough of an error reply to log its message


class PassthroughBackend:
    def __init__(self, http: httpx.AsyncClient, *, default_timeout: float, errors: UpstreamErrors,
                 max_response_bytes: int) -> None:
        self._http = http
        self._default_timeout = default_timeout
        self._errors = errors
        self._max_bytes = max_response_bytes

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
            response = await self._http.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise self._errors.for_exception(exc) from exc
        if response.status_code >= 400:
            body = await self._read(response, _ERROR_BODY_BYTES, truncate=True)
            raise self._errors.for_status(response.status_code, message_from_body(body, response.status_code),
                                          parse_retry_after(response.headers.get("retry-after")))
        return response

    async def _read(self, response: httpx.Response, limit: int, *, truncate: bool = False) -> bytes:
        """The body, at most ``limit`` bytes (more is an error unless ``truncate``); the response is closed."""
        try:
            declared = response.headers.get("content-length", "")
            if not truncate and declared.isdigit() and int(declared) > limit:
                raise self._errors.too_large(limit)
            body = bytearray()
            async for part in response.aiter_bytes():
                body += part
                if len(body) > limit:
                    if truncate:
                        break
                    raise self._errors.too_large(limit)
            return bytes(body[:limit])
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
        """A whole reply of another endpoint (completions, embeddings, Responses), checked as a JSON object."""
        raw = await self._fetch(deployment, body, endpoint)
        return checked_forwarded(raw, deployment.model_name, max_bytes=self._max_bytes, errors=self._errors)

    async def open_stream(self, deployment: Deployment, body: dict[str, Any],
                          endpoint: Endpoint = "chat") -> UpstreamStream:
        started = asyncio.get_running_loop().time()
        whole = deployment.stream_deadline(self._default_timeout)
        deadline = min(deployment.deadline(self._default_timeout), whole)
        try:
            async with asyncio.timeout(deadline):
                response = await self._send(self._request(deployment, body, endpoint))
        except TimeoutError as exc:
            raise self._errors.timed_out(f"no response headers within {deadline:g}s") from exc
        chunks = bounded_chunks(self._raw_chunks(response), self._max_bytes, self._errors,
                                seconds=whole, started=started)
        return UpstreamStream(chunks=chunks, close=response.aclose, model_group=deployment.model_name)

    async def _raw_chunks(self, response: httpx.Response) -> AsyncIterator[bytes]:
        try:
            async for chunk in response.aiter_raw():
                yield chunk
        except httpx.HTTPError as exc:
            raise self._errors.for_exception(exc) from exc
