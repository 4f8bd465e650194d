"""Every option of every config model, read from the models themselves: how they are named."""

from __future__ import annotations

import re
import types
from typing import Any, Union, get_args, get_origin

import pytest
from pydantic import BaseModel

from proxy import GatewaySettings
from proxy.config.settings import Deployment, RouterSettings

pytestmark = pytest.mark.unit

# LiteLLM's own sections keep LiteLLM's names (``timeout``, ``retry_after``): a LiteLLM config is brought as it is.
LITELLM_MODELS = (Deployment, RouterSettings)
# A time named for any unit but seconds, or for none.
NOT_SECONDS = re.compile(r"(timeout|_ms|_seconds|_minutes|_hours|_days|_window|_cap|_age|_idle)$")


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if get_origin(annotation) in (Union, types.UnionType, dict, list):
        return [model for arg in get_args(annotation) for model in _models_in(arg)]
    return []


def config_models() -> list[type[BaseModel]]:
    """Every model the config file is read into, from ``GatewaySettings`` down, each once."""
    found: list[type[BaseModel]] = []
    waiting: list[type[BaseModel]] = [GatewaySettings]
    while waiting:
        model = waiting.pop()
        if model not in found:
            found.append(model)
            waiting += [m for field in model.model_fields.values() for m in _models_in(field.annotation)]
    return found


CONFIG_MODELS = config_models()
TRUSTGATE_MODELS = [model for model in CONFIG_MODELS if model not in LITELLM_MODELS]


def test_the_walk_reaches_the_models_nested_in_lists_dicts_and_options() -> None:
    names = {model.__name__ for model in CONFIG_MODELS}
    assert {"Deployment", "ApiKey", "PolicySettings", "LowTrustPolicy", "BudgetLimits", "AlertmanagerSettings"} <= names


@pytest.mark.parametrize("model", TRUSTGATE_MODELS, ids=lambda model: model.__name__)
def test_every_time_option_is_named_for_seconds(model: type[BaseModel]) -> None:
    assert [name for name in model.model_fields if NOT_SECONDS.search(name)] == []


@pytest.mark.parametrize("model", CONFIG_MODELS, ids=lambda model: model.__name__)
def test_each_old_name_leads_to_an_option_and_is_none_itself(model: type[BaseModel]) -> None:
    old_names = getattr(model, "old_names", {})
    assert [renamed.new for renamed in old_names.values() if renamed.new not in model.model_fields] == []
    assert [old for old in old_names if old in model.model_fields] == []


@pytest.mark.parametrize("model", CONFIG_MODELS, ids=lambda model: model.__name__)
def test_every_option_says_what_it_is(model: type[BaseModel]) -> None:
    """The configuration reference is generated from these descriptions: an option without one is undocumented."""
    assert [name for name, field in model.model_fields.items() if not (field.description or "").strip()] == []
