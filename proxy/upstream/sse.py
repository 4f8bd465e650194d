"""The one reader of server-sent events: whole events out of a byte stream, and the ``data:`` they carry.

Every part that reads an upstream's stream — the stream taps (``taps``), the
pass-through path's check of a stream's first event, the log-probability
stripper and the trust on a stream's end (``rewritten``) — frames events and
reads their data here, so that they agree on what one event is. Lines end at
LF or CRLF as the upstream sends them; ``FirstEventReader`` also ends them at a
lone CR, as a client's SSE reader does, because it judges what a client would read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson

from exporters import TRUST_FIELD, trust_summary
from scoring import TrustRecord

__all__ = ["EventReader", "FirstEventReader", "data_lines", "event_payload", "events_in", "rewritten", "with_trust"]


class EventReader:
    """Whole events (without their blank line) from the bytes of a stream as they arrive.

    Each byte is scanned once, whatever the pieces: one long event sent a
    kibibyte at a time costs the event loop linear time, not the square of it.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()  # the bytes after the last whole event

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        """The events ``chunk`` completes, in order; the bytes of an unfinished one wait for the next chunk."""
        return iter(events_in(self.feed_block(chunk)))

    def feed_block(self, chunk: bytes) -> bytes:
        """The events ``chunk`` completes as the one run of bytes they make, each with its blank line (``events_in``
        parts them); b"" when it completes none.

        A reader that only forwards what it reads handles the run whole, not event by event.
        """
        scan_from = max(len(self._buffer) - 1, 0)  # a blank line may straddle the chunks
        self._buffer += chunk.replace(b"\r\n", b"\n") if b"\r" in chunk else chunk
        end = self._buffer.rfind(b"\n\n", scan_from) + 2
        if end < 2:
            return b""
        block = bytes(self._buffer[:end])
        # A run of line ends parts into blank lines from its start, as a reader going event by event parts it:
        # of an odd run, the last line end begins what follows.
        text_end = len(block.rstrip(b"\n"))
        if (end - text_end) % 2:
            end -= 1
            block = block[:end]
        del self._buffer[:end]
        return block

    @property
    def rest(self) -> bytes:
        """What followed the last whole event (an upstream that ended mid-event)."""
        return bytes(self._buffer)


def events_in(block: bytes) -> list[bytes]:
    """The events of a run of whole events (``EventReader.feed_block``), without their blank lines."""
    return block.split(b"\n\n")[:-1]


def data_lines(event: bytes) -> Iterator[bytes]:
    """The data of each ``data:`` line of one event, as written (the space after the colon kept)."""
    for line in event.split(b"\n"):
        if line.startswith(b"data:"):
            yield line[5:]


def event_payload(line: bytes) -> dict[str, Any] | None:
    """The JSON object of one ``data:`` line; None for another line, or data that is not a JSON object."""
    if not line.startswith(b"data:"):
        return None
    try:
        payload = orjson.loads(line[5:])
    except orjson.JSONDecodeError:
        return None
    return payload if isinstance(payload, dict) else None


class FirstEventReader:
    """The data of a stream's first SSE event that carries data, found as the bytes arrive.

    Lines end at CRLF, LF or a lone CR, as a client's SSE reader ends them (a
    CR that ends one piece and the LF that begins the next are one line end).
    Comment-only events (``: ping``) carry none and are passed over, as that
    reader passes over them; several ``data:`` lines are joined as it joins them.
    Each byte is scanned once, whatever the pieces: an upstream that sends
    megabytes of comment lines, a kibibyte at a time, before any event costs
    the event loop linear time, not the square of it.
    """

    def __init__(self) -> None:
        self._events = EventReader()  # the events, once every line end is an LF
        self._after_cr = False

    def feed(self, piece: bytes) -> bytes | None:
        """The first event's data once ``piece`` completes it; None while there is none yet."""
        if self._after_cr and piece.startswith(b"\n"):
            piece = piece[1:]  # the LF of a CRLF split between pieces
        self._after_cr = piece.endswith(b"\r")
        for event in self._events.feed(piece.replace(b"\r\n", b"\n").replace(b"\r", b"\n")):
            data = [value.removeprefix(b" ") for value in data_lines(event)]
            if data:
                return b"\n".join(data)
        return None


def rewritten(event: bytes, rewrite: Callable[[dict[str, Any]], dict[str, Any] | None], *, once: bool = False) -> bytes:
    """``event`` with the JSON object of each ``data:`` line replaced by ``rewrite``'s (None: left as it was).

    ``once``: only the first object ``rewrite`` changes is replaced.
    """
    lines = event.split(b"\n")
    for number, line in enumerate(lines):
        payload = event_payload(line)
        changed = rewrite(payload) if payload is not None else None
        if changed is not None:
            lines[number] = b"data: " + orjson.dumps(changed)
            if once:
                break
    return b"\n".join(lines)


def with_trust(event: bytes, record: TrustRecord, *, inside: str | None = None) -> bytes:
    """``event`` with ``record``'s summary as the ``trust`` field of its payload (or of the object at ``inside``)."""

    def add(payload: dict[str, Any]) -> dict[str, Any] | None:
        target = payload.get(inside) if inside is not None else payload
        if not isinstance(target, dict):
            return None
        target[TRUST_FIELD] = trust_summary(record)
        return payload

    return rewritten(event, add, once=True)
