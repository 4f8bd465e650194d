"""Start-up time: ``trustgate --help`` and ``trustgate serve`` until it answers, for one or more checkouts.

Run from the repository root::

    .venv/bin/python -m bench.startup                       # this checkout
    .venv/bin/python -m bench.startup --checkout ../other   # side by side with another (before/after)

Each checkout's code runs with this virtual environment's Python, alternating
between checkouts run by run so that both see the same machine noise; the
median of ``--runs`` is reported.
``serve`` runs with scoring off (the case where the gateway has no use for
the scoring libraries) and, with ``--scoring-on``, with the default scorers too,
against an upstream that is never called: the time is from process start to
the first 200 from ``/health/liveness``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

from tests.redis_server import free_port

SCORING_OFF = {"consistency": {"enabled": False}, "factcheck": {"enabled": False}, "rag": {"enabled": False}}


def _config(directory: Path, scoring_on: bool) -> Path:
    config = {
        "model_list": [
            {
                "model_name": "m",
                "litellm_params": {
                    "model": "openai/gpt-4o-mini",
                    "api_base": "http://127.0.0.1:9/v1",
                    "api_key": "sk-unused",
                },
            }
        ],
        "general_settings": {"master_key": "sk-bench"},
        "trustgate": {
            "store": {"path": str(directory / "records.sqlite3")},
            **({} if scoring_on else {"scoring": SCORING_OFF}),
        },
    }
    path = directory / f"config-{'on' if scoring_on else 'off'}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _environment() -> dict[str, str]:
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1"}


def _command(checkout: Path) -> list[str]:
    """``python -m trustgate``; a checkout from before the wiring package (``trustgate/``) ran ``proxy.cli``."""
    return [sys.executable, "-m", "trustgate" if (checkout / "trustgate").is_dir() else "proxy.cli"]


def time_help(checkout: Path) -> float:
    """Seconds of ``python -m trustgate --help`` run in ``checkout``."""
    started = time.perf_counter()
    subprocess.run(
        [*_command(checkout), "--help"],
        cwd=checkout,
        env=_environment(),
        stdout=subprocess.DEVNULL,
        check=True,
        timeout=120,
    )
    return time.perf_counter() - started


def time_serve(checkout: Path, config: Path, timeout_s: float = 180.0) -> float:
    """Seconds from starting ``serve`` to its first 200 on /health/liveness."""
    port = free_port()
    started = time.perf_counter()
    process = subprocess.Popen(
        [*_command(checkout), "serve", "--config", str(config), "--port", str(port), "--log-level", "warning"],
        cwd=checkout,
        env=_environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while time.perf_counter() - started < timeout_s:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/liveness", timeout=1) as response:
                    if response.status == 200:
                        return time.perf_counter() - started
            except OSError:
                time.sleep(0.02)
            if process.poll() is not None:
                raise RuntimeError(f"serve in {checkout} exited with {process.returncode}")
        raise RuntimeError(f"serve in {checkout} did not answer within {timeout_s} s")
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--checkout",
        type=Path,
        action="append",
        default=[],
        help="another checkout to measure (repeatable); this one is always measured",
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--scoring-on", action="store_true", help="also time serve with the default scorers")
    args = parser.parse_args()
    checkouts = [Path.cwd(), *(c.resolve() for c in args.checkout)]
    with tempfile.TemporaryDirectory() as scratch:
        configs = {"serve (scoring off)": _config(Path(scratch), False)}
        if args.scoring_on:
            configs["serve (default scoring)"] = _config(Path(scratch), True)
        times: dict[tuple[Path, str], list[float]] = {}
        for _ in range(args.runs):
            for checkout in checkouts:
                times.setdefault((checkout, "--help"), []).append(time_help(checkout))
                for name, config in configs.items():
                    times.setdefault((checkout, name), []).append(time_serve(checkout, config))
    print("| checkout | command | median s | min s | max s |\n|---|---|---|---|---|")
    for (checkout, name), values in times.items():
        print(f"| {checkout.name} | {name} | {statistics.median(values):.2f} | {min(values):.2f} | {max(values):.2f} |")


if __name__ == "__main__":
    main()
