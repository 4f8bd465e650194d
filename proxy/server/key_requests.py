"""The bodies and answers of the ``/key/*`` endpoints, in LiteLLM proxy's shapes (``litellm.proxy._types``).

A body is read as LiteLLM's proxy reads it: the same field names, a field
left out of an update keeps its value and an explicit null clears it
(LiteLLM's merge patch), ``duration: null`` or ``"-1"`` never expires. The
fields TrustGate acts on are declared below; every other field LiteLLM's
request types have is accepted only where it asks for nothing (null, empty,
LiteLLM's own default), and refused with a 400 naming it otherwise, so that a
script never believes a limit holds that is not enforced here. A field neither
knows is a typo, refused likewise.

``user_id`` and ``team_id`` are kept and shown as labels (``/key/list`` filters by them); there are no users or
teams here, so they grant and bound nothing.

TrustGate's own fields: ``trust_policy`` (a ``scoring.per_key`` entry of the
key's own: mode, sample rate, sync wait, client policy, ``on_low_trust``,
``applicability``), ``admin`` (reads every key's records) and
``allow_account_references``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from scoring import PolicySettings

from ..base.errors import InvalidRequest
from .json_body import json_object
from .key_store import StoredKey

__all__ = [
    "MAX_KEY_BODY",
    "DeleteKeysBody",
    "GenerateKeyBody",
    "KeyInfoQuery",
    "KeyListQuery",
    "KeyStatus",
    "UpdateKeyBody",
    "key_info",
    "key_status",
    "parse_body",
]

MAX_KEY_BODY = 64 * 1024  # a key's settings and metadata; far more than any LiteLLM script sends
MAX_METADATA_BYTES = 16 * 1024
MAX_ALIAS_CHARS = 128
MAX_LISTED = 1000  # models a key may name, keys one delete may name

# LiteLLM's key fields TrustGate does not act on, and the values of each that ask for nothing (besides null, "",
# [] and {}): a body may carry them so, as LiteLLM's own clients send them.
_ASK_NOTHING: dict[str, tuple[Any, ...]] = {
    **dict.fromkeys(
        (
            "agent_id",
            "organization_id",
            "project_id",
            "budget_id",
            "end_user_budget_id",
            "budget_limits",
            "allowed_cache_controls",
            "config",
            "permissions",
            "model_max_budget",
            "budget_fallbacks",
            "model_rpm_limit",
            "model_tpm_limit",
            "mcp_rpm_limit",
            "tag_rpm_limit",
            "guardrails",
            "policies",
            "prompts",
            "aliases",
            "object_permission",
            "tpd_limit",
            "default_estimated_output_tokens",
            "default_estimated_output_tokens_per_model",
            "tags",
            "enforced_params",
            "allowed_routes",
            "allowed_passthrough_routes",
            "denied_passthrough_routes",
            "allowed_vector_store_indexes",
            "router_settings",
            "access_group_ids",
            "soft_budget",
            "rotation_interval",
            "temp_budget_increase",
            "temp_budget_expiry",
        ),
        (),
    ),
    **dict.fromkeys(
        (
            "disable_global_guardrails",
            "enable_prompt_caching",
            "throttle_on_budget_exceeded",
            "send_invite_email",
            "auto_rotate",
        ),
        (False,),
    ),
    "spend": (0,),
    # llm_api keys call only the model endpoints, which every key made here does (the /key/* ones are the master's)
    "key_type": ("default", "llm_api"),
    "rpm_limit_type": ("best_effort_throughput",),
    "tpm_limit_type": ("best_effort_throughput",),
}
_NOTHING: tuple[Any, ...] = (None, "", [], {})


def _alias(value: str | None) -> str | None:
    if value is None:
        return None
    if not value or len(value) > MAX_ALIAS_CHARS or not value.isprintable() or value != value.strip():
        raise ValueError(f"a key_alias is 1 to {MAX_ALIAS_CHARS} printable characters, without surrounding spaces")
    return value


class _KeyFields(BaseModel):
    """What a key may do: the fields ``/key/generate`` and ``/key/update`` share."""

    model_config = ConfigDict(extra="forbid")

    key_alias: str | None = None
    duration: str | None = None
    models: list[str] | None = Field(default=None, max_length=MAX_LISTED)
    max_budget: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    budget_duration: str | None = None
    rpm_limit: int | None = Field(default=None, ge=1)
    tpm_limit: int | None = Field(default=None, ge=1)
    max_parallel_requests: int | None = Field(default=None, ge=1)
    metadata: dict[str, Any] | None = None
    blocked: bool | None = None
    user_id: str | None = Field(default=None, max_length=MAX_ALIAS_CHARS)
    team_id: str | None = Field(default=None, max_length=MAX_ALIAS_CHARS)
    admin: bool | None = None
    allow_account_references: bool | None = None
    trust_policy: PolicySettings | None = None

    @model_validator(mode="before")
    @classmethod
    def _litellm_fields_that_ask_nothing(cls, data: Any) -> Any:
        """LiteLLM's fields TrustGate does not act on pass only where they ask for nothing, and are dropped."""
        if not isinstance(data, dict):
            return data
        for name, nothing in _ASK_NOTHING.items():
            if name not in data:
                continue
            value = data[name]
            # 0 is not False here, nor False 0: a flag's nothing and a number's nothing are apart
            if not any(
                value == quiet and isinstance(value, bool) == isinstance(quiet, bool) for quiet in _NOTHING + nothing
            ):
                raise ValueError(f"`{name}` is a LiteLLM key field TrustGate does not implement: leave it out")
        return {name: value for name, value in data.items() if name not in _ASK_NOTHING}

    @field_validator("key_alias")
    @classmethod
    def _alias_form(cls, value: str | None) -> str | None:
        return _alias(value)

    @field_validator("metadata")
    @classmethod
    def _bounded_metadata(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None and len(orjson.dumps(value)) > MAX_METADATA_BYTES:
            raise ValueError(f"metadata is larger than {MAX_METADATA_BYTES} bytes of JSON")
        return value

    @field_validator("max_budget", mode="before")
    @classmethod
    def _no_blank_budget(cls, value: Any) -> Any:
        return None if value == "" else value  # as LiteLLM reads it


class GenerateKeyBody(_KeyFields):
    """``POST /key/generate``: LiteLLM's ``GenerateKeyRequest``."""

    key: str | None = None

    @field_validator("key")
    @classmethod
    def _made_here(cls, value: str | None) -> None:
        if value is not None:
            raise ValueError("a key's value is not taken: every key made here is 256 random bits, so leave it out")
        return value


class UpdateKeyBody(_KeyFields):
    """``POST /key/update``: LiteLLM's ``UpdateKeyRequest``; ``key`` (the key or its token) or ``key_alias`` names
    the key. A key's alias is its name, which its records and spend are kept under: it cannot change."""

    key: str | None = None

    @model_validator(mode="after")
    def _names_a_key(self) -> UpdateKeyBody:
        if self.key is None and self.key_alias is None:
            raise ValueError("either key or key_alias must be provided")
        return self


class DeleteKeysBody(BaseModel):
    """``POST /key/delete``: LiteLLM's ``KeyRequest``; ``keys`` (keys or their tokens) or ``key_aliases``."""

    model_config = ConfigDict(extra="forbid")

    keys: list[str] | None = Field(default=None, max_length=MAX_LISTED)
    key_aliases: list[str] | None = Field(default=None, max_length=MAX_LISTED)

    @model_validator(mode="after")
    def _names_keys(self) -> DeleteKeysBody:
        if not self.keys and not self.key_aliases:
            raise ValueError("At least one of 'keys' or 'key_aliases' must be provided.")
        return self


KeyStatus = Literal["active", "expired", "revoked"]


class KeyInfoQuery(BaseModel):
    """``GET /key/info``'s query: ``key``, the key or (better: it stays out of URLs) its token."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(min_length=1)


class KeyListQuery(BaseModel):
    """``GET /key/list``'s query, as LiteLLM's: a page of keys' tokens (``return_full_object``: of whole keys).

    Filters by what keys made here do not have (an organisation, a project, an agent, an access group) match
    no key; ``deleted`` keys are not kept, so that status lists none.
    """

    model_config = ConfigDict(extra="forbid")

    page: int = Field(default=1, ge=1)
    size: int = Field(default=10, ge=1, le=100)
    key_alias: str | None = None
    key_hash: str | None = None
    return_full_object: bool = False
    status: Literal["active", "expired", "revoked", "deleted"] | None = None
    expires: Literal["active", "expired"] | None = None
    sort_by: Literal["created_at", "updated_at", "key_alias", "expires", "max_budget"] | None = None
    sort_order: Literal["asc", "desc"] = "desc"
    user_id: str | None = None
    team_id: str | None = None
    organization_id: str | None = None
    project_id: str | None = None
    agent_id: str | None = None
    access_group_id: str | None = None
    include_team_keys: bool = False
    include_created_by_keys: bool = False

    @property
    def matches_nothing(self) -> bool:
        owners = (self.organization_id, self.project_id, self.agent_id, self.access_group_id)
        return self.status == "deleted" or any(owner is not None for owner in owners)


Body = TypeVar("Body", bound=BaseModel)


def parse_body(model: type[Body], raw: bytes) -> Body:
    """The body as ``model``; a 400 naming the first bad field otherwise."""
    body = json_object(raw, "invalid_key_request")
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        error = exc.errors()[0]
        param = ".".join(str(part) for part in error["loc"]) or None
        message = "unknown field" if error["type"] == "extra_forbidden" else error["msg"].removeprefix("Value error, ")
        where = f"`{param}`: " if param else ""
        raise InvalidRequest(f"Invalid {where}{message}", param=param, code="invalid_key_request") from exc


def _moment(seconds: float | None) -> str | None:
    return datetime.fromtimestamp(seconds, UTC).isoformat() if seconds is not None else None


def key_status(key: StoredKey, now: float) -> KeyStatus:
    """LiteLLM's ``status`` of a key: revoked (blocked), expired, or active."""
    if key.blocked:
        return "revoked"
    if key.expires is not None and key.expires <= now:
        return "expired"
    return "active"


def key_info(key: StoredKey, now: float, *, with_token: bool) -> dict[str, Any]:
    """A key as LiteLLM's ``/key/info`` shows it (``info``; ``with_token``: also its token, as ``/key/list``'s whole
    objects and ``/key/generate`` show it), with TrustGate's own fields; never the key."""
    info: dict[str, Any] = {
        "key_name": key.key_name,
        "key_alias": key.key_alias,
        "max_budget": key.max_budget,
        "budget_duration": key.budget_duration,
        "models": key.models or [],
        "rpm_limit": key.rpm_limit,
        "tpm_limit": key.tpm_limit,
        "max_parallel_requests": key.max_parallel_requests,
        "metadata": key.metadata,
        "blocked": key.blocked,
        "expires": _moment(key.expires),
        "status": key_status(key, now),
        "created_at": _moment(key.created_at),
        "updated_at": _moment(key.updated_at),
        "created_by": key.created_by,
        "updated_by": key.updated_by,
        "user_id": key.user_id,
        "team_id": key.team_id,
        "name": key.name,
        "admin": key.admin,
        "allow_account_references": key.allow_account_references,
        "trust_policy": key.trust_policy.model_dump(mode="json", exclude_none=True) if key.trust_policy else None,
    }
    if with_token:
        info["token"] = key.token
    return info
