"""The packages of memory_core and the imports between them, read from the source with ``ast``.

    python scripts/import_graph.py            # each package, its layer, and what it imports
    python scripts/import_graph.py --check    # exit 1 on an import that points up or sideways

``LAYERS`` is the map of ARCHITECTURE.md ("Layers") as data: a package may import its own modules
and the packages on lower layers, never one on its own layer or above. Module-level and
function-level imports both count (a late import is still a run-time dependency); imports under
``if TYPE_CHECKING:`` count only when asked for (``type_hints``). ``tests/test_import_graph.py``
runs the same check.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = "memory_core"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE

# Bottom to top. A package is a subpackage of memory_core, or a module at its top ("bank"); "" is
# memory_core/__init__.py, the public surface.
LAYERS: list[set[str]] = [
    {"errors", "_moved"},
    {"models"},
    {"storage", "language"},
    {"embedding"},
    {"index"},
    {"curation", "evaluation"},
    {"services"},
    {"client", "demo"},
    {"bank"},
    {""},
    {"server", "integrations"},
    {"cli"},  # memctl serve starts the server
]
LAYER_OF: dict[str, int] = {package: level for level, packages in enumerate(LAYERS) for package in packages}

Graph = dict[str, set[str]]


def _modules(root: Path, package: str) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package's __init__) for every .py file under ``root``."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _type_checking(test: ast.expr) -> bool:
    return ((isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
            or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _runtime_imports(tree: ast.AST, type_hints: bool = False) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that runs: at module level, in functions and classes, in try blocks;
    not in the body of ``if TYPE_CHECKING:`` (its ``else`` runs), unless ``type_hints``."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _type_checking(node.test) and not type_hints:
            stack.extend(node.orelse)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        else:
            stack.extend(ast.iter_child_nodes(node))


def _ours(dotted: str, modules: dict[str, tuple[Path, bool]]) -> str | None:
    """The module of the package that ``dotted`` names (its longest prefix that is one), or None."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        name = ".".join(parts[:end])
        if name in modules:
            return name
    return None


def import_graph(root: Path = ROOT, package: str = PACKAGE, type_hints: bool = False) -> Graph:
    """Module -> the modules of the package it imports at run time (and for type hints only, with
    ``type_hints``)."""
    modules = _modules(root, package)
    graph: Graph = {name: set() for name in modules}
    for name, (path, is_package) in modules.items():
        here = name.split(".") if is_package else name.split(".")[:-1]  # where relative imports start
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), type_hints):
            if isinstance(node, ast.Import):
                targets = [_ours(alias.name, modules) for alias in node.names]
            else:
                if node.level:
                    assert node.level <= len(here), f"{path}: relative import beyond the package"
                    base = ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                # "from pkg import x" imports the module pkg.x when there is one, else pkg itself.
                targets = [_ours(f"{base}.{alias.name}", modules) if f"{base}.{alias.name}" in modules
                           else _ours(base, modules) for alias in node.names]
            graph[name].update(t for t in targets if t is not None and t != name)
    return graph


def package_of(module: str) -> str:
    """The package of a dotted module name: its first name below memory_core ("" for the root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def package_graph(graph: Graph) -> dict[str, dict[str, set[str]]]:
    """Package -> the other packages it imports -> the module imports that make each edge."""
    found: dict[str, dict[str, set[str]]] = {}
    for module, targets in graph.items():
        here = package_of(module)
        for target in targets:
            there = package_of(target)
            if there != here:
                found.setdefault(here, {}).setdefault(there, set()).add(f"{module} -> {target}")
    return found


def wrong_way(graph: Graph) -> list[str]:
    """Every import between packages that points up or sideways, or touches a package with no layer."""
    found = []
    for here, edges in sorted(package_graph(graph).items()):
        for there, imports in sorted(edges.items()):
            if here not in LAYER_OF or there not in LAYER_OF:
                missing = here if here not in LAYER_OF else there
                found.append(f"{missing or '(root)'} has no layer in LAYERS")
            elif LAYER_OF[there] >= LAYER_OF[here]:
                found.extend(sorted(imports))
    return sorted(set(found))


def main(argv: list[str]) -> int:
    graph = import_graph(type_hints="--type-hints" in argv)
    packages = package_graph(graph)
    if "--check" in argv:
        found = wrong_way(graph)
        print("\n".join(found) if found else "every import points down")
        return 1 if found else 0
    names = sorted({package_of(m) for m in graph}, key=lambda p: (-LAYER_OF.get(p, -1), p))
    for name in names:
        targets = packages.get(name, {})
        label = f"{PACKAGE}.{name}" if name else PACKAGE
        print(f"{LAYER_OF.get(name, '?'):>2}  {label:28} -> {', '.join(sorted(t or PACKAGE for t in targets)) or '(nothing)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
