"""Keys made at run time: what the store keeps of each (never the key), how a key is hashed, and the cache in front.

A key is known by its *token*: HMAC-SHA256 of the key under a secret only the
gateway holds (``generated_keys.hash_secret``, else one derived from the
master key), hex-encoded as LiteLLM's hashed ``token`` is. The store (SQLite
beside the trust records, or Redis for replicas: ``sqlite_keys``,
``redis_keys``) holds tokens and what each key may do; a stolen copy of it
names no key, and without the secret no guess at a key can be checked
against it. The plaintext key exists once, in ``/key/generate``'s answer.

Every write to a store raises its *version*, read together with a key
(``KeyTable.read``). ``KeyCache`` keeps each key it has read with the version
it was read at, and serves it again only while the store's version is still
that one: a key deleted or changed on any replica is refused, or read anew,
by the next request anywhere. What that check costs is the store's: nothing
for SQLite (one gateway owns its file, so the version is in its memory), one
Redis ``GET`` for Redis.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable, Sequence
from typing import Any, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

from scoring import PolicySettings

__all__ = [
    "KeyCache",
    "KeyConflict",
    "KeyHash",
    "KeyTable",
    "StoredKey",
]

T = TypeVar("T")

_TOKEN = re.compile(r"[0-9a-f]{64}")
KEY_PREFIX = "sk-"  # LiteLLM's, so that scripts that tell keys from tokens by it keep working


class StoredKey(BaseModel):
    """A key made at run time, as the store keeps it: its token and what it may do. Field names are LiteLLM's,
    besides TrustGate's own (``name``, ``admin``, ``allow_account_references``, ``trust_policy``)."""

    model_config = ConfigDict(extra="ignore")  # a key written by a later version still reads

    token: str  # the keyed hash of the key (KeyHash.token)
    name: str  # who the key is in records, logs, metrics and spend: its alias, else ``key-`` and its token's start
    key_name: str  # the key abbreviated as LiteLLM shows it (``sk-...wxyz``), to tell keys apart
    key_alias: str | None = None
    models: list[str] | None = None  # None: every model
    max_budget: float | None = None
    budget_duration: str | None = None
    rpm_limit: int | None = None
    tpm_limit: int | None = None
    max_parallel_requests: int | None = None
    metadata: dict[str, Any] = {}
    blocked: bool = False
    user_id: str | None = None  # LiteLLM's labels, kept and shown: there are no users or teams here
    team_id: str | None = None
    expires: float | None = None  # Unix seconds; None: never
    admin: bool = False
    allow_account_references: bool = False
    trust_policy: PolicySettings | None = None  # a ``scoring.per_key`` entry of its own, over the config's levels
    created_at: float
    updated_at: float
    created_by: str
    updated_by: str


Conflict = Literal["token", "name", "full"]


class KeyConflict(Exception):
    """A write the store refused: the token or name is another key's, or the store holds ``max_keys``."""

    def __init__(self, what: Conflict) -> None:
        super().__init__(what)
        self.what = what


class KeyTable(Protocol):
    """Where keys made at run time live. Every call may raise ``StoreUnavailable`` (try again later)."""

    async def version(self) -> int:
        """A number every write changes, as any reader of the store sees it."""
        ...

    async def read(self, token: str) -> tuple[int, StoredKey | None]:
        """The key of ``token`` (None: none) and the store's version, read at one moment."""
        ...

    async def by_name(self, name: str) -> StoredKey | None: ...

    async def all(self) -> list[StoredKey]:
        """Every key, oldest first."""
        ...

    async def add(self, key: StoredKey, max_keys: int) -> None:
        """Keep a new key; ``KeyConflict`` when its token or name is taken or ``max_keys`` are kept already."""
        ...

    async def replace(self, key: StoredKey) -> bool:
        """Write a kept key (same token, same name) over its old self; False when there is none to replace."""
        ...

    async def remove(self, keys: Sequence[StoredKey]) -> list[str]:
        """Delete these keys; the tokens of those that were there."""
        ...

    async def close(self) -> None: ...


class KeyHash:
    """New keys, and the token each is stored and looked up by."""

    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    @classmethod
    def of(cls, hash_secret: str | None, master_key: str | None) -> KeyHash | None:
        """The configured secret, else one derived from the master key (None: neither, so no key can be made)."""
        if hash_secret:
            return cls(hash_secret.encode())
        if master_key:
            return cls(hashlib.blake2b(master_key.encode(), digest_size=32, person=b"tg-key-hash").digest())
        return None

    def token(self, key: str) -> str:
        return hmac.new(self._secret, key.encode(), hashlib.sha256).hexdigest()

    @staticmethod
    def new_key() -> str:
        """A fresh key: 256 random bits."""
        return KEY_PREFIX + secrets.token_urlsafe(32)

    @staticmethod
    def is_token(text: str) -> bool:
        return _TOKEN.fullmatch(text) is not None

    @staticmethod
    def abbreviated(key: str) -> str:
        """The key as LiteLLM's ``key_name`` shows it: its prefix and last four characters."""
        return f"{KEY_PREFIX}...{key[-4:]}"


class KeyCache(Generic[T]):
    """What each key read from ``table`` became (``build``), served again while the table's version is unchanged.

    Holds at most ``limit`` keys, forgetting all of them when full: a key
    forgotten is read again on its next request. Unknown tokens are not kept,
    so a stream of made-up keys cannot fill it.
    """

    def __init__(self, table: KeyTable, build: Callable[[StoredKey], T], limit: int) -> None:
        self._table = table
        self._build = build
        self._limit = limit
        self._version: int | None = None
        self._entries: dict[str, T] = {}

    async def find(self, token: str) -> T | None:
        """The key of ``token`` as the store holds it now (None: no such key)."""
        cached = self._entries.get(token)
        if cached is not None and await self._table.version() == self._version:
            return cached
        version, stored = await self._table.read(token)
        if version != self._version:
            self._entries.clear()
            self._version = version
        if stored is None:
            self._entries.pop(token, None)
            return None
        built = self._build(stored)
        if len(self._entries) >= self._limit:
            self._entries.clear()
        self._entries[token] = built
        return built
