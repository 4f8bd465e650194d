"""Fields naming objects in the operator's upstream account, over real sockets.

Every key shares the operator's upstream account, so a stored response, a
file, a vector store or a container named by one key may be another's. Each
field is refused with a 400 saying why, before anything reaches the upstream,
unless the key's config allows account references; then it is forwarded as
sent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from proxy.endpoints.account_refs import ACCOUNT_REFERENCES, account_reference_in
from tests.conftest import gateway_config
from tests.fake_upstream import FakeUpstream
from tests.servers import ServerThread

KEYS = [
    {"key": "sk-tenant", "name": "tenant"},
    {"key": "sk-trusted", "name": "trusted", "allow_account_references": True},
]

ASK = {"role": "user", "content": [{"type": "input_text", "text": "What is in it?"}]}


def with_part(part: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**ASK, "content": [*ASK["content"], part]}]


# (endpoint, the parameter the 400 names, the fields added to a plain request)
CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("responses", "previous_response_id", {"previous_response_id": "resp_someone_elses"}),
    ("responses", "conversation", {"conversation": "conv_someone_elses"}),
    ("responses", "prompt", {"prompt": {"id": "pmpt_operator"}}),
    ("responses", "store", {"store": True}),
    ("responses", "input", {"input": with_part({"type": "input_file", "file_id": "file-someone-elses"})}),
    (
        "responses",
        "input",
        {"input": with_part({"type": "input_image", "file_id": "file-someone-elses", "detail": "auto"})},
    ),
    ("responses", "input", {"input": [{"type": "item_reference", "id": "msg_someone_elses"}, ASK]}),
    ("responses", "tools", {"tools": [{"type": "file_search", "vector_store_ids": ["vs_operator"]}]}),
    ("responses", "tools", {"tools": [{"type": "code_interpreter", "container": "cntr_someone_elses"}]}),
    (
        "responses",
        "tools",
        {"tools": [{"type": "code_interpreter", "container": {"type": "auto", "file_ids": ["file-someone-elses"]}}]},
    ),
    (
        "responses",
        "tools",
        {"tools": [{"type": "image_generation", "input_image_mask": {"file_id": "file-someone-elses"}}]},
    ),
    ("responses", "include", {"include": ["file_search_call.results"]}),
    ("responses", "include", {"include": ["code_interpreter_call.outputs"]}),
    ("chat", "store", {"store": True}),
    (
        "chat",
        "messages",
        {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is in it?"},
                        {"type": "file", "file": {"file_id": "file-someone-elses"}},
                    ],
                }
            ]
        },
    ),
    (
        "chat",
        "messages",
        {
            "messages": [
                {"role": "user", "content": "Say it"},
                {"role": "assistant", "audio": {"id": "audio_someone_elses"}},
                {"role": "user", "content": "Again, slower"},
            ]
        },
    ),
]
IDS = [f"{endpoint}-{param}-{i}" for i, (endpoint, param, _) in enumerate(CASES)]


def request_body(endpoint: str, fields: dict[str, Any]) -> dict[str, Any]:
    base: dict[str, Any] = (
        {"model": "fake", "input": "What is in it?"}
        if endpoint == "responses"
        else {"model": "fake", "messages": [{"role": "user", "content": "What is in it?"}]}
    )
    return {**base, **fields}


def post(server: ServerThread, endpoint: str, key: str, body: dict[str, Any]) -> httpx.Response:
    path = {"responses": "/v1/responses", "chat": "/v1/chat/completions"}[endpoint]
    return httpx.post(f"{server.url}{path}", json=body, headers={"authorization": f"Bearer {key}"}, timeout=10)


@pytest.fixture
def server(fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]) -> ServerThread:
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"] = {"keys": KEYS}
    return start_gateway(config)


@pytest.mark.integration
@pytest.mark.parametrize("endpoint, param, fields", CASES, ids=IDS)
def test_refused_for_a_key_not_allowed_them(
    endpoint: str, param: str, fields: dict[str, Any], server: ServerThread, fake_upstream: FakeUpstream
) -> None:
    response = post(server, endpoint, "sk-tenant", request_body(endpoint, fields))
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["type"], error["param"], error["code"]) == (
        "invalid_request_error",
        param,
        "account_reference_not_allowed",
    )
    assert "operator's upstream account" in error["message"] and "allow_account_references" in error["message"]
    assert fake_upstream.requests == []


@pytest.mark.integration
@pytest.mark.parametrize("endpoint, param, fields", CASES, ids=IDS)
def test_forwarded_for_a_key_allowed_them(
    endpoint: str, param: str, fields: dict[str, Any], server: ServerThread, fake_upstream: FakeUpstream
) -> None:
    response = post(server, endpoint, "sk-trusted", request_body(endpoint, fields))
    assert response.status_code == 200, response.text
    assert [{name: sent.get(name) for name in fields} for sent in fake_upstream.requests] == [fields]


@pytest.mark.integration
@pytest.mark.parametrize(
    "endpoint, fields",
    [
        ("responses", {"store": False}),
        ("responses", {"include": ["message.output_text.logprobs", "reasoning.encrypted_content"]}),
        ("responses", {"tools": [{"type": "code_interpreter", "container": {"type": "auto"}}]}),
        (
            "responses",
            {"input": with_part({"type": "input_image", "image_url": "https://example.com/a.png", "detail": "auto"})},
        ),
        ("chat", {"store": False}),
    ],
)
def test_the_same_fields_without_a_reference_pass(
    endpoint: str, fields: dict[str, Any], server: ServerThread, fake_upstream: FakeUpstream
) -> None:
    assert post(server, endpoint, "sk-tenant", request_body(endpoint, fields)).status_code == 200
    assert len(fake_upstream.requests) == 1


@pytest.mark.unit
def test_every_listed_field_is_tested() -> None:
    """Each entry of the list, not only each parameter: several entries share ``tools`` or ``input``."""
    tested = {
        (endpoint, found.where)
        for endpoint, _, fields in CASES
        if (found := account_reference_in(request_body(endpoint, fields), endpoint)) is not None
    }
    listed = {(endpoint, ref.where) for endpoint, refs in ACCOUNT_REFERENCES.items() for ref in refs}
    assert listed == tested
