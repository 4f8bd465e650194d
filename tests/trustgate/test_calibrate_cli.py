"""``trustgate calibrate``: the refit a gateway makes, from the command line, on the gateway's own stores."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from exporters import SqliteRecordStore
from scoring.learning.guard import held_back
from scoring.learning.report import CalibrationReport, LearnedFit
from scoring.learning.store import SqliteFitStore
from scoring.types import ComponentResult, Feedback, LPDetails, RecordScope, TrustRecord
from tests.conftest import gateway_config
from trustgate.cli import main

pytestmark = pytest.mark.unit


def _labelled(path: Path, count: int) -> None:
    """``count`` records of model "fake" whose answer's length tracks the label it is given (right answers are
    short) while their log-probability is noise: what the default combination (which reads lp) cannot see."""
    rng = np.random.default_rng(0)

    async def write() -> None:
        store = SqliteRecordStore(path, max_age_s=86400, max_records=1000)
        await store.open()
        for i in range(count):
            mean = min(0.0, -0.8 + float(rng.normal(0, 0.4)))
            lp = ComponentResult(
                component="lp", value=float(np.exp(mean)), details=LPDetails(mean_logprob=mean, min_logprob=2 * mean)
            )
            words = int(rng.integers(1, 4)) if i % 2 else int(rng.integers(12, 30))
            await store.put(
                TrustRecord(
                    id=f"r{i}",
                    status="done",
                    model="fake",
                    owner="master",
                    answer=" ".join(["word"] * words),
                    components={"lp": lp},
                    score=None,
                )
            )
        await store.close()  # flushes the writes
        store = SqliteRecordStore(path, max_age_s=86400, max_records=1000)
        await store.open()
        for i in range(count):
            await store.set_feedback(
                f"r{i}",
                Feedback(correct=bool(i % 2), labelled_at=time.time(), by="master"),
                scope=RecordScope.everyone(),
            )
        await store.close()

    asyncio.run(write())


def _config(tmp_path: Path, **feedback: Any) -> Path:
    config = gateway_config("http://127.0.0.1:9")
    config["trustgate"] = {"store": {"path": str(tmp_path / "records.sqlite3")}, "scoring": {"feedback": feedback}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _stored_fits(tmp_path: Path) -> dict[str, Any]:
    """The fits in the record store's own database, by model."""

    async def read() -> dict[str, Any]:
        fits = SqliteFitStore(tmp_path / "records.sqlite3")
        reports = {report.model: report.model_dump(mode="json") for report in await fits.all()}
        await fits.close()
        return reports

    return asyncio.run(read())


def test_calibrate_refits_from_the_store_and_writes_the_fit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _config(tmp_path, min_labels=20)
    _labelled(tmp_path / "records.sqlite3", 40)
    assert main(["calibrate", "--config", str(path)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("fake: 40 labels (20 correct), fitted combination"), printed
    stored = _stored_fits(tmp_path)["fake"]
    assert stored["combination"] == "fitted" and stored["fit"]["features"][0] == "length"


def test_calibrate_accepts_a_held_fit_by_its_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _config(tmp_path, min_labels=20)
    _labelled(tmp_path / "records.sqlite3", 40)

    async def hold() -> str:
        fits = SqliteFitStore(tmp_path / "records.sqlite3")
        flipped = CalibrationReport(
            model="fake",
            labels=40,
            positives=20,
            combination="fitted",
            reason="r",
            informative=True,
            fit=LearnedFit(id="fit_flipped", features=("lp",), weights=(-2.0,), intercept=0.0),
            fitted_at=1.0,
        )
        await fits.put(held_back(flipped, None, "it gives lp a negative weight"))
        await fits.close()
        return "fit_flipped"

    fit_id = asyncio.run(hold())
    assert main(["calibrate", "--config", str(path)]) == 0  # a refit shows what is held, and how to serve it
    assert main(["calibrate", "--config", str(path), "--accept", "fake", "--fit", "fit_other"]) == 1
    assert "no fit `fit_other` is held" in capsys.readouterr().err
    assert _stored_fits(tmp_path)["fake"]["fit"]["id"] != fit_id  # the refit's own fit, not the held one
    asyncio.run(hold())
    assert main(["calibrate", "--config", str(path), "--accept", "fake", "--fit", fit_id]) == 0
    stored = _stored_fits(tmp_path)["fake"]
    assert stored["fit"]["id"] == fit_id and stored["held"] is None and stored["combination"] == "fitted"


def test_calibrate_without_labels_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _config(tmp_path)
    assert main(["calibrate", "--config", str(path)]) == 0
    assert "no labelled records yet" in capsys.readouterr().err
    assert _stored_fits(tmp_path) == {}


@pytest.mark.parametrize(
    "command",
    [["calibrate"], ["worker"], ["build-assets"], ["corpus", "add", "notes.jsonl"], ["corpus", "remove", "notes"]],
    ids=lambda c: " ".join(c),
)
def test_every_command_with_a_config_reads_trustgate_config(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What a container or a unit file sets names the config of every command that reads one, not only serve's."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRUSTGATE_CONFIG", "from-variable.yaml")
    assert main(command) == 2
    assert "cannot read config from-variable.yaml" in capsys.readouterr().err
