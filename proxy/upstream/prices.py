"""What each deployment's tokens cost, found once at start-up, so that pricing an answer is two multiplications.

A deployment's price is what its ``litellm_params`` say (``input_cost_per_token``
and ``output_cost_per_token``, US dollars per token, as LiteLLM reads them);
else what litellm's own cost map says of its model. A deployment litellm
serves is looked up with litellm's own API (``litellm_backend.listed_price``:
litellm is loaded for it anyway). A pass-through deployment is looked up in
the same map without importing litellm, whose import costs the gateway seconds
of start-up, about 160 MB, and logging filters on every access-log line: the
map litellm ships (``model_prices_and_context_window_backup.json``, the one
``litellm.model_cost`` is read from under ``LITELLM_LOCAL_MODEL_COST_MAP``),
by litellm's rule for an OpenAI-compatible provider's model (``packaged_price``;
tests/proxy/upstream/test_prices.py holds the two to the same answers).

The embedded model server runs on the operator's machine and has no list price:
its deployment is priced only by its config. A deployment with no known price
prices its calls as ``None``, never 0, and is named in the start-up log
(``unpriced``). An answer is priced by the deployment that gave it: a result of
the upstream client says which of its group's entries that was
(``Completion.deployment``).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from scoring import CallCost

from ..config.settings import Deployment, GatewaySettings
from .litellm_backend import listed_price
from .replies import TokenUsage

__all__ = ["DeploymentPrice", "PriceList", "packaged_price"]

log = logging.getLogger("trustgate.prices")

# litellm's cost map, as it ships it (the file litellm loads under LITELLM_LOCAL_MODEL_COST_MAP).
_COST_MAP_FILE = "model_prices_and_context_window_backup.json"

PriceSource = Literal["config", "litellm"]


@dataclass(frozen=True)
class DeploymentPrice:
    """US dollars per prompt token and per completion token, and where that came from."""

    prompt_usd: float
    completion_usd: float
    source: PriceSource

    def of(self, usage: TokenUsage) -> float:
        return usage.prompt_tokens * self.prompt_usd + usage.completion_tokens * self.completion_usd


class PriceList:
    """Each deployment's price, by model group and the deployment's place among the group's entries."""

    def __init__(self, prices: Mapping[str, Sequence[DeploymentPrice | None]], names: Mapping[str, Sequence[str]]):
        self._prices = {group: tuple(entries) for group, entries in prices.items()}
        self._names = names  # each deployment's provider model, for the report of the unpriced

    @classmethod
    def of(cls, settings: GatewaySettings) -> PriceList:
        """The prices of ``settings``' deployments: configured, else litellm's (asked only where needed)."""
        local = settings.trustgate.local_upstream
        local_base = local.base_url if local.enabled else None
        passthrough = settings.passthrough_groups()
        cost_map = functools.cache(_packaged_cost_map)  # read once, and only if a deployment needs it

        def price(deployment: Deployment) -> DeploymentPrice | None:
            configured = deployment.configured_price
            if configured is not None:
                return DeploymentPrice(*configured, source="config")
            if local_base is not None and deployment.api_base == local_base:
                return None
            if deployment.model_name in passthrough:
                found = packaged_price(cost_map(), deployment.provider_model)
            else:
                found = listed_price(deployment)
            return DeploymentPrice(*found, source="litellm") if found is not None else None

        groups = settings.model_groups()
        return cls(
            {group: [price(d) for d in deployments] for group, deployments in groups.items()},
            {group: [d.provider_model for d in deployments] for group, deployments in groups.items()},
        )

    def price(self, group: str, deployment: int) -> DeploymentPrice | None:
        entries = self._prices.get(group, ())
        return entries[deployment] if 0 <= deployment < len(entries) else None

    def priced(self, group: str) -> bool:
        """Whether any deployment of ``group`` has a price (its answers can cost something known)."""
        return any(entry is not None for entry in self._prices.get(group, ()))

    def cost(self, group: str, deployment: int, usage: TokenUsage | None) -> CallCost:
        """What a call answered by ``group``'s ``deployment``-th entry cost; ``usd`` None without a price or usage."""
        if usage is None:
            return CallCost()
        price = self.price(group, deployment)
        return CallCost(
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            usd=price.of(usage) if price is not None else None,
        )

    def unpriced(self) -> list[str]:
        """The deployments without a known price, as ``group:index (provider model)``."""
        return [
            f"{group}:{index} ({self._names[group][index]})"
            for group, entries in self._prices.items()
            for index, entry in enumerate(entries)
            if entry is None
        ]


def packaged_price(cost_map: Mapping[str, Any], provider_model: str) -> tuple[float, float] | None:
    """The price litellm's map gives an OpenAI-compatible provider's model, as ``litellm.get_model_info`` finds
    it: the entry of its whole name (``openai/o1-mini``), else of its name without the provider prefix whose
    provider is that prefix (``gpt-4o-mini``, an ``openai`` entry); None for a model the map does not price."""
    provider, _, name = provider_model.partition("/")
    entry = cost_map.get(provider_model)
    if entry is None:
        candidate = cost_map.get(name)
        entry = candidate if isinstance(candidate, dict) and candidate.get("litellm_provider") == provider else None
    if not isinstance(entry, dict) or entry.get("input_cost_per_token") is None:
        return None
    return float(entry["input_cost_per_token"]), float(entry.get("output_cost_per_token") or 0.0)


def _packaged_cost_map() -> dict[str, Any]:
    """litellm's packaged cost map, read from where litellm is installed (found without importing it)."""
    spec = importlib.util.find_spec("litellm")
    locations = spec.submodule_search_locations if spec is not None else None
    path = Path(locations[0]) / _COST_MAP_FILE if locations else None
    try:
        if path is None:
            raise OSError("litellm is not installed")
        found: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        log.warning(
            "litellm's cost map could not be read (%s): pass-through deployments are priced by config only", exc
        )
        return {}
    return found
