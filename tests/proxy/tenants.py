"""Three client keys (one an admin) on the product's default scoring policy, and a chat request by key."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import gateway_config
from tests.servers import ServerThread

KEYS = [
    {"key": "sk-team-a", "name": "team-a"},
    {"key": "sk-team-b", "name": "team-b"},
    {"key": "sk-auditor", "name": "auditor", "admin": True},
]


def operator_config(upstream_url: str, **scoring: Any) -> dict[str, Any]:
    """Three client keys (one an admin) and the product's default policy: no allow_client_mode set."""
    config = gateway_config(upstream_url)
    config["trustgate"] = {"keys": KEYS, "scoring": {"queue": {"scorer_timeout_s": 5.0}, **scoring}}
    return config


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def chat(
    server: ServerThread,
    key: str,
    content: str = "Who built the first temple?",
    headers: dict[str, str] | None = None,
    model: str = "fake",
) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={**bearer(key), **(headers or {})},
        timeout=30,
        json={"model": model, "messages": [{"role": "user", "content": content}]},
    )
