"""deploy/k8s: every manifest parses (multi-document YAML) and carries the fields the
API server requires; Services, probes, Secrets and the ConfigMap's config are wired up.
(No cluster or schema validator here, so the checks are structural.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from proxy.config import settings_from_dict
from scoring.settings import ScoringSettings
from tests.deploy.promql import DEPLOY, load_yaml_docs

K8S = DEPLOY / "k8s"
NAMESPACE = "trustgate"
API_VERSIONS = {
    "Namespace": "v1", "ConfigMap": "v1", "Secret": "v1", "Service": "v1", "PersistentVolumeClaim": "v1",
    "Deployment": "apps/v1", "HorizontalPodAutoscaler": "autoscaling/v2",
}


@pytest.fixture(scope="module")
def objects() -> dict[tuple[str, str], dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in load_yaml_docs(path):
            key = (doc["kind"], doc["metadata"]["name"])
            assert key not in found, f"{key} defined twice"
            found[key] = doc
    return found


def _deployments(objects: dict[tuple[str, str], dict[str, Any]]) -> Iterator[dict[str, Any]]:
    return (o for (kind, _), o in objects.items() if kind == "Deployment")


def _container(objects: dict[tuple[str, str], dict[str, Any]], deployment: str) -> dict[str, Any]:
    return objects["Deployment", deployment]["spec"]["template"]["spec"]["containers"][0]


def _port_names(deployment: dict[str, Any]) -> dict[str, int]:
    return {p["name"]: p["containerPort"] for c in deployment["spec"]["template"]["spec"]["containers"]
            for p in c.get("ports", [])}


def test_every_object_has_the_required_fields(objects: dict[tuple[str, str], dict[str, Any]]) -> None:
    for (kind, name), obj in objects.items():
        assert obj["apiVersion"] == API_VERSIONS[kind], f"{kind}/{name}: apiVersion {obj['apiVersion']}"
        assert name and name == name.lower() and len(name) <= 63, f"{kind}/{name}: not a DNS label"
        if kind != "Namespace":
            assert obj["metadata"]["namespace"] == NAMESPACE, f"{kind}/{name}"


def test_the_stack_is_complete(objects: dict[tuple[str, str], dict[str, Any]]) -> None:
    expected = {
        ("Namespace", NAMESPACE), ("ConfigMap", "trustgate-config"), ("Secret", "trustgate-master-key"),
        ("Deployment", "trustgate-gateway"), ("Service", "trustgate-gateway"),
        ("Deployment", "local-llm"), ("Service", "local-llm"),
        ("Deployment", "oxigraph"), ("Service", "oxigraph"),
        ("Deployment", "redis"), ("Service", "redis"),
        ("Deployment", "trustgate-worker"), ("HorizontalPodAutoscaler", "trustgate-worker"),
    }
    assert expected <= set(objects)


def test_kustomization_lists_every_manifest_but_the_secret_template() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    manifests = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == manifests - {"secret.example.yaml"}
    assert kustomization["namespace"] == NAMESPACE
    assert [image["name"] for image in kustomization["images"]] == ["trustgate"]


def test_deployments(objects: dict[tuple[str, str], dict[str, Any]]) -> None:
    for deployment in _deployments(objects):
        name = deployment["metadata"]["name"]
        template = deployment["spec"]["template"]
        selector = deployment["spec"]["selector"]["matchLabels"]
        assert selector.items() <= template["metadata"]["labels"].items(), f"{name}: selector misses its pods"
        for container in template["spec"]["containers"]:
            assert container["name"] and container["image"], name
            assert container["resources"]["requests"], f"{name}: no resource requests"
            assert container["securityContext"]["allowPrivilegeEscalation"] is False, name
            for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                action = container.get(probe, {})
                port = (action.get("httpGet") or action.get("tcpSocket") or {}).get("port")
                if isinstance(port, str):
                    assert port in _port_names(deployment), f"{name}: {probe} uses unknown port {port}"
        mounted = {m["name"] for c in template["spec"]["containers"] for m in c.get("volumeMounts", [])}
        assert mounted <= {v["name"] for v in template["spec"].get("volumes", [])}, name
        for volume in template["spec"].get("volumes", []):
            if "configMap" in volume:
                assert ("ConfigMap", volume["configMap"]["name"]) in objects, name
            if "persistentVolumeClaim" in volume:
                assert ("PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"]) in objects, name
        if name != "redis":
            assert all(c["image"].startswith("trustgate:") for c in template["spec"]["containers"]), name


def test_services_select_pods_and_ports(objects: dict[tuple[str, str], dict[str, Any]]) -> None:
    for (kind, name), service in objects.items():
        if kind != "Service":
            continue
        selector = service["spec"]["selector"]
        targets = [d for d in _deployments(objects)
                   if selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()]
        assert len(targets) == 1, f"Service {name} selects {len(targets)} Deployments"
        for port in service["spec"]["ports"]:
            target = port.get("targetPort", port["port"])
            assert target in _port_names(targets[0]) or target in _port_names(targets[0]).values(), name


def test_gateway_probes_and_scrape_annotations(objects: dict[tuple[str, str], dict[str, Any]]) -> None:
    deployment = objects["Deployment", "trustgate-gateway"]
    container = _container(objects, "trustgate-gateway")
    assert "command" not in container and "args" not in container, "the gateway runs the image's entrypoint"
    assert container["livenessProbe"]["httpGet"]["path"] == "/health/liveness"
    assert container["readinessProbe"]["httpGet"]["path"] == "/health/readiness"
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/path"] == "/metrics"
    assert int(annotations["prometheus.io/port"]) == _port_names(deployment)["http"] == 4000


def test_master_key_comes_from_the_secret(objects: dict[tuple[str, str], dict[str, Any]]) -> None:
    secret = objects["Secret", "trustgate-master-key"]
    for deployment in ("trustgate-gateway", "trustgate-worker"):
        (env,) = [e for e in _container(objects, deployment)["env"] if e["name"] == "TRUSTGATE_MASTER_KEY"]
        ref = env["valueFrom"]["secretKeyRef"]
        assert ref["name"] == secret["metadata"]["name"] and ref["key"] in secret["stringData"], deployment


def test_configmap_config_loads_and_points_at_the_services(objects: dict[tuple[str, str], dict[str, Any]]) -> None:
    raw = yaml.safe_load(objects["ConfigMap", "trustgate-config"]["data"]["config.yaml"])
    settings = settings_from_dict(raw, environ={"TRUSTGATE_MASTER_KEY": "sk-test"})
    assert settings.trustgate.server.host == "0.0.0.0" and settings.trustgate.local_upstream.enabled is False
    services = {name: s for (kind, name), s in objects.items() if kind == "Service"}
    for deployment in settings.model_list:
        url = urlsplit(deployment.api_base or "")
        assert url.hostname in services and url.port in [p["port"] for p in services[url.hostname]["spec"]["ports"]]
    endpoint = urlsplit(ScoringSettings.model_validate(raw["trustgate"]["scoring"]).consistency.sparql_endpoint or "")
    assert endpoint.hostname == "oxigraph" and endpoint.port == 7878
    for name in ("trustgate-gateway", "trustgate-worker"):
        mounts = {m["name"]: m["mountPath"] for m in _container(objects, name)["volumeMounts"]}
        assert mounts["config"] == "/etc/trustgate", name  # the key config.yaml lands at /etc/trustgate/config.yaml


def test_local_llm_serves_the_packaged_model(objects: dict[tuple[str, str], dict[str, Any]]) -> None:
    script = " ".join(_container(objects, "local-llm")["command"])
    # $$ is Kubernetes' escape: the shell sees $(trustgate model-path).
    for part in ("python -m llama_cpp.server", '"$$(trustgate model-path)"', "--host 0.0.0.0", "--port 8090",
                 "--model_alias smollm2-135m-instruct"):
        assert part in script


def test_workers_scale(objects: dict[tuple[str, str], dict[str, Any]]) -> None:
    worker = objects["Deployment", "trustgate-worker"]
    container = _container(objects, "trustgate-worker")
    assert container["command"] == ["trustgate", "worker", "--config", "/etc/trustgate/config.yaml",
                                    "--metrics-host", "0.0.0.0"]  # else Prometheus cannot reach it
    assert "replicas" not in worker["spec"], "the HorizontalPodAutoscaler owns the replica count"
    hpa = objects["HorizontalPodAutoscaler", "trustgate-worker"]["spec"]
    assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "trustgate-worker"}
    assert 1 <= hpa["minReplicas"] <= hpa["maxReplicas"]
    annotations = worker["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert int(annotations["prometheus.io/port"]) == _port_names(worker)["metrics"]
