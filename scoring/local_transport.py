"""The frames a gateway and its local scoring worker exchange over one socket (``scoring.worker: child``).

A frame is a 4-byte big-endian length, a 1-byte kind and that many bytes of
payload, each payload a pydantic model's JSON (a ``ScoringJob`` one way, a
``TrustRecord`` the other) or, for metrics, bytes this module does not read.
Every frame is bounded (``MAX_FRAME_BYTES``) in both directions: a peer that
announces more is broken, and the connection is dropped rather than the
memory spent. Sending raises ``FrameTooLarge`` before anything is written, so
one oversized job fails alone and the connection stays usable.

Both peers are the same installed code, started by the same user; the socket
is a ``socketpair`` no other process holds. Nothing here orders jobs: the
gateway's queue decides which job goes next and hands the worker at most its
concurrency at once.
"""

from __future__ import annotations

import asyncio
import enum
import struct

from pydantic import BaseModel, ConfigDict

__all__ = [
    "MAX_FRAME_BYTES",
    "CancelJob",
    "CountAnswer",
    "CountAsk",
    "FrameError",
    "FrameKind",
    "FrameTooLarge",
    "SlotAnswer",
    "SlotAsk",
    "SlotReturn",
    "WorkerFailed",
    "WorkerReady",
    "read_frame",
    "write_frame",
]

# A job carries a question, an answer and RAG documents, each bounded by the gateway's request body limit; a
# record what the scorers found. 32 MiB is far above both and far below what would hurt either process.
MAX_FRAME_BYTES = 32 * 1024 * 1024
_HEADER = struct.Struct(">IB")


class FrameKind(enum.IntEnum):
    JOB = 1  # gateway -> worker: a ScoringJob to score
    CANCEL = 2  # gateway -> worker: CancelJob, the gateway stopped waiting (its shutdown): do not publish it
    READY = 3  # worker -> gateway: WorkerReady, once its scorers are loaded
    FAILED = 4  # worker -> gateway: WorkerFailed, it could not start (a config error the gateway reports)
    RECORD = 5  # worker -> gateway: the TrustRecord of a job, already published by the worker
    METRICS = 6  # worker -> gateway: what its metrics counted since the last such frame (exporters' format)
    # A slot of the embedded model server, held by the gateway so that user calls go first (proxy.upstream.slot_leases)
    SLOT_ASK = 7  # worker -> gateway: SlotAsk
    SLOT_RETURN = 8  # worker -> gateway: SlotReturn, a slot given back (or an ask withdrawn)
    SLOT_ANSWER = 9  # gateway -> worker: SlotAnswer
    # The gateway's rate-limit counters in memory, which the worker's calls count on too (proxy.trust.lent_counters)
    COUNT_ASK = 10  # worker -> gateway: CountAsk
    COUNT_ANSWER = 11  # gateway -> worker: CountAnswer


class FrameError(Exception):
    """The peer sent something that is not a frame of this protocol: the connection is no longer usable."""


class FrameTooLarge(ValueError):
    """A payload over ``MAX_FRAME_BYTES``: not sent."""


class WorkerReady(BaseModel):
    model_config = ConfigDict(extra="forbid")

    has_scorers: bool  # whether any scorer loaded (the gateway scores nothing otherwise)


class WorkerFailed(BaseModel):
    model_config = ConfigDict(extra="forbid")

    error: str  # one line for the operator, as the inline arrangement would raise it


class CancelJob(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str


class SlotAsk(BaseModel):
    model_config = ConfigDict(extra="forbid")

    lease: int  # the worker's number for this ask
    priority: int  # lower goes first
    timeout: float  # seconds the worker's call may wait for a slot


class SlotReturn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    lease: int


class SlotAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    lease: int
    granted: bool  # false: no slot within the ask's timeout


class CountAsk(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ask: int  # the worker's number for this question
    key: str
    amount: int | None = None  # None: read the counter; a number: add it (with ttl_s) and read the sum
    ttl_s: int = 0


class CountAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ask: int
    value: int


def write_frame(writer: asyncio.StreamWriter, kind: FrameKind, payload: bytes) -> None:
    """Queue one frame on ``writer`` (the caller drains when it wants back-pressure)."""
    if len(payload) > MAX_FRAME_BYTES:
        raise FrameTooLarge(f"{kind.name.lower()} frame of {len(payload)} bytes is over {MAX_FRAME_BYTES}")
    writer.write(_HEADER.pack(len(payload), kind) + payload)


async def read_frame(reader: asyncio.StreamReader) -> tuple[FrameKind, bytes] | None:
    """The next frame, or None at a clean end of the stream (the peer closed between frames)."""
    try:
        header = await reader.readexactly(_HEADER.size)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise FrameError("stream ended inside a frame header") from None
        return None
    size, kind = _HEADER.unpack(header)
    if size > MAX_FRAME_BYTES:
        raise FrameError(f"frame of {size} bytes announced, over {MAX_FRAME_BYTES}")
    try:
        frame_kind = FrameKind(kind)
    except ValueError:
        raise FrameError(f"unknown frame kind {kind}") from None
    try:
        return frame_kind, await reader.readexactly(size)
    except asyncio.IncompleteReadError:
        raise FrameError("stream ended inside a frame") from None
