"""Bearer-key authentication: the master key, or one of the configured client keys.

Keys are compared in constant time and only a key's configured *name* ever
leaves this module (for logs, per-key policy and record ownership), never the key.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field

from scoring import RecordScope

from ..base.errors import AuthenticationFailed, PermissionDenied
from ..base.limits import KeyLimits
from ..config.settings import ANONYMOUS_NAME as ANONYMOUS
from ..config.settings import MASTER_NAME as MASTER
from ..config.settings import GatewaySettings

__all__ = ["ANONYMOUS", "MASTER", "Caller", "KeyRing"]


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


class KeyRing:
    def __init__(self, settings: GatewaySettings) -> None:
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
                ),
            )
            for k in settings.trustgate.keys
        ]
        if settings.master_key is not None:
            master = Caller(MASTER, None, admin=True, master=True, labeller=True)
            self._entries.append((settings.master_key.get_secret_value().encode(), master))
        self._open = settings.trustgate.allow_unauthenticated and not self._entries

    @property
    def open(self) -> bool:
        """Explicitly configured without keys: every caller is accepted (local development)."""
        return self._open

    def is_master(self, authorization: str | None) -> bool:
        """Whether the header carries the master key (never raises: probes without one are not refused)."""
        try:
            return self.authenticate(authorization).master
        except AuthenticationFailed:
            return False

    def authenticate(self, authorization: str | None) -> Caller:
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
            raise AuthenticationFailed("Incorrect API key provided", code="invalid_api_key")
        return found
