"""How the gateway starts the embedded llama.cpp server (the real server runs in tests/e2e)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from proxy.config.settings import LocalUpstreamSettings
from proxy.upstream.local_model import LocalUpstreamError, llama_server_command, run_local_upstream


@pytest.mark.unit
def test_the_server_queues_requests_instead_of_interrupting_them() -> None:
    """llama-cpp-python's default (interrupt_requests true) ends a running stream with [DONE] on each new request."""
    command = llama_server_command(LocalUpstreamSettings(model_path="/models/m.gguf", threads=1))
    flags = dict(zip(command[3::2], command[4::2], strict=False))
    assert flags["--interrupt_requests"] == "false"
    assert flags["--n_threads"] == flags["--n_threads_batch"] == "1"


@pytest.mark.integration
def test_a_foreign_process_on_the_port_is_refused_with_a_clear_error() -> None:
    """Its answers would pass for our server's: the gateway must not start against it."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        settings = LocalUpstreamSettings(enabled=True, model_path="/models/m.gguf", port=port)

        async def start() -> None:
            async with run_local_upstream(settings):
                raise AssertionError("started on a taken port")

        with pytest.raises(LocalUpstreamError, match=f"port {port} .* in use"):
            asyncio.run(start())
