"""What the project's code imports, pyproject.toml declares: a package that only arrives through another
package's dependencies, or through an extra the gateway is not installed with, is one a user's install
or the image lacks.

The image installs the lock alone with ``--no-deps`` (deploy/Dockerfile), and ``pip install trustgate``
brings only the core dependencies; the development environment (``make install``) brings every extra,
so a missing declaration never shows there. Read from the source with ``ast`` (the walker of
tests/test_architecture.py), so a module no test happens to import counts too.
"""

from __future__ import annotations

import functools
import importlib.metadata
import sys
from collections.abc import Mapping

import pytest
from packaging.utils import NormalizedName, canonicalize_name

from tests.import_graph import PACKAGES, Import, all_imports
from tests.project_dependencies import IMAGE_EXTRAS, declared, installed_closure

pytestmark = pytest.mark.unit

GATEWAY = ("proxy", "scoring", "exporters", "trustgate")
# A gateway module that needs an extra the user opts in to, and that extra.
OPT_IN = {"scoring.factcheck.nli": "nli"}
# The apps on top: the extras each may rely on besides the image's.
APP_EXTRAS = {"evaluation": ("eval",), "console": ()}


@functools.cache
def _distributions() -> Mapping[str, list[str]]:
    """Each importable top-level name and the distributions that install it (half a second to read: only
    when a test asks, not when tests/deploy/test_dockerfile.py, which imports this module, is collected)."""
    return importlib.metadata.packages_distributions()


def _third_party(imports: list[Import]) -> list[Import]:
    return [
        i
        for i in imports
        if (top := i.target.split(".")[0])
        and top != "__future__"
        and top not in sys.stdlib_module_names
        and top not in PACKAGES
    ]


def undeclared(imports: list[Import], available: set[NormalizedName]) -> list[tuple[str, str, int]]:
    """(module, import, line) for each import whose distribution is not among ``available``."""
    missing = []
    for i in _third_party(imports):
        owners = {canonicalize_name(d) for d in _distributions().get(i.target.split(".")[0], [])}
        if not owners & available:
            missing.append((i.module, i.target, i.line))
    return missing


def test_the_closure_follows_requirements_and_their_extras_only() -> None:
    """The check below is only as good as the closure: on requirements whose dependencies are known."""
    assert {"aiohttp", "aiohappyeyeballs", "multidict", "yarl"} <= installed_closure(["aiohttp"])
    assert "matplotlib" not in declared()  # the eval extra's
    assert "matplotlib" in declared("eval")
    assert "torch" in declared("nli") and "torch" not in declared(*IMAGE_EXTRAS)


def test_the_walker_finds_a_third_party_import_only_an_extra_brings() -> None:
    """A control: the nli judge's torch is not in the image's set, so the rule would catch it."""
    nli = [i for i in all_imports("scoring") if i.module in OPT_IN]
    assert ("scoring.factcheck.nli", "torch") in {(m, t) for m, t, _ in undeclared(nli, declared(*IMAGE_EXTRAS))}


def test_the_gateway_imports_only_what_it_is_installed_with() -> None:
    """Every third-party module the gateway's packages import, at start or late, comes with the core
    dependencies or the image's extras; the opt-in judges' with their own extra."""
    imports = all_imports(*GATEWAY)
    image = declared(*IMAGE_EXTRAS)
    assert undeclared([i for i in imports if i.module not in OPT_IN], image) == []
    for module, extra in OPT_IN.items():
        assert undeclared([i for i in imports if i.module == module], declared(*IMAGE_EXTRAS, extra)) == []


@pytest.mark.parametrize("app", sorted(APP_EXTRAS))
def test_each_app_imports_only_what_its_extras_bring(app: str) -> None:
    assert undeclared(all_imports(app), declared(*IMAGE_EXTRAS, *APP_EXTRAS[app])) == []
