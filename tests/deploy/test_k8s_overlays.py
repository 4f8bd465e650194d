"""deploy/k8s/base and its overlays, dev (one gateway scoring in-process) and prod (the Redis queue,
scaled), rendered by the real Kustomize (`kubectl kustomize`, or a `kustomize` binary), strictly
validated, and the dev overlay's gateway run to a scored answer like the base's roles
(tests/deploy/test_roles.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from proxy.config.settings import settings_from_dict
from tests.deploy.image import image
from tests.deploy.roles import (
    BASE,
    K8S,
    MASTER_KEY,
    START_TIMEOUT_S,
    Stack,
    assets_built,
    k8s_roles,
    scored_answer,
    start_oxigraph,
)

pytestmark = pytest.mark.integration

OVERLAYS = K8S / "overlays"
RENDER_TIMEOUT_S = 60
Objects = dict[tuple[str, str], dict[str, Any]]


def _kustomize() -> list[str]:
    """The command that renders a kustomization, as `kubectl apply -k` would apply it."""
    if kubectl := shutil.which("kubectl"):
        return [kubectl, "kustomize"]
    if kustomize := shutil.which("kustomize"):
        return [kustomize, "build"]
    pytest.skip("neither kubectl nor kustomize is installed: the overlays cannot be rendered")


def render(directory: Path) -> Objects:
    """The objects Kustomize renders from ``directory``, by (kind, name); a render error fails the test."""
    done = subprocess.run(
        [*_kustomize(), str(directory)], capture_output=True, text=True, timeout=RENDER_TIMEOUT_S, check=False
    )
    assert done.returncode == 0, f"kustomize {directory.relative_to(K8S)}: {done.stderr}"
    objects: Objects = {}
    for doc in yaml.safe_load_all(done.stdout):
        key = (doc["kind"], doc["metadata"]["name"])
        assert key not in objects, f"{key} rendered twice"
        objects[key] = doc
    return objects


@pytest.fixture(scope="module")
def base() -> Objects:
    return render(BASE)


@pytest.fixture(scope="module")
def dev() -> Objects:
    return render(OVERLAYS / "dev")


@pytest.fixture(scope="module")
def prod() -> Objects:
    return render(OVERLAYS / "prod")


def _config(objects: Objects) -> dict[str, Any]:
    return yaml.safe_load(objects["ConfigMap", "trustgate-config"]["data"]["config.yaml"])  # type: ignore[no-any-return]


def test_each_patch_file_holds_one_object() -> None:
    """Kustomize reads one strategic-merge patch per file (a multi-document `$patch: delete` crashes it)."""
    for kustomization in OVERLAYS.glob("*/kustomization.yaml"):
        for patch in yaml.safe_load(kustomization.read_text())["patches"]:
            docs = [d for d in yaml.safe_load_all((kustomization.parent / patch["path"]).read_text()) if d]
            assert len(docs) == 1, f"{kustomization.parent.name}/{patch['path']}: {len(docs)} objects"


@pytest.mark.parametrize(
    "directory", ["base", "monitoring", *(f"overlays/{p.name}" for p in sorted(OVERLAYS.iterdir()))]
)
def test_kustomizations_render_to_valid_objects(directory: str) -> None:
    """Strict validation, against the schemas of the newest Kubernetes kubernetes-validate knows; the
    Prometheus Operator's kinds are checked by name only (their CRDs are not among those schemas)."""
    objects = render(K8S / directory)
    version = kubernetes_validate.latest_version()
    for obj in objects.values():
        if obj["apiVersion"] == "monitoring.coreos.com/v1":
            continue
        kubernetes_validate.validate(obj, version, strict=True)
    if directory == "monitoring":
        assert {kind for kind, _ in objects} == {"ServiceMonitor", "PodMonitor", "PrometheusRule"}
        return
    settings = settings_from_dict(_config(objects), environ={"TRUSTGATE_MASTER_KEY": "sk-test"})
    assert str(settings.trustgate.scoring.data_dir) == "/usr/local/share/trustgate"


def test_the_base_is_prod_with_redis_and_renders_as_listed(base: Objects) -> None:
    assert _config(base)["trustgate"]["scoring"]["queue"]["backend"] == "redis"
    assert ("Deployment", "trustgate-worker") in base and ("Deployment", "redis") in base


def test_dev_scores_in_one_gateway_without_redis_or_workers(base: Objects, dev: Objects) -> None:
    removed = set(base) - set(dev)
    assert removed == {
        ("Deployment", "trustgate-worker"),
        ("HorizontalPodAutoscaler", "trustgate-worker"),
        ("PodDisruptionBudget", "trustgate-worker"),
        ("PodDisruptionBudget", "trustgate-gateway"),
        ("Deployment", "redis"),
        ("Service", "redis"),
    }
    assert dev["Deployment", "trustgate-gateway"]["spec"]["replicas"] == 1
    config = _config(dev)
    assert config["trustgate"]["scoring"]["queue"]["backend"] == "memory"
    assert "redis" not in yaml.safe_dump(config)
    # Everything else in the config is the base's.
    base_config = _config(base)
    assert {k: v for k, v in config.items() if k != "trustgate"} == {
        k: v for k, v in base_config.items() if k != "trustgate"
    }
    mounts = {
        m["mountPath"]
        for m in dev["Deployment", "trustgate-gateway"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    }
    assert config["trustgate"]["store"]["path"].startswith("/var/lib/trustgate/") and "/var/lib/trustgate" in mounts


def test_prod_scales_and_keeps_redis_on_a_volume(base: Objects, prod: Objects) -> None:
    assert set(base) < set(prod)
    assert prod["Deployment", "trustgate-gateway"]["spec"]["replicas"] == 3
    hpa = prod["HorizontalPodAutoscaler", "trustgate-worker"]["spec"]
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (3, 20)
    (volume,) = prod["Deployment", "redis"]["spec"]["template"]["spec"]["volumes"]
    assert volume == {"name": "data", "persistentVolumeClaim": {"claimName": "redis-data"}}
    assert ("PersistentVolumeClaim", "redis-data") in prod
    images = {
        c["image"]
        for (kind, _), o in prod.items()
        if kind == "Deployment"
        for c in o["spec"]["template"]["spec"]["containers"]
    }
    assert "registry.example.com/trustgate:0.1.0" in images and not any(i.startswith("trustgate:") for i in images)


@pytest.mark.skipif(not assets_built(), reason="scoring assets not built: `make install` builds them")
def test_dev_overlay_gateway_scores(dev: Objects, stack: Stack) -> None:
    roles = k8s_roles(dev, {"TRUSTGATE_MASTER_KEY": MASTER_KEY}, image())
    start_oxigraph(stack, roles["oxigraph"])
    gateway = stack.start(roles["trustgate-gateway"], service_port=4000)
    gateway.wait_ready(START_TIMEOUT_S)
    scored_answer(gateway)
