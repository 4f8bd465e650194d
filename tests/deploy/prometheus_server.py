"""A real Prometheus server on a loopback port, started and stopped by the tests (Debian's ``prometheus``).

Its config starts from deploy/prometheus/prometheus.yml (the external labels the alerts read, the rules
file) with the scrape targets replaced by the servers a test runs, and scrapes and evaluates every second,
so that a test sees a burst of traffic in a few seconds. Queries go through its HTTP API, as Grafana's do.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.deploy.promql import DEPLOY
from tests.redis_server import free_port

__all__ = ["PROMETHEUS", "PrometheusServer", "has_data", "shipped_config"]

PROMETHEUS = shutil.which("prometheus")
SHIPPED = DEPLOY / "prometheus" / "prometheus.yml"
RULES = DEPLOY / "prometheus" / "rules" / "trustgate.rules.yml"
INTERVAL = "1s"  # scrape and rule evaluation: a test's traffic is seen within seconds


def shipped_config(targets: dict[str, str], *, rule_files: list[Path] | None = None) -> dict[str, Any]:
    """deploy/'s prometheus.yml scraping ``targets`` ({job name: host:port}) and loading ``rule_files`` (the
    shipped rules by default), every second, with no Alertmanager (its address is compose's)."""
    config: dict[str, Any] = yaml.safe_load(SHIPPED.read_text())
    config["global"].update(scrape_interval=INTERVAL, evaluation_interval=INTERVAL)
    config["rule_files"] = [str(path) for path in (rule_files if rule_files is not None else [RULES])]
    config.pop("alerting", None)
    shipped_jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    config["scrape_configs"] = [
        {
            "job_name": name,
            "metrics_path": shipped_jobs[name]["metrics_path"],
            "static_configs": [{"targets": [target]}],
        }
        for name, target in targets.items()
    ]
    return config


def has_data(result: list[dict[str, Any]]) -> bool:
    """Whether a query's result holds a number anywhere: no series, or only NaN (a ratio or quantile of
    nothing), is what Grafana draws as an empty panel."""
    values = [value for series in result for _, value in series.get("values", [series.get("value", (0, "NaN"))])]
    return any(not math.isnan(float(value)) for value in values)


class PrometheusServer:
    def __init__(self, workdir: Path, config: dict[str, Any]) -> None:
        if PROMETHEUS is None:
            raise RuntimeError("prometheus is not installed (Debian package `prometheus`)")
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._command = [
            PROMETHEUS,
            f"--config.file={workdir / 'prometheus.yml'}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
        ]
        self._log = workdir / "prometheus.log"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> PrometheusServer:
        with self._log.open("wb") as log:
            self._process = subprocess.Popen(self._command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(f"{self.url}/-/ready", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"prometheus did not start:\n{self._log.read_text()[-2000:]}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=20)
            self._process = None

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _get(self, path: str, **params: str | float) -> Any:
        response = httpx.get(f"{self.url}/api/v1/{path}", params=params, timeout=30)
        body = response.json()
        assert body["status"] == "success", f"{path} {params}: {body}"
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query, now."""
        result: list[dict[str, Any]] = self._get("query", query=expr)["result"]
        return result

    def query_range(self, expr: str, start: float, end: float, step: float = 1.0) -> list[dict[str, Any]]:
        """A range query, as a Grafana time-series panel makes for its time range."""
        result: list[dict[str, Any]] = self._get("query_range", query=expr, start=start, end=end, step=step)["result"]
        return result

    def alerts(self) -> list[dict[str, Any]]:
        """The alerts its rules raise now (pending or firing), annotations rendered."""
        found: list[dict[str, Any]] = self._get("alerts")["alerts"]
        return found

    def wait_until(self, expr: str, holds: Any, timeout: float = 60.0) -> list[dict[str, Any]]:
        """Query ``expr`` every scrape until ``holds(result)``; the last result."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.query(expr)
            if holds(result):
                return result
            assert time.monotonic() < deadline, f"{expr} did not come to hold: {result}"
            time.sleep(0.5)
