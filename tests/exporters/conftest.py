"""Fixtures of the record stores' tests: a real redis-server, and one scenario run against each kind of store."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from exporters.redis_store import RedisRecordStore
from exporters.store import SqliteRecordStore
from tests.exporters.stores import Scenario, Store, emptied_redis
from tests.redis_server import RedisServer


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "redis"])
def run(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[Scenario], None]:
    """Run a scenario against a fresh store of the parametrised kind: both kinds must keep the same contract."""

    @contextlib.asynccontextmanager
    async def opened() -> AsyncIterator[Store]:
        if request.param == "sqlite":
            sqlite = SqliteRecordStore(tmp_path / "records.db", max_age_s=86400, max_records=1000)
            await sqlite.open()
            yield sqlite
            await sqlite.close()
            return
        server: RedisServer = request.getfixturevalue("redis_server")
        async with emptied_redis(server.url) as redis:
            yield RedisRecordStore(redis, prefix="t", ttl_s=86400, max_records=1000)

    def go(scenario: Scenario) -> None:
        async def main() -> None:
            async with opened() as store:
                await scenario(store)

        asyncio.run(main())

    return go
