"""Data flows one way: proxy → scoring → exporters, with the apps on top (docs/architecture.md).

Read from the source with ``ast``, so a violating import fails here even when
no test happens to execute the module that makes it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("proxy", "scoring", "exporters", "evaluation")
# What exporters may use of scoring (scoring/__init__.py says so): the record and its typed details,
# the one way every writer of traffic data creates its files, and the one reading of a Redis failure.
SCORING_PUBLIC = {"scoring", "scoring.types", "scoring.private_files", "scoring.redis_reachable"}


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, dotted
    target: str  # the imported module, dotted and absolute
    line: int
    top_level: bool  # executed when the module is imported (not inside a function)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _imports(path: Path) -> Iterator[Import]:
    module, is_package = _module_name(path), path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nested = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
              for n in ast.walk(f)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, module, is_package)
            # `from scoring import types` names the module scoring.types
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in _MODULES else base for alias in node.names]
        else:
            continue
        for target in targets:
            yield Import(module, target, node.lineno, id(node) not in nested)


_FILES = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
_MODULES = {_module_name(p) for p in _FILES}


def _package(target: str) -> str:
    return target.split(".")[0]


def _all_imports(*packages: str) -> list[Import]:
    return [i for p in _FILES if _package(_module_name(p)) in packages for i in _imports(p)]


def test_the_walker_sees_relative_and_nested_imports() -> None:
    """The rules below are only as good as the walker: check it on a module whose imports are known."""
    found = {(i.target, i.top_level) for i in _imports(ROOT / "proxy" / "cli.py")}
    assert ("scoring.settings", True) in found
    assert ("proxy.config", True) in found  # `from .config import ...`
    assert ("evaluation.cli", False) in found  # inside the eval sub-command's registration


@pytest.mark.parametrize("package", ["scoring", "exporters"])
def test_scoring_and_exporters_never_import_proxy_or_the_evaluation_app(package: str) -> None:
    wrong = [i for i in _all_imports(package) if _package(i.target) in {"proxy", "evaluation"}]
    assert wrong == []


def test_exporters_import_only_scorings_public_types() -> None:
    wrong = [i for i in _all_imports("exporters") if _package(i.target) == "scoring" and i.target not in SCORING_PUBLIC]
    assert wrong == []


def test_scoring_never_imports_exporters() -> None:
    assert [i for i in _all_imports("scoring") if _package(i.target) == "exporters"] == []


def test_nothing_imports_the_evaluation_app_but_the_eval_sub_command() -> None:
    """The CLI registers ``trustgate eval`` from inside a function, so importing the gateway never loads the app."""
    users = [i for i in _all_imports("proxy", "scoring", "exporters") if _package(i.target) == "evaluation"]
    assert users and all(i.module == "proxy.cli" and not i.top_level for i in users), users
