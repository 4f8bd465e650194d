"""LiteLLM deployments as users write them, driven over real sockets against fake upstreams.

The configs under ``litellm_configs/`` are our own: ``os.environ/`` addresses and
keys with ``environment_variables`` and unset references in ignored keys
(env_references), weighted shuffle (weighted), and a slow and a fast
deployment under each routing strategy, with ``max_parallel_requests``
(slow_and_fast). Each is read from disk as ``trustgate serve`` reads it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from proxy.config.settings import ConfigError, read_config, settings_from_dict
from proxy.upstream.errors import UpstreamErrors
from proxy.upstream.litellm_backend import LitellmBackend, _import_litellm
from tests.e2e.gateway_process import free_port, serve_config
from tests.fake_upstream import FakeUpstream
from tests.servers import ServerThread

CONFIGS = Path(__file__).parents[1] / "config" / "litellm_configs"
MASTER = "sk-routing-tests"
# The process environment of the env_references config: UPSTREAM_URL and ASSISTANT_KEY are also set by
# the config's environment_variables, whose values win; REDIS_HOST and REDIS_PASSWORD are set nowhere.
PROCESS_ENV = {
    "CHAT_KEY": "sk-chat-from-the-process",
    "CHAT_TIMEOUT": "20",
    "LITELLM_MASTER_KEY": MASTER,
    "UPSTREAM_URL": "http://127.0.0.1:9/v1",
    "ASSISTANT_KEY": "sk-overridden",
}


def load(tmp_path: Path, name: str, **values: str) -> dict[str, Any]:
    """A fixture with its ``{placeholders}`` filled, written to disk and read back as the CLI reads a config."""
    text = (CONFIGS / f"{name}.yaml").read_text()
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return read_config(path)


def warned(caplog: pytest.LogCaptureFixture) -> list[list[str]]:
    """The keys named by each ignored-keys warning."""
    return [
        record.getMessage().split(": ", 1)[1].split(", ")
        for record in caplog.records
        if record.name == "trustgate.config"
    ]


def chat(server: ServerThread, model: str, text: str = "hello", client: httpx.Client | None = None) -> httpx.Response:
    return (client or httpx).post(
        f"{server.url}/v1/chat/completions",
        timeout=30,
        headers={"authorization": f"Bearer {MASTER}"},
        json={"model": model, "messages": [{"role": "user", "content": text}]},
    )


@pytest.fixture(scope="module")
def _second_server() -> Iterator[tuple[FakeUpstream, ServerThread]]:
    fake = FakeUpstream()
    with ServerThread(fake.app()) as server:
        yield fake, server


@pytest.fixture
def slow_upstream(_second_server: tuple[FakeUpstream, ServerThread]) -> FakeUpstream:
    """A second fake upstream, answering each request after 500 ms."""
    fake, server = _second_server
    fake.requests.clear()
    fake.headers.clear()
    fake.delay_ms = 500.0
    fake.url = server.url  # type: ignore[attr-defined]
    return fake


StartDeployments = Callable[..., ServerThread]
WEIGHTED_ENV = {"UPSTREAM_KEY": "sk-up", "LITELLM_MASTER_KEY": MASTER}


@pytest.fixture
def start_deployments(
    tmp_path: Path,
    fake_upstream: FakeUpstream,
    slow_upstream: FakeUpstream,
    start_gateway: Callable[..., ServerThread],
    caplog: pytest.LogCaptureFixture,
) -> StartDeployments:
    """Starts a gateway on one of ``litellm_configs/``, its ``{upstream}`` and ``{fast}`` deployments on the
    session's fake upstream and ``{slow}`` on the slow one, with the config's warnings captured for ``warned``.
    ``passthrough`` picks the path where a test asks for one; otherwise the config's own choice stands."""
    caplog.set_level(logging.WARNING, logger="trustgate.config")

    def start(
        name: str, environ: dict[str, str] | None = None, passthrough: bool | None = None, **values: str
    ) -> ServerThread:
        upstreams = {"upstream": fake_upstream.url, "fast": fake_upstream.url, "slow": slow_upstream.url}  # type: ignore[attr-defined]
        config = load(tmp_path, name, **upstreams, **values)
        if passthrough is not None:
            config["trustgate"]["passthrough"] = passthrough
        return start_gateway(config, environ)

    return start


# --- os.environ/, environment_variables, ignored references -------------------------------------------------


@pytest.mark.integration
@pytest.mark.parametrize("path", ["passthrough", "litellm"])
def test_environment_references_reach_both_upstream_paths(
    path: str, start_deployments: StartDeployments, fake_upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    server = start_deployments("env_references", PROCESS_ENV, passthrough=path == "passthrough")
    for model, key in (("chat", "sk-chat-from-the-process"), ("assistant", "sk-from-the-config")):
        reply = chat(server, model)
        assert reply.status_code == 200, reply.text
        assert reply.json()["choices"][0]["message"]["content"] == "You said: hello"
        assert fake_upstream.headers[-1]["authorization"] == f"Bearer {key}"
    master = {"authorization": f"Bearer {MASTER}"}
    ready = httpx.get(f"{server.url}/health/readiness", headers=master, timeout=10).json()
    assert ready["models"] == {"chat": "ok", "assistant": "ok"}
    # Redis keys are LiteLLM's, ignored: their unset references did not stop start-up and are named.
    assert warned(caplog) == [
        [
            "router_settings.redis_host (os.environ/REDIS_HOST not read)",
            "router_settings.redis_password (os.environ/REDIS_PASSWORD not read)",
            "router_settings.redis_port",
        ]
    ]


@pytest.mark.integration
@pytest.mark.parametrize("path", ["passthrough", "litellm"])
def test_a_deployment_without_a_key_sends_its_providers_variable_as_litellm_does(
    path: str, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """LiteLLM users rely on OPENAI_API_KEY for an ``openai/`` deployment that names no key."""
    config = {
        "model_list": [
            {
                "model_name": "chat",
                "litellm_params": {"model": "openai/gpt-4o-mini", "api_base": f"{fake_upstream.url}/v1"},
            }
        ],  # type: ignore[attr-defined]
        "general_settings": {"master_key": MASTER},
        "trustgate": {"passthrough": path == "passthrough"},
    }
    server = start_gateway(config, {"OPENAI_API_KEY": "sk-openai-from-the-environment"})
    reply = chat(server, "chat")
    assert reply.status_code == 200, reply.text
    assert fake_upstream.headers[-1]["authorization"] == "Bearer sk-openai-from-the-environment"
    settings = settings_from_dict(config, {"OPENAI_API_KEY": "sk-openai-from-the-environment"})
    assert "sk-openai-from-the-environment" in settings.secrets()  # kept secret like a key the config names
    assert "sk-openai-from-the-environment" not in repr(settings)
    named = settings_from_dict(
        {
            **config,
            "model_list": [
                {
                    "model_name": "chat",
                    "litellm_params": {
                        "model": "openai/gpt-4o-mini",
                        "api_base": "http://127.0.0.1:5/v1",
                        "api_key": "sk-named",
                    },
                }
            ],
        },
        {"OPENAI_API_KEY": "sk-openai-from-the-environment"},
    )
    assert named.secrets() == [MASTER, "sk-named"]  # a key the config names wins


@pytest.mark.unit
def test_environment_values_keep_their_types_and_only_credentials_are_secret(tmp_path: Path) -> None:
    settings = settings_from_dict(load(tmp_path, "env_references", upstream="http://127.0.0.1:5"), PROCESS_ENV)
    chat_deployment, assistant = settings.model_list
    assert chat_deployment.api_base == assistant.api_base == "http://127.0.0.1:5/v1"  # the config's value wins
    assert (chat_deployment.rpm, chat_deployment.timeout) == (600, 20.0)
    assert "sk-chat-from-the-process" not in repr(chat_deployment)  # the key is a SecretStr
    assert set(settings.secrets()) == {MASTER, "sk-chat-from-the-process", "sk-from-the-config"}
    assert settings.trustgate.scoring.per_key["batch-jobs"].mode == "off"


@pytest.mark.unit
def test_exported_variables_named_as_secrets_are_kept_secret() -> None:
    """A key set only to be exported (for litellm's own lookups) is scrubbed from error text like any key;
    an address or a number is not (scrubbing "600" would garble every message)."""
    settings = settings_from_dict(
        {
            "model_list": [{"model_name": "m", "litellm_params": {"model": "openai/m"}}],
            "general_settings": {"master_key": "k"},
            "environment_variables": {
                "ANTHROPIC_API_KEY": "sk-only-exported",
                "HF_TOKEN": "hf-only-exported",
                "AZURE_API_BASE": "https://az.example",
                "RPM": 600,
            },
        },
        {},
    )
    assert settings.exported_environment() == {
        "ANTHROPIC_API_KEY": "sk-only-exported",
        "HF_TOKEN": "hf-only-exported",
        "AZURE_API_BASE": "https://az.example",
        "RPM": "600",
    }
    assert set(settings.secrets()) == {"k", "sk-only-exported", "hf-only-exported"}
    assert "sk-only-exported" not in repr(settings) and "hf-only-exported" not in repr(settings)


@pytest.mark.unit
def test_an_unset_reference_in_a_key_read_is_a_one_line_error(tmp_path: Path) -> None:
    environ = {k: v for k, v in PROCESS_ENV.items() if k != "CHAT_KEY"}
    with pytest.raises(
        ConfigError,
        match=r"^config\.model_list\[0\]\.litellm_params\.api_key refers to "
        r"environment variable CHAT_KEY, which is not set$",
    ):
        settings_from_dict(load(tmp_path, "env_references", upstream="http://127.0.0.1:5"), environ)


@pytest.mark.unit
@pytest.mark.parametrize("written", ["env", "config"])
def test_references_that_decide_a_path_or_a_strategy_are_read_before_the_split(
    written: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Which path a group takes (its ``model``, ``passthrough``) and the routing strategy are decided by the
    values the references hold, whether the process or the config's ``environment_variables`` sets them."""
    caplog.set_level(logging.WARNING, logger="trustgate.config")
    values = {"MODEL": "openai/gpt-4o-mini", "STRATEGY": "least-busy", "PASSTHROUGH": "true"}

    def config(**changed: str) -> dict[str, Any]:
        given = {**values, **changed}
        return {
            "model_list": [
                {
                    "model_name": "chat",
                    "litellm_params": {
                        "model": "os.environ/MODEL",
                        "api_base": "http://127.0.0.1:5/v1",
                        "organization": "org-a",
                    },
                }
            ],
            "router_settings": {"routing_strategy": "os.environ/STRATEGY"},
            "general_settings": {"master_key": "k"},
            "trustgate": {"passthrough": "os.environ/PASSTHROUGH"},
            **({"environment_variables": given} if written == "config" else {}),
        }

    def read(**changed: str) -> tuple[Any, list[list[str]]]:
        caplog.clear()
        environ = {**values, **changed} if written == "env" else {}
        return settings_from_dict(config(**changed), environ), warned(caplog)

    settings, warnings = read()
    assert settings.router_settings.routing_strategy == "least-busy" and settings.passthrough_groups() == {"chat"}
    assert warnings == [["model_list[0].litellm_params.organization (pass-through deployment)"]]
    settings, warnings = read(PASSTHROUGH="false")  # the litellm path takes every litellm_params key
    assert settings.passthrough_groups() == set() and settings.model_list[0].litellm_params["organization"] == "org-a"
    assert warnings == []
    settings, warnings = read(STRATEGY="usage-based-routing-v2")
    assert settings.router_settings.routing_strategy == "simple-shuffle"
    assert warnings == [
        [
            "model_list[0].litellm_params.organization (pass-through deployment)",
            "router_settings.routing_strategy (os.environ/STRATEGY is usage-based-routing-v2: simple-shuffle used)",
        ]
    ]


@pytest.mark.integration
def test_serve_exports_environment_variables_for_litellms_own_lookups(
    fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    """``trustgate serve`` sets the config's ``environment_variables`` in its environment, as LiteLLM's proxy
    does: a litellm-path deployment that names no key is sent the provider's key litellm looks up there.
    The process logs its one ignored-keys warning once."""
    config = {
        "model_list": [
            {
                "model_name": "chat",
                "litellm_params": {"model": "openai/gpt-4o-mini", "api_base": f"{fake_upstream.url}/v1"},
            }
        ],  # type: ignore[attr-defined]
        "environment_variables": {"OPENAI_API_KEY": "sk-set-by-the-config"},
        "router_settings": {"redis_host": "os.environ/TRUSTGATE_TEST_UNSET"},
        "general_settings": {"master_key": MASTER},
        "trustgate": {
            "passthrough": False,
            "scoring": {"mode": "off"},
            "server": {"port": free_port()},
            "store": {"path": str(tmp_path / "records.sqlite3")},
        },
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    with serve_config(path, timeout=120) as gateway:
        reply = httpx.post(
            f"{gateway.url}/v1/chat/completions",
            headers={"authorization": f"Bearer {MASTER}"},
            json={"model": "chat", "messages": [{"role": "user", "content": "hi"}]},
            timeout=30,
        )
        gateway.kill()  # nothing to see in its shutdown: skip its seconds
    assert reply.status_code == 200, reply.text
    assert fake_upstream.headers[-1]["authorization"] == "Bearer sk-set-by-the-config"
    assert "sk-set-by-the-config" not in "".join(gateway.output)
    assert [line.split("trustgate.config: ", 1)[1] for line in gateway.output if "trustgate.config: " in line] == [
        f"config {path}: LiteLLM settings TrustGate does not implement, ignored: "
        "router_settings.redis_host (os.environ/TRUSTGATE_TEST_UNSET not read)\n"
    ]


# --- mode: off / on ---------------------------------------------------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize("written, read", [("off", "off"), ("on", "async"), ("false", "off"), ("sync", "sync")])
def test_a_mode_reads_as_written(written: str, read: str, tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(f"""\
model_list: [{{model_name: m, litellm_params: {{model: openai/m, api_base: 'http://h/v1'}}}}]
general_settings: {{master_key: k}}
trustgate:
  passthrough: off
  scoring: {{mode: {written}, per_key: {{batch-jobs: {{mode: {written}}}}}, per_model: {{m: {{mode: {written}}}}}}}
""")
    scoring = settings_from_dict(read_config(path), {}).trustgate.scoring
    assert scoring.mode == scoring.per_key["batch-jobs"].mode == scoring.per_model["m"].mode == read
    assert settings_from_dict(read_config(path), {}).trustgate.passthrough is False  # other booleans: LiteLLM's YAML


@pytest.mark.unit
@pytest.mark.parametrize(
    "section, error",
    [
        (
            "scoring: {per_key: {batch-jobs: {mode: yes}}}",
            "trustgate.scoring.per_key.batch-jobs.mode: Input should be 'sync', 'async' or 'off', not 'yes'",
        ),
        ("scoring: {mode: asynk}", "trustgate.scoring.mode: Input should be 'sync', 'async' or 'off', not 'asynk'"),
        ("health: {readiness_mode: on}", "trustgate.health.readiness_mode: Input should be 'any' or 'all', not 'on'"),
    ],
)
def test_a_wrong_mode_is_shown_as_written(section: str, error: str, tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "model_list: [{model_name: m, litellm_params: {model: openai/m}}]\n"
        f"general_settings: {{master_key: k}}\ntrustgate: {{{section}}}\n"
    )
    with pytest.raises(ConfigError) as caught:
        settings_from_dict(read_config(path), {})
    assert str(caught.value) == error


# --- routing ------------------------------------------------------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize(
    "strategy, ignored",
    [
        ("least-busy", ["router_settings.routing_strategy_args"]),
        (
            "usage-based-routing-v2",
            [
                "router_settings.routing_strategy (usage-based-routing-v2: simple-shuffle used)",
                "router_settings.routing_strategy_args",
            ],
        ),
    ],
)
def test_only_unimplemented_strategies_are_named(
    strategy: str, ignored: list[str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="trustgate.config")
    settings = settings_from_dict(
        load(tmp_path, "slow_and_fast", strategy=strategy, slow="http://s", fast="http://f"), {}
    )
    assert settings.router_settings.routing_strategy == (strategy if strategy == "least-busy" else "simple-shuffle")
    assert warned(caplog) == [ignored]


@pytest.mark.integration
def test_weights_split_the_traffic(
    start_deployments: StartDeployments, fake_upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    server = start_deployments("weighted", WEIGHTED_ENV)
    assert warned(caplog) == [
        [
            "model_list[0].model_info",
            "model_list[1].model_info",  # TrustGate reads none of it
            "model_list[1].litellm_params.organization (pass-through deployment)",
            "litellm_settings.drop_params",
        ]
    ]
    with ThreadPoolExecutor(8) as pool, httpx.Client() as client:  # kept-alive connections: a quick 1,000 requests
        statuses = list(pool.map(lambda n: chat(server, "chat", f"q{n}", client).status_code, range(1000)))
    assert statuses == [200] * 1000
    split = Counter(completion["model"] for completion in fake_upstream.answered)
    assert sum(split.values()) == 1000
    assert abs(split["big-box"] / 1000 - 0.75) <= 0.05, split  # weight 3 of 4


@pytest.mark.integration
def test_litellms_router_honours_the_weights_on_the_litellm_path(
    start_deployments: StartDeployments, fake_upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    server = start_deployments("weighted", WEIGHTED_ENV, passthrough=False)
    # litellm takes every litellm_params key (organization too); model_info, on either path, no one reads.
    assert warned(caplog) == [["model_list[0].model_info", "model_list[1].model_info", "litellm_settings.drop_params"]]
    with ThreadPoolExecutor(8) as pool, httpx.Client() as client:  # fewer than above: litellm costs more per call
        statuses = list(pool.map(lambda n: chat(server, "chat", f"q{n}", client).status_code, range(300)))
    assert statuses == [200] * 300
    split = Counter(completion["model"] for completion in fake_upstream.answered)
    assert abs(split["big-box"] / 300 - 0.75) <= 0.1, split  # 4 standard deviations at 300 requests


@pytest.mark.integration
def test_latency_based_routing_settles_on_the_fast_deployment(
    start_deployments: StartDeployments, fake_upstream: FakeUpstream, slow_upstream: FakeUpstream
) -> None:
    server = start_deployments("slow_and_fast", strategy="latency-based-routing")
    slow_upstream.delay_ms = 1500  # far beyond the fast one's time on a busy machine
    for n in range(20):
        assert chat(server, "chat", f"q{n}").status_code == 200
    # Each deployment is measured once (an unmeasured one counts as fastest); then the fast one answers.
    assert len(slow_upstream.requests) == 1 and len(fake_upstream.requests) == 19


@pytest.mark.integration
def test_least_busy_sends_most_requests_to_the_deployment_that_frees_up_first(
    start_deployments: StartDeployments, fake_upstream: FakeUpstream, slow_upstream: FakeUpstream
) -> None:
    server = start_deployments("slow_and_fast", strategy="least-busy")
    slow_upstream.delay_ms = 1500  # far beyond the fast one's time on a busy machine
    with ThreadPoolExecutor(4) as pool:
        statuses = list(pool.map(lambda n: chat(server, "chat", f"q{n}").status_code, range(80)))
    assert statuses == [200] * 80
    # Shuffled, the slow one would get half; least-busy gives it a request only while it has fewer in flight.
    assert len(slow_upstream.requests) < 0.2 * 80, (len(slow_upstream.requests), len(fake_upstream.requests))


@pytest.mark.integration
@pytest.mark.parametrize("path", ["passthrough", "litellm"])
def test_a_deployment_at_max_parallel_requests_is_a_429_until_a_call_ends(
    path: str, start_deployments: StartDeployments, slow_upstream: FakeUpstream
) -> None:
    # litellm's Router refuses the same way
    server = start_deployments("slow_and_fast", strategy="simple-shuffle", passthrough=path == "passthrough")
    first: list[httpx.Response] = []
    worker = threading.Thread(target=lambda: first.append(chat(server, "single")))
    worker.start()
    deadline = time.monotonic() + 10
    while not slow_upstream.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    refused = chat(server, "single")  # the first is still at the upstream (500 ms)
    worker.join()
    assert refused.status_code == 429 and refused.json()["error"]["type"] == "rate_limit_error"
    assert first[0].status_code == 200 and len(slow_upstream.requests) == 1
    assert chat(server, "single").status_code == 200  # the slot was given back

    # A stream holds its slot until it ends (this one stalls after its first chunk until the client leaves).
    with httpx.stream(
        "POST",
        f"{server.url}/v1/chat/completions",
        timeout=30,
        headers={"authorization": f"Bearer {MASTER}"},
        json={"model": "single", "stream": True, "messages": [{"role": "user", "content": "[stall-stream] s"}]},
    ) as stream:
        events = stream.iter_raw()  # kept: a dropped iterator would close the response
        assert next(events).startswith(b"data: ")
        assert chat(server, "single").status_code == 429
    deadline = time.monotonic() + 10  # the gateway closes the upstream stream once it sees the client gone
    while (status := chat(server, "single").status_code) == 429 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert status == 200


@pytest.mark.integration
def test_a_full_deployment_is_passed_over_for_one_with_room(
    start_deployments: StartDeployments, slow_upstream: FakeUpstream
) -> None:
    server = start_deployments("slow_and_fast", strategy="simple-shuffle")
    for _ in range(3):
        slow_upstream.requests.clear()
        with ThreadPoolExecutor(2) as pool:
            statuses = list(pool.map(lambda n: chat(server, "pair", f"p{n}").status_code, range(2)))
        assert statuses == [200, 200]
        assert sorted(r["model"] for r in slow_upstream.requests) == ["pair-a", "pair-b"]


@pytest.mark.integration
def test_litellms_router_follows_latency_based_routing_on_the_litellm_path(
    start_deployments: StartDeployments, fake_upstream: FakeUpstream, slow_upstream: FakeUpstream
) -> None:
    server = start_deployments("slow_and_fast", strategy="latency-based-routing", passthrough=False)
    slow_upstream.delay_ms = 1500
    assert [chat(server, "chat", f"q{n}").status_code for n in range(20)] == [200] * 20
    # Shuffled, the slow one would answer about 10 of 20.
    assert len(slow_upstream.requests) <= 3, (len(slow_upstream.requests), len(fake_upstream.requests))


@pytest.mark.integration
def test_litellms_router_follows_least_busy_on_the_litellm_path(
    start_deployments: StartDeployments, fake_upstream: FakeUpstream, slow_upstream: FakeUpstream
) -> None:
    server = start_deployments("slow_and_fast", strategy="least-busy", passthrough=False)
    slow_upstream.delay_ms = 1500
    with ThreadPoolExecutor(4) as pool:
        statuses = list(pool.map(lambda n: chat(server, "chat", f"q{n}").status_code, range(40)))
    assert statuses == [200] * 40
    assert len(slow_upstream.requests) < 0.25 * 40, (len(slow_upstream.requests), len(fake_upstream.requests))


@pytest.mark.unit
def test_the_docs_scoring_example_loads_with_its_mode_off(tmp_path: Path) -> None:
    page = (Path(__file__).parents[3] / "docs" / "concepts" / "live-scoring.md").read_text()
    block = next(part.split("```", 1)[0] for part in page.split("```yaml\n") if "batch-jobs: {mode: off" in part)
    path = tmp_path / "config.yaml"
    path.write_text(
        "model_list: [{model_name: gpt-4o, litellm_params: {model: openai/gpt-4o}}]\n"
        "general_settings: {master_key: k}\n" + block
    )
    scoring = settings_from_dict(read_config(path), {}).trustgate.scoring
    assert scoring.per_key["batch-jobs"].mode == "off" and scoring.per_key["batch-jobs"].allow_client_mode == "none"


@pytest.mark.unit
@pytest.mark.parametrize(
    "strategy", ["latency-based-routing", "least-busy", "usage-based-routing-v2", "simple-shuffle"]
)
def test_a_closed_litellm_backend_leaves_none_of_its_callbacks_in_litellm(tmp_path: Path, strategy: str) -> None:
    """litellm keeps every Router's callbacks in module-wide lists capped at 100, so a backend that left its own
    there (one per config reload, one per gateway in a process) would in the end stop routers' strategies from
    seeing any latency or load."""
    config = load(
        tmp_path, "slow_and_fast", strategy=strategy, slow="http://127.0.0.1:9/v1", fast="http://127.0.0.1:9/v1"
    )
    settings = settings_from_dict(config, {})
    litellm = _import_litellm()
    lists = (
        "callbacks",
        "input_callback",
        "success_callback",
        "failure_callback",
        "_async_success_callback",
        "_async_failure_callback",
        "service_callback",
    )
    before = {name: list(getattr(litellm, name)) for name in lists}
    backend = LitellmBackend(settings, settings.model_groups(), UpstreamErrors([]))
    assert any(getattr(litellm, name) != before[name] for name in lists)  # the Router did hook itself in
    asyncio.run(backend.aclose())
    assert {name: list(getattr(litellm, name)) for name in lists} == before
