"""deploy/k8s/base: every manifest passes Kubernetes' strict schema validation (kubernetes-validate,
offline) and is wired up: Services, probes, Secrets, the ConfigMap's config, disruption
budgets, network policies, pinned images, and the Prometheus Operator objects kept apart.
(No cluster here: tests/deploy/test_roles.py runs the Deployments' commands as processes.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
import yaml

from proxy.config.settings import settings_from_dict
from scoring.settings import ScoringSettings
from tests.deploy.conftest import RULES
from tests.deploy.image import PINNED_IMAGE
from tests.deploy.promql import load_yaml_docs
from tests.deploy.roles import BASE, K8S

pytestmark = pytest.mark.unit

MONITORING = K8S / "monitoring"
NAMESPACE = "trustgate"
API_VERSIONS = {
    "Namespace": "v1",
    "ConfigMap": "v1",
    "Secret": "v1",
    "Service": "v1",
    "PersistentVolumeClaim": "v1",
    "Deployment": "apps/v1",
    "HorizontalPodAutoscaler": "autoscaling/v2",
    "PodDisruptionBudget": "policy/v1",
    "NetworkPolicy": "networking.k8s.io/v1",
}


@pytest.fixture(scope="module")
def objects() -> dict[tuple[str, str], dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(BASE.glob("*.yaml")):
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
    return {
        p["name"]: p["containerPort"]
        for c in deployment["spec"]["template"]["spec"]["containers"]
        for p in c.get("ports", [])
    }


def test_every_object_has_the_required_fields(objects: dict[tuple[str, str], dict[str, Any]]) -> None:
    for (kind, name), obj in objects.items():
        assert obj["apiVersion"] == API_VERSIONS[kind], f"{kind}/{name}: apiVersion {obj['apiVersion']}"
        assert name and name == name.lower() and len(name) <= 63, f"{kind}/{name}: not a DNS label"
        if kind != "Namespace":
            assert obj["metadata"]["namespace"] == NAMESPACE, f"{kind}/{name}"


def test_the_stack_is_complete(objects: dict[tuple[str, str], dict[str, Any]]) -> None:
    expected = {
        ("Namespace", NAMESPACE),
        ("ConfigMap", "trustgate-config"),
        ("Secret", "trustgate-master-key"),
        ("Deployment", "trustgate-gateway"),
        ("Service", "trustgate-gateway"),
        ("Deployment", "local-llm"),
        ("Service", "local-llm"),
        ("Deployment", "oxigraph"),
        ("Service", "oxigraph"),
        ("Deployment", "redis"),
        ("Service", "redis"),
        ("Deployment", "trustgate-worker"),
        ("HorizontalPodAutoscaler", "trustgate-worker"),
        ("PodDisruptionBudget", "trustgate-gateway"),
        ("PodDisruptionBudget", "trustgate-worker"),
        ("NetworkPolicy", "default-deny-ingress"),
    }
    assert expected <= set(objects)


def test_kustomization_lists_every_manifest_but_the_secret_template() -> None:
    kustomization = yaml.safe_load((BASE / "kustomization.yaml").read_text())
    manifests = {p.name for p in BASE.glob("*.yaml")} - {"kustomization.yaml"}
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
        targets = [
            d for d in _deployments(objects) if selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()
        ]
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
    for part in (
        "python -m llama_cpp.server",
        '"$$(trustgate model-path)"',
        "--host 0.0.0.0",
        "--port 8090",
        "--model_alias smollm2-135m-instruct",
    ):
        assert part in script


def test_workers_scale(objects: dict[tuple[str, str], dict[str, Any]]) -> None:
    worker = objects["Deployment", "trustgate-worker"]
    container = _container(objects, "trustgate-worker")
    assert container["command"] == [
        "trustgate",
        "worker",
        "--config",
        "/etc/trustgate/config.yaml",
        "--metrics-host",
        "0.0.0.0",
    ]  # else Prometheus cannot reach it
    assert "replicas" not in worker["spec"], "the HorizontalPodAutoscaler owns the replica count"
    hpa = objects["HorizontalPodAutoscaler", "trustgate-worker"]["spec"]
    assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "trustgate-worker"}
    assert 1 <= hpa["minReplicas"] <= hpa["maxReplicas"]
    annotations = worker["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert int(annotations["prometheus.io/port"]) == _port_names(worker)["metrics"]


def test_strict_schema_validation(objects: dict[tuple[str, str], dict[str, Any]]) -> None:
    """Every object against the Kubernetes OpenAPI schemas, rejecting unknown fields (`kubectl --validate=strict`)."""
    version = kubernetes_validate.latest_version()
    for obj in objects.values():
        kubernetes_validate.validate(obj, version, strict=True)
    broken = {
        **objects["Deployment", "trustgate-gateway"],
        "spec": {**objects["Deployment", "trustgate-gateway"]["spec"], "replica": 2},
    }
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, version, strict=True)


def test_images_are_pinned(objects: dict[tuple[str, str], dict[str, Any]]) -> None:
    for deployment in _deployments(objects):
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            assert PINNED_IMAGE.fullmatch(container["image"]), f"{deployment['metadata']['name']}: {container['image']}"


def test_disruption_budgets_keep_a_gateway_and_a_worker(objects: dict[tuple[str, str], dict[str, Any]]) -> None:
    for name in ("trustgate-gateway", "trustgate-worker"):
        budget = objects["PodDisruptionBudget", name]["spec"]
        labels = objects["Deployment", name]["spec"]["template"]["metadata"]["labels"]
        assert budget["selector"]["matchLabels"].items() <= labels.items(), name
        assert budget["minAvailable"] >= 1
    assert (
        objects["Deployment", "trustgate-gateway"]["spec"]["replicas"]
        > objects["PodDisruptionBudget", "trustgate-gateway"]["spec"]["minAvailable"]
    ), "a drain could never proceed"
    assert (
        objects["HorizontalPodAutoscaler", "trustgate-worker"]["spec"]["minReplicas"]
        > objects["PodDisruptionBudget", "trustgate-worker"]["spec"]["minAvailable"]
    )


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        return True
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    return all(
        labels.get(e["key"]) in e["values"] if e["operator"] == "In" else labels.get(e["key"]) not in e["values"]
        for e in selector.get("matchExpressions", [])
    )


def _admits(policies: list[dict[str, Any]], target: dict[str, str], port: int | str, source: dict[str, str]) -> bool:
    """Whether some policy selecting ``target`` admits traffic from pods labelled ``source`` to ``port``."""
    for policy in policies:
        if not _selects(policy["spec"]["podSelector"], target):
            continue
        for rule in policy["spec"].get("ingress", []):
            ports = [p["port"] for p in rule.get("ports", [])]
            sources = rule.get("from")
            if (not ports or port in ports) and (
                sources is None or any("podSelector" in s and _selects(s["podSelector"], source) for s in sources)
            ):
                return True
    return False


def test_network_policies_admit_exactly_the_traffic_the_stack_needs(
    objects: dict[tuple[str, str], dict[str, Any]],
) -> None:
    policies = [obj for (kind, _), obj in objects.items() if kind == "NetworkPolicy"]
    deny_all = [p for p in policies if p["spec"]["podSelector"] == {} and not p["spec"].get("ingress")]
    assert deny_all and deny_all[0]["spec"]["policyTypes"] == ["Ingress"], "no default deny for ingress"
    labels = {
        name: objects["Deployment", name]["spec"]["template"]["metadata"]["labels"]
        for (kind, name) in objects
        if kind == "Deployment"
    }
    outsider = {"app": "something-else"}
    # Clients reach the gateway; scrapers reach the gateway's and the workers' metrics.
    assert _admits(policies, labels["trustgate-gateway"], "http", outsider)
    assert _admits(policies, labels["trustgate-worker"], "metrics", outsider)
    # The backends serve TrustGate's pods only.
    for backend in ("local-llm", "oxigraph", "redis"):
        for client in ("trustgate-gateway", "trustgate-worker"):
            assert _admits(
                policies, labels[backend], _port_names(objects["Deployment", backend]).popitem()[0], labels[client]
            ), f"{client} cannot reach {backend}"
        assert not _admits(policies, labels[backend], "any", outsider), f"anyone can reach {backend}"


def test_worker_probes(objects: dict[tuple[str, str], dict[str, Any]]) -> None:
    container = _container(objects, "trustgate-worker")
    assert container["livenessProbe"]["httpGet"] == {"path": "/health/liveness", "port": "metrics"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/health/readiness", "port": "metrics"}
    startup = container["startupProbe"]
    assert startup["httpGet"]["path"] == "/health/liveness"
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 180, "time to load the scorers"


def test_oxigraph_serves_the_store_built_into_the_image(objects: dict[tuple[str, str], dict[str, Any]]) -> None:
    container = _container(objects, "oxigraph")
    assert container["command"] == [
        "oxigraph",
        "serve-read-only",
        "--location",
        "/usr/local/share/trustgate/consistency/oxigraph",
        "--bind",
        "0.0.0.0:7878",
    ]
    assert "volumeMounts" not in container and ("PersistentVolumeClaim", "oxigraph-data") not in objects


@pytest.fixture(scope="module")
def monitoring() -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (doc["kind"], doc["metadata"]["name"]): doc
        for path in sorted(MONITORING.glob("*.yaml"))
        if path.name != "kustomization.yaml"
        for doc in load_yaml_docs(path)
    }


def test_operator_objects_are_kept_out_of_the_base(monitoring: dict[tuple[str, str], dict[str, Any]]) -> None:
    base = yaml.safe_load((BASE / "kustomization.yaml").read_text())
    assert not any("monitoring" in resource for resource in base["resources"])
    overlay = yaml.safe_load((MONITORING / "kustomization.yaml").read_text())
    assert set(overlay["resources"]) == {p.name for p in MONITORING.glob("*.yaml")} - {"kustomization.yaml"}
    assert {kind for kind, _ in monitoring} == {"ServiceMonitor", "PodMonitor", "PrometheusRule"}
    for obj in monitoring.values():
        assert obj["apiVersion"] == "monitoring.coreos.com/v1" and obj["metadata"]["namespace"] == NAMESPACE


def test_operator_scrapes_find_the_gateway_and_workers(
    objects: dict[tuple[str, str], dict[str, Any]], monitoring: dict[tuple[str, str], dict[str, Any]]
) -> None:
    service = objects["Service", "trustgate-gateway"]
    gateway = monitoring["ServiceMonitor", "trustgate-gateway"]["spec"]
    assert gateway["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert {e["port"] for e in gateway["endpoints"]} <= {p["name"] for p in service["spec"]["ports"]}
    # The job label is the app name, as the alert rules expect (job="trustgate-gateway" / "trustgate-worker").
    assert service["metadata"]["labels"][gateway["jobLabel"]] == "trustgate-gateway"
    workers = monitoring["PodMonitor", "trustgate-worker"]["spec"]
    pod_labels = objects["Deployment", "trustgate-worker"]["spec"]["template"]["metadata"]["labels"]
    assert workers["selector"]["matchLabels"].items() <= pod_labels.items()
    assert pod_labels[workers["jobLabel"]] == "trustgate-worker"
    assert {e["port"] for e in workers["podMetricsEndpoints"]} <= set(
        _port_names(objects["Deployment", "trustgate-worker"])
    )


def test_prometheus_rule_is_the_rules_file(monitoring: dict[tuple[str, str], dict[str, Any]]) -> None:
    """The same groups as deploy/prometheus/rules (regenerate: python -m tests.deploy.prometheusrule)."""
    assert monitoring["PrometheusRule", "trustgate"]["spec"] == yaml.safe_load(RULES.read_text())
