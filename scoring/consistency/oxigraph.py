"""The embedded SPARQL endpoint: Oxigraph's CLI, loading a store and serving it on loopback.

The store is served read-only (``oxigraph serve-read-only``): the graph never
changes after install, and a read-only server does not hold the store's write
lock, so several gateway processes can each serve the same directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO

from scoring.children import die_with_parent, forget_child, reap_stale_children, register_child

__all__ = ["OxigraphError", "oxigraph_binary", "oxigraph_load", "serve_oxigraph"]

STARTUP_TIMEOUT_S = 30.0


class OxigraphError(RuntimeError):
    """The Oxigraph CLI is missing, failed to load a store, or its server did not come up."""


def oxigraph_binary() -> str:
    """The ``oxigraph`` CLI next to this interpreter (the venv's), else the one on PATH."""
    beside = Path(sys.executable).parent / "oxigraph"
    found = str(beside) if beside.exists() else shutil.which("oxigraph")
    if found is None:
        raise OxigraphError("the oxigraph CLI is not installed (pip package `oxigraph`)")
    return found


def oxigraph_load(store_dir: Path, graph_file: Path) -> None:
    """Load an RDF file into a (new) store directory; atomic per file, as Oxigraph documents."""
    result = subprocess.run(
        [oxigraph_binary(), "load", "--location", str(store_dir), "--file", str(graph_file)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise OxigraphError(f"oxigraph load failed: {result.stderr.strip()[-500:]}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answers(query_url: str) -> bool:
    request = urllib.request.Request(
        query_url + "?query=ASK%7B%7D", headers={"Accept": "application/sparql-results+json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=1.0) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


async def _wait_until_ready(process: asyncio.subprocess.Process, query_url: str, log: IO[bytes]) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STARTUP_TIMEOUT_S
    while not await asyncio.to_thread(_answers, query_url):
        if process.returncode is not None:
            log.seek(0)
            raise OxigraphError(f"oxigraph exited with {process.returncode}: {log.read().decode()[-500:]}")
        if loop.time() > deadline:
            raise OxigraphError(f"oxigraph did not answer at {query_url} within {STARTUP_TIMEOUT_S}s")
        await asyncio.sleep(0.05)


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Kill the server: it serves a read-only store, so there is nothing to lose.

    Not SIGTERM: the local scoring worker ignores its process group's SIGTERM
    and SIGINT (it drains first), its server inherits that, and a terminate
    would only wait out a timeout before the kill.
    """
    if process.returncode is None:
        process.kill()
        await process.wait()
    forget_child(process.pid)


async def _start(store_dir: Path, port: int, log: IO[bytes]) -> tuple[asyncio.subprocess.Process, str]:
    bind = f"127.0.0.1:{port}"
    argv = [oxigraph_binary(), "serve-read-only", "--location", str(store_dir), "--bind", bind]
    process = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.DEVNULL, stderr=log, preexec_fn=die_with_parent()
    )
    register_child(process.pid, argv)
    query_url = f"http://{bind}/query"
    try:
        await _wait_until_ready(process, query_url, log)
    except BaseException:
        await _stop(process)
        raise
    return process, query_url


@contextlib.asynccontextmanager
async def serve_oxigraph(store_dir: Path, *, port: int = 0) -> AsyncIterator[str]:
    """Serve ``store_dir`` on 127.0.0.1 (``port`` 0: a free one); yields the SPARQL query URL.

    The server is a child process, stopped when the context exits and killed
    when this process dies (``scoring.children``). With ``port``
    0 a lost race for the picked port is retried on another. A missing store is a
    ``FileNotFoundError`` naming it; a server that does not come up, ``OxigraphError``.
    """
    if not (store_dir / "CURRENT").exists():
        raise FileNotFoundError(
            errno.ENOENT, "no Oxigraph store: run `python -m scoring.consistency.assets`", str(store_dir)
        )
    await asyncio.to_thread(reap_stale_children)
    with tempfile.TemporaryFile() as log:
        for attempt in range(3):
            try:
                process, query_url = await _start(store_dir, port or _free_port(), log)
                break
            except OxigraphError:
                if port or attempt == 2:
                    raise
        try:
            yield query_url
        finally:
            await _stop(process)
