"""Who teaches a fit, and the refit guard: a fit that turns a score around is held for the operator, not served."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import numpy as np
import pytest

from scoring.learning.guard import HeldFitMismatch, accept_held, guard, held_back
from scoring.learning.refit import Refitter
from scoring.learning.report import CalibrationReport, LearnedFit
from scoring.learning.rule import LabelledAnswer, LearningRule
from scoring.learning.store import SqliteFitStore
from scoring.learning.teachers import FitKey, Teachers
from scoring.types import ComponentResult, Feedback, TrustRecord

pytestmark = pytest.mark.unit

MIN_AGREEMENT = LearningRule().min_agreement


def fitted(*weights: tuple[str, float], fit_id: str = "fit_new", at: float = 100.0) -> CalibrationReport:
    features = tuple(name for name, _ in weights)
    fit = LearnedFit(id=fit_id, features=features, weights=tuple(w for _, w in weights), intercept=0.0)
    return CalibrationReport(
        model="m", labels=60, positives=30, combination="fitted", reason="r", informative=True, fit=fit, fitted_at=at
    )


def answers(n: int = 40, *, labelled_at: float = 50.0) -> list[LabelledAnswer]:
    """Answers whose bc tracks the default's value (the default reads bc the right way round)."""
    rng = np.random.default_rng(0)
    bcs = [float(rng.random()) for _ in range(n)]
    return [
        LabelledAnswer({"bc": bc, "length": float(rng.random())}, correct=bc > 0.5, default=bc, labelled_at=labelled_at)
        for bc in bcs
    ]


def test_a_fit_that_flips_a_components_sign_against_the_default_is_held() -> None:
    reason = guard(fitted(("bc", -3.0)), None, answers(), MIN_AGREEMENT)
    assert reason is not None and "bc" in reason and "negative" in reason and "default" in reason


def test_a_fit_that_flips_the_sign_of_the_learned_fit_in_use_is_held() -> None:
    in_use = fitted(("lp_mean", 2.0), fit_id="fit_old", at=10.0)
    reason = guard(fitted(("lp_mean", -1.0)), in_use, answers(), MIN_AGREEMENT)
    assert reason is not None and "lp_mean" in reason and "learned" in reason
    # a weight the operator accepted below zero is the reference: keeping it negative is no flip
    accepted = fitted(("bc", -2.0), fit_id="fit_old", at=10.0)
    assert guard(fitted(("bc", -1.5)), accepted, [], MIN_AGREEMENT) is None


def test_a_fit_that_ranks_the_seen_answers_the_other_way_is_held() -> None:
    # length is no component (no sign to keep), but here it ranks the answers against the default's bc
    seen = [
        LabelledAnswer({"bc": i / 40, "length": 1 - i / 40}, correct=i > 20, default=i / 40, labelled_at=1.0)
        for i in range(40)
    ]
    reason = guard(fitted(("length", 4.0)), None, seen, MIN_AGREEMENT)
    assert reason is not None and "rank correlation -1.00" in reason


def test_only_answers_the_learned_fit_in_use_has_seen_are_compared() -> None:
    in_use = fitted(("bc", 2.0), fit_id="fit_old", at=10.0)
    later = [
        LabelledAnswer({"bc": i / 40, "length": 1 - i / 40}, correct=i > 20, default=i / 40, labelled_at=20.0)
        for i in range(40)
    ]
    assert guard(fitted(("length", 4.0)), in_use, later, MIN_AGREEMENT) is None  # labelled after it was fitted


def test_a_fit_that_agrees_and_a_report_without_a_fit_are_served() -> None:
    assert guard(fitted(("bc", 3.0), ("length", -0.5)), None, answers(), MIN_AGREEMENT) is None
    default = fitted(("bc", -3.0)).model_copy(update={"combination": "default", "fit": None})
    assert guard(default, None, answers(), MIN_AGREEMENT) is None


def test_a_held_fit_rides_on_the_report_in_use_until_the_operator_accepts_it() -> None:
    new = fitted(("bc", -3.0), fit_id="fit_flipped")
    kept = held_back(new, None, "flips bc")
    assert kept.combination == "default" and kept.fit is None  # nothing was in use: the default stays
    assert kept.held is not None and kept.held.report.fit is not None and kept.held.report.fit.id == "fit_flipped"
    in_use = fitted(("bc", 2.0), fit_id="fit_old", at=10.0)
    assert held_back(new, in_use, "flips bc").fit == in_use.fit
    with pytest.raises(HeldFitMismatch):
        accept_held(kept, "fit_other")  # a fit held after the operator looked is not accepted in its place
    accepted = accept_held(kept, "fit_flipped")
    assert accepted.combination == "fitted" and accepted.held is None and accepted.fit == new.fit
    with pytest.raises(HeldFitMismatch):
        accept_held(accepted, "fit_flipped")


def label(correct: bool, by: str | None, at: float = 1.0) -> Feedback:
    return Feedback(correct=correct, labelled_at=at, by=by)


def record(owner: str, feedback: Feedback | None, *, model: str = "m") -> TrustRecord:
    return TrustRecord(id="r", status="done", model=model, owner=owner, feedback=feedback)


def test_only_labellers_teach_the_shared_fit() -> None:
    teachers = Teachers(frozenset({"master", "curator"}))
    assert teachers.fit_taught("m", "team-a", label(True, "master")) == FitKey("m")
    assert teachers.fit_taught("m", "team-a", label(True, "curator")) == FitKey("m")
    assert teachers.fit_taught("m", "team-a", label(True, "team-a")) is None  # kept and shown, teaches nothing
    assert teachers.fit_taught("m", "team-a", label(True, None)) is None  # nobody can say who gave it


def test_under_scope_key_a_key_teaches_a_fit_of_its_own_on_its_own_records_only() -> None:
    teachers = Teachers(frozenset({"master"}), lambda model, key: key != "blocked-team")
    assert teachers.fit_taught("m", "team-a", label(True, "team-a")) == FitKey("m", "team-a")
    assert teachers.fit_taught("m", "team-b", label(True, "team-a")) is None  # an admin's label on another's
    assert teachers.fit_taught("m", "blocked-team", label(True, "blocked-team")) is None  # a policy acts on it


def test_a_record_counts_once_toward_refits_whatever_its_relabels() -> None:
    teachers = Teachers(frozenset({"master"}))
    first = record("team-a", label(True, "master"))
    assert teachers.counts_toward_refit(first, None) == FitKey("m")
    assert teachers.counts_toward_refit(record("team-a", label(False, "master")), label(True, "master")) is None
    # a team's label replaced by a labeller's: now it teaches, so it counts; the team's own never counts
    assert teachers.counts_toward_refit(first, label(True, "team-a")) == FitKey("m")
    assert teachers.counts_toward_refit(record("team-a", label(True, "team-a")), None) is None


class Labels:
    """A label source over records built here: what the record store's ``labelled`` gives."""

    def __init__(self, records: list[TrustRecord]) -> None:
        self.records = records

    async def labelled(self, model: str, limit: int = 10_000, *, by: frozenset[str] | None = None) -> list[TrustRecord]:
        mine = [r for r in self.records if r.model == model and r.feedback is not None]
        return [r for r in mine if by is None or (r.feedback is not None and r.feedback.by in by)][:limit]


def labelled_records(n: int, by: str, *, inverted: bool = False) -> list[TrustRecord]:
    """Records whose Trust_BC tracks whether they are right; ``inverted``: labelled the wrong way round."""
    rng = np.random.default_rng(7)
    out = []
    for i in range(n):
        right = i % 2 == 0
        bc = float(np.clip((0.8 if right else 0.2) + rng.normal(0, 0.1), 0, 1))
        out.append(
            TrustRecord(
                id=f"{by}-{i}",
                status="done",
                model="m",
                owner=by,
                components={"bc": ComponentResult(component="bc", value=bc)},
                answer="Paris",
                feedback=label(right != inverted, by, at=time.time()),
            )
        )
    return out


def refitter(records: list[TrustRecord], fits: SqliteFitStore) -> Refitter:
    return Refitter(
        Labels(records),
        fits,
        LearningRule(min_labels=20),
        Teachers(frozenset({"master"})),
        default=lambda components: ComponentResult(component="ov", value=components["bc"].value),
    )


def test_a_team_keys_inverted_labels_teach_nothing_and_a_labellers_are_held(tmp_path: Path) -> None:
    async def scenario() -> None:
        fits = SqliteFitStore(tmp_path / "records.sqlite3")
        poisoned = labelled_records(40, "team-a", inverted=True)
        outcome = await refitter(poisoned, fits).refit(FitKey("m"))
        assert outcome.report.labels == 0 and outcome.report.combination == "default"  # not one label taught it
        # the same labels from a labeller: the fit would read Trust_BC backwards, so it is held, not served
        outcome = await refitter(labelled_records(40, "master", inverted=True), fits).refit(FitKey("m"))
        stored = await fits.get("m")
        assert outcome.held is not None and "bc" in outcome.held
        assert stored is not None and stored.combination == "default" and stored.held is not None
        assert (
            stored.held.report.fit is not None
            and dict(zip(stored.held.report.fit.features, stored.held.report.fit.weights, strict=True))["bc"] < 0
        )
        # labelled right: Trust_BC (the default here) separates them already, so the default stays; nothing is held
        outcome = await refitter(labelled_records(40, "master"), fits).refit(FitKey("m"))
        stored = await fits.get("m")
        assert outcome.held is None and stored is not None and stored.held is None and "beat" in stored.reason
        await fits.close()

    asyncio.run(scenario())


def test_the_fit_store_keeps_each_fit_beside_the_records_and_sees_another_connections_write(tmp_path: Path) -> None:
    async def scenario() -> None:
        path = tmp_path / "records.sqlite3"
        one, two = SqliteFitStore(path), SqliteFitStore(path)
        assert await one.get("m") is None
        await two.put(fitted(("bc", 1.0), fit_id="fit_shared"))
        await two.put(fitted(("bc", 2.0), fit_id="fit_own").model_copy(update={"key": "team-a"}))
        shared, own = await one.get("m"), await one.get("m", "team-a")  # written by the other connection since
        assert shared is not None and shared.fit is not None and shared.fit.id == "fit_shared"
        assert own is not None and own.fit is not None and own.fit.id == "fit_own" and own.key == "team-a"
        assert [(r.model, r.key) for r in await one.all()] == [("m", None), ("m", "team-a")]
        await one.close()
        await two.close()
        with sqlite3.connect(path) as db:  # in the record store's own database, in a table of its own
            assert db.execute("SELECT COUNT(*) FROM trust_fits").fetchone()[0] == 2

    asyncio.run(scenario())
