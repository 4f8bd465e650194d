"""Answers that would stall scoring: bounded before they cost anything, over real sockets.

A gateway process (``trustgate serve``) scores with the real Trust_BC and
Trust_FC parts in its CPU worker process, against the fake upstream. Unbounded,
a million-character answer would hold that worker for some 40 CPU seconds
while every other user's sync score waited behind it; it is skipped
(``too_long``) and the other user's score arrives as fast as without it.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from scoring.pipeline import ScoringPipeline
from scoring.policy import within_limits
from scoring.settings import InputLimits, ScoringSettings
from scoring.types import Ask, ComponentResult, Scorer, ScoringJob
from tests.conftest import MASTER_KEY, gateway_config
from tests.e2e.gateway_process import serve_config
from tests.fake_upstream import FakeUpstream, last_user_text
from tests.scoring.consistency.upstream_ask import shown_options
from tests.scoring.cpu_inputs import long_answer

QUESTION = "Who built the first temple for god in jerusalem?"
ANSWER = "King Solomon built the first temple for god in jerusalem"
HUGE = 1_000_000  # characters of the hostile answer


def answers(messages: list[dict[str, Any]]) -> str:
    """A check gets its first letter; the hostile question a million characters of prose; others the answer."""
    if "(hostile)" in last_user_text(messages):
        return long_answer(HUGE)
    return next(iter(sorted(shown_options(messages))), ANSWER)


def config_file(folder: Path, data: Path, endpoint: str, upstream_url: str) -> Path:
    config = gateway_config(
        upstream_url,
        trustgate={
            "server": {"host": "127.0.0.1", "port": 0},
            "upstream": {"max_response_bytes": 4 * HUGE},
            "scoring": {
                "data_dir": str(data),
                "mode": "sync",
                "sync_timeout_s": 120,
                "cpu": {"processes": 1},
                "consistency": {"sparql_endpoint": endpoint, "seed": 1, "max_checks": 2},
                "factcheck": {"default_corpora": []},
                "logprob": {"enabled": False},
            },
            "store": {"path": str(folder / "records.sqlite3")},
        },
    )
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def ask(url: str, content: str, mode: str = "sync") -> httpx.Response:
    return httpx.post(
        f"{url}/v1/chat/completions",
        timeout=180,
        json={"model": "fake", "messages": [{"role": "user", "content": content}]},
        headers={"authorization": f"Bearer {MASTER_KEY}", "x-trustgate-mode": mode},
    )


def final_record(url: str, record_id: str) -> dict[str, Any]:
    """The record once scoring has finished with it (its answer was handed over in async mode)."""
    deadline = time.monotonic() + 180
    while True:
        record: dict[str, Any] = httpx.get(
            f"{url}/v1/trust/{record_id}", timeout=10, headers={"authorization": f"Bearer {MASTER_KEY}"}
        ).json()
        if record.get("status") != "pending" or time.monotonic() > deadline:
            return record
        time.sleep(0.2)


def timed_score(url: str, question: str) -> tuple[float, httpx.Response]:
    started = time.monotonic()
    response = ask(url, question)
    return time.monotonic() - started, response


@pytest.mark.integration
def test_a_huge_answer_does_not_delay_another_users_sync_score(
    tmp_path: Path,
    data_dir: Path,
    graph: str,
    fake_upstream: FakeUpstream,
) -> None:
    fake_upstream.responder = answers
    with serve_config(config_file(tmp_path, data_dir, graph, fake_upstream.url)) as gateway:  # type: ignore[attr-defined]
        ask(gateway.url, QUESTION)  # warm: the worker's first job loads what it loads lazily
        alone, baseline = timed_score(gateway.url, f"{QUESTION} (alone)")
        assert baseline.headers["x-trust-status"] == "done"

        # async: answered at once, its answer handed to scoring, which is busy with it when the next user asks
        huge = ask(gateway.url, f"{QUESTION} (hostile)", mode="async")
        assert huge.status_code == 200, huge.text[:300]
        beside, scored = timed_score(gateway.url, f"{QUESTION} (beside)")
        record = final_record(gateway.url, huge.headers["x-trust-id"])

    assert scored.status_code == 200 and scored.headers["x-trust-status"] == "done"
    assert beside < 3 * alone + 5, (alone, beside)  # generous: the machine is shared
    assert len(huge.json()["choices"][0]["message"]["content"]) == HUGE
    assert (record["status"], record["error"]) == ("skipped", "skipped: too_long")


@pytest.mark.unit
@pytest.mark.parametrize(
    "question, kept",
    [
        ("q" * 50, "q" * 50),
        ("x" * 500 + "What is the capital of France?", "…" + ("x" * 500 + "What is the capital of France?")[-199:]),
    ],
)
def test_a_long_question_is_scored_on_its_end(question: str, kept: str) -> None:
    job = ScoringJob(id="j", model="m", question=question, answer="Paris")
    bounded = within_limits(job, InputLimits(max_answer_chars=100, max_question_chars=200))
    assert bounded is not None and bounded.question == kept and len(bounded.question) <= 200


@pytest.mark.unit
def test_an_answer_past_the_bound_is_not_scored() -> None:
    limits = InputLimits(max_answer_chars=100)
    assert within_limits(ScoringJob(id="j", model="m", question="q", answer="a" * 101), limits) is None
    assert within_limits(ScoringJob(id="j", model="m", question="q", answer="a" * 100), limits) is not None


class RefusingScorer(Scorer):
    """Fails the test if it is ever given the job."""

    name = "bc"

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        raise AssertionError("a too-long answer reached a scorer")


@pytest.mark.unit
def test_a_five_megabyte_answer_is_skipped_before_any_scorer_sees_it() -> None:
    """Unchecked, it would reach spaCy, fail with E088 and be logged as an internal failure."""
    pipeline = ScoringPipeline(
        [RefusingScorer()],
        lambda model, purpose, lane: None,  # type: ignore[arg-type,return-value]
        ScoringSettings(),
    )
    record = asyncio.run(pipeline.run(ScoringJob(id="j", model="m", question="q", answer="word " * 1_000_000)))
    assert (record.status, record.error, record.components) == ("skipped", "skipped: too_long", {})
