"""LiteLLM's model information: ``/model/info`` and ``/v1/model/info`` (each deployment), ``/model_group/info``
(each model group), in its shapes, with what TrustGate adds: how each group is scored for the asking key.

Every key reads the groups it may use (a group is its own or one of its aliases'
on the key's list). Prices are per token in US dollars, null where unknown,
never 0. Limits are the deployments' own (``rpm``, ``tpm``,
``max_parallel_requests``; a group's is their sum, null when one deployment
has none) and scoring's budget on the group. ``trust_policy`` is the policy
that decides the asking key's requests to the group, every level resolved
(``scoring.policy``), before any ``x-trustgate-mode`` header. The master and
admin keys also read each deployment's ``litellm_params``, credentials left
out; other keys read its provider model only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import SecretStr

from scoring import configured_policy, low_trust
from scoring.policy import scored_kinds

from ..base.errors import NotFound
from ..config.settings import Deployment
from ..upstream.litellm_backend import deployment_id
from .auth import Caller
from .gateway import Gateway
from .request_context import gateway_of

__all__ = ["router"]

router = APIRouter()


def _visible_groups(gateway: Gateway, caller: Caller) -> list[str]:
    """The model groups ``caller`` may use, itself or through an alias."""
    aliases = gateway.settings.router_settings.aliases()
    return [
        group
        for group in gateway.upstream.model_groups
        if caller.may_use(group) or any(caller.may_use(alias) for alias, target in aliases.items() if target == group)
    ]


def trust_policy(gateway: Gateway, caller: Caller, group: str) -> dict[str, Any]:
    """How ``caller``'s requests to ``group`` are scored, before any client header."""
    scoring = gateway.settings.trustgate.scoring
    configured = configured_policy(scoring, model=group, key_name=caller.name, key_policy=caller.policy)
    kinds = scored_kinds(scoring, model=group, key_name=caller.name, key_policy=caller.policy)
    acting = low_trust(scoring, model=group, key_name=caller.name, key_policy=caller.policy)
    return {
        "mode": configured.mode if gateway.trust.scores else "off",
        "sample_rate": configured.sample_rate,
        "sync_timeout_s": configured.sync_timeout_s,
        "allow_client_mode": configured.allow_client_mode,
        "score_kinds": sorted(kinds) if kinds is not None else None,  # None: triage off, every kind scored
        "on_low_trust": asdict(acting),
    }


def _budget(gateway: Gateway, group: str) -> dict[str, Any]:
    return gateway.settings.trustgate.scoring.budget.for_model(group).model_dump(mode="json")


def _params(deployment: Deployment, caller: Caller) -> dict[str, Any]:
    """A deployment's ``litellm_params`` as ``caller`` may read them: never a credential."""
    if not caller.admin:
        return {"model": deployment.provider_model}
    return {name: value for name, value in deployment.litellm_params.items() if not isinstance(value, SecretStr)}


def _deployment(gateway: Gateway, caller: Caller, group: str, index: int, deployment: Deployment) -> dict[str, Any]:
    """One deployment as LiteLLM's ``/model/info`` lists it."""
    return {
        "model_name": group,
        "litellm_params": _params(deployment, caller),
        "model_info": {
            "id": deployment_id(group, index),
            "mode": "chat",
            "input_cost_per_token": None,
            "output_cost_per_token": None,
            "rpm": deployment.rpm,
            "tpm": deployment.tpm,
            "max_parallel_requests": deployment.max_parallel_requests,
            "trust_policy": trust_policy(gateway, caller, group),
            "scoring_budget": _budget(gateway, group),
        },
    }


@router.get("/model/info")
@router.get("/v1/model/info")
async def model_info(request: Request) -> JSONResponse:
    """Each deployment of the groups the key may use; ``?litellm_model_id=`` one of them."""
    gateway = gateway_of(request)
    caller = await gateway.keys.authenticate(request.headers.get("authorization"))
    groups = gateway.settings.model_groups()
    data = [
        _deployment(gateway, caller, group, index, deployment)
        for group in _visible_groups(gateway, caller)
        for index, deployment in enumerate(groups[group])
    ]
    wanted = request.query_params.get("litellm_model_id")
    if wanted is not None:
        data = [entry for entry in data if entry["model_info"]["id"] == wanted]
        if not data:
            raise NotFound(f"No model with id `{wanted}`", param="litellm_model_id", code="model_not_found")
    return JSONResponse({"data": data})


def _total(values: Sequence[int | None]) -> int | None:
    """A group's limit: its deployments' summed, None (no limit) where one has none."""
    return None if any(value is None for value in values) else sum(value for value in values if value is not None)


@router.get("/model_group/info")
async def model_group_info(request: Request) -> JSONResponse:
    """Each model group the key may use, as LiteLLM's ``ModelGroupInfo``; ``?model_group=`` one of them."""
    gateway = gateway_of(request)
    caller = await gateway.keys.authenticate(request.headers.get("authorization"))
    groups = gateway.settings.model_groups()
    wanted = request.query_params.get("model_group")
    visible = [group for group in _visible_groups(gateway, caller) if wanted is None or group == wanted]
    if wanted is not None and not visible:
        raise NotFound(f"No model group `{wanted}`", param="model_group", code="model_not_found")
    data = [
        {
            "model_group": group,
            "providers": sorted({d.provider_model.split("/", 1)[0] for d in groups[group]}),
            "mode": "chat",
            "input_cost_per_token": None,
            "output_cost_per_token": None,
            "max_input_tokens": None,
            "max_output_tokens": None,
            "rpm": _total([d.rpm for d in groups[group]]),
            "tpm": _total([d.tpm for d in groups[group]]),
            "trust_policy": trust_policy(gateway, caller, group),
            "scoring_budget": _budget(gateway, group),
        }
        for group in visible
    ]
    return JSONResponse({"data": data})
