"""The embedded model server's slots, lent by the gateway to its local scoring worker.

The gateway's ``PrioritySlots`` let a user's call go ahead of queued scoring
calls on the single-slot local model. A local scoring worker makes its
scoring calls itself; were it to hold slots of its own, the model server
would take calls from both processes in arrival order and a user's request
could wait behind the worker's re-asks. So the worker borrows: each of its
calls asks the gateway for a slot (``LeasedSlots``, the worker's side), the
gateway waits for one in its own ``PrioritySlots`` at the call's priority
(``SlotLender``, the gateway's side) and the worker gives it back when the
call ends. Three small frames per call, against the call itself.

A slot the worker has not given back when it dies is given back by the
gateway (``SlotLender.close``); an ask the worker withdraws (its call
cancelled) is withdrawn in the gateway too.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable

from scoring.local_transport import FrameKind, SlotAnswer, SlotAsk, SlotReturn

from ..base.errors import UpstreamTimeout
from .slots import Priority, PrioritySlots

__all__ = ["LeasedSlots", "SlotLender"]

Send = Callable[[FrameKind, bytes], None]


class LeasedSlots(PrioritySlots):
    """The worker's side: the gateway's slots, asked for over the worker's connection."""

    def __init__(self, send: Send) -> None:
        super().__init__(0)
        self._send = send
        self._numbers = itertools.count(1)
        self._asked: dict[int, asyncio.Future[bool]] = {}
        self._held: list[int] = []  # slots are alike: a release gives back any one held

    async def acquire(self, priority: Priority, timeout: float) -> None:
        lease = next(self._numbers)
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._asked[lease] = answer
        try:
            self._send(
                FrameKind.SLOT_ASK,
                SlotAsk(lease=lease, priority=int(priority), timeout=timeout).model_dump_json().encode(),
            )
            granted = await answer
        except BaseException:
            self._asked.pop(lease, None)
            with contextlib.suppress(ConnectionError, RuntimeError):  # the gateway is gone: nothing to return
                self._send(FrameKind.SLOT_RETURN, SlotReturn(lease=lease).model_dump_json().encode())
            raise
        if not granted:
            raise UpstreamTimeout("the local model is busy: no slot within the timeout", code="upstream_timeout")
        self._held.append(lease)

    def release(self) -> None:
        if self._held:
            lease = self._held.pop()
            with contextlib.suppress(ConnectionError, RuntimeError):
                self._send(FrameKind.SLOT_RETURN, SlotReturn(lease=lease).model_dump_json().encode())

    def answer(self, payload: bytes) -> None:
        """The gateway's answer to an ask (one withdrawn meanwhile was returned already: ignored)."""
        reply = SlotAnswer.model_validate_json(payload)
        asked = self._asked.pop(reply.lease, None)
        if asked is not None and not asked.done():
            asked.set_result(reply.granted)

    def disconnected(self) -> None:
        """The gateway is gone: every call waiting for a slot fails."""
        for asked in self._asked.values():
            if not asked.done():
                asked.set_exception(ConnectionError("the gateway closed the connection"))
        self._asked.clear()


class SlotLender:
    """The gateway's side, for one worker: its asks waited for in the gateway's slots, its slots given back."""

    def __init__(self, slots: PrioritySlots, send: Send) -> None:
        self._slots = slots
        self._send = send
        self._waiting: dict[int, asyncio.Task[None]] = {}
        self._lent: set[int] = set()

    def ask(self, payload: bytes) -> None:
        asked = SlotAsk.model_validate_json(payload)
        self._waiting[asked.lease] = asyncio.create_task(self._lend(asked), name=f"slot-lease-{asked.lease}")

    async def _lend(self, asked: SlotAsk) -> None:
        try:
            priority = Priority(asked.priority)
        except ValueError:  # a priority this gateway does not know: the lowest
            priority = max(Priority)
        try:
            await self._slots.acquire(priority, asked.timeout)
        except UpstreamTimeout:
            self._waiting.pop(asked.lease, None)
            self._answer(asked.lease, granted=False)
            return
        except BaseException:
            self._waiting.pop(asked.lease, None)
            raise
        if self._waiting.pop(asked.lease, None) is None:  # withdrawn just as the slot came (a cancel can lose
            self._slots.release()  # that race to wait_for): it goes to the next call
            return
        self._lent.add(asked.lease)
        self._answer(asked.lease, granted=True)

    def _answer(self, lease: int, *, granted: bool) -> None:
        try:
            self._send(FrameKind.SLOT_ANSWER, SlotAnswer(lease=lease, granted=granted).model_dump_json().encode())
        except (ConnectionError, RuntimeError):
            self.give_back(lease)

    def returned(self, payload: bytes) -> None:
        self.give_back(SlotReturn.model_validate_json(payload).lease)

    def give_back(self, lease: int) -> None:
        """A lent slot back to the gateway's slots, or a waiting ask withdrawn."""
        if lease in self._lent:
            self._lent.discard(lease)
            self._slots.release()
        elif (waiting := self._waiting.pop(lease, None)) is not None:
            waiting.cancel()  # PrioritySlots.acquire passes on a slot handed over just as it was cancelled

    def close(self) -> None:
        """The worker is gone: what it held goes back, what it asked for is withdrawn."""
        for lease in list(self._lent) + list(self._waiting):
            self.give_back(lease)
