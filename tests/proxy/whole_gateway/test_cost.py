"""What answers and their scoring cost, over real sockets: the header, the record, the metrics, and the budgets.

Both upstream paths (pass-through and litellm) and both homes of the spend
ledger and the records (SQLite beside the records; Redis, where a worker
process scores) are covered. The fake upstream reports usage by fixed rules
(tests/fake_upstream.py), and its deployment is priced in its config at round
figures, so every expected dollar is tokens times those prices.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from scoring.types import Ask, ComponentResult, Scorer, ScoringJob
from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.redis_server import RedisServer
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

PROMPT_USD, COMPLETION_USD = 0.001, 0.002  # per token: the fake deployment's configured price
PATHS = {"passthrough": True, "litellm": False}
TEAM_KEY = "sk-team-secret-9"
ASKED = "one two three"  # the fake echoes it: "You said: one two three", 5 words


def _usd(prompt_tokens: int, completion_tokens: int) -> float:
    return prompt_tokens * PROMPT_USD + completion_tokens * COMPLETION_USD


class ManualClock:
    """The gateway's clock for spend, moved on by the test to a budget's next window."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


class AskOnce(Scorer):
    """Re-asks the answering model once, as a real scorer would (tests/redis_worker.py's scorer, in process)."""

    name = "bc"

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        reply = await ask([{"role": "user", "content": f"check: {job.answer}"}])
        return ComponentResult(component="bc", value=0.8, upstream_calls=1, details={"heard": reply.text})


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A Redis for the test; ask for it before ``start_gateway``, so that the gateways stop (and flush) first."""
    server = RedisServer(tmp_path).start()
    yield server.url
    server.stop()


@pytest.fixture
def start_worker(tmp_path: Path) -> Iterator[Callable[[dict[str, Any]], None]]:
    """Factory: ``trustgate worker`` (tests/redis_worker.py: one re-ask per job) as a process for a config."""
    processes: list[subprocess.Popen[bytes]] = []

    def start(config: dict[str, Any]) -> None:
        path = tmp_path / f"worker-{len(processes)}.yaml"
        path.write_text(yaml.safe_dump(config))
        environment = {**os.environ, "PYTHONPATH": str(Path.cwd())}
        processes.append(subprocess.Popen([sys.executable, "-m", "tests.redis_worker", str(path)], env=environment))

    yield start
    for process in processes:
        process.kill()
        process.wait(timeout=10)


def _config(upstream_url: str, *, path: str = "passthrough", priced: bool = True, **trustgate: Any) -> dict[str, Any]:
    config = gateway_config(upstream_url)
    if priced:
        config["model_list"][0]["litellm_params"].update(
            {"input_cost_per_token": PROMPT_USD, "output_cost_per_token": COMPLETION_USD}
        )
    else:
        config["model_list"][0]["litellm_params"]["model"] = "openai/a-model-litellm-does-not-price"
    config["trustgate"] = {"passthrough": PATHS[path], **trustgate}
    return config


def _redis_ledger(redis_url: str) -> dict[str, Any]:
    """The trustgate section that keeps limits and spend in Redis (records stay in SQLite)."""
    return {"limits": {"redis_url": redis_url}}


def _redis_queue(redis_url: str) -> dict[str, Any]:
    """Jobs, records and spend in Redis, scored by a worker process; sync mode, so a response has its record."""
    return {"mode": "sync", "queue": {"backend": "redis", "redis_url": redis_url, "scorer_timeout_s": 10}}


def _post(server: ServerThread, path: str, body: dict[str, Any], key: str = MASTER_KEY) -> httpx.Response:
    return httpx.post(
        f"{server.url}{path}", headers={"authorization": f"Bearer {key}"}, json={"model": "fake", **body}, timeout=30
    )


def _chat(server: ServerThread, key: str = MASTER_KEY, **extra: Any) -> httpx.Response:
    return _post(server, "/v1/chat/completions", {"messages": [{"role": "user", "content": ASKED}], **extra}, key)


def _metric(server: ServerThread, name: str, **labels: str) -> float:
    text = httpx.get(f"{server.url}/metrics").text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and labels.items() <= sample.labels.items()
    )


def _record(server: ServerThread, record_id: str) -> dict[str, Any]:
    response = httpx.get(
        f"{server.url}/v1/trust/{record_id}", headers={"authorization": f"Bearer {MASTER_KEY}"}, timeout=10
    )
    assert response.status_code == 200, response.text
    record: dict[str, Any] = response.json()
    return record


def _events(response: httpx.Response) -> list[dict[str, Any]]:
    return [
        orjson.loads(line[len("data: ") :])
        for line in response.text.splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]


# Each call as a client makes it, and the usage the fake upstream reports for it (prompt, completion tokens).
CALLS: dict[str, tuple[str, dict[str, Any], tuple[int, int]]] = {
    "chat": ("/v1/chat/completions", {"messages": [{"role": "user", "content": ASKED}]}, (3, 5)),
    "chat-stream": (
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": ASKED}], "stream": True, "stream_options": {"include_usage": True}},
        (1, 5),
    ),
    "chat-stream-usage-not-asked": (
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": ASKED}], "stream": True},
        (1, 5),
    ),
    "completions": ("/v1/completions", {"prompt": ASKED}, (1, 5)),
    "completions-stream": ("/v1/completions", {"prompt": ASKED, "stream": True}, (1, 5)),
    "completions-stream-usage-asked": (
        "/v1/completions",
        {"prompt": ASKED, "stream": True, "stream_options": {"include_usage": True}},
        (1, 5),
    ),
    "responses": ("/v1/responses", {"input": ASKED}, (1, 5)),
    "responses-stream": ("/v1/responses", {"input": ASKED, "stream": True}, (1, 5)),
}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("call", list(CALLS))
def test_every_answer_is_priced_in_its_header_and_the_metrics(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], call: str, path: str
) -> None:
    server = start_gateway(_config(fake_upstream.url, path=path, scoring={"mode": "off"}))  # type: ignore[attr-defined]
    endpoint, body, (prompt, completion) = CALLS[call]
    if path == "litellm" and call == "completions":
        prompt = 3  # litellm asks a legacy completion as a chat call, whose prompt the fake counts in words
    response = _post(server, endpoint, body)
    assert response.status_code == 200, response.text
    spent = _metric(server, "trustgate_spend_usd_total", model="fake", key="master", purpose="answer")
    if path == "litellm" and call == "completions-stream":  # not asked for usage there: unknown, never 0
        assert spent == 0 and _metric(server, "trustgate_unpriced_answers_total", model="fake") == 1
        return
    expected = _usd(prompt, completion)
    if body.get("stream"):  # the headers left before the usage came: the cost is in the metrics (and a record)
        assert "x-trustgate-response-cost" not in response.headers
    else:
        assert float(response.headers["x-trustgate-response-cost"]) == pytest.approx(expected)
    assert spent == pytest.approx(expected)


@pytest.mark.parametrize("path", list(PATHS))
def test_a_stream_is_asked_for_its_usage_and_the_client_gets_only_what_it_asked(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], path: str
) -> None:
    server = start_gateway(_config(fake_upstream.url, path=path, scoring={"mode": "off"}))  # type: ignore[attr-defined]
    response = _chat(server, stream=True)
    assert fake_upstream.requests[-1]["stream_options"] == {"include_usage": True}
    chunks = _events(response)
    assert chunks and all(chunk["choices"] for chunk in chunks)  # no usage chunk: `chunk.choices[0]` always works
    assert "".join(chunk["choices"][0]["delta"].get("content") or "" for chunk in chunks) == f"You said: {ASKED}"
    asked = _events(_chat(server, stream=True, stream_options={"include_usage": True}))
    assert asked[-1]["choices"] == [] and asked[-1]["usage"]["completion_tokens"] == 5  # asked: kept


@pytest.mark.parametrize("path", list(PATHS))
def test_litellms_cost_map_prices_a_deployment_whose_config_does_not(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], path: str
) -> None:
    """The fake deployment is ``openai/gpt-4o-mini``, which litellm's map prices."""
    import litellm

    config = gateway_config(fake_upstream.url, trustgate={"passthrough": PATHS[path], "scoring": {"mode": "off"}})  # type: ignore[attr-defined]
    server = start_gateway(config)
    response = _chat(server)
    listed = litellm.get_model_info(model="openai/gpt-4o-mini")
    prompt, completion = listed["input_cost_per_token"], listed["output_cost_per_token"]
    assert prompt is not None and completion is not None
    expected = 3 * prompt + 5 * completion
    assert float(response.headers["x-trustgate-response-cost"]) == pytest.approx(expected)


def test_an_answer_of_unknown_price_has_no_cost_never_zero(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = _config(
        fake_upstream.url,  # type: ignore[attr-defined]
        priced=False,
        scoring={"mode": "sync"},
        keys=[{"key": TEAM_KEY, "name": "team", "max_budget": 0.000001}],
    )
    server = start_gateway(config, scorers=[AskOnce()])
    for _ in range(3):  # an answer of unknown price spends nothing of a budget
        response = _chat(server, key=TEAM_KEY)
        assert response.status_code == 200 and "x-trustgate-response-cost" not in response.headers
    cost = _record(server, response.headers["x-trust-id"])["cost"]
    assert (cost["answer_usd"], cost["scoring_usd"], cost["by_component"]["bc"]["usd"]) == (None, None, None)
    assert cost["answer_tokens"] == 8 and cost["by_component"]["bc"]["prompt_tokens"] > 0
    assert _metric(server, "trustgate_unpriced_answers_total", model="fake") == 3
    assert _metric(server, "trustgate_spend_usd_total", model="fake") == 0


@pytest.mark.parametrize("call", ["chat", "chat-stream-usage-not-asked", "responses", "completions-stream-usage-asked"])
@pytest.mark.parametrize("path", list(PATHS))
def test_a_scored_answers_record_has_its_cost_and_its_scorings_by_component(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], call: str, path: str
) -> None:
    server = start_gateway(
        _config(fake_upstream.url, path=path, scoring={"mode": "sync"}),  # type: ignore[attr-defined]
        scorers=[AskOnce()],
    )
    endpoint, body, (prompt, completion) = CALLS[call]
    response = _post(server, endpoint, body)
    assert response.status_code == 200, response.text
    cost = _record(server, response.headers["x-trust-id"])["cost"]
    check = fake_upstream.answered[-1]["usage"]  # the scorer's call: the last whole chat completion answered
    bc = cost["by_component"]["bc"]
    assert (bc["calls"], bc["prompt_tokens"], bc["completion_tokens"]) == (
        1,
        check["prompt_tokens"],
        check["completion_tokens"],
    )
    assert bc["usd"] == pytest.approx(_usd(check["prompt_tokens"], check["completion_tokens"]))
    assert cost["answer_usd"] == pytest.approx(_usd(prompt, completion))
    assert (cost["scoring_usd"], cost["scoring_calls"]) == (pytest.approx(bc["usd"]), 1)
    assert _metric(server, "trustgate_spend_usd_total", model="fake", key="master", purpose="bc") == pytest.approx(
        bc["usd"]
    )


def test_a_worker_processes_scoring_cost_reaches_the_record_in_redis(
    redis_url: str,
    fake_upstream: FakeUpstream,
    start_gateway: Callable[..., ServerThread],
    start_worker: Callable[[dict[str, Any]], None],
) -> None:
    config = _config(fake_upstream.url, scoring=_redis_queue(redis_url))  # type: ignore[attr-defined]
    start_worker(config)
    server = start_gateway(config, scorers=[AskOnce()])  # the worker scores; given, the gateway knows it can be
    response = _chat(server)
    assert response.headers["x-trust-status"] == "done", response.headers
    cost = _record(server, response.headers["x-trust-id"])["cost"]
    check = fake_upstream.answered[-1]["usage"]
    assert cost["answer_usd"] == pytest.approx(float(response.headers["x-trustgate-response-cost"]))
    assert cost["scoring_usd"] == pytest.approx(_usd(check["prompt_tokens"], check["completion_tokens"]))


def _budgeted_key(max_budget: float, duration: str | None = "1h") -> dict[str, Any]:
    key: dict[str, Any] = {"key": TEAM_KEY, "name": "team", "max_budget": max_budget}
    return {**key, "budget_duration": duration} if duration is not None else key


def _assert_over_budget(response: httpx.Response) -> None:
    """LiteLLM's refusal: 400, OpenAI's error shape, budget_exceeded; the key's name, never the key."""
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("budget_exceeded", "budget_exceeded")
    assert "team" in error["message"] and TEAM_KEY not in response.text


@pytest.mark.parametrize("ledger", ["sqlite", "redis"])
@pytest.mark.parametrize("path", list(PATHS))
def test_a_key_is_refused_past_its_budget_and_served_again_in_its_next_window(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], path: str, ledger: str, tmp_path: Path
) -> None:
    redis = RedisServer(tmp_path).start() if ledger == "redis" else None
    server = None
    try:
        clock = ManualClock()
        config = _config(
            fake_upstream.url,  # type: ignore[attr-defined]
            path=path,
            scoring={"mode": "off"},
            keys=[_budgeted_key(0.02)],  # one chat answer costs 0.013
            **(_redis_ledger(redis.url) if redis is not None else {}),
        )
        server = start_gateway(config, clock=clock)
        assert [_chat(server, key=TEAM_KEY).status_code for _ in range(2)] == [200, 200]  # 0, then 0.013 spent
        calls = len(fake_upstream.requests)
        _assert_over_budget(_chat(server, key=TEAM_KEY))
        _assert_over_budget(_chat(server, key=TEAM_KEY, stream=True))
        assert len(fake_upstream.requests) == calls  # refused before any upstream call
        assert _chat(server).status_code == 200  # another key (the master key) is not held to it
        clock.now = clock.now // 3600 * 3600 + 3600  # the next hour: a new window
        assert _chat(server, key=TEAM_KEY).status_code == 200
    finally:
        if server is not None:
            server.stop()  # before its Redis: its last flush goes there
        if redis is not None:
            redis.stop()


@pytest.mark.parametrize("path", list(PATHS))
def test_a_key_made_at_run_time_is_held_to_its_budget_as_a_configured_key_is(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], path: str
) -> None:
    clock = ManualClock()
    server = start_gateway(_config(fake_upstream.url, path=path, scoring={"mode": "off"}), clock=clock)  # type: ignore[attr-defined]
    bad = httpx.post(
        f"{server.url}/key/generate",
        headers={"authorization": f"Bearer {MASTER_KEY}"},
        json={"key_alias": "team", "max_budget": 1, "budget_duration": "fortnightly"},
        timeout=30,
    )
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "budget_duration", bad.text
    made = httpx.post(
        f"{server.url}/key/generate",
        headers={"authorization": f"Bearer {MASTER_KEY}"},
        json={"key_alias": "team", "max_budget": 0.02, "budget_duration": "1h"},  # one chat answer costs 0.013
        timeout=30,
    )
    assert made.status_code == 200, made.text
    key = made.json()["key"]
    assert [_chat(server, key=key).status_code for _ in range(2)] == [200, 200]
    refused = _chat(server, key=key)
    _assert_over_budget(refused)
    assert key not in refused.text
    clock.now = clock.now // 3600 * 3600 + 3600  # the next hour: a new window
    assert _chat(server, key=key).status_code == 200


def test_a_budget_holds_across_a_restart(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path
) -> None:
    config = _config(
        fake_upstream.url,  # type: ignore[attr-defined]
        scoring={"mode": "off"},
        keys=[_budgeted_key(0.01, duration=None)],
        store={"path": str(tmp_path / "records.sqlite3")},
    )
    first = start_gateway(config)
    assert _chat(first, key=TEAM_KEY).status_code == 200
    first.stop()  # the ledger flushes on the way out
    _assert_over_budget(_chat(start_gateway(config), key=TEAM_KEY))


def test_gateways_on_one_redis_hold_a_key_to_one_budget(
    redis_url: str, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = _config(
        fake_upstream.url,  # type: ignore[attr-defined]
        scoring={"mode": "off"},
        keys=[_budgeted_key(0.01, duration="1d")],
        **_redis_ledger(redis_url),
    )
    first, second = start_gateway(config), start_gateway(config)
    assert _chat(second, key=TEAM_KEY).status_code == 200  # the second replica read the key's budget: 0 spent
    assert _chat(first, key=TEAM_KEY).status_code == 200
    deadline = time.monotonic() + 10
    while (refused := _chat(second, key=TEAM_KEY)).status_code == 200 and time.monotonic() < deadline:
        time.sleep(0.2)  # the first replica flushes within a second, the second re-reads within one more
    _assert_over_budget(refused)


def _shed_reason(server: ServerThread, response: httpx.Response) -> str | None:
    record = _record(server, response.headers["x-trust-id"])
    return record.get("shed_reason") if record["status"] == "shed" else None


@pytest.mark.parametrize(
    ("budget", "reason"),
    [
        ({"max_spend_share": 0.5}, "spend_share"),  # every model group's
        ({"per_model": {"fake": {"max_spend_share": 0.5}}}, "spend_share"),
        ({"max_spend_usd_per_hour": 0.001}, "spend_per_hour"),
        ({"max_spend_share": 0.5, "per_model": {"fake": {"max_spend_share": None}}}, None),  # lifted for the group
    ],
)
def test_scoring_is_shed_past_its_spend_budget(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], budget: dict[str, Any], reason: str | None
) -> None:
    """One check costs more than half of what its answer did (and more than 0.001 USD): the next job is shed."""
    config = _config(fake_upstream.url, scoring={"mode": "sync", "budget": budget})  # type: ignore[attr-defined]
    server = start_gateway(config, scorers=[AskOnce()])
    first = _chat(server)
    assert first.headers["x-trust-status"] == "done"
    second = _chat(server)
    if reason is None:
        assert second.headers["x-trust-status"] == "done"
        return
    assert second.status_code == 200 and second.headers["x-trust-status"] == "shed"  # the user still got the answer
    assert _shed_reason(server, second) == reason
    assert "scoring budget of model `fake`" in _record(server, second.headers["x-trust-id"])["error"]
    assert _metric(server, "trustgate_scoring_shed_jobs_total", model="fake", reason=reason) == 1


def test_a_worker_sheds_past_the_share_on_the_spend_every_process_shares(
    redis_url: str,
    fake_upstream: FakeUpstream,
    start_gateway: Callable[..., ServerThread],
    start_worker: Callable[[dict[str, Any]], None],
) -> None:
    """The gateway's answers and the worker's scoring meet in Redis: the worker sheds on their share."""
    scoring = {**_redis_queue(redis_url), "budget": {"max_spend_share": 0.5}}
    config = _config(fake_upstream.url, scoring=scoring)  # type: ignore[attr-defined]
    start_worker(config)
    server = start_gateway(config, scorers=[AskOnce()])
    assert _chat(server).headers["x-trust-status"] == "done"
    second = _chat(server)
    assert second.headers["x-trust-status"] == "shed" and _shed_reason(server, second) == "spend_share"


def test_every_configured_models_spend_starts_at_zero(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = _config(fake_upstream.url, keys=[{"key": TEAM_KEY, "name": "team"}])  # type: ignore[attr-defined]
    text = httpx.get(f"{start_gateway(config).url}/metrics").text
    started = {
        (sample.labels["key"], sample.labels["purpose"])
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "trustgate_spend_usd_total" and sample.labels["model"] == "fake" and sample.value == 0
    }
    assert {("team", "answer"), ("master", "answer"), ("team", "bc"), ("master", "fc")} <= started


# sc alone scores (no built assets needed), in the gateway's local scoring worker: its re-asks are the fake's.
SC_ONLY = {"consistency": {"enabled": False}, "factcheck": {"enabled": False}, "rag": {"enabled": False}}


def test_the_local_scoring_workers_calls_are_priced_and_shed_on_spend_the_gateway_added(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """The gateway adds each answer's cost to the ledger's SQLite file, its local worker each record's scoring cost:
    the worker's metrics reach the gateway's, and its budget gate reads both."""
    scoring = {"mode": "sync", "worker": "child", **SC_ONLY, "budget": {"max_spend_share": 0.5}}
    server = start_gateway(_config(fake_upstream.url, scoring=scoring), scorers=None)  # type: ignore[attr-defined]
    first = _chat(server)
    assert first.headers["x-trust-status"] == "done", first.headers
    cost = _record(server, first.headers["x-trust-id"])["cost"]
    sc = cost["by_component"]["sc"]
    assert sc["calls"] == 3 and sc["usd"] == pytest.approx(_usd(sc["prompt_tokens"], sc["completion_tokens"]))
    assert _metric(server, "trustgate_spend_usd_total", model="fake", purpose="sc") == pytest.approx(sc["usd"])
    second = _chat(server)
    assert second.headers["x-trust-status"] == "shed" and _shed_reason(server, second) == "spend_share"
