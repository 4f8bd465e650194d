"""The embedded model server's slots lent to a local scoring worker over a real socketpair: the worker's
scoring calls wait in the gateway's slots, so a user's call still overtakes them, and a worker that goes
away gives back what it held."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest

from proxy.base.errors import UpstreamTimeout
from proxy.upstream.slot_leases import LeasedSlots, SlotLender
from proxy.upstream.slots import Priority, PrioritySlots
from scoring.local_transport import FrameKind, read_frame, write_frame

pytestmark = pytest.mark.unit


@asynccontextmanager
async def lent(slots: PrioritySlots) -> AsyncIterator[tuple[LeasedSlots, SlotLender, Callable[[], None]]]:
    """A worker's LeasedSlots and the gateway's SlotLender at the two ends of a socketpair, each end
    reading its frames as the processes do; the callable cuts the worker's end (its death)."""
    gateway_end, worker_end = socket.socketpair()
    gateway_reader, gateway_writer = await asyncio.open_connection(sock=gateway_end)
    worker_reader, worker_writer = await asyncio.open_connection(sock=worker_end)
    lender = SlotLender(slots, lambda kind, payload: write_frame(gateway_writer, kind, payload))
    leased = LeasedSlots(lambda kind, payload: write_frame(worker_writer, kind, payload))

    async def gateway_reads() -> None:
        while (frame := await read_frame(gateway_reader)) is not None:
            kind, payload = frame
            if kind == FrameKind.SLOT_ASK:
                lender.ask(payload)
            elif kind == FrameKind.SLOT_RETURN:
                lender.returned(payload)
        lender.close()

    async def worker_reads() -> None:
        while (frame := await read_frame(worker_reader)) is not None:
            leased.answer(frame[1])
        leased.disconnected()

    readers = [asyncio.create_task(gateway_reads()), asyncio.create_task(worker_reads())]
    try:
        yield leased, lender, worker_writer.close
    finally:
        gateway_writer.close()
        worker_writer.close()
        await asyncio.gather(*readers, return_exceptions=True)


def test_a_user_call_overtakes_the_workers_queued_scoring_calls() -> None:
    order: list[str] = []

    async def call(slots: PrioritySlots, name: str, priority: Priority) -> None:
        async with slots.held(priority, timeout=5):
            order.append(name)
            await asyncio.sleep(0.1)

    async def scenario() -> None:
        slots = PrioritySlots(1)
        async with lent(slots) as (leased, _, _):
            first = asyncio.create_task(call(leased, "scoring-0", Priority.SCORING))
            await asyncio.sleep(0.03)
            queued = [asyncio.create_task(call(leased, f"scoring-{i}", Priority.SCORING)) for i in range(1, 4)]
            await asyncio.sleep(0.03)
            user = asyncio.create_task(call(slots, "user", Priority.USER))  # the gateway's own call
            await asyncio.gather(first, *queued, user)

    asyncio.run(scenario())
    assert order == ["scoring-0", "user", "scoring-1", "scoring-2", "scoring-3"]


def test_a_worker_that_goes_away_gives_back_its_slot_and_withdraws_its_asks() -> None:
    async def scenario() -> None:
        slots = PrioritySlots(1)
        async with lent(slots) as (leased, _, cut):
            await leased.acquire(Priority.SCORING, timeout=5)  # held, never released by the worker
            waiting = asyncio.create_task(leased.acquire(Priority.SCORING, timeout=5))
            await asyncio.sleep(0.03)
            with pytest.raises(UpstreamTimeout):  # the gateway's slot is lent out
                await slots.acquire(Priority.USER, timeout=0.1)
            cut()
            await slots.acquire(Priority.USER, timeout=2)  # given back when the worker went away
            with pytest.raises(ConnectionError):
                await waiting
            slots.release()
            await slots.acquire(Priority.USER, timeout=1)  # its ask, withdrawn, took no slot with it

    asyncio.run(scenario())


def test_an_ask_past_its_timeout_fails_as_a_busy_model_and_leaves_the_slot_free() -> None:
    async def scenario() -> None:
        slots = PrioritySlots(1)
        async with lent(slots) as (leased, _, _):
            await slots.acquire(Priority.USER, timeout=1)
            with pytest.raises(UpstreamTimeout):
                await leased.acquire(Priority.SCORING, timeout=0.1)
            slots.release()
            await leased.acquire(Priority.SCORING, timeout=1)  # the refused ask took nothing with it
            leased.release()
            await asyncio.sleep(0.05)
            await slots.acquire(Priority.USER, timeout=1)

    asyncio.run(scenario())
