"""The translating path: providers that do not speak OpenAI's wire format go through litellm's Router.

This is the only module that imports litellm, and it does so lazily: a gateway
whose deployments are all OpenAI-compatible never pays litellm's import time
and memory.

It behaves as the pass-through path does: failures go through the same
``UpstreamErrors`` mapping, a call is bounded by a deadline (the group's
``timeout``) and by ``max_response_bytes``, a chat reply must parse as a chat
completion, and deployments are never put in cooldown — litellm would
otherwise bench a deployment for every client after one client's 401 or 404
(or a 404 on ``/responses``), which the pass-through path never does. Retries
and fallbacks are UpstreamClient's, for both paths alike.

It also holds the Responses API bridge: for a deployment that only speaks chat
completions, litellm's responses↔chat transformation turns a Responses request
into a chat completion and the answer (or stream) back into the Responses
shape, on either upstream path.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable
from typing import Any

import orjson

from .completion import (
    DONE_EVENT,
    Completion,
    Forwarded,
    UpstreamStream,
    bounded_chunks,
    checked_completion,
    checked_forwarded,
    sse_event,
)
from .config import ConfigError, Deployment, GatewaySettings
from .errors import GatewayError
from .sdk_params import Endpoint
from .upstream_errors import UpstreamErrors

__all__ = ["LitellmBackend", "ResponsesBridge", "check_providers"]

# litellm reads these request fields itself (``metadata`` steers its routing and
# logging) and does not forward them, so a client's never reach it.
_LITELLM_OWN_FIELDS = frozenset({"metadata"})

# The Router's method for each endpoint.
_ROUTER_CALLS: dict[Endpoint, str] = {"chat": "acompletion", "completions": "atext_completion",
                                      "embeddings": "aembedding", "responses": "aresponses"}


def _import_litellm() -> Any:
    # Without this, litellm fetches its model price map from the internet at import.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    # Module settings, set once: no banner/debug text on stdout, no telemetry.
    litellm.suppress_debug_info = True
    litellm.telemetry = False
    return litellm


def check_providers(deployments: Iterable[Deployment]) -> None:
    """A deployment whose provider litellm does not know is a one-line config error, not a start-up traceback."""
    litellm = _import_litellm()
    for deployment in deployments:
        try:
            litellm.get_llm_provider(model=deployment.provider_model, api_base=deployment.api_base)
        except Exception:  # litellm raises its BadRequestError with a page of advice
            raise ConfigError(f"model_list: `{deployment.model_name}` names `{deployment.provider_model}`, whose "
                              "provider prefix litellm does not know (e.g. openai/, azure/, anthropic/)") from None


def _client_fields(body: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in body.items() if name not in _LITELLM_OWN_FIELDS}


class _LitellmCalls:
    """What both litellm users share: error mapping, the bounds on replies, SSE framing."""

    def __init__(self, litellm: Any, errors: UpstreamErrors, max_bytes: int) -> None:
        self._litellm = litellm
        self._errors = errors
        self._max_bytes = max_bytes

    def translate(self, exc: Exception) -> GatewayError:
        if isinstance(exc, GatewayError):
            return exc
        if isinstance(exc, self._litellm.Timeout):
            return self._errors.timed_out(f"{type(exc).__name__}: {exc}")
        return self._errors.for_exception(exc)

    async def whole(self, call: Awaitable[Any], deadline: float, group: str, endpoint: Endpoint) -> Any:
        try:
            async with asyncio.timeout(deadline):
                response = await call
        except Exception as exc:  # litellm raises many unrelated types; all are mapped here
            raise self.translate(exc) from exc
        # litellm has read the whole body by now: the cap keeps it from clients and scorers, not from memory.
        raw = orjson.dumps(response.model_dump(mode="json", warnings=False))
        if endpoint == "chat":
            return checked_completion(raw, group, max_bytes=self._max_bytes, errors=self._errors)
        return checked_forwarded(raw, group, max_bytes=self._max_bytes, errors=self._errors)

    async def opened(self, call: Callable[[], Awaitable[Any]], deadline: float, stream_seconds: float | None,
                     group: str, endpoint: Endpoint) -> UpstreamStream:
        """Open a litellm stream and read its first event, so that errors before the first byte still raise."""
        try:
            async with asyncio.timeout(deadline):
                wrapper = await call()
                chunks = bounded_chunks(self._sse(wrapper, endpoint), self._max_bytes, self._errors,
                                        seconds=stream_seconds)
                first = await anext(chunks)
        except StopAsyncIteration:
            first = b"" if endpoint == "responses" else DONE_EVENT
            chunks = _empty()
        except Exception as exc:
            raise self.translate(exc) from exc
        return UpstreamStream(chunks=chunks, close=chunks.aclose, model_group=group, first=[first])

    async def _sse(self, wrapper: Any, endpoint: Endpoint) -> AsyncGenerator[bytes, None]:
        """litellm's stream objects as the SSE the endpoint's clients expect.

        Responses events are named (``event: response.output_text.delta``) and
        have no ``[DONE]``; chat and text completion chunks end with ``[DONE]``.
        """
        try:
            async for item in wrapper:
                payload = item.model_dump(mode="json", exclude_none=True, warnings=False)
                name = str(payload.get("type", "message")) if endpoint == "responses" else None
                yield sse_event(payload, name=name)
        except Exception as exc:
            raise self.translate(exc) from exc
        if endpoint != "responses":
            yield DONE_EVENT


class LitellmBackend:
    def __init__(self, settings: GatewaySettings, groups: Iterable[str], errors: UpstreamErrors) -> None:
        self._litellm = _import_litellm()
        wanted = set(groups)
        router_settings = settings.router_settings
        deployments = [d for d in settings.model_list if d.model_name in wanted]
        model_list = [{"model_name": d.model_name, "litellm_params": d.litellm_params_plain()} for d in deployments]
        # Fallbacks and retries (with backoff, Retry-After and scoring's budget) are
        # applied by UpstreamClient for both backends alike, so the Router itself does neither.
        self._router = self._litellm.Router(
            model_list=model_list, num_retries=0, timeout=router_settings.timeout, disable_cooldowns=True,
        )
        groups_here = {name: ds for name, ds in settings.model_groups().items() if name in wanted}
        # The Router picks the deployment, so a call is bounded by its group's slowest one.
        self._deadlines = {name: max(d.deadline(router_settings.timeout) for d in ds)
                           for name, ds in groups_here.items()}
        self._stream_deadlines = {name: _whole_stream_seconds(ds) for name, ds in groups_here.items()}
        self._calls = _LitellmCalls(self._litellm, errors, settings.trustgate.upstream.max_response_bytes)
        self._with_logprobs = {name for name, ds in groups_here.items()
                               if all(_takes_logprobs(self._litellm, d) for d in ds)}

    def gives_logprobs(self, group: str) -> bool:
        """Whether every deployment of ``group`` has a provider that litellm lists as taking ``logprobs``."""
        return group in self._with_logprobs

    async def complete(self, group: str, body: dict[str, Any]) -> Completion:
        completion: Completion = await self._calls.whole(self._call(group, body, "chat"), self._deadlines[group],
                                                         group, "chat")
        return completion

    async def forward(self, group: str, body: dict[str, Any], endpoint: Endpoint) -> Forwarded:
        forwarded: Forwarded = await self._calls.whole(self._call(group, body, endpoint), self._deadlines[group],
                                                       group, endpoint)
        return forwarded

    async def open_stream(self, group: str, body: dict[str, Any], endpoint: Endpoint = "chat") -> UpstreamStream:
        return await self._calls.opened(lambda: self._call(group, {**body, "stream": True}, endpoint),
                                        self._deadlines[group], self._stream_deadlines[group], group, endpoint)

    async def _call(self, group: str, body: dict[str, Any], endpoint: Endpoint) -> Any:
        """The Router's call for ``endpoint``; a Responses call the deployment refuses (404) goes over the bridge."""
        call = getattr(self._router, _ROUTER_CALLS[endpoint])
        body = _client_fields(body)
        try:
            return await call(**{**body, "model": group})
        except self._litellm.NotFoundError:
            if endpoint != "responses":
                raise
        return await call(**{**body, "model": group, "use_chat_completions_api": True})

    async def aclose(self) -> None:
        close = getattr(self._router, "aclose", None)
        if close is not None:
            await close()


class ResponsesBridge:
    """Responses API calls for pass-through deployments without ``/responses``, as chat completions via litellm."""

    def __init__(self, errors: UpstreamErrors, default_timeout: float, max_bytes: int) -> None:
        self._errors = errors
        self._default_timeout = default_timeout
        self._max_bytes = max_bytes
        self._calls: _LitellmCalls | None = None

    def _loaded(self) -> _LitellmCalls:
        if self._calls is None:
            self._calls = _LitellmCalls(_import_litellm(), self._errors, self._max_bytes)
        return self._calls

    def _call(self, deployment: Deployment, body: dict[str, Any]) -> Awaitable[Any]:
        params = deployment.litellm_params_plain()
        return self._loaded()._litellm.aresponses(**{
            **_client_fields(body), "model": deployment.provider_model, "api_base": deployment.api_base,
            "api_key": params.get("api_key"), "timeout": deployment.deadline(self._default_timeout),
            "use_chat_completions_api": True})

    async def forward(self, deployment: Deployment, body: dict[str, Any]) -> Forwarded:
        forwarded: Forwarded = await self._loaded().whole(
            self._call(deployment, body), deployment.deadline(self._default_timeout), deployment.model_name,
            "responses")
        return forwarded

    async def open_stream(self, deployment: Deployment, body: dict[str, Any]) -> UpstreamStream:
        return await self._loaded().opened(lambda: self._call(deployment, {**body, "stream": True}),
                                           deployment.deadline(self._default_timeout), deployment.stream_timeout,
                                           deployment.model_name, "responses")


def _takes_logprobs(litellm: Any, deployment: Deployment) -> bool:
    """Whether litellm passes ``logprobs`` to this deployment's provider (rather than refusing or dropping it)."""
    try:
        model, provider, _, _ = litellm.get_llm_provider(model=deployment.provider_model,
                                                         api_base=deployment.api_base)
        supported = litellm.get_supported_openai_params(model=model, custom_llm_provider=provider)
    except Exception:  # litellm raises assorted types for models it cannot place: then it is not asked
        return False
    return "logprobs" in (supported or [])


def _whole_stream_seconds(deployments: list[Deployment]) -> float | None:
    """The group's ``stream_timeout`` when every deployment sets one (the largest); else None."""
    seconds = [d.stream_timeout for d in deployments]
    return None if any(s is None for s in seconds) else max(s for s in seconds if s is not None)


async def _empty() -> AsyncGenerator[bytes, None]:
    return
    yield  # pragma: no cover - makes this an async generator
