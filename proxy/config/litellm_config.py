"""What a LiteLLM proxy config says that TrustGate reads, and what it does not.

A LiteLLM config is brought as it is: ``litellm_settings`` fallbacks and
``router_settings`` both feed the one ``RouterSettings``; every key TrustGate
does not implement is named in one warning at start-up rather than dropped
without a word. ``split_config`` separates the two before anything is
resolved, so that an ``os.environ/NAME`` reference inside an ignored key is
never read (an unset one cannot stop start-up) and is named in the warning
instead; only the few values that decide the split (a deployment's ``model``
and ``api_base``, ``trustgate.passthrough``, the routing strategy) are looked
up in the environment, so that a reference there splits as its value would.
Deployment ``litellm_params`` are read whole on the litellm path (it hands
them to litellm); on the pass-through path only the keys it acts on
(``PASSTHROUGH_PARAMS``) are read and the rest are named too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import TypeAdapter, ValidationError

__all__ = [
    "ENV_PREFIX",
    "FALLBACK_KINDS",
    "OPENAI_COMPATIBLE_PREFIXES",
    "PASSTHROUGH_PARAMS",
    "ROUTING_STRATEGIES",
    "IgnoredKey",
    "RoutingStrategy",
    "is_openai_compatible",
    "merge_litellm_settings",
    "passthrough_groups",
    "split_config",
]

ENV_PREFIX = "os.environ/"

FALLBACK_KINDS = ("fallbacks", "context_window_fallbacks", "content_policy_fallbacks")

# LiteLLM's routing strategies that both upstream paths follow; any other is named in the warning
# and LiteLLM's default, simple-shuffle, applies.
RoutingStrategy = Literal["simple-shuffle", "least-busy", "latency-based-routing"]
ROUTING_STRATEGIES: tuple[RoutingStrategy, ...] = get_args(RoutingStrategy)

# Providers whose wire format is OpenAI's own: for these, the gateway forwards
# the request bytes itself instead of paying litellm's per-call translation.
OPENAI_COMPATIBLE_PREFIXES = ("openai/", "hosted_vllm/", "llamafile/", "lm_studio/")

# The deployment keys the pass-through path acts on (a deployment's price, on both paths: proxy.upstream.prices).
PASSTHROUGH_PARAMS = frozenset(
    {
        "model",
        "api_base",
        "api_key",
        "timeout",
        "stream_timeout",
        "rpm",
        "tpm",
        "weight",
        "max_parallel_requests",
        "input_cost_per_token",
        "output_cost_per_token",
    }
)

# Per section, the keys TrustGate acts on.
IMPLEMENTED: dict[str, frozenset[str]] = {
    "": frozenset(
        {"model_list", "router_settings", "litellm_settings", "general_settings", "trustgate", "environment_variables"}
    ),
    "router_settings": frozenset(
        {"num_retries", "timeout", "retry_after", "model_group_alias", "routing_strategy", *FALLBACK_KINDS}
    ),
    "litellm_settings": frozenset({"num_retries", "request_timeout", *FALLBACK_KINDS}),
    "general_settings": frozenset({"master_key"}),
    # model_info (LiteLLM's deployment id, cost and capability notes) is read by neither path: named.
    "model_list[]": frozenset({"model_name", "litellm_params"}),
}


@dataclass(frozen=True)
class IgnoredKey:
    """A key of the config TrustGate does not act on, as the start-up warning names it."""

    path: str
    references: tuple[str, ...] = ()  # the os.environ/ variables inside it, left unread
    note: str | None = None  # why, where the key itself is one TrustGate knows

    def __str__(self) -> str:
        notes = [self.note] if self.note else []
        if self.references:
            notes.append(" and ".join(f"{ENV_PREFIX}{name}" for name in self.references) + " not read")
        return f"{self.path} ({'; '.join(notes)})" if notes else self.path


def is_openai_compatible(model: object, api_base: object) -> bool:
    """Whether a deployment speaks OpenAI's wire format at an address of its own (the pass-through path's)."""
    return bool(api_base) and isinstance(model, str) and model.startswith(OPENAI_COMPATIBLE_PREFIXES)


def passthrough_groups(deployments: Iterable[tuple[str, bool]]) -> set[str]:
    """The model groups all of whose deployments (``(group, openai_compatible)``) the pass-through path serves."""
    groups: dict[str, bool] = {}
    for group, compatible in deployments:
        groups[group] = groups.get(group, True) and compatible
    return {group for group, all_compatible in groups.items() if all_compatible}


def split_config(raw: Mapping[str, Any], environment: Mapping[str, str]) -> tuple[dict[str, Any], list[IgnoredKey]]:
    """The part of ``raw`` TrustGate reads, and the keys it ignores in file order; nothing is resolved yet.

    ``environment`` (the process's, the config's ``environment_variables`` over it) is only looked at for
    the values that decide the split.
    """
    read: dict[str, Any] = {}
    ignored: list[IgnoredKey] = []
    for key, value in raw.items():
        if key not in IMPLEMENTED[""]:
            ignored.append(_ignored(str(key), value))
        elif key in IMPLEMENTED and isinstance(value, Mapping):
            read[key] = _section(key, value, environment, ignored)
        elif key == "model_list" and isinstance(value, list):
            read[key] = _model_list(value, raw.get("trustgate"), environment, ignored)
        else:
            read[key] = value
    return read, ignored


def _peek(value: Any, environment: Mapping[str, str]) -> Any:
    """The text an ``os.environ/`` reference holds, else ``value``; an unset one stays (resolution reports it)."""
    if _is_reference(value):
        return environment.get(value[len(ENV_PREFIX) :], value)
    return value


def _section(
    name: str, section: Mapping[str, Any], environment: Mapping[str, str], ignored: list[IgnoredKey]
) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in section.items():
        path = f"{name}.{key}"
        if key not in IMPLEMENTED[name]:
            ignored.append(_ignored(path, value))
        elif key == "routing_strategy" and (note := _unfollowed_strategy(value, environment)):
            ignored.append(IgnoredKey(path, note=note))
        else:
            kept[key] = value
    return kept


def _is_reference(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(ENV_PREFIX)


def _unfollowed_strategy(value: Any, environment: Mapping[str, str]) -> str | None:
    """Why a routing strategy is not followed; None for one both paths follow (or an unset reference,
    which resolution reports)."""
    strategy = _peek(value, environment)
    if strategy in ROUTING_STRATEGIES or _is_reference(strategy):
        return None
    return f"{value} is {strategy}: simple-shuffle used" if _is_reference(value) else f"{strategy}: simple-shuffle used"


def _passthrough_on(trustgate: Any, environment: Mapping[str, str]) -> bool:
    """``trustgate.passthrough`` as the settings will read it (a flag written as text too); on by default."""
    if not isinstance(trustgate, Mapping):
        return True
    try:
        return TypeAdapter(bool).validate_python(_peek(trustgate.get("passthrough", True), environment))
    except ValidationError:
        return True  # the settings refuse it, naming the key


def _model_list(
    entries: list[Any], trustgate: Any, environment: Mapping[str, str], ignored: list[IgnoredKey]
) -> list[Any]:
    enabled = _passthrough_on(trustgate, environment)
    fast = passthrough_groups(
        (
            str(entry.get("model_name")),
            enabled
            and is_openai_compatible(
                _peek(_params(entry).get("model"), environment), _peek(_params(entry).get("api_base"), environment)
            ),
        )
        for entry in entries
        if isinstance(entry, Mapping)
    )
    kept: list[Any] = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            kept.append(entry)  # refused by the settings' own validation
            continue
        read = {}
        for key, value in entry.items():
            if key not in IMPLEMENTED["model_list[]"]:
                ignored.append(_ignored(f"model_list[{index}].{key}", value))
            else:
                read[key] = value
        params = read.get("litellm_params")
        if str(read.get("model_name")) in fast and isinstance(params, Mapping):
            for key, value in params.items():
                if key not in PASSTHROUGH_PARAMS:
                    ignored.append(
                        _ignored(f"model_list[{index}].litellm_params.{key}", value, note="pass-through deployment")
                    )
            read["litellm_params"] = {k: v for k, v in params.items() if k in PASSTHROUGH_PARAMS}
        kept.append(read)
    return kept


def _params(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    params = entry.get("litellm_params")
    return params if isinstance(params, Mapping) else {}


def _ignored(path: str, value: Any, note: str | None = None) -> IgnoredKey:
    return IgnoredKey(path, tuple(_references(value)), note)


def _references(value: Any) -> Iterable[str]:
    """The variable names of the ``os.environ/`` references anywhere inside ``value``."""
    if isinstance(value, Mapping):
        for item in value.values():
            yield from _references(item)
    elif isinstance(value, list):
        for item in value:
            yield from _references(item)
    elif isinstance(value, str) and value.startswith(ENV_PREFIX):
        yield value[len(ENV_PREFIX) :]


def merge_litellm_settings(raw: Mapping[str, Any]) -> dict[str, Any]:
    """``router_settings`` with what ``litellm_settings`` adds: fallbacks of each kind, retries, timeout.

    Fallbacks from both sections apply (router_settings' first); a value set in
    ``router_settings`` wins over the same one in ``litellm_settings``.
    """
    router = dict(raw.get("router_settings") or {})
    litellm = raw.get("litellm_settings") or {}
    for kind in FALLBACK_KINDS:
        merged = [*(router.get(kind) or []), *(litellm.get(kind) or [])]
        if merged:
            router[kind] = merged
    if "num_retries" in litellm:
        router.setdefault("num_retries", litellm["num_retries"])
    if "request_timeout" in litellm:
        router.setdefault("timeout", litellm["request_timeout"])
    return router
