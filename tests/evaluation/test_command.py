"""``trustgate eval`` from the command line against the fake upstream: report, figures, JSON, calibration."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import orjson
import pytest
import yaml

from evaluation.assembly import eval_scoring_settings
from evaluation.cli import add_eval_arguments
from proxy import settings_from_dict
from scoring.calibration import load_calibration
from scoring.settings import ScoringSettings
from tests.conftest import gateway_config
from tests.fake_upstream import FakeUpstream, last_user_text
from tests.trustgate_command import main

from .scripted import ALBUMS, ScriptedModel

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def write_config(path: Path, fake: FakeUpstream, settings: ScoringSettings) -> Path:
    config = gateway_config(fake.url)  # type: ignore[attr-defined]
    config["trustgate"] = {"scoring": {"data_dir": str(settings.data_dir), "factcheck": {"default_corpora": []}}}
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.integration
def test_given_mode_report_with_calibration(
    fake_upstream: FakeUpstream, evidence_settings: ScoringSettings, tmp_path: Path
) -> None:
    fake_upstream.responder = ScriptedModel(ALBUMS * 3)
    dataset = tmp_path / "albums.jsonl"
    rows = [
        {"id": f"{k}-{n}", "question": s.question, "answer": s.answer, "label": int(s.judge == "support")}
        for k in range(3)
        for n, s in enumerate(ALBUMS)
    ]
    dataset.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    out, calibration = tmp_path / "report", tmp_path / "calibration.json"
    arguments = [
        "eval",
        "run",
        "--dataset",
        "jsonl",
        "--file",
        str(dataset),
        "--mode",
        "given",
        "--config",
        str(write_config(tmp_path / "config.yaml", fake_upstream, evidence_settings)),
        "--cache",
        str(tmp_path / "cache.sqlite3"),
        "--out",
        str(out),
        "--bootstrap",
        "100",
        "--calibration-out",
        str(calibration),
        "--note",
        "a test run",
    ]
    assert main(arguments) == 0
    judged = len(fake_upstream.requests)
    assert judged == 12  # one judge call per answer
    results = json.loads((out / "results.json").read_text())
    group = results["summary"]["given"]
    assert group["items"] == 12 and group["signals"]["fc"]["auroc"]["value"] == 1.0
    assert group["calls_per_item"] == {"fc": 1.0}
    assert results["calibration"]["fit_items"] == 6 and results["calibration"]["held_out_items"] == 6
    assert load_calibration(calibration).probability(1.0) == pytest.approx(1.0)
    markdown = (out / "report.md").read_text()
    assert markdown.startswith("# TrustScore evaluation: jsonl, given mode, model group fake")
    command = "trustgate eval run \\\n  --dataset jsonl \\\n  --mode given \\\n  --calibration-out"
    assert f"```bash\n{command} {calibration}" in markdown and "\\\n  --note 'a test run'\n```" in markdown
    assert "Trust_BC re-asks the model that wrote the answer" in markdown and "- a test run" in markdown
    assert "| Trust_FC | " in markdown and "| 0.593 | 0.533 | 0.449 |" in markdown
    for figure in ("reliability-given.png", "roc-given.png"):
        assert (out / figure).read_bytes().startswith(PNG_MAGIC) and f"]({figure})" in markdown
    assert main(arguments) == 0
    assert len(fake_upstream.requests) == judged  # the rerun reads everything from the cache
    assert json.loads((out / "results.json").read_text())["run"]["results_reused"] == 12


@pytest.mark.integration
def test_truthfulqa_mc_from_the_copy_task(
    fake_upstream: FakeUpstream, tmp_path: Path, evidence_settings: ScoringSettings
) -> None:
    def repeat(messages: list[dict[str, object]]) -> str:
        return last_user_text(messages).split("\nAnswer: ", 1)[1].split("\n\n", 1)[0]

    fake_upstream.responder = repeat
    questions = tmp_path / "tqa.csv"
    questions.write_text(
        "Type,Category,Question,Best Answer,Correct Answers,Incorrect Answers,Source\n"
        "A,Misc,Q one?,Yes,Yes; It is true,Not at all; No it is not true,src\n"
        "A,Misc,Q two?,It is so indeed,It is so indeed,No,src\n"
    )
    out = tmp_path / "mc"
    arguments = [
        "eval",
        "truthfulqa-mc",
        "--file",
        str(questions),
        "--out",
        str(out),
        "--bootstrap",
        "50",
        "--config",
        str(write_config(tmp_path / "config.yaml", fake_upstream, evidence_settings)),
        "--cache",
        str(tmp_path / "cache.sqlite3"),
    ]
    assert main(arguments) == 0
    assert len(fake_upstream.requests) == 6  # distinct candidates: 4 for question one, 2 for question two

    # The fake gives word k the log-probability -0.05·(k mod 7): a candidate of n words sums -0.05·n(n-1)/2.
    def mass(words: int) -> float:
        return math.exp(-0.05 * words * (words - 1) / 2)

    results = json.loads((out / "results.json").read_text())
    one, two = results["questions"]
    assert one["mc1"] == 1.0  # "Yes" (one word, log-probability 0) beats both false answers
    assert one["mc2"] == pytest.approx((mass(1) + mass(3)) / (mass(1) + mass(3) + mass(3) + mass(5)))
    assert two["mc1"] == 0.0 and two["mc2"] == pytest.approx(mass(4) / (mass(4) + mass(1)))
    assert one["complete"] and two["complete"]
    assert results["summary"]["all"]["mc1"]["value"] == 0.5 and results["summary"]["reproduced_fraction"] == 1.0
    assert "copy task" in (out / "report.md").read_text()


@pytest.mark.unit
@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["run", "--concurrency", "0"], "--concurrency: 0 is not at least 1"),
        (["run", "--limit", "-3"], "--limit: -3 is not at least 1"),
        (["rag", "--file", "cases.jsonl", "--concurrency", "two"], "--concurrency: 'two' is not a whole number"),
    ],
)
def test_counts_below_one_are_refused_at_the_command_line(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["eval", *arguments])
    assert stopped.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.unit
@pytest.mark.parametrize(
    ("config_seed", "arguments", "seed"),
    [
        (None, [], 0),  # neither sets it: 0, the gateway's default, so both ask the same checks
        (None, ["--seed", "3"], 3),
        (7, [], 7),  # the config's seed is the gateway's: the eval keeps it
        (7, ["--seed", "3"], 7),
    ],
)
def test_trust_bc_seed_is_the_configs_where_it_sets_one_else_the_eval_seed(
    config_seed: int | None, arguments: list[str], seed: int
) -> None:
    config = gateway_config("http://127.0.0.1:9")
    if config_seed is not None:
        config["trustgate"] = {"scoring": {"consistency": {"seed": config_seed}}}
    settings = settings_from_dict(config)
    parser = argparse.ArgumentParser()
    add_eval_arguments(parser)
    scoring = eval_scoring_settings(settings, parser.parse_args(["run", *arguments]))
    assert scoring.consistency.seed == seed
    assert settings.trustgate.scoring.consistency.seed == (0 if config_seed is None else config_seed)
