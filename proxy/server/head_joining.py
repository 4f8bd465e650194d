"""A response's head sent in one write with the first bytes of its body.

uvicorn's h11 protocol writes a response's status line and headers as soon as
the app sends ``http.response.start``, and its body in a second write a moment
later. On loopback and on most networks each write is a ``send()`` system
call that also does the receiving side's TCP work, and for a gateway those two
writes were a tenth of the CPU per request (BENCHMARKS.md, the gateway's
profile). ``HeadJoiningTransport`` holds the head back until the next write —
the body, which for a whole reply comes from the same step of the same task —
and sends the two together; a head with nothing after it in the same turn of
the event loop (a stream whose first event is still upstream) is sent at the
end of that turn, so a client never waits longer for headers than one turn.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["HeadJoiningTransport"]

# How h11 begins every response head it writes (it answers HTTP/1.0 clients as HTTP/1.1 too).
_HEAD_START = b"HTTP/1.1 "


class HeadJoiningTransport:
    """``transport`` for an HTTP/1.1 server protocol, with each response head joined to the write after it.

    Everything but ``write``, ``writelines`` and the closing calls goes to the
    wrapped transport unchanged; closing sends a held head first, so the
    order of bytes on the wire is always the order they were written in.
    """

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None
        self._flush: asyncio.Handle | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if self._held is not None:
            data = self._held + bytes(data)
            self._release()
        elif bytes(data[:len(_HEAD_START)]) == _HEAD_START:
            self._held = bytes(data)
            self._flush = self._loop.call_soon(self.flush)
            return
        self._transport.write(data)

    def writelines(self, list_of_data: Any) -> None:
        self.write(b"".join(list_of_data))

    def flush(self) -> None:
        """Send a held head now."""
        held = self._held
        if held is not None:
            self._release()
            self._transport.write(held)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def abort(self) -> None:
        self._release()
        self._transport.abort()

    def _release(self) -> None:
        self._held = None
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)
