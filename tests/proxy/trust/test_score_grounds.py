"""What every score rests on, over real sockets on both upstream paths, whole and streamed, chat and Responses:
the components missing from it and why, its basis, whether its model's scores are informative, and ``unknown``.

The model's calibration report is written to the gateway's fit store (beside
its records) between requests, as a refit (the gateway's, or ``trustgate
calibrate``) writes it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from scoring.learning.report import CalibrationReport, LearnedFit
from scoring.learning.store import SqliteFitStore
from scoring.types import Ask, BudgetSpent, ComponentResult, Scorer, ScoringJob
from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.proxy.scored_gateway import AUTH, AskingScorer
from tests.scoring.learning.reports import calibration_report
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

QUESTION = "Who built the first temple?"
SURFACES = ["chat", "chat stream", "responses", "responses stream"]


class Hanging(Scorer):
    """Never answers: past the scorer timeout, a missing ``timeout``."""

    name = "fc"

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")


class OverBudget(Scorer):
    """Finds the model group's scoring budget spent, as ``Ask`` says it: a missing ``budget``."""

    name = "sc"

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        raise BudgetSpent("the scoring budget of fake is spent for this minute")


def report(*, informative: bool | None, fitted: bool = False) -> CalibrationReport:
    fit = LearnedFit(id="fit_t", features=("bc",), weights=(4.0,), intercept=1.0) if fitted else None
    return calibration_report("fake", informative=informative, fit=fit)


def grounds_config(fake: FakeUpstream, path: str, records: Path) -> dict[str, Any]:
    config = gateway_config(fake.url)  # type: ignore[attr-defined]
    config["trustgate"] = {
        "passthrough": path == "passthrough",
        "keys": [{"key": "sk-acts", "name": "acts"}],
        "store": {"path": str(records)},
        "scoring": {
            "mode": "sync",
            "combine": "paper",
            "queue": {"scorer_timeout_s": 0.5},
            # streams pass: each stream's trust event is read as it comes (a block policy's held streams are tried in
            # tests/proxy/endpoints/test_blocks_hold.py)
            "on_low_trust": {"below": 0.5, "action": "block", "message": "Blocked.", "streams": "pass"},
            "per_key": {"acts": {"on_low_trust": {"unknown": "act"}}},
        },
    }
    return config


def _stream(
    server: ServerThread, endpoint: str, body: dict[str, Any], headers: dict[str, str]
) -> tuple[list[dict[str, Any]], str | None]:
    """The stream's events, and the action its headers say (a held stream is acted on before it is sent)."""
    with httpx.stream("POST", f"{server.url}{endpoint}", headers=headers, json=body, timeout=20) as response:
        assert response.status_code == 200
        events = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: {")]
        return events, response.headers.get("x-trust-action")


def _from_headers(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    headers = response.headers
    return {
        "label": headers.get("x-trust-label"),
        "basis": headers.get("x-trust-basis"),
        "missing": headers.get("x-trust-missing"),
        "informative": headers.get("x-trust-informative"),
        "kind": headers.get("x-trust-kind"),
        "action": headers.get("x-trust-action"),
    }


def _from_trust(trust: dict[str, Any], action: str | None) -> dict[str, Any]:
    informative = trust.get("informative")
    return {
        "label": trust["label"],
        "basis": trust.get("basis"),
        "missing": ",".join(sorted(trust.get("missing", {}))) or None,
        "informative": None if informative is None else str(informative).lower(),
        "kind": trust["applicability"]["kind"],
        "action": action,
    }


def grounds(server: ServerThread, surface: str, key: str = MASTER_KEY) -> dict[str, Any]:
    """What the answer to QUESTION says of its score on ``surface``, in the form the headers use."""
    headers = {"authorization": f"Bearer {key}", "x-trustgate-trust-event": "true"}
    chat = {"model": "fake", "messages": [{"role": "user", "content": QUESTION}]}
    responses = {"model": "fake", "input": QUESTION}
    if surface == "chat":
        return _from_headers(httpx.post(f"{server.url}/v1/chat/completions", headers=headers, json=chat, timeout=20))
    if surface == "responses":
        return _from_headers(httpx.post(f"{server.url}/v1/responses", headers=headers, json=responses, timeout=20))
    if surface == "chat stream":
        chunks, action = _stream(server, "/v1/chat/completions", {**chat, "stream": True}, headers)
        return _from_trust(chunks[-1]["trust"], action)
    events, action = _stream(server, "/v1/responses", {**responses, "stream": True}, headers)
    trust = next(event for event in events if event["type"] == "trustgate.trust")["trust"]
    completed = next(event for event in events if event["type"] == "response.completed")
    assert completed["response"]["trust"] == trust
    return _from_trust(trust, action)


@pytest.mark.parametrize("path", ["passthrough", "litellm"])
def test_missing_basis_informative_and_unknown_on_every_surface(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path, path: str
) -> None:
    fits = SqliteFitStore(tmp_path / "records.sqlite3")
    server = start_gateway(
        grounds_config(fake_upstream, path, tmp_path / "records.sqlite3"),
        scorers=[AskingScorer("bc", 0.1), Hanging(), OverBudget()],
    )
    # No label yet: the shipped combination, nothing known of the model's scores; fc and sc missing, with why.
    first = {"label": "untrusted", "basis": "default", "missing": "fc,sc", "informative": None, "kind": "factual"}
    for surface in SURFACES:
        found = grounds(server, surface)
        assert {name: found[name] for name in first} == first, surface
        assert found["action"] == (None if "stream" in surface else "blocked"), surface  # streams: pass

    # The model's labels show its scores separate nothing: unknown, never trusted or untrusted, not acted on.
    asyncio.run(fits.put(report(informative=False)))
    for surface in SURFACES:
        found = grounds(server, surface)
        assert (found["label"], found["informative"], found["basis"]) == ("unknown", "false", "default"), surface
        assert found["missing"] == "fc,sc" and found["action"] is None, surface
    acted = grounds(server, "chat", key="sk-acts")  # the key whose policy says unknown: act
    assert (acted["label"], acted["action"]) == ("unknown", "blocked")

    # A learned fit in use, on informative labels: learned, informative, and labelled by the fit's value.
    asyncio.run(fits.put(report(informative=True, fitted=True)))
    for surface in SURFACES:
        found = grounds(server, surface)
        assert (found["basis"], found["informative"], found["missing"]) == ("learned", "true", "fc,sc"), surface
        assert (found["label"], found["action"]) == ("trusted", None), surface  # 1 / (1 + e^-(1 + 4 * 0.1))
    asyncio.run(fits.close())


def test_the_record_keeps_each_missing_components_reason(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path
) -> None:
    server = start_gateway(
        grounds_config(fake_upstream, "passthrough", tmp_path / "records.sqlite3"),
        scorers=[AskingScorer("bc", 0.9), Hanging(), OverBudget()],
    )
    response = httpx.post(
        f"{server.url}/v1/chat/completions",
        headers=AUTH,
        json={"model": "fake", "messages": [{"role": "user", "content": QUESTION}]},
        timeout=20,
    )
    record = httpx.get(f"{server.url}/v1/trust/{response.headers['x-trust-id']}", headers=AUTH, timeout=10).json()
    assert record["missing"] == {"fc": "timeout", "sc": "budget"} and record["basis"] == "default"
    assert record["informative"] is None and record["applicability"]["kind"] == "factual"
    assert record["score"] == pytest.approx(0.9)  # from the component that ran
