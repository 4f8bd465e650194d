"""The layering docs/architecture.md describes, with no exceptions: data flows proxy → scoring → exporters,
apps and wiring on top; inside proxy, its rooms in one order.

Read from the source with ``ast``, so a violating import fails here even when
no test happens to execute the module that makes it. Every import counts: at
module level, inside a function (imported late to start fast) and under
``TYPE_CHECKING`` (a type is a dependency too).

Who may import whom, by package:

- ``scoring`` imports none of the others: it is handed jobs and returns records;
- ``exporters`` imports only ``scoring``'s public types (the record it exports);
- ``proxy`` imports ``scoring`` (it hands it jobs) and ``exporters`` (it builds them);
- the apps, ``evaluation`` and ``console``, and the wiring package ``trustgate`` (the CLI, the worker's
  entry) sit on top: they may import the three below and nothing imports them, each other included;
  the wiring finds the apps through entry points.

Inside ``proxy``, each room (sub-package) imports only the rooms below it in ``PROXY_ROOMS``, so no two
rooms import each other; the modules in proxy's root, which assemble each process from the rooms' parts
(the app, the assembly, the local scoring worker's process, calibrate), sit on top and no room imports them.

And no module imports itself back through others: the modules' import graph has no cycle.

The pictures of these layers in docs/architecture.md are drawn from the same imports
(``layer_diagrams``); after a change that moves an edge, redraw them with
``python -m tests.test_architecture``.
"""

from __future__ import annotations

import ast

import pytest

from tests.import_graph import (
    FILES,
    MODULES,
    PACKAGES,
    ROOT,
    Import,
    absolute_module,
    all_imports,
    imports_of,
    module_name,
    package_of,
)

pytestmark = pytest.mark.unit

# Each package, and the packages it may import besides itself.
MAY_IMPORT: dict[str, set[str]] = {
    "scoring": set(),
    "exporters": {"scoring"},
    "proxy": {"scoring", "exporters"},
    "evaluation": {"proxy", "scoring", "exporters"},
    "console": {"proxy", "scoring", "exporters"},
    "trustgate": {"proxy", "scoring", "exporters"},
}
# proxy's rooms, lowest first: each may import the rooms before it, and none after it.
PROXY_ROOMS = ("base", "config", "upstream", "trust", "server", "endpoints")
ARCHITECTURE_DOC = ROOT / "docs" / "architecture.md"
# What exporters may use of scoring (scoring/__init__.py says so): the record and its typed details,
# the one way every writer of traffic data creates its files, and the one reading of a Redis failure.
SCORING_PUBLIC = {"scoring", "scoring.types", "scoring.private_files", "scoring.redis_reachable"}


def _graph() -> dict[str, set[str]]:
    """Each of the project's modules and the project's modules it imports (``import a.b.c`` counts as a.b.c)."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for i in all_imports(*PACKAGES):
        if i.target in MODULES and i.target != i.module:
            graph[i.module].add(i.target)
    return graph


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph[module])
    return seen


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's cycles, one list per strongly connected group of modules (each module reaches every other)."""
    reach = {m: _reachable(graph, m) for m in graph}
    groups = {tuple(sorted(n for n in reach[m] if m in reach[n])) for m in graph if m in reach[m]}
    return sorted(list(g) for g in groups)


def test_the_walker_sees_relative_nested_and_type_checking_imports() -> None:
    """The rules below are only as good as the walker: check it on modules whose imports are known."""
    found = {(i.target, i.top_level) for i in imports_of(ROOT / "trustgate" / "cli.py")}
    assert ("scoring", True) in found  # the package's public names
    assert ("trustgate.banner", True) in found  # `from .banner import ...`
    assert ("proxy.calibrate", False) in found  # inside the calibrate sub-command's handler
    found = {(i.target, i.top_level) for i in imports_of(ROOT / "scoring" / "assembly.py")}
    assert ("scoring.cpu_pool", True) in found  # under `if TYPE_CHECKING:`
    assert ("scoring.consistency.scorer", False) in found


def test_the_cycle_finder_finds_a_cycle_and_only_it() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d"}}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_every_package_has_its_rule() -> None:
    assert set(MAY_IMPORT) == set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_imports_only_the_layers_below_it(package: str) -> None:
    allowed = MAY_IMPORT[package] | {package}
    wrong = [
        i for i in all_imports(package) if package_of(i.target) in MAY_IMPORT and package_of(i.target) not in allowed
    ]
    assert wrong == []


def test_nothing_imports_an_app_or_the_wiring() -> None:
    on_top = {"evaluation", "console", "trustgate"}
    wrong = [
        i
        for i in all_imports(*PACKAGES)
        if package_of(i.target) in on_top and package_of(i.target) != package_of(i.module)
    ]
    assert wrong == []


def _public_name_sources(package: str) -> dict[str, str]:
    """Each name a package's ``__init__`` exports, and the module it comes from (dotted)."""
    path = ROOT / package / "__init__.py"
    return {
        alias.asname or alias.name: absolute_module(node, package, True)
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def _names_taken(package: str, source: str) -> list[tuple[str, str]]:
    """(importing module, name) for every ``from <source> import name`` in ``package``."""
    taken = []
    for path in FILES:
        module = module_name(path)
        if package_of(module) != package:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and absolute_module(node, module, path.name == "__init__.py") == source:
                taken += [(module, alias.name) for alias in node.names]
    return taken


def test_exporters_import_only_scorings_public_types() -> None:
    wrong = [
        i for i in all_imports("exporters") if package_of(i.target) == "scoring" and i.target not in SCORING_PUBLIC
    ]
    assert wrong == []
    # and of the names ``scoring`` exports, only those that come from those modules
    sources = _public_name_sources("scoring")
    assert [
        (module, name)
        for module, name in _names_taken("exporters", "scoring")
        if sources.get(name) not in SCORING_PUBLIC
    ] == []


@pytest.mark.parametrize("package", ["scoring", "proxy"])
def test_a_package_never_imports_its_own_public_names(package: str) -> None:
    """Its modules import each other directly; ``from scoring import X`` inside scoring would close a circle."""
    assert _names_taken(package, package) == []


def test_no_import_cycles() -> None:
    assert import_cycles(_graph()) == []


def _room(module: str) -> str:
    """The room of a proxy module: its sub-package, or ``proxy`` for the modules in proxy's root."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (ROOT / "proxy" / parts[1]).is_dir() else "proxy"


def room_imports() -> list[tuple[str, str, Import]]:
    """(importing room, imported room, the import) for every import of one proxy room by another."""
    found = [(_room(i.module), _room(i.target), i) for i in all_imports("proxy") if package_of(i.target) == "proxy"]
    return [(source, target, i) for source, target, i in found if source != target]


def test_the_rooms_are_proxys_sub_packages() -> None:
    """A new room is given its place in the order before it holds code."""
    found = {path.parent.name for path in (ROOT / "proxy").glob("*/__init__.py")}
    assert found == set(PROXY_ROOMS)


def test_the_room_reader_tells_rooms_from_the_root() -> None:
    assert _room("proxy.upstream.client") == "upstream"
    assert _room("proxy.base") == "base"
    assert _room("proxy.assembly") == "proxy"
    assert _room("proxy") == "proxy"


@pytest.mark.parametrize("room", PROXY_ROOMS)
def test_each_room_of_proxy_imports_only_the_rooms_below_it(room: str) -> None:
    below = set(PROXY_ROOMS[: PROXY_ROOMS.index(room)])
    assert [i for source, target, i in room_imports() if source == room and target not in below] == []


def test_no_two_rooms_of_proxy_import_each_other() -> None:
    edges = {(source, target) for source, target, _ in room_imports()}
    assert sorted((a, b) for a, b in edges if (b, a) in edges) == []


def _mermaid(edges: set[tuple[str, str]], labels: dict[str, str]) -> str:
    """A Mermaid flowchart of ``edges`` (an arrow from the importer to the imported), top-down."""
    lines = ["```mermaid", "flowchart TD"]
    lines += [f'    {node}["{label}"]' for node, label in labels.items()]
    lines += [f"    {source} --> {target}" for source, target in sorted(edges)]
    return "\n".join([*lines, "```"])


def layer_diagrams() -> dict[str, str]:
    """The pictures docs/architecture.md shows, each a Mermaid flowchart drawn from the imports: the packages,
    and proxy's rooms (its root named after the modules that make it) under their order."""
    packages = {
        (package_of(i.module), package_of(i.target))
        for i in all_imports(*PACKAGES)
        if package_of(i.target) in MAY_IMPORT and package_of(i.target) != package_of(i.module)
    }
    root = sorted(p.name for p in (ROOT / "proxy").glob("*.py") if p.name != "__init__.py")
    rooms = {(source, target) for source, target, _ in room_imports()}
    room_labels = {"proxy": f"proxy/: {', '.join(root)}"} | {room: f"proxy/{room}/" for room in reversed(PROXY_ROOMS)}
    return {
        "packages": _mermaid(packages, {package: f"{package}/" for package in reversed(PACKAGES)}),
        "proxy-rooms": " < ".join(f"`{room}`" for room in PROXY_ROOMS) + "\n\n" + _mermaid(rooms, room_labels),
    }


def _marked(name: str) -> tuple[str, str]:
    return f"<!-- drawn from the imports: {name} -->\n", f"\n<!-- end: {name} -->"


def documented_diagrams(text: str) -> dict[str, str]:
    """The pictures as docs/architecture.md holds them, between their markers."""
    found = {}
    for name in layer_diagrams():
        start, end = _marked(name)
        if start in text and end in text:
            found[name] = text[text.index(start) + len(start) : text.index(end)]
    return found


def redrawn(text: str) -> str:
    """``text`` with each picture between its markers drawn again from the imports."""
    for name, diagram in layer_diagrams().items():
        start, end = _marked(name)
        text = text[: text.index(start) + len(start)] + diagram + text[text.index(end) :]
    return text


def test_the_documented_pictures_are_drawn_from_the_imports() -> None:
    assert documented_diagrams(ARCHITECTURE_DOC.read_text(encoding="utf-8")) == layer_diagrams(), (
        "the imports changed the layers' pictures: redraw them with `python -m tests.test_architecture`"
    )


def test_a_diagram_shows_each_edge_once_with_its_labels() -> None:
    drawn = _mermaid({("b", "a"), ("c", "a")}, {"c": "C/", "b": "B/", "a": "A/"})
    assert drawn.splitlines() == [
        "```mermaid",
        "flowchart TD",
        '    c["C/"]',
        '    b["B/"]',
        '    a["A/"]',
        "    b --> a",
        "    c --> a",
        "```",
    ]


if __name__ == "__main__":
    ARCHITECTURE_DOC.write_text(redrawn(ARCHITECTURE_DOC.read_text(encoding="utf-8")), encoding="utf-8")
