"""Read a chat-completions SSE stream as it passes: forward every event, remember the answer.

The tap re-frames the upstream's bytes into whole events and collects the first
choice's text, tool calls and token log-probabilities for scoring, and the
usage the upstream reports (with ``stream_options.include_usage``) for
metering. Events are forwarded as the upstream sent them; one the parser does
not read as a chunk (a provider's own event, a malformed delta) is passed on
and left out of the answer, so the tap can never cut the client's stream.

The stream's end is held back: the upstream's final chunk (the first that
carries a ``finish_reason``), whatever follows it (the usage chunk, with empty
``choices``, that OpenAI sends after it) and ``[DONE]``. In sync mode the
trust object rides on that final chunk as an extra ``trust`` field, where
OpenAI SDKs keep it (``chunk.model_extra["trust"]``) and every client loop
that reads ``chunk.choices[0]`` still works: the gateway never adds a chunk
with empty ``choices``. A stream that breaks after its final chunk ends in the
error event instead (``routes._metered_stream``), its held tail unsent.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from exporters import TRUST_FIELD, trust_chunk, trust_summary
from scoring import TrustRecord

from .completion import DONE_EVENT, sse_event
from .replies import ChatCompletionChunk, TokenUsage, parse_chunk
from .reserved import stripped_event
from .trust import Answer

__all__ = ["SseTap", "event_payload", "with_trust"]


def event_payload(line: bytes) -> dict[str, Any] | None:
    """The JSON object of one ``data:`` line; None for another line, or data that is not a JSON object."""
    if not line.startswith(b"data:"):
        return None
    try:
        payload = orjson.loads(line[5:])
    except orjson.JSONDecodeError:
        return None
    return payload if isinstance(payload, dict) else None


def with_trust(event: bytes, record: TrustRecord, *, inside: str | None = None) -> bytes:
    """``event`` with ``record``'s summary as the ``trust`` field of its payload (or of the object at ``inside``)."""
    lines = event.split(b"\n")
    for number, line in enumerate(lines):
        payload = event_payload(line)
        target = payload.get(inside) if payload is not None and inside is not None else payload
        if payload is not None and isinstance(target, dict):
            target[TRUST_FIELD] = trust_summary(record)
            lines[number] = b"data: " + orjson.dumps(payload)
            break
    return b"\n".join(lines)


class SseTap:
    object_type = "chat.completion.chunk"  # of the stand-in trust chunk, when no final chunk came

    def __init__(self) -> None:
        self._buffer = b""
        self._text: list[str] = []
        self._logprobs: list[float] = []
        self._held: list[bytes] = []  # the final chunk and the events after it
        self.tool_calls = False
        self.completion_id = ""
        self.model = ""
        self.done = False
        self.usage: TokenUsage | None = None  # what the upstream reported, if it did (last chunk)

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        """Complete events from the bytes seen so far; from the final chunk on, they are held back."""
        self._buffer += chunk.replace(b"\r\n", b"\n")
        while b"\n\n" in self._buffer:
            event, self._buffer = self._buffer.split(b"\n\n", 1)
            if event.strip() == DONE_EVENT.strip():
                self.done = True
                continue
            kept = stripped_event(event)  # an upstream's trust data is never the gateway's (``reserved``)
            if kept is None:
                continue
            finishes = self._read(kept)
            if finishes or self._held:
                self._held.append(kept + b"\n\n")
                continue
            yield kept + b"\n\n"

    def rest(self) -> bytes:
        """What followed the last whole event (an upstream that ended mid-event), held to the same rule."""
        return stripped_event(self._buffer) or b""

    def _read(self, event: bytes) -> bool:
        """Read the event's chunk into the answer; whether it is a final chunk (a choice has a finish_reason)."""
        finishes = False
        for line in event.split(b"\n"):
            if line.startswith(b"data:"):
                chunk = parse_chunk(line[5:])
                if chunk is not None:
                    finishes = self._read_chunk(chunk) or finishes
        return finishes

    def _read_chunk(self, chunk: ChatCompletionChunk) -> bool:
        self.completion_id = self.completion_id or chunk.id or ""
        self.model = self.model or chunk.model or ""
        self.usage = chunk.usage or self.usage
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            if choice.delta.content:
                self._text.append(choice.delta.content)
            if choice.delta.tool_calls or choice.delta.function_call is not None:
                self.tool_calls = True
            self._logprobs += choice.chosen_logprobs()
        return any(choice.finish_reason is not None for choice in chunk.choices)

    def answer(self) -> Answer:
        return Answer(text="".join(self._text), has_tool_calls=self.tool_calls, logprobs=self._logprobs or None,
                      completion_id=self.completion_id or None)

    def closing(self, trust: TrustRecord | None) -> bytes:
        """The held tail, ``trust`` (sync mode) on its final chunk, then ``[DONE]`` if the upstream sent it.

        Without a final chunk, a stand-in chunk with one empty choice carries the trust object.
        """
        held = list(self._held)
        if trust is not None:
            if held:
                held[0] = with_trust(held[0], trust)
            else:
                held.append(sse_event(trust_chunk(trust, completion_id=self.completion_id, model=self.model,
                                                  object_type=self.object_type)))
        return b"".join(held) + (DONE_EVENT if self.done else b"")
