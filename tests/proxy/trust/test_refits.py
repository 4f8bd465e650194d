"""The gateway's side of refits: which labels bring one, and how often one runs (the process itself is tested
over real sockets, tests/proxy/whole_gateway/test_hostile_tenants.py)."""

from __future__ import annotations

import asyncio
import time

import pytest

from proxy import settings_from_dict
from proxy.trust.refits import RefitLine, Refits
from scoring import FitKey, Labelled, RefitOutcome, Teachers
from scoring.learning.report import CalibrationReport
from scoring.types import Feedback, TrustRecord
from tests.conftest import gateway_config

pytestmark = pytest.mark.unit


class Recorded(Refits):
    """Refits whose process is stood in for: each run records the fits it was handed and answers for them."""

    def __init__(self, interval_s: float) -> None:
        config = gateway_config("http://127.0.0.1:9")
        config["trustgate"] = {"scoring": {"feedback": {"refit_every": 2, "min_refit_interval_s": interval_s}}}
        self.outcomes: list[RefitOutcome] = []
        super().__init__(
            settings_from_dict(config, {}), Teachers(frozenset({"master"})), "text", on_outcome=self.outcomes.append
        )
        self.runs: list[tuple[float, tuple[FitKey, ...]]] = []

    async def _run(self, fits: tuple[FitKey, ...]) -> list[RefitLine]:
        self.runs.append((time.monotonic(), fits))
        report = CalibrationReport(
            model="m", labels=2, positives=1, combination="default", reason="r", informative=None, fitted_at=1.0
        )
        return [RefitLine(model=fit.model, key=fit.key, outcome=RefitOutcome(report=report)) for fit in fits]


def labelled(record_id: str, by: str, previous: Feedback | None = None) -> Labelled:
    feedback = Feedback(correct=True, labelled_at=1.0, by=by)
    return Labelled(TrustRecord(id=record_id, status="done", model="m", owner="team-a", feedback=feedback), previous)


def test_only_a_teachers_first_labels_bring_a_refit() -> None:
    async def scenario() -> Recorded:
        refits = Recorded(interval_s=0)
        refits.note_label(labelled("r1", "team-a"))  # teaches nothing
        refits.note_label(labelled("r1", "master", previous=Feedback(correct=False, labelled_at=0.5, by="team-a")))
        for _ in range(5):  # relabels by a teacher of a record it labelled already
            refits.note_label(labelled("r1", "master", previous=Feedback(correct=False, labelled_at=0.5, by="master")))
        await refits.idle()
        assert refits.runs == []
        refits.note_label(labelled("r2", "master"))  # the second record a teacher labelled: a refit
        await refits.idle()
        return refits

    refits = asyncio.run(scenario())
    assert [fits for _, fits in refits.runs] == [(FitKey("m"),)] and len(refits.outcomes) == 1


def test_one_fit_is_refitted_at_most_once_per_interval() -> None:
    async def scenario() -> Recorded:
        refits = Recorded(interval_s=0.5)
        for n in range(6):  # three refits due, one after the other
            refits.note_label(labelled(f"r{n}", "master"))
            await asyncio.sleep(0.01)
        await refits.idle()
        return refits

    refits = asyncio.run(scenario())
    started = [at for at, _ in refits.runs]
    # the first at once; the later ones due meanwhile wait, coalesced, for the interval to pass
    assert len(started) == 2 and started[1] - started[0] >= 0.5
