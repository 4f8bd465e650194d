"""Read a chat-completions SSE stream as it passes: forward every event, remember the answer.

The tap re-frames the upstream's bytes into whole events (so a trust chunk can
be slipped in before ``data: [DONE]``) and collects the first choice's text,
tool calls and token log-probabilities for scoring.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from .trust import Answer

__all__ = ["DONE_EVENT", "SseTap"]

DONE_EVENT = b"data: [DONE]\n\n"


class SseTap:
    def __init__(self) -> None:
        self._buffer = b""
        self._text: list[str] = []
        self._logprobs: list[float] = []
        self.tool_calls = False
        self.completion_id = ""
        self.model = ""
        self.done = False

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        """Complete events from the bytes seen so far, except the final ``[DONE]``, which is held back."""
        self._buffer += chunk.replace(b"\r\n", b"\n")
        while b"\n\n" in self._buffer:
            event, self._buffer = self._buffer.split(b"\n\n", 1)
            if event.strip() == b"data: [DONE]":
                self.done = True
                continue
            self._read(event)
            yield event + b"\n\n"

    def rest(self) -> bytes:
        return self._buffer

    def _read(self, event: bytes) -> None:
        for line in event.split(b"\n"):
            if not line.startswith(b"data:"):
                continue
            try:
                payload = orjson.loads(line[5:])
            except orjson.JSONDecodeError:
                continue
            if isinstance(payload, dict):
                self._read_chunk(payload)

    def _read_chunk(self, payload: dict[str, Any]) -> None:
        self.completion_id = self.completion_id or str(payload.get("id") or "")
        self.model = self.model or str(payload.get("model") or "")
        for choice in payload.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if delta.get("content"):
                self._text.append(str(delta["content"]))
            if delta.get("tool_calls"):
                self.tool_calls = True
            for entry in (choice.get("logprobs") or {}).get("content") or []:
                if isinstance(entry, dict) and "logprob" in entry:
                    self._logprobs.append(float(entry["logprob"]))

    def answer(self) -> Answer:
        return Answer(text="".join(self._text), has_tool_calls=self.tool_calls, logprobs=self._logprobs or None)
