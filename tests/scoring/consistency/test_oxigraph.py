"""The embedded SPARQL server: started on loopback, answering, and gone after the context."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from scoring.consistency.oxigraph import OxigraphError, oxigraph_load, serve_oxigraph

from .fixtures import write_test_graph


def ask(url: str) -> int:
    with urllib.request.urlopen(url + "?query=ASK%7B%7D", timeout=2) as response:
        return int(response.status)


@pytest.mark.integration
def test_serves_a_store_on_loopback_and_stops(tmp_path: Path) -> None:
    write_test_graph(tmp_path / "g.nt")
    oxigraph_load(tmp_path / "store", tmp_path / "g.nt")

    async def run() -> str:
        async with serve_oxigraph(tmp_path / "store") as url, serve_oxigraph(tmp_path / "store") as second:
            assert url.startswith("http://127.0.0.1:") and url.endswith("/query") and url != second
            assert await asyncio.to_thread(ask, url) == 200  # read-only: two servers share one store
        return url

    url = asyncio.run(run())
    with pytest.raises((urllib.error.URLError, OSError)):
        ask(url)


@pytest.mark.unit
def test_a_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    async def run() -> None:
        async with serve_oxigraph(tmp_path / "nothing"):
            pass

    with pytest.raises(FileNotFoundError, match=r"scoring.consistency.assets") as raised:
        asyncio.run(run())
    assert raised.value.filename == str(tmp_path / "nothing")


@pytest.mark.integration
def test_a_broken_graph_file_fails_to_load(tmp_path: Path) -> None:
    (tmp_path / "bad.nt").write_text("<urn:a> <urn:b> .\n")
    with pytest.raises(OxigraphError):
        oxigraph_load(tmp_path / "store", tmp_path / "bad.nt")
