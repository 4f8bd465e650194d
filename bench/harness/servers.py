"""What the benchmarks load: the fake upstream, ``trustgate serve`` in front of it, and where requests go.

Every benchmark that measures a gateway configures it the same way (one model group ``fake`` →
the fake upstream, the pass-through path, scoring off), so that their figures compare.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from .processes import ServerProcess

__all__ = [
    "GROUP",
    "MASTER_KEY",
    "UPSTREAM_DELAY_MS",
    "UPSTREAM_JITTER_MS",
    "UPSTREAM_KEY",
    "WIRE_MODEL",
    "Target",
    "fake_upstream",
    "model_list",
    "trustgate_config",
    "trustgate_server",
    "write_yaml",
]

MASTER_KEY = "sk-bench-master"
UPSTREAM_KEY = "sk-bench-upstream"
GROUP = "fake"
WIRE_MODEL = "gpt-4o-mini"
UNPRICED_WIRE_MODEL = "trustgate-bench-unpriced"  # in no price list
MESSAGES = [{"role": "user", "content": "Say hello in one short sentence."}]

# The fake upstream's answer time: its mean, and how far either side of it each answer's is drawn.
UPSTREAM_DELAY_MS = 12.0
UPSTREAM_JITTER_MS = 6.0


@dataclass(frozen=True)
class Target:
    """Where the load goes: a base URL, the key it wants, the model name it expects."""

    name: str
    base_url: str
    api_key: str
    model: str

    def body(self, stream: bool) -> dict[str, object]:
        return {"model": self.model, "messages": MESSAGES, "stream": stream}

    @property
    def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.api_key}"}


def model_list(upstream_port: int, priced: bool = True) -> list[dict[str, object]]:
    """The one deployment both gateways get: model group ``fake`` → the fake upstream.

    It has a price, so that each gateway prices every answer and keeps its spend on the measured path, as a
    deployment of a listed model does (an unpriced one skips the ledger). ``priced=False`` takes the price
    away, and names a wire model that litellm's cost map does not list (it lists ``WIRE_MODEL``): spend
    tracking off, to measure what it costs (``bench.gateway_ab --unpriced``)."""
    prices = {"input_cost_per_token": 0.00000015, "output_cost_per_token": 0.0000006} if priced else {}
    return [
        {
            "model_name": GROUP,
            "litellm_params": {
                "model": f"openai/{WIRE_MODEL if priced else UNPRICED_WIRE_MODEL}",
                "api_base": f"http://127.0.0.1:{upstream_port}/v1",
                "api_key": UPSTREAM_KEY,
                "timeout": 30,
                **prices,
            },
        }
    ]


def write_yaml(path: Path, content: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump(content, sort_keys=False))
    return path


def fake_upstream(port: int, delay_ms: float, workdir: Path, jitter_ms: float = 0.0) -> ServerProcess:
    """The fake upstream on uvicorn's h11, named here because every committed figure was taken on it.

    Its server's implementation moves the stream ratio on this machine: on httptools,
    the same gateway's stream throughput against it was 0.73× instead of about 0.9×
    (BENCHMARKS.md), with the fake's writes on the wire the same. ``jitter_ms``
    spreads its answer times (``--delay-jitter-ms``).
    """
    argv = [
        sys.executable,
        "-m",
        "tests.fake_upstream",
        "--port",
        str(port),
        "--delay-ms",
        str(delay_ms),
        "--delay-jitter-ms",
        str(jitter_ms),
        "--http",
        "h11",
    ]
    return ServerProcess("fake upstream", argv, workdir / "upstream.log")


def trustgate_server(port: int, upstream_port: int, workdir: Path, priced: bool = True) -> ServerProcess:
    """The gateway core alone (``trustgate_config``), served on ``port``."""
    config = write_yaml(workdir / "trustgate.yaml", trustgate_config(port, upstream_port, workdir, priced))
    trustgate = Path(sys.executable).with_name("trustgate")
    argv = [str(trustgate), "serve", "--config", str(config), "--log-level", "warning", "--no-access-log"]
    return ServerProcess("trustgate", argv, workdir / "trustgate.log")


def trustgate_config(port: int, upstream_port: int, workdir: Path, priced: bool = True) -> dict[str, object]:
    """The gateway core alone: pass-through path, scoring off, its record store in the temp dir.

    Scoring is off because this measures what the proxy itself adds, like for
    like with LiteLLM's proxy, which does not score.
    """
    return {
        "model_list": model_list(upstream_port, priced),
        "general_settings": {"master_key": MASTER_KEY},
        "trustgate": {
            "server": {"host": "127.0.0.1", "port": port},
            "passthrough": True,
            "scoring": {"mode": "off", "consistency": {"enabled": False}, "factcheck": {"enabled": False}},
            "store": {"path": str(workdir / "trust-records.sqlite3")},
        },
    }
