"""Mistakes in a config file are named where they are, with what was most likely meant.

A key that is neither TrustGate's nor LiteLLM's, close to a name that is, is a
typo: refused when TrustGate acts on the name it is close to (the config would
run without what it meant), named in a warning when that name is one of
LiteLLM's options. LiteLLM's own options, which TrustGate ignores, are named as
such, never as typos; the names come from the installed litellm. A YAML syntax
error names the file, line and column in one line.
"""

from __future__ import annotations

import inspect
import logging
from pathlib import Path
from typing import Any

import litellm
import pytest
import yaml

from proxy.config.litellm_config import IMPLEMENTED
from proxy.config.settings import ConfigError, load_settings
from tests.conftest import gateway_config

pytestmark = pytest.mark.unit

PATHS = {"passthrough": True, "litellm": False}


def written(tmp_path: Path, config: dict[str, Any], passthrough: bool = True) -> Path:
    config.setdefault("trustgate", {})["passthrough"] = passthrough
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def refusal(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load_settings(path, {})
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"config {path}: ")
    return message.removeprefix(f"config {path}: ")


def warnings(caplog: pytest.LogCaptureFixture, path: Path) -> list[str]:
    lines = [r.getMessage() for r in caplog.records if r.name == "trustgate.config"]
    assert all(line.startswith(f"config {path}: ") for line in lines)
    return [line.removeprefix(f"config {path}: ") for line in lines]


@pytest.mark.parametrize("passthrough", PATHS.values(), ids=PATHS)
def test_a_misspelt_api_base_is_refused_with_the_name_meant(tmp_path: Path, passthrough: bool) -> None:
    """Left to run, the deployment would have no address of its own: litellm's default for its provider instead."""
    config = gateway_config("http://127.0.0.1:1")
    params = config["model_list"][0]["litellm_params"]
    params["api_bse"] = params.pop("api_base")
    assert refusal(written(tmp_path, config, passthrough)) == (
        "model_list[0].litellm_params.api_bse: unknown key (did you mean api_base?)"
    )


def test_a_misspelt_option_trustgate_acts_on_is_a_typo_not_an_unimplemented_feature(tmp_path: Path) -> None:
    config = gateway_config("http://127.0.0.1:1")
    config["router_settings"] = {"num_retrys": 1}
    assert refusal(written(tmp_path, config)) == "router_settings.num_retrys: unknown key (did you mean num_retries?)"
    config["router_settings"] = {}
    config["general_settings"] = {"master_ky": "sk-master"}
    assert refusal(written(tmp_path, config)) == "general_settings.master_ky: unknown key (did you mean master_key?)"


def test_a_misspelt_top_level_key_is_named_before_what_it_leaves_missing(tmp_path: Path) -> None:
    config = gateway_config("http://127.0.0.1:1")
    config = {"model_lst": config.pop("model_list"), **config}
    assert refusal(written(tmp_path, config)) == "model_lst: unknown top-level key (did you mean model_list?)"


def test_every_misspelling_is_named_at_once(tmp_path: Path) -> None:
    config = gateway_config("http://127.0.0.1:1")
    config["model_list"][0]["litellm_params"]["stream_timout"] = 50
    config["litellm_settings"] = {"request_timout": 9}
    assert refusal(written(tmp_path, config)) == (
        "model_list[0].litellm_params.stream_timout: unknown key (did you mean stream_timeout?); "
        "litellm_settings.request_timout: unknown key (did you mean request_timeout?)"
    )


def test_a_litellm_option_trustgate_ignores_is_named_as_such_and_its_typo_as_a_typo(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="trustgate.config")
    config = gateway_config("http://127.0.0.1:1")
    config["router_settings"] = {"cooldown_time": 30, "alowed_fails": 3}
    path = written(tmp_path, config)
    load_settings(path, {})
    assert warnings(caplog, path) == [
        "router_settings.alowed_fails: unknown key (did you mean allowed_fails, a LiteLLM option TrustGate ignores?)",
        "LiteLLM settings TrustGate does not implement, ignored: router_settings.cooldown_time",
    ]


@pytest.mark.parametrize("passthrough", PATHS.values(), ids=PATHS)
def test_a_deployments_misspelt_litellm_parameter_is_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, passthrough: bool
) -> None:
    """litellm takes a deployment's parameters it does not know on to the provider: a typo is only warned of."""
    caplog.set_level(logging.WARNING, logger="trustgate.config")
    config = gateway_config("http://127.0.0.1:1")
    config["model_list"][0]["litellm_params"].update(api_verison="2024-06-01", organization="org-1")
    path = written(tmp_path, config, passthrough)
    settings = load_settings(path, {})
    typo = "model_list[0].litellm_params.api_verison: unknown key (did you mean api_version?)"
    ignored = "LiteLLM settings TrustGate does not implement, ignored: model_list[0].litellm_params.organization"
    if passthrough:
        assert warnings(caplog, path) == [typo, f"{ignored} (pass-through deployment)"]
    else:  # handed to litellm as written, as LiteLLM's proxy would
        assert warnings(caplog, path) == [typo]
        assert settings.model_list[0].litellm_params["organization"] == "org-1"


def test_every_router_parameter_of_the_installed_litellm_is_an_option_not_a_typo(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The names are litellm's own: each of its Router's parameters TrustGate ignores is named as ignored."""
    caplog.set_level(logging.WARNING, logger="trustgate.config")
    parameters = set(inspect.signature(litellm.Router.__init__).parameters) - {"self", "model_list", "kwargs"}
    ignored = sorted(parameters - IMPLEMENTED["router_settings"])
    config = gateway_config("http://127.0.0.1:1")
    config["router_settings"] = dict.fromkeys(ignored, 1)
    path = written(tmp_path, config)
    load_settings(path, {})
    (warning,) = warnings(caplog, path)
    assert warning == "LiteLLM settings TrustGate does not implement, ignored: " + ", ".join(
        f"router_settings.{name}" for name in ignored
    )


def test_an_unknown_key_of_trustgates_own_section_names_the_option_meant(tmp_path: Path) -> None:
    config = gateway_config("http://127.0.0.1:1")
    config["trustgate"] = {"server": {"prot": 4000}}
    assert refusal(written(tmp_path, config)) == "trustgate.server.prot: unknown key (did you mean port?)"
    config["trustgate"] = {"scoring": {"per_model": {"fake": {"mdoe": "off"}}}}
    assert refusal(written(tmp_path, config)) == (
        "trustgate.scoring.per_model.fake.mdoe: unknown key (did you mean mode?)"
    )


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        (
            "model_list:\n  - model_name: fake\n    litellm_params:\n      model: openai/x\n     api_base: http://h\n",
            "line 5, column 6",
            "expected <block end>, but found '<block mapping start>' (while parsing a block mapping at line 2)",
        ),
        ('model_list:\n  - model_name: "fake\n', "line 3, column 1", "found unexpected end of stream"),
        ("general_settings: {master_key: k\n", "line 2, column 1", "expected ',' or '}', but got '<stream end>'"),
        ("a: b: c\n", "line 1, column 5", "mapping values are not allowed here"),
    ],
    ids=["indentation", "unclosed-quote", "unclosed-brace", "two-colons"],
)
def test_a_yaml_error_names_the_file_line_and_column_in_one_line(
    tmp_path: Path, text: str, where: str, problem: str
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_settings(path, {})
    message = str(caught.value)
    assert message.startswith(f"config {path}, {where}: {problem}") and "\n" not in message
    assert "<unicode string>" not in message


def test_a_misspelling_beside_the_name_it_is_close_to_is_only_warned_of(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With ``timeout`` given, ``tiemout`` changes nothing the deployment does."""
    caplog.set_level(logging.WARNING, logger="trustgate.config")
    config = gateway_config("http://127.0.0.1:1")
    config["model_list"][0]["litellm_params"]["tiemout"] = 9
    path = written(tmp_path, config)
    assert load_settings(path, {}).model_list[0].timeout == 5
    assert warnings(caplog, path) == ["model_list[0].litellm_params.tiemout: unknown key (did you mean timeout?)"]
