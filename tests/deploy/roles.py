"""Each deployed role's start-up as the deploy files define it — argv, environment, mounted
config — and a launcher that runs it as a local process in a directory laid out like the image.

Only what must differ on one machine is rewritten: service host names and ports become
loopback ports (``local-llm:8090`` → the fake upstream, ``oxigraph:7878`` and ``redis:6379``
→ the real servers started here), container paths become paths under the layout's root,
``0.0.0.0`` becomes ``127.0.0.1``, and the executables are this checkout's (``trustgate`` →
``python -m trustgate``, ``oxigraph`` → the venv's CLI, ``redis-server`` → Debian's).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from scoring.consistency.oxigraph import oxigraph_binary
from tests.assets import DATA_DIR, assets_built
from tests.deploy.compose import interpolate, mounts
from tests.deploy.image import Image
from tests.deploy.promql import DEPLOY
from tests.redis_server import free_port
from tests.scripted_models import ANSWER

__all__ = [
    "ASSETS",
    "ASSETS_DIR",
    "BASE",
    "CONFIG_PATH",
    "K8S",
    "MASTER_KEY",
    "START_TIMEOUT_S",
    "Role",
    "RoleProcess",
    "Stack",
    "assets_built",
    "compose_roles",
    "executable",
    "k8s_roles",
    "scored_answer",
    "start_oxigraph",
]

CONFIG_PATH = "/etc/trustgate/config.yaml"
ASSETS_DIR = "/usr/local/share/trustgate"  # where the image builds the scoring assets
ROOT = DEPLOY.parent
ASSETS = DATA_DIR  # built by `make assets`: the image's command (`trustgate build-assets`)
K8S = DEPLOY / "k8s"
BASE = K8S / "base"
MASTER_KEY = "sk-role-test"
START_TIMEOUT_S = 180  # loading spaCy, the vectors and the evidence index on a busy 2-core machine


@dataclass(frozen=True)
class Role:
    """One container as its manifest starts it."""

    name: str
    argv: list[str]
    env: dict[str, str]
    config: dict[str, Any] | None  # the YAML at CONFIG_PATH, when one is mounted
    ready_path: str | None  # the HTTP path its health check or readiness probe asks
    port: int | None  # the container port that path is served on


def _http_probe(test: list[str] | None) -> tuple[str, int] | None:
    """The path and port a compose healthcheck's ``python -c "urlopen('http://127.0.0.1:PORT/PATH')"`` asks."""
    match = re.search(r"http://127\.0\.0\.1:(\d+)(/[^'\"]*)", " ".join(test or []))
    return (match.group(2), int(match.group(1))) if match else None


def compose_roles(compose: Mapping[str, Any], environ: Mapping[str, str], image: Image) -> dict[str, Role]:
    """The trustgate-image services and redis, as ``docker compose up`` starts them."""
    roles = {}
    for name, service in compose["services"].items():
        uses_image = "build" in service
        if not uses_image and name != "redis":
            continue
        argv = [interpolate(a, environ) for a in service.get("entrypoint") or (image.entrypoint if uses_image else [])]
        argv += [interpolate(a, environ) for a in service.get("command", [])]
        env = {
            **(image.env if uses_image else {}),
            **{k: interpolate(str(v), environ) for k, v in service.get("environment", {}).items()},
        }
        sources = [m.source for m in mounts(service, environ) if m.target == CONFIG_PATH]
        config = yaml.safe_load((DEPLOY / sources[0]).read_text()) if sources else None
        probe = _http_probe(service.get("healthcheck", {}).get("test"))
        if probe is None and uses_image:
            probe = _http_probe(_exec_form(image.healthcheck))  # the image's HEALTHCHECK
        roles[name] = Role(name, argv, env, config, *(probe or (None, None)))
    return roles


def _exec_form(healthcheck: str) -> list[str]:
    """The exec form of a Dockerfile HEALTHCHECK's CMD."""
    return list(json.loads(healthcheck.split("CMD", 1)[1]))


def k8s_roles(
    objects: Mapping[tuple[str, str], dict[str, Any]], secret_values: Mapping[str, str], image: Image
) -> dict[str, Role]:
    """Every Deployment's first container, as the kubelet starts it (command/args over the image's)."""
    roles = {}
    configmaps = {name: obj for (kind, name), obj in objects.items() if kind == "ConfigMap"}
    for (kind, name), deployment in objects.items():
        if kind != "Deployment":
            continue
        pod = deployment["spec"]["template"]["spec"]
        container = pod["containers"][0]
        uses_image = container["image"].startswith("trustgate:")
        argv = list(container.get("command") or (image.entrypoint if uses_image else []))
        argv = [a.replace("$$", "$") for a in argv + list(container.get("args", []))]  # Kubernetes' $$ escape
        env = dict(image.env) if uses_image else {}
        for variable in container.get("env", []):
            if "value" in variable:
                env[variable["name"]] = variable["value"]
            else:
                env[variable["name"]] = secret_values[variable["valueFrom"]["secretKeyRef"]["key"]]
        config = None
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for mount in container.get("volumeMounts", []):
            source = volumes[mount["name"]].get("configMap")
            if source is not None:
                data = configmaps[source["name"]]["data"]
                key = CONFIG_PATH.removeprefix(mount["mountPath"].rstrip("/") + "/")
                config = yaml.safe_load(data[key])
        ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
        probe = container.get("readinessProbe", {}).get("httpGet")
        roles[name] = Role(
            name,
            argv,
            env,
            config,
            probe["path"] if probe else None,
            ports.get(probe["port"], probe["port"]) if probe else None,
        )
    return roles


@dataclass
class RoleProcess:
    role: Role
    process: subprocess.Popen[bytes]
    log: Path
    url: str | None

    def wait_ready(self, timeout: float) -> None:
        """Poll the role's own health check / readiness probe until it answers 200."""
        assert self.url and self.role.ready_path, f"{self.role.name} has no HTTP probe"
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise AssertionError(f"{self.role.name} exited {self.process.returncode}:\n{self.tail()}")
            try:
                if httpx.get(self.url + self.role.ready_path, timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.role.name} not ready in {timeout}s:\n{self.tail()}")
            time.sleep(0.25)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


@dataclass
class Stack:
    """A directory laid out like the image, and the roles started in it."""

    root: Path
    assets: Path  # built by the image's own command (`trustgate build-assets`)
    hosts: dict[str, str] = field(default_factory=dict)  # "service:port" -> "127.0.0.1:port"
    started: list[RoleProcess] = field(default_factory=list)

    def __post_init__(self) -> None:
        """The paths every container shares; each role gets its own /etc/trustgate (its own mount)."""
        self.paths = {
            ASSETS_DIR: self.root / "usr" / "local" / "share" / "trustgate",
            "/var/lib/trustgate": self.root / "var" / "lib" / "trustgate",
            "/data": self.root / "data",
        }
        for container, path in self.paths.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            if container == ASSETS_DIR:
                path.symlink_to(self.assets.resolve(), target_is_directory=True)
            else:
                path.mkdir()

    def route(self, service: str, port: int) -> int:
        """A loopback port standing in for ``service:port``."""
        local = free_port()
        self.hosts[f"{service}:{port}"] = f"127.0.0.1:{local}"
        return local

    def rewrite(self, value: str, paths: Mapping[str, Path]) -> str:
        for host, local in self.hosts.items():
            value = value.replace(f"//{host}", f"//{local}")
        for container, local_path in sorted(paths.items(), key=lambda item: -len(item[0])):
            if value == container or value.startswith(container + "/"):
                return str(local_path) + value[len(container) :]
        return re.sub(r"^0\.0\.0\.0(?=:|$)", "127.0.0.1", value)

    def _rewrite_config(self, value: Any, paths: Mapping[str, Path]) -> Any:
        if isinstance(value, dict):
            return {k: self._rewrite_config(v, paths) for k, v in value.items()}
        if isinstance(value, list):
            return [self._rewrite_config(v, paths) for v in value]
        return self.rewrite(value, paths) if isinstance(value, str) else value

    def start(
        self, role: Role, *, service_port: int | None = None, extra: Callable[[int], list[str]] = lambda port: []
    ) -> RoleProcess:
        """Run the role; ``service_port``: its container port, routed to a loopback one."""
        local_port = self.route(role.name, service_port) if service_port is not None else None
        config_dir = self.root / role.name / "etc" / "trustgate"
        config_dir.mkdir(parents=True)
        paths = {**self.paths, CONFIG_PATH.rsplit("/", 1)[0]: config_dir}
        argv = [*executable(role.argv[0]), *[self.rewrite(a, paths) for a in role.argv[1:]]]
        if service_port is not None and f"0.0.0.0:{service_port}" in role.argv:  # --bind 0.0.0.0:PORT
            argv = [a.replace(f"127.0.0.1:{service_port}", f"127.0.0.1:{local_port}") for a in argv]
        if role.config is not None:
            config = self._rewrite_config(role.config, paths)
            server = config.get("trustgate", {}).get("server", {})
            if local_port is not None and server.get("port") == service_port:  # the gateway listens here
                server["port"] = local_port
            (config_dir / "config.yaml").write_text(yaml.safe_dump(config))
        argv += extra(local_port or 0)
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(self.root),
            "PYTHONPATH": str(ROOT),
            **{k: v for k, v in role.env.items() if k != "PATH"},
        }
        log = self.root / f"{role.name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                argv, env=env, cwd=self.paths["/var/lib/trustgate"], stdout=out, stderr=subprocess.STDOUT
            )
        running = RoleProcess(role, process, log, f"http://127.0.0.1:{local_port}" if local_port else None)
        self.started.append(running)
        return running

    def stop(self) -> None:
        for running in reversed(self.started):
            if running.process.poll() is None:
                running.process.terminate()
        for running in self.started:
            try:
                running.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                running.process.kill()
                running.process.wait(timeout=10)


def executable(name: str) -> list[str]:
    """This checkout's stand-in for a program the image has on its PATH."""
    if name == "trustgate":
        return [sys.executable, "-m", "trustgate"]
    if name == "oxigraph":
        return [oxigraph_binary()]
    found = shutil.which(name)
    assert found, f"{name} is not installed"
    return [found]


def start_oxigraph(stack: Stack, role: Role) -> RoleProcess:
    oxigraph = stack.start(role, service_port=7878)
    oxigraph.wait_ready(60)
    return oxigraph


def scored_answer(gateway: RoleProcess) -> dict[str, Any]:
    """Ask through the gateway as a client of the deployed config would (its default: async scoring), then read
    the finished trust record from the result API."""
    auth = {"authorization": f"Bearer {MASTER_KEY}"}
    response = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        timeout=60,
        headers=auth,
        json={"model": "local", "messages": [{"role": "user", "content": "What is the capital of France?"}]},
    )
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == ANSWER
    assert response.headers["x-trust-status"] == "pending"
    deadline = time.monotonic() + 120
    while (
        record := httpx.get(f"{gateway.url}/v1/trust/{response.headers['x-trust-id']}", headers=auth, timeout=10).json()
    )["status"] == "pending":
        assert time.monotonic() < deadline, f"not scored in time:\n{gateway.tail()}"
        time.sleep(0.2)
    assert record["status"] == "done", record
    bc, fc = record["components"]["bc"], record["components"]["fc"]
    assert bc["details"]["binary"] == 1.0, "Trust_BC ran its consistency checks"
    assert "knowledge_graph" in bc["details"]["distractor_sources"], "the oxigraph role serves the loaded graph"
    assert not bc["details"]["source_errors"], bc["details"]["source_errors"]
    assert fc["label"] == "support" and any(e["id"] == "wikipedia:Paris" for e in fc["details"]["evidence"])
    assert record["score"] is not None and record["label"] == "trusted"
    return record
