"""A gateway learns a model's Trust_OV from its labels while it runs, over real sockets.

The fake upstream echoes the question ("You said: ..."), so an answer's length
follows its question's; the test labels short answers right and long ones
wrong, while Trust_BC is the same for every answer. The default Trust_OV
(Trust_BC's) then carries no information and the free signal "length" all of
it: once enough labels have come in, the refit must pick it up, and later
records must be scored by the fit and name it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.proxy.labels import calibration, label
from tests.proxy.redis_gateway import RedisDeployment, start_ready_worker
from tests.proxy.scored_gateway import AskingScorer, wait_for_record
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

AUTH = {"authorization": f"Bearer {MASTER_KEY}"}
LEARNING = {"refit_every": 10, "min_labels": 20, "min_refit_interval_s": 0}  # each refit as soon as due
WORDS = "alpha bravo charlie delta echo foxtrot".split()


def question(i: int) -> str:
    """A question of 1 to 6 words beside its frame: answers to those of up to 3 are labelled right."""
    return "Who is " + " ".join(WORDS[: 1 + i % 6]) + f" {i}?"


def right(i: int) -> bool:
    return 1 + i % 6 <= 3


def ask(server: ServerThread, content: str) -> httpx.Response:
    response = httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={**AUTH, "x-trustgate-mode": "sync"},
        timeout=30,
        json={"model": "fake", "messages": [{"role": "user", "content": content}]},
    )
    assert response.status_code == 200 and response.headers["x-trust-status"] == "done", response.text
    return response


def wait_for_fit(server: ServerThread, labels: int, timeout: float = 60) -> dict[str, Any]:
    """The model's entry once a refit has read ``labels`` labels (the listing counts them from the first)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        entries = [e for e in calibration(server) if e["model"] == "fake" and (e["refit_labels"] or 0) >= labels]
        if entries:
            return entries[0]
        time.sleep(0.1)
    raise AssertionError(f"no refit on {labels} labels")


def teach(asking: ServerThread, labelling: ServerThread, questions: range) -> list[str]:
    """Ask ``questions`` through one gateway and label the answers through another (or the same)."""
    ids = []
    for i in questions:
        record_id = ask(asking, question(i)).headers["x-trust-id"]
        wait_for_record(labelling, record_id)
        label(labelling, record_id, right(i))
        ids.append(record_id)
    return ids


def ov(server: ServerThread, record_id: str) -> dict[str, Any]:
    return dict(wait_for_record(server, record_id)["components"]["ov"])


def learning_config(upstream_url: str, tmp_path: Path) -> dict[str, Any]:
    config = gateway_config(upstream_url)
    config["trustgate"] = {
        "store": {"path": str(tmp_path / "records.sqlite3")},
        "scoring": {"allow_client_mode": "any", "data_dir": str(tmp_path / "data"), "feedback": LEARNING},
    }
    return config


def test_a_running_gateway_refits_uses_the_fit_and_keeps_it_across_a_restart(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path
) -> None:
    config = learning_config(fake_upstream.url, tmp_path)  # type: ignore[attr-defined]
    gateway = start_gateway(config, scorers=[AskingScorer("bc", 0.8)])
    first = teach(gateway, gateway, range(10))
    entry = wait_for_fit(gateway, 10)
    assert entry["combination"] == "default" and "min_labels" in entry["reason"]
    before = ov(gateway, ask(gateway, question(0)).headers["x-trust-id"])
    assert before["details"]["method"] == "default"  # the shipped prior, until a fit beats it

    teach(gateway, gateway, range(10, 20))
    entry = wait_for_fit(gateway, 20)
    assert entry["combination"] == "fitted", entry
    assert entry["fit"]["features"] == ["length"] and entry["fit"]["weights"][0] < 0  # longer: less trusted
    assert entry["auroc"]["fitted"] > entry["auroc"]["ov"] and entry["informative"] is True
    short, long = ask(gateway, question(0)), ask(gateway, question(5))
    assert float(short.headers["x-trust-score"]) > 0.5 > float(long.headers["x-trust-score"])
    details = ov(gateway, short.headers["x-trust-id"])["details"]
    assert details["method"] == "learned" and details["fit_id"] == entry["fit"]["id"]
    assert details["default"] == pytest.approx(before["value"])  # the default's value, kept beside the fit's
    assert ov(gateway, first[0])["details"]["method"] == "default"  # scores already given stay as they were

    gateway.stop()
    restarted = start_gateway(config, scorers=[AskingScorer("bc", 0.8)])
    assert calibration(restarted)[0]["fit"]["id"] == entry["fit"]["id"]
    again = ask(restarted, question(1)).headers["x-trust-id"]
    assert ov(restarted, again)["details"]["fit_id"] == entry["fit"]["id"]
    metrics = httpx.get(f"{restarted.url}/metrics", timeout=10).text
    assert 'trustgate_calibration_fitted{model="fake"} 1.0' in metrics
    assert 'trustgate_calibration_informative{model="fake"} 1.0' in metrics


def test_the_calibration_endpoint_is_for_the_master_key_only(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path
) -> None:
    config = learning_config(fake_upstream.url, tmp_path)  # type: ignore[attr-defined]
    config["trustgate"]["keys"] = [{"key": "sk-admin", "name": "ops", "admin": True}]
    gateway = start_gateway(config, scorers=[AskingScorer("bc", 0.8)])
    refused = httpx.get(f"{gateway.url}/v1/trust/calibration", headers={"authorization": "Bearer sk-admin"})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "master_key_required"
    assert httpx.get(f"{gateway.url}/v1/trust/calibration").status_code == 401
    assert calibration(gateway) == []


def test_two_gateways_on_one_redis_share_the_fit(redis_deployment: RedisDeployment) -> None:
    config = redis_deployment.config()
    config["trustgate"]["scoring"]["feedback"] = LEARNING
    one, two = (redis_deployment.gateway(config) for _ in range(2))  # workers score
    start_ready_worker(redis_deployment.start_worker, config, 0.0)  # scores every job with Trust_BC 0.8
    teach(one, two, range(20))  # asked through one gateway, labelled through the other
    entry = wait_for_fit(two, 20)
    assert entry["combination"] == "fitted"
    assert calibration(one)[0]["fit"]["id"] == entry["fit"]["id"]  # the other replica reads the same fit
    record_id = ask(one, question(0)).headers["x-trust-id"]
    assert ov(two, record_id)["details"]["fit_id"] == entry["fit"]["id"]  # and the worker scores with it


def test_a_model_whose_labels_no_score_separates_is_flagged_not_informative(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path
) -> None:
    config = learning_config(fake_upstream.url, tmp_path)  # type: ignore[attr-defined]
    gateway = start_gateway(config, scorers=[AskingScorer("bc", 0.8)])
    for i in range(20):  # right and wrong answers alternate: 1, 3 and 5 words right, 2, 4 and 6 wrong
        record_id = ask(gateway, question(i)).headers["x-trust-id"]
        wait_for_record(gateway, record_id)
        label(gateway, record_id, i % 2 == 0)
    entry = wait_for_fit(gateway, 20)
    assert entry["informative"] is False and entry["combination"] == "default", entry
    response = ask(gateway, question(0))
    assert response.headers["x-trust-informative"] == "false"
    assert ov(gateway, response.headers["x-trust-id"])["details"]["informative"] is False
    metrics = httpx.get(f"{gateway.url}/metrics", timeout=10).text
    assert 'trustgate_calibration_informative{model="fake"} 0.0' in metrics
