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

A key that is neither TrustGate's nor one of LiteLLM's options
(``litellm_options``, read from the installed litellm) but is close to one of
them is a misspelling, named with the name it is close to. One close to a key
TrustGate acts on, which the config leaves unset, is refused: ``api_bse`` would
otherwise leave its deployment calling litellm's default address for its
provider, and ``num_retrys`` the gateway retrying as it would without it. One
close to a LiteLLM option is named in a warning. A key close to nothing is
taken for an option of LiteLLM's that its lists do not name, and ignored as
LiteLLM's other options are (handed to litellm, as LiteLLM's proxy does, among
a deployment's parameters on the litellm path).
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pydantic import TypeAdapter, ValidationError

from .litellm_options import litellm_names

__all__ = [
    "ENV_PREFIX",
    "FALLBACK_KINDS",
    "OPENAI_COMPATIBLE_PREFIXES",
    "PASSTHROUGH_PARAMS",
    "ROUTING_STRATEGIES",
    "ConfigSplit",
    "IgnoredKey",
    "MisspeltKey",
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


@dataclass(frozen=True)
class MisspeltKey:
    """A key that is neither TrustGate's nor LiteLLM's, close to a name that is: most likely a typo of it."""

    path: str
    meant: str  # the name it is close to
    refused: bool  # ``meant`` is a key TrustGate acts on, unset beside it: the config means what it does not say
    ignored_option: bool = False  # ``meant`` is one of LiteLLM's options, which TrustGate ignores

    def __str__(self) -> str:
        where = f"{self.path}: unknown top-level key" if "." not in self.path else f"{self.path}: unknown key"
        ignored = ", a LiteLLM option TrustGate ignores" if self.ignored_option else ""
        return f"{where} (did you mean {self.meant}{ignored}?)"


@dataclass
class ConfigSplit:
    """A LiteLLM config parted: what TrustGate reads, the LiteLLM keys it ignores and the misspelt keys."""

    read: dict[str, Any] = field(default_factory=dict)
    ignored: list[IgnoredKey] = field(default_factory=list)
    misspelt: list[MisspeltKey] = field(default_factory=list)


# How close a key must be to a name to be taken for a typo of it (difflib's ratio): a transposition in a
# short name (``mdoel``) is 0.8. LiteLLM's lists hold hundreds of names, among which a provider's own
# parameter would often be that close to another by chance (``top_k``, ``top_p``): the bar is higher there.
_TYPO_OF_OURS = 0.8
_TYPO_OF_LITELLMS = 0.85


def _nearest(key: str, names: Iterable[str], cutoff: float) -> str | None:
    found = difflib.get_close_matches(key, sorted(names), n=1, cutoff=cutoff)
    return found[0] if found else None


def _misspelt(
    path: str, key: str, section: str, acted_on: Collection[str], given: Collection[str]
) -> MisspeltKey | None:
    """``key`` (of ``section``, among the ``given`` keys of its mapping) as a typo of a name; None when it is one of
    LiteLLM's options, or close to no name. Only called for a key TrustGate does not act on."""
    options = litellm_names(section)
    if key in options:
        return None
    ours = _nearest(key, acted_on, _TYPO_OF_OURS)
    if ours is not None:
        return MisspeltKey(path, ours, refused=ours not in given)
    theirs = _nearest(key, options, _TYPO_OF_LITELLMS)
    if theirs is not None:
        return MisspeltKey(path, theirs, refused=False, ignored_option=section != "litellm_params")
    return None


def is_openai_compatible(model: object, api_base: object) -> bool:
    """Whether a deployment speaks OpenAI's wire format at an address of its own (the pass-through path's)."""
    return bool(api_base) and isinstance(model, str) and model.startswith(OPENAI_COMPATIBLE_PREFIXES)


def passthrough_groups(deployments: Iterable[tuple[str, bool]]) -> set[str]:
    """The model groups all of whose deployments (``(group, openai_compatible)``) the pass-through path serves."""
    groups: dict[str, bool] = {}
    for group, compatible in deployments:
        groups[group] = groups.get(group, True) and compatible
    return {group for group, all_compatible in groups.items() if all_compatible}


def split_config(raw: Mapping[str, Any], environment: Mapping[str, str]) -> ConfigSplit:
    """The part of ``raw`` TrustGate reads, the keys it ignores and the misspelt ones, in file order; nothing is
    resolved yet.

    ``environment`` (the process's, the config's ``environment_variables`` over it) is only looked at for
    the values that decide the split.
    """
    split = ConfigSplit()
    for key, value in raw.items():
        if key not in IMPLEMENTED[""]:
            _not_acted_on(split, str(key), str(key), value, "", raw)
        elif key in IMPLEMENTED and isinstance(value, Mapping):
            split.read[key] = _section(key, value, environment, split)
        elif key == "model_list" and isinstance(value, list):
            split.read[key] = _model_list(value, raw.get("trustgate"), environment, split)
        else:
            split.read[key] = value
    return split


def _not_acted_on(split: ConfigSplit, path: str, key: str, value: Any, section: str, given: Collection[str]) -> None:
    """Name a key TrustGate does not act on: as misspelt when it is close to a name, else as ignored."""
    misspelt = _misspelt(path, key, section, IMPLEMENTED[section], given)
    if misspelt is not None:
        split.misspelt.append(misspelt)
    else:
        split.ignored.append(_ignored(path, value))


def _peek(value: Any, environment: Mapping[str, str]) -> Any:
    """The text an ``os.environ/`` reference holds, else ``value``; an unset one stays (resolution reports it)."""
    if _is_reference(value):
        return environment.get(value[len(ENV_PREFIX) :], value)
    return value


def _section(
    name: str, section: Mapping[str, Any], environment: Mapping[str, str], split: ConfigSplit
) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in section.items():
        path = f"{name}.{key}"
        if key not in IMPLEMENTED[name]:
            _not_acted_on(split, path, str(key), value, name, section)
        elif key == "routing_strategy" and (note := _unfollowed_strategy(value, environment)):
            split.ignored.append(IgnoredKey(path, note=note))
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


def _model_list(entries: list[Any], trustgate: Any, environment: Mapping[str, str], split: ConfigSplit) -> list[Any]:
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
                _not_acted_on(split, f"model_list[{index}].{key}", str(key), value, "model_list[]", entry)
            else:
                read[key] = value
        params = read.get("litellm_params")
        if isinstance(params, Mapping):
            passthrough = str(read.get("model_name")) in fast
            read["litellm_params"] = _deployment_params(
                params, f"model_list[{index}].litellm_params", passthrough, split
            )
        kept.append(read)
    return kept


def _deployment_params(params: Mapping[str, Any], path: str, passthrough: bool, split: ConfigSplit) -> dict[str, Any]:
    """The parameters of a deployment TrustGate reads: on the pass-through path those it acts on, on the litellm
    path all but the refused misspellings (litellm takes the rest, as LiteLLM's proxy hands them over)."""
    kept: dict[str, Any] = {}
    for key, value in params.items():
        if key in PASSTHROUGH_PARAMS:
            kept[key] = value
            continue
        misspelt = _misspelt(f"{path}.{key}", str(key), "litellm_params", PASSTHROUGH_PARAMS, params)
        if misspelt is not None:
            split.misspelt.append(misspelt)
        elif passthrough:
            split.ignored.append(_ignored(f"{path}.{key}", value, note="pass-through deployment"))
        if not passthrough and (misspelt is None or not misspelt.refused):
            kept[key] = value
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
