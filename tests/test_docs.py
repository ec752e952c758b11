"""ARCHITECTURE.md against the code: every module of memory_core has a row in its module tables,
every module a row names exists, each service's "builds on" names what it imports, and the storage
seam's table lists exactly the methods of the protocols in ``storage/interface.py``.

The page is read as text and the code with ``ast``; nothing is imported. Each check is a function
of plain data, run here on the repository and on planted drift, so it fails when the docs do.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from test_import_graph import import_graph

REPO = Path(__file__).resolve().parent.parent
ROOT = REPO / "memory_core"
ARCHITECTURE = REPO / "ARCHITECTURE.md"
# The bottom layer every service may use without naming it in "builds on".
FOUNDATION = {"errors", "models", "storage"}
MAX_LINES = 300


def _section(text: str, start: str, end: str) -> str:
    return text[text.index(start):text.index(end, text.index(start))]


def _rows(section: str) -> list[list[str]]:
    """The cells of each table row of ``section`` whose first cell names a module in backticks."""
    return [[c.strip() for c in line.split("|")[1:-1]] for line in section.splitlines()
            if line.startswith("| `")]


def code_modules(root: Path = ROOT) -> set[str]:
    """Every module of the package, as its path under ``root`` ("bank.py", "index/lexical.py")."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*.py")}


def documented_modules(text: str) -> set[str]:
    """The modules the "Modules" section's tables have a row for (a row may name several)."""
    found: set[str] = set()
    for cells in _rows(_section(text, "## Modules", "\n## ")):
        found.update(re.findall(r"`([\w/]+\.py)`", cells[0]))
    return found


def module_drift(code: set[str], documented: set[str]) -> dict[str, list[str]]:
    """Modules without a row, and rows naming no module; empty when the tables are true."""
    return {k: v for k, v in {"no row in ARCHITECTURE.md": sorted(code - documented),
                              "listed but not in memory_core/": sorted(documented - code)}.items() if v}


def builds_on_drift(text: str, graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """For each service row, the modules it imports (at run time or for type hints) that its
    "builds on" cell does not name, the foundation left out; another service counts by its module's
    name, anything else by its package's."""
    found = {}
    for cells in _rows(_section(text, "### Services", "\n### ")):
        module = re.findall(r"`([\w/]+)\.py`", cells[0])[0]
        named = set(re.findall(r"[a-z_]+", cells[2]))
        imports = {_builds_on_name(d) for d in graph.get(f"memory_core.{module.replace('/', '.')}", ())}
        missing = sorted(imports - FOUNDATION - named)
        if missing:
            found[module] = missing
    return found


def _builds_on_name(dotted: str) -> str:
    """How a "builds on" cell names a dependency: a service by its module, the rest by its package."""
    parts = dotted.removeprefix("memory_core.").split(".")
    return parts[1] if parts[0] == "services" and len(parts) > 1 else parts[0]


def protocol_methods(source: str) -> dict[str, set[str]]:
    """Each ``Protocol`` class of ``source``: the methods it declares."""
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and any(ast.unparse(b) == "Protocol" for b in node.bases):
            found[node.name] = {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
    return found


def documented_methods(text: str) -> dict[str, set[str]]:
    """The storage seam's table: each protocol and the methods listed for it."""
    table = _section(text, "| protocol | methods |", "\n\n")
    return {re.findall(r"`(\w+)`", cells[0])[0]: set(re.findall(r"`(\w+)`", cells[1])) for cells in _rows(table)}


def seam_drift(code: dict[str, set[str]], documented: dict[str, set[str]]) -> dict[str, dict[str, list[str]]]:
    found = {}
    for name in sorted(code.keys() | documented.keys()):
        have, said = code.get(name, set()), documented.get(name, set())
        if have != said:
            found[name] = {"in the code only": sorted(have - said), "in the docs only": sorted(said - have)}
    return found


# -- the repository -------------------------------------------------------------------------------


def test_every_module_has_a_row_and_every_row_a_module() -> None:
    assert module_drift(code_modules(), documented_modules(ARCHITECTURE.read_text(encoding="utf-8"))) == {}


def test_each_service_names_what_it_builds_on() -> None:
    graph = import_graph(type_hints=True)
    assert builds_on_drift(ARCHITECTURE.read_text(encoding="utf-8"), graph) == {}


def test_the_map_is_short_enough_to_read() -> None:
    """A map, not a manual (issue 41): why a module works as it does lives in its docstring."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_LINES
    assert "## Design notes" not in text


def test_the_storage_seam_lists_the_protocols_methods() -> None:
    code = protocol_methods((ROOT / "storage" / "interface.py").read_text(encoding="utf-8"))
    assert {"Store", "Connection", "Dialect"} <= code.keys()
    assert seam_drift(code, documented_methods(ARCHITECTURE.read_text(encoding="utf-8"))) == {}


# -- the checks fail on drift -----------------------------------------------------------------------


def test_a_module_added_without_a_row_is_found(tmp_path: Path) -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    package = tmp_path / "memory_core"
    for module in code_modules():
        (package / module).parent.mkdir(parents=True, exist_ok=True)
        (package / module).write_text("", encoding="utf-8")
    assert module_drift(code_modules(package), documented_modules(text)) == {}
    (package / "newcomer.py").write_text('"""A module nobody documented."""\n', encoding="utf-8")
    (package / "index" / "hnsw.py").write_text("", encoding="utf-8")
    assert module_drift(code_modules(package), documented_modules(text)) == {
        "no row in ARCHITECTURE.md": ["index/hnsw.py", "newcomer.py"]}
    gone = text.replace("| `embedding/vectors.py` |", "| `embedding/vectors.py`, `gone.py` |")
    assert module_drift(code_modules(package) - {"newcomer.py", "index/hnsw.py"}, documented_modules(gone)) == {
        "listed but not in memory_core/": ["gone.py"]}


def test_a_service_importing_more_than_it_says_is_found() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    graph = import_graph(type_hints=True)
    graph["memory_core.services.labels"] = graph["memory_core.services.labels"] | {"memory_core.index.scoring", "memory_core.storage.clock"}
    assert builds_on_drift(text, graph) == {"services/labels": ["index"]}  # clock is the foundation's


def test_a_method_added_to_a_protocol_is_found() -> None:
    source = (ROOT / "storage" / "interface.py").read_text(encoding="utf-8")
    grown = source.replace("class Dialect(Protocol):", "class Dialect(Protocol):\n    def regexp(self, c: str) -> str: ...\n")
    drift = seam_drift(protocol_methods(grown), documented_methods(ARCHITECTURE.read_text(encoding="utf-8")))
    assert drift == {"Dialect": {"in the code only": ["regexp"], "in the docs only": []}}


def test_a_newcomers_path_names_every_package() -> None:
    """README → ARCHITECTURE.md → a package's docstring: each names every package of memory_core,
    and each package's docstring says what it owns and what it may import."""
    packages = sorted(p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file())
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    layout = _section(readme, "## Layout", "\n## ") if "\n## " in readme[readme.index("## Layout") + 1:] \
        else readme[readme.index("## Layout"):]
    layers = _section(ARCHITECTURE.read_text(encoding="utf-8"), "## Layers", "### Packages")
    assert [p for p in packages if f"{p}/" not in layout] == [], "name these packages in the README's Layout"
    assert [p for p in packages if f"{p}/" not in layers] == [], "draw these packages in ARCHITECTURE.md's Layers"
    for package in packages:
        doc = ast.get_docstring(ast.parse((ROOT / package / "__init__.py").read_text(encoding="utf-8"))) or ""
        flat = " ".join(doc.split())
        says_imports = "may import" in flat.lower() or "public surface" in flat or "public package" in flat
        assert len(doc.splitlines()) >= 3 and says_imports, f"memory_core/{package}/__init__.py: say what it owns and may import"
