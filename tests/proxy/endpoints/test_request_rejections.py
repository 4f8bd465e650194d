"""Bad requests get a clear 4xx in the OpenAI error shape and never reach the upstream."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import openai
import pytest

from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

AUTH = {"authorization": f"Bearer {MASTER_KEY}"}
CHAT = {"model": "fake", "messages": [{"role": "user", "content": "hi"}]}


def post(
    server: ServerThread, body: object = None, *, content: bytes | None = None, headers: dict[str, str] | None = None
) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/chat/completions",
        json=body,
        content=content,
        headers=AUTH if headers is None else headers,
        timeout=10,
    )


def assert_openai_error(response: httpx.Response, status: int, error_type: str) -> dict[str, object]:
    assert response.status_code == status
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == error_type and error["message"]
    return error


@pytest.mark.parametrize(
    "headers", [{}, {"authorization": "Bearer wrong"}, {"authorization": "Basic abc"}, {"authorization": "Bearer"}]
)
def test_missing_or_wrong_key_is_401(
    gateway: ServerThread, fake_upstream: FakeUpstream, headers: dict[str, str]
) -> None:
    assert_openai_error(post(gateway, CHAT, headers=headers), 401, "authentication_error")
    assert fake_upstream.requests == []


def test_openai_client_sees_authentication_error(gateway: ServerThread) -> None:
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"{gateway.url}/v1", api_key="nope", max_retries=0).chat.completions.create(
            model="fake", messages=[{"role": "user", "content": "x"}]
        )


def test_malformed_json_is_400(gateway: ServerThread) -> None:
    error = assert_openai_error(post(gateway, content=b'{"model": "fake", "messages": ['), 400, "invalid_request_error")
    assert error["code"] == "invalid_json"


@pytest.mark.parametrize(
    "body, param",
    [
        ({"model": "fake"}, "messages"),
        ({"model": "fake", "messages": []}, "messages"),
        ({"model": "fake", "messages": [{"role": "wizard", "content": "x"}]}, "messages.0.role"),
        ({"model": "fake", "messages": "hello"}, "messages"),
        ({**CHAT, "temperature": 9}, "temperature"),
        ({**CHAT, "max_tokens": "many"}, "max_tokens"),
        ({**CHAT, "stream": "yes"}, "stream"),
        ([CHAT], None),
    ],
)
def test_schema_errors_are_400_and_name_the_param(
    gateway: ServerThread, fake_upstream: FakeUpstream, body: object, param: str | None
) -> None:
    error = assert_openai_error(post(gateway, body), 400, "invalid_request_error")
    assert error["param"] == param
    assert fake_upstream.requests == []


@pytest.mark.parametrize(
    "field",
    [
        "api_base",
        "base_url",
        "api_key",
        "extra_headers",
        "fallbacks",
        "custom_llm_provider",
        "mock_response",
        "mock_testing_fallbacks",
        "litellm_params",
        "use_chat_completions_api",
        "timeout",
    ],
)
def test_gateway_steering_params_are_refused(gateway: ServerThread, fake_upstream: FakeUpstream, field: str) -> None:
    error = assert_openai_error(post(gateway, {**CHAT, field: "http://169.254.169.254/"}), 400, "invalid_request_error")
    assert error["param"] == field and error["code"] == "unsupported_parameter"
    assert fake_upstream.requests == []


def test_metadata_is_checked_as_openai_documents_it(gateway: ServerThread, fake_upstream: FakeUpstream) -> None:
    """An official parameter (string values only), not a door into litellm's routing metadata."""
    error = assert_openai_error(
        post(gateway, {**CHAT, "metadata": "http://169.254.169.254/"}), 400, "invalid_request_error"
    )
    assert error["param"] == "metadata" and error["code"] == "invalid_value"
    assert fake_upstream.requests == []


def test_unknown_model_is_404(gateway: ServerThread) -> None:
    error = assert_openai_error(post(gateway, {**CHAT, "model": "gpt-17"}), 404, "not_found_error")
    assert error["code"] == "model_not_found"


def test_oversized_body_is_413(fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]) -> None:
    server = start_gateway(gateway_config(fake_upstream.url, trustgate={"server": {"max_body_bytes": 1000}}))  # type: ignore[attr-defined]
    body = {"model": "fake", "messages": [{"role": "user", "content": "x" * 2000}]}
    assert_openai_error(post(server, body), 413, "invalid_request_error")
    assert fake_upstream.requests == []


def test_client_key_limited_to_its_models(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = gateway_config(
        fake_upstream.url,
        trustgate={
            "keys": [  # type: ignore[attr-defined]
                {"key": "os.environ/TEAM_KEY", "name": "team-a", "models": ["other"]}
            ]
        },
    )
    config["model_list"].append(
        {
            "model_name": "other",
            "litellm_params": {"model": "openai/gpt-4o-mini", "api_base": f"{fake_upstream.url}/v1"},
        }
    )  # type: ignore[attr-defined]
    server = start_gateway(config, environ={"TEAM_KEY": "sk-team-a"})
    team = {"authorization": "Bearer sk-team-a"}
    assert_openai_error(post(server, CHAT, headers=team), 403, "permission_error")
    assert post(server, {**CHAT, "model": "other"}, headers=team).status_code == 200
    listed = httpx.get(f"{server.url}/v1/models", headers=team).json()["data"]
    assert [m["id"] for m in listed] == ["other"]
    assert post(server, CHAT).status_code == 200  # the master key may use every model


def test_unknown_route_is_openai_shaped_404(gateway: ServerThread) -> None:
    assert_openai_error(httpx.get(f"{gateway.url}/v1/nothing-here", headers=AUTH), 404, "not_found_error")


@pytest.mark.parametrize(
    "body, param",
    [
        ({"model": "fake", "messages": [{"role": ["user"], "content": "x"}]}, "messages.0.role"),
        ({"model": "fake", "messages": [{"role": {"user": 1}, "content": "x"}]}, "messages.0.role"),
        ({"model": "fake", "messages": [{"role": "user", "content": "x"}, "not a message"]}, "messages.1"),
        ({"model": "fake", "messages": [{"role": "user", "content": {"text": "x"}}]}, "messages.0.content"),
        ({"model": ["fake"], "messages": [{"role": "user", "content": "x"}]}, "model"),
    ],
)
def test_wrongly_typed_messages_are_400(
    gateway: ServerThread, fake_upstream: FakeUpstream, body: object, param: str
) -> None:
    error = assert_openai_error(post(gateway, body), 400, "invalid_request_error")
    assert str(error["param"]).startswith(param)
    assert fake_upstream.requests == []


@pytest.mark.parametrize("depth", [65, 260, 1000, 1100])
def test_bodies_nested_too_deep_are_400(gateway: ServerThread, fake_upstream: FakeUpstream, depth: int) -> None:
    nested = "[" * depth + "1" + "]" * depth
    raw = f'{{"model": "fake", "messages": [{{"role": "user", "content": "x"}}], "logit_bias": {nested}}}'
    error = assert_openai_error(post(gateway, content=raw.encode()), 400, "invalid_request_error")
    assert error["code"] in ("nesting_too_deep", "invalid_json")
    assert fake_upstream.requests == []


def test_a_tool_schema_of_ordinary_depth_is_forwarded(gateway: ServerThread, fake_upstream: FakeUpstream) -> None:
    schema: dict[str, object] = {"type": "string"}
    for _ in range(20):
        schema = {"type": "object", "properties": {"inner": schema}}
    tools = [{"type": "function", "function": {"name": "deep", "parameters": schema}}]
    assert post(gateway, {**CHAT, "tools": tools}).status_code == 200
    assert fake_upstream.requests[-1]["tools"] == tools
