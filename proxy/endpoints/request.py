"""Validate a request body and build what goes upstream from the endpoint's allowlist.

Only OpenAI's documented request parameters pass (``sdk_params.FORWARDED``,
checked against the installed SDK's types). Anything that would let a client
steer the gateway itself — ``api_base``, ``base_url``, ``api_key``,
``extra_headers``, ``fallbacks``, ``custom_llm_provider``, ``mock_response`` and
the like, which were SSRF and key-leak holes in LiteLLM's own proxy — is not
on the list and is refused with a 400 naming it.

The body is checked as a whole before any part of it is read: JSON nested
deeper than ``MAX_NESTING`` is refused (orjson reads 1,023 levels but writes
only 254, so a deeper body would fail on its way upstream), then the typed
schema, so that nothing downstream — the RAG document detection included —
meets a role that is a list or a message that is a string.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from scoring import InvalidRagField, RagRequest, prepare_rag_request

from ..base.errors import InvalidRequest
from ..base.sdk_params import FORWARDED, REFUSED, Endpoint
from .account_refs import account_reference_in

__all__ = [
    "ALLOWED_PARAMS",
    "MAX_NESTING",
    "ChatRequest",
    "EndpointRequest",
    "ParsedRequest",
    "parse_chat_request",
    "parse_endpoint_request",
]

# Far deeper than any real chat body (a tool's JSON schema nests a dozen levels),
# far below what the serialisers on the way upstream accept.
MAX_NESTING = 64

ALLOWED_PARAMS = FORWARDED["chat"]


class Message(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None


class ChatRequest(BaseModel):
    """The typed view used for checks; the forwarded body is the client's own dict."""

    model_config = ConfigDict(extra="allow", strict=True)

    model: str = Field(min_length=1)
    messages: list[Message] = Field(min_length=1)
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    n: int | None = Field(default=None, ge=1, le=128)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    stop: str | list[str] | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    seed: int | None = None
    user: str | None = None
    metadata: dict[str, str] | None = None


def _refuse_unknown(body: dict[str, Any], endpoint: Endpoint, *, account_references: bool) -> None:
    """A 400 for a parameter the endpoint refuses, does not know, or (unless allowed) that reaches the account."""
    refused = sorted(set(body) & set(REFUSED[endpoint]))
    if refused:
        raise InvalidRequest(
            f"Request argument not supported by this gateway: {refused[0]} ({REFUSED[endpoint][refused[0]]})",
            param=refused[0],
            code="unsupported_parameter",
        )
    unknown = sorted(set(body) - FORWARDED[endpoint])
    if unknown:
        raise InvalidRequest(
            f"Unrecognized request argument supplied: {', '.join(unknown)}",
            param=unknown[0],
            code="unsupported_parameter",
        )
    reference = None if account_references else account_reference_in(body, endpoint)
    if reference is not None:
        raise InvalidRequest(
            f"Request argument not allowed for this key: {reference.where} ({reference.why}; "
            "the operator can allow it per key with allow_account_references)",
            param=reference.param,
            code="account_reference_not_allowed",
        )


def _nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` has containers more than ``limit`` levels deep (iterative: no recursion limit)."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        children = item.values() if isinstance(item, dict) else item
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _first_error(exc: ValidationError) -> tuple[str, str | None]:
    error = exc.errors()[0]
    location = ".".join(str(part) for part in error["loc"])
    return f"Invalid value for '{location}': {error['msg']}", location or None


@dataclass(frozen=True)
class ParsedRequest:
    chat: ChatRequest
    body: dict[str, Any]  # what goes upstream: the client's body less TrustGate's extension fields
    messages: list[dict[str, Any]]  # the client's own messages (the question is read from these)
    rag: RagRequest | None  # documents came with the request: RAG trust applies


def parse_chat_request(raw: bytes, *, account_references: bool = False) -> ParsedRequest:
    """Validate a body and split it into what goes upstream and what scoring needs; 400 otherwise.

    ``account_references``: the key may name objects in the operator's upstream
    account (``proxy.endpoints.account_refs``).

    TrustGate's RAG extension fields (``documents``, ``answerable``,
    ``reference_claims``) are taken out before the allowlist check, and
    documents sent only in the field are appended to the prompt so the
    upstream sees them.
    """
    original = _json_object(raw)
    try:
        request = ChatRequest.model_validate(original)  # the extension fields pass as extras
    except ValidationError as exc:
        message, param = _first_error(exc)
        raise InvalidRequest(message, param=param, code="invalid_value") from exc
    try:
        body, rag = prepare_rag_request(original)
    except InvalidRagField as exc:
        raise InvalidRequest(str(exc), param=exc.param, code="invalid_documents") from exc
    _refuse_unknown(body, "chat", account_references=account_references)
    return ParsedRequest(request, body, original["messages"], rag)


class _EndpointBody(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    model: str = Field(min_length=1)
    stream: bool = False
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)


class _CompletionsBody(_EndpointBody):
    prompt: str | list[str] | list[int] | list[list[int]]
    n: int | None = Field(default=None, ge=1, le=128)
    max_tokens: int | None = Field(default=None, ge=0)


class _EmbeddingsBody(_EndpointBody):
    input: str | list[str] | list[int] | list[list[int]]
    dimensions: int | None = Field(default=None, ge=1)


class _ResponsesBody(_EndpointBody):
    input: str | list[dict[str, Any]]
    instructions: str | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)


_BODY_TYPES: dict[Endpoint, type[_EndpointBody]] = {
    "completions": _CompletionsBody,
    "embeddings": _EmbeddingsBody,
    "responses": _ResponsesBody,
}


@dataclass(frozen=True)
class EndpointRequest:
    """A checked request to one of the endpoints besides chat completions."""

    endpoint: Endpoint
    model: str
    stream: bool
    body: dict[str, Any]  # forwarded as the client sent it
    messages: list[dict[str, Any]]  # the conversation as chat messages, for scoring; [] when there is none to score


def _json_object(raw: bytes) -> dict[str, Any]:
    """The body as a JSON object no deeper than ``MAX_NESTING`` (deeper would fail when re-serialised); 400 else."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"Request body is not valid JSON: {exc}", code="invalid_json") from exc
    if not isinstance(body, dict):
        raise InvalidRequest("Request body must be a JSON object", code="invalid_json")
    # Nesting is bounded by the number of containers: most bodies have too few to need the walk.
    if raw.count(b"{") + raw.count(b"[") > MAX_NESTING and _nested_deeper_than(body, MAX_NESTING):
        raise InvalidRequest(f"Request body is nested deeper than {MAX_NESTING} levels", code="nesting_too_deep")
    return body


def parse_endpoint_request(raw: bytes, endpoint: Endpoint, *, account_references: bool = False) -> EndpointRequest:
    """Validate a completions, embeddings or responses body against its allowlist and type; 400 otherwise."""
    body = _json_object(raw)
    _refuse_unknown(body, endpoint, account_references=account_references)
    try:
        checked = _BODY_TYPES[endpoint].model_validate(body)
    except ValidationError as exc:
        message, param = _first_error(exc)
        raise InvalidRequest(message, param=param, code="invalid_value") from exc
    return EndpointRequest(endpoint, checked.model, checked.stream, body, _conversation(checked))


def _conversation(checked: _EndpointBody) -> list[dict[str, Any]]:
    if isinstance(checked, _CompletionsBody):
        prompt = checked.prompt
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
            prompt = prompt[0]
        return [{"role": "user", "content": prompt}] if isinstance(prompt, str) else []
    if isinstance(checked, _ResponsesBody):
        return responses_input_as_messages(checked.instructions, checked.input)
    return []


def responses_input_as_messages(instructions: str | None, items: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A Responses ``input`` read as chat messages: what scoring takes the question and context from.

    Only message items carry the conversation; tool calls and their outputs
    are left out, as they are for chat completions' scoring.
    """
    messages: list[dict[str, Any]] = [{"role": "system", "content": instructions}] if instructions else []
    if isinstance(items, str):
        return [*messages, {"role": "user", "content": items}]
    for item in items:
        role, content = item.get("role"), item.get("content")
        if item.get("type", "message") != "message" or role not in ("system", "developer", "user", "assistant"):
            continue
        if isinstance(content, list):
            content = " ".join(
                str(part.get("text", ""))
                for part in content
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            )
        if isinstance(content, str):
            messages.append({"role": role, "content": content})
    return messages
