"""The e2e tier's one gateway on the embedded default config, shared by the tests that only talk to it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.gateway_process import GatewayProcess, serve_default_config


@pytest.fixture(scope="package")
def default_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """``trustgate serve`` on the embedded default config: the real llama.cpp server with SmolLM2, the real
    scorers in the local scoring worker. Its start loads the model and every scorer, so it is started once for
    the package, and stopped after its last test.

    For tests that leave no scoring backlog behind them: a test that does (the quickstart queues async jobs
    it never waits for) has a gateway of its own, whose backlog ends with it instead of delaying the next
    test's jobs."""
    with serve_default_config(tmp_path_factory.mktemp("default-gateway")) as running:
        yield running
