"""A streamed response written straight to the server: the gateway's event streams without Starlette's task group.

Starlette's ``StreamingResponse`` runs every response in an anyio task group: a
second task streams while the first listens for the client's disconnect, and a
disconnect cancels the streamer through anyio's cancel scopes, whose delivery
reschedules itself until the task is done (BENCHMARKS.md, the gateway's
profile). ``EventStream`` streams in the request's own task and leaves one plain
asyncio task to wait for the disconnect: when the client leaves, the stream is
cancelled where it waits — the upstream read, as before — its generator sees
the cancellation as under Starlette (the request counted as 499), and the
response ends quietly. Nothing is done per chunk but the server's ``send``.

A stream's generator marks its last bytes as ``FinalEvents``: they go out with
the end of the chunked body in one write, where a separate write of the end
would wake the client once more for five bytes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

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
        left = ended = False

        async def client_gone() -> None:
            nonlocal left
            while (await receive())["type"] != "http.disconnect":
                pass
            if not ended:  # once the response is whole, the server reports a disconnect: the generator may finish
                left = True
                streaming.cancel()

        watcher = asyncio.ensure_future(client_gone())
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            async for chunk in self.body_iterator:
                if ended:
                    raise RuntimeError("an event stream went on after its final events")
                ended = isinstance(chunk, FinalEvents)
                await send({"type": "http.response.body", "body": chunk, "more_body": not ended})
        except asyncio.CancelledError:
            if not left:  # cancelled from outside (shutdown): not ours to swallow
                raise
            streaming.uncancel()
            return
        finally:
            watcher.cancel()
        if not ended:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
