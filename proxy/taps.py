"""Stream taps and answer readers for the endpoints besides chat completions.

A tap forwards a stream's events as they pass, keeps the answer for scoring
and holds back the stream's end, so that in sync mode the trust object rides on
it: a legacy completions stream's final chunk (as for chat, ``sse``), the
Responses API's terminal ``response.completed`` (or ``.incomplete`` /
``.failed``) event, whose response object gets a ``trust`` field (the API has
no ``[DONE]``). A Responses client that asks (``x-trustgate-trust-event:
true``) also gets a ``trustgate.trust`` event just before the terminal one.
Taps and readers keep the answer's token log-probabilities too, where the
upstream sent them (``lp``), and the usage it reported (metering).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from exporters import TRUST_EVENT, trust_event
from scoring import TrustRecord

from .completion import sse_event
from .replies import TokenUsage, output_text_logprobs, reported_usage, text_completion_logprobs
from .reserved import stripped_event
from .sse import SseTap, event_payload, with_trust
from .trust import Answer

__all__ = ["ResponsesTap", "TextCompletionTap", "answer_from_response", "answer_from_text_completion"]

_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})


def answer_from_text_completion(data: dict[str, Any]) -> Answer:
    """The first choice's text of a legacy completion; another shape reads as no answer."""
    choices = data.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    text = choice.get("text")
    return Answer(text=text if isinstance(text, str) else None,
                  logprobs=text_completion_logprobs(choice.get("logprobs")) or None, completion_id=_id(data))


def answer_from_response(data: dict[str, Any]) -> Answer:
    """A Responses object's answer: the text of its message items; function calls mark it as a tool call."""
    output = data.get("output")
    items = [item for item in output if isinstance(item, dict)] if isinstance(output, list) else []
    parts = [part for item in items if item.get("type") == "message" for part in item.get("content") or []
             if isinstance(part, dict) and part.get("type") == "output_text" and isinstance(part.get("text"), str)]
    calls = any(item.get("type") in ("function_call", "custom_tool_call") for item in items)
    logprobs = [lp for part in parts for lp in output_text_logprobs(part.get("logprobs"))]
    return Answer(text="".join(part["text"] for part in parts) if parts else None, has_tool_calls=calls,
                  logprobs=logprobs or None, completion_id=_id(data))


def _id(data: dict[str, Any]) -> str | None:
    value = data.get("id")
    return value if isinstance(value, str) and value else None


class TextCompletionTap(SseTap):
    """A legacy completions stream: chunks carry ``choices[].text`` instead of a delta."""

    object_type = "text_completion"

    def _read(self, event: bytes) -> bool:
        finishes = False
        for line in event.split(b"\n"):
            payload = event_payload(line)
            if payload is None:
                continue
            self.completion_id = self.completion_id or str(payload.get("id") or "")
            self.model = self.model or str(payload.get("model") or "")
            self.usage = reported_usage(payload) or self.usage
            choices = payload.get("choices")
            for choice in choices if isinstance(choices, list) else []:
                if not isinstance(choice, dict):
                    continue
                finishes = finishes or choice.get("finish_reason") is not None
                if choice.get("index", 0) == 0 and isinstance(choice.get("text"), str):
                    self._text.append(choice["text"])
                    self._logprobs += text_completion_logprobs(choice.get("logprobs"))
        return finishes


class ResponsesTap:
    """A Responses API event stream: text from ``response.output_text.delta``, the terminal event held back."""

    def __init__(self, *, send_trust_event: bool = False) -> None:
        self._trust_event = send_trust_event  # the client asked for the trustgate.trust event too
        self._buffer = b""
        self._text: list[str] = []
        self._logprobs: list[float] = []
        self._tool_calls = False
        self._held: list[bytes] = []
        self._sequence = 0
        self.completion_id = ""  # the response's id, from its first event
        self.usage: TokenUsage | None = None  # from the terminal event's response

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        self._buffer += chunk.replace(b"\r\n", b"\n")
        while b"\n\n" in self._buffer:
            whole, self._buffer = self._buffer.split(b"\n\n", 1)
            raw = stripped_event(whole)  # an upstream's trust event is never the gateway's (``reserved``)
            if raw is None:
                continue
            event = raw + b"\n\n"
            kind = self._read(raw)
            if kind in _TERMINAL:
                self._held.append(event)
                continue
            yield event

    def _read(self, event: bytes) -> str | None:
        payload = next((p for p in map(event_payload, event.split(b"\n")) if p is not None), None)
        if payload is None:
            return None
        kind = payload.get("type")
        if isinstance(payload.get("sequence_number"), int):
            self._sequence = max(self._sequence, payload["sequence_number"] + 1)
        response = payload.get("response")
        if isinstance(response, dict):
            if not self.completion_id and isinstance(response.get("id"), str):
                self.completion_id = response["id"]
            self.usage = reported_usage(response) or self.usage
        if kind == "response.output_text.delta" and isinstance(payload.get("delta"), str):
            self._text.append(payload["delta"])
            self._logprobs += output_text_logprobs(payload.get("logprobs"))
        item = payload.get("item")
        if kind == "response.output_item.added" and isinstance(item, dict) and item.get("type") == "function_call":
            self._tool_calls = True
        return kind if isinstance(kind, str) else None

    def rest(self) -> bytes:
        """What followed the last whole event (an upstream that ended mid-event), held to the same rule."""
        return stripped_event(self._buffer) or b""

    def answer(self) -> Answer:
        return Answer(text="".join(self._text), has_tool_calls=self._tool_calls, logprobs=self._logprobs or None,
                      completion_id=self.completion_id or None)

    def closing(self, trust: TrustRecord | None) -> bytes:
        """The held terminal event, ``trust`` (sync mode) on its response object; the trust event first if asked."""
        if trust is None:
            return b"".join(self._held)
        ending = b"".join(with_trust(event, trust, inside="response") for event in self._held)
        if self._trust_event:
            ending = sse_event(trust_event(trust, sequence_number=self._sequence), name=TRUST_EVENT) + ending
        return ending
