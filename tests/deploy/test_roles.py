"""Every role's start-up path, run as compose and the Kubernetes manifests run it, reaches a scored answer.

There is no container runtime here, so each role runs as a local process with the exact
argv, environment and config file of its service or Deployment (tests/deploy/roles.py says
what is rewritten: host names, ports, container paths, executables), in a directory laid
out like the image, over the scoring assets the image builds with the same command
(`trustgate build-assets`). Real oxigraph and redis-server processes serve the knowledge
graph and the queue; the fake upstream answers as the model.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
import redis
import yaml

from tests.deploy.image import image
from tests.deploy.promql import DEPLOY, load_yaml_docs
from tests.deploy.roles import (
    ASSETS_DIR,
    MASTER_KEY,
    START_TIMEOUT_S,
    Role,
    RoleProcess,
    Stack,
    assets_built,
    compose_roles,
    k8s_roles,
    scored_answer,
    start_oxigraph,
)

pytestmark = pytest.mark.skipif(not assets_built(), reason="scoring assets not built: `make install` builds them")


def compose_file() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())


def start_redis(stack: Stack, role: Role) -> None:
    """The redis role's own arguments, plus where this machine needs it: its port, loopback, a data dir."""
    port = stack.route(role.name, 6379)
    process = stack.start(
        role,
        extra=lambda _: ["--port", str(port), "--bind", "127.0.0.1", "--dir", str(stack.paths["/data"]), "--save", ""],
    )
    client = redis.Redis(port=port, socket_timeout=1)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if client.ping():
                return
        except redis.ConnectionError:
            assert process.process.poll() is None, process.tail()
            time.sleep(0.05)
    raise AssertionError(f"redis-server did not start:\n{process.tail()}")


def start_worker(stack: Stack, role: Role) -> RoleProcess:
    assert role.port is not None
    worker = stack.start(role, service_port=role.port, extra=lambda port: ["--metrics-port", str(port)])
    worker.wait_ready(START_TIMEOUT_S)
    return worker


@pytest.mark.integration
def test_compose_default_stack_scores(stack: Stack) -> None:
    roles = compose_roles(compose_file(), {"TRUSTGATE_MASTER_KEY": MASTER_KEY}, image())
    start_oxigraph(stack, roles["oxigraph"])
    gateway = stack.start(roles["gateway"], service_port=4000)
    gateway.wait_ready(START_TIMEOUT_S)
    scored_answer(gateway)


@pytest.mark.integration
def test_compose_redis_profile_scores_in_a_worker(stack: Stack) -> None:
    environ = {"TRUSTGATE_MASTER_KEY": MASTER_KEY, "TRUSTGATE_CONFIG": "./config.redis.yaml"}
    roles = compose_roles(compose_file(), environ, image())
    start_oxigraph(stack, roles["oxigraph"])
    start_redis(stack, roles["redis"])
    worker = start_worker(stack, roles["worker"])
    gateway = stack.start(roles["gateway"], service_port=4000)
    gateway.wait_ready(START_TIMEOUT_S)
    record = scored_answer(gateway)
    metrics = httpx.get(f"{worker.url}/metrics", timeout=5).text
    assert 'trustgate_worker_jobs_total{outcome="done"} 1.0' in metrics, "the worker scored it"
    assert record["components"]["bc"]["value"] is not None


@pytest.mark.integration
def test_kubernetes_manifests_score_in_a_worker(stack: Stack) -> None:
    objects = {
        (doc["kind"], doc["metadata"]["name"]): doc
        for path in sorted((DEPLOY / "k8s" / "base").glob("*.yaml"))
        if path.name != "kustomization.yaml"
        for doc in load_yaml_docs(path)
    }
    roles = k8s_roles(objects, {"TRUSTGATE_MASTER_KEY": MASTER_KEY}, image())
    start_oxigraph(stack, roles["oxigraph"])
    start_redis(stack, roles["redis"])
    worker = start_worker(stack, roles["trustgate-worker"])
    gateway = stack.start(roles["trustgate-gateway"], service_port=4000)
    gateway.wait_ready(START_TIMEOUT_S)
    scored_answer(gateway)
    assert 'trustgate_worker_jobs_total{outcome="done"} 1.0' in httpx.get(f"{worker.url}/metrics", timeout=5).text


@pytest.mark.unit
def test_the_layout_serves_the_assets_the_image_builds() -> None:
    """The image builds the assets where every config reads them and where the oxigraph role serves them."""
    built = [run for run in image().runs if "trustgate build-assets" in run]
    assert built == [f"trustgate build-assets --data-dir {ASSETS_DIR}"]
    compose = compose_file()
    configs = [yaml.safe_load((DEPLOY / name).read_text()) for name in ("config.compose.yaml", "config.redis.yaml")]
    configmap = next(d for d in load_yaml_docs(DEPLOY / "k8s" / "base" / "configmap.yaml") if d["kind"] == "ConfigMap")
    configs.append(yaml.safe_load(configmap["data"]["config.yaml"]))
    assert {c["trustgate"]["scoring"]["data_dir"] for c in configs} == {ASSETS_DIR}
    store = f"{ASSETS_DIR}/consistency/oxigraph"
    assert compose["services"]["oxigraph"]["entrypoint"][:4] == ["oxigraph", "serve-read-only", "--location", store]
