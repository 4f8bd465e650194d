"""deploy/k8s/monitoring/prometheusrule.yaml from deploy/prometheus/rules/trustgate.rules.yml, so the
Prometheus Operator loads the same groups the compose stack's Prometheus does:

    python -m tests.deploy.prometheusrule > deploy/k8s/monitoring/prometheusrule.yaml
"""

from __future__ import annotations

import yaml

from tests.deploy.conftest import RULES

HEADER = """\
# deploy/prometheus/rules/trustgate.rules.yml as a PrometheusRule (the same groups; tests/deploy
# checks they match). Regenerate after changing the rules:
#   python -m tests.deploy.prometheusrule > deploy/k8s/monitoring/prometheusrule.yaml
"""


def render() -> str:
    rule = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {
            "name": "trustgate",
            "namespace": "trustgate",
            "labels": {"app.kubernetes.io/part-of": "trustgate"},
        },
        "spec": yaml.safe_load(RULES.read_text()),
    }
    return HEADER + yaml.safe_dump(rule, sort_keys=False, width=120)


if __name__ == "__main__":
    print(render(), end="")
