"""Each deployment's price: its litellm_params first, litellm's own cost map after, and none is never 0."""

from __future__ import annotations

from typing import Any

import litellm
import pytest

from proxy.config.settings import ConfigError, settings_from_dict
from proxy.upstream.prices import DeploymentPrice, PriceList
from proxy.upstream.replies import TokenUsage

pytestmark = pytest.mark.unit

LOCAL_BASE = "http://127.0.0.1:8090/v1"  # the embedded model server's default address


def _deployment(group: str, model: str, api_base: str = "http://upstream.invalid/v1", **params: Any) -> dict[str, Any]:
    return {"model_name": group, "litellm_params": {"model": model, "api_base": api_base, **params}}


def _prices(*deployments: dict[str, Any], local: bool = False) -> PriceList:
    config = {
        "model_list": list(deployments),
        "trustgate": {"allow_unauthenticated": True, "local_upstream": {"enabled": local}},
    }
    return PriceList.of(settings_from_dict(config, {}))


def test_a_configured_price_wins_over_litellms_map() -> None:
    prices = _prices(_deployment("m", "openai/gpt-4o-mini", input_cost_per_token=0.001, output_cost_per_token=0.002))
    assert prices.price("m", 0) == DeploymentPrice(0.001, 0.002, "config")


def test_a_model_litellm_prices_is_priced_from_its_map() -> None:
    prices = _prices(_deployment("m", "openai/gpt-4o-mini"), _deployment("a", "anthropic/claude-haiku-4-5"))
    listed = litellm.get_model_info(model="openai/gpt-4o-mini")
    prompt, completion = listed["input_cost_per_token"], listed["output_cost_per_token"]
    assert prompt is not None and completion is not None
    assert prices.price("m", 0) == DeploymentPrice(prompt, completion, "litellm")
    assert prices.price("a", 0) is not None and prices.price("a", 0).source == "litellm"  # type: ignore[union-attr]


def test_prices_written_as_text_are_numbers_and_a_negative_one_is_refused() -> None:
    """YAML reads ``1e-6`` as text, and an os.environ/ reference is text: both are read as numbers."""
    prices = _prices(_deployment("m", "openai/x", input_cost_per_token="1e-6", output_cost_per_token="2e-6"))
    assert prices.price("m", 0) == DeploymentPrice(1e-6, 2e-6, "config")
    with pytest.raises(ConfigError, match="input_cost_per_token must be 0 or more"):
        _prices(_deployment("m", "openai/x", input_cost_per_token=-1))


def test_an_embedding_deployment_may_price_its_input_alone() -> None:
    prices = _prices(_deployment("e", "openai/my-embedder", input_cost_per_token=1e-7))
    assert prices.price("e", 0) == DeploymentPrice(1e-7, 0.0, "config")


def test_a_deployment_without_a_known_price_prices_its_calls_unknown_never_zero() -> None:
    prices = _prices(_deployment("m", "openai/gpt-4o-mini"), _deployment("m", "hosted_vllm/my-own-finetune"))
    assert prices.priced("m")
    assert prices.unpriced() == ["m:1 (hosted_vllm/my-own-finetune)"]
    usage = TokenUsage(prompt_tokens=10, completion_tokens=5)
    unknown = prices.cost("m", 1, usage)
    assert (unknown.prompt_tokens, unknown.completion_tokens, unknown.usd) == (10, 5, None)
    known = prices.cost("m", 0, usage)
    assert known.usd == pytest.approx(10 * prices.price("m", 0).prompt_usd + 5 * prices.price("m", 0).completion_usd)  # type: ignore[union-attr]
    assert prices.cost("m", 0, None).usd is None  # no usage reported: unknown too


def test_the_embedded_model_server_has_no_list_price_unless_configured() -> None:
    """It runs on the operator's machine: litellm's map is not asked, even for a name it knows."""
    unpriced = _prices(_deployment("local", "openai/gpt-4o-mini", api_base=LOCAL_BASE), local=True)
    assert not unpriced.priced("local")
    priced = _prices(
        _deployment("local", "openai/smollm2", api_base=LOCAL_BASE, input_cost_per_token=2e-8, output_cost_per_token=0),
        local=True,
    )
    assert priced.price("local", 0) == DeploymentPrice(2e-8, 0.0, "config")
