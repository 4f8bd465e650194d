"""``trustgate serve`` as a real child process of the test, on the embedded default config or a given one.

The checkout's own code runs (``python -m trustgate serve`` from the repository
root), with the default config's every setting except where it listens and
where it keeps its records, so a test never collides with a running
``make serve``. The gateway counts as started once it prints its ready banner.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from proxy import default_config_path

REPO = Path(__file__).resolve().parents[2]
READY = "TrustGate is ready on "
KEY = "sk-trustgate-local"  # the embedded default config's demo key
AUTH = {"authorization": f"Bearer {KEY}"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def default_config_on_free_ports(folder: Path, model_port: int | None = None) -> Path:
    """The embedded default config, moved to free ports (or the given model port) and a fresh record store."""
    config: dict[str, Any] = yaml.safe_load(default_config_path().read_text())
    model_port = model_port or free_port()
    config["model_list"][0]["litellm_params"]["api_base"] = f"http://127.0.0.1:{model_port}/v1"
    section = config["trustgate"]
    section["local_upstream"]["port"] = model_port
    section["server"]["port"] = free_port()
    section["store"] = {**section.get("store", {}), "path": str(folder / "records.sqlite3")}
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@dataclass
class GatewayProcess:
    process: subprocess.Popen[str]
    url: str = ""
    output: list[str] = field(default_factory=list)

    def children(self) -> list[int]:
        """Pids of the processes whose parent is the gateway."""
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, IndexError):
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == self.process.pid:
                    found.append(int(stat.parent.name))
        return found

    def descendants(self) -> list[int]:
        """Pids of the gateway's children, their children (the local scoring worker's Oxigraph), and so on."""
        parents: dict[int, int] = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, IndexError):
                parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        found, frontier = [], [self.process.pid]
        while frontier:
            below = [pid for pid, parent in parents.items() if parent in frontier]
            found += below
            frontier = below
        return found

    def peak_rss_bytes(self) -> int:
        """The most resident memory the gateway has held so far (the kernel's VmHWM)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no VmHWM in /proc status")

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


def _read_lines(gateway: GatewayProcess, ready: threading.Event) -> None:
    assert gateway.process.stdout is not None
    with gateway.process.stdout:  # closed at the end of the output: the process ended
        for line in gateway.process.stdout:
            gateway.output.append(line)
            if READY in line:  # the banner's first line, or a JSON log line (--log-format json)
                gateway.url = line.split(READY, 1)[1].split()[0].rstrip('"},')
                ready.set()
    ready.set()  # the process ended: wake the waiter


@contextlib.contextmanager
def serve_default_config(
    folder: Path, *, model_port: int | None = None, timeout: float = 240.0
) -> Iterator[GatewayProcess]:
    with serve_config(default_config_on_free_ports(folder, model_port), timeout=timeout) as gateway:
        yield gateway


@contextlib.contextmanager
def serve_config(
    config: Path, *, timeout: float = 240.0, environ: dict[str, str] | None = None, args: tuple[str, ...] = ()
) -> Iterator[GatewayProcess]:
    """``serve --config config`` until its ready banner; SIGTERM (then SIGKILL) when the block ends.

    ``environ`` adds variables; with ``TRUSTGATE_CONFIG`` among them, the config is named by it instead of
    ``--config``. ``args`` go after ``serve``."""
    environ = environ or {}
    named = [] if "TRUSTGATE_CONFIG" in environ else ["--config", str(config)]
    process = subprocess.Popen(
        [sys.executable, "-m", "trustgate", "serve", *named, *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **environ},
    )
    gateway = GatewayProcess(process)
    ready = threading.Event()
    reader = threading.Thread(target=_read_lines, args=(gateway, ready), daemon=True)
    reader.start()
    try:
        ready.wait(timeout)
        if not gateway.url:
            raise RuntimeError("the gateway did not print its ready banner:\n" + "".join(gateway.output[-40:]))
        yield gateway
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        reader.join(30)  # its output read to the end, and the pipe closed


def scoring_calls(url: str) -> float:
    """The upstream calls a running gateway's scorers have made so far (every purpose but the user's own)."""
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("trustgate_upstream_calls_total{") and 'purpose="user"' not in line
    )
