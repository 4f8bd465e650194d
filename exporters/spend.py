"""The spend ledger: what each key and model group spent on answers and on scoring, for budgets to read.

Every process that spends adds to its own ledger: the gateway an answer's
cost as it is served, the process that scores (the local scoring worker, a
``trustgate worker``, or the gateway itself inline) each record's scoring cost
as it publishes it. Adding is a dictionary update in memory, never I/O: the
request path pays nothing more. Once a second the ledger flushes what it added
to the store (``spend_store``: the record store's SQLite database, or Redis,
which every replica and worker shares), and re-reads the spans its readers
asked about, so that what another replica or worker spent is in the next read.

A read (``spent``) is the stored figure as of the last refresh, plus what this
process added since: a process sees its own spend at once, another's within a
flush. Only the first read of a span goes to the store; a store that cannot
answer then is the reader's ``StoreUnavailable``. A flush that fails keeps its
spend for the next one, and is counted (``on_error``).

Subjects are ``key:<name>`` (a key's spend: its answers, and the scoring of
them) and ``model:<group>`` (a model group's, whoever asked); the seam every
budget reads, whether its key comes from the config or from a store.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from scoring import StoreUnavailable, TrustRecord

from .spend_store import MINUTE, SpendCharge, SpendPurpose, SpendStore, Spent

__all__ = ["FLUSH_S", "SpendLedger", "key_subject", "model_subject"]

log = logging.getLogger("trustgate.spend")

FLUSH_S = 1.0  # a second's spend is what a replica may spend beyond a budget another replica has spent
FORGET_S = 300.0  # a span nobody read for this long is no longer refreshed

# Per subject: (purpose, minute) -> dollars added by this process.
Local = dict[str, dict[tuple[SpendPurpose, int], float]]


def key_subject(name: str) -> str:
    return f"key:{name}"


def model_subject(group: str) -> str:
    return f"model:{group}"


@dataclass
class _View:
    """A span's stored spend, as last read, and when a reader last asked for it."""

    stored: Spent
    asked: float


class SpendLedger:
    def __init__(
        self,
        store: SpendStore,
        *,
        clock: Callable[[], float] = time.time,
        on_error: Callable[[str], None] = lambda operation: None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._on_error = on_error
        self._pending: Local = {}
        self._flushing: Local = {}  # taken by a flush, not yet in the views
        self._views: dict[tuple[str, int], _View] = {}
        self._lock = asyncio.Lock()
        self._loop: asyncio.Task[None] | None = None
        self._failing: set[str] = set()  # operations whose last try failed: logged once, until they work again

    def now(self) -> float:
        return self._clock()

    def charge(self, *, key: str | None, model: str, purpose: SpendPurpose, usd: float) -> None:
        """``usd`` spent now for ``purpose``, on ``model``'s answers at ``key``'s request (None: no key known)."""
        if usd <= 0:
            return
        minute = int(self._clock() // MINUTE * MINUTE)
        for subject in (model_subject(model),) if key is None else (model_subject(model), key_subject(key)):
            entries = self._pending.setdefault(subject, {})
            entries[(purpose, minute)] = entries.get((purpose, minute), 0.0) + usd

    def charge_scoring(self, record: TrustRecord) -> None:
        """What a record's scoring calls cost, where known, on its model group and the key that asked."""
        if record.cost is None or record.model is None:
            return
        known = sum(part.usd for part in record.cost.by_component.values() if part.usd is not None)
        self.charge(key=record.owner, model=record.model, purpose="scoring", usd=known)

    async def spent(self, subject: str, since: float) -> Spent:
        """What ``subject`` spent from ``since`` (taken to its minute) until now."""
        start = int(since // MINUTE * MINUTE)
        view = self._views.get((subject, start))
        now = self._clock()
        if view is None:
            view = self._views[(subject, start)] = _View(await self._store.spent(subject, start, now), now)
        view.asked = now
        return view.stored + _added(self._pending, subject, start) + _added(self._flushing, subject, start)

    async def read(self, subject: str, since: float) -> Spent:
        """A one-off read (a page showing spend): from the store now, with this process's unflushed spend; unlike
        ``spent``, the span is not kept fresh afterwards."""
        start = int(since // MINUTE * MINUTE)
        stored = await self._store.spent(subject, start, self._clock())
        return stored + _added(self._pending, subject, start) + _added(self._flushing, subject, start)

    async def start(self) -> None:
        self._loop = asyncio.create_task(self._flush_every_second(), name="spend-ledger")

    async def close(self) -> None:
        """Stop flushing, then flush what is left (a last chance: a store that fails now loses it, counted)."""
        if self._loop is not None:
            self._loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop
        await self.flush()

    async def _flush_every_second(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_S)
            await self.flush()

    async def flush(self) -> None:
        """Write what was added since the last flush, then re-read every span a reader still asks about."""
        async with self._lock:
            taken, self._pending = self._pending, {}
            if taken:
                self._flushing = taken
                try:
                    await self._store.add(_charges(taken))
                except StoreUnavailable as exc:
                    self._flushing = {}
                    _merge(self._pending, taken)
                    self._failed("write", exc)
                    return
                self._worked("write")
            await self._refresh()
            self._flushing = {}

    async def _refresh(self) -> None:
        """Every watched span read again, then all set at once (so no read counts a flushed charge twice)."""
        now = self._clock()
        for gone in [span for span, view in self._views.items() if now - view.asked > FORGET_S]:
            del self._views[gone]
        fresh: dict[tuple[str, int], Spent] = {}
        for subject, start in list(self._views):
            try:
                fresh[(subject, start)] = await self._store.spent(subject, start, now)
            except StoreUnavailable as exc:  # the span keeps its last figure
                self._failed("read", exc)
                return
        if fresh:
            self._worked("read")
        for span, stored in fresh.items():
            if span in self._views:
                self._views[span].stored = stored

    def _failed(self, operation: str, exc: StoreUnavailable) -> None:
        """Counted every time; logged when it starts failing, not every second while it does."""
        self._on_error(operation)
        if operation not in self._failing:
            self._failing.add(operation)
            log.warning("spend ledger %s failed, retried every second until it works: %s", operation, exc)

    def _worked(self, operation: str) -> None:
        if operation in self._failing:
            self._failing.discard(operation)
            log.info("spend ledger %s works again", operation)


def _added(local: Local, subject: str, start: int) -> Spent:
    entries = local.get(subject)
    if not entries:
        return Spent()
    by_purpose: dict[str, float] = {}
    for (purpose, minute), usd in entries.items():
        if minute >= start:
            by_purpose[purpose] = by_purpose.get(purpose, 0.0) + usd
    return Spent.of(by_purpose)


def _merge(into: Local, taken: Local) -> None:
    for subject, entries in taken.items():
        kept = into.setdefault(subject, {})
        for slot, usd in entries.items():
            kept[slot] = kept.get(slot, 0.0) + usd


def _charges(local: Local) -> list[SpendCharge]:
    return [
        SpendCharge(subject, purpose, minute, usd)
        for subject, entries in local.items()
        for (purpose, minute), usd in entries.items()
    ]
