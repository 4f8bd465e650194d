"""What a LiteLLM proxy config says that TrustGate reads, and what it does not.

A LiteLLM config is brought as it is: ``litellm_settings`` fallbacks and
``router_settings`` both feed the one ``RouterSettings``; every key TrustGate
does not implement is named in one warning at start-up rather than dropped
without a word. Deployment ``litellm_params`` are not listed here: the litellm
path hands them to litellm whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["FALLBACK_KINDS", "merge_litellm_settings", "unimplemented_keys"]

FALLBACK_KINDS = ("fallbacks", "context_window_fallbacks", "content_policy_fallbacks")

# Per section, the keys TrustGate acts on.
IMPLEMENTED: dict[str, frozenset[str]] = {
    "": frozenset({"model_list", "router_settings", "litellm_settings", "general_settings", "trustgate"}),
    "router_settings": frozenset({"num_retries", "timeout", "retry_after", "model_group_alias", *FALLBACK_KINDS}),
    "litellm_settings": frozenset({"num_retries", "request_timeout", *FALLBACK_KINDS}),
    "general_settings": frozenset({"master_key"}),
    "model_list[]": frozenset({"model_name", "litellm_params", "model_info"}),
}


def unimplemented_keys(raw: Mapping[str, Any]) -> list[str]:
    """The paths of the LiteLLM keys in ``raw`` that TrustGate ignores, in file order."""
    ignored = [key for key in raw if key not in IMPLEMENTED[""]]
    for section in ("router_settings", "litellm_settings", "general_settings"):
        value = raw.get(section)
        if isinstance(value, Mapping):
            ignored += [f"{section}.{key}" for key in value if key not in IMPLEMENTED[section]]
    for index, entry in enumerate(raw.get("model_list") or []):
        if isinstance(entry, Mapping):
            ignored += [f"model_list[{index}].{key}" for key in entry if key not in IMPLEMENTED["model_list[]"]]
    return ignored


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
