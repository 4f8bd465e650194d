"""Each OpenAI endpoint the gateway serves, as data for the one pipeline (``pipeline.EndpointSpec``).

Chat completions and legacy completions and the Responses API are scored
(trust headers; in a sync stream the trust object on the stream's end, ``taps``);
embeddings are forwarded and counted, with nothing to score. A chat reply is
fetched as a validated chat completion (``UpstreamClient.complete``, which
learns how each deployment gives log-probabilities); the others as a reply
checked for their endpoint's shape (``UpstreamClient.forward``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..base.sdk_params import Endpoint
from ..upstream.client import ModelFilter, UpstreamClient
from ..upstream.taps import ChatTap, ResponsesTap, StreamTap, TextCompletionTap
from .pipeline import EndpointSpec, Fetched, Parsed
from .request import parse_chat_request, parse_endpoint_request

__all__ = ["CHAT", "COMPLETIONS", "EMBEDDINGS", "RESPONSES", "TRUST_EVENT_HEADER"]

# A Responses client that wants the trust object as its own event too (before the terminal event) says so.
TRUST_EVENT_HEADER = "x-trustgate-trust-event"


def _parse_chat(raw: bytes, account_references: bool) -> Parsed:
    parsed = parse_chat_request(raw, account_references=account_references)
    return Parsed(parsed.chat.model, parsed.chat.stream, parsed.body, parsed.messages, parsed.rag)


async def _complete(upstream: UpstreamClient, group: str, body: dict[str, Any], may_use: ModelFilter) -> Fetched:
    return await upstream.complete(group, body, may_use=may_use)


def _spec(name: Endpoint, tap: Callable[[Mapping[str, str]], StreamTap] | None = None) -> EndpointSpec:
    """An endpoint besides chat: its request read by ``parse_endpoint_request``, its reply by ``forward``."""

    def parse(raw: bytes, account_references: bool) -> Parsed:
        parsed = parse_endpoint_request(raw, name, account_references=account_references)
        return Parsed(parsed.model, parsed.stream, parsed.body, parsed.messages)

    async def forward(upstream: UpstreamClient, group: str, body: dict[str, Any], may_use: ModelFilter) -> Fetched:
        return await upstream.forward(group, body, name, may_use=may_use)

    return EndpointSpec(name, parse, forward, tap)


def _responses_tap(headers: Mapping[str, str]) -> StreamTap:
    return ResponsesTap(send_trust_event=headers.get(TRUST_EVENT_HEADER, "").strip().lower() == "true")


CHAT = EndpointSpec("chat", _parse_chat, _complete, lambda headers: ChatTap())
COMPLETIONS = _spec("completions", lambda headers: TextCompletionTap())
RESPONSES = _spec("responses", _responses_tap)
EMBEDDINGS = _spec("embeddings")
