"""The LiteLLM-style config file: env references, secrets, validation."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from proxy import ConfigError, default_config_path, load_settings, settings_from_dict
from proxy.assembly import build_scorers
from scoring.settings import ScoringSettings, default_data_dir
from tests.conftest import gateway_config
from tests.fake_upstream import FakeUpstream
from tests.servers import ServerThread

MINIMAL = {
    "model_list": [
        {
            "model_name": "m",
            "litellm_params": {"model": "openai/x", "api_base": "http://h/v1", "api_key": "os.environ/UPSTREAM_KEY"},
        }
    ],
    "general_settings": {"master_key": "os.environ/MASTER"},
}


@pytest.mark.unit
def test_env_references_resolve_to_secrets() -> None:
    settings = settings_from_dict(MINIMAL, {"UPSTREAM_KEY": "sk-up", "MASTER": "sk-master"})
    deployment = settings.model_list[0]
    assert deployment.api_key is not None and deployment.api_key.get_secret_value() == "sk-up"
    assert "sk-up" not in repr(settings) and "sk-master" not in repr(settings)
    assert sorted(settings.secrets()) == ["sk-master", "sk-up"]


@pytest.mark.unit
def test_missing_env_variable_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="UPSTREAM_KEY"):
        settings_from_dict(MINIMAL, {"MASTER": "m"})


@pytest.mark.unit
def test_auth_is_required_unless_explicitly_opened() -> None:
    open_config = {"model_list": MINIMAL["model_list"], "trustgate": {"allow_unauthenticated": True}}
    with pytest.raises(ConfigError, match="master_key"):
        settings_from_dict({"model_list": MINIMAL["model_list"]}, {"UPSTREAM_KEY": "k"})
    assert settings_from_dict(open_config, {"UPSTREAM_KEY": "k"}).trustgate.allow_unauthenticated


@pytest.mark.unit
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


@pytest.mark.unit
def test_default_config_routes_local_to_the_embedded_model() -> None:
    settings = load_settings(default_config_path(), {})
    assert settings.trustgate.local_upstream.enabled
    assert settings.model_groups()["local"][0].is_openai_compatible


@pytest.mark.unit
def test_default_config_keeps_its_trust_bc_tuned_for_one_cpu_slot() -> None:
    """The embedded config's explicit consistency fields are not overridden by any preset."""
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
@pytest.mark.unit
def test_a_bc_preset_fills_in_the_fields_the_config_leaves_out(
    consistency: dict[str, object], expected: tuple[str, str, int]
) -> None:
    config = {**MINIMAL, "trustgate": {"scoring": {"consistency": consistency}}}
    bc = settings_from_dict(config, {"UPSTREAM_KEY": "k", "MASTER": "m"}).trustgate.scoring.consistency
    assert (bc.procedure, bc.mode, bc.max_checks) == expected


@pytest.mark.unit
def test_an_unknown_bc_preset_is_a_config_error() -> None:
    config = {**MINIMAL, "trustgate": {"scoring": {"consistency": {"preset": "cheapest"}}}}
    with pytest.raises(ConfigError, match="preset"):
        settings_from_dict(config, {"UPSTREAM_KEY": "k", "MASTER": "m"})


@pytest.mark.unit
@pytest.mark.parametrize("text", ["[]", "model_list: []\ngeneral_settings: {master_key: k}", "::: not yaml"])
def test_invalid_files_are_config_errors(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError):
        load_settings(path, {})


@pytest.mark.unit
@pytest.mark.parametrize("enabled", [True, False])  # disabled live, `trustgate eval rag` still builds that judge
def test_an_nli_rag_judge_without_a_model_is_a_config_error(enabled: bool) -> None:
    config = {**MINIMAL, "trustgate": {"scoring": {"rag": {"judge": "nli", "enabled": enabled}}}}
    with pytest.raises(ConfigError, match="nli_model_dir"):
        settings_from_dict(config, {"UPSTREAM_KEY": "k", "MASTER": "m"})
    config["trustgate"]["scoring"]["factcheck"] = {"nli_model_dir": "/models/nli"}  # type: ignore[index]
    assert settings_from_dict(config, {"UPSTREAM_KEY": "k", "MASTER": "m"}).trustgate.scoring.rag.judge == "nli"


@pytest.mark.integration  # starts a process
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


@pytest.mark.unit
def test_an_old_option_name_still_reads_with_a_warning_naming_the_new_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "old-names.yaml"
    path.write_text(
        "model_list: [{model_name: m, litellm_params: {model: openai/x, api_base: 'http://h/v1'}}]\n"
        "general_settings: {master_key: k}\n"
        "trustgate:\n"
        "  store: {max_age_days: 2}\n"
        "  scoring:\n"
        "    sync_timeout: 40\n"
        "    per_key: {team: {sync_timeout: 50, on_low_trust: {escalation_timeout: 9}}}\n"
        "    queue: {scorer_timeout: 20, claim_idle_ms: 1500}\n"
    )
    with caplog.at_level("WARNING", logger="trustgate.config"):
        settings = load_settings(path, {})
    scoring = settings.trustgate.scoring
    assert (scoring.sync_timeout_s, scoring.queue.scorer_timeout_s, scoring.queue.claim_idle_s) == (40, 20, 1.5)
    assert settings.trustgate.store.max_age_s == 2 * 86400
    team = scoring.per_key["team"]
    assert team.sync_timeout_s == 50 and team.on_low_trust is not None and team.on_low_trust.escalation_timeout_s == 9
    warnings = sorted(r.getMessage() for r in caplog.records)
    assert warnings == [
        f"config {path}: trustgate.scoring.per_key.team.on_low_trust.escalation_timeout is deprecated: "
        "write trustgate.scoring.per_key.team.on_low_trust.escalation_timeout_s: 9 instead",
        f"config {path}: trustgate.scoring.per_key.team.sync_timeout is deprecated: "
        "write trustgate.scoring.per_key.team.sync_timeout_s: 50 instead",
        f"config {path}: trustgate.scoring.queue.claim_idle_ms is deprecated: "
        "write trustgate.scoring.queue.claim_idle_s: 1.5 (1500 milliseconds) instead",
        f"config {path}: trustgate.scoring.queue.scorer_timeout is deprecated: "
        "write trustgate.scoring.queue.scorer_timeout_s: 20 instead",
        f"config {path}: trustgate.scoring.sync_timeout is deprecated: "
        "write trustgate.scoring.sync_timeout_s: 40 instead",
        f"config {path}: trustgate.store.max_age_days is deprecated: "
        "write trustgate.store.max_age_s: 172800 (2 days) instead",
    ]


@pytest.mark.unit
def test_current_option_names_read_without_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    config = {**MINIMAL, "trustgate": {"scoring": {"sync_timeout_s": 40, "queue": {"claim_idle_s": 2}}}}
    with caplog.at_level("WARNING", logger="trustgate.config"):
        settings = settings_from_dict(config, {"UPSTREAM_KEY": "k", "MASTER": "m"})
    assert settings.trustgate.scoring.queue.claim_idle_s == 2
    assert caplog.records == []


@pytest.mark.unit
def test_an_option_given_by_its_old_and_its_new_name_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "both.yaml"
    path.write_text(
        "model_list: [{model_name: m, litellm_params: {model: openai/x}}]\n"
        "general_settings: {master_key: k}\n"
        "trustgate: {retries: {jitter: 1, jitter_s: 0.5}}\n"
    )
    with pytest.raises(ConfigError) as refused:
        load_settings(path, {})
    assert str(refused.value) == (
        f"config {path}: trustgate.retries.jitter and trustgate.retries.jitter_s are one option "
        "(jitter is its old name): keep jitter_s"
    )


@pytest.mark.unit
def test_an_old_name_whose_unit_changed_needs_a_number() -> None:
    config = {**MINIMAL, "trustgate": {"store": {"max_age_days": "a week"}}}
    with pytest.raises(ConfigError, match=r"^trustgate.store.max_age_days: must be a number of days, not 'a week'$"):
        settings_from_dict(config, {"UPSTREAM_KEY": "k", "MASTER": "m"})


@pytest.mark.parametrize(
    ("trustgate", "problem"),
    [
        (
            {"scoring": {"queue": {"scorer_timeout_s": 30}}},
            "trustgate.scoring: queue.scorer_timeout_s (30) must be below sync_timeout_s (30)",
        ),
        (
            {
                "scoring": {
                    "sync_timeout_s": 60,
                    "queue": {"scorer_timeout_s": 40},
                    "per_key": {"k": {"sync_timeout_s": 20}},
                }
            },
            "trustgate.scoring: queue.scorer_timeout_s (40) must be below per_key.k.sync_timeout_s (20)",
        ),
        (
            {"scoring": {"per_model": {"m": {"sync_timeout_s": 10}}}},
            "trustgate.scoring: queue.scorer_timeout_s (25) must be below per_model.m.sync_timeout_s (10)",
        ),
        (
            {"scoring": {"untrusted_threshold": 0.8}},
            "trustgate.scoring: untrusted_threshold (0.8) must be at most trusted_threshold (0.7)",
        ),
        (
            {"scoring": {"consistency": {"adaptive_low": 0.75}}},
            "trustgate.scoring.consistency: adaptive_low (0.75) must be at most adaptive_high (0.7)",
        ),
        (
            {"scoring": {"feedback": {"min_labels": 200, "max_labels": 100}}},
            "trustgate.scoring.feedback: min_labels (200) must be at most max_labels (100)",
        ),
        (
            {"scoring": {"mode": "sync", "per_model": {"m": {"on_low_trust": {"action": "block", "below": 0.8}}}}},
            "trustgate.scoring.on_low_trust.below (0.8) for model `m` must be at most trusted_threshold (0.7)",
        ),
        (
            {"retries": {"backoff_initial_s": 10}},
            "trustgate.retries: backoff_initial_s (10) must be at most backoff_max_s (8)",
        ),
        (
            {"local_upstream": {"enabled": True, "port": 4000}},
            "trustgate: local_upstream.port (4000) is server.port",
        ),
    ],
)
@pytest.mark.unit
def test_options_that_contradict_each_other_are_refused_naming_them_and_the_file(
    tmp_path: Path, trustgate: dict[str, object], problem: str
) -> None:
    path = tmp_path / "contradicts.yaml"
    path.write_text(yaml.safe_dump({**MINIMAL, "trustgate": trustgate}))
    with pytest.raises(ConfigError) as refused:
        load_settings(path, {"UPSTREAM_KEY": "k", "MASTER": "m"})
    assert str(refused.value).startswith(f"config {path}: {problem}: ")


@pytest.mark.parametrize(
    "trustgate",
    [
        {"scoring": {"sync_timeout_s": 10, "queue": {"scorer_timeout_s": 9.5}}},
        {"scoring": {"untrusted_threshold": 0.5, "trusted_threshold": 0.5}},  # no uncertain band: a choice
        {"scoring": {"mode": "sync", "on_low_trust": {"action": "block", "below": 0.7}}},
        {"scoring": {"on_low_trust": {"below": 0.9}}},  # annotate acts on nothing
        {"scoring": {"mode": "sync", "on_low_trust": {"action": "block", "on": "probability", "below": 0.9}}},
        {"local_upstream": {"enabled": True, "port": 4000}, "server": {"port": 0}},
        {"local_upstream": {"enabled": False, "port": 4000}},
    ],
)
@pytest.mark.unit
def test_options_near_a_contradiction_are_accepted(trustgate: dict[str, object]) -> None:
    settings_from_dict({**MINIMAL, "trustgate": trustgate}, {"UPSTREAM_KEY": "k", "MASTER": "m"})


@pytest.mark.unit
def test_the_default_data_dir_is_the_variables_else_the_xdg_data_directory(tmp_path: Path) -> None:
    home = Path.home()
    assert default_data_dir({}) == home / ".local" / "share" / "trustgate"
    assert default_data_dir({"XDG_DATA_HOME": str(tmp_path / "xdg")}) == tmp_path / "xdg" / "trustgate"
    assert default_data_dir({"XDG_DATA_HOME": "relative"}) == home / ".local" / "share" / "trustgate"  # invalid: unset
    named = {"TRUSTGATE_DATA_DIR": str(tmp_path / "named"), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    assert default_data_dir(named) == tmp_path / "named"


@pytest.mark.unit
def test_the_default_data_dir_does_not_follow_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TRUSTGATE_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    found = []
    for folder in (tmp_path / "a", tmp_path / "b"):
        folder.mkdir()
        monkeypatch.chdir(folder)
        found.append(load_settings(default_config_path(), {}).trustgate.scoring.data_dir)
    assert found == [tmp_path / "xdg" / "trustgate"] * 2
    monkeypatch.setenv("TRUSTGATE_DATA_DIR", "state")  # relative: from the folder it is set in
    assert ScoringSettings().data_dir == tmp_path / "b" / "state"


@pytest.mark.unit
def test_relative_paths_in_a_config_file_are_relative_to_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "etc"
    folder.mkdir()
    path = folder / "config.yaml"
    path.write_text(
        "model_list: [{model_name: m, litellm_params: {model: openai/x}}]\n"
        "general_settings: {master_key: k}\n"
        "trustgate:\n"
        "  store: {path: records/trust.sqlite3}\n"
        "  local_upstream: {model_path: models/m.gguf}\n"
        "  scoring:\n"
        "    data_dir: state\n"
        "    calibration_path: /abs/calibration.json\n"
        "    feedback: {fits_path: ../fits.json}\n"
        "    consistency: {vectors_path: vectors.bin}\n"
        "    factcheck: {nli_model_dir: nli, wordnet_dir: wordnet}\n"
    )
    monkeypatch.chdir(tmp_path)
    settings = load_settings(Path("etc/config.yaml"), {})
    scoring = settings.trustgate.scoring
    assert scoring.data_dir == Path("etc/state") and settings.trustgate.store.path == Path("etc/records/trust.sqlite3")
    assert settings.trustgate.local_upstream.model_path == Path("etc/models/m.gguf")
    assert scoring.calibration_path == Path("/abs/calibration.json")
    assert scoring.feedback.fits_path == Path("etc/../fits.json")
    assert (scoring.consistency.vectors_path, scoring.factcheck.nli_model_dir, scoring.factcheck.wordnet_dir) == (
        Path("etc/vectors.bin"),
        Path("etc/nli"),
        Path("etc/wordnet"),
    )
    given = settings_from_dict(
        {**MINIMAL, "trustgate": {"scoring": {"data_dir": "state"}}}, {"UPSTREAM_KEY": "k", "MASTER": "m"}
    )
    assert given.trustgate.scoring.data_dir == Path("state")  # no file: as given


@pytest.mark.integration  # starts a gateway on a socket
def test_the_record_store_defaults_to_the_data_dir(
    tmp_path: Path, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    data_dir = tmp_path / "data"
    config = gateway_config(fake_upstream.url)
    config["trustgate"] = {"store": {"max_records": 100}, "scoring": {"data_dir": str(data_dir)}}
    start_gateway(config)
    assert (data_dir / "trust-records.sqlite3").is_file()
