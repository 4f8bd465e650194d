"""Scoring's budget per model group, over real sockets: jobs beyond it are shed and counted, users never limited.

The budget is counted in one-minute windows of the wall clock; a test that
needs its requests to fall in one window first waits out a window about to
turn (``in_one_window``), so its counts are exact.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from exporters import SpendLedger, SqliteSpendStore
from proxy.base.limits import Limiter, MemoryCounters
from proxy.config.settings import ConfigError, settings_from_dict
from proxy.trust.scoring_budget import ScoringBudget
from scoring.settings import BudgetLimits, BudgetSettings
from scoring.types import Ask, BudgetSpent, ComponentResult, Scorer, ScoringJob
from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.proxy.metric_samples import metric
from tests.proxy.redis_gateway import RedisDeployment
from tests.proxy.scored_gateway import AskingScorer, record
from tests.proxy.trust.budget_window import in_one_window
from tests.redis_server import RedisServer, free_port
from tests.servers import ServerThread

AUTH = {"authorization": f"Bearer {MASTER_KEY}"}


class ThriceAskingScorer(Scorer):
    """Re-asks three times, as a consistency scorer asks several checks: a job that can run past a budget."""

    name = "bc"

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        for _ in range(3):
            await ask([{"role": "user", "content": f"check: {job.answer}"}])
        return ComponentResult(component="bc", value=0.9, upstream_calls=3)


def two_models(upstream_url: str, budget: dict[str, Any], **trustgate: Any) -> dict[str, Any]:
    """Models ``a`` and ``b`` on the fake upstream, scored in sync mode (each answer waits for its record).

    One key asks here: the budget is given to it whole (``key_share: 1``) unless ``budget`` says otherwise, so that
    what is looked at is the group's budget (the shares between keys have tests of their own)."""
    config = gateway_config(upstream_url)
    deployment = config["model_list"][0]
    config["model_list"] = [{**deployment, "model_name": name} for name in ("a", "b")]
    budget = {"key_share": 1.0, **budget}
    config["trustgate"] = {"scoring": {"mode": "sync", "queue": {"scorer_timeout_s": 5}, "budget": budget}, **trustgate}
    return config


def chat(server: ServerThread, model: str, content: str) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/chat/completions",
        headers=AUTH,
        timeout=30,
        json={"model": model, "messages": [{"role": "user", "content": content}]},
    )


@pytest.mark.integration
def test_a_model_over_its_call_budget_sheds_jobs_while_its_users_get_answers(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = two_models(
        fake_upstream.url,
        {
            "calls_per_minute": 100,  # type: ignore[attr-defined]
            "per_model": {"a": {"calls_per_minute": 2}},
        },
    )
    server = start_gateway(config, scorers=[AskingScorer("bc", 0.9)])
    in_one_window(15)
    to_a = [chat(server, "a", f"What is question {i}?") for i in range(5)]
    to_b = [chat(server, "b", f"What is question {i}?") for i in range(4)]

    assert [r.status_code for r in to_a + to_b] == [200] * 9  # user traffic is never limited by scoring's budget
    assert [r.json()["choices"][0]["message"]["content"] for r in to_a] == [
        f"You said: What is question {i}?" for i in range(5)
    ]
    assert [r.headers["x-trust-status"] for r in to_a] == ["done", "done", "shed", "shed", "shed"]
    assert [r.headers["x-trust-status"] for r in to_b] == ["done"] * 4  # b is within its own budget
    shed = record(server, to_a[-1])
    assert (shed["status"], shed["shed_reason"]) == ("shed", "call_budget")
    assert shed["error"] == "not scored: the scoring budget of model `a` (2 calls per minute) is spent"
    assert shed["components"] == {}
    assert metric(server, "trustgate_scoring_shed_jobs_total", model="a", reason="call_budget") == 3
    assert metric(server, "trustgate_scoring_shed_jobs_total", model="b", reason="call_budget") == 0
    assert metric(server, "trustgate_scoring_jobs_total", model="a", status="shed") == 3
    assert metric(server, "trustgate_upstream_calls_total", model="a", purpose="user") == 5
    assert metric(server, "trustgate_upstream_calls_total", model="a", purpose="bc") == 2
    scoring_calls = [r for r in fake_upstream.requests if r["messages"][-1]["content"].startswith("check:")]
    assert len(scoring_calls) == 2 + 4  # shed jobs called nothing upstream


@pytest.mark.integration
def test_a_job_that_runs_past_the_budget_has_its_further_calls_refused_and_counted(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = two_models(fake_upstream.url, {"per_model": {"a": {"calls_per_minute": 2}}})  # type: ignore[attr-defined]
    server = start_gateway(config, scorers=[ThriceAskingScorer()])
    in_one_window(10)
    first, second = chat(server, "a", "Who is one?"), chat(server, "a", "Who is two?")
    other = chat(server, "b", "Who is three?")  # no budget for b

    assert [r.status_code for r in (first, second, other)] == [200, 200, 200]
    started = record(server, first)
    assert started["status"] == "failed"  # its only component could not finish
    assert started["components"]["bc"]["error"] == (
        "BudgetSpent: scoring call not made: the scoring budget of model `a` (2 calls per minute) is spent"
    )
    assert record(server, second)["shed_reason"] == "call_budget"  # shed before it ran
    assert record(server, other)["status"] == "done"
    assert metric(server, "trustgate_scoring_calls_shed_total", model="a", reason="call_budget") == 1
    assert metric(server, "trustgate_scorer_errors_total", model="a", component="bc", reason="budget") == 1
    assert metric(server, "trustgate_upstream_calls_total", model="a", purpose="bc") == 2
    assert metric(server, "trustgate_upstream_calls_total", model="b", purpose="bc") == 3


def _scoring_usage(fake: FakeUpstream) -> tuple[int, int]:
    """Prompt and completion tokens the fake upstream reported on its answers to scoring calls."""
    usages = [c["usage"] for c in fake.answered if c["choices"][0]["message"]["content"].startswith("You said: check:")]
    return sum(u["prompt_tokens"] for u in usages), sum(u["completion_tokens"] for u in usages)


@pytest.mark.integration
@pytest.mark.parametrize("passthrough", [True, False], ids=["passthrough", "litellm"])
def test_scoring_tokens_are_counted_as_the_upstream_reported_them(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], passthrough: bool
) -> None:
    config = two_models(fake_upstream.url, {}, passthrough=passthrough)  # type: ignore[attr-defined]
    server = start_gateway(config, scorers=[AskingScorer("bc", 0.9), AskingScorer("fc", 0.5)])
    for i in range(3):
        assert chat(server, "a", f"how many tokens is question number {i}?").headers["x-trust-status"] == "done"

    prompt, completion = _scoring_usage(fake_upstream)
    assert prompt > 0 and completion > 0 and len(fake_upstream.answered) == 3 + 6
    counted = {
        (component, kind): metric(
            server, "trustgate_scoring_upstream_tokens_total", model="a", component=component, kind=kind
        )
        for component in ("bc", "fc")
        for kind in ("prompt", "completion")
    }
    assert counted[("bc", "prompt")] + counted[("fc", "prompt")] == prompt
    assert counted[("bc", "completion")] + counted[("fc", "completion")] == completion
    assert counted[("bc", "prompt")] == counted[("fc", "prompt")] > 0  # the two scorers asked alike


@pytest.mark.integration
def test_a_model_over_its_token_budget_sheds_jobs(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = two_models(
        fake_upstream.url,
        {
            "tokens_per_minute": 1,  # type: ignore[attr-defined]
            "per_model": {"b": {"tokens_per_minute": None}},
        },
    )
    server = start_gateway(config, scorers=[AskingScorer("bc", 0.9)])
    in_one_window(10)
    to_a = [chat(server, "a", f"What is question {i}?") for i in range(3)]
    to_b = [chat(server, "b", f"What is question {i}?") for i in range(3)]

    assert [r.status_code for r in to_a + to_b] == [200] * 6
    # The first call is made (no tokens spent yet); what it used puts a over its budget for the minute.
    assert [r.headers["x-trust-status"] for r in to_a] == ["done", "shed", "shed"]
    assert [r.headers["x-trust-status"] for r in to_b] == ["done"] * 3  # an explicit null lifts b's limit
    assert (
        record(server, to_a[1])["error"] == "not scored: the scoring budget of model `a` (1 tokens per minute) is spent"
    )
    assert metric(server, "trustgate_scoring_shed_jobs_total", model="a", reason="token_budget") == 2


@pytest.mark.integration
def test_the_budget_holds_on_the_worker_path(redis_deployment: RedisDeployment, redis_server: RedisServer) -> None:
    config = redis_deployment.config()
    config["trustgate"]["scoring"]["budget"] = {"calls_per_minute": 2, "key_share": 1.0}  # one key asks
    gateway = redis_deployment.gateway(config, bc=0.9)
    port = free_port()
    redis_deployment.start_worker(config, 0.0, "--metrics-port", str(port))
    worker = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while not _answers(f"{worker}/health/liveness"):
        assert time.monotonic() < deadline, "the worker did not start"
        time.sleep(0.1)
    in_one_window(15)
    responses = [
        httpx.post(
            f"{gateway.url}/v1/chat/completions",
            timeout=30,
            headers={**AUTH, "x-trustgate-mode": "sync"},
            json={"model": "fake", "messages": [{"role": "user", "content": f"Who is q{i}?"}]},
        )
        for i in range(4)
    ]

    assert [r.status_code for r in responses] == [200] * 4
    assert [r.headers["x-trust-status"] for r in responses] == ["done", "done", "shed", "shed"]
    assert record(gateway, responses[-1])["shed_reason"] == "call_budget"
    # Counted in the queue's Redis, where every worker and gateway replica reads the same minute's spend.
    assert redis_server.client().keys("trustgate:limits:scoring_calls:fake:*")
    worker_metrics = httpx.get(f"{worker}/metrics").text
    assert 'trustgate_scoring_shed_jobs_total{model="fake",reason="call_budget"} 2.0' in worker_metrics
    assert 'trustgate_scoring_upstream_tokens_total{component="bc",kind="prompt",model="fake"}' in worker_metrics


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.mark.unit
def test_per_model_entries_override_the_default_key_by_key() -> None:
    budget = BudgetSettings.model_validate(
        {
            "calls_per_minute": 10,
            "tokens_per_minute": 500,
            "per_model": {
                "small": {"calls_per_minute": 2},
                "free": {"calls_per_minute": None, "tokens_per_minute": None},
            },
        }
    )
    assert budget.for_model("other") == BudgetLimits(calls_per_minute=10, tokens_per_minute=500)
    assert budget.for_model("small") == BudgetLimits(calls_per_minute=2, tokens_per_minute=500)
    assert budget.for_model("free") == BudgetLimits()
    assert BudgetSettings().for_model("any") == BudgetLimits()  # no budget unless the operator sets one


@pytest.mark.unit
@pytest.mark.parametrize(
    ("per_model", "message"),
    [
        ({"nope": {"calls_per_minute": 1}}, "trustgate.scoring.budget.per_model: `nope` is not a model group"),
        ({"cheap": {"calls_per_minute": 1}}, "`cheap` is not a model group (it is an alias: name its group)"),
        ({"fake": {"calls_per_minute": 0}}, "greater than or equal to 1"),
        ({"fake": {"calls_per_hour": 1}}, "trustgate.scoring.budget.per_model.fake.calls_per_hour: unknown key"),
    ],
)
def test_a_budget_for_no_model_group_is_a_config_error(per_model: dict[str, Any], message: str) -> None:
    config = gateway_config(
        "http://127.0.0.1:9",
        router_settings={"model_group_alias": {"cheap": "fake"}},
        trustgate={"scoring": {"budget": {"per_model": per_model}}},
    )
    with pytest.raises(ConfigError) as raised:
        settings_from_dict(config, {})
    assert message in str(raised.value)


@pytest.mark.unit
def test_the_window_turning_restores_the_budget(tmp_path: Path) -> None:
    now = [120.0]
    refused: list[tuple[str, str]] = []
    budget = ScoringBudget(
        BudgetSettings(calls_per_minute=2, tokens_per_minute=100, key_share=1.0),
        Limiter(MemoryCounters(clock=lambda: now[0]), clock=lambda: now[0]),
        SpendLedger(SqliteSpendStore(tmp_path / "spend.sqlite3")),  # no spend limit: never read
        on_call_refused=lambda group, reason: refused.append((group, reason)),
    )

    async def scenario() -> list[object]:
        seen: list[object] = []
        await budget.take_call("m")
        await budget.take_call("m")
        seen.append(await budget.spent("m"))
        with pytest.raises(BudgetSpent):
            await budget.take_call("m")
        now[0] = 180.0  # the next minute
        seen.append(await budget.spent("m"))
        await budget.take_call("m")
        await budget.add_tokens("m", 100)
        seen.append(await budget.spent("m"))
        with pytest.raises(BudgetSpent, match=r"\(100 tokens per minute\)"):
            await budget.take_call("m")
        return seen

    assert asyncio.run(scenario()) == ["call_budget", None, "token_budget"]
    assert refused == [("m", "call_budget"), ("m", "token_budget")]
