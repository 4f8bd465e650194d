"""deploy/docker-compose.yml and the gateway config it mounts, checked statically
(Compose itself is not run here; tests/deploy/test_roles.py runs its roles): the
compose-spec schema, structure, interpolation, files, wiring, pinned images."""

from __future__ import annotations

import importlib.resources
import json
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml

from proxy.config.settings import settings_from_dict
from scoring.settings import ScoringSettings
from tests.deploy.compose import interpolate, mounts, unescaped_dollars
from tests.deploy.image import PINNED_IMAGE, image
from tests.deploy.promql import DEPLOY
from tests.deploy.roles import ASSETS_DIR

pytestmark = pytest.mark.unit

ENV = {"TRUSTGATE_MASTER_KEY": "sk-test"}
CONFIG_PATH = "/etc/trustgate/config.yaml"
TRUSTGATE_IMAGE_SERVICES = {"gateway", "local-llm", "oxigraph", "worker"}
SERVICE_KEYS = {
    "build",
    "command",
    "container_name",
    "depends_on",
    "deploy",
    "entrypoint",
    "environment",
    "env_file",
    "expose",
    "healthcheck",
    "image",
    "labels",
    "networks",
    "ports",
    "profiles",
    "restart",
    "volumes",
    "user",
    "working_dir",
    "stop_grace_period",
    "ulimits",
    "logging",
    "pull_policy",
}


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _command(service: dict[str, Any]) -> list[str]:
    """The service's argv (entrypoint + command), with a `sh -c` script split into words."""
    argv = [*service.get("entrypoint", []), *service.get("command", [])]
    argv = [interpolate(arg, ENV) for arg in argv]
    if argv[:2] == ["sh", "-c"]:
        return shlex.split(argv[2])
    return argv


def _option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def _mounted_config(service: dict[str, Any]) -> Path:
    (source,) = [m.source for m in mounts(service, ENV) if m.target == CONFIG_PATH]
    return DEPLOY / source


@pytest.fixture(scope="module")
def compose_spec() -> jsonschema.protocols.Validator:
    """The compose-spec JSON schema that check-jsonschema vendors (the one Docker Compose implements)."""
    schema_file = importlib.resources.files("check_jsonschema") / "builtin_schemas" / "vendor" / "compose-spec.json"
    schema = json.loads(schema_file.read_text())
    return jsonschema.validators.validator_for(schema)(schema)  # type: ignore[no-any-return]


def test_compose_spec_schema(compose: dict[str, Any], compose_spec: jsonschema.protocols.Validator) -> None:
    errors = sorted(compose_spec.iter_errors(compose), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)
    broken = {
        **compose,
        "services": {**compose["services"], "gateway": {**compose["services"]["gateway"], "helthcheck": {}}},
    }
    assert not compose_spec.is_valid(broken), "the schema check must catch a misspelt key"


def test_images_are_pinned(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        if "build" in service:
            continue  # built from deploy/Dockerfile, whose base is pinned (test_dockerfile)
        assert PINNED_IMAGE.fullmatch(service["image"]), f"{name}: {service['image']} is not a pinned version"


def test_compose_file_structure(compose: dict[str, Any]) -> None:
    assert set(compose) <= {"name", "services", "volumes", "networks", "configs", "secrets"} | {
        key for key in compose if key.startswith("x-")
    }
    assert {"gateway", "local-llm", "oxigraph", "redis", "worker", "prometheus", "alertmanager", "grafana"} <= set(
        compose["services"]
    )
    for name, service in compose["services"].items():
        assert set(service) <= SERVICE_KEYS, f"{name}: unknown keys {set(service) - SERVICE_KEYS}"
        assert service.get("image"), f"{name} has no image"


def test_interpolation(compose: dict[str, Any]) -> None:
    for value in _strings(compose):
        assert not unescaped_dollars(value), f"invalid interpolation (write $$ for a literal $): {value}"
        interpolate(value, ENV)
    with pytest.raises(KeyError, match="TRUSTGATE_MASTER_KEY"):
        interpolate(compose["services"]["gateway"]["environment"]["TRUSTGATE_MASTER_KEY"], {})


def test_trustgate_image_is_built_by_every_service_that_uses_it(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {n for n, s in services.items() if s["image"] == services["gateway"]["image"]} == TRUSTGATE_IMAGE_SERVICES
    for name in TRUSTGATE_IMAGE_SERVICES:
        build = services[name]["build"]
        context = DEPLOY / build["context"]
        assert context.is_dir() and (context / build["dockerfile"]).resolve() == DEPLOY / "Dockerfile", name


def test_mounts_exist(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        for mount in mounts(service, ENV):
            if mount.bind:
                assert (DEPLOY / mount.source).exists(), f"{name}: {mount.source} does not exist in deploy/"
            else:
                assert mount.source in compose["volumes"], f"{name}: volume {mount.source} is not declared"


def test_dependencies_and_healthchecks(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, service in services.items():
        depends = service.get("depends_on", {})
        for dependency in depends:
            assert dependency in services, f"{name} depends on unknown {dependency}"
            if isinstance(depends, dict) and depends[dependency].get("condition") == "service_healthy":
                assert "healthcheck" in services[dependency], f"{name} waits for {dependency}'s missing healthcheck"


def test_gateway_service(compose: dict[str, Any]) -> None:
    gateway = compose["services"]["gateway"]
    assert "entrypoint" not in gateway and "command" not in gateway, "the gateway runs the image's entrypoint"
    assert gateway["environment"]["TRUSTGATE_MASTER_KEY"].startswith("${TRUSTGATE_MASTER_KEY")
    assert _mounted_config(gateway) == DEPLOY / "config.compose.yaml"
    assert any(interpolate(port, ENV).endswith(":4000") for port in gateway["ports"])


def test_local_llm_service(compose: dict[str, Any]) -> None:
    argv = _command(compose["services"]["local-llm"])
    assert argv[argv.index("python") : argv.index("python") + 3] == ["python", "-m", "llama_cpp.server"]
    assert _option(argv, "--model") == "$(trustgate model-path)"
    assert _option(argv, "--host") == "0.0.0.0"
    assert _option(argv, "--port") == "8090"
    assert _option(argv, "--model_alias") == "smollm2-135m-instruct"


def test_oxigraph_service_serves_the_store_built_into_the_image(compose: dict[str, Any]) -> None:
    service = compose["services"]["oxigraph"]
    assert _command(service) == [
        "oxigraph",
        "serve-read-only",
        "--location",
        f"{ASSETS_DIR}/consistency/oxigraph",
        "--bind",
        "0.0.0.0:7878",
    ]
    assert not mounts(service, ENV), "a volume would hide the image's store"


def test_worker_service_scales(compose: dict[str, Any]) -> None:
    worker = compose["services"]["worker"]
    assert worker["profiles"] == ["redis"]
    assert _command(worker) == ["trustgate", "worker", "--config", CONFIG_PATH, "--metrics-host", "0.0.0.0"]
    assert _mounted_config(worker) == _mounted_config(compose["services"]["gateway"])
    assert "TRUSTGATE_MASTER_KEY" in worker["environment"]
    assert "container_name" not in worker and "ports" not in worker, "a fixed name or host port prevents --scale"
    assert "redis" in worker["depends_on"]
    assert compose["services"]["redis"]["image"].startswith("redis:7")
    # Healthy once its scorers are loaded and Redis answers: the worker's readiness endpoint on its metrics port.
    check = " ".join(worker["healthcheck"]["test"])
    assert "http://127.0.0.1:9400/health/readiness" in check and "9400" in worker["expose"]


def test_observability_services(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert services["prometheus"]["image"].startswith("prom/prometheus")
    assert "--config.file=/etc/prometheus/prometheus.yml" in services["prometheus"]["command"]
    assert any(
        m.target == "/etc/prometheus/prometheus.yml" and m.source == "./prometheus/prometheus.yml"
        for m in mounts(services["prometheus"], ENV)
    )
    assert services["grafana"]["image"].startswith("grafana/grafana")


def test_compose_config_loads_and_points_at_the_services(compose: dict[str, Any]) -> None:
    services = compose["services"]
    raw = yaml.safe_load(_mounted_config(services["gateway"]).read_text())
    settings = settings_from_dict(raw, environ=ENV)
    assert settings.master_key is not None and settings.master_key.get_secret_value() == "sk-test"
    assert raw["general_settings"]["master_key"] == "os.environ/TRUSTGATE_MASTER_KEY"
    assert settings.trustgate.server.host == "0.0.0.0" and settings.trustgate.server.port == 4000
    assert settings.trustgate.local_upstream.enabled is False

    (local,) = settings.model_groups()["local"]
    assert local.provider_model == "openai/smollm2-135m-instruct" and local.is_openai_compatible
    url = urlsplit(local.api_base or "")
    llm = _command(services["local-llm"])
    assert (url.hostname, str(url.port), url.path) == ("local-llm", _option(llm, "--port"), "/v1")
    assert local.wire_model == _option(llm, "--model_alias")

    scoring = ScoringSettings.model_validate(raw["trustgate"]["scoring"])
    sparql = urlsplit(scoring.consistency.sparql_endpoint or "")
    assert (sparql.hostname, sparql.port, sparql.path) == ("oxigraph", 7878, "/query")
    assert str(scoring.data_dir) == ASSETS_DIR, "the scoring assets built into the image"
    assert not any(str(scoring.data_dir).startswith(m.target) for m in mounts(services["gateway"], ENV)), (
        "no volume may hide the assets built into the image"
    )
    assert f"trustgate build-assets --data-dir {ASSETS_DIR}" in image().runs


def test_redis_config_points_the_queue_at_the_redis_service(compose: dict[str, Any]) -> None:
    raw = yaml.safe_load((DEPLOY / "config.redis.yaml").read_text())
    settings = settings_from_dict(raw, environ=ENV)
    queue = settings.trustgate.scoring.queue
    url = urlsplit(queue.redis_url)
    assert queue.backend == "redis" and (url.hostname, url.port) == ("redis", 6379)
    assert "redis" in compose["services"]
    compose_default = yaml.safe_load((DEPLOY / "config.compose.yaml").read_text())
    assert {k: v for k, v in raw.items() if k != "trustgate"} == {
        k: v for k, v in compose_default.items() if k != "trustgate"
    }
