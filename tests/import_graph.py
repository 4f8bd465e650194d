"""The project's own imports, read from the source with ``ast``: every import counts, at module level, inside a
function (imported late to start fast) and under ``TYPE_CHECKING`` (a type is a dependency too).

tests/test_architecture.py checks the layering on them, tests/test_declared_dependencies.py the declared
distributions.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The project's packages, lowest layer first (tests/test_architecture.py says who may import whom).
PACKAGES = ("scoring", "exporters", "proxy", "evaluation", "console", "trustgate")


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, dotted
    target: str  # the imported module, dotted and absolute
    line: int
    top_level: bool  # executed when the module is imported (not inside a function)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def absolute_module(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


@functools.cache
def imports_of(path: Path) -> tuple[Import, ...]:
    """Every import one module makes; each module is read and parsed once per run (the layering and dependency
    tests ask for the same modules many times over)."""
    return tuple(_walk(path))


def _walk(path: Path) -> Iterator[Import]:
    module, is_package = module_name(path), path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nested = {
        id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) for n in ast.walk(f)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = absolute_module(node, module, is_package)
            # `from scoring import types` names the module scoring.types
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        for target in targets:
            yield Import(module, target, node.lineno, id(node) not in nested)


FILES = [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]
MODULES = {module_name(p) for p in FILES}


def package_of(target: str) -> str:
    return target.split(".")[0]


def all_imports(*packages: str) -> list[Import]:
    """Every import the packages' modules make."""
    return [i for p in FILES if package_of(module_name(p)) in packages for i in imports_of(p)]
