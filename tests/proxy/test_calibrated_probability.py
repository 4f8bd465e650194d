"""A calibration file from ``trustgate eval`` turns each record's raw Trust_OV into ``x-trust-probability``."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest
import yaml

from proxy import ConfigError, settings_from_dict
from proxy.app import create_app
from scoring.calibration import IsotonicCalibrator, save_calibration
from scoring.combine import default_trust, paper_trust
from scoring.pipeline import ScoringPipeline
from scoring.settings import ScoringSettings
from scoring.types import Ask, ComponentResult, Scorer, ScoringJob
from tests.conftest import MASTER_KEY
from tests.fake_upstream import FakeUpstream
from tests.proxy.scored_gateway import AskingScorer, chat, scoring_config, wait_for_record
from tests.servers import ServerThread
from trustgate.cli import main
from trustgate.worker import run_worker

# Trust_OV of bc 0.9 with a neutral fc is 0.58 (graded Table 3); on this curve 0.58 lies 90 % of the
# way from (0.4, 0.1) to (0.6, 0.3), so its probability is 0.1 + 0.9 × 0.2 = 0.28.
CURVE = IsotonicCalibrator(x=(0.4, 0.6, 0.8), y=(0.1, 0.3, 0.9))


@pytest.fixture
def calibration(tmp_path: Path) -> Path:
    path = tmp_path / "calibration.json"
    save_calibration(CURVE, path)
    return path


@pytest.mark.integration
def test_headers_record_and_trust_chunk_carry_the_calibrated_probability(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], calibration: Path
) -> None:
    server = start_gateway(
        scoring_config(fake_upstream.url, calibration_path=str(calibration)),  # type: ignore[attr-defined]
        scorers=[AskingScorer("bc", 0.9), AskingScorer("fc", 0.5)],
    )
    response = chat(server, headers={"x-trustgate-mode": "sync"})
    assert (response.headers["x-trust-score"], response.headers["x-trust-probability"]) == ("0.5800", "0.2800")
    record = wait_for_record(server, response.headers["x-trust-id"])
    assert record["score"] == pytest.approx(0.58) and record["probability"] == pytest.approx(0.28)

    client = openai.OpenAI(
        base_url=f"{server.url}/v1", api_key=MASTER_KEY, max_retries=0, default_headers={"x-trustgate-mode": "sync"}
    )
    chunks = list(
        client.chat.completions.create(
            model="fake", messages=[{"role": "user", "content": "Who said hi?"}], stream=True
        )
    )
    assert chunks[-1].model_extra["trust"]["probability"] == pytest.approx(0.28)  # type: ignore[index]


@pytest.mark.integration
@pytest.mark.parametrize(("fitted_with", "warned"), [("bc+fc", False), ("fc", True)])
def test_a_calibration_fitted_on_other_scorers_is_logged_and_gives_no_probability(
    fake_upstream: FakeUpstream,
    start_gateway: Callable[..., ServerThread],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    fitted_with: str,
    warned: bool,
) -> None:
    path = tmp_path / "fitted.json"
    save_calibration(IsotonicCalibrator(x=CURVE.x, y=CURVE.y, fitted_on={"components": fitted_with}), path)
    with caplog.at_level("WARNING", logger="trustgate.assembly"):
        server = start_gateway(
            scoring_config(fake_upstream.url, calibration_path=str(path)),  # type: ignore[attr-defined]
            scorers=[AskingScorer("bc", 0.9), AskingScorer("fc", 0.5)],
        )
        probability = chat(server, headers={"x-trustgate-mode": "sync"}).headers.get("x-trust-probability")
    assert probability == (None if warned else "0.2800")  # Trust_OV from bc+fc is not what an fc-only fit saw
    mismatch = [
        r.getMessage()
        for r in caplog.records
        if r.name == "trustgate.assembly" and "the calibration was fitted on" in r.getMessage()
    ]
    assert bool(mismatch) is warned
    assert not warned or "from fc, but this process scores with bc+fc" in mismatch[0]


@pytest.mark.integration
def test_without_a_calibration_the_probability_is_absent(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = start_gateway(
        scoring_config(fake_upstream.url),  # type: ignore[attr-defined]
        scorers=[AskingScorer("bc", 0.9), AskingScorer("fc", 0.5)],
    )
    response = chat(server, headers={"x-trustgate-mode": "sync"})
    assert response.headers["x-trust-score"] == "0.5800" and "x-trust-probability" not in response.headers
    assert wait_for_record(server, response.headers["x-trust-id"])["probability"] is None


class FixedScorer(Scorer):
    def __init__(self, name: str, value: float) -> None:
        self.name, self.value = name, value

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        return ComponentResult(component=self.name, value=self.value)


@pytest.mark.unit
def test_a_record_without_the_calibrated_component_gets_no_probability() -> None:
    """A calibration fitted on Trust_OV says nothing about a RAG score: no number rather than a wrong one."""
    pipeline = ScoringPipeline(
        [FixedScorer("rag", 0.7)],
        lambda model, purpose, lane: None,  # type: ignore[arg-type,return-value]
        ScoringSettings(),
        calibrator=CURVE,
    )
    record = asyncio.run(pipeline.run(ScoringJob(id="trust-1", model="m", question="q", answer="a")))
    assert record.score == 0.7 and record.probability is None


class FailingScorer(Scorer):
    name = "bc"

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        raise RuntimeError("upstream gone")


@pytest.mark.unit
@pytest.mark.parametrize(("fitted_with", "probability"), [("bc+fc", None), ("fc", 0.1), (None, 0.1)])
def test_trust_ov_from_other_scorers_than_the_calibration_gets_no_probability(
    fitted_with: str | None, probability: float | None
) -> None:
    """Trust_BC failed, so Trust_OV is Trust_FC alone: a curve fitted on both would give it a wrong number."""
    fitted_on = {"components": fitted_with} if fitted_with else {}
    calibrator = IsotonicCalibrator(x=CURVE.x, y=CURVE.y, fitted_on=fitted_on)
    pipeline = ScoringPipeline(
        [FailingScorer(), FixedScorer("fc", 0.4)],
        lambda model, purpose, lane: None,  # type: ignore[arg-type,return-value]
        ScoringSettings(),
        combine=paper_trust,
        calibrator=calibrator,
    )
    record = asyncio.run(pipeline.run(ScoringJob(id="trust-1", model="m", question="q", answer="a")))
    assert record.score == 0.4 and record.components["ov"].details.source == "fc"
    assert record.probability == (pytest.approx(probability) if probability is not None else None)


@pytest.mark.integration
@pytest.mark.parametrize("content", ['{"format": "something-else"}', "not json", None])
def test_a_bad_calibration_file_stops_the_start_with_a_config_error(
    tmp_path: Path, fake_upstream: FakeUpstream, content: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "calibration.json"
    if content is not None:
        path.write_text(content)
    config: dict[str, Any] = scoring_config(fake_upstream.url, calibration_path=str(path))
    with pytest.raises(ConfigError, match="calibration_path"):
        create_app(settings_from_dict(config, {}))

    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(config))
    assert main(["serve", "--config", str(config_file)]) == 2
    assert "trustgate.scoring.calibration_path" in capsys.readouterr().err

    config["trustgate"]["scoring"]["queue"]["backend"] = "redis"
    with pytest.raises(ConfigError, match="calibration_path"):  # before any Redis connection is tried
        asyncio.run(run_worker(settings_from_dict(config, {}), metrics_port=None))


@pytest.mark.integration
def test_a_fitted_trust_ov_is_the_logistic_fit_of_its_features_and_its_own_probability(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path
) -> None:
    from scoring.calibration import LogisticCombination
    from scoring.logprob import LogprobScorer

    path = tmp_path / "fitted.json"
    save_calibration(LogisticCombination(("bc", "lp_mean"), (2.0, 1.0), -1.0, fitted_on={"components": "bc+lp"}), path)
    server = start_gateway(
        scoring_config(fake_upstream.url, calibration_path=str(path), combine="fitted"),  # type: ignore[attr-defined]
        scorers=[AskingScorer("bc", 0.9), LogprobScorer()],
    )
    response = chat(server, headers={"x-trustgate-mode": "sync"})
    record = wait_for_record(server, response.headers["x-trust-id"])
    ov, lp = record["components"]["ov"], record["components"]["lp"]
    expected = 1 / (1 + math.exp(-(-1.0 + 2.0 * 0.9 + lp["details"]["mean_logprob"])))
    assert (ov["details"]["method"], ov["details"]["source"]) == ("fitted", "bc+lp")
    assert record["score"] == pytest.approx(expected) and record["probability"] == pytest.approx(expected)


@pytest.mark.unit
def test_combine_fitted_needs_a_logistic_fit(tmp_path: Path) -> None:
    from scoring.assembly import ScorerAssetsError, combiner_for

    with pytest.raises(ValueError, match="combine: fitted needs calibration_path"):
        ScoringSettings(combine="fitted")
    settings = ScoringSettings(combine="fitted", calibration_path=tmp_path / "c.json")
    with pytest.raises(ScorerAssetsError, match="logistic"):
        combiner_for([AskingScorer("bc", 0.9)], settings, CURVE)
    assert combiner_for([AskingScorer("bc", 0.9)], ScoringSettings(), None) is default_trust
    assert combiner_for([AskingScorer("bc", 0.9)], ScoringSettings(combine="paper"), None) is paper_trust
