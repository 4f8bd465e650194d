"""The harness's door to upstreams: the gateway's own config, UpstreamClient and local model server.

An evaluation must call models exactly as the gateway does (same routing,
pass-through or litellm, retries, timeouts, fallbacks), so it opens the same
parts the gateway opens in its lifespan (``proxy.assembly``), from the same YAML config. This
module and ``asking.py`` are the only ones here that import ``proxy``: the
harness is a client of the gateway, not part of its request path.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from proxy.assembly import open_upstream_client
from proxy.config import GatewaySettings, default_config_path, load_settings

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
        upstream = await open_upstream_client(settings, stack)

        async def complete(group: str, body: dict[str, Any]) -> dict[str, Any]:
            return (await upstream.complete(group, body)).data

        yield complete
