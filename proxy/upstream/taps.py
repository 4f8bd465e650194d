"""Stream taps: read a stream as it passes, forward every event, keep the answer, hold back the stream's end.

One base (``StreamTap``) frames the upstream's bytes into whole events
(``sse.EventReader``), strips the gateway's reserved names from each
(``reserved``), forwards them, and holds back the stream's end, so that in
sync mode the trust object rides on it. Each endpoint's tap says how an event
is read (the typed events of ``replies``) and what its end is:

- chat completions (``ChatTap``): the final chunk (the first that carries a
  ``finish_reason``), whatever follows it (the usage chunk, with empty
  ``choices``, that OpenAI sends after it) and ``[DONE]``. The trust object
  rides on that final chunk as an extra ``trust`` field, where OpenAI SDKs keep
  it (``chunk.model_extra["trust"]``) and every client loop that reads
  ``chunk.choices[0]`` still works: the gateway never adds a chunk with empty
  ``choices``;
- legacy completions (``TextCompletionTap``): the same, its chunks carrying
  ``choices[].text`` instead of a delta;
- the Responses API (``ResponsesTap``): the terminal ``response.completed``
  (or ``.incomplete`` / ``.failed``) event, whose response object gets a
  ``trust`` field (the API has no ``[DONE]``). A Responses client that asks
  (``x-trustgate-trust-event: true``) also gets a ``trustgate.trust`` event
  just before the terminal one.

An event a tap does not read (a provider's own event, a malformed delta) is
passed on and left out of the answer, so a tap can never cut the client's
stream. The one event a tap drops is the usage chunk the gateway asked for on
the client's behalf (``hiding_usage``: the answer is priced from it), so the
client gets the stream it asked for. Taps keep the answer's text, tool calls and token log-probabilities
(``lp``) and the usage the upstream reported (metering). A stream that breaks
after its end was held ends in the error event instead (``pipeline``), its
held tail unsent.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Literal

from exporters import TRUST_EVENT, trust_chunk, trust_event
from scoring import TrustRecord

from .completion import DONE_EVENT, sse_event
from .replies import (
    Answer,
    ChatCompletionChunk,
    ResponsesEvent,
    StreamChunk,
    TextCompletionChunk,
    TokenUsage,
    parse_payload,
)
from .reserved import may_name_trust, stripped_event
from .sse import EventReader, data_lines, events_in, with_trust

__all__ = ["ChatTap", "ResponsesTap", "StreamTap", "TextCompletionTap"]

_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
# A usage the upstream reported (an object), not the ``"usage": null`` OpenAI puts on every chunk of such a stream.
_REPORTED_USAGE = re.compile(rb'"usage"\s*:\s*\{')

# What becomes of an event: forwarded, held back as (part of) the stream's end, or dropped.
Place = Literal["pass", "hold", "drop"]


class StreamTap(ABC):
    """Forward a stream's events as they pass, keep its answer, and hold back its end (``closing``)."""

    trust_event_asked = False  # the client asked for a trustgate.trust event before the end (Responses streams)

    def __init__(self) -> None:
        self._events = EventReader()
        self._text: list[str] = []
        self._logprobs: list[float] = []
        self._held: list[bytes] = []  # the stream's end, as the upstream sent it
        self.tool_calls = False
        self.completion_id = ""
        self.usage: TokenUsage | None = None  # what the upstream reported, once the stream has passed
        self._keeps_answer = True
        self._hides_usage = False

    def unscored(self) -> StreamTap:
        """This tap reads no answer (its text, tool calls, log-probabilities): nothing will score the stream.

        Its id and usage are still read, and its end marker still waits for a
        clean close, but no end is held for a trust object that will not come.
        Reading every event cost an unscored stream about 35 µs of the gateway's
        CPU, on the way to the client (BENCHMARKS.md).
        """
        self._keeps_answer = False
        return self

    def hiding_usage(self) -> StreamTap:
        """The gateway asked this stream for its usage (``stream_options.include_usage``), the client did not:
        the usage chunk is read, and not forwarded."""
        self._hides_usage = True
        return self

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        """Complete events from the bytes seen so far, each with its blank line; those of the stream's end are
        held back. Events with nothing in them for the tap go on together, as one piece (``_passing``)."""
        block = self._events.feed_block(chunk)
        if not block:
            return
        may_name = may_name_trust(block)  # an upstream's trust data is never the gateway's (``reserved``)
        passing = None if may_name else self._passing(block)
        if passing is not None:
            if passing:
                yield passing
            return
        for event in events_in(block):
            if self._ends(event):
                continue
            kept = stripped_event(event) if may_name else event
            if kept is None:
                continue
            place = self._place(kept)
            if place == "hold":
                self._held.append(kept + b"\n\n")
            elif place == "pass":
                yield kept + b"\n\n"

    def rest(self) -> bytes:
        """What followed the last whole event (an upstream that ended mid-event), held to the same rule."""
        return stripped_event(self._events.rest) or b""

    def answer(self) -> Answer:
        return Answer(
            text="".join(self._text),
            has_tool_calls=self.tool_calls,
            logprobs=self._logprobs or None,
            completion_id=self.completion_id or None,
        )

    @property
    def ended(self) -> bool:
        """Whether the upstream's end (its end marker, or its terminal event) has been read: only its close is
        still to come."""
        return bool(self._held)

    def _ends(self, event: bytes) -> bool:
        """Whether ``event`` is the stream's end marker, which the tap writes itself (chat's ``[DONE]``)."""
        return False

    def _passing(self, block: bytes) -> bytes | None:
        """What of ``block`` (whose events name no trust data) goes on as it came, when the tap need not read its
        events one by one: none is held back or read into the answer, id or usage. None: they must be."""
        return None

    @abstractmethod
    def _place(self, event: bytes) -> Place:
        """Read ``event`` into the answer; whether it passes, is held back as (part of) the stream's end, or goes."""

    @abstractmethod
    def closing(self, trust: TrustRecord | None) -> bytes:
        """The held end of the stream, ``trust`` (sync mode) on it."""


class ChatTap(StreamTap):
    """A chat-completions stream: the first choice's deltas; the final chunk, what follows and ``[DONE]`` held."""

    object_type = "chat.completion.chunk"  # of the stand-in trust chunk, when no final chunk came
    chunk_model: type[StreamChunk] = ChatCompletionChunk

    def __init__(self) -> None:
        super().__init__()
        self.model = ""
        self.done = False

    @property
    def ended(self) -> bool:
        return self.done

    def _ends(self, event: bytes) -> bool:
        if event.strip() == DONE_EVENT.strip():
            self.done = True
            return True
        return False

    def _passing(self, block: bytes) -> bytes | None:
        # Unscored, once the id is known, only the usage and [DONE] are read: a search or two for the piece, where
        # reading it event by event costs about 2 µs an event against 0.5 (BENCHMARKS.md). [DONE] is taken
        # off the end of a piece, where upstreams send it.
        if self._keeps_answer or not self.completion_id or _REPORTED_USAGE.search(block):
            return None
        ends_done = block == DONE_EVENT or block.endswith(b"\n\n" + DONE_EVENT)
        passing = block[: -len(DONE_EVENT)] if ends_done else block
        if b"[DONE]" in passing:
            return None
        self.done = self.done or ends_done
        return passing

    def _place(self, event: bytes) -> Place:
        if not self._keeps_answer:  # unscored: no trust rides on the end, so nothing is held; an event is
            chunks = [  # parsed only for the stream's id (the first) and its usage
                self._read(data) for data in data_lines(event) if not self.completion_id or _REPORTED_USAGE.search(data)
            ]
            return "drop" if self._hidden(chunks) else "pass"
        chunks = [self._read(data) for data in data_lines(event)]
        if self._hidden(chunks):
            return "drop"
        finishes = any(chunk is not None and chunk.finishes for chunk in chunks)
        return "hold" if finishes or self._held else "pass"

    def _hidden(self, chunks: list[StreamChunk | None]) -> bool:
        """Whether an event of these chunks is the usage chunk the client did not ask for."""
        return self._hides_usage and any(chunk is not None and chunk.usage_only for chunk in chunks)

    def _read(self, data: bytes) -> StreamChunk | None:
        """Read one ``data:`` payload into the answer; the chunk it is (None: not one)."""
        chunk = parse_payload(data, self.chunk_model)
        if chunk is None:
            return None
        self.completion_id = self.completion_id or chunk.id or ""
        self.model = self.model or chunk.model or ""
        self.usage = chunk.usage or self.usage
        if self._keeps_answer:
            if text := chunk.answer_text():
                self._text.append(text)
            self.tool_calls = self.tool_calls or chunk.calls_tools
            self._logprobs += chunk.answer_logprobs()
        return chunk

    def closing(self, trust: TrustRecord | None) -> bytes:
        """The held tail, ``trust`` (sync mode) on its final chunk, then ``[DONE]`` if the upstream sent it.

        Without a final chunk, a stand-in chunk with one empty choice carries the trust object.
        """
        held = list(self._held)
        if trust is not None:
            if held:
                held[0] = with_trust(held[0], trust)
            else:
                held.append(
                    sse_event(
                        trust_chunk(
                            trust, completion_id=self.completion_id, model=self.model, object_type=self.object_type
                        )
                    )
                )
        return b"".join(held) + (DONE_EVENT if self.done else b"")


class TextCompletionTap(ChatTap):
    """A legacy completions stream: chunks carry ``choices[].text`` instead of a delta."""

    object_type = "text_completion"

    chunk_model = TextCompletionChunk


class ResponsesTap(StreamTap):
    """A Responses API event stream: text from ``response.output_text.delta``, the terminal event held back."""

    def __init__(self, *, send_trust_event: bool = False) -> None:
        super().__init__()
        self.trust_event_asked = send_trust_event
        self._sequence = 0

    def _place(self, event: bytes) -> Place:
        payload = next((p for p in map(_responses_event, data_lines(event)) if p is not None), None)
        if payload is None:
            return "pass"
        self._read(payload)
        return "hold" if payload.type in _TERMINAL else "pass"

    def _read(self, payload: ResponsesEvent) -> None:
        if payload.sequence_number is not None:
            self._sequence = max(self._sequence, payload.sequence_number + 1)
        if payload.response is not None:
            self.completion_id = self.completion_id or payload.response.id or ""
            self.usage = payload.response.usage or self.usage
        if not self._keeps_answer:
            return
        if payload.type == "response.output_text.delta" and payload.delta is not None:
            self._text.append(payload.delta)
            self._logprobs += payload.chosen_logprobs()
        if (
            payload.type == "response.output_item.added"
            and payload.item is not None
            and payload.item.type == "function_call"
        ):
            self.tool_calls = True

    def closing(self, trust: TrustRecord | None) -> bytes:
        """The held terminal event, ``trust`` (sync mode) on its response object; the trust event first if asked."""
        if trust is None:
            return b"".join(self._held)
        ending = b"".join(with_trust(event, trust, inside="response") for event in self._held)
        if self.trust_event_asked:
            ending = sse_event(trust_event(trust, sequence_number=self._sequence), name=TRUST_EVENT) + ending
        return ending


def _responses_event(data: bytes) -> ResponsesEvent | None:
    return parse_payload(data, ResponsesEvent)
