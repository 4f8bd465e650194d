"""What the ``/key/*`` endpoints do, apart from HTTP: make, change, read and delete keys made at run time.

A key is checked as the config checks its keys before anything is written:
its models are ones the gateway serves, its name (its alias, else ``key-``
and the start of its token) is no configured key's and none the gateway
keeps for itself, and its trust policy could act as written — the load-time
checks of ``on_low_trust`` (``low_trust_config``), and a sync wait longer
than a scorer's. A key asked to score where this gateway loads no scorer is
refused rather than silently never scored. A refusal writes nothing.

A key's name owns its trust records, its rate-limit counts and its spend, so
it never changes: ``/key/update`` refuses a new alias. A deleted key's name
may be given to a new key, which then reads the records the old one left (as
a configured key whose secret was replaced does).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from scoring import PolicySettings, require_order

from ..base.budgets import key_budget
from ..base.durations import DurationError, ends_after
from ..base.errors import InvalidRequest, NotFound
from ..config.low_trust_config import low_trust_problem
from ..config.settings import RESERVED_KEY_NAMES, GatewaySettings
from .key_requests import DeleteKeysBody, GenerateKeyBody, KeyListQuery, UpdateKeyBody, key_status
from .key_store import KeyConflict, KeyHash, KeyTable, StoredKey

__all__ = ["KeyManager", "KeyPage"]

# Never-expiring, as LiteLLM reads ``duration`` (``"-1"`` is its older spelling of null).
_NEVER = (None, "-1")


@dataclass(frozen=True)
class KeyPage:
    """A page of keys, as ``/key/list`` counts them."""

    keys: list[StoredKey]
    total_count: int
    current_page: int
    total_pages: int


class KeyManager:
    def __init__(
        self,
        table: KeyTable,
        hasher: KeyHash,
        settings: GatewaySettings,
        *,
        scoring_live: bool,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``scoring_live``: whether this gateway scores any answer (a key asked to score is refused where not)."""
        self._table = table
        self._hasher = hasher
        self._settings = settings
        self._scoring_live = scoring_live
        self._clock = clock
        self._taken = {key.name for key in settings.trustgate.keys} | set(RESERVED_KEY_NAMES)
        self._groups = list(settings.model_groups())
        self._aliases = settings.router_settings.aliases()

    def now(self) -> float:
        return self._clock()

    async def generate(self, body: GenerateKeyBody, by: str) -> tuple[str, StoredKey]:
        """A new key and what the store keeps of it; the key itself is nowhere else."""
        key = self._hasher.new_key()
        token = self._hasher.token(key)
        now = self._clock()
        stored = self._changed(
            StoredKey(
                token=token,
                name=body.key_alias or f"key-{token[:12]}",
                key_name=KeyHash.abbreviated(key),
                key_alias=body.key_alias,
                created_at=now,
                updated_at=now,
                created_by=by,
                updated_by=by,
            ),
            body,
            body.model_fields_set - {"key", "key_alias"},
            now,
        )
        await self._written(self._table.add(stored, self._settings.trustgate.generated_keys.max_keys))
        return key, stored

    async def update(self, body: UpdateKeyBody, by: str) -> StoredKey:
        """The key ``body`` names, changed by the fields it sets (null clears one)."""
        stored = await self._named(body.key, body.key_alias)
        if body.key is not None and "key_alias" in body.model_fields_set and body.key_alias != stored.key_alias:
            raise InvalidRequest(
                "key_alias cannot change: it is the key's name, which its trust records, limits and spend are kept "
                "under; make a new key with the new alias and delete this one",
                param="key_alias",
                code="key_alias_immutable",
            )
        now = self._clock()
        changed = self._changed(
            stored.model_copy(update={"updated_at": now, "updated_by": by}),
            body,
            body.model_fields_set - {"key", "key_alias"},
            now,
        )
        if not await self._table.replace(changed):  # deleted meanwhile
            raise _no_such_key(changed.token)
        return changed

    async def delete(self, body: DeleteKeysBody) -> list[str]:
        """Delete every key ``body`` names, or none when one of them is not there; LiteLLM's ``deleted_keys``: the
        tokens of the keys named by key, the aliases as given."""
        tokens = [self._token_of(given) for given in body.keys or []]
        doomed: dict[str, StoredKey] = {}
        for token in tokens:
            doomed[token] = _found(await self._by_token(token), _no_such_key(token))
        for alias in body.key_aliases or []:
            found = _found(await self._by_alias(alias), _no_such_alias(alias))
            doomed[found.token] = found
        await self._table.remove(list(doomed.values()))
        return [*tokens, *(body.key_aliases or [])]

    async def info(self, key_or_token: str) -> StoredKey:
        token = self._token_of(key_or_token)
        return _found(await self._by_token(token), _no_such_key(token))

    async def page(self, query: KeyListQuery) -> KeyPage:
        """A page of the keys ``query`` selects, in its order (newest first unless it says otherwise)."""
        now = self._clock()
        keys = [] if query.matches_nothing else await self._table.all()
        keys = [
            key
            for key in keys
            if (query.key_alias is None or key.key_alias == query.key_alias)
            and (query.key_hash is None or key.token == query.key_hash)
            and (query.user_id is None or key.user_id == query.user_id)
            and (query.team_id is None or key.team_id == query.team_id)
            and (query.status is None or key_status(key, now) == query.status)
            and (
                query.expires is None
                or (key.expires is not None and key.expires <= now) == (query.expires == "expired")
            )
        ]
        field = query.sort_by or "created_at"
        present = [key for key in keys if getattr(key, field) is not None]
        present.sort(key=lambda key: getattr(key, field), reverse=query.sort_order == "desc")
        ordered = present + [key for key in keys if getattr(key, field) is None]  # unset last, as SQL's NULLS LAST
        start = (query.page - 1) * query.size
        pages = max(1, -(-len(ordered) // query.size))
        return KeyPage(ordered[start : start + query.size], len(ordered), query.page, pages)

    def _token_of(self, key_or_token: str) -> str:
        """A key's token, given the key or the token itself (as LiteLLM takes either)."""
        return key_or_token if KeyHash.is_token(key_or_token) else self._hasher.token(key_or_token)

    async def _named(self, key: str | None, alias: str | None) -> StoredKey:
        if key is not None:
            token = self._token_of(key)
            return _found(await self._by_token(token), _no_such_key(token))
        return _found(await self._by_alias(alias or ""), _no_such_alias(alias or ""))

    async def _by_token(self, token: str) -> StoredKey | None:
        return (await self._table.read(token))[1]

    async def _by_alias(self, alias: str) -> StoredKey | None:
        found = await self._table.by_name(alias)
        return found if found is not None and found.key_alias == alias else None

    async def _written(self, write: Awaitable[None]) -> None:
        """A new key's write, its refusals as the client's errors."""
        try:
            await write
        except KeyConflict as exc:
            if exc.what == "full":
                limit = self._settings.trustgate.generated_keys.max_keys
                raise InvalidRequest(
                    f"The key store holds its most keys ({limit}, trustgate.generated_keys.max_keys): delete one first",
                    code="key_limit_reached",
                    status_code=409,
                ) from None
            raise InvalidRequest(
                "key_alias is another key's: each key's alias is its own",
                param="key_alias",
                code="key_alias_taken",
                status_code=409,
            ) from None

    def _changed(
        self, stored: StoredKey, body: GenerateKeyBody | UpdateKeyBody, fields: set[str], now: float
    ) -> StoredKey:
        """``stored`` with ``fields`` of ``body`` set as LiteLLM sets them, checked as a whole."""
        update: dict[str, Any] = {}
        for field in fields:
            value = getattr(body, field)
            if field == "duration":
                update["expires"] = None if value in _NEVER else _ends(value, now)
            elif field == "models":
                update["models"] = value or None  # LiteLLM's []: every model
            elif field in ("blocked", "admin", "allow_account_references"):
                update[field] = bool(value)
            elif field == "metadata":
                update["metadata"] = value or {}
            else:
                update[field] = value
        changed = stored.model_copy(update=update)
        self._check(changed)
        return changed

    def _check(self, key: StoredKey) -> None:
        """Refuse a key the config would refuse as one of its own keys (400, naming the field)."""
        if key.name in self._taken:
            raise InvalidRequest(
                f"key_alias `{key.name}` is a configured key's name, or one the gateway keeps for itself",
                param="key_alias",
                code="key_alias_taken",
                status_code=409,
            )
        known = set(self._groups) | set(self._aliases)
        unknown = [name for name in key.models or [] if name not in known]
        if unknown:
            raise InvalidRequest(f"models: unknown model `{unknown[0]}`", param="models", code="model_not_found")
        if key.budget_duration is not None and key.max_budget is None:
            raise InvalidRequest(
                "budget_duration needs a max_budget: it says when that budget starts again",
                param="budget_duration",
                code="invalid_key_request",
            )
        try:
            key_budget(key.max_budget, key.budget_duration)
        except ValueError as exc:
            raise InvalidRequest(str(exc), param="budget_duration", code="invalid_key_request") from None
        if key.trust_policy is not None:
            self._check_policy(key.name, key.models, key.trust_policy)

    def _check_policy(self, name: str, models: Sequence[str] | None, policy: PolicySettings) -> None:
        scoring = self._settings.trustgate.scoring
        if not self._scoring_live and policy.mode in ("sync", "async"):
            raise InvalidRequest(
                f"trust_policy.mode {policy.mode}: this gateway loads no scorer (no request could be scored when it "
                "started), so no answer of this key would be scored",
                param="trust_policy.mode",
                code="invalid_trust_policy",
            )
        try:
            if policy.sync_timeout_s is not None:
                require_order(
                    ("queue.scorer_timeout_s", scoring.queue.scorer_timeout_s),
                    ("trust_policy.sync_timeout_s", policy.sync_timeout_s),
                    "a scorer still running when a sync request stops waiting leaves that request pending",
                    strictly=True,
                )
        except ValueError as exc:
            raise InvalidRequest(str(exc), param="trust_policy.sync_timeout_s", code="invalid_trust_policy") from None
        problem = low_trust_problem(
            scoring, self._groups, self._aliases, {name: models}, {name: policy}, where="trust_policy.on_low_trust"
        )
        if problem is not None:
            raise InvalidRequest(problem, param="trust_policy.on_low_trust", code="invalid_trust_policy")


def _found(key: StoredKey | None, missing: NotFound) -> StoredKey:
    if key is None:
        raise missing
    return key


def _ends(duration: str, now: float) -> float:
    try:
        return ends_after(duration, now)
    except DurationError as exc:
        raise InvalidRequest(f"duration: {exc}", param="duration", code="invalid_key_request") from None


def _no_such_key(token: str) -> NotFound:
    """Named by its token, never by the key it was given as."""
    return NotFound(f"No key with token `{token}`", param="key", code="key_not_found")


def _no_such_alias(alias: str) -> NotFound:
    return NotFound(f"No key with key_alias `{alias}`", param="key_alias", code="key_not_found")
