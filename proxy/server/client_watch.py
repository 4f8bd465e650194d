"""Cancel what a request is doing, in its own task, as soon as its client disconnects.

uvicorn does not cancel a handler whose client went away: an abandoned request
would hold its upstream call (or go on streaming into a closed socket) until a
timeout. ``WatchedClient`` leaves one plain task to wait for the disconnect;
when it comes, the request's task is cancelled where it waits — the upstream
read — and on leaving the block the cancellation is taken back
(``Task.uncancel``), so the request's task ends as the caller decides and an
outer cancellation (shutdown) still counts. Running the work in the request's
own task, rather than in a second task raced against the watcher, is one task
and one wait fewer per request (BENCHMARKS.md, the gateway's profile).
"""

from __future__ import annotations

import asyncio
from types import TracebackType

from starlette.types import Receive

__all__ = ["WatchedClient"]


class WatchedClient:
    """Inside the block, the current task is cancelled when the client disconnects; ``left`` says whether it did.

    Only for a request whose body has been read (or that has none): the
    watcher reads what follows, which is nothing but the disconnect.
    """

    def __init__(self, receive: Receive) -> None:
        self.left = False
        self._receive = receive
        self._task: asyncio.Task[object] | None = None
        self._watcher: asyncio.Future[None] | None = None

    def __enter__(self) -> WatchedClient:
        self._task = asyncio.current_task()
        assert self._task is not None, "used outside a task"
        self._watcher = asyncio.ensure_future(self._watch())
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        assert self._task is not None and self._watcher is not None, "not entered"
        self._watcher.cancel()
        if self.left:
            self._task.uncancel()

    async def _watch(self) -> None:
        while (await self._receive())["type"] != "http.disconnect":
            pass
        self.left = True
        assert self._task is not None
        self._task.cancel()
