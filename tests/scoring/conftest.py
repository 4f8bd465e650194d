"""Small scoring assets and the fixture graph over its own Oxigraph server, shared by a module's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from scoring.consistency.oxigraph import oxigraph_load
from tests.scoring.consistency.conftest import OxigraphThread
from tests.scoring.consistency.fixtures import write_test_graph
from tests.scoring.cpu_inputs import write_small_assets


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cpu-assets")
    write_small_assets(folder)
    return folder


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The fixture graph over Oxigraph (its own server: this module's workers query it from other processes)."""
    folder = tmp_path_factory.mktemp("cpu-graph")
    write_test_graph(folder / "graph.nt")
    oxigraph_load(folder / "store", folder / "graph.nt")
    with OxigraphThread(folder / "store") as server:
        yield server.url
