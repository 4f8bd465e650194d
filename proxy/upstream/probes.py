"""Whether anybody answers at each deployment's address: the probes behind readiness.

Every deployment is probed, not only the first of its group that answers, so
that one a config points nowhere (a typo in its host, a server that is down) is
reported by its place in ``model_list`` and its address. A deployment without an
``api_base`` of its own is probed at the address litellm calls for its provider
(``litellm_backend.provider_address``: ``https://api.openai.com`` for ``openai/``),
so that one whose ``api_base`` went missing is not taken for reachable; one
whose address litellm cannot say is ``unchecked``.

The probe asks ``GET <address>/models`` and reads the status alone: the body is
never read (it may drip for ever, or be compressed although identity was asked
for and decode to gigabytes), and no redirect is followed. Any answer below 500
means somebody serves there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import httpx

from ..config.settings import Deployment

__all__ = ["DeploymentProbe", "ProbeState", "probe_deployments"]

ProbeState = Literal["up", "down", "unchecked"]


@dataclass(frozen=True)
class DeploymentProbe:
    """What one probe of one deployment found."""

    model: str  # its model group
    place: int  # its index in ``model_list``
    address: str | None  # where it was probed; None: nowhere litellm could say
    state: ProbeState
    reason: str | None = None  # why it is down, as the probe met it

    @property
    def name(self) -> str:
        """The deployment as a log line names it: its group, its place in the config and its address."""
        return f"{self.model} (model_list[{self.place}]) at {self.address}"


async def probe_deployments(
    http: httpx.AsyncClient,
    deployments: Sequence[Deployment],
    address_of: Callable[[Deployment], str | None],
    timeout: float,
) -> list[DeploymentProbe]:
    """Each deployment's probe, in ``model_list`` order, all at once; each bounded by ``timeout`` seconds."""
    return list(
        await asyncio.gather(
            *(
                _probe(http, place, deployment, address_of(deployment), timeout)
                for place, deployment in enumerate(deployments)
            )
        )
    )


async def _probe(
    http: httpx.AsyncClient, place: int, deployment: Deployment, address: str | None, timeout: float
) -> DeploymentProbe:
    def found(state: ProbeState, reason: str | None = None) -> DeploymentProbe:
        return DeploymentProbe(deployment.model_name, place, address, state, reason)

    if address is None:
        return found("unchecked")
    headers = {"accept-encoding": "identity"}
    if deployment.api_key is not None:
        headers["authorization"] = f"Bearer {deployment.api_key.get_secret_value()}"
    try:
        async with http.stream("GET", f"{address.rstrip('/')}/models", headers=headers, timeout=timeout) as response:
            status = response.status_code
    except httpx.TimeoutException:
        return found("down", f"no answer within {timeout:g}s")
    except httpx.HTTPError as exc:
        return found("down", f"nobody answers ({type(exc).__name__})")
    return found("up") if status < 500 else found("down", f"answered {status}")
