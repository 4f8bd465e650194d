"""Bearer-key authentication: the master key, one of the configured client keys, or a key made at run time.

Configured keys are compared in constant time, in memory. A key made at run
time is looked up by its keyed hash in the key store, through a cache that
asks the store only whether anything changed (``key_store.KeyCache``); only
a token no configured key matches goes there. Only a key's *name* ever leaves
this module (for logs, per-key policy and record ownership), never the key.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from scoring import PolicySettings, RecordScope, StoreUnavailable

from ..base.budgets import KeyBudget, key_budget
from ..base.errors import AuthenticationFailed, PermissionDenied, ServiceUnavailable
from ..base.limits import KeyLimits
from ..config.settings import ANONYMOUS_NAME as ANONYMOUS
from ..config.settings import MASTER_NAME as MASTER
from ..config.settings import GatewaySettings
from .key_store import KeyCache, KeyHash, StoredKey

__all__ = ["ANONYMOUS", "MASTER", "Caller", "GeneratedCaller", "KeyRing", "generated_caller"]


@dataclass(frozen=True)
class Caller:
    name: str
    models: frozenset[str] | None  # None: every model
    admin: bool = False  # reads every key's trust records (the master key, keys marked admin)
    master: bool = False  # the master key itself: the operator's endpoints (GET /v1/trust/calibration)
    labeller: bool = False  # its labels teach the models' shared fits (the master key, keys marked labeller)
    limits: KeyLimits = field(default_factory=KeyLimits)
    # may name objects in the operator's upstream account (proxy.endpoints.account_refs)
    account_references: bool = False
    # a key made at run time carries its own scoring policy, over the config's levels (scoring.policy)
    policy: PolicySettings | None = None
    # US dollars its answers may cost per budget window (proxy.server.spending); None: no dollar budget
    budget: KeyBudget | None = None

    def may_use(self, model: str) -> bool:
        return self.models is None or model in self.models

    def require_model(self, model: str, group: str | None = None) -> None:
        """``model`` as asked for, or the ``group`` it is an alias of, must be on the key's list."""
        if not self.may_use(model) and (group is None or not self.may_use(group)):
            raise PermissionDenied(f"This key may not use model `{model}`", param="model", code="model_not_allowed")

    @property
    def record_scope(self) -> RecordScope:
        """The trust records this caller may read: its own, or all of them for an admin (other keys' blocked
        answers withheld from an admin key that is not the master key)."""
        if self.master:
            return RecordScope.everyone()
        return RecordScope.everyone(reader=self.name) if self.admin else RecordScope.owned_by(self.name)


@dataclass(frozen=True)
class GeneratedCaller:
    """A key made at run time, as the cache keeps it: the caller it is, and when it may not be one."""

    caller: Caller
    expires: float | None  # Unix seconds; None: never
    blocked: bool


def generated_caller(key: StoredKey) -> GeneratedCaller:
    """The caller a stored key is: the same ``Caller`` a configured key with these settings would be."""
    return GeneratedCaller(
        Caller(
            key.name,
            frozenset(key.models) if key.models is not None else None,
            admin=key.admin,
            limits=KeyLimits(key.rpm_limit, key.tpm_limit, key.max_parallel_requests),
            account_references=key.allow_account_references,
            policy=key.trust_policy,
            budget=key_budget(key.max_budget, key.budget_duration),
        ),
        key.expires,
        key.blocked,
    )


class KeyRing:
    def __init__(
        self,
        settings: GatewaySettings,
        generated: KeyCache[GeneratedCaller] | None = None,
        hasher: KeyHash | None = None,
        *,
        on_store_error: Callable[[StoreUnavailable], None] = lambda error: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``generated`` and ``hasher``: the keys made at run time and how a key is hashed to find one there
        (None: only configured keys authenticate); ``on_store_error``: told of each look-up the store failed."""
        self._entries: list[tuple[bytes, Caller]] = [
            (
                k.key.get_secret_value().encode(),
                Caller(
                    k.name,
                    frozenset(k.models) if k.models is not None else None,
                    admin=k.admin,
                    labeller=k.labeller,
                    limits=KeyLimits(k.rpm, k.tpm, k.max_parallel_requests),
                    account_references=k.allow_account_references,
                    budget=k.budget,
                ),
            )
            for k in settings.trustgate.keys
        ]
        if settings.master_key is not None:
            master = Caller(MASTER, None, admin=True, master=True, labeller=True)
            self._entries.append((settings.master_key.get_secret_value().encode(), master))
        self._open = settings.trustgate.allow_unauthenticated and not self._entries
        self._configured = {caller.name for _, caller in self._entries}
        self._generated = generated if hasher is not None else None
        self._hasher = hasher
        self._on_store_error = on_store_error
        self._clock = clock

    @property
    def open(self) -> bool:
        """Explicitly configured without keys: every caller is accepted (local development)."""
        return self._open

    async def is_master(self, authorization: str | None) -> bool:
        """Whether the header carries the master key (never raises: probes without one are not refused)."""
        try:
            return (await self.authenticate(authorization)).master
        except (AuthenticationFailed, ServiceUnavailable):
            return False

    async def authenticate(self, authorization: str | None) -> Caller:
        if self.open:
            return Caller(ANONYMOUS, None, labeller=True)
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthenticationFailed(
                "Missing bearer token: send 'Authorization: Bearer <key>'", code="missing_api_key"
            )
        candidate = token.strip().encode()
        found: Caller | None = None
        for key, caller in self._entries:
            if hmac.compare_digest(key, candidate) and found is None:
                found = caller
        if found is None:
            found = await self._generated_caller(token.strip())
        if found is None:
            raise AuthenticationFailed("Incorrect API key provided", code="invalid_api_key")
        return found

    async def _generated_caller(self, key: str) -> Caller | None:
        """The caller of a key made at run time, if ``key`` is one that may be used now."""
        if self._generated is None or self._hasher is None:
            return None
        try:
            found = await self._generated.find(self._hasher.token(key))
        except StoreUnavailable as exc:
            self._on_store_error(exc)
            raise ServiceUnavailable(
                "The key store is unavailable, so this key cannot be checked; retry later", code="key_store_unavailable"
            ) from None
        if found is None:
            return None
        if found.caller.name in self._configured:  # a configured key took its name since: the name is that key's
            raise AuthenticationFailed(
                f"This key's name `{found.caller.name}` is now a configured key's: delete it and make another",
                code="key_name_taken",
            )
        if found.blocked:
            raise AuthenticationFailed("This key is blocked", code="key_blocked")
        if found.expires is not None and found.expires <= self._clock():
            raise AuthenticationFailed("This key has expired", code="key_expired")
        return found.caller
