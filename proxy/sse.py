"""Read a chat-completions SSE stream as it passes: forward every event, remember the answer.

The tap re-frames the upstream's bytes into whole events (so a trust chunk can
be slipped in before ``data: [DONE]``) and collects the first choice's text,
tool calls and token log-probabilities for scoring, and the usage the upstream
reports (with ``stream_options.include_usage``) for metering. Events are forwarded as
the upstream sent them; one the parser does not read as a chunk (a provider's
own event, a malformed delta) is passed on and left out of the answer, so the
tap can never cut the client's stream.
"""

from __future__ import annotations

from collections.abc import Iterator

from exporters import trust_chunk
from scoring.types import TrustRecord

from .completion import DONE_EVENT, sse_event
from .replies import ChatCompletionChunk, TokenUsage, parse_chunk
from .reserved import stripped_event
from .trust import Answer

__all__ = ["SseTap"]


class SseTap:
    def __init__(self) -> None:
        self._buffer = b""
        self._text: list[str] = []
        self._logprobs: list[float] = []
        self.tool_calls = False
        self.completion_id = ""
        self.model = ""
        self.done = False
        self.usage: TokenUsage | None = None  # what the upstream reported, if it did (last chunk)

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        """Complete events from the bytes seen so far, except the final ``[DONE]``, which is held back."""
        self._buffer += chunk.replace(b"\r\n", b"\n")
        while b"\n\n" in self._buffer:
            event, self._buffer = self._buffer.split(b"\n\n", 1)
            if event.strip() == DONE_EVENT.strip():
                self.done = True
                continue
            kept = stripped_event(event)  # an upstream's trust data is never the gateway's (``reserved``)
            if kept is None:
                continue
            self._read(kept)
            yield kept + b"\n\n"

    def rest(self) -> bytes:
        """What followed the last whole event (an upstream that ended mid-event), held to the same rule."""
        return stripped_event(self._buffer) or b""

    def _read(self, event: bytes) -> None:
        for line in event.split(b"\n"):
            if line.startswith(b"data:"):
                chunk = parse_chunk(line[5:])
                if chunk is not None:
                    self._read_chunk(chunk)

    def _read_chunk(self, chunk: ChatCompletionChunk) -> None:
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

    def answer(self) -> Answer:
        return Answer(text="".join(self._text), has_tool_calls=self.tool_calls, logprobs=self._logprobs or None,
                      completion_id=self.completion_id or None)

    def trust_event(self, record: TrustRecord, model: str) -> bytes:
        return sse_event(trust_chunk(record, completion_id=self.completion_id, model=self.model or model))

    def closing(self) -> bytes:
        """What was held back to follow the trust event: ``[DONE]``, if the upstream sent it."""
        return DONE_EVENT if self.done else b""
