"""The console is an app on top: the gateway's packages never import it; the gateway finds it by entry point."""

from __future__ import annotations

import ast
import tomllib
from importlib import import_module
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

import console
from trustgate import cli

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(package: str) -> set[str]:
    found: set[str] = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
    return found


def test_no_gateway_package_imports_the_console() -> None:
    for package in ("proxy", "scoring", "exporters"):
        assert not {m for m in imported_modules(package) if m.split(".")[0] == "console"}, package


def test_serve_mounts_the_installed_apps(monkeypatch: pytest.MonkeyPatch) -> None:
    declared = [EntryPoint(name="console", value="console:mount", group="trustgate.apps")]
    monkeypatch.setattr(cli, "entry_points", lambda group: declared if group == "trustgate.apps" else [])
    assert cli.installed_apps() == [console.mount]


def test_the_declared_entry_point_is_the_console_mount() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    target = project["project"]["entry-points"]["trustgate.apps"]["console"]
    module, _, attribute = target.partition(":")
    assert getattr(import_module(module), attribute) is console.mount
    assert "console" in project["tool"]["setuptools"]["package-data"]
