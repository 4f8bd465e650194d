"""Decode an upstream body that came compressed anyway, never holding more than the reply cap.

The gateway asks every upstream for ``Accept-Encoding: identity``, so that the
bytes it counts against ``max_response_bytes`` are the bytes it holds. An
upstream (or a proxy in front of it) may compress regardless; a 32 KiB zstd
reply can decode to gigabytes in one call of an ordinary decoder. So a body is
decoded here, piece by piece, with its *decoded* size bounded: each piece is at
most ``_PIECE`` bytes, and decoding stops as soon as the total passes the cap,
before the next piece is produced. gzip and deflate (zlib) and zstd are
decoded; any other coding, or several stacked, is refused.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from typing import IO, Protocol, cast

import zstandard

__all__ = ["BoundedDecoder", "DecodedTooLarge", "UnsupportedEncoding", "bounded_body", "decoder_for"]

_PIECE = 64 * 1024  # the most one step of decoding produces at a time


class UnsupportedEncoding(ValueError):
    """A ``Content-Encoding`` the gateway does not decode: the body cannot be read."""


class DecodedTooLarge(ValueError):
    """The decoded body went past the cap; decoding stopped there."""


class BoundedDecoder(Protocol):
    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of ``data``; raises ``DecodedTooLarge`` once the total passes the cap."""
        ...

    def flush(self) -> Iterator[bytes]:
        """What is left once the body has ended."""
        ...


class _Identity:
    def feed(self, data: bytes) -> Iterator[bytes]:
        if data:
            yield data

    def flush(self) -> Iterator[bytes]:
        return iter(())


class _Counted:
    """The cap shared by the decoders: counts what they produce and stops them past ``limit``."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._total = 0

    def count(self, piece: bytes) -> bytes:
        self._total += len(piece)
        if self._total > self._limit:
            raise DecodedTooLarge(f"decoded reply over {self._limit} bytes")
        return piece


class _Zlib(_Counted):
    """gzip (``wbits`` 31) or deflate: zlib-wrapped as the standard says, raw as some servers send it."""

    def __init__(self, limit: int, *, gzip: bool) -> None:
        super().__init__(limit)
        self._gzip = gzip
        self._inflate = zlib.decompressobj(zlib.MAX_WBITS | 16 if gzip else zlib.MAX_WBITS)
        self._started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        try:
            yield from self._decoded(data)
        except zlib.error as exc:
            if self._gzip or self._started:
                raise UnsupportedEncoding(f"undecodable body: {exc}") from exc
            self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)  # deflate without its zlib header
            yield from self._decoded(data)

    def _decoded(self, data: bytes) -> Iterator[bytes]:
        pending = data
        while pending:
            piece = self._inflate.decompress(pending, _PIECE)
            self._started = True
            pending = self._inflate.unconsumed_tail
            if piece:
                yield self.count(piece)
            if self._inflate.eof:
                return

    def flush(self) -> Iterator[bytes]:
        rest = self._inflate.flush(_PIECE)
        if rest:
            yield self.count(rest)


class _Zstd(_Counted):
    """zstd through a streaming writer, whose output arrives in pieces and can be stopped mid-frame."""

    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self._pieces: list[bytes] = []
        # zstandard calls only ``write`` on the object it writes to.
        self._writer = zstandard.ZstdDecompressor().stream_writer(cast("IO[bytes]", self), write_size=_PIECE)

    def write(self, piece: bytes) -> int:
        """Called by zstandard for each decoded piece; raising here stops the decoding at once."""
        self._pieces.append(self.count(bytes(piece)))
        return len(piece)

    def feed(self, data: bytes) -> Iterator[bytes]:
        try:
            self._writer.write(data)
        except zstandard.ZstdError as exc:
            raise UnsupportedEncoding(f"undecodable body: {exc}") from exc
        pieces, self._pieces = self._pieces, []
        yield from pieces

    def flush(self) -> Iterator[bytes]:
        return iter(())


def decoder_for(content_encoding: str | None, limit: int) -> BoundedDecoder:
    """The decoder for a ``Content-Encoding`` header (absent or ``identity``: the bytes as they are)."""
    codings = [token.strip().lower() for token in (content_encoding or "").split(",") if token.strip()]
    codings = [coding for coding in codings if coding != "identity"]
    if not codings:
        return _Identity()
    if len(codings) > 1:
        raise UnsupportedEncoding(f"stacked content codings: {', '.join(codings)}")
    coding = codings[0]
    if coding in ("gzip", "x-gzip"):
        return _Zlib(limit, gzip=True)
    if coding == "deflate":
        return _Zlib(limit, gzip=False)
    if coding == "zstd":
        return _Zstd(limit)
    raise UnsupportedEncoding(f"content coding {coding[:40]!r}")


async def bounded_body(raw: AsyncIterable[bytes], decoder: BoundedDecoder, limit: int) -> AsyncIterator[bytes]:
    """A body's bytes as they arrive on the wire, decoded; ``DecodedTooLarge`` once either side passes ``limit``."""
    wire = 0
    if isinstance(decoder, _Identity):  # the common case: no decoding step per piece
        async for part in raw:
            wire += len(part)
            if wire > limit:
                raise DecodedTooLarge(f"reply over {limit} bytes")
            if part:
                yield part
        return
    async for part in raw:
        wire += len(part)
        if wire > limit:
            raise DecodedTooLarge(f"reply over {limit} bytes")
        for piece in decoder.feed(part):
            yield piece
    for piece in decoder.flush():
        yield piece
