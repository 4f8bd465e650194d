"""One refit: a fit's labels read from the record store, assessed, guarded, and the report stored.

The gateway runs refits in a process of its own (``proxy.calibrate``), so
that reading thousands of records and fitting them never takes the serving
process's CPU; ``trustgate calibrate`` runs the same refit from the command
line. A refit reads only the labels that teach the fit (``teachers``), makes
the report (``fit.assess``), and stores it unless the refit guard holds it for
the operator (``guard``): then the report in use stays, carrying the held one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from ..types import ComponentResult, TrustRecord
from .features import record_features
from .guard import guard, held_back
from .report import CalibrationReport
from .rule import LabelledAnswer, LearningRule
from .store import FitStore
from .teachers import FitKey, Teachers

__all__ = ["LabelSource", "RefitOutcome", "Refitter", "labelled_answers"]

log = logging.getLogger("trustgate.learning")

DefaultCombination = Callable[[Mapping[str, ComponentResult]], ComponentResult | None]


class LabelSource(Protocol):
    async def labelled(
        self, model: str, limit: int = 10_000, *, by: frozenset[str] | None = None
    ) -> list[TrustRecord]: ...


class RefitOutcome(BaseModel):
    """What one refit left in the fit store (``report``: the report in use now), and why a new fit was held."""

    model_config = ConfigDict(extra="forbid")

    report: CalibrationReport
    held: str | None = None


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
                labelled_at=record.feedback.labelled_at,
            )
        )
    return answers


class Refitter:
    def __init__(
        self,
        records: LabelSource,
        fits: FitStore,
        rule: LearningRule,
        teachers: Teachers,
        *,
        default: DefaultCombination,
        max_labels: int = 10_000,
    ) -> None:
        self._records = records
        self._fits = fits
        self._rule = rule
        self._teachers = teachers
        self._default = default
        self._max_labels = max_labels

    async def teaching_records(self, fit: FitKey) -> list[TrustRecord]:
        """The newest ``max_labels`` records whose label teaches ``fit``."""
        by = self._teachers.labellers if fit.key is None else frozenset({fit.key})
        records = await self._records.labelled(fit.model, limit=self._max_labels, by=by)
        return [record for record in records if self._teachers.teaches(record, fit)]

    async def refit(self, fit: FitKey) -> RefitOutcome:
        """Fit ``fit`` on its teaching labels now and store the report, or hold it (``guard``)."""
        from .fit import assess  # scikit-learn: loaded where fits are made, not by every gateway

        answers = labelled_answers(await self.teaching_records(fit), self._default)
        made = await asyncio.to_thread(assess, fit.model, answers, self._rule, now=time.time())
        report = made.model_copy(update={"key": fit.key})
        in_use = await self._fits.get(fit.model, fit.key)
        held = guard(report, in_use, answers, self._rule.min_agreement)
        if held is None:
            await self._fits.put(report)
            log.info(
                "refit %s on %d labels: %s combination (%s)", fit, report.labels, report.combination, report.reason
            )
            return RefitOutcome(report=report)
        kept = held_back(report, in_use, held)
        await self._fits.put(kept)
        log.warning(
            "refit %s on %d labels: the new fit %s is held for the operator, not served: %s "
            "(GET /v1/trust/calibration shows it; accept it with trustgate calibrate --accept)",
            fit,
            report.labels,
            report.fit.id if report.fit is not None else "",
            held,
        )
        return RefitOutcome(report=kept, held=held)
