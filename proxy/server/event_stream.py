"""A streamed response written straight to the server: the gateway's event streams without Starlette's task group.

Starlette's ``StreamingResponse`` runs every response in an anyio task group: a
second task streams while the first listens for the client's disconnect, and a
disconnect cancels the streamer through anyio's cancel scopes, whose delivery
reschedules itself until the task is done (BENCHMARKS.md, the gateway's
profile). ``EventStream`` streams in the request's own task, and the server's
``Departure`` (``connections``) cancels that task when the client leaves: the
stream is cancelled where it waits — the upstream read, as under Starlette — its
generator sees the cancellation as under Starlette (the request counted as
499), and the response ends quietly. No task beside it waits for a disconnect:
one more task per stream, and its wake-ups, for what the server already knows.
A server that reports no departure (an in-process transport, which has no
connection to lose) just streams. Nothing is done per chunk but the server's
``send``.

A stream's generator marks its last bytes as ``FinalEvents``: they go out with
the end of the chunked body in one write, where a separate write of the end
would wake the client once more for five bytes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from .connections import DEPARTURE, Departure

__all__ = ["EventStream", "FinalEvents"]


class FinalEvents(bytes):
    """The last bytes of an event stream: the response ends with them."""


class EventStream(Response):
    """``text/event-stream`` of ``chunks``, status 200, ``headers`` added."""

    media_type = "text/event-stream"

    def __init__(self, chunks: AsyncIterator[bytes], headers: Mapping[str, str]) -> None:
        self.body_iterator = chunks
        self.status_code = 200
        self.background = None
        self.init_headers(headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        streaming = asyncio.current_task()
        assert streaming is not None, "called outside a task"
        departure: Departure | None = scope.get(DEPARTURE)
        left = ended = False

        def leave() -> None:
            nonlocal left
            if not ended:  # once the response is whole, a client leaving changes nothing: the generator may finish
                left = True
                streaming.cancel()

        if departure is not None:
            departure.on_leave(leave)
            if departure.left:  # gone before the stream began: cancelled at its first wait, as any other time
                leave()
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            async for chunk in self.body_iterator:
                if ended:
                    raise RuntimeError("an event stream went on after its final events")
                ended = isinstance(chunk, FinalEvents)
                await send({"type": "http.response.body", "body": chunk, "more_body": not ended})
        except asyncio.CancelledError:
            if not left or streaming.uncancel() > 0:  # cancelled from outside too (shutdown): not ours to swallow
                raise
            return
        finally:
            if departure is not None:
                departure.on_leave(None)
        if not ended:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
