"""The fast path: forward OpenAI-compatible requests as bytes over one shared httpx client.

litellm's per-call translation costs more CPU than the network round trip to a
local upstream; for deployments that already speak OpenAI's wire format the
gateway only needs to swap the model name and the credentials.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import httpx
import orjson

from .completion import Completion, UpstreamStream
from .config import Deployment
from .errors import UpstreamError, UpstreamTimeout, UpstreamUnavailable
from .upstream_errors import error_for_status, message_from_body

__all__ = ["PassthroughBackend"]


class PassthroughBackend:
    def __init__(self, http: httpx.AsyncClient, *, default_timeout: float, secrets: Iterable[str]) -> None:
        self._http = http
        self._default_timeout = default_timeout
        self._secrets = list(secrets)

    def _request(self, deployment: Deployment, body: dict[str, Any]) -> httpx.Request:
        headers = {"content-type": "application/json"}
        if deployment.api_key is not None:
            headers["authorization"] = f"Bearer {deployment.api_key.get_secret_value()}"
        payload = orjson.dumps({**body, "model": deployment.wire_model})
        timeout = deployment.timeout or self._default_timeout
        return self._http.build_request(
            "POST", f"{deployment.api_base}/chat/completions", content=payload, headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
        )

    async def _send(self, request: httpx.Request, *, stream: bool) -> httpx.Response:
        try:
            response = await self._http.send(request, stream=stream)
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout("upstream timed out", code="upstream_timeout") from exc
        except httpx.HTTPError as exc:
            raise UpstreamUnavailable(f"upstream unreachable: {type(exc).__name__}",
                                      code="upstream_unreachable") from exc
        if response.status_code >= 400:
            body = await _read_and_close(response)
            raise error_for_status(response.status_code, message_from_body(body, response.status_code),
                                   self._secrets)
        return response

    async def complete(self, deployment: Deployment, body: dict[str, Any]) -> Completion:
        response = await self._send(self._request(deployment, body), stream=False)
        return Completion(raw=response.content, model_group=deployment.model_name)

    async def open_stream(self, deployment: Deployment, body: dict[str, Any]) -> UpstreamStream:
        response = await self._send(self._request(deployment, body), stream=True)
        return UpstreamStream(chunks=_raw_chunks(response), close=response.aclose,
                              model_group=deployment.model_name)


async def _read_and_close(response: httpx.Response) -> bytes:
    try:
        return await response.aread()
    except httpx.HTTPError:
        return b""
    finally:
        await response.aclose()


async def _raw_chunks(response: httpx.Response):  # type: ignore[no-untyped-def]
    try:
        async for chunk in response.aiter_raw():
            yield chunk
    except httpx.TimeoutException as exc:
        raise UpstreamTimeout("upstream stalled mid-stream", code="upstream_timeout") from exc
    except httpx.HTTPError as exc:
        raise UpstreamError(f"upstream stream broke: {type(exc).__name__}") from exc
