"""The offline report: a small labelled fixture judged through the gateway's upstream path, by hand.

fixtures/cases.jsonl, with the marker judge (see ``judging.py``):

    case           answerable   answer                       recall  precision  claims  grounded  judge calls
    cited          yes          "ALPHA [1]"                  1       1/1        1/1     1         2
    wrong-refusal  yes          refuses (Trust-Eval's flag)  -       -          -       -         0
    right-refusal  no           refuses ("do not contain")   -       -          -       -         0
    parametric     no           "THETA [1]", doc lacks it    0       0/1        1/1     0         2
    over-cited     yes          "ALPHA [1][2]", [2] noise    1       1/2        1/2     1         5
    uncited        from claims  "BETA", no citation          0       0 (none)   1/1     1         2

A judge question asked twice is asked once: over-cited's "[1] without [2]" is its "[1] alone"; when the
only document is the cited one (parametric), grounding is the recall question; uncited's grounding is
the answerability question for its claim.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from scoring.rag import RagScorer, rag_report
from scoring.rag.cases import CaseError, load_cases, score_cases
from tests.conftest import gateway_config
from tests.fake_upstream import FakeUpstream
from tests.trustgate_command import main

from .judging import marker_judge, with_gateway_ask

CASES = Path(__file__).parent / "fixtures" / "cases.jsonl"
CASE_IDS = ["cited", "wrong-refusal", "right-refusal", "parametric", "over-cited", "uncited"]  # in the file's order


def eval_rag(cases: Path, config: Path, cache: Path, out: Path, *extra: str) -> list[str]:
    """The arguments of ``trustgate eval rag`` judging with model ``fake``: the tests vary the files and the rest."""
    command = ["eval", "rag", "--file", str(cases), "--config", str(config), "--model", "fake"]
    return [*command, "--cache", str(cache), "--out", str(out), *extra]


EXPECTED = {
    "num_samples": 6,
    "skipped_num": 0,
    "answered_num": 4,
    "answered_ratio": 4 / 6,
    "answerable_num": 4,
    "labelled_num": 6,
    "overlapped_num": 3,
    "regular_length": 44 / 6,
    "answered_length": 19 / 4,
    # refused: right-refusal (unanswerable), wrong-refusal (answerable); answered: 3 answerable, 1 not
    "reject_rec": 1 / 2,
    "reject_prec": 1 / 2,
    "reject_f1": 1 / 2,
    "answerable_rec": 3 / 4,
    "answerable_prec": 3 / 4,
    "answerable_f1": 3 / 4,
    "macro_avg": 5 / 8,
    "macro_f1": 5 / 8,
    "regular_citation_rec": 2 / 6,
    "regular_citation_prec": 1.5 / 6,
    "regular_citation_f1": 2 / 7,
    "answered_citation_rec": 2 / 4,
    "answered_citation_prec": 1.5 / 4,
    "answered_citation_f1": 3 / 7,
    "answered_claims_nli": 3.5 / 4,
    "calib_answered_claims_nli": 2.5 / 4,  # parametric counts 0: its documents hold no answer
    "calib_answerable_claims_nli": 2.5 / 4,  # wrong-refusal counts 0
    "calib_claims_nli_f1": 5 / 8,
    "answered_groundedness": 3 / 4,
    "trust_score": (5 / 8 + 5 / 8 + 3 / 7) / 3,
    "judge_failures": 0,
    "judge_calls": 11,
}


@pytest.mark.integration
def test_the_report_on_the_labelled_fixture(fake_upstream: FakeUpstream) -> None:
    fake_upstream.responder = marker_judge
    jobs = load_cases(CASES, "fake")
    cases = with_gateway_ask(fake_upstream, lambda ask: score_cases(jobs, RagScorer(), lambda job: ask, concurrency=2))

    assert [c["id"] for c in cases] == CASE_IDS
    assert [c["answerable_from"] for c in cases] == ["label"] * 5 + ["claims"]
    assert rag_report(cases) == pytest.approx(EXPECTED)
    assert len(fake_upstream.requests) == EXPECTED["judge_calls"]


def details(**fields: Any) -> dict[str, Any]:
    base = {
        "refusal": False,
        "answerable": None,
        "citation_recall": 1.0,
        "citation_precision": 1.0,
        "citations_judged": 1,
        "reference_claims": 0,
        "claim_correctness": None,
        "groundedness": 1.0,
        "words": 4,
        "judge_errors": [],
    }
    return {**base, **fields}


@pytest.mark.unit
def test_without_labels_or_claims_those_metrics_are_none_not_zero() -> None:
    report = rag_report(
        [
            details(),
            details(citation_recall=0.0, citation_precision=None, citations_judged=0),
            {"skipped": "empty answer", "upstream_calls": 0},
        ]
    )
    assert (report["num_samples"], report["skipped_num"], report["answered_num"]) == (3, 1, 2)
    assert (report["macro_f1"], report["reject_rec"], report["calib_claims_nli_f1"]) == (None, None, None)
    assert (report["answered_citation_rec"], report["answered_citation_prec"]) == (0.5, 0.5)
    assert report["trust_score"] == report["answered_citation_f1"] == 0.5


@pytest.mark.unit
def test_a_case_whose_judge_failed_is_left_out_of_that_metric_and_counted() -> None:
    report = rag_report([details(), details(citation_recall=None, judge_errors=["UpstreamUnavailable: down"])])
    assert (report["answered_citation_rec"], report["answered_citation_prec"], report["judge_failures"]) == (
        1.0,
        1.0,
        1,
    )


@pytest.mark.integration
def test_trustgate_eval_rag_writes_the_report_and_resumes_from_its_cache(
    fake_upstream: FakeUpstream, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_upstream.responder = marker_judge
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(gateway_config(fake_upstream.url)))  # type: ignore[attr-defined]
    out, cache = tmp_path / "report", tmp_path / "cache.sqlite3"
    arguments = eval_rag(CASES, config, cache, out, "--concurrency", "2", "--note", "a fixture")

    assert main(arguments) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["report"] == pytest.approx(EXPECTED)
    assert [c["id"] for c in results["cases"]] == CASE_IDS
    assert (results["run"]["calls_made"], results["run"]["calls_cached"]) == (11, 0)
    markdown = (out / "report.md").read_text()
    assert markdown.startswith("# RAG trust (Trust-Eval): cases.jsonl, judge fake")
    assert f"trustgate eval rag \\\n  --file {CASES}" in markdown and "- a fixture" in markdown
    assert f"| trust_score | {EXPECTED['trust_score']:.3f} |" in markdown
    assert "| reject_f1 | 0.500 |" in markdown and "| judge_calls | 11 |" in markdown
    assert len(fake_upstream.requests) == 11

    assert main(arguments) == 0  # a rerun asks the judge nothing: every reply comes from the cache
    rerun = json.loads((out / "results.json").read_text())
    assert rerun["report"] == results["report"] and (rerun["run"]["calls_made"], rerun["run"]["calls_cached"]) == (
        0,
        11,
    )
    assert len(fake_upstream.requests) == 11
    capsys.readouterr()

    assert main([*arguments[:-4], "--model", "nope"]) == 2
    assert "nope" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q", "answer": "a", "documents": []}\n')
    assert main(["eval", "rag", "--file", str(bad), "--config", str(config), "--cache", str(cache)]) == 2
    assert "bad.jsonl:1" in capsys.readouterr().err


@pytest.mark.unit
@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "cases.jsonl:2"),
        ('["a list"]', "JSON object"),
        ('{"question": "q", "answer": 3, "documents": ["d"]}', "'answer'"),
        ('{"question": "q", "answer": "a", "documents": []}', "documents"),
        ('{"question": "q", "answer": "a", "documents": ["d"], "answerable": "no"}', "answerable"),
    ],
)
def test_a_bad_case_line_is_named(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text('{"question": "q", "answer": "a", "documents": ["d"]}\n' + line + "\n\n")
    with pytest.raises(CaseError, match=message):
        load_cases(path, "fake")


@pytest.mark.unit
@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "no cases"),
        (b"\n  \n", "no cases"),
        (b"\xff\xfe not utf-8", "not UTF-8"),
        (
            b'{"id": "a", "question": "q", "answer": "x", "documents": ["d"]}\n'
            b'{"id": "a", "question": "q", "answer": "y", "documents": ["d"]}\n',
            "'a' was already used on line 1",
        ),
    ],
)
def test_a_file_that_holds_no_usable_cases_is_refused(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(content)
    with pytest.raises(CaseError, match=message):
        load_cases(path, "fake")


@pytest.mark.integration
def test_eval_rag_says_so_when_the_judge_failed_on_every_case(
    fake_upstream: FakeUpstream, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(gateway_config(fake_upstream.url)))  # type: ignore[attr-defined]
    cases = tmp_path / "cases.jsonl"
    # the directive in the document reaches the judge's prompt: the fake upstream answers it with a 400
    cases.write_text('{"question": "q?", "answer": "ALPHA is the answer [1].", "documents": ["ALPHA [fail:400]"]}\n')
    assert main(eval_rag(cases, config, tmp_path / "cache.sqlite3", tmp_path / "out")) == 0
    assert json.loads((tmp_path / "out" / "results.json").read_text())["report"]["judge_failures"] == 1
    assert "failed on every case" in capsys.readouterr().err


@pytest.mark.unit
def test_eval_rag_with_an_nli_judge_whose_model_is_missing_exits_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = gateway_config(
        "http://127.0.0.1:9",
        trustgate={"scoring": {"rag": {"judge": "nli"}, "factcheck": {"nli_model_dir": str(tmp_path / "none")}}},
    )
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(settings))
    assert main(eval_rag(CASES, config, tmp_path / "cache.sqlite3", tmp_path / "out")) == 2
    assert "cannot load the RAG judge's NLI model" in capsys.readouterr().err
