"""``on_low_trust``: block or escalate a low-scoring answer before it leaves, over real sockets on both paths.

Scores are made deterministic by a scorer that reads the answer and its model
group: the fake upstream echoes the question, so a question with "doubt" in it
gets an answer that scores low, any other one high.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider

import console
from exporters import Telemetry
from proxy import ConfigError, settings_from_dict
from scoring.calibration import IsotonicCalibrator, save_calibration
from scoring.types import Scorer
from tests.conftest import MASTER_KEY
from tests.fake_upstream import FakeUpstream
from tests.proxy.endpoints.low_trust import HIGH, LOW, VerdictScorer, ask_chat, config, record, sdk
from tests.proxy.scored_gateway import AskingScorer, wait_for_record
from tests.servers import ServerThread

AUTH = {"authorization": f"Bearer {MASTER_KEY}"}
MESSAGE = "No reliable answer, sorry."


Gateway = Callable[..., ServerThread]
BLOCK: dict[str, Any] = {"action": "block", "message": MESSAGE}
ESCALATE: dict[str, Any] = {"action": "escalate", "escalate_to": "strong"}


@pytest.fixture
def gateway(fake_upstream: FakeUpstream, start_gateway: Gateway) -> Gateway:
    """Starts a gateway on the fake upstream for a path and a policy, scored by ``VerdictScorer`` unless a test
    brings its own scorer: most tests here differ only in those."""

    def start(path: str, scorer: Scorer | None = None, **policy: Any) -> ServerThread:
        settings = config(fake_upstream.url, path, **policy)  # type: ignore[attr-defined]
        return start_gateway(settings, scorers=[scorer or VerdictScorer()])

    return start


def escalate_low_chat(gateway: Gateway, path: str, scorer: Scorer, **policy: Any) -> tuple[ServerThread, Any]:
    """A gateway that escalates to ``strong`` with ``scorer`` judging both answers, and its reply to a low question."""
    server = gateway(path, scorer, **ESCALATE, **policy)
    return server, ask_chat(server, LOW)


def stored(server: ServerThread, record_id: str, action: str | None = None) -> dict[str, Any]:
    """The record once its action (if any) has reached the store."""
    for _ in range(100):
        found = wait_for_record(server, record_id)
        if found.get("action") == action:
            return found
        asyncio.run(asyncio.sleep(0.05))
    raise AssertionError(f"record {record_id} has no action {action}: {found}")


PATHS = ["passthrough", "litellm"]


# --- config load -----------------------------------------------------------------------------------------------


def async_config(**policy: Any) -> dict[str, Any]:
    """The groups with ``policy`` and scoring that runs async, which an acting policy contradicts."""
    settings = config("http://127.0.0.1:9", "passthrough", **policy)
    settings["trustgate"]["scoring"]["mode"] = "async"
    return settings


@pytest.mark.unit
def test_an_action_with_async_scoring_is_refused_at_load() -> None:
    settings = async_config(action="block")
    with pytest.raises(ConfigError, match=r"action block for model `cheap` needs sync scoring.*async"):
        settings_from_dict(settings, {})


@pytest.mark.unit
def test_an_action_for_one_key_needs_sync_scoring_for_that_key_only() -> None:
    settings = async_config(keys=[{"key": "sk-a", "name": "a"}])
    scoring = settings["trustgate"]["scoring"]
    scoring["per_key"] = {"a": {"on_low_trust": {"action": "block"}}}
    with pytest.raises(ConfigError, match="model `cheap`, key `a` needs sync scoring"):
        settings_from_dict(settings, {})
    scoring["per_key"]["a"]["mode"] = "sync"
    resolved = settings_from_dict(settings, {}).trustgate.scoring
    assert resolved.per_key["a"].on_low_trust is not None and resolved.per_key["a"].on_low_trust.action == "block"
    scoring["per_key"]["a"]["mode"] = "off"  # nothing scored, nothing acted on: no contradiction
    settings_from_dict(settings, {})


@pytest.mark.unit
def test_rules_for_unscored_and_not_applicable_answers_need_sync_scoring_and_a_target() -> None:
    settings = async_config(unscored="block")
    with pytest.raises(ConfigError, match=r"unscored: block for model `cheap` needs sync scoring"):
        settings_from_dict(settings, {})
    settings["trustgate"]["scoring"]["on_low_trust"] = {"not_applicable": "block"}
    with pytest.raises(ConfigError, match=r"not_applicable: block for model `cheap` needs sync scoring"):
        settings_from_dict(settings, {})
    with pytest.raises(ConfigError, match="unscored: escalate for model `cheap` needs escalate_to"):
        settings_from_dict(config("http://127.0.0.1:9", "passthrough", unscored="escalate"), {})


@pytest.mark.unit
def test_an_escalation_target_the_config_does_not_serve_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown model group `nowhere`"):
        settings_from_dict(config("http://127.0.0.1:9", "passthrough", action="escalate", escalate_to="nowhere"), {})


@pytest.mark.unit
def test_an_escalation_a_key_may_not_make_is_refused_at_load() -> None:
    keys = [{"key": "sk-a", "name": "a", "models": ["cheap"]}]
    with pytest.raises(ConfigError, match="key `a` may not use `strong`"):
        settings_from_dict(config("http://127.0.0.1:9", "passthrough", **ESCALATE, keys=keys), {})
    keys[0]["models"] = ["cheap", "strong"]
    settings_from_dict(config("http://127.0.0.1:9", "passthrough", **ESCALATE, keys=keys), {})


# --- block -----------------------------------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.parametrize("path", PATHS)
def test_block_replaces_a_low_chat_answer_and_the_record_keeps_the_original(gateway: Gateway, path: str) -> None:
    keys = [{"key": "sk-a", "name": "a"}, {"key": "sk-b", "name": "b"}, {"key": "sk-ops", "name": "ops", "admin": True}]
    server = gateway(path, **BLOCK, keys=keys)
    raw = ask_chat(server, LOW, key="sk-a")
    reply = raw.parse()
    assert reply.choices[0].message.content == MESSAGE and reply.choices[0].finish_reason == "content_filter"
    assert raw.headers["x-trust-action"] == "blocked" and raw.headers["x-trust-score"] == "0.1000"
    assert f"You said: {LOW}" not in raw.http_response.text
    record_id = raw.headers["x-trust-id"]
    kept = stored(server, record_id, "blocked")
    assert kept["answer"] == f"You said: {LOW}"
    assert record(server, record_id, "sk-a").json()["answer"] == f"You said: {LOW}"
    assert record(server, record_id, "sk-b").status_code == 404  # another key cannot read the original
    # nor can an admin key other than the master key: it sees the verdict, not the answer
    as_admin = record(server, record_id, "sk-ops")
    assert as_admin.json()["action"] == "blocked" and as_admin.json()["answer"] is None
    assert f"You said: {LOW}" not in as_admin.text
    listed = httpx.get(f"{server.url}/v1/trust", headers={"authorization": "Bearer sk-ops"}, timeout=10)
    assert record_id in listed.text and f"You said: {LOW}" not in listed.text
    labelled = httpx.post(
        f"{server.url}/v1/trust/{record_id}/feedback",
        headers={"authorization": "Bearer sk-ops"},
        json={"correct": False},
        timeout=10,
    )  # the label is kept; the answer is not shown
    assert labelled.status_code == 200 and labelled.json()["feedback"] is not None
    assert f"You said: {LOW}" not in labelled.text
    metrics = httpx.get(f"{server.url}/metrics").text
    assert 'trustgate_trust_actions_total{action="blocked",model="cheap"} 1.0' in metrics

    high = ask_chat(server, HIGH, key="sk-a")
    assert high.parse().choices[0].message.content == f"You said: {HIGH}"
    assert "x-trust-action" not in high.headers and high.headers["x-trust-score"] == "0.9000"


@pytest.mark.integration
def test_a_client_cannot_lower_its_mode_out_of_an_acting_policy(gateway: Gateway) -> None:
    # allow_client_mode: lower (the default) lets a client choose async or off, which would skip the block
    server = gateway("passthrough", **BLOCK, keys=[{"key": "sk-a", "name": "a"}])
    for mode in ("async", "off"):
        raw = sdk(server, "sk-a").chat.completions.with_raw_response.create(
            model="cheap", messages=[{"role": "user", "content": LOW}], extra_headers={"x-trustgate-mode": mode}
        )
        assert raw.headers["x-trust-action"] == "blocked" and raw.parse().choices[0].message.content == MESSAGE
    metrics = httpx.get(f"{server.url}/metrics").text
    for mode in ("async", "off"):
        assert f'trustgate_client_overrides_refused_total{{requested="{mode}",setting="mode"}} 1.0' in metrics


@pytest.mark.integration
@pytest.mark.parametrize("path", PATHS)
def test_block_on_legacy_completions(gateway: Gateway, path: str) -> None:
    server = gateway(path, **BLOCK)
    raw = sdk(server).completions.with_raw_response.create(model="cheap", prompt=LOW)
    choice = raw.parse().choices[0]
    assert (choice.text, choice.finish_reason) == (MESSAGE, "content_filter")
    assert raw.headers["x-trust-action"] == "blocked" and f"You said: {LOW}" not in raw.http_response.text
    assert stored(server, raw.headers["x-trust-id"], "blocked")["answer"] != MESSAGE
    high = sdk(server).completions.with_raw_response.create(model="cheap", prompt=HIGH)
    assert MESSAGE not in high.parse().choices[0].text and "x-trust-action" not in high.headers


@pytest.mark.integration
@pytest.mark.parametrize("path", PATHS)
def test_block_on_responses(gateway: Gateway, path: str) -> None:
    server = gateway(path, **BLOCK)
    raw = sdk(server).responses.with_raw_response.create(model="cheap", input=LOW)
    response = raw.parse()
    assert response.output_text == MESSAGE and response.status == "incomplete"
    assert response.incomplete_details is not None and response.incomplete_details.reason == "content_filter"
    assert raw.headers["x-trust-action"] == "blocked" and f"You said: {LOW}" not in raw.http_response.text
    high = sdk(server).responses.with_raw_response.create(model="cheap", input=HIGH)
    assert high.parse().output_text != MESSAGE and "x-trust-action" not in high.headers


# --- escalate --------------------------------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.parametrize("path", PATHS)
def test_escalation_returns_the_better_answer_and_links_the_records(
    gateway: Gateway, fake_upstream: FakeUpstream, path: str
) -> None:
    server, raw = escalate_low_chat(gateway, path, VerdictScorer({"strong": 0.8}))
    assert raw.parse().choices[0].message.content == f"You said: {LOW}"
    assert len(fake_upstream.requests) == 2
    first_id, second_id = raw.headers["x-trust-escalated-from"], raw.headers["x-trust-id"]
    assert raw.headers["x-trust-action"] == "escalated" and raw.headers["x-trust-score"] == "0.8000"
    assert first_id != second_id
    first = stored(server, first_id, "escalated")
    assert first["escalated_to"] == second_id and first["model"] == "cheap"
    for _ in range(100):
        second = wait_for_record(server, second_id)
        if second.get("escalated_from"):
            break
        asyncio.run(asyncio.sleep(0.05))
    assert second["escalated_from"] == first_id and second["model"] == "strong"


@pytest.mark.integration
def test_the_worked_config_escalates_for_one_key_and_blocks_for_another(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    # The worked config of docs/concepts/actions.md: escalation globally, a per-key block for a key that may not
    # use the strong model
    keys = [
        {"key": "sk-app", "name": "app", "models": ["cheap", "strong"]},
        {"key": "sk-kiosk", "name": "kiosk", "models": ["cheap"]},
    ]
    settings = config(fake_upstream.url, "passthrough", **ESCALATE, keys=keys)  # type: ignore[attr-defined]
    settings["trustgate"]["scoring"]["per_key"] = {"kiosk": {"on_low_trust": {"action": "block", "message": MESSAGE}}}
    server = start_gateway(settings, scorers=[VerdictScorer({"strong": 0.8})])
    app = ask_chat(server, LOW, key="sk-app")
    assert app.headers["x-trust-action"] == "escalated" and app.headers["x-trust-score"] == "0.8000"
    kiosk = ask_chat(server, LOW, key="sk-kiosk")
    assert kiosk.headers["x-trust-action"] == "blocked" and kiosk.parse().choices[0].message.content == MESSAGE
    assert [request["messages"][-1]["content"] for request in fake_upstream.requests] == [LOW, LOW, LOW]


@pytest.mark.integration
def test_a_policy_for_one_model_group_acts_on_that_group_only(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    settings = config(fake_upstream.url, "passthrough")  # type: ignore[attr-defined]
    settings["trustgate"]["scoring"]["per_model"] = {"cheap": {"on_low_trust": {"action": "block", "message": MESSAGE}}}
    server = start_gateway(settings, scorers=[VerdictScorer()])
    assert ask_chat(server, LOW).headers["x-trust-action"] == "blocked"
    strong = sdk(server).chat.completions.with_raw_response.create(
        model="strong", messages=[{"role": "user", "content": LOW}]
    )
    assert "x-trust-action" not in strong.headers and strong.headers["x-trust-score"] == "0.1000"


@pytest.mark.integration
@pytest.mark.parametrize("path", PATHS)
def test_prefer_higher_returns_the_first_answer_when_the_escalation_scores_lower(
    gateway: Gateway, fake_upstream: FakeUpstream, path: str
) -> None:
    server, raw = escalate_low_chat(gateway, path, VerdictScorer({"strong": 0.05}))
    assert raw.headers["x-trust-action"] == "kept" and raw.headers["x-trust-score"] == "0.1000"
    assert stored(server, raw.headers["x-trust-id"], "kept")["escalated_to"] == raw.headers["x-trust-escalated-to"]
    assert len(fake_upstream.requests) == 2


@pytest.mark.integration
def test_prefer_escalated_returns_the_escalation_even_when_it_scores_lower(gateway: Gateway) -> None:
    _, raw = escalate_low_chat(gateway, "passthrough", VerdictScorer({"strong": 0.05}), prefer="escalated")
    assert raw.headers["x-trust-action"] == "escalated" and raw.headers["x-trust-score"] == "0.0500"


@pytest.mark.integration
@pytest.mark.parametrize("path", PATHS)
def test_an_escalation_past_its_timeout_returns_the_first_answer(gateway: Gateway, path: str) -> None:
    scorer = VerdictScorer({"strong": 0.9}, delay={"strong": 3.0})
    server, raw = escalate_low_chat(gateway, path, scorer, escalation_timeout_s=0.5)
    assert raw.headers["x-trust-action"] == "escalation_failed" and raw.headers["x-trust-score"] == "0.1000"
    assert raw.parse().choices[0].message.content == f"You said: {LOW}"
    metrics = httpx.get(f"{server.url}/metrics").text
    assert 'trustgate_trust_actions_total{action="escalation_failed",model="cheap"} 1.0' in metrics


@pytest.mark.integration
@pytest.mark.parametrize("path", PATHS)
def test_an_escalation_upstream_error_returns_the_first_answer(gateway: Gateway, path: str) -> None:
    server = gateway(path, **ESCALATE, strong_base="http://127.0.0.1:9/v1")
    raw = ask_chat(server, LOW)
    assert raw.status_code == 200 and raw.headers["x-trust-action"] == "escalation_failed"
    assert raw.parse().choices[0].message.content == f"You said: {LOW}"


@pytest.mark.integration
def test_an_escalation_counts_on_the_keys_rate_limit(gateway: Gateway, fake_upstream: FakeUpstream) -> None:
    keys = [{"key": "sk-a", "name": "a", "rpm": 1}]
    server = gateway("passthrough", VerdictScorer({"strong": 0.9}), **ESCALATE, keys=keys)
    raw = ask_chat(server, LOW, key="sk-a")
    assert raw.headers["x-trust-action"] == "escalation_failed"  # the second call would be the minute's second
    assert len(fake_upstream.requests) == 1


@pytest.mark.integration
def test_the_tokens_of_both_calls_count_on_the_keys_tpm(gateway: Gateway, fake_upstream: FakeUpstream) -> None:
    one_call = httpx.post(
        f"{fake_upstream.url}/v1/chat/completions",
        timeout=10,  # type: ignore[attr-defined]
        json={"model": "m", "messages": [{"role": "user", "content": LOW}]},
    ).json()
    tokens = one_call["usage"]["total_tokens"]
    keys = [{"key": "sk-a", "name": "a", "tpm": tokens + 1}]  # room for one call's tokens, not for two
    server = gateway("passthrough", VerdictScorer({"strong": 0.9}), **ESCALATE, keys=keys)
    assert ask_chat(server, LOW, key="sk-a").headers["x-trust-action"] == "escalated"
    with pytest.raises(openai.RateLimitError, match="tokens per minute"):
        ask_chat(server, HIGH, key="sk-a")
    metrics = httpx.get(f"{server.url}/metrics").text
    assert 'trustgate_user_upstream_tokens_total{key="a",kind="completion",model="strong"}' in metrics


@pytest.mark.integration
def test_the_escalation_target_itself_is_only_annotated(gateway: Gateway, fake_upstream: FakeUpstream) -> None:
    server = gateway("passthrough", **ESCALATE)
    raw = sdk(server).chat.completions.with_raw_response.create(
        model="strong", messages=[{"role": "user", "content": LOW}]
    )
    assert raw.headers["x-trust-score"] == "0.1000" and "x-trust-action" not in raw.headers
    assert len(fake_upstream.requests) == 1


@pytest.mark.integration
def test_the_action_reaches_opentelemetry_and_the_console(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    logs = InMemoryLogRecordExporter()
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    telemetry = Telemetry(TracerProvider().get_tracer("test"), logger_provider.get_logger("test"))
    settings = config(fake_upstream.url, "passthrough", **ESCALATE)  # type: ignore[attr-defined]
    server = start_gateway(
        settings,
        scorers=[VerdictScorer({"strong": 0.8})],
        telemetry=telemetry,
        mounts=[console.mount],
    )
    raw = ask_chat(server, LOW)
    first_id, second_id = raw.headers["x-trust-escalated-from"], raw.headers["x-trust-id"]
    events = [
        dict(log.log_record.attributes or {})
        for log in logs.get_finished_logs()
        if (log.log_record.attributes or {}).get("gen_ai.evaluation.name") == "trustgate.low_trust_action"
    ]
    assert events == [
        {
            "gen_ai.evaluation.name": "trustgate.low_trust_action",
            "trustgate.trust.id": first_id,
            "gen_ai.evaluation.score.value": 0.1,
            "gen_ai.evaluation.score.label": "untrusted",
            "trustgate.trust.action": "escalated",
            "trustgate.trust.escalated_to": second_id,
        }
    ]
    stored(server, first_id, "escalated")
    page = httpx.get(f"{server.url}/ui/partials/records/{first_id}", headers=AUTH, timeout=10).text
    assert '<dd class="trust-action">escalated</dd>' in page and f'href="/ui/records/{second_id}"' in page


# --- streams ---------------------------------------------------------------------------------------------------


def stream_chat(server: ServerThread, question: str, model: str = "cheap") -> tuple[Any, list[Any], str]:
    """The SDK's plain loop over a stream (it must run to the end), its chunks, and the text it read."""
    raw = sdk(server).chat.completions.with_raw_response.create(
        model=model, messages=[{"role": "user", "content": question}], stream=True
    )
    chunks, text = [], ""
    for chunk in raw.parse():
        text += chunk.choices[0].delta.content or ""
        chunks.append(chunk)
    return raw, chunks, text


@pytest.mark.integration
@pytest.mark.parametrize("path", PATHS)
def test_hold_blocks_a_low_stream_before_any_of_it_leaves(gateway: Gateway, path: str) -> None:
    server = gateway(path, **BLOCK, streams="hold")
    raw, chunks, text = stream_chat(server, LOW)
    assert text == MESSAGE and raw.headers["x-trust-action"] == "blocked"
    assert chunks[-1].choices[0].finish_reason == "content_filter"
    assert chunks[-1].model_extra["trust"]["score"] == pytest.approx(0.1)
    assert all(chunk.choices for chunk in chunks)
    assert stored(server, raw.headers["x-trust-id"], "blocked")["answer"] == f"You said: {LOW}"

    raw, chunks, text = stream_chat(server, HIGH)  # kept: the upstream's own stream, trust on its last chunk
    assert text == f"You said: {HIGH}" and "x-trust-action" not in raw.headers
    assert all(chunk.choices for chunk in chunks) and len(chunks) > 2
    assert chunks[-1].model_extra["trust"]["id"] == raw.headers["x-trust-id"]
    assert [c for c in chunks if c.model_extra.get("trust")] == [chunks[-1]]


@pytest.mark.integration
@pytest.mark.parametrize("path", PATHS)
def test_hold_escalates_a_low_stream(gateway: Gateway, fake_upstream: FakeUpstream, path: str) -> None:
    server = gateway(path, VerdictScorer({"strong": 0.8}), **ESCALATE, streams="hold")
    raw, chunks, text = stream_chat(server, LOW)
    assert raw.headers["x-trust-action"] == "escalated" and text == f"You said: {LOW}"
    assert chunks[-1].model_extra["trust"]["id"] == raw.headers["x-trust-id"] != raw.headers["x-trust-escalated-from"]
    assert chunks[-1].model_extra["trust"]["score"] == pytest.approx(0.8)
    assert all(chunk.choices for chunk in chunks)
    assert fake_upstream.requests[0]["stream"] is True and not fake_upstream.requests[1].get("stream")


@pytest.mark.integration
@pytest.mark.parametrize("path", PATHS)
def test_hold_returns_the_first_stream_when_the_escalation_fails(gateway: Gateway, path: str) -> None:
    server = gateway(path, **ESCALATE, streams="hold", strong_base="http://127.0.0.1:9/v1")
    raw, chunks, text = stream_chat(server, LOW)
    assert raw.headers["x-trust-action"] == "escalation_failed" and text == f"You said: {LOW}"
    assert all(chunk.choices for chunk in chunks)


@pytest.mark.integration
@pytest.mark.parametrize("path", PATHS)
def test_hold_returns_the_first_stream_when_the_escalation_scores_lower_or_runs_out_of_time(
    gateway: Gateway, path: str
) -> None:
    cases = (
        (VerdictScorer({"strong": 0.05}), {}, "kept"),
        (VerdictScorer({"strong": 0.9}, delay={"strong": 3.0}), {"escalation_timeout_s": 0.5}, "escalation_failed"),
    )
    for scorer, timeout, action in cases:
        server = gateway(path, scorer, **ESCALATE, streams="hold", **timeout)
        raw, chunks, text = stream_chat(server, LOW)  # the SDK's plain loop runs to the end
        assert raw.headers["x-trust-action"] == action and text == f"You said: {LOW}"
        assert all(chunk.choices for chunk in chunks) and len(chunks) > 2  # the upstream's own stream, replayed
        assert chunks[-1].model_extra["trust"]["score"] == pytest.approx(0.1)
        assert chunks[-1].model_extra["trust"]["id"] == raw.headers["x-trust-id"]


@pytest.mark.integration
@pytest.mark.parametrize("path", PATHS)
def test_a_held_block_keeps_the_usage_a_client_asked_for(gateway: Gateway, path: str) -> None:
    server = gateway(path, **BLOCK, streams="hold")
    raw = sdk(server).chat.completions.with_raw_response.create(
        model="cheap", messages=[{"role": "user", "content": LOW}], stream=True, stream_options={"include_usage": True}
    )
    chunks = list(raw.parse())
    assert raw.headers["x-trust-action"] == "blocked" and all(chunk.choices for chunk in chunks)
    usage = chunks[-1].usage
    assert usage is not None and usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


@pytest.mark.integration
@pytest.mark.parametrize("path", PATHS)
def test_pass_streams_as_ever_and_only_annotates(gateway: Gateway, path: str) -> None:
    # streams: pass, asked for (a block policy holds streams by default): the stream goes out as it comes
    server = gateway(path, **BLOCK, streams="pass")
    raw = sdk(server).chat.completions.with_raw_response.create(
        model="cheap", messages=[{"role": "user", "content": LOW}], stream=True
    )
    chunks = list(raw.parse())
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == f"You said: {LOW}"
    assert "x-trust-action" not in raw.headers and raw.headers["x-trust-status"] == "pending"
    trust = [(c.model_extra or {})["trust"] for c in chunks if (c.model_extra or {}).get("trust")]
    assert len(trust) == 1 and trust[0]["score"] == pytest.approx(0.1)
    assert wait_for_record(server, raw.headers["x-trust-id"]).get("action") is None


@pytest.mark.integration
@pytest.mark.parametrize("path", PATHS)
def test_escalation_on_completions_and_responses(gateway: Gateway, path: str) -> None:
    server = gateway(path, VerdictScorer({"strong": 0.8}), **ESCALATE)
    text = sdk(server).completions.with_raw_response.create(model="cheap", prompt=LOW)
    assert text.headers["x-trust-action"] == "escalated" and text.headers["x-trust-score"] == "0.8000"
    assert LOW in text.parse().choices[0].text
    response = sdk(server).responses.with_raw_response.create(model="cheap", input=LOW)
    assert response.headers["x-trust-action"] == "escalated" and response.headers["x-trust-score"] == "0.8000"
    assert LOW in response.parse().output_text
    assert (
        stored(server, response.headers["x-trust-escalated-from"], "escalated")["escalated_to"]
        == response.headers["x-trust-id"]
    )


@pytest.mark.integration
@pytest.mark.parametrize("path", PATHS)
def test_hold_on_legacy_completions_blocks_and_escalates(gateway: Gateway, path: str) -> None:
    for policy, action, expected in (
        (BLOCK, "blocked", MESSAGE),
        (ESCALATE, "escalated", None),
    ):
        server = gateway(path, VerdictScorer({"strong": 0.8}), streams="hold", **policy)
        raw = sdk(server).completions.with_raw_response.create(model="cheap", prompt=LOW, stream=True)
        chunks, text = [], ""
        for chunk in raw.parse():
            text += chunk.choices[0].text
            chunks.append(chunk)
        assert raw.headers["x-trust-action"] == action
        assert text == expected if expected is not None else LOW in text
        assert chunks[-1].model_extra["trust"]["id"] == raw.headers["x-trust-id"]  # type: ignore[index]


@pytest.mark.integration
@pytest.mark.parametrize("path", PATHS)
def test_hold_on_responses_streams_keeps_blocks_and_escalates(gateway: Gateway, path: str) -> None:
    known = {
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    }
    cases = (
        (BLOCK, LOW, "blocked", MESSAGE),
        (ESCALATE, LOW, "escalated", f"You said: {LOW}"),
        (BLOCK, HIGH, None, f"You said: {HIGH}"),
    )
    for policy, question, action, expected in cases:
        server = gateway(path, VerdictScorer({"strong": 0.8}), streams="hold", **policy)
        raw = sdk(server).responses.with_raw_response.create(model="cheap", input=question, stream=True)
        events = list(raw.parse())
        assert {event.type for event in events} <= known and events[-1].type == "response.completed"
        assert raw.headers.get("x-trust-action") == action
        text = "".join(event.delta for event in events if event.type == "response.output_text.delta")
        assert text == expected and events[-1].response.output_text == expected
        trust = (events[-1].response.model_extra or {})["trust"]
        assert trust["id"] == raw.headers["x-trust-id"]
        with sdk(server).responses.stream(model="cheap", input=question) as stream:
            assert stream.get_final_response().output_text == expected


@pytest.mark.integration
@pytest.mark.parametrize(("on", "action"), [("probability", "blocked"), ("score", None)])
def test_a_policy_on_the_calibrated_probability(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path, on: str, action: str | None
) -> None:
    # Trust_OV 0.58 (bc 0.9, fc neutral) has probability 0.28 on this curve: below 0.5 only by its probability.
    path = tmp_path / "calibration.json"
    save_calibration(IsotonicCalibrator(x=(0.4, 0.6, 0.8), y=(0.1, 0.3, 0.9)), path)
    settings = config(fake_upstream.url, "passthrough", action="block", below=0.5, on=on)  # type: ignore[attr-defined]
    settings["trustgate"]["scoring"]["calibration_path"] = str(path)
    server = start_gateway(settings, scorers=[AskingScorer("bc", 0.9), AskingScorer("fc", 0.5)])
    raw = ask_chat(server, HIGH)
    assert (raw.headers["x-trust-score"], raw.headers["x-trust-probability"]) == ("0.5800", "0.2800")
    assert raw.headers.get("x-trust-action") == action
