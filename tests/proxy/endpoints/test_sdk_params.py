"""The request parameters each endpoint accepts, checked against the installed OpenAI SDK's own types.

When the SDK gains a parameter, ``test_every_sdk_parameter_is_classified``
fails until someone decides whether it is forwarded or refused (and why):
the allowlist cannot drift from the SDK without anyone noticing.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from openai.types import completion_create_params, embedding_create_params
from openai.types.chat import completion_create_params as chat_create_params
from openai.types.responses import response_create_params

from proxy.base.errors import InvalidRequest
from proxy.base.sdk_params import CLIENT_STEERING, FORWARDED, REFUSED, Endpoint
from proxy.endpoints.request import parse_chat_request, parse_endpoint_request

pytestmark = pytest.mark.unit

# The SDK's body parameters per endpoint; ``stream`` lives in the streaming variants, not the base.
SDK_TYPES: dict[Endpoint, tuple[type, bool]] = {
    "chat": (chat_create_params.CompletionCreateParamsBase, True),
    "completions": (completion_create_params.CompletionCreateParamsBase, True),
    "embeddings": (embedding_create_params.EmbeddingCreateParams, False),
    "responses": (response_create_params.ResponseCreateParamsBase, True),
}


def sdk_params(endpoint: Endpoint) -> set[str]:
    typed, streams = SDK_TYPES[endpoint]
    return set(typed.__annotations__) | ({"stream"} if streams else set())


@pytest.mark.parametrize("endpoint", list(SDK_TYPES))
def test_every_sdk_parameter_is_classified(endpoint: Endpoint) -> None:
    unclassified = sdk_params(endpoint) - FORWARDED[endpoint] - set(REFUSED[endpoint])
    assert not unclassified, f"the openai SDK added {sorted(unclassified)} to {endpoint}: forward or refuse them"


@pytest.mark.parametrize("endpoint", list(SDK_TYPES))
def test_nothing_is_forwarded_that_the_sdk_does_not_know(endpoint: Endpoint) -> None:
    assert FORWARDED[endpoint] <= sdk_params(endpoint)
    assert not FORWARDED[endpoint] & set(REFUSED[endpoint])


@pytest.mark.parametrize("endpoint", list(SDK_TYPES))
def test_no_steering_parameter_is_forwarded(endpoint: Endpoint) -> None:
    assert not FORWARDED[endpoint] & CLIENT_STEERING


@pytest.mark.parametrize("name", ["metadata", "moderation", "prompt_cache_options", "prompt_cache_retention"])
def test_official_parameters_a_hand_kept_list_missed_pass(name: str) -> None:
    """Four official parameters that a hand-kept list, drifting from the SDK, refused."""
    value: Any = {
        "metadata": {"team": "a"},
        "moderation": True,
        "prompt_cache_options": {},
        "prompt_cache_retention": "24h",
    }[name]
    body = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}], name: value})
    assert parse_chat_request(body).body[name] == value


@pytest.mark.parametrize("endpoint", ["chat", "completions", "embeddings", "responses"])
@pytest.mark.parametrize("name", sorted(CLIENT_STEERING))
def test_steering_parameters_are_refused_by_name(endpoint: Endpoint, name: str) -> None:
    base = {
        "chat": '"messages": [{"role": "user", "content": "x"}]',
        "completions": '"prompt": "x"',
        "embeddings": '"input": "x"',
        "responses": '"input": "x"',
    }[endpoint]
    raw = f'{{"model": "m", {base}, "{name}": "http://169.254.169.254/"}}'.encode()
    with pytest.raises(InvalidRequest) as caught:
        parse_chat_request(raw) if endpoint == "chat" else parse_endpoint_request(raw, endpoint)
    assert caught.value.param == name
