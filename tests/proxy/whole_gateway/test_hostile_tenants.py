"""No tenant can teach the gateway: a team key's labels, relabels and label storms leave every other tenant's
scores and blocks as they were; the keys the operator trusts to label teach the shared fit, in a process of its
own, and a fit that turns a score around is held for the operator.

Over real sockets: a gateway with two team keys (team-b blocked below 0.5) and a labeller key, scores made by
``VerdictScorer`` (an answer in doubt 0.1, any other 0.9) passed through by Table 3, and its refits in their
own processes. Team A once steered team B's scores this way: its good answer went from delivered to blocked,
its low answer from blocked to delivered.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from proxy.trust.refits import REFIT_MODULE
from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.proxy.endpoints.low_trust import HIGH, LOW, VerdictScorer
from tests.proxy.metric_samples import metric
from tests.proxy.scored_gateway import wait_for_record
from tests.servers import ServerThread
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

MESSAGE = "No reliable answer, sorry."
KEYS = [
    {"key": "sk-team-a", "name": "team-a"},
    {"key": "sk-team-b", "name": "team-b"},
    {"key": "sk-curator", "name": "curator", "labeller": True},
    {"key": "sk-ops", "name": "ops", "admin": True},
]


def learning_config(
    upstream_url: str, tmp_path: Path, store: str = "records.sqlite3", **feedback: Any
) -> dict[str, Any]:
    config = gateway_config(upstream_url)
    config["trustgate"] = {
        "keys": KEYS,
        "store": {"path": str(tmp_path / store)},
        "scoring": {
            "mode": "sync",
            "sync_timeout_s": 5,
            "queue": {"scorer_timeout_s": 4},
            "combine": "paper",  # Table 3 passes Trust_BC through: the scores are the scorer's, until a fit
            "data_dir": str(tmp_path / "data"),
            "feedback": {"refit_every": 10, "min_labels": 20, "labels_per_minute": None, **feedback},
            "per_key": {"team-b": {"on_low_trust": {"action": "block", "below": 0.5, "message": MESSAGE}}},
        },
    }
    return config


def auth(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


def ask(server: ServerThread, key: str, question: str) -> httpx.Response:
    response = httpx.post(
        f"{server.url}/v1/chat/completions",
        headers=auth(key),
        timeout=30,
        json={"model": "fake", "messages": [{"role": "user", "content": question}]},
    )
    assert response.status_code == 200 and response.headers["x-trust-status"] == "done", response.text
    return response


def label(server: ServerThread, key: str, record_id: str, correct: bool) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/trust/{record_id}/feedback", headers=auth(key), json={"correct": correct}, timeout=10
    )


def calibration(server: ServerThread) -> list[dict[str, Any]]:
    response = httpx.get(f"{server.url}/v1/trust/calibration", headers=auth(MASTER_KEY), timeout=10)
    assert response.status_code == 200, response.text
    return list(response.json()["data"])


def refit_processes() -> set[int]:
    """Pids of this process's children running a refit."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) != os.getpid():
                continue
            if REFIT_MODULE in (stat.parent / "cmdline").read_bytes().decode(errors="replace"):
                found.add(int(stat.parent.name))
    return found


def wait_for_report(server: ServerThread, labels: int, timeout: float = 90) -> tuple[dict[str, Any], set[int]]:
    """The model's report once a refit on at least ``labels`` labels has stored it, and the refit processes seen."""
    seen: set[int] = set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen |= refit_processes()
        entries = [
            e
            for e in calibration(server)
            if (e["model"], e["key"]) == ("fake", None) and (e["refit_labels"] or 0) >= labels
        ]
        if entries:
            return entries[0], seen
        time.sleep(0.05)
    raise AssertionError(f"no report on {labels} labels: {calibration(server)}")


def team_b_verdicts(server: ServerThread) -> list[tuple[str, str | None]]:
    """Team B's good and low answers: their scores, and what its block did."""
    answers = [ask(server, "sk-team-b", HIGH), ask(server, "sk-team-b", LOW)]
    return [(a.headers["x-trust-score"], a.headers.get("x-trust-action")) for a in answers]


BEFORE = [("0.9000", None), ("0.1000", "blocked")]


def test_a_team_keys_labels_and_relabels_leave_the_other_tenants_scores_and_blocks_as_they_were(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path
) -> None:
    server = start_gateway(learning_config(fake_upstream.url, tmp_path), scorers=[VerdictScorer()])  # type: ignore[attr-defined]
    assert team_b_verdicts(server) == BEFORE
    poisoned = []
    for i in range(13):  # team A labels its own answers the wrong way round
        good, low = ask(server, "sk-team-a", f"({i}) {HIGH}"), ask(server, "sk-team-a", f"({i}) {LOW}")
        assert label(server, "sk-team-a", good.headers["x-trust-id"], False).status_code == 200
        assert label(server, "sk-team-a", low.headers["x-trust-id"], True).status_code == 200
        poisoned.append(good.headers["x-trust-id"])
    for i in range(25):  # and relabels one record over and over
        assert label(server, "sk-team-a", poisoned[0], i % 2 == 0).status_code == 200
    kept = httpx.get(f"{server.url}/v1/trust/{poisoned[0]}", headers=auth("sk-team-a"), timeout=10).json()
    assert kept["feedback"]["by"] == "team-a" and kept["feedback"]["correct"] is True  # kept, and shown
    assert calibration(server) == []  # they teach the shared fit nothing, so it lists none of them as its labels

    # The labeller's labels bring the next refit: it reads only theirs, ten, and keeps the default combination.
    for i in range(10):
        right = ask(server, "sk-curator", f"[{i}] {HIGH}" if i % 2 else f"[{i}] {LOW}")
        assert label(server, "sk-curator", right.headers["x-trust-id"], i % 2 == 1).status_code == 200
    report, _ = wait_for_report(server, labels=10)
    assert (report["labels"], report["combination"]) == (10, "default")
    # the refit process's outcome reaches the gateway as it ends: one refit, the labeller's (team A's brought none)
    assert wait_until(lambda: metric(server, "trustgate_calibration_refits_total", model="fake") == 1)
    assert team_b_verdicts(server) == BEFORE


def test_a_relabel_replaces_the_label_and_never_brings_a_refit_nearer(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path
) -> None:
    config = learning_config(fake_upstream.url, tmp_path, refit_every=5)  # type: ignore[attr-defined]
    server = start_gateway(config, scorers=[VerdictScorer()])
    ids = [ask(server, MASTER_KEY, f"({i}) {HIGH}").headers["x-trust-id"] for i in range(5)]
    for record_id in ids[:4]:
        assert label(server, MASTER_KEY, record_id, True).status_code == 200
    for i in range(25):
        assert label(server, MASTER_KEY, ids[0], i % 2 == 1).status_code == 200
    assert wait_for_record(server, ids[0])["feedback"]["correct"] is False  # the latest label is the record's
    assert label(server, MASTER_KEY, ids[4], True).status_code == 200  # the fifth record: now a refit
    report, _ = wait_for_report(server, labels=5)
    assert (report["labels"], report["positives"]) == (5, 4)  # five records, each once, as last labelled
    assert wait_until(lambda: metric(server, "trustgate_calibration_refits_total", model="fake") == 1)


def test_labels_are_rate_limited_per_key(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path
) -> None:
    config = learning_config(fake_upstream.url, tmp_path, labels_per_minute=3)  # type: ignore[attr-defined]
    server = start_gateway(config, scorers=[VerdictScorer()])
    mine = ask(server, "sk-team-a", HIGH).headers["x-trust-id"]
    theirs = ask(server, "sk-team-b", HIGH).headers["x-trust-id"]
    if 60 - time.time() % 60 < 10:  # the limit is counted in one-minute windows: all of these in one
        time.sleep(60 - time.time() % 60 + 0.05)
    assert [label(server, "sk-team-a", mine, True).status_code for _ in range(3)] == [200] * 3
    refused = label(server, "sk-team-a", mine, False)
    assert refused.status_code == 429 and 0 < float(refused.headers["retry-after"]) <= 60
    error = refused.json()["error"]
    assert (error["type"], error["code"]) == ("rate_limit_error", "feedback_rate_limit_exceeded")
    assert "labels per minute (3)" in error["message"]
    assert wait_for_record(server, mine)["feedback"]["correct"] is True  # the refused label was not stored
    assert label(server, "sk-team-b", theirs, True).status_code == 200  # another key has its own count
    assert metric(server, "trustgate_feedback_refused_total", key="team-a") == 1


def test_a_labellers_fit_that_flips_a_components_sign_is_held_until_the_operator_accepts_it(
    fake_upstream: FakeUpstream,
    start_gateway: Callable[..., ServerThread],
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    config = learning_config(fake_upstream.url, tmp_path, refit_every=20)  # type: ignore[attr-defined]
    server = start_gateway(config, scorers=[VerdictScorer()])
    for i in range(10):  # a labeller's mistake: every label the wrong way round
        good, low = ask(server, "sk-curator", f"({i}) {HIGH}"), ask(server, "sk-curator", f"({i}) {LOW}")
        assert label(server, "sk-curator", good.headers["x-trust-id"], False).status_code == 200
        assert label(server, "sk-curator", low.headers["x-trust-id"], True).status_code == 200
    report, refitters = wait_for_report(server, labels=20)
    assert refitters, "the refit ran in the serving process, not a process of its own"
    held = report["held"]
    assert report["combination"] == "default" and report["fit"] is None  # nothing new is served
    assert held is not None and "bc" in held["reason"] and "negative" in held["reason"]
    assert dict(zip(held["fit"]["features"], held["fit"]["weights"], strict=True))["bc"] < 0
    assert wait_until(lambda: metric(server, "trustgate_calibration_fits_held_total", model="fake") == 1)
    assert metric(server, "trustgate_calibration_held", model="fake") == 1
    assert "is held for the operator" in capfd.readouterr().err  # the refit process's log line
    assert team_b_verdicts(server) == BEFORE

    accept = f"{server.url}/v1/trust/calibration/accept"
    chosen = {"model": "fake", "fit_id": held["fit"]["id"]}
    assert httpx.post(accept, headers=auth("sk-ops"), json=chosen).status_code == 403  # the master key only
    wrong = httpx.post(accept, headers=auth(MASTER_KEY), json={**chosen, "fit_id": "fit_other"})
    assert wrong.status_code == 404 and wrong.json()["error"]["code"] == "held_fit_not_found"
    accepted = httpx.post(accept, headers=auth(MASTER_KEY), json=chosen)
    assert accepted.status_code == 200 and accepted.json()["combination"] == "fitted", accepted.text
    [served] = calibration(server)
    assert served["fit"]["id"] == held["fit"]["id"] and served["held"] is None
    assert metric(server, "trustgate_calibration_held", model="fake") == 0
    good, low = team_b_verdicts(server)  # the operator's choice, served: the fit reads Trust_BC backwards
    assert float(good[0]) < 0.5 < float(low[0]) and good[1] == "blocked"


def test_a_gateway_with_its_own_record_store_never_serves_another_stores_fit(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path
) -> None:
    """Two gateways started from one data directory, each with its own record store."""
    one = start_gateway(learning_config(fake_upstream.url, tmp_path, "one.sqlite3"), scorers=[VerdictScorer()])  # type: ignore[attr-defined]
    two = start_gateway(learning_config(fake_upstream.url, tmp_path, "two.sqlite3"), scorers=[VerdictScorer()])  # type: ignore[attr-defined]
    for i in range(10):
        answer = ask(one, MASTER_KEY, f"({i}) {HIGH}" if i % 2 else f"({i}) {LOW}")
        assert label(one, MASTER_KEY, answer.headers["x-trust-id"], i % 2 == 1).status_code == 200
    report, _ = wait_for_report(one, labels=10)
    assert report["labels"] == 10
    assert calibration(two) == []  # its store has no label, so it has no fit


WORDS = "alpha bravo charlie delta echo foxtrot".split()


def test_under_scope_key_a_keys_labels_teach_a_fit_of_its_own_for_its_own_records_only(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path
) -> None:
    """Team A's answers are right when short: its own fit learns that (length is no component: no sign to keep).
    Team B, whose answers a policy blocks, teaches nothing: a fit of its own could let them through."""
    config = learning_config(fake_upstream.url, tmp_path, scope="key", refit_every=20)  # type: ignore[attr-defined]
    server = start_gateway(config, scorers=[VerdictScorer({"fake": 0.8})])  # one Trust_BC for every answer
    for i in range(20):
        words = 1 + i % 6
        answer = ask(server, "sk-team-a", "Who is " + " ".join(WORDS[:words]) + f" {i}?")
        assert label(server, "sk-team-a", answer.headers["x-trust-id"], words <= 3).status_code == 200
        blocked_key = ask(server, "sk-team-b", f"({i}) {HIGH}")
        assert label(server, "sk-team-b", blocked_key.headers["x-trust-id"], i % 2 == 0).status_code == 200
    deadline = time.monotonic() + 90
    while not (own := [e for e in calibration(server) if e["key"] == "team-a"]):
        assert time.monotonic() < deadline, calibration(server)
        time.sleep(0.1)
    assert own[0]["combination"] == "fitted" and own[0]["fit"]["features"] == ["length"], own
    assert [e["key"] for e in calibration(server)] == ["team-a"]  # no shared fit, none of team B's
    short = ask(server, "sk-team-a", "Who is alpha?").headers["x-trust-id"]
    learned = wait_for_record(server, short)["components"]["ov"]["details"]
    assert learned["method"] == "learned" and learned["fit_id"] == own[0]["fit"]["id"]
    assert team_b_verdicts(server)[0] == ("0.8000", None)  # team B's records keep the default
