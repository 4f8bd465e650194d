"""The LiteLLM-style config file: env references, secrets, validation."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from proxy import ConfigError, default_config_path, load_settings, settings_from_dict
from proxy.server.assembly import build_scorers
from scoring.settings import ScoringSettings

pytestmark = pytest.mark.unit

MINIMAL = {
    "model_list": [
        {
            "model_name": "m",
            "litellm_params": {"model": "openai/x", "api_base": "http://h/v1", "api_key": "os.environ/UPSTREAM_KEY"},
        }
    ],
    "general_settings": {"master_key": "os.environ/MASTER"},
}


def test_env_references_resolve_to_secrets() -> None:
    settings = settings_from_dict(MINIMAL, {"UPSTREAM_KEY": "sk-up", "MASTER": "sk-master"})
    deployment = settings.model_list[0]
    assert deployment.api_key is not None and deployment.api_key.get_secret_value() == "sk-up"
    assert "sk-up" not in repr(settings) and "sk-master" not in repr(settings)
    assert sorted(settings.secrets()) == ["sk-master", "sk-up"]


def test_missing_env_variable_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="UPSTREAM_KEY"):
        settings_from_dict(MINIMAL, {"MASTER": "m"})


def test_auth_is_required_unless_explicitly_opened() -> None:
    open_config = {"model_list": MINIMAL["model_list"], "trustgate": {"allow_unauthenticated": True}}
    with pytest.raises(ConfigError, match="master_key"):
        settings_from_dict({"model_list": MINIMAL["model_list"]}, {"UPSTREAM_KEY": "k"})
    assert settings_from_dict(open_config, {"UPSTREAM_KEY": "k"}).trustgate.allow_unauthenticated


def test_litellm_proxy_config_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "model_list:\n"
        "  - model_name: gpt-4o\n"
        "    litellm_params:\n"
        "      model: azure/gpt-4o\n"
        "      api_base: https://example.invalid\n"
        "      api_key: os.environ/AZURE_KEY\n"
        "      api_version: '2024-06-01'\n"
        "  - model_name: local\n"
        "    litellm_params: {model: openai/smollm2, api_base: 'http://127.0.0.1:8090/v1'}\n"
        "router_settings:\n"
        "  num_retries: 3\n"
        "  fallbacks: [{gpt-4o: [local]}]\n"
        "general_settings:\n"
        "  master_key: sk-1234\n"
        "litellm_settings:\n"
        "  drop_params: true\n"
    )
    settings = load_settings(path, {"AZURE_KEY": "k"})
    assert settings.router_settings.fallbacks_for("gpt-4o") == ["local"]
    assert not settings.model_list[0].is_openai_compatible  # azure goes through litellm
    assert settings.model_list[0].litellm_params_plain()["api_key"] == "k"


def test_default_config_routes_local_to_the_embedded_model() -> None:
    settings = load_settings(default_config_path(), {})
    assert settings.trustgate.local_upstream.enabled
    assert settings.model_groups()["local"][0].is_openai_compatible


def test_default_config_keeps_its_trust_bc_tuned_for_one_cpu_slot() -> None:
    """The embedded config's explicit consistency fields (issue 16) are not overridden by any preset."""
    bc = load_settings(default_config_path(), {}).trustgate.scoring.consistency
    assert bc.preset is None
    assert (bc.mode, bc.max_checks, bc.concurrency, bc.answer_max_tokens, bc.prompt_examples) == (
        "adaptive",
        4,
        1,
        4,
        2,
    )


@pytest.mark.parametrize(
    ("consistency", "expected"),
    [
        ({"preset": "paper"}, ("paper", "graded", 10)),
        ({"preset": "paper", "max_checks": 4}, ("paper", "graded", 4)),  # a field set beside the preset wins
        ({"preset": "paper", "procedure": "debiased"}, ("debiased", "graded", 10)),
        ({}, ("paper", "adaptive", 4)),
    ],
)
def test_a_bc_preset_fills_in_the_fields_the_config_leaves_out(
    consistency: dict[str, object], expected: tuple[str, str, int]
) -> None:
    config = {**MINIMAL, "trustgate": {"scoring": {"consistency": consistency}}}
    bc = settings_from_dict(config, {"UPSTREAM_KEY": "k", "MASTER": "m"}).trustgate.scoring.consistency
    assert (bc.procedure, bc.mode, bc.max_checks) == expected


def test_an_unknown_bc_preset_is_a_config_error() -> None:
    config = {**MINIMAL, "trustgate": {"scoring": {"consistency": {"preset": "cheapest"}}}}
    with pytest.raises(ConfigError, match="preset"):
        settings_from_dict(config, {"UPSTREAM_KEY": "k", "MASTER": "m"})


@pytest.mark.parametrize("text", ["[]", "model_list: []\ngeneral_settings: {master_key: k}", "::: not yaml"])
def test_invalid_files_are_config_errors(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError):
        load_settings(path, {})


@pytest.mark.parametrize("enabled", [True, False])  # disabled live, `trustgate eval rag` still builds that judge
def test_an_nli_rag_judge_without_a_model_is_a_config_error(enabled: bool) -> None:
    config = {**MINIMAL, "trustgate": {"scoring": {"rag": {"judge": "nli", "enabled": enabled}}}}
    with pytest.raises(ConfigError, match="nli_model_dir"):
        settings_from_dict(config, {"UPSTREAM_KEY": "k", "MASTER": "m"})
    config["trustgate"]["scoring"]["factcheck"] = {"nli_model_dir": "/models/nli"}  # type: ignore[index]
    assert settings_from_dict(config, {"UPSTREAM_KEY": "k", "MASTER": "m"}).trustgate.scoring.rag.judge == "nli"


def test_the_gateway_refuses_to_start_on_an_nli_model_it_cannot_load(tmp_path: Path) -> None:
    settings = ScoringSettings.model_validate(
        {
            "consistency": {"enabled": False},
            "rag": {"judge": "nli"},
            "factcheck": {"enabled": False, "nli_model_dir": str(tmp_path / "missing")},
        }
    )

    async def build() -> None:
        async with contextlib.AsyncExitStack() as stack:
            await build_scorers(settings, stack)

    with pytest.raises(ConfigError, match=r"trustgate.scoring.factcheck.nli_model_dir: cannot load the NLI model"):
        asyncio.run(build())
