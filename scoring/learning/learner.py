"""Refits in a running gateway: every ``refit_every`` new labels of a model, one refit at a time, off the loop.

The gateway calls ``note_label(model)`` after each label it stores. When a
model has gathered ``refit_every`` labels since its last refit, the model is
queued; one task drains the queue, reading the model's labelled records from
the record store, fitting in a thread (``fit.assess``: scikit-learn, a second
or two) and writing the report to the fit store, where the scoring pipeline of
every process sharing it picks it up for the next record. A failed refit is
logged and counted; the previous report stays.

``trustgate calibrate`` calls ``refit`` directly.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from ..types import ComponentResult, TrustRecord
from .features import record_features
from .report import CalibrationReport
from .rule import LabelledAnswer, LearningRule
from .store import FitStore

__all__ = ["LabelSource", "Learner", "labelled_answers"]

log = logging.getLogger("trustgate.learning")

DefaultCombination = Callable[[Mapping[str, ComponentResult]], ComponentResult | None]


class LabelSource(Protocol):
    async def labelled(self, model: str, limit: int = 10_000) -> list[TrustRecord]: ...


def labelled_answers(records: list[TrustRecord], default: DefaultCombination) -> list[LabelledAnswer]:
    """The learner's view of labelled records; the default Trust_OV recomputed from each one's components.

    Recomputed rather than read from the record, so that records a fit scored
    still give the default's value, and the default is today's.
    """
    answers = []
    for record in records:
        if record.feedback is None:
            continue
        overall = default(record.components)
        answers.append(
            LabelledAnswer(
                features=record_features(record),
                correct=record.feedback.correct,
                default=None if overall is None else overall.value,
            )
        )
    return answers


def _assess(model: str, answers: list[LabelledAnswer], rule: LearningRule) -> CalibrationReport:
    from .fit import assess  # scikit-learn: loaded by the first refit, not by every gateway

    return assess(model, answers, rule, now=time.time())


class Learner:
    def __init__(
        self,
        records: LabelSource,
        fits: FitStore,
        rule: LearningRule,
        *,
        refit_every: int,
        default: DefaultCombination,
        max_labels: int = 10_000,
        on_report: Callable[[CalibrationReport], None] = lambda report: None,
        on_failure: Callable[[], None] = lambda: None,
    ) -> None:
        self._records = records
        self._fits = fits
        self._rule = rule
        self._refit_every = refit_every
        self._max_labels = max_labels
        self._default = default
        self._on_report = on_report
        self._on_failure = on_failure
        self._new_labels: collections.Counter[str] = collections.Counter()
        self._queued: dict[str, None] = {}  # ordered set of models waiting for a refit
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()  # one refit at a time, the gateway's or a direct call's

    @property
    def fits(self) -> FitStore:
        return self._fits

    def note_label(self, model: str) -> None:
        """One more label stored for ``model``; queues a refit every ``refit_every`` of them."""
        self._new_labels[model] += 1
        if self._new_labels[model] >= self._refit_every:
            self._new_labels[model] = 0
            self._queued[model] = None
            if self._task is None or self._task.done():
                self._task = asyncio.create_task(self._drain(), name="trustgate-refit")

    async def _drain(self) -> None:
        while self._queued:
            model = next(iter(self._queued))
            del self._queued[model]
            try:
                await self.refit(model)
            except Exception:  # a refit's failure keeps the previous fit; it never reaches a user
                log.exception("refit of %s failed; its previous combination stays", model)
                self._on_failure()

    async def refit(self, model: str) -> CalibrationReport:
        """Fit ``model`` on its labelled records now, store the report and return it."""
        async with self._lock:
            records = await self._records.labelled(model, limit=self._max_labels)
            answers = labelled_answers(records, self._default)
            report = await asyncio.to_thread(_assess, model, answers, self._rule)
            await self._fits.put(report)
        log.info("refit %s on %d labels: %s combination (%s)", model, report.labels, report.combination, report.reason)
        self._on_report(report)
        return report

    async def idle(self) -> None:
        """Wait for queued refits (tests, shutdown)."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def stop(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
