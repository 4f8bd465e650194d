"""The harness's door to upstreams: the gateway's own config, UpstreamClient and local model server.

An evaluation must call models exactly as the gateway does (same routing,
pass-through or litellm, retries, timeouts, fallbacks), so it opens the same
parts ``proxy.app`` opens in its lifespan, from the same YAML config. This
module and ``asking.py`` are the only ones here that import ``proxy``: the
harness is a client of the gateway, not part of its request path.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from proxy.app import http_client
from proxy.config import GatewaySettings, default_config_path, load_settings
from proxy.local_upstream import run_local_upstream
from proxy.upstream import UpstreamClient

from .asking import Complete

__all__ = ["gateway_settings", "open_upstream"]


def gateway_settings(config: Path | None) -> GatewaySettings:
    """The gateway's settings from ``config`` (default: the embedded local-model config)."""
    return load_settings(config or default_config_path())


@contextlib.asynccontextmanager
async def open_upstream(settings: GatewaySettings) -> AsyncIterator[Complete]:
    """``complete(group, body) -> completion JSON`` over the gateway's UpstreamClient.

    Starts the embedded llama.cpp server first when the config enables it, and
    stops it on exit, as the gateway does.
    """
    async with contextlib.AsyncExitStack() as stack:
        if settings.trustgate.local_upstream.enabled:
            await stack.enter_async_context(run_local_upstream(settings.trustgate.local_upstream))
        http = await stack.enter_async_context(http_client())
        upstream = UpstreamClient(settings, http)
        stack.push_async_callback(upstream.aclose)

        async def complete(group: str, body: dict[str, Any]) -> dict[str, Any]:
            return (await upstream.complete(group, body)).data

        yield complete
