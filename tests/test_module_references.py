"""Every reference to one of the project's modules in prose names a module or file that exists.

Comments, docstrings and the Markdown documents name modules as paths
(``proxy/upstream/routing.py``, ``scoring/pipeline.py``) or dotted
(``proxy.upstream.routing``, ``scoring.types.TrustRecord``). A module that moves
leaves such references behind, which no import and no test would otherwise
notice; here each must resolve:

- a path names a file or folder of the repository;
- a dotted name walks packages down to a module (what follows it is the module's
  own business: an attribute, a config field) or to a name its package binds.

A dotted name that is not a module may still be a name of the gateway's own: a
config option (``trustgate.scoring.worker``, or ``scoring.worker`` within that
section), or a string the code spells itself (a logger such as
``trustgate.low_trust``, an event, an entry-point group). Those are not
references to modules, and pass.

``proxy/config/settings.py`` and ``scoring/settings.py`` are left out for now
(``UNCHECKED``): their comments are being rewritten beside the config's time
options, and they still name modules that moved.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from pydantic import BaseModel

from proxy.config.settings import GatewaySettings

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("proxy", "scoring", "exporters", "console", "evaluation", "trustgate", "tests", "bench")
UNCHECKED = {"proxy/config/settings.py", "scoring/settings.py"}
# A dotted name ending so is a file's name (``console.md``, ``trustgate.rules.test.yml``), not a module.
FILE_SUFFIXES = {"md", "yml", "yaml", "json", "jsonl", "toml", "txt", "html", "css", "js", "png", "svg", "csv", "lock"}
# A package, then names parted by dots or slashes; not the tail of a longer path or dotted name, nor a glob's head.
REFERENCE = re.compile(
    r"(?<![\w./\\-])(?:" + "|".join(PACKAGES) + r")(?:[./][A-Za-z_]\w*)+(?![\w*{<-])",
)


@dataclass(frozen=True)
class Reference:
    file: str
    line: int
    name: str


def references(text: str, file: str, first_line: int = 1) -> Iterator[Reference]:
    """The module references in ``text``, which starts at line ``first_line`` of ``file``."""
    for number, line in enumerate(text.splitlines(), first_line):
        for match in REFERENCE.finditer(line):
            yield Reference(file, number, match.group())


def _prose_of_python(path: Path) -> Iterator[tuple[str, int]]:
    """Each comment and docstring of a Python file, with the line it starts on."""
    source = path.read_text(encoding="utf-8")
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.string, token.start[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring is not None:
                yield docstring, node.body[0].lineno


def _python_files() -> list[Path]:
    return [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]


def _documents() -> list[Path]:
    """The Markdown documents, less the evaluation reports: each is written by the run it records, and names
    the commands and modules as they were when it ran."""
    documents = [*sorted(ROOT.glob("*.md")), *sorted((ROOT / "docs").rglob("*.md"))]
    return [
        path for path in documents if not (path.is_relative_to(ROOT / "docs" / "eval") and path.name == "report.md")
    ]


def all_references() -> Iterator[Reference]:
    """Every module reference in the code's comments and docstrings, pyproject.toml's comments and the documents."""
    for path in _python_files():
        file = path.relative_to(ROOT).as_posix()
        if file not in UNCHECKED:
            for text, line in _prose_of_python(path):
                yield from references(text, file, line)
    for number, line in enumerate((ROOT / "pyproject.toml").read_text(encoding="utf-8").splitlines(), 1):
        if "#" in line:
            yield from references(line[line.index("#") :], "pyproject.toml", number)
    for path in _documents():
        yield from references(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())


@cache
def _bound_names(init: Path) -> frozenset[str]:
    """The names a package's ``__init__`` binds at its top level."""
    names: set[str] = set()
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {target.id for target in targets if isinstance(target, ast.Name)}
    return frozenset(names)


def names_a_module(name: str) -> bool:
    """Whether ``name`` (a path, or dotted) resolves to a file, a module, or a name its package binds."""
    if "/" in name:
        path = ROOT / name
        return path.exists() or path.with_name(path.name + ".py").exists()
    parts = name.split(".")
    where = ROOT / parts[0]
    for part in parts[1:]:
        if (where / part / "__init__.py").exists():
            where = where / part
        elif (where / f"{part}.py").exists():
            return True
        else:
            return part in _bound_names(where / "__init__.py")
    return True


def _models_in(annotation: object) -> Iterator[type[BaseModel]]:
    """The config models an annotation holds (``X``, ``X | None``, ``list[X]``, ``dict[str, X]``...)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    elif isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is not None:
        for argument in typing.get_args(annotation):
            yield from _models_in(argument)


def _option_paths(model: type[BaseModel], prefix: str, seen: frozenset[type[BaseModel]]) -> Iterator[str]:
    for name, field in model.model_fields.items():
        for key in {name, field.alias or name}:
            path = f"{prefix}{key}"
            yield path
            for inner in _models_in(field.annotation):
                if inner not in seen:
                    yield from _option_paths(inner, f"{path}.", seen | {inner})


@cache
def config_options() -> frozenset[str]:
    """Every option's dotted path in the config file (``trustgate.scoring.queue.backend``...)."""
    return frozenset(_option_paths(GatewaySettings, "", frozenset({GatewaySettings})))


def is_config_option(name: str) -> bool:
    """``name`` is an option's path, whole or from one of its sections on (``scoring.worker``), or a key under a
    section named from the file's top (``trustgate.server.prot``, a misspelt key an error names)."""
    section = name.rpartition(".")[0]
    return any(path == name or path.endswith(f".{name}") for path in config_options()) or (
        "." in section and section in config_options()
    )


@cache
def spelled_by_the_code() -> frozenset[str]:
    """Every string constant in the code (loggers, events, entry-point groups; the CLI module a benchmark runs in
    an old checkout), the tests' left out: theirs name what a test expects, stale names included."""
    return frozenset(
        node.value
        for path in _python_files()
        if path.relative_to(ROOT).parts[0] != "tests"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 100
    )


def stale(reference: Reference) -> bool:
    name = reference.name
    if names_a_module(name) or ("/" not in name and name.rpartition(".")[2] in FILE_SUFFIXES):
        return False
    return "/" in name or not (is_config_option(name) or name in spelled_by_the_code())


def test_the_finder_tells_stale_references_from_live_ones() -> None:
    text = (
        "the client (proxy/passthrough.py), its retries (proxy.retries) and routing (proxy.upstream.routing,\n"
        "``proxy/upstream/routing.py``, ``scoring/pipeline.py``), the ``scoring.worker`` option, a record\n"
        "(``scoring.types.TrustRecord``), the app (``proxy.create_app``), a folder (tests/proxy/), files\n"
        "(tests/proxy/test_*.py), a path outside (var/scoring/assets) and a page (console.md)."
    )
    found = list(references(text, "sample.md"))
    assert [r.name for r in found] == [
        "proxy/passthrough.py",
        "proxy.retries",
        "proxy.upstream.routing",
        "proxy/upstream/routing.py",
        "scoring/pipeline.py",
        "scoring.worker",
        "scoring.types.TrustRecord",
        "proxy.create_app",
        "tests/proxy",
        "tests/proxy",
        "console.md",
    ]
    assert [r.name for r in found if stale(r)] == ["proxy/passthrough.py", "proxy.retries"]
    assert found[0].line == 1 and found[-1].line == 4


def test_config_options_are_read_from_the_settings() -> None:
    assert is_config_option("trustgate.scoring.queue.backend")
    assert is_config_option("scoring.worker")
    assert is_config_option("trustgate.server.prot")
    assert not is_config_option("scoring.retries")
    assert not is_config_option("scoring.consistency.gone")  # a section's key only from the file's top
    assert not is_config_option("trustgate.gone")


def test_every_module_reference_names_a_module_that_exists() -> None:
    assert [r for r in all_references() if stale(r)] == []
