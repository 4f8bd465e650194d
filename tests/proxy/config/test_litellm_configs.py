"""LiteLLM proxy configs load as they are: honoured keys work, every ignored one is named once, typos are refused.

The three configs under ``litellm_configs/`` are our own, written after the
keys LiteLLM documents: load balancing, production (callbacks, cache,
fallbacks, aliases) and observability (OTel, guardrails).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import yaml

from proxy.config.settings import ConfigError, load_settings, settings_from_dict
from proxy.upstream.errors import UpstreamErrors, fallback_kind
from tests.conftest import gateway_config
from tests.fake_upstream import FakeUpstream
from tests.servers import ServerThread
from trustgate.cli import main

CONFIGS = Path(__file__).with_name("litellm_configs")
ENV = {
    "PRIMARY_KEY": "sk-1",
    "SECONDARY_KEY": "sk-2",
    "REDIS_HOST": "redis",
    "LITELLM_MASTER_KEY": "sk-master",
    "OPENAI_API_KEY": "sk-openai",
    "DATABASE_URL": "postgres://db",
    "ANTHROPIC_API_KEY": "sk-ant",
}
IGNORED = {
    "load_balancing": [
        "router_settings.routing_strategy (usage-based-routing-v2: simple-shuffle used)",
        "router_settings.redis_host (os.environ/REDIS_HOST not read)",
        "router_settings.redis_port",
        "router_settings.enable_pre_call_checks",
        "router_settings.allowed_fails",
        "router_settings.cooldown_time",
        "model_list[2].model_info",
    ],
    "production": [
        "litellm_settings.drop_params",
        "litellm_settings.success_callback",
        "litellm_settings.failure_callback",
        "litellm_settings.cache",
        "litellm_settings.cache_params",
        "general_settings.database_url (os.environ/DATABASE_URL not read)",
        "general_settings.alerting",
        "general_settings.proxy_batch_write_at",
    ],
    "observability": [
        "guardrails",
        "litellm_settings.callbacks",
        "litellm_settings.service_callback",
        "litellm_settings.turn_off_message_logging",
    ],
}


def fixture(name: str, upstream: str = "http://127.0.0.1:1") -> dict[str, Any]:
    return yaml.safe_load((CONFIGS / f"{name}.yaml").read_text().replace("{upstream}", upstream))


@pytest.mark.unit
@pytest.mark.parametrize("name", list(IGNORED))
def test_fixture_loads_with_one_warning_naming_what_is_ignored(name: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="trustgate.config")
    settings_from_dict(fixture(name), ENV)
    warnings = [r.getMessage() for r in caplog.records if r.name == "trustgate.config"]
    assert len(warnings) == 1
    named = warnings[0].split(": ", 1)[1].split(", ")
    assert sorted(named) == sorted(IGNORED[name])


@pytest.mark.unit
def test_litellm_settings_fallbacks_and_aliases_are_honoured() -> None:
    router = settings_from_dict(fixture("production"), ENV).router_settings
    assert router.fallbacks_for("primary") == ["backup"]
    assert router.fallbacks_for("backup", "context_window_fallbacks") == ["long-context"]
    assert router.fallbacks_for("primary", "content_policy_fallbacks") == ["backup"]
    assert router.aliases() == {"gpt-4": "primary", "internal-mini": "backup"}
    assert router.listed_aliases() == ["gpt-4"] and router.num_retries == 0 and router.timeout == 20


@pytest.mark.integration
def test_fallback_from_litellm_settings_serves_a_broken_group(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = start_gateway(fixture("production", fake_upstream.url), ENV)  # type: ignore[attr-defined]
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-master", max_retries=0)
    for model in ("primary", "gpt-4"):  # the group, and its alias
        reply = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "fall back"}])
        assert reply.choices[0].message.content == "You said: fall back"
    assert [r["model"] for r in fake_upstream.requests] == ["gpt-4o-mini", "gpt-4o-mini"]  # backup's wire model
    listed = {m.id for m in client.models.list()}
    assert listed == {"primary", "backup", "long-context", "gpt-4"}  # the hidden alias is not listed
    assert client.models.retrieve("gpt-4").id == "gpt-4"


@pytest.mark.unit
@pytest.mark.parametrize(
    "message, kind",
    [
        ("This model's maximum context length is 8192 tokens", "context_window_fallbacks"),
        ("Error code: context_length_exceeded", "context_window_fallbacks"),
        (
            "The response was filtered due to the prompt triggering content management policy",
            "content_policy_fallbacks",
        ),
        ("Invalid value for temperature", None),
    ],
)
def test_refusals_fall_back_only_by_their_kind(message: str, kind: str | None) -> None:
    errors = UpstreamErrors([])
    refused = errors.for_status(400, message)
    assert fallback_kind(refused) == kind and message not in refused.message  # the text is read, never sent
    assert fallback_kind(errors.for_status(503, message)) == "fallbacks"


@pytest.mark.unit
@pytest.mark.parametrize(
    "section, error",
    [
        ({"trustgate": {"server": {"prot": 4000}}}, "trustgate.server.prot: unknown key"),
        ({"trustgate": {"scoring": {"queue": {"max_sise": 3}}}}, "trustgate.scoring.queue.max_sise: unknown key"),
        (
            {"trustgate": {"keys": [{"key": "k", "name": "a", "models": ["gpt-17"]}]}},
            "trustgate.keys[0].models: unknown model `gpt-17`",
        ),
        (
            {"trustgate": {"scoring": {"per_model": {"gpt-17": {"mode": "off"}}}}},
            "trustgate.scoring.per_model: unknown model `gpt-17`",
        ),
        ({"router_settings": {"model_group_alias": {"x": "gpt-17"}}}, "model_group_alias.x: unknown model group"),
        ({"litellm_settings": {"fallbacks": [{"fake": ["gpt-17"]}]}}, "fallbacks: unknown model group `gpt-17`"),
    ],
)
def test_typos_and_unknown_models_are_one_line_errors(section: dict[str, Any], error: str) -> None:
    with pytest.raises(ConfigError) as caught:
        settings_from_dict({**gateway_config("http://127.0.0.1:1"), **section}, {})
    assert error in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.unit
def test_bad_provider_prefix_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = gateway_config("http://127.0.0.1:1")
    config["model_list"][0]["litellm_params"]["model"] = "openia/gpt-4o"
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["serve", "--config", str(path), "--port", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert "openia/gpt-4o" in err and "provider" in err and len(err.splitlines()) == 1


@pytest.mark.integration
def test_liveliness_is_litellms_spelling_of_liveness(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = start_gateway(gateway_config(fake_upstream.url))  # type: ignore[attr-defined]
    assert httpx.get(f"{server.url}/health/liveliness").json() == {"status": "ok"}


@pytest.mark.unit
def test_fixture_files_load_from_disk(tmp_path: Path) -> None:
    path = tmp_path / "observability.yaml"
    path.write_text(yaml.safe_dump(fixture("observability")))
    settings = load_settings(path, ENV)
    assert settings.trustgate.telemetry.service_name == "assistant-gateway"


@pytest.mark.integration
@pytest.mark.parametrize("passthrough", [True, False], ids=["passthrough", "litellm"])
@pytest.mark.parametrize("refusal", ["too-long", "filtered"])
def test_a_refusal_of_its_kind_falls_back_over_the_wire(
    refusal: str, passthrough: bool, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """A provider's context-window or content-policy refusal (its own wording, HTTP 400) sends the request to the
    group its LiteLLM list names; any other 400 goes back to the client as it is."""
    config = gateway_config(
        fake_upstream.url,
        litellm_settings={
            "context_window_fallbacks": [{"fake": ["roomy"]}],
            "content_policy_fallbacks": [{"fake": ["roomy"]}],
        },
    )
    config["model_list"].append(
        {
            "model_name": "roomy",
            "litellm_params": {
                "model": "openai/gpt-4.1",
                "api_base": f"{fake_upstream.url}/v1",
                "api_key": "sk-upstream-secret",
            },
        }
    )
    config["trustgate"] = {"passthrough": passthrough, "scoring": {"mode": "off"}}
    server = start_gateway(config)
    ask = {"model": "fake", "messages": [{"role": "user", "content": f"[{refusal}:gpt-4o-mini] hello"}]}
    answered = httpx.post(
        f"{server.url}/v1/chat/completions", json=ask, headers={"authorization": "Bearer sk-test-master"}, timeout=30
    )
    assert answered.status_code == 200, answered.text
    assert answered.headers["x-trustgate-model-group"] == "roomy"
    assert answered.headers["x-trustgate-fallback"] == "fake"
    assert [r["model"] for r in fake_upstream.requests] == ["gpt-4o-mini", "gpt-4.1"]
    refused = httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={"authorization": "Bearer sk-test-master"},
        json={**ask, "messages": [{"role": "user", "content": "[fail:400] hello"}]},
        timeout=30,
    )
    assert refused.status_code == 400 and [r["model"] for r in fake_upstream.requests][2:] == ["gpt-4o-mini"]
