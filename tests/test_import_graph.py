"""Dependencies in memory_core run one way: between packages only down the layers of ARCHITECTURE.md
(``scripts/import_graph.py`` holds them as data and reads the graph), no import cycles, and nothing
below the façade imports it.

The graph is read from the source with ``ast``, not by importing anything. Module-level and
function-level imports both count (a late import is still a run-time dependency); imports under
``if TYPE_CHECKING:`` do not count for the façade rule (type hints only), but they do for cycles:
a module whose type hints name a module that imports it back is one subject split in two. The implicit import of a parent package (importing
``memory_core.x`` runs ``memory_core/__init__.py`` first) is left out: it follows from the layout,
not from what a module depends on.

The faces and the façade may depend on the façade: the package root (``memory_core/__init__.py``
re-exports MemoryBank), the CLI ``memory_core/cli/``, the server package ``memory_core/server/``, the framework
adapters ``memory_core/integrations/``, ``bank.py`` itself, and anything under ``memory_core/bank/``
should the façade become a package. No other module may reach ``memory_core.bank`` at run time,
directly or through another module (the package root included). Modules added later are covered
as they appear.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.import_graph import LAYERS, Graph, import_graph, wrong_way

PACKAGE = "memory_core"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE
FACADE = "memory_core.bank"
# The server (memory_core.server and its modules) is a face too: it serves the façade over HTTP;
# so are the framework adapters (memory_core.integrations): they put it behind LangGraph's and
# LangChain's interfaces.
FACES = {"memory_core", "memory_core.cli", "memory_core.server", "memory_core.integrations"}

def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as one concrete
    cycle ``[a, b, ..., a]`` through it, sorted for a stable message."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(_cycle_through(graph, set(c)) for c in components)


def _cycle_through(graph: Graph, component: set[str]) -> list[str]:
    start = min(component)
    paths = {start: [start]}
    queue = [start]
    while queue:  # breadth first, inside the component, back to start
        v = queue.pop(0)
        for w in sorted(graph[v] & component):
            if w == start:
                return paths[v] + [start]
            if w not in paths:
                paths[w] = paths[v] + [w]
                queue.append(w)
    raise AssertionError(f"no cycle through {start} in {sorted(component)}")


def facade_imports(graph: Graph, facade: str = FACADE, faces: set[str] = FACES) -> list[list[str]]:
    """For each module below the façade that reaches it at run time, the import path that does."""
    def in_facade(m: str) -> bool:
        return m == facade or m.startswith(facade + ".")

    found = []
    for start in sorted(graph):
        root = facade.split(".")[0]
        if start in faces or in_facade(start) or any(start.startswith(f + ".") for f in faces - {root}):
            continue
        paths = {start: [start]}
        queue = [start]
        while queue:
            v = queue.pop(0)
            hit = next((w for w in sorted(graph[v]) if in_facade(w)), None)
            if hit is not None:
                found.append(paths[v] + [hit])
                break
            for w in sorted(graph[v]):
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    queue.append(w)
    return found


# -- the package -------------------------------------------------------------------------------


def test_every_import_between_packages_points_down() -> None:
    found = wrong_way(import_graph())
    assert found == [], ("imports that point up or sideways between memory_core's packages (ARCHITECTURE.md, "
                         "\"Layers\"; scripts/import_graph.py prints the map):\n" + "\n".join(found))


def test_every_package_has_a_layer() -> None:
    packages = {p.name.removesuffix(".py") for p in ROOT.iterdir()
                if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.name != "__init__.py")}
    assert packages <= set().union(*LAYERS), f"give these a layer in scripts/import_graph.py: {packages - set().union(*LAYERS)}"


def test_an_import_pointing_up_is_found() -> None:
    graph: Graph = {"memory_core.storage.tables": {"memory_core.services.core"}, "memory_core.services.core": set()}
    assert wrong_way(graph) == ["memory_core.storage.tables -> memory_core.services.core"]
    sideways: Graph = {"memory_core.curation.merge": {"memory_core.evaluation.usage"}, "memory_core.evaluation.usage": set()}
    assert wrong_way(sideways) == ["memory_core.curation.merge -> memory_core.evaluation.usage"]


def test_the_graph_sees_the_package() -> None:
    graph = import_graph()
    assert {"memory_core", "memory_core.bank", "memory_core.cli", "memory_core.storage"} <= set(graph)
    # The CLI's commands import the package (its public surface) at the top and maintenance inside a command;
    # the package imports the bank on first use (its name under TYPE_CHECKING for the graph).
    assert "memory_core.bank" in import_graph(type_hints=True)["memory_core"]
    assert "memory_core" in graph["memory_core.cli.base"]
    assert "memory_core.curation.maintenance" in graph["memory_core.cli.curation"]
    assert all(targets <= set(graph) for targets in graph.values())


def test_memory_core_has_no_import_cycles() -> None:
    found = cycles(import_graph())
    assert found == [], "import cycles in memory_core:\n" + "\n".join(" -> ".join(c) for c in found)


def test_memory_core_has_no_import_cycles_counting_type_hints() -> None:
    found = cycles(import_graph(type_hints=True))
    assert found == [], ("import cycles in memory_core through `if TYPE_CHECKING:` imports (pass the data, or "
                         "name a Protocol the other side satisfies):\n" + "\n".join(" -> ".join(c) for c in found))


def test_nothing_below_the_facade_imports_it() -> None:
    found = facade_imports(import_graph())
    assert found == [], (
        "modules below the façade import it at run time (pass it the data it needs, or import it under "
        "`if TYPE_CHECKING:` for type hints):\n" + "\n".join(" -> ".join(p) for p in found))


# -- the checker itself: it must fail when it should ------------------------------------------------


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """A small package with a cycle through a function-level import, a façade, and the ways of
    importing it that do and do not count."""
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from .bank import Bank\n",
        "bank.py": "from . import store\n\nclass Bank:\n    def run(self):\n        from . import engine\n",
        "store.py": "import os\n",
        "engine.py": "from .store import os\n\ndef go():\n    from .helper import x\n",
        "helper.py": "from . import engine\nx = 1\n",
        "typed.py": ("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .bank import Bank\n"
                     "else:\n    from . import store\n"),
        "sneaky.py": "def f():\n    import pkg.bank\n",
        "rooted.py": "from pkg import Bank\n",
        "hinted.py": "from . import hinting\n",
        "hinting.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .hinted import X\n",
        "sub/__init__.py": "",
        "sub/deep.py": "from ..store import os\nfrom .. import typed\n",
    }
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_the_checker_finds_a_cycle_through_a_function_level_import(planted: Path) -> None:
    graph = import_graph(planted, "pkg")
    assert graph["pkg.sub.deep"] == {"pkg.store", "pkg.typed"}
    assert cycles(graph) == [["pkg.engine", "pkg.helper", "pkg.engine"]]  # the type-only one does not count here


def test_the_checker_counts_type_hints_for_cycles_when_asked(planted: Path) -> None:
    graph = import_graph(planted, "pkg", type_hints=True)
    assert graph["pkg.typed"] == {"pkg.bank", "pkg.store"}  # both branches of the TYPE_CHECKING test
    assert graph["pkg.sub.deep"] == {"pkg.store", "pkg.typed"}
    assert cycles(graph) == [["pkg.engine", "pkg.helper", "pkg.engine"], ["pkg.hinted", "pkg.hinting", "pkg.hinted"]]


def test_the_checker_finds_modules_that_import_the_facade(planted: Path) -> None:
    graph = import_graph(planted, "pkg")
    assert graph["pkg.typed"] == {"pkg.store"}  # the TYPE_CHECKING import is a type hint only
    assert facade_imports(graph, "pkg.bank", {"pkg"}) == [
        ["pkg.rooted", "pkg", "pkg.bank"],  # through the package root, which re-exports the façade
        ["pkg.sneaky", "pkg.bank"],  # a late import is still an import
    ]
