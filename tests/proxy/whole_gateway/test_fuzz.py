"""Property: nothing a client sends makes the gateway answer 5xx, on any public endpoint.

Hypothesis generates bodies near the chat schema (right keys, values of any
JSON type, nesting included), raw bytes, odd headers and record ids, and sends
them to a real gateway over a socket. The upstream is the well-behaved fake,
so every 5xx would be the gateway's own fault. Example counts are bounded to
keep the test within a few seconds.
"""

from __future__ import annotations

import string
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.endpoints.request import ALLOWED_PARAMS
from scoring.rag import RAG_FIELDS
from tests.conftest import MASTER_KEY
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

AUTH = {"authorization": f"Bearer {MASTER_KEY}"}
FUZZ = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
roles = st.sampled_from(["system", "developer", "user", "assistant", "tool", "function"])
content_parts = st.lists(
    st.fixed_dictionaries({"type": st.just("text") | json_values, "text": st.text() | json_values}), max_size=2
)
messages = st.lists(
    st.fixed_dictionaries(
        {"role": roles | json_values, "content": st.text(max_size=40) | content_parts | json_values},
        optional={"name": json_values, "tool_calls": json_values, "tool_call_id": json_values},
    ),
    max_size=3,
)
documents = st.lists(
    st.text(max_size=40)
    | st.fixed_dictionaries(
        {"text": st.text(max_size=40) | json_values}, optional={"id": json_values, "title": json_values}
    ),
    max_size=3,
)
optional_fields = dict.fromkeys(sorted(ALLOWED_PARAMS - {"model", "messages"}), json_values)
optional_fields.update(
    dict.fromkeys(RAG_FIELDS, json_values), documents=documents | json_values, stream=st.booleans() | json_values
)
chat_bodies = st.fixed_dictionaries(
    {"model": st.just("fake") | json_values, "messages": messages | json_values}, optional=optional_fields
)
header_values = st.text(alphabet=string.ascii_letters + string.digits + string.punctuation, max_size=30)


def deeply_nested(depth: int, kind: str) -> str:
    """JSON text nested ``depth`` levels, written by hand: any JSON encoder would stop at its own limit."""
    if kind == "list":
        return "[" * depth + '"leaf"' + "]" * depth
    return '{"a": ' * depth + "1" + "}" * depth


def assert_not_5xx(response: httpx.Response) -> None:
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert set(response.json()["error"]) == {"message", "type", "param", "code"}


@pytest.fixture
def client(gateway: ServerThread) -> httpx.Client:
    with httpx.Client(base_url=gateway.url, timeout=20) as session:
        yield session  # type: ignore[misc]


@FUZZ
@given(body=chat_bodies, mode=st.none() | st.sampled_from(["sync", "async", "off"]) | header_values)
def test_chat_bodies_near_the_schema(client: httpx.Client, body: dict[str, Any], mode: str | None) -> None:
    headers = {**AUTH, **({"x-trustgate-mode": mode} if mode is not None else {})}
    assert_not_5xx(client.post("/v1/chat/completions", json=body, headers=headers))


@settings(FUZZ, max_examples=100)
@given(raw=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_raw_bytes(client: httpx.Client, raw: bytes) -> None:
    assert_not_5xx(client.post("/v1/chat/completions", content=raw, headers=AUTH))


@settings(FUZZ, max_examples=30)
@given(
    depth=st.integers(1, 1100),
    kind=st.sampled_from(["list", "object"]),
    field=st.sampled_from(["tools", "response_format", "logit_bias", "user"]),
)
def test_any_nesting_depth(client: httpx.Client, depth: int, kind: str, field: str) -> None:
    raw = (
        f'{{"model": "fake", "messages": [{{"role": "user", "content": "x"}}], '
        f'"{field}": {deeply_nested(depth, kind)}}}'
    )
    assert_not_5xx(client.post("/v1/chat/completions", content=raw.encode(), headers=AUTH))


@settings(FUZZ, max_examples=100)
@given(record_id=st.text(max_size=60), authorization=st.none() | header_values)
def test_other_endpoints(client: httpx.Client, record_id: str, authorization: str | None) -> None:
    headers = AUTH if authorization is None else {"authorization": authorization}
    assert_not_5xx(client.get(f"/v1/trust/{quote(record_id, safe='')}", headers=headers))
    assert_not_5xx(client.get("/v1/models", headers=headers))


def test_service_endpoints_after_the_fuzz(client: httpx.Client) -> None:
    """They take no input; answering after everything above is what is checked."""
    for path in ("/health/liveness", "/health/readiness", "/metrics"):
        assert client.get(path).status_code == 200
