"""Records written before the RAG details were typed (statements, claims and citation checks as plain JSON
objects) still read from both stores, into the typed models, and read back exactly as they were written."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.explain import explain
from exporters.redis_store import RedisRecordStore, record_key
from exporters.store import SqliteRecordStore
from scoring.types import RAGDetails, RecordScope, TrustRecord
from tests.redis_server import RedisServer

# A "rag" component in the untyped shape older records carry: one judged statement citing two documents (with
# ALCE's citation checks), one refusing statement that was not judged, and the client's reference claims.
OLD_RAG_DETAILS = {
    "documents": 3,
    "judge": "llm",
    "kind": "partial",
    "refusal": False,
    "partial_refusal": True,
    "statements": [
        {
            "text": "The tower is 330 m tall [1][3].",
            "citations": [1, 3],
            "out_of_range": [],
            "refusal": False,
            "judged": True,
            "checked": [1, 3],
            "joint": "support",
            "grounding": "support",
            "recall": 1.0,
            "precision": [1, 2],
            "citation_checks": [
                {"id": 1, "alone": "support", "without": None, "relevant": True},
                {"id": 3, "alone": "neutral", "without": "support", "relevant": False},
            ],
        },
        {
            "text": "The documents do not say who built it [9].",
            "citations": [],
            "out_of_range": [9],
            "refusal": True,
            "judged": False,
        },
    ],
    "statements_judged": 1,
    "citations_judged": 2,
    "citation_recall": 1.0,
    "citation_precision": 0.5,
    "citation_f1": 0.6667,
    "groundedness": 1.0,
    "answerable": True,
    "answerable_from": "label",
    "refusal_grounded": 1.0,
    "reference_claims": 2,
    "claims": [{"claim": "It is 330 m tall.", "label": "support"}, {"claim": "Eiffel built it.", "label": None}],
    "claim_correctness": 0.5,
    "words": 14,
    "judge_errors": [],
    "trust_parts": {"citation_f1": 0.6667, "groundedness": 1.0, "refusal_grounded": 1.0, "claim_correctness": 0.5},
}
OLD_RECORD = json.dumps(
    {
        "id": "old-rag",
        "status": "done",
        "model": "fake",
        "owner": "alice",
        "score": 0.79,
        "label": "trusted",
        "created_at": time.time(),
        "question": "How tall is the tower?",
        "answer": "The tower is 330 m tall [1][3].",
        "components": {
            "rag": {
                "component": "rag",
                "value": 0.79,
                "label": "partial",
                "details": OLD_RAG_DETAILS,
                "upstream_calls": 5,
                "duration_s": 0.2,
                "error": None,
            }
        },
    }
)
ALL = RecordScope.everyone()


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path).start()
    yield server
    server.stop()


def read_from_sqlite(path: Path) -> TrustRecord | None:
    async def scenario() -> TrustRecord | None:
        store = SqliteRecordStore(path, max_age_s=3600, max_records=10)
        await store.open()  # the schema, as any store has it
        with sqlite3.connect(path) as db:  # the row as the earlier version wrote it
            db.execute(
                "INSERT INTO trust_records (id, created_at, record, owner) VALUES (?, ?, ?, ?)",
                ("old-rag", time.time(), OLD_RECORD, "alice"),
            )
        try:
            return await store.get("old-rag", scope=ALL)
        finally:
            await store.close()

    return asyncio.run(scenario())


def read_from_redis(server: RedisServer) -> TrustRecord | None:
    server.client().hset(record_key("trustgate", "old-rag"), mapping={"status": "done", "record": OLD_RECORD})

    async def scenario() -> TrustRecord | None:
        from redis.asyncio import Redis

        redis = Redis.from_url(server.url, decode_responses=True, socket_timeout=2)
        try:
            return await RedisRecordStore(redis, prefix="trustgate", ttl_s=600).get("old-rag", scope=ALL)
        finally:
            await redis.aclose()

    return asyncio.run(scenario())


def check_typed_and_unchanged(record: TrustRecord | None) -> None:
    assert record is not None
    details = record.components["rag"].details
    assert isinstance(details, RAGDetails)
    judged, refusing = details.statements
    assert (judged.citations, judged.joint, judged.precision) == ([1, 3], "support", [1, 2])
    assert [(c.id, c.alone, c.without, c.relevant) for c in judged.citation_checks or []] == [
        (1, "support", None, True),
        (3, "neutral", "support", False),
    ]
    assert (refusing.refusal, refusing.judged, refusing.out_of_range, refusing.grounding) == (True, False, [9], None)
    assert [(c.claim, c.label) for c in details.claims] == [
        ("It is 330 m tall.", "support"),
        ("Eiffel built it.", None),
    ]
    # Read back as written: no key added (an unjudged statement has no judge's fields), none lost.
    assert json.loads(record.model_dump_json())["components"]["rag"]["details"] == OLD_RAG_DETAILS
    rows = explain(record).rag
    assert rows is not None
    assert [(s.citations, s.grounding, s.recall, s.precision) for s in rows.statements] == [
        (["1", "3"], "support", 1.0, [1, 2]),
        ([], None, None, None),
    ]


@pytest.mark.unit
def test_an_old_rag_record_reads_from_sqlite(tmp_path: Path) -> None:
    check_typed_and_unchanged(read_from_sqlite(tmp_path / "records.sqlite3"))


@pytest.mark.integration
def test_an_old_rag_record_reads_from_redis(redis_server: RedisServer) -> None:
    check_typed_and_unchanged(read_from_redis(redis_server))
