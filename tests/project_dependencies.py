"""What pyproject.toml declares, with everything each declared package brings in this environment."""

from __future__ import annotations

import importlib.metadata
import tomllib
from collections.abc import Iterable

from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name

from tests.import_graph import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# The extras the image installs (deploy/Dockerfile; tests/deploy/test_dockerfile.py pins them in the lock).
IMAGE_EXTRAS = ("local", "otlp-grpc")


def installed_closure(requirements: Iterable[str]) -> set[NormalizedName]:
    """The distributions these requirements bring in, as this environment's metadata says, with each
    requirement's own extras followed (``uvicorn[standard]`` brings uvloop) and no others."""
    todo = [Requirement(r) for r in requirements]
    seen: set[tuple[NormalizedName, frozenset[str]]] = set()
    while todo:
        requirement = todo.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(requirement.name)
        key = (name, frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            needs = importlib.metadata.requires(requirement.name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for need in map(Requirement, needs):
            extras = ["", *requirement.extras]
            if need.marker is None or any(need.marker.evaluate({"extra": extra}) for extra in extras):
                todo.append(Requirement(str(need).split(";")[0]))
    return {name for name, _ in seen}


def declared(*extras: str) -> set[NormalizedName]:
    """The core dependencies and those of ``extras``, with everything they bring."""
    return installed_closure(
        [*PROJECT["dependencies"], *(r for extra in extras for r in PROJECT["optional-dependencies"][extra])]
    )
