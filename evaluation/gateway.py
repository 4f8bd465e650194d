"""The harness's door to upstreams: the gateway's own config, UpstreamClient and local model server.

An evaluation must call models exactly as the gateway does (same routing,
pass-through or litellm, retries, timeouts, fallbacks), so it opens the same
parts the gateway opens in its lifespan (``proxy.assembly``), from the same YAML config; a replay
serves a whole gateway (``serve_gateway``) and talks to it over HTTP. This module and ``asking.py``
are the only ones here that import ``proxy``: the harness is a client of the gateway, not part of
its request path.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from proxy import (
    GatewaySettings,
    create_app,
    default_config_path,
    load_settings,
    open_upstream_client,
    read_config,
    settings_from_dict,
    with_current_names,
)

from .asking import Complete
from .serving import free_port, serve_app

__all__ = [
    "config_file",
    "embedded_settings_on_own_port",
    "gateway_config",
    "gateway_settings",
    "open_upstream",
    "own_local_port",
    "serve_gateway",
]


def config_file(config: Path | None) -> Path:
    """``config``, else the embedded local-model config's file."""
    return config or default_config_path()


def gateway_settings(config: Path | None) -> GatewaySettings:
    """The gateway's settings from ``config`` (default: the embedded local-model config)."""
    return load_settings(config_file(config))


def gateway_config(config: Path | None) -> dict[str, Any]:
    """The raw config mapping (default: the embedded one), for a caller that adjusts it before serving it: its
    renamed options under their current names, so that an adjustment cannot give one option twice."""
    path = config_file(config)
    return with_current_names(read_config(path), path)


def own_local_port(raw: dict[str, Any]) -> None:
    """A free port for the embedded model server, so a gateway already running on the machine keeps its own."""
    local = raw.get("trustgate", {}).get("local_upstream") or {}
    if not local.get("enabled"):
        return
    old, new = f"127.0.0.1:{local.get('port', 8090)}", f"127.0.0.1:{free_port()}"
    local["port"] = int(new.rsplit(":", 1)[1])
    for deployment in raw.get("model_list") or []:
        params = deployment.get("litellm_params") or {}
        if isinstance(params.get("api_base"), str):
            params["api_base"] = params["api_base"].replace(old, new)


def embedded_settings_on_own_port() -> GatewaySettings:
    """The embedded config's settings with its model server on a free port (``own_local_port``)."""
    raw = gateway_config(None)
    own_local_port(raw)
    return settings_from_dict(raw)


@contextlib.asynccontextmanager
async def serve_gateway(raw: dict[str, Any], source: Path | None = None) -> AsyncIterator[tuple[str, GatewaySettings]]:
    """A real gateway for ``raw`` on a free loopback port: its URL and settings while the block runs.

    ``source``: the file ``raw`` was read from, whose folder its relative paths are relative to.
    """
    settings = settings_from_dict(raw, source=source)
    async with serve_app(create_app(settings, registry=CollectorRegistry())) as url:
        yield url, settings


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
