"""POST /v1/trust/{id}/feedback over HTTP, on SQLite and on a real Redis: labels kept, scoped like reads,
bad input refused in OpenAI's error shape with nothing stored, each label counted and emitted."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.trace import NoOpTracerProvider

from exporters import Telemetry
from scoring.types import MAX_FEEDBACK_COMMENT, TrustRecord, TrustStatus
from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.proxy.metric_samples import samples
from tests.proxy.scored_gateway import AskingScorer, chat, scoring_config
from tests.redis_server import RedisServer
from tests.servers import ServerThread
from tests.stored_records import stored, stored_in_redis

pytestmark = pytest.mark.integration

KEYS = [{"key": "sk-alice", "name": "alice"}, {"key": "sk-bob", "name": "bob"}]
STATUSES: tuple[TrustStatus, ...] = ("done", "failed", "pending", "skipped", "shed")


def records() -> list[TrustRecord]:
    """One of alice's records per status (id = the status), and one done record of bob's."""
    now = time.time()
    return [
        *(
            TrustRecord(id=status, status=status, model="fake", owner="alice", score=0.6, created_at=now - 10)
            for status in STATUSES
        ),
        TrustRecord(id="bobs", status="done", model="fake", owner="bob", score=0.2, created_at=now - 5),
    ]


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server.url
    server.stop()


@pytest.fixture
def logs() -> Iterator[tuple[InMemoryLogRecordExporter, Telemetry]]:
    """Evaluation events kept in memory, and the gateway's telemetry that emits them."""
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    yield exporter, Telemetry(NoOpTracerProvider().get_tracer("test"), provider.get_logger("test"))
    provider.shutdown()


@pytest.fixture(params=["sqlite", "redis"])
def labelling_gateway(
    request: pytest.FixtureRequest,
    fake_upstream: FakeUpstream,
    logs: tuple[InMemoryLogRecordExporter, Telemetry],
    start_gateway: Callable[..., ServerThread],
    tmp_path: Path,
) -> ServerThread:
    """A gateway over records(), on either store, with its evaluation events recorded."""
    section: dict[str, Any] = {"keys": KEYS}
    if request.param == "sqlite":
        path = tmp_path / "feedback.sqlite3"
        stored(path, records())
        section["store"] = {"path": str(path)}
    else:
        url = request.getfixturevalue("redis_url")
        stored_in_redis(url, records())
        section["scoring"] = {"queue": {"backend": "redis", "redis_url": url}}
    return start_gateway(
        gateway_config(fake_upstream.url, trustgate=section),  # type: ignore[attr-defined]
        telemetry=logs[1],
    )


def send(
    server: ServerThread, record_id: str, body: Any = None, key: str = "sk-alice", *, content: bytes | None = None
) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/trust/{record_id}/feedback",
        headers={"authorization": f"Bearer {key}"},
        json=body if content is None else None,
        content=content,
        timeout=10,
    )


def read(server: ServerThread, record_id: str, key: str = MASTER_KEY) -> httpx.Response:
    return httpx.get(f"{server.url}/v1/trust/{record_id}", headers={"authorization": f"Bearer {key}"}, timeout=10)


def feedback_count(server: ServerThread, correct: str) -> float:
    return samples(server).get(("trustgate_feedback_total", frozenset({("model", "fake"), ("correct", correct)})), 0.0)


def nothing_labelled(server: ServerThread) -> bool:
    every = {record.id for record in records()}
    return all(read(server, record_id).json()["feedback"] is None for record_id in every)


def test_the_owner_labels_and_the_latest_label_is_kept(
    labelling_gateway: ServerThread, logs: tuple[InMemoryLogRecordExporter, Telemetry]
) -> None:
    before = time.time()
    first = send(labelling_gateway, "done", {"correct": False, "score": 0.25, "comment": "It is Canberra."})
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["id"] == "done" and body["score"] == 0.6
    assert body["feedback"]["correct"] is False and body["feedback"]["score"] == 0.25
    assert body["feedback"]["comment"] == "It is Canberra." and body["feedback"]["labelled_at"] >= before
    assert read(labelling_gateway, "done", key="sk-alice").json()["feedback"] == body["feedback"]

    second = send(labelling_gateway, "done", {"correct": True})  # relabelled: the latest label is the one kept
    assert second.status_code == 200
    kept = read(labelling_gateway, "done").json()["feedback"]
    assert kept["correct"] is True and kept["score"] is None and kept["comment"] is None
    assert kept["labelled_at"] >= body["feedback"]["labelled_at"]
    listed = httpx.get(
        f"{labelling_gateway.url}/v1/trust",
        params={"labelled": "true"},
        headers={"authorization": "Bearer sk-alice"},
        timeout=10,
    ).json()["data"]
    assert [r["id"] for r in listed] == ["done"]

    assert feedback_count(labelling_gateway, "false") == 1 and feedback_count(labelling_gateway, "true") == 1
    events = [dict(r.log_record.attributes or {}) for r in logs[0].get_finished_logs()]
    labels = [a for a in events if a["gen_ai.evaluation.name"] == "trustgate.user_feedback"]
    assert [
        (
            a["gen_ai.evaluation.score.value"],
            a["gen_ai.evaluation.score.label"],
            a["trustgate.trust.id"],
            a["gen_ai.request.model"],
        )
        for a in labels
    ] == [(0.25, "incorrect", "done", "fake"), (1.0, "correct", "done", "fake")]


def test_a_failed_record_takes_a_label_and_the_master_key_labels_any(labelling_gateway: ServerThread) -> None:
    assert send(labelling_gateway, "failed", {"correct": True}).status_code == 200
    assert send(labelling_gateway, "bobs", {"correct": False}, key=MASTER_KEY).status_code == 200
    assert read(labelling_gateway, "bobs").json()["feedback"]["correct"] is False


def test_another_tenant_gets_the_404_of_an_unknown_id(labelling_gateway: ServerThread) -> None:
    crossing = send(labelling_gateway, "done", {"correct": True}, key="sk-bob")
    unknown = send(labelling_gateway, "no-such-record", {"correct": True}, key="sk-bob")
    assert crossing.status_code == unknown.status_code == 404
    assert crossing.json()["error"] | {"message": ""} == unknown.json()["error"] | {"message": ""}
    assert crossing.json()["error"] == read(labelling_gateway, "done", key="sk-bob").json()["error"]
    assert crossing.json()["error"]["type"] == "not_found_error"
    assert send(labelling_gateway, "bobs", {"correct": True}, key="sk-alice").status_code == 404
    assert nothing_labelled(labelling_gateway)
    assert read(labelling_gateway, "no-such-record").status_code == 404  # no record was made for it
    assert feedback_count(labelling_gateway, "true") == 0


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"correct": "true"}, "correct"),
        ({"correct": 1}, "correct"),
        ({"correct": None}, "correct"),
        ({}, "correct"),
        ({"correct": True, "score": 1.5}, "score"),
        ({"correct": True, "score": -0.1}, "score"),
        ({"correct": True, "score": "0.5"}, "score"),
        ({"correct": True, "score": True}, "score"),
        ({"correct": True, "comment": "x" * (MAX_FEEDBACK_COMMENT + 1)}, "comment"),
        ({"correct": True, "comment": 42}, "comment"),
        ({"correct": True, "labelled_at": 0}, "labelled_at"),
        ({"correct": True, "colour": "red"}, "colour"),
        ([True], None),
    ],
)
def test_bad_input_is_a_400_and_stores_nothing(labelling_gateway: ServerThread, body: Any, param: str | None) -> None:
    response = send(labelling_gateway, "done", body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == "invalid_feedback"
    assert error["param"] == param
    assert nothing_labelled(labelling_gateway)
    assert feedback_count(labelling_gateway, "true") == 0


def test_a_body_that_is_not_json_or_too_large_is_refused(labelling_gateway: ServerThread) -> None:
    not_json = send(labelling_gateway, "done", content=b"correct=true")
    assert not_json.status_code == 400 and not_json.json()["error"]["code"] == "invalid_feedback"
    huge = send(labelling_gateway, "done", content=b'{"correct": true, "comment": "' + b"x" * 100_000 + b'"}')
    assert huge.status_code == 413 and huge.json()["error"]["type"] == "invalid_request_error"
    assert nothing_labelled(labelling_gateway)


@pytest.mark.parametrize("status", ["pending", "skipped", "shed"])
def test_a_record_that_was_not_scored_is_a_409(labelling_gateway: ServerThread, status: str) -> None:
    response = send(labelling_gateway, status, {"correct": True})
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == "trust_record_not_scored"
    assert nothing_labelled(labelling_gateway)
    assert feedback_count(labelling_gateway, "true") == 0


def test_without_a_key_is_a_401(labelling_gateway: ServerThread) -> None:
    response = httpx.post(f"{labelling_gateway.url}/v1/trust/done/feedback", json={"correct": True}, timeout=10)
    assert response.status_code == 401
    assert nothing_labelled(labelling_gateway)


def test_a_record_still_being_scored_is_a_409_then_takes_its_label(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """Pending in this gateway's own queue, not in the store yet: still "being scored", not "unknown"."""
    server = start_gateway(
        scoring_config(fake_upstream.url),  # type: ignore[attr-defined]
        scorers=[AskingScorer("bc", 0.9, delay=1.0)],
    )
    record_id = chat(server).headers["x-trust-id"]
    pending = send(server, record_id, {"correct": True}, key=MASTER_KEY)
    assert pending.status_code == 409 and "still being scored" in pending.json()["error"]["message"]
    deadline = time.monotonic() + 10
    while read(server, record_id).json()["status"] == "pending" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert send(server, record_id, {"correct": True}, key=MASTER_KEY).status_code == 200
    assert read(server, record_id).json()["feedback"]["correct"] is True
