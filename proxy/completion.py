"""What an upstream call gives back, whichever backend made it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import orjson

from .replies import ChatCompletion
from .upstream_errors import UpstreamErrors

__all__ = ["Completion", "UpstreamStream", "bounded_chunks"]


@dataclass(frozen=True)
class Completion:
    """A non-streamed completion: the upstream's bytes, and the same bytes checked as a chat completion.

    The pass-through path forwards ``raw`` untouched; ``reply`` exists only
    because the body was validated (``replies.parse_completion``) before anyone
    sees it, so a 200 that is not a chat completion never reaches a client or a scorer.
    """

    raw: bytes
    reply: ChatCompletion
    model_group: str

    @cached_property
    def data(self) -> dict[str, Any]:
        """The body as plain JSON (the evaluation cache stores it)."""
        parsed: dict[str, Any] = orjson.loads(self.raw)
        return parsed


@dataclass
class UpstreamStream:
    """An opened upstream stream: SSE-framed byte chunks, ending with ``data: [DONE]``.

    It is opened (status checked, first chunk read) before the client's response
    starts, so that upstream errors still reach the client as a proper HTTP
    error rather than as a broken 200 stream.
    """

    chunks: AsyncIterator[bytes]
    close: Callable[[], Awaitable[None]]
    model_group: str
    first: list[bytes] = field(default_factory=list)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            for chunk in self.first:
                yield chunk
            async for chunk in self.chunks:
                yield chunk
        finally:
            await self.close()


async def bounded_chunks(chunks: AsyncIterator[bytes], limit: int, errors: UpstreamErrors) -> AsyncIterator[bytes]:
    """``chunks`` until their total passes ``limit`` bytes, then the upstream's reply-too-large error."""
    total = 0
    async for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise errors.too_large(limit)
        yield chunk
