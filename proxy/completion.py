"""What an upstream call gives back, whichever backend made it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import orjson

__all__ = ["Completion", "UpstreamStream"]


@dataclass(frozen=True)
class Completion:
    """A non-streamed completion, kept as the upstream's bytes.

    The pass-through path forwards these bytes untouched; parsing happens only
    when something (scoring, a test) asks for ``data``.
    """

    raw: bytes
    model_group: str

    @cached_property
    def data(self) -> dict[str, Any]:
        """The parsed body; ``{}`` when the upstream sent something that is not a JSON object."""
        try:
            parsed = orjson.loads(self.raw)
        except orjson.JSONDecodeError:
            return {}
        return parsed if isinstance(parsed, dict) else {}


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
