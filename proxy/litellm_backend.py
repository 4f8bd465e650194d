"""The translating path: providers that do not speak OpenAI's wire format go through litellm's Router.

This is the only module that imports litellm, and it does so lazily: a gateway
whose deployments are all OpenAI-compatible never pays litellm's import time
and memory.

It behaves as the pass-through path does: failures go through the same
``UpstreamErrors`` mapping, a call is bounded by a deadline (the group's
``timeout`` for each attempt the Router may make) and by ``max_response_bytes``,
a reply must parse as a chat completion, and deployments are never put in
cooldown — litellm would otherwise bench a deployment for every client after
one client's 401 or 404, which the pass-through path never does.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, Iterable
from typing import Any

import orjson

from .completion import DONE_EVENT, Completion, UpstreamStream, bounded_chunks, checked_completion, sse_event
from .config import Deployment, GatewaySettings
from .errors import GatewayError
from .upstream_errors import UpstreamErrors

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
    def __init__(self, settings: GatewaySettings, groups: Iterable[str], errors: UpstreamErrors) -> None:
        self._litellm = _import_litellm()
        wanted = set(groups)
        router_settings = settings.router_settings
        deployments = [d for d in settings.model_list if d.model_name in wanted]
        model_list = [{"model_name": d.model_name, "litellm_params": d.litellm_params_plain()} for d in deployments]
        # Fallbacks are applied by UpstreamClient for both backends alike, so the
        # Router itself gets none.
        self._router = self._litellm.Router(
            model_list=model_list, num_retries=router_settings.num_retries,
            timeout=router_settings.timeout, retry_after=router_settings.retry_after, disable_cooldowns=True,
        )
        attempts = router_settings.num_retries + 1
        groups_here = {name: ds for name, ds in settings.model_groups().items() if name in wanted}
        # The Router picks the deployment, so a call is bounded by its group's slowest one.
        self._deadlines = {name: max(d.deadline(router_settings.timeout) for d in ds) * attempts
                           for name, ds in groups_here.items()}
        self._stream_deadlines = {name: _whole_stream_seconds(ds) for name, ds in groups_here.items()}
        self._errors = errors
        self._max_bytes = settings.trustgate.upstream.max_response_bytes

    def _translate(self, exc: Exception) -> GatewayError:
        if isinstance(exc, GatewayError):
            return exc
        if isinstance(exc, self._litellm.Timeout):
            return self._errors.timed_out(f"{type(exc).__name__}: {exc}")
        return self._errors.for_exception(exc)

    async def complete(self, group: str, body: dict[str, Any]) -> Completion:
        try:
            async with asyncio.timeout(self._deadlines[group]):
                response = await self._router.acompletion(**{**body, "model": group})
        except Exception as exc:  # litellm raises many unrelated types; all are mapped here
            raise self._translate(exc) from exc
        # litellm has read the whole body by now: the cap keeps it from clients and scorers, not from memory.
        return checked_completion(orjson.dumps(response.model_dump()), group, max_bytes=self._max_bytes,
                                  errors=self._errors)

    async def open_stream(self, group: str, body: dict[str, Any]) -> UpstreamStream:
        try:
            async with asyncio.timeout(self._deadlines[group]):
                wrapper = await self._router.acompletion(**{**body, "model": group, "stream": True})
                chunks = bounded_chunks(self._sse(wrapper), self._max_bytes, self._errors,
                                        seconds=self._stream_deadlines[group])
                first = await anext(chunks)
        except StopAsyncIteration:
            first = DONE_EVENT
            chunks = _empty()
        except Exception as exc:
            raise self._translate(exc) from exc
        return UpstreamStream(chunks=chunks, close=chunks.aclose, model_group=group, first=[first])

    async def _sse(self, wrapper: Any) -> AsyncGenerator[bytes, None]:
        try:
            async for chunk in wrapper:
                yield sse_event(chunk.model_dump(exclude_none=True))
        except Exception as exc:
            raise self._translate(exc) from exc
        yield DONE_EVENT

    async def aclose(self) -> None:
        close = getattr(self._router, "aclose", None)
        if close is not None:
            await close()


def _whole_stream_seconds(deployments: list[Deployment]) -> float | None:
    """The group's ``stream_timeout`` when every deployment sets one (the largest); else None."""
    seconds = [d.stream_timeout for d in deployments]
    return None if any(s is None for s in seconds) else max(s for s in seconds if s is not None)


async def _empty() -> AsyncGenerator[bytes, None]:
    return
    yield  # pragma: no cover - makes this an async generator
