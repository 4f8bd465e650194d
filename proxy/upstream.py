"""UpstreamClient: the one door through which every upstream call passes.

User traffic and, later, the scorers' own re-asks both call ``complete`` /
``open_stream`` with a model group name. Each group goes either to the
pass-through backend (all its deployments speak OpenAI's wire format) or to
litellm's Router. Retries within a group follow ``router_settings`` for the
pass-through path (litellm's Router retries its own); fallbacks to other groups
are applied here for both, so the behaviour of a config does not depend on
which path serves it — and so that a fallback to a group the caller's key may
not use is skipped (and counted) on both. Calls to the embedded single-slot
model server wait for a slot here, user calls ahead of scoring calls (``slots.PrioritySlots``).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx

from .completion import Completion, UpstreamStream
from .config import Deployment, GatewaySettings
from .errors import ModelNotFound, UpstreamError
from .litellm_backend import LitellmBackend
from .passthrough import PassthroughBackend
from .slots import Priority, PrioritySlots
from .upstream_errors import UpstreamErrors

__all__ = ["ModelFilter", "OnFallbackSkipped", "UpstreamClient"]

T = TypeVar("T")

ModelFilter = Callable[[str], bool]  # may the caller use this model group?
OnFallbackSkipped = Callable[[str, str], None]  # (group asked for, fallback skipped)


def _any_model(group: str) -> bool:
    return True


class UpstreamClient:
    def __init__(self, settings: GatewaySettings, http: httpx.AsyncClient, *,
                 on_fallback_skipped: OnFallbackSkipped = lambda group, fallback: None) -> None:
        self._groups = settings.model_groups()
        self._on_fallback_skipped = on_fallback_skipped
        self._router_settings = settings.router_settings
        self._http = http
        errors = UpstreamErrors(settings.secrets())
        self._passthrough = PassthroughBackend(
            http, default_timeout=settings.router_settings.timeout, errors=errors,
            max_response_bytes=settings.trustgate.upstream.max_response_bytes)
        self._fast_groups = {
            name for name, deployments in self._groups.items()
            if settings.trustgate.passthrough and all(d.is_openai_compatible for d in deployments)
        }
        slow_groups = set(self._groups) - self._fast_groups
        self._litellm = LitellmBackend(settings, slow_groups, errors) if slow_groups else None
        self._cursor = itertools.count()
        self._default_timeout = settings.router_settings.timeout
        local = settings.trustgate.local_upstream
        self._local_base = local.base_url if local.enabled else None
        self._local_slots = PrioritySlots(local.slots)

    def _slots_for(self, deployment: Deployment) -> PrioritySlots | None:
        return self._local_slots if self._local_base and deployment.api_base == self._local_base else None

    @property
    def model_groups(self) -> list[str]:
        return list(self._groups)

    def uses_passthrough(self, group: str) -> bool:
        return group in self._fast_groups

    def require_group(self, group: str) -> None:
        if group not in self._groups:
            raise ModelNotFound(f"The model `{group}` does not exist", param="model",
                                code="model_not_found")

    async def complete(self, group: str, body: dict[str, Any], *, may_use: ModelFilter = _any_model,
                       priority: Priority = Priority.USER) -> Completion:
        """A non-streamed completion from ``group`` (or those of its fallbacks ``may_use`` allows)."""
        self.require_group(group)
        return await self._with_fallbacks(group, may_use, lambda g: self._complete_in_group(g, body, priority))

    async def open_stream(self, group: str, body: dict[str, Any], *, may_use: ModelFilter = _any_model,
                          priority: Priority = Priority.USER) -> UpstreamStream:
        """An opened stream from ``group`` (or its allowed fallbacks); errors before the first byte raise."""
        self.require_group(group)
        return await self._with_fallbacks(group, may_use, lambda g: self._stream_in_group(g, body, priority))

    async def _with_fallbacks(self, group: str, may_use: ModelFilter, call: Callable[[str], Awaitable[T]]) -> T:
        """``group``, then each configured fallback the caller may use; the error of the last one tried is raised.

        A fallback the caller's key may not use is skipped when its turn comes
        (and reported), so a failing group never opens a door to another.
        """
        try:
            return await call(group)
        except UpstreamError as exc:
            if exc.client_fault:
                raise
            failure = exc
        for fallback in self._router_settings.fallbacks_for(group):
            if not may_use(fallback):
                self._on_fallback_skipped(group, fallback)
                continue
            try:
                return await call(fallback)
            except UpstreamError as exc:
                if exc.client_fault:
                    raise
                failure = exc
        raise failure

    async def _complete_in_group(self, group: str, body: dict[str, Any], priority: Priority) -> Completion:
        if self._litellm is not None and group not in self._fast_groups:
            return await self._litellm.complete(group, body)
        return await self._retrying(group, lambda d: self._complete_at(d, body, priority))

    async def _stream_in_group(self, group: str, body: dict[str, Any], priority: Priority) -> UpstreamStream:
        if self._litellm is not None and group not in self._fast_groups:
            return await self._litellm.open_stream(group, body)
        return await self._retrying(group, lambda d: self._stream_at(d, body, priority))

    async def _complete_at(self, deployment: Deployment, body: dict[str, Any], priority: Priority) -> Completion:
        slots = self._slots_for(deployment)
        if slots is None:
            return await self._passthrough.complete(deployment, body)
        async with slots.held(priority, deployment.timeout or self._default_timeout):
            return await self._passthrough.complete(deployment, body)

    async def _stream_at(self, deployment: Deployment, body: dict[str, Any], priority: Priority) -> UpstreamStream:
        slots = self._slots_for(deployment)
        if slots is None:
            return await self._passthrough.open_stream(deployment, body)
        return await slots.open_stream(priority, deployment.timeout or self._default_timeout,
                                       lambda: self._passthrough.open_stream(deployment, body))

    async def _retrying(self, group: str, call: Callable[[Deployment], Awaitable[T]]) -> T:
        """Round-robin over the group's deployments, retrying what LiteLLM would retry."""
        deployments = self._groups[group]
        start = next(self._cursor)
        attempts = self._router_settings.num_retries + 1
        for attempt in range(attempts):
            try:
                return await call(deployments[(start + attempt) % len(deployments)])
            except UpstreamError as exc:
                if not exc.retryable or attempt == attempts - 1:
                    raise
                await asyncio.sleep(self._router_settings.retry_after)
        raise AssertionError("unreachable: the loop returns or raises")

    async def check_ready(self, timeout: float = 2.0) -> dict[str, str]:
        """Per model group: "ok", "unreachable", or "unchecked" for litellm-only providers."""
        async def probe(deployments: list[Deployment]) -> str:
            bases = [d for d in deployments if d.api_base]
            if not bases:
                return "unchecked"
            for deployment in bases:
                headers = {}
                if deployment.api_key is not None:
                    headers["authorization"] = f"Bearer {deployment.api_key.get_secret_value()}"
                try:
                    response = await self._http.get(f"{deployment.api_base}/models", headers=headers,
                                                    timeout=timeout)
                except httpx.HTTPError:
                    continue
                if response.status_code < 500:
                    return "ok"
            return "unreachable"

        names = list(self._groups)
        results = await asyncio.gather(*(probe(self._groups[n]) for n in names))
        return dict(zip(names, results, strict=True))

    async def aclose(self) -> None:
        if self._litellm is not None:
            await self._litellm.aclose()
