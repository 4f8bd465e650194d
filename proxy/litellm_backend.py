"""The translating path: providers that do not speak OpenAI's wire format go through litellm's Router.

This is the only module that imports litellm, and it does so lazily: a gateway
whose deployments are all OpenAI-compatible never pays litellm's import time
and memory.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterable
from typing import Any

import orjson

from .completion import Completion, UpstreamStream
from .config import GatewaySettings
from .errors import GatewayError, UpstreamTimeout, UpstreamUnavailable
from .upstream_errors import error_for_status, scrub

__all__ = ["LitellmBackend"]


def _import_litellm() -> Any:
    # Without this, litellm fetches its model price map from the internet at import.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    # Module settings, set once: no banner/debug text on stdout, no telemetry.
    litellm.suppress_debug_info = True
    litellm.telemetry = False
    return litellm


class LitellmBackend:
    def __init__(self, settings: GatewaySettings, groups: Iterable[str]) -> None:
        self._litellm = _import_litellm()
        wanted = set(groups)
        router_settings = settings.router_settings
        model_list = [
            {"model_name": d.model_name, "litellm_params": d.litellm_params_plain()}
            for d in settings.model_list if d.model_name in wanted
        ]
        # Fallbacks are applied by UpstreamClient for both backends alike, so the
        # Router itself gets none.
        self._router = self._litellm.Router(
            model_list=model_list, num_retries=router_settings.num_retries,
            timeout=router_settings.timeout, retry_after=router_settings.retry_after,
        )
        self._secrets = settings.secrets()

    def _translate(self, exc: Exception) -> GatewayError:
        if isinstance(exc, GatewayError):
            return exc
        litellm = self._litellm
        message = scrub(str(getattr(exc, "message", exc)), self._secrets)
        if isinstance(exc, litellm.Timeout):
            return UpstreamTimeout(f"upstream timed out: {message}", code="upstream_timeout")
        if isinstance(exc, litellm.APIConnectionError):
            return UpstreamUnavailable(f"upstream unreachable: {message}", code="upstream_unreachable")
        status = getattr(exc, "status_code", None)
        return error_for_status(status if isinstance(status, int) else 502, message)

    async def complete(self, group: str, body: dict[str, Any]) -> Completion:
        try:
            response = await self._router.acompletion(**{**body, "model": group})
        except Exception as exc:  # litellm raises many unrelated types; all are mapped here
            raise self._translate(exc) from exc
        return Completion(raw=orjson.dumps(response.model_dump()), model_group=group)

    async def open_stream(self, group: str, body: dict[str, Any]) -> UpstreamStream:
        try:
            wrapper = await self._router.acompletion(**{**body, "model": group, "stream": True})
            chunks = self._sse(wrapper)
            first = await anext(chunks)
        except StopAsyncIteration:
            first = b"data: [DONE]\n\n"
            chunks = _empty()
        except Exception as exc:
            raise self._translate(exc) from exc
        return UpstreamStream(chunks=chunks, close=chunks.aclose, model_group=group, first=[first])

    async def _sse(self, wrapper: Any) -> AsyncIterator[bytes]:
        try:
            async for chunk in wrapper:
                yield b"data: " + orjson.dumps(chunk.model_dump(exclude_none=True)) + b"\n\n"
        except Exception as exc:
            raise self._translate(exc) from exc
        yield b"data: [DONE]\n\n"

    async def aclose(self) -> None:
        close = getattr(self._router, "aclose", None)
        if close is not None:
            await close()


async def _empty() -> AsyncIterator[bytes]:
    return
    yield  # pragma: no cover - makes this an async generator
