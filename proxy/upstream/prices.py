"""What each deployment's tokens cost, found once at start-up, so that pricing an answer is two multiplications.

A deployment's price is what its ``litellm_params`` say (``input_cost_per_token``
and ``output_cost_per_token``, US dollars per token, as LiteLLM reads them);
else what litellm's own cost map says of its model (``litellm_backend.listed_price``).
The embedded model server runs on the operator's machine and has no list price:
its deployment is priced only by its config, and litellm is not imported to
find that out. A deployment with no known price prices its calls as ``None``,
never 0, and is named in the start-up log (``unpriced``).

An answer is priced by the deployment that gave it: a result of the upstream
client says which of its group's entries that was (``Completion.deployment``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from scoring import CallCost

from ..config.settings import Deployment, GatewaySettings
from .litellm_backend import listed_price
from .replies import TokenUsage

__all__ = ["DeploymentPrice", "PriceList"]

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

        def price(deployment: Deployment) -> DeploymentPrice | None:
            configured = deployment.configured_price
            if configured is not None:
                return DeploymentPrice(*configured, source="config")
            if local_base is not None and deployment.api_base == local_base:
                return None
            found = listed_price(deployment)  # imports litellm: only for a deployment whose config names no price
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
