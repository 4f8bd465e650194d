"""Each deployment's price: its litellm_params first, litellm's own cost map after, and none is never 0."""

from __future__ import annotations

from typing import Any

import litellm
import pytest

from proxy.config.settings import ConfigError, Deployment, settings_from_dict
from proxy.upstream.litellm_backend import listed_price
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


@pytest.mark.parametrize(
    "model",
    [
        "openai/gpt-4o-mini",
        "openai/gpt-4o",
        "openai/text-embedding-3-small",
        "openai/o1-mini",  # litellm guesses a family and answers 0: no entry prices it
        "openai/whisper-1",  # priced per second, not per token
        "openai/gpt-3.5-turbo-instruct",  # an entry of another provider (text-completion-openai): not found
        "openai/dall-e-3",
        "openai/ft:gpt-4o-mini:org::abc",
        "hosted_vllm/meta-llama/Llama-3-8B",
        "lm_studio/qwen",
    ],
)
def test_the_pass_through_path_prices_from_litellms_map_as_its_api_finds_the_entry(model: str) -> None:
    """The pass-through path reads litellm's map without importing litellm; a deployment litellm serves is looked
    up through its API: both find the same entry, and neither calls an unpriced model free."""
    prices = _prices(_deployment("m", model))
    found = prices.price("m", 0)
    listed = listed_price(Deployment(model_name="m", litellm_params={"model": model}))
    assert (None if found is None else (found.prompt_usd, found.completion_usd)) == listed
    if model in ("openai/gpt-4o-mini", "openai/text-embedding-3-small"):
        assert found is not None and found.source == "litellm"
    if model in ("openai/o1-mini", "openai/whisper-1", "openai/dall-e-3"):
        assert found is None
