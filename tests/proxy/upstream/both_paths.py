"""The two upstream paths every misbehaviour is tried on (pass-through and litellm), and the OpenAI error
shape a client gets on either."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import gateway_config
from tests.fake_upstream import FakeUpstream

PATHS = ["passthrough", "litellm"]


def path_config(fake: FakeUpstream, path: str, *, timeout: float = 5, **trustgate: Any) -> dict[str, Any]:
    config = gateway_config(fake.url)  # type: ignore[attr-defined]
    config["model_list"][0]["litellm_params"]["timeout"] = timeout
    config["trustgate"] = {"passthrough": path == "passthrough", **trustgate}
    return config


def openai_error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return error
