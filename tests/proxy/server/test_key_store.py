"""The key store's parts in one process: the keyed hash, the SQLite table, the cache that asks a store only whether
anything changed, LiteLLM's bodies as they are read, and key lifetimes in LiteLLM's words."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from proxy.base.durations import DurationError, ends_after
from proxy.base.errors import InvalidRequest
from proxy.server.key_requests import DeleteKeysBody, GenerateKeyBody, UpdateKeyBody, parse_body
from proxy.server.key_store import KeyCache, KeyConflict, KeyHash, StoredKey
from proxy.server.sqlite_keys import SqliteKeyTable

pytestmark = pytest.mark.unit


def stored(name: str, token: str | None = None, **fields: Any) -> StoredKey:
    return StoredKey(
        token=token or KeyHash(b"s").token(name),
        name=name,
        key_name="sk-...abcd",
        updated_at=1.0,
        created_by="master",
        updated_by="master",
        **{"created_at": 1.0, **fields},
    )


def test_a_key_is_known_by_a_keyed_hash() -> None:
    key = KeyHash.new_key()
    one, other = KeyHash(b"one"), KeyHash(b"other")
    assert key.startswith("sk-") and len(key) >= 40 and KeyHash.new_key() != key
    assert one.token(key) == one.token(key) != other.token(key), "the secret is part of the hash"
    assert KeyHash.is_token(one.token(key)) and not KeyHash.is_token(key)
    derived = KeyHash.of(None, "sk-master")
    assert derived is not None and derived.token(key) == KeyHash.of(None, "sk-master").token(key)  # type: ignore[union-attr]
    assert derived.token(key) != KeyHash.of("secret", "sk-master").token(key)  # type: ignore[union-attr]
    assert KeyHash.of(None, None) is None


def test_the_sqlite_table_keeps_names_and_tokens_unique_and_counts_its_writes(tmp_path: Path) -> None:
    async def run() -> None:
        table = SqliteKeyTable(tmp_path / "records.sqlite3")
        await table.open()
        try:
            first = stored("a")
            await table.add(first, max_keys=2)
            for clash, what in [(stored("a", token="f" * 64), "name"), (stored("b", token=first.token), "token")]:
                with pytest.raises(KeyConflict) as refused:
                    await table.add(clash, max_keys=2)
                assert refused.value.what == what
            await table.add(stored("b", created_at=2.0), max_keys=2)
            with pytest.raises(KeyConflict) as full:
                await table.add(stored("c"), max_keys=2)
            assert full.value.what == "full"
            before = await table.version()
            assert await table.replace(first.model_copy(update={"rpm_limit": 3}))
            assert not await table.replace(stored("nobody"))
            assert await table.version() > before
            version, found = await table.read(first.token)
            assert version == await table.version() and found is not None and found.rpm_limit == 3
            assert (await table.by_name("b")) is not None and [k.name for k in await table.all()] == ["a", "b"]
            assert await table.remove([first, stored("nobody")]) == [first.token]
            assert (await table.read(first.token))[1] is None
        finally:
            await table.close()

    asyncio.run(run())


class CountingTable:
    """A key table in memory that counts how it is asked."""

    def __init__(self) -> None:
        self.keys: dict[str, StoredKey] = {}
        self.current = 0
        self.versions = 0
        self.reads = 0

    async def version(self) -> int:
        self.versions += 1
        return self.current

    async def read(self, token: str) -> tuple[int, StoredKey | None]:
        self.reads += 1
        return self.current, self.keys.get(token)

    def write(self, key: StoredKey | None, token: str) -> None:
        if key is None:
            self.keys.pop(token, None)
        else:
            self.keys[token] = key
        self.current += 1

    async def by_name(self, name: str) -> StoredKey | None:
        raise NotImplementedError

    async def all(self) -> list[StoredKey]:
        raise NotImplementedError

    async def add(self, key: StoredKey, max_keys: int) -> None:
        raise NotImplementedError

    async def replace(self, key: StoredKey) -> bool:
        raise NotImplementedError

    async def remove(self, keys: Sequence[StoredKey]) -> list[str]:
        raise NotImplementedError

    async def close(self) -> None:
        """Nothing to close."""


def test_the_cache_serves_a_key_while_the_store_is_unchanged_and_asks_again_after_any_write() -> None:
    async def run() -> None:
        table = CountingTable()
        cache = KeyCache(table, lambda key: key.rpm_limit, limit=2)
        table.write(stored("a", token="a", rpm_limit=1), "a")
        assert await cache.find("a") == 1 and table.reads == 1
        for _ in range(5):
            assert await cache.find("a") == 1
        assert (table.reads, table.versions) == (1, 5), "a cached key costs one version read, nothing more"

        table.write(stored("a", token="a", rpm_limit=2), "a")
        assert await cache.find("a") == 2, "changed anywhere: read again"
        table.write(None, "a")
        assert await cache.find("a") is None, "deleted anywhere: refused at once"

        reads = table.reads
        for _ in range(3):
            assert await cache.find("unknown") is None
        assert table.reads == reads + 3, "an unknown token is never cached, so made-up keys cannot fill the cache"

        for token in "xyz":
            table.write(stored(token, token=token, rpm_limit=9), token)
        for token in "xyz":
            assert await cache.find(token) == 9
        assert len(cache._entries) <= 2, "bounded"

    asyncio.run(run())


def test_litellm_bodies_are_read_as_litellm_reads_them() -> None:
    body = parse_body(
        GenerateKeyBody,
        b'{"models": [], "spend": 0.0, "team_id": null, "config": {}, "key_type": "llm_api", "auto_rotate": false,'
        b' "max_budget": "", "key_alias": "a"}',
    )
    assert body.models == [] and body.max_budget is None and body.key_alias == "a"
    for raw, param in [
        (b'{"spend": false}', None),  # a flag where a number is meant asks for something
        (b'{"auto_rotate": 0}', None),
        (b'{"tags": ["x"]}', None),
        (b'{"key_alias": " padded"}', "key_alias"),
        (b'{"metadata": {"x": "' + b"y" * 20_000 + b'"}}', "metadata"),
        (b'{"trust_policy": {"sample_rate": 2}}', "trust_policy.sample_rate"),
        (b"[]", None),
        (b"{not json", None),
    ]:
        with pytest.raises(InvalidRequest) as refused:
            parse_body(GenerateKeyBody, raw)
        assert refused.value.param == param, (raw[:40], refused.value.message)
    update = parse_body(UpdateKeyBody, b'{"key": "sk-x", "metadata": null}')
    assert update.model_fields_set == {"key", "metadata"}, "an explicit null is a change; a field left out is none"
    with pytest.raises(InvalidRequest):
        parse_body(UpdateKeyBody, b'{"rpm_limit": 3}')  # names no key
    with pytest.raises(InvalidRequest):
        parse_body(DeleteKeysBody, b'{"keys": []}')


def test_key_lifetimes_in_litellm_words() -> None:
    start = datetime(2024, 1, 31, 12, tzinfo=UTC).timestamp()
    assert ends_after("30s", start) == start + 30
    assert ends_after("2h", start) == start + 7200
    assert ends_after("1w", start) == start + 7 * 86400
    assert datetime.fromtimestamp(ends_after("1mo", start), UTC) == datetime(2024, 2, 29, 12, tzinfo=UTC)
    assert datetime.fromtimestamp(ends_after("13mo", start), UTC) == datetime(2025, 2, 28, 12, tzinfo=UTC)
    for wrong in ("", "30", "1y", "0d", "-1d", "1.5h", "99999999999d", "5000mo"):
        with pytest.raises(DurationError):
            ends_after(wrong, start)
