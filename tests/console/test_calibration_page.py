"""The console's calibration page over HTTP: each model's report, its charts, and the not-informative notice."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

import console
from scoring.learning.guard import held_back
from scoring.learning.report import CalibrationReport, LearnedFit, ScoreQuality
from scoring.learning.store import SqliteFitStore
from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.servers import ServerThread

pytestmark = pytest.mark.integration


def _quality(area: float) -> ScoreQuality:
    return ScoreQuality(
        n=60,
        auroc=area,
        ece=0.1,
        cross_validated=True,
        roc=[(0.0, 0.0), (0.3, 0.8), (1.0, 1.0)],
        reliability=[(0.2, 0.25, 30), (0.8, 0.7, 30)],
    )


def _reports() -> list[CalibrationReport]:
    fitted = CalibrationReport(
        model="capable",
        labels=60,
        positives=30,
        combination="fitted",
        reason="it beats",
        informative=True,
        fit=LearnedFit(id="fit_1", features=("bc", "fc"), weights=(6.8, 2.4), intercept=-4.8),
        scores={"ov": _quality(0.7), "fitted": _quality(0.9)},
        fitted_at=1.0,
    )
    noise = CalibrationReport(
        model="tiny",
        labels=60,
        positives=30,
        combination="default",
        reason="no better",
        informative=False,
        scores={"ov": _quality(0.5)},
        fitted_at=1.0,
    )
    flipped = fitted.model_copy(
        update={"fit": LearnedFit(id="fit_flipped", features=("bc",), weights=(-3.0,), intercept=1.0)}
    )
    return [fitted, held_back(flipped, noise, "it gives bc a negative weight")]


def test_the_calibration_page_shows_each_model_and_flags_noise(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path
) -> None:
    records = tmp_path / "records.sqlite3"  # the fits live in the record store's own database

    async def keep() -> None:
        fits = SqliteFitStore(records)
        for report in _reports():
            await fits.put(report)
        await fits.close()

    asyncio.run(keep())
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"] = {"keys": [{"key": "sk-admin", "name": "ops", "admin": True}], "store": {"path": str(records)}}
    gateway = start_gateway(config, mounts=[console.mount])
    assert httpx.get(f"{gateway.url}/ui/calibration").status_code == 200  # the shell, no data
    page = httpx.get(f"{gateway.url}/ui/partials/calibration", headers={"authorization": f"Bearer {MASTER_KEY}"})
    assert page.status_code == 200, page.text
    capable, tiny = page.text.split('aria-label="Model tiny"')
    assert "fit_1" in capable and "bc +6.800, fc +2.400" in capable and 'class="roc fitted"' in capable
    assert "Not informative" not in capable
    assert "Not informative" in tiny and "x-trust-informative: false" in tiny
    assert "A new fit is held" in tiny and "it gives bc a negative weight" in tiny and "--fit fit_flipped" in tiny
    assert "is held" not in capable
    admin = httpx.get(f"{gateway.url}/ui/partials/calibration", headers={"authorization": "Bearer sk-admin"})
    assert admin.status_code == 403  # the master key only, as the API
