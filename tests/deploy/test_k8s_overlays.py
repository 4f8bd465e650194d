"""deploy/k8s/overlays: dev (one gateway scoring in-process) and prod (the Redis queue, scaled),
rendered as Kustomize would (tests/deploy/kustomize.py), strictly validated, and the dev overlay's
gateway run to a scored answer like the base's roles (tests/deploy/test_roles.py)."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest
import yaml

from proxy.config import settings_from_dict
from tests.deploy.image import image
from tests.deploy.kustomize import render
from tests.deploy.roles import Stack, assets_built, k8s_roles
from tests.deploy.test_k8s import K8S
from tests.deploy.test_roles import (
    MASTER_KEY,
    START_TIMEOUT_S,
    scored_answer,
    start_oxigraph,
)

OVERLAYS = K8S / "overlays"
Objects = dict[tuple[str, str], dict[str, Any]]


@pytest.fixture(scope="module")
def base() -> Objects:
    return render(K8S)


@pytest.fixture(scope="module")
def dev() -> Objects:
    return render(OVERLAYS / "dev")


@pytest.fixture(scope="module")
def prod() -> Objects:
    return render(OVERLAYS / "prod")


def _config(objects: Objects) -> dict[str, Any]:
    return yaml.safe_load(objects["ConfigMap", "trustgate-config"]["data"]["config.yaml"])  # type: ignore[no-any-return]


@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_overlays_render_to_valid_objects(overlay: str) -> None:
    objects = render(OVERLAYS / overlay)
    version = kubernetes_validate.latest_version()
    for obj in objects.values():
        kubernetes_validate.validate(obj, version, strict=True)
    settings = settings_from_dict(_config(objects), environ={"TRUSTGATE_MASTER_KEY": "sk-test"})
    assert str(settings.trustgate.scoring.data_dir) == "/usr/local/share/trustgate"


def test_the_base_is_prod_with_redis_and_renders_as_listed(base: Objects) -> None:
    assert _config(base)["trustgate"]["scoring"]["queue"]["backend"] == "redis"
    assert ("Deployment", "trustgate-worker") in base and ("Deployment", "redis") in base


def test_dev_scores_in_one_gateway_without_redis_or_workers(base: Objects, dev: Objects) -> None:
    removed = set(base) - set(dev)
    assert removed == {("Deployment", "trustgate-worker"), ("HorizontalPodAutoscaler", "trustgate-worker"),
                       ("PodDisruptionBudget", "trustgate-worker"), ("PodDisruptionBudget", "trustgate-gateway"),
                       ("Deployment", "redis"), ("Service", "redis")}
    assert dev["Deployment", "trustgate-gateway"]["spec"]["replicas"] == 1
    config = _config(dev)
    assert config["trustgate"]["scoring"]["queue"]["backend"] == "memory"
    assert "redis" not in yaml.safe_dump(config)
    # Everything else in the config is the base's.
    base_config = _config(base)
    assert {k: v for k, v in config.items() if k != "trustgate"} == \
           {k: v for k, v in base_config.items() if k != "trustgate"}
    mounts = {m["mountPath"] for m in dev["Deployment", "trustgate-gateway"]["spec"]["template"]["spec"][
        "containers"][0]["volumeMounts"]}
    assert config["trustgate"]["store"]["path"].startswith("/var/lib/trustgate/") and "/var/lib/trustgate" in mounts


def test_prod_scales_and_keeps_redis_on_a_volume(base: Objects, prod: Objects) -> None:
    assert set(base) < set(prod)
    assert prod["Deployment", "trustgate-gateway"]["spec"]["replicas"] == 3
    hpa = prod["HorizontalPodAutoscaler", "trustgate-worker"]["spec"]
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (3, 20)
    (volume,) = prod["Deployment", "redis"]["spec"]["template"]["spec"]["volumes"]
    assert volume == {"name": "data", "persistentVolumeClaim": {"claimName": "redis-data"}}
    assert ("PersistentVolumeClaim", "redis-data") in prod
    images = {c["image"] for (kind, _), o in prod.items() if kind == "Deployment"
              for c in o["spec"]["template"]["spec"]["containers"]}
    assert "registry.example.com/trustgate:0.1.0" in images and not any(i.startswith("trustgate:") for i in images)


@pytest.mark.skipif(not assets_built(), reason="scoring assets not built: `make install` builds them")
def test_dev_overlay_gateway_scores(dev: Objects, stack: Stack) -> None:
    roles = k8s_roles(dev, {"TRUSTGATE_MASTER_KEY": MASTER_KEY}, image())
    start_oxigraph(stack, roles["oxigraph"])
    gateway = stack.start(roles["trustgate-gateway"], service_port=4000)
    gateway.wait_ready(START_TIMEOUT_S)
    scored_answer(gateway)

