"""The suite's own layout: tests mirror the packages, helpers live in helper modules and fixtures (never in a
test module that others import), and every test is in exactly one tier, which a unit test cannot leave."""

from __future__ import annotations

import ast
import asyncio
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.import_graph import PACKAGES, ROOT, absolute_module, module_name
from tests.tiers import MisTiered, UnitGuard, tier_problem

# Where tests of the whole gateway live, beside the folders of proxy/'s rooms.
WHOLE_GATEWAY = Path("tests/proxy/whole_gateway")


def _python_files() -> Iterator[Path]:
    """The repository's own modules: every top-level folder but hidden ones, the virtualenv and built data."""
    for top in sorted(ROOT.iterdir()):
        if top.is_dir() and not top.is_symlink() and not top.name.startswith(".") and top.name != "var":
            yield from sorted(top.rglob("*.py"))


def imported_test_modules(source: str, module: str, is_package: bool = False) -> list[str]:
    """The test modules (``test_*``) that a module's source imports, by dotted name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = absolute_module(node, module, is_package)
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        found += [t for t in targets if t.rsplit(".", 1)[-1].startswith("test_")]
    return found


@pytest.mark.unit
def test_the_check_sees_each_way_of_importing_a_test_module() -> None:
    source = """
import tests.proxy.test_a
from tests.proxy.test_b import helper
from tests.proxy import test_c
from .test_d import helper
from tests.proxy.scored_gateway import chat
"""
    found = imported_test_modules(source, "tests.proxy.test_e")
    assert found == ["tests.proxy.test_a", "tests.proxy.test_b", "tests.proxy.test_c", "tests.proxy.test_d"]


@pytest.mark.unit
def test_no_module_imports_a_test_module() -> None:
    """A helper two test modules share lives in a helper module or a fixture: a test module imported by another
    runs its tests' module-level set-up there too, and moves or renames break far away."""
    imports = {
        f"{path.relative_to(ROOT)}": found
        for path in _python_files()
        if (found := imported_test_modules(path.read_text(), module_name(path), path.name == "__init__.py"))
    }
    assert imports == {}


@pytest.mark.unit
def test_tests_of_a_package_live_in_the_folder_of_its_subpackage() -> None:
    """tests/proxy/upstream/ tests proxy/upstream/; tests of the gateway as a whole have one folder of their own."""
    misplaced = []
    for test_module in sorted((ROOT / "tests").rglob("test_*.py")):
        folder = test_module.parent.relative_to(ROOT)
        parts = folder.parts[1:]
        if parts and parts[0] in PACKAGES and folder != WHOLE_GATEWAY and not (ROOT.joinpath(*parts)).is_dir():
            misplaced.append(str(test_module.relative_to(ROOT)))
    assert misplaced == []


@pytest.mark.unit
def test_a_test_is_in_exactly_one_tier() -> None:
    assert tier_problem(["unit"]) is None
    assert tier_problem(["e2e", "skipif", "parametrize"]) is None
    assert tier_problem(["parametrize"]) == "no tier marker (one of unit, integration, e2e, browser)"
    assert tier_problem(["unit", "integration", "unit"]) == "several tier markers (integration, unit)"


@pytest.mark.integration
def test_an_armed_guard_refuses_inet_sockets_and_processes_from_the_tests_threads_only() -> None:
    """Integration, as it opens what it checks is refused: the session's own guard is armed for unit tests only."""
    with socket.create_server(("127.0.0.1", 0)) as listening:
        address = listening.getsockname()
        guard = UnitGuard()
        running = threading.Event()
        go = threading.Event()

        def connect_when_told() -> None:  # started before the guard is armed: another test's server, say
            running.set()
            go.wait(10)
            socket.create_connection(address, timeout=5).close()

        earlier = threading.Thread(target=connect_when_told)
        earlier.start()
        running.wait(10)
        guard.arm()
        try:
            with socket.socket() as sock, pytest.raises(MisTiered, match="INET socket"):
                sock.connect(address)
            with pytest.raises(MisTiered, match="process"):
                subprocess.run(["true"], check=True)
            refused_in_thread: list[BaseException] = []
            later = threading.Thread(target=lambda: _record_refusal(address, refused_in_thread))
            later.start()
            later.join(10)
            go.set()
            earlier.join(10)
            left, right = socket.socketpair()  # in-process: asyncio's self-pipe is one
            left.close()
            right.close()
            asyncio.run(asyncio.sleep(0))
        finally:
            refused = guard.disarm()
    assert [type(e) for e in refused_in_thread] == [MisTiered]
    assert len(refused) == 3  # the test's own socket and process, and the socket of the thread it started
    subprocess.run(["true"], check=True)  # disarmed, nothing is refused


def _record_refusal(address: tuple[str, int], refusals: list[BaseException]) -> None:
    with socket.socket() as sock:
        try:
            sock.connect(address)
        except MisTiered as refused:
            refusals.append(refused)
