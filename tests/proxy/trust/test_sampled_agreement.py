"""``sc`` through a running gateway and the fake upstream: the request asked again at its own temperature,
the samples' agreement exported as ``x-trust-sc`` and folded into the default Trust_OV, the calls counted
and held to the scoring budget."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from proxy.trust.sampling import request_sampling
from scoring.combine import default_prior
from scoring.types import SamplingParams
from tests.fake_upstream import FakeUpstream
from tests.proxy.metric_samples import metric
from tests.proxy.sampled_agreement import QUESTION, ask, sc_config, scripted
from tests.proxy.scored_gateway import AUTH, record, scoring_config
from tests.proxy.trust.budget_window import in_one_window
from tests.servers import ServerThread


@pytest.fixture
def sc_gateway(fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]) -> ServerThread:
    return start_gateway(sc_config(fake_upstream.url), scorers=None)  # type: ignore[attr-defined]


@pytest.mark.integration
def test_the_request_is_asked_again_at_its_own_temperature_and_the_agreement_exported(
    sc_gateway: ServerThread, fake_upstream: FakeUpstream
) -> None:
    fake_upstream.responder = scripted("The capital of France is Paris.", ["Paris.", "Lyon.", "It is Paris."])
    response = ask(sc_gateway, temperature=0.7, max_tokens=40, stop=["\n\n"])

    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "The capital of France is Paris."
    assert response.headers["x-trust-sc"] == "0.6667"  # two of three samples name Paris, one Lyon
    user, *samples = fake_upstream.requests
    assert len(samples) == 3
    for sample in samples:
        assert sample["messages"] == user["messages"]  # the same conversation, system message included
        assert sample["temperature"] == 0.7 and sample["max_tokens"] == 40
        assert "stop" not in sample  # cut on the gateway's side instead
    assert len({sample["seed"] for sample in samples}) == 3  # three different, reproducible samples
    details = record(sc_gateway, response)["components"]["sc"]
    assert details["upstream_calls"] == 3
    assert sorted(s["agreement"] for s in details["details"]["samples"]) == [0.0, 1.0, 1.0]
    # The default Trust_OV: the shipped prior over the components present, here sc alone.
    assert response.headers["x-trust-score"] == f"{default_prior().probability({'sc': 2 / 3}):.4f}"
    assert metric(sc_gateway, "trustgate_upstream_calls_total", model="fake", purpose="sc") == 3
    assert metric(sc_gateway, "trustgate_trust_score_count", model="fake", component="sc") == 1


@pytest.mark.integration
def test_a_greedy_request_is_sampled_at_the_upstreams_default_temperature(
    sc_gateway: ServerThread, fake_upstream: FakeUpstream
) -> None:
    fake_upstream.responder = scripted("Paris", ["Paris"])
    response = ask(sc_gateway, temperature=0)

    assert response.headers["x-trust-sc"] == "1.0000"
    samples = fake_upstream.requests[1:]
    assert len(samples) == 3 and all("temperature" not in sample for sample in samples)
    assert record(sc_gateway, response)["components"]["sc"]["details"]["temperature"] is None


@pytest.mark.integration
def test_the_same_answer_gets_the_same_samples(sc_gateway: ServerThread, fake_upstream: FakeUpstream) -> None:
    """Seeds come from the answer, not the request id: a rerun (or `trustgate eval`) asks the same samples."""
    fake_upstream.responder = scripted("Paris", ["Paris"])
    ask(sc_gateway, temperature=0.5)
    ask(sc_gateway, temperature=0.5)
    seeds = [request["seed"] for request in fake_upstream.requests if "seed" in request]
    assert len(seeds) == 6 and sorted(seeds[:3]) == sorted(seeds[3:])  # asked at once: in any order


@pytest.mark.integration
def test_samples_beyond_the_scoring_budget_are_not_asked(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    # one key's calls only: the group's budget is what is looked at (budget.key_share has tests of its own)
    config = sc_config(fake_upstream.url, budget={"calls_per_minute": 2, "key_share": 1.0})  # type: ignore[attr-defined]
    server = start_gateway(config, scorers=None)
    fake_upstream.responder = scripted("Paris", ["Paris", "Lyon"])
    in_one_window(15)
    response = ask(server, temperature=1.0)

    assert response.status_code == 200 and response.headers["x-trust-status"] == "done"
    assert len(fake_upstream.requests) == 3  # the user's call and the two samples the budget allowed
    sc = record(server, response)["components"]["sc"]
    assert sc["details"]["samples_asked"] == 3 and sc["details"]["samples_answered"] == 2
    assert response.headers["x-trust-sc"] == "0.5000"
    assert metric(server, "trustgate_scorer_errors_total", model="fake", component="sc", reason="budget") == 1
    assert metric(server, "trustgate_scoring_calls_shed_total", model="fake", reason="call_budget") == 1


@pytest.mark.integration
def test_sampling_runs_by_default_and_can_be_turned_off(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = scoring_config(
        fake_upstream.url,
        consistency={"enabled": False},  # type: ignore[attr-defined]
        factcheck={"enabled": False},
        logprob={"enabled": False},
    )
    fake_upstream.responder = scripted("Paris", ["Paris"])
    on = start_gateway(config, scorers=None)
    assert ask(on, temperature=1.0).headers["x-trust-sc"] == "1.0000" and len(fake_upstream.requests) == 4
    fake_upstream.requests.clear()
    config["trustgate"]["scoring"]["sc"] = {"enabled": False}
    server = start_gateway(config, scorers=None)
    response = ask(server, temperature=1.0)
    assert response.status_code == 200 and "x-trust-sc" not in response.headers
    assert len(fake_upstream.requests) == 1


@pytest.mark.unit
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"temperature": 0.7, "max_tokens": 40, "stop": "\n"},
            SamplingParams(temperature=0.7, max_tokens=40, stop=["\n"]),
        ),
        ({"max_completion_tokens": 12, "max_tokens": 99}, SamplingParams(max_tokens=12)),  # chat's newer name first
        ({"max_output_tokens": 30, "temperature": 1}, SamplingParams(temperature=1.0, max_tokens=30)),  # Responses API
        (
            {"temperature": "hot", "max_tokens": True, "stop": [1, "END"]},
            SamplingParams(stop=["END"]),
        ),  # odd: not given
        (
            {"temperature": 7, "max_tokens": 0, "stop": ["a", "b", "c", "d", "e"]},
            SamplingParams(stop=["a", "b", "c", "d"]),
        ),
    ],
)
def test_what_a_request_says_about_its_sampling(body: dict[str, Any], expected: SamplingParams) -> None:
    assert request_sampling(body) == expected


@pytest.mark.integration
def test_a_streamed_answer_is_sampled_alike(sc_gateway: ServerThread, fake_upstream: FakeUpstream) -> None:
    fake_upstream.responder = scripted("The capital of France is Paris.", ["Lyon."])
    with httpx.stream(
        "POST",
        f"{sc_gateway.url}/v1/chat/completions",
        timeout=20,
        headers={**AUTH, "x-trustgate-mode": "sync"},
        json={"model": "fake", "stream": True, "temperature": 0.4, "messages": [{"role": "user", "content": QUESTION}]},
    ) as response:
        events = [line for line in response.iter_lines() if line.startswith("data: {")]
    trust = json.loads(events[-1][6:])["trust"]
    assert trust["components"]["sc"] == 0.0  # every sample named another city
    samples = fake_upstream.requests[1:]
    assert len(samples) == 3 and all(s["temperature"] == 0.4 and not s.get("stream") for s in samples)
