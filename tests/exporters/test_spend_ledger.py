"""The spend ledger over real stores: SQLite beside the records, and Redis shared by every process.

A process adds spend in memory and sees it at once; another sees it once the
first has flushed and it has refreshed; the spend survives a restart; a flush
the store refuses keeps its spend for the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from redis.asyncio import Redis

from exporters import RedisSpendStore, SpendLedger, SpendStore, Spent, SqliteSpendStore, key_subject, model_subject
from tests.redis_server import RedisServer

pytestmark = pytest.mark.integration


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path).start()
    yield server
    server.stop()


@contextlib.asynccontextmanager
async def _store(kind: str, tmp_path: Path, redis_url: str) -> AsyncIterator[SpendStore]:
    """A store as a process opens it: a connection of its own to the shared database or Redis."""
    if kind == "sqlite":
        sqlite = SqliteSpendStore(tmp_path / "records.sqlite3")
        await sqlite.open()
        try:
            yield sqlite
        finally:
            await sqlite.close()
        return
    redis = Redis.from_url(redis_url, socket_timeout=2.0)
    try:
        yield RedisSpendStore(redis, prefix="trustgate:spend:")
    finally:
        await redis.aclose()


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_one_process_sees_its_spend_at_once_and_another_after_a_flush(
    kind: str, tmp_path: Path, redis_server: RedisServer
) -> None:
    async def scenario() -> list[Spent]:
        async with _store(kind, tmp_path, redis_server.url) as first, _store(kind, tmp_path, redis_server.url) as other:
            gateway, worker = SpendLedger(first), SpendLedger(other)
            since = gateway.now() - 60
            model = model_subject("m")
            seen = [await gateway.spent(model, since), await worker.spent(model, since)]  # both watch the span
            gateway.charge(key="team", model="m", purpose="answer", usd=0.25)
            worker.charge(key="team", model="m", purpose="scoring", usd=0.5)
            seen += [await gateway.spent(model, since), await worker.spent(model, since)]
            await gateway.flush()
            await worker.flush()  # writes its own, then reads again what it watches
            seen += [await worker.spent(model, since), await gateway.spent(model, since)]
            await gateway.flush()
            seen += [await gateway.spent(model, since), await gateway.spent(key_subject("team"), since)]
            return seen

    assert asyncio.run(scenario()) == [
        Spent(),
        Spent(),
        Spent(answer_usd=0.25),  # the gateway's own, unflushed
        Spent(scoring_usd=0.5),  # the worker's own
        Spent(answer_usd=0.25, scoring_usd=0.5),  # both, from the store, counted once
        Spent(answer_usd=0.25),  # the gateway refreshed before the worker flushed ...
        Spent(answer_usd=0.25, scoring_usd=0.5),  # ... and sees it after its next refresh
        Spent(answer_usd=0.25, scoring_usd=0.5),  # the key's: its answers and their scoring
    ]


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_spend_outlives_the_process_that_spent_it(kind: str, tmp_path: Path, redis_server: RedisServer) -> None:
    async def spend_then_close() -> float:
        async with _store(kind, tmp_path, redis_server.url) as store:
            ledger = SpendLedger(store)
            await ledger.start()
            ledger.charge(key="team", model="m", purpose="answer", usd=1.5)
            await ledger.close()  # flushes what is left
            return ledger.now()

    async def read(since: float, next_minute: float) -> tuple[Spent, Spent]:
        async with _store(kind, tmp_path, redis_server.url) as store:
            ledger = SpendLedger(store)
            return await ledger.spent(key_subject("team"), since), await ledger.spent(key_subject("team"), next_minute)

    spent_at = asyncio.run(spend_then_close())
    next_minute = spent_at // 60 * 60 + 60
    assert asyncio.run(read(spent_at - 60, next_minute)) == (Spent(answer_usd=1.5), Spent())


def test_a_flush_the_store_refuses_keeps_its_spend_for_the_next(tmp_path: Path) -> None:
    servers = [RedisServer(tmp_path).start()]
    failures: list[str] = []

    async def scenario() -> list[Spent]:
        redis = Redis.from_url(servers[0].url, socket_timeout=1.0, socket_connect_timeout=1.0)
        try:
            ledger = SpendLedger(RedisSpendStore(redis, prefix="p:"), on_error=failures.append)
            since = ledger.now() - 60
            seen = [await ledger.spent(model_subject("m"), since)]  # read once: the ledger keeps it fresh
            servers[0].stop()
            ledger.charge(key=None, model="m", purpose="scoring", usd=2.0)
            await ledger.flush()  # refused: kept
            seen.append(await ledger.spent(model_subject("m"), since))
            servers.append(RedisServer(tmp_path, port=servers[0].port).start())
            await ledger.flush()
            seen.append(await SpendLedger(RedisSpendStore(redis, prefix="p:")).spent(model_subject("m"), since))
            return seen
        finally:
            await redis.aclose()

    try:
        assert asyncio.run(scenario()) == [Spent(), Spent(scoring_usd=2.0), Spent(scoring_usd=2.0)]
        assert failures == ["write"]
    finally:
        for server in servers:
            server.stop()
