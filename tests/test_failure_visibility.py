"""Every failure kind is logged once (rate-limited, secrets masked; a bug with its traceback) and counted.

The scorers' own tests show where each kind arises (an upstream error in
Trust_BC, a dead SPARQL endpoint, a failing RAG judge); here each kind goes
through the pipeline, which logs it, and the Prometheus exporter, which counts
it in ``trustgate_scorer_errors_total{component,reason}``. Redis errors of the
queue's ``wait`` are logged and counted by the queue.
"""

from __future__ import annotations

import asyncio
import io
import logging
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from redis.asyncio import Redis

from exporters import build_metrics
from proxy.base.errors import UpstreamError, UpstreamUnavailable
from proxy.base.log_format import line_formatter
from proxy.trust.ask import UpstreamAsk
from proxy.upstream.errors import MALFORMED_REPLY
from proxy.upstream.prices import PriceList
from proxy.upstream.slots import Priority
from scoring.failures import FailureLog, mask_secrets
from scoring.pipeline import ScoringPipeline
from scoring.redis_queue import RedisJobQueue
from scoring.request_context import working_for
from scoring.settings import QueueSettings, ScoringSettings
from scoring.types import (
    Ask,
    ComponentResult,
    Failure,
    FailureReason,
    Scorer,
    ScoringJob,
    UnreadableReply,
    UpstreamFailure,
)
from tests.redis_server import free_port

SECRET = "sk-live-0123456789abcdef"


class BrokenScorer(Scorer):
    """Fails the way it is told: raises, hangs, or absorbs a failure and still scores."""

    name = "fc"

    def __init__(self, how: FailureReason) -> None:
        self.how = how

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        if self.how == "timeout":
            await asyncio.sleep(3600)
        if self.how == "upstream":
            raise UpstreamFailure(f"upstream refused key {SECRET}")
        if self.how == "parse":
            raise UnreadableReply("no choices in the reply")
        if self.how == "internal":
            raise ZeroDivisionError("a bug")
        try:  # knowledge_graph, judge: caught where it happened, and scored anyway
            raise RuntimeError(f"{self.how} down")
        except RuntimeError as absorbed:
            return ComponentResult(component=self.name, value=0.5, failures=[Failure(self.how, absorbed)])


def _run(scorer: Scorer, times: int) -> tuple[list[Any], int]:
    """Score ``times`` jobs; the records, and what the exporter counted for the scorer's failure."""
    settings = ScoringSettings.model_validate({"queue": {"scorer_timeout_s": 0.2}})
    pipeline = ScoringPipeline([scorer], lambda model, purpose, lane: _never_asked, settings)
    metrics = build_metrics(CollectorRegistry())
    records = [
        asyncio.run(pipeline.run(ScoringJob(id=f"j{i}", model="m", question="q", answer="a"))) for i in range(times)
    ]
    for record in records:
        metrics.observe_record(record)
    reason = scorer.how  # type: ignore[attr-defined]
    counted = metrics.registry.get_sample_value(
        "trustgate_scorer_errors_total", {"model": "m", "component": "fc", "reason": reason}
    )
    return records, int(counted or 0)


async def _never_asked(messages: list[dict[str, Any]], **options: Any) -> Any:
    raise AssertionError("not asked")


@pytest.mark.unit
@pytest.mark.parametrize("reason", ["timeout", "upstream", "parse", "internal", "knowledge_graph", "judge"])
def test_each_failure_kind_is_logged_once_and_counted_every_time_a_bug_with_its_traceback(
    reason: FailureReason, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="trustgate.scoring"):
        records, counted = _run(BrokenScorer(reason), times=3)
    assert counted == 3  # the counter has every one
    lines = [r.getMessage() for r in caplog.records if r.name == "trustgate.scoring"]
    assert len(lines) == 1, lines  # the log, one per interval
    assert lines[0].startswith(f"scorer fc failed ({reason})")
    # a failure of a known kind is one line saying what the error said; a bug keeps its traceback
    assert ("Traceback (most recent call last)" in lines[0]) is (reason == "internal")
    assert "\n" not in lines[0] or reason == "internal"
    assert SECRET not in lines[0] and SECRET not in str(records[0].model_dump())
    assert [f.reason for f in records[0].components["fc"].failures] == [reason]
    assert "failures" not in records[0].model_dump()["components"]["fc"]  # not part of the record's JSON


@pytest.mark.unit
def test_an_expected_scorer_fault_is_one_line_with_the_request_id(caplog: pytest.LogCaptureFixture) -> None:
    """As the gateway's log format writes it: the line, the error's words, the request whose answer was scored."""
    written = io.StringIO()
    handler = logging.StreamHandler(written)
    handler.setFormatter(line_formatter("text"))
    scoring_log = logging.getLogger("trustgate.scoring")
    scoring_log.addHandler(handler)
    try:
        with working_for("req-42"), caplog.at_level(logging.WARNING, logger="trustgate.scoring"):
            _run(BrokenScorer("upstream"), times=1)
    finally:
        scoring_log.removeHandler(handler)
    [line] = written.getvalue().splitlines()
    assert "Traceback" not in line and line.endswith("request_id=req-42")
    assert "scorer fc failed (upstream): UpstreamFailure: upstream refused key" in line and SECRET not in line


@pytest.mark.unit
def test_the_log_names_what_it_left_out_after_a_quiet_spell(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    failures = FailureLog(logging.getLogger("trustgate.test"), interval_s=60, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="trustgate.test"):
        for second in (0, 1, 2, 61):
            now[0] = second
            failures.report("scorer bc", "upstream", RuntimeError("boom"))
        failures.report("scorer fc", "upstream", RuntimeError("other component"))
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3 and "(2 more left out of the log since the last)" in lines[1]
    assert lines[2].startswith("scorer fc failed (upstream)")


@pytest.mark.unit
def test_secrets_are_masked_in_what_is_logged() -> None:
    text = mask_secrets(f"redis://:hunter2@db:6379/0 Authorization: Bearer {SECRET} api_key=abc123 {SECRET}")
    assert "hunter2" not in text and SECRET not in text and "abc123" not in text
    assert text.startswith("redis://:***@db:6379/0")


class _Upstream:
    """An UpstreamClient stand-in: fails the way it is told."""

    def __init__(self, outcome: Exception) -> None:
        self.outcome = outcome

    async def complete(self, model: str, body: dict[str, Any], *, priority: Priority) -> Any:
        raise self.outcome


@pytest.mark.unit
@pytest.mark.parametrize(
    ("outcome", "reason"),
    [
        (UpstreamUnavailable("connection refused"), "upstream"),
        (UpstreamError("not a chat completion", code=MALFORMED_REPLY, status_code=502), "parse"),
    ],
    ids=["unreachable", "malformed"],
)
def test_the_gateways_ask_tells_scoring_why_it_failed(outcome: Exception, reason: str) -> None:
    prices = PriceList({"m": [None]}, {"m": ["openai/m"]})
    ask = UpstreamAsk(_Upstream(outcome), build_metrics(CollectorRegistry()), "m", "bc", prices=prices)  # type: ignore[arg-type]
    with pytest.raises((UpstreamFailure, UnreadableReply)) as raised:
        asyncio.run(ask([{"role": "user", "content": "q"}]))
    assert Failure.of(raised.value).reason == reason


@pytest.mark.integration
def test_redis_errors_in_wait_are_logged_once_and_counted(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Redis down: a sync request's wait answers "pending" (None), and the operator hears of it."""
    operations: list[str] = []

    async def scenario() -> list[Any]:
        redis = Redis.from_url(f"redis://127.0.0.1:{free_port()}/0", socket_timeout=0.5, socket_connect_timeout=0.5)
        queue = RedisJobQueue(
            redis,
            records=None,
            settings=QueueSettings(redis_timeout_s=0.5),  # type: ignore[arg-type]
            on_error=operations.append,
        )
        try:
            return [await queue.wait("job", timeout=0.2) for _ in range(3)]
        finally:
            await redis.aclose()

    with caplog.at_level(logging.WARNING, logger="trustgate.scoring.redis"):
        assert asyncio.run(scenario()) == [None, None, None]
    assert operations == ["wait", "wait", "wait"]
    lines = [r.getMessage() for r in caplog.records if r.name == "trustgate.scoring.redis"]
    assert len(lines) == 1 and lines[0].startswith("redis queue wait failed (ConnectionError)")
