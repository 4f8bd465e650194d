"""Live scoring through the real HTTP server and the OpenAI client: modes, streaming, result API, failures."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from exporters import Telemetry
from scoring.types import Ask, ComponentResult, Scorer, ScoringJob
from tests.conftest import MASTER_KEY
from tests.fake_upstream import FakeUpstream
from tests.proxy.metric_samples import samples
from tests.proxy.scored_gateway import (
    AUTH,
    AskingScorer,
    RaisingScorer,
    chat,
    one_after_the_other,
    scoring_config,
    wait_for_record,
)
from tests.servers import ServerThread

pytestmark = pytest.mark.integration


class HangingScorer(Scorer):
    name = "fc"

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")


@pytest.fixture
def scored_gateway(fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]) -> ServerThread:
    return start_gateway(
        scoring_config(fake_upstream.url),  # type: ignore[attr-defined]
        scorers=[AskingScorer("bc", 0.9), AskingScorer("fc", 0.5)],
    )


def test_async_mode_returns_at_once_and_the_record_lands(scored_gateway: ServerThread) -> None:
    response = chat(scored_gateway)
    assert response.status_code == 200
    assert response.headers["x-trust-status"] == "pending"
    assert "x-trust-score" not in response.headers
    record = wait_for_record(scored_gateway, response.headers["x-trust-id"])
    assert record["status"] == "done" and record["model"] == "fake"
    assert record["components"]["bc"]["details"]["question"] == "Who built the first temple?"
    assert record["components"]["bc"]["details"]["heard"].startswith("You said: check: You said:")
    # Trust_OV, graded Table 3: a neutral fact check (0.4) plus 0.2 × Trust_BC 0.9
    assert record["score"] == pytest.approx(0.58) and record["label"] == "uncertain"
    assert record["components"]["ov"]["details"]["table3"] == 0.6
    assert set(record["timings"]) == {"queued_s", "scoring_s"}


def test_sync_mode_waits_and_carries_the_scores(scored_gateway: ServerThread) -> None:
    response = chat(scored_gateway, headers={"x-trustgate-mode": "sync"})
    headers = response.headers
    assert headers["x-trust-status"] == "done"
    assert (headers["x-trust-score"], headers["x-trust-bc"], headers["x-trust-fc"]) == ("0.5800", "0.9000", "0.5000")
    assert headers["x-trust-label"] == "uncertain" and headers["x-trust-id"].startswith("trust-")
    assert response.json()["choices"][0]["message"]["content"] == "You said: Who built the first temple?"


def test_sync_timeout_returns_pending_and_the_score_lands_later(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """Each scorer ends within scorer_timeout_s (1 s), below the sync wait (1.1 s); the second starts when the
    first is in, so the job takes 1.2 s at least and the response leaves before its record."""
    server = start_gateway(
        scoring_config(fake_upstream.url, mode="sync", sync_timeout_s=1.1),  # type: ignore[attr-defined]
        scorers=one_after_the_other(0.6),
    )
    response = chat(server)
    assert response.headers["x-trust-status"] == "pending"
    record = wait_for_record(server, response.headers["x-trust-id"])
    assert record["status"] == "done" and record["label"] == "untrusted"


def test_off_mode_scores_nothing(scored_gateway: ServerThread, fake_upstream: FakeUpstream) -> None:
    response = chat(scored_gateway, headers={"x-trustgate-mode": "off"})
    assert response.status_code == 200
    assert not [h for h in response.headers if h.startswith("x-trust-")]
    assert len(fake_upstream.requests) == 1  # no scoring calls


def test_invalid_mode_header_is_400(scored_gateway: ServerThread, fake_upstream: FakeUpstream) -> None:
    response = chat(scored_gateway, headers={"x-trustgate-mode": "later"})
    assert response.status_code == 400 and response.json()["error"]["param"] == "x-trustgate-mode"
    assert fake_upstream.requests == []


def test_streaming_sync_puts_the_trust_on_the_final_chunk(scored_gateway: ServerThread) -> None:
    client = openai.OpenAI(
        base_url=f"{scored_gateway.url}/v1",
        api_key=MASTER_KEY,
        max_retries=0,
        default_headers={"x-trustgate-mode": "sync"},
    )
    chunks = list(
        client.chat.completions.create(
            model="fake", messages=[{"role": "user", "content": "Who streams me?"}], stream=True
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks)  # every chunk has a choice
    assert text == "You said: Who streams me?"
    trust = chunks[-1].model_extra["trust"]  # type: ignore[index]
    assert chunks[-1].choices[0].finish_reason == "stop"  # the upstream's own final chunk carries it
    assert trust["status"] == "done" and trust["components"] == {"bc": 0.9, "fc": 0.5, "ov": pytest.approx(0.58)}
    assert not any("trust" in (c.model_extra or {}) for c in chunks[:-1])
    with httpx.stream(
        "POST",
        f"{scored_gateway.url}/v1/chat/completions",
        headers={**AUTH, "x-trustgate-mode": "sync"},
        json={"model": "fake", "stream": True, "messages": [{"role": "user", "content": "Who is x?"}]},
    ) as raw:
        events = [line for line in raw.iter_lines() if line.startswith("data: ")]
    assert '"trust"' in events[-2] and '"finish_reason":"stop"' in events[-2] and events[-1] == "data: [DONE]"


def test_streaming_async_scores_the_assembled_answer(scored_gateway: ServerThread) -> None:
    with httpx.stream(
        "POST",
        f"{scored_gateway.url}/v1/chat/completions",
        headers=AUTH,
        json={"model": "fake", "stream": True, "messages": [{"role": "user", "content": "Who is a b?"}]},
    ) as raw:
        assert raw.headers["x-trust-status"] == "pending"
        events = [line for line in raw.iter_lines() if line.startswith("data: ")]
        record_id = raw.headers["x-trust-id"]
    assert not any('"trust"' in e for e in events) and events[-1] == "data: [DONE]"
    record = wait_for_record(scored_gateway, record_id)
    assert record["components"]["bc"]["details"]["heard"] == "You said: check: You said: Who is a b?"


def test_sampling_is_deterministic_per_request_id(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """A retry (same x-request-id, same body) is decided alike, by this gateway and by a replica of its config."""
    config = scoring_config(fake_upstream.url, sample_rate=0.5)  # type: ignore[attr-defined]
    server = start_gateway(config, scorers=[AskingScorer("bc", 0.9)])
    ids = [f"req-{i}" for i in range(24)]
    scored = {i: "x-trust-id" in chat(server, headers={"x-request-id": i}).headers for i in ids}
    assert 0 < sum(scored.values()) < len(ids)
    replica = start_gateway(config, scorers=[AskingScorer("bc", 0.9)])
    for again in (server, replica):
        assert all(("x-trust-id" in chat(again, headers={"x-request-id": i}).headers) == scored[i] for i in ids[:6])


def test_per_model_and_per_key_overrides(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = scoring_config(
        fake_upstream.url,
        per_model={"fake": {"mode": "off"}},  # type: ignore[attr-defined]
        per_key={"team-a": {"mode": "sync"}},
    )
    config["trustgate"]["keys"] = [{"key": "sk-team-a", "name": "team-a"}]
    server = start_gateway(config, scorers=[AskingScorer("bc", 0.9)])
    assert "x-trust-id" not in chat(server).headers
    assert chat(server, headers={"authorization": "Bearer sk-team-a"}).headers["x-trust-status"] == "done"


@pytest.mark.parametrize(
    "reply, status, kind",
    [("", "skipped", "empty"), ("I'm sorry, I can't help with that.", "not_applicable", "refusal")],
)
def test_answers_with_nothing_to_score_cost_no_scoring_call(
    scored_gateway: ServerThread, fake_upstream: FakeUpstream, reply: str, status: str, kind: str
) -> None:
    fake_upstream.responder = lambda messages: reply
    response = chat(scored_gateway, headers={"x-trustgate-mode": "sync"})
    assert (response.headers["x-trust-status"], response.headers["x-trust-kind"]) == (status, kind)
    record = wait_for_record(scored_gateway, response.headers["x-trust-id"])
    assert record["status"] == status and record["applicability"]["kind"] == kind
    assert record["error"] == ("skipped: empty" if status == "skipped" else None)
    assert len(fake_upstream.requests) == 1


@pytest.mark.parametrize("broken", [RaisingScorer(), HangingScorer()], ids=["raises", "hangs"])
def test_a_failing_scorer_never_changes_the_response(
    fake_upstream: FakeUpstream, broken: Any, start_gateway: Callable[..., ServerThread]
) -> None:
    server = start_gateway(scoring_config(fake_upstream.url), scorers=[AskingScorer("bc", 0.9), broken])  # type: ignore[attr-defined]
    response = chat(server, "Who has the same body?", headers={"x-trustgate-mode": "sync"})
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "You said: Who has the same body?"
    record = wait_for_record(server, response.headers["x-trust-id"])
    hangs = isinstance(broken, HangingScorer)
    expected = "timeout" if hangs else "RuntimeError: evidence index exploded"
    assert record["components"]["fc"]["error"] == expected and record["components"]["fc"]["value"] is None
    assert record["status"] == "done" and record["score"] == 0.9
    labels = {"model": "fake", "component": "fc", "reason": "timeout" if hangs else "internal"}
    assert samples(server)[("trustgate_scorer_errors_total", frozenset(labels.items()))] == 1


def test_flood_sheds_jobs_without_blocking_users(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = scoring_config(fake_upstream.url, queue={"max_size": 1, "concurrency": 1})  # type: ignore[attr-defined]
    server = start_gateway(config, scorers=[AskingScorer("bc", 0.9, delay=1.0)])
    responses = [chat(server, f"Who is q{i}?") for i in range(6)]
    assert all(r.status_code == 200 for r in responses)
    statuses = [r.headers["x-trust-status"] for r in responses]
    assert statuses[:2] == ["pending", "pending"] and set(statuses[2:]) == {"shed"}
    shed = wait_for_record(server, responses[-1].headers["x-trust-id"])
    assert shed["status"] == "shed"
    found = samples(server)
    full = frozenset({"model": "fake", "reason": "queue_full"}.items())
    assert found[("trustgate_scoring_shed_jobs_total", full)] == 4
    assert shed["shed_reason"] == "queue_full"


def test_metrics_after_known_traffic(scored_gateway: ServerThread) -> None:
    for _ in range(3):
        chat(scored_gateway, headers={"x-trustgate-mode": "sync"})
    found = samples(scored_gateway)

    def value(name: str, **labels: str) -> float:
        return found.get((name, frozenset(labels.items())), 0.0)

    assert value("trustgate_trust_score_count", model="fake", component="bc") == 3
    assert value("trustgate_trust_score_sum", model="fake", component="fc") == pytest.approx(1.5)
    assert value("trustgate_trust_labels_total", model="fake", label="uncertain") == 3
    assert value("trustgate_trust_score_count", model="fake", component="ov") == 3
    assert value("trustgate_low_trust_responses_total", model="fake") == 0
    assert value("trustgate_scoring_jobs_total", model="fake", status="done") == 3
    assert value("trustgate_upstream_calls_total", model="fake", purpose="user") == 3
    assert value("trustgate_upstream_calls_total", model="fake", purpose="bc") == 3
    assert value("trustgate_upstream_calls_total", model="fake", purpose="fc") == 3
    assert value("trustgate_scoring_duration_seconds_count", model="fake") == 3
    assert value("trustgate_scoring_queue_depth") == 0


def test_result_api_needs_auth_and_knows_unknown_ids(scored_gateway: ServerThread) -> None:
    assert httpx.get(f"{scored_gateway.url}/v1/trust/trust-nope", headers=AUTH).status_code == 404
    record_id = chat(scored_gateway).headers["x-trust-id"]
    assert httpx.get(f"{scored_gateway.url}/v1/trust/{record_id}").status_code == 401


def test_records_survive_a_gateway_restart(
    fake_upstream: FakeUpstream, tmp_path: Any, start_gateway: Callable[..., ServerThread]
) -> None:
    config = scoring_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"]["store"] = {"path": str(tmp_path / "kept.sqlite3")}
    first = start_gateway(config, scorers=[AskingScorer("bc", 0.8)])
    record_id = chat(first, headers={"x-trustgate-mode": "sync"}).headers["x-trust-id"]
    before = wait_for_record(first, record_id)
    first.stop()
    second = start_gateway(config, scorers=[AskingScorer("bc", 0.8)])
    assert httpx.get(f"{second.url}/v1/trust/{record_id}", headers=AUTH).json() == before


def test_spans_and_evaluation_events(fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]) -> None:
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    telemetry = Telemetry(tracer_provider.get_tracer("test"), logger_provider.get_logger("test"))
    server = start_gateway(
        scoring_config(fake_upstream.url),
        telemetry=telemetry,  # type: ignore[attr-defined]
        scorers=[AskingScorer("bc", 0.9), AskingScorer("fc", 0.5)],
    )
    response = chat(server, headers={"x-trustgate-mode": "sync"})
    record_id, completion_id = response.headers["x-trust-id"], response.json()["id"]
    names = [span.name for span in spans.get_finished_spans()]
    assert "chat fake" in names and "trustgate.score" in names
    score_span = next(s for s in spans.get_finished_spans() if s.name == "trustgate.score")
    assert score_span.attributes["gen_ai.response.id"] == completion_id  # type: ignore[index]
    assert score_span.attributes["trustgate.trust.id"] == record_id  # type: ignore[index]
    events = [r.log_record for r in logs.get_finished_logs()]
    assert {e.event_name for e in events} == {"gen_ai.evaluation.result"}
    by_name = {e.attributes["gen_ai.evaluation.name"]: e.attributes for e in events}  # type: ignore[index]
    assert by_name["trustgate.trust_bc"]["gen_ai.evaluation.score.value"] == 0.9
    assert by_name["trustgate.trust_fc"]["gen_ai.evaluation.score.label"] == "neutral"
    assert by_name["trustgate.trust_ov"]["gen_ai.evaluation.score.label"] == "uncertain"
    assert all(
        a["gen_ai.response.id"] == completion_id and a["trustgate.trust.id"] == record_id for a in by_name.values()
    )
