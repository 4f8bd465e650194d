"""LiteLLM's own option names, read from the installed litellm: what each section of a LiteLLM config may hold.

TrustGate acts on few of LiteLLM's keys (``litellm_config.IMPLEMENTED``). Any
other key of a LiteLLM section is either one of LiteLLM's options, which
TrustGate ignores and says so, or a mistake, named with the nearest name. To
tell them apart the names are read from the installed litellm, so they follow
its version instead of a copy that ages:

- the top level: the fields of its proxy's config model (``ConfigYAML``);
- ``router_settings``: the parameters of its ``Router``, which its proxy is built with;
- ``litellm_settings``: litellm's module settings, as its proxy sets each key on the module;
- ``general_settings``: the fields of its proxy's ``ConfigGeneralSettings``;
- a ``model_list`` entry: the fields of its ``Deployment``;
- ``litellm_params``: its deployment parameters (``GenericLiteLLMParams``,
  ``LiteLLM_Params``), the parameters it keeps for itself (``all_litellm_params``)
  and those of ``completion`` (OpenAI's, which a deployment may set as defaults).

Not every name LiteLLM reads is in these lists (its proxy reads a few keys by
name alone, ``guardrails`` or ``cache_params``), which is why a key in none of
them is not called a mistake unless it is close to a name. litellm is imported
only for a config with a key TrustGate does not act on, as its import takes
seconds, and the names are read once.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping

from ..base.litellm_module import imported_litellm

__all__ = ["litellm_names"]


def litellm_names(section: str) -> frozenset[str]:
    """LiteLLM's names for the keys of ``section``: "" (the top level), ``router_settings``,
    ``litellm_settings``, ``general_settings``, ``model_list[]`` or ``litellm_params``."""
    return _all_names().get(section, frozenset())


@functools.cache
def _all_names() -> Mapping[str, frozenset[str]]:
    litellm = imported_litellm()
    from litellm.proxy._types import ConfigGeneralSettings, ConfigYAML
    from litellm.types.router import Deployment, GenericLiteLLMParams, LiteLLM_Params
    from litellm.types.utils import all_litellm_params

    def parameters(function: object) -> set[str]:
        return {
            name
            for name, parameter in inspect.signature(function).parameters.items()  # type: ignore[arg-type]
            if parameter.kind not in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL) and name != "self"
        }

    return {
        "": frozenset(ConfigYAML.model_fields),
        "router_settings": frozenset(parameters(litellm.Router.__init__) - {"model_list"}),
        "litellm_settings": frozenset(name for name in vars(litellm) if not name.startswith("_")),
        "general_settings": frozenset(ConfigGeneralSettings.model_fields),
        "model_list[]": frozenset(Deployment.model_fields),
        "litellm_params": frozenset(
            {*GenericLiteLLMParams.model_fields, *LiteLLM_Params.model_fields, *all_litellm_params}
            | parameters(litellm.completion) - {"messages"}
        ),
    }
