"""The answer's log-probabilities for the ``lp`` component, asked on the user's own call and hidden again.

Scoring the answer's token log-probabilities costs no extra upstream call only
if the user's call returns them. When the request is scored and the client did
not ask for them, the gateway asks upstream in the endpoint's own words and
takes them out of the response (non-streamed body and each streamed event)
before the client sees it, so the client gets what it asked for:

* chat completions: ``logprobs: true``; each choice's ``logprobs`` back to null;
* legacy completions: ``logprobs: 1`` (the sampled token's, plus one
  alternative: some servers return nothing for 0); each choice's ``logprobs``
  back to null. Not with ``echo``, whose log-probabilities would mix the
  prompt's tokens into the answer's;
* the Responses API: ``include: ["message.output_text.logprobs"]``; every
  ``output_text`` part's and text event's ``logprobs`` back to ``[]``, as
  when none were included.

Anything the strippers cannot parse is left as it was: a body that carries no
log-probabilities has none to hide.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from .sdk_params import Endpoint

__all__ = ["RESPONSES_LOGPROBS", "LogprobsAdded", "ask_for_logprobs"]

RESPONSES_LOGPROBS = "message.output_text.logprobs"  # the Responses API's `include` entry for them
# Responses payloads that carry an answer text's log-probabilities: the part, and the text events.
_RESPONSES_CARRIERS = frozenset({"output_text", "response.output_text.delta", "response.output_text.done"})


@dataclass(frozen=True)
class LogprobsAdded:
    """The gateway asked for log-probabilities the client did not: take them out of what goes back."""

    endpoint: Endpoint

    def body(self, raw: bytes) -> bytes:
        """A non-streamed reply without the log-probabilities."""
        try:
            payload = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
        return orjson.dumps(payload) if self._hide(payload) else raw

    def event(self, event: bytes) -> bytes:
        """One SSE event (its ``data:`` lines) without the log-probabilities."""
        lines = event.split(b"\n")
        for number, line in enumerate(lines):
            if not line.startswith(b"data:") or line[5:].strip() == b"[DONE]":
                continue
            try:
                payload = orjson.loads(line[5:])
            except orjson.JSONDecodeError:
                continue
            if self._hide(payload):
                lines[number] = b"data: " + orjson.dumps(payload)
        return b"\n".join(lines)

    def _hide(self, payload: Any) -> bool:
        """Take the log-probabilities out of ``payload`` in place; whether anything changed."""
        if self.endpoint == "responses":
            return _clear_responses_logprobs(payload)
        return _clear_choice_logprobs(payload)


def ask_for_logprobs(body: dict[str, Any], endpoint: Endpoint) -> tuple[dict[str, Any], LogprobsAdded | None]:
    """``body`` asking for the answer's log-probabilities, and what to strip from the reply (None: nothing).

    A client that asked for them itself gets them as it asked; an endpoint
    without log-probabilities (embeddings) is left alone.
    """
    if endpoint == "chat":
        if body.get("logprobs") is True:
            return body, None
        return {**body, "logprobs": True}, LogprobsAdded(endpoint)
    if endpoint == "completions":
        if body.get("logprobs") is not None or body.get("echo"):
            return body, None
        return {**body, "logprobs": 1}, LogprobsAdded(endpoint)
    if endpoint == "responses":
        include = body.get("include")
        include = list(include) if isinstance(include, list) else []
        if RESPONSES_LOGPROBS in include:
            return body, None
        return {**body, "include": [*include, RESPONSES_LOGPROBS]}, LogprobsAdded(endpoint)
    return body, None


def _clear_choice_logprobs(payload: Any) -> bool:
    """Set every choice's ``logprobs`` to null, as when none were asked."""
    choices = payload.get("choices") if isinstance(payload, dict) else None
    changed = False
    for choice in choices if isinstance(choices, list) else ():
        if isinstance(choice, dict) and choice.get("logprobs") is not None:
            choice["logprobs"] = None
            changed = True
    return changed


def _clear_responses_logprobs(node: Any) -> bool:
    """Empty the ``logprobs`` of every output text part and text event, wherever the payload nests them.

    A response object holds them in ``output[].content[]``, an item event in
    ``item.content[]``, a part event in ``part``, a text event at its top.
    """
    changed = False
    if isinstance(node, dict):
        if node.get("type") in _RESPONSES_CARRIERS and node.get("logprobs"):
            node["logprobs"] = []
            changed = True
        for value in node.values():
            changed = _clear_responses_logprobs(value) or changed
    elif isinstance(node, list):
        for value in node:
            changed = _clear_responses_logprobs(value) or changed
    return changed
