"""The faces (app.py, dashboard/, memctl) use memory_core's public surface only.

Public means: a name in ``memory_core.__all__``, one of the submodules in
``memory_core.PUBLIC_MODULES``, or a name such a submodule defines itself (not one it imports) and
lists in its ``__all__`` when it has one. Names with a leading underscore are never public, on
memory_core or on anything else a face touches (``bank._store``). The check reads the sources
with ``ast``: imports (absolute, relative inside memory_core, ``importlib.import_module``) and
attribute access on what they bind.
"""

from __future__ import annotations

import ast
import importlib
from functools import cache
from pathlib import Path

import pytest

import memory_core

ROOT = Path(__file__).resolve().parent.parent
FACES = [ROOT / "app.py", *sorted((ROOT / "dashboard").glob("*.py")), *sorted((ROOT / "memory_core" / "cli").glob("*.py")),
         *sorted((ROOT / "memory_core" / "server").glob("*.py")),
         *sorted((ROOT / "memory_core" / "integrations").glob("*.py"))]
PACKAGE = "memory_core"


@cache
def defined_names(module: str) -> frozenset[str]:
    """The public names ``memory_core.<module>`` offers: its ``__all__``, else what it defines at top level."""
    mod = importlib.import_module(f"{PACKAGE}.{module}")
    if hasattr(mod, "__all__"):
        return frozenset(mod.__all__)
    tree = ast.parse(Path(mod.__file__).read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Try):  # try: import X / except ImportError: def X ... defines X here
            names.update(n.name for n in ast.walk(node) if isinstance(n, (ast.FunctionDef, ast.ClassDef)))
    return frozenset(n for n in names if not n.startswith("_"))


def public_module(dotted: str) -> str | None:
    """``memory_core.X`` -> X when X is a public submodule, else None."""
    prefix = PACKAGE + "."
    if dotted.startswith(prefix) and dotted[len(prefix):] in memory_core.PUBLIC_MODULES:
        return dotted[len(prefix):]
    return None


def public_package(name: str) -> bool:
    """Whether ``memory_core.<name>`` is a package that holds a public module (``curation``)."""
    return any(module.startswith(name + ".") for module in memory_core.PUBLIC_MODULES)


def violations(source: str, filename: str = "<face>", package: str | None = None) -> list[str]:
    """Every place ``source`` reaches past the public surface, as "file:line: what".

    ``package`` is the package the file lives in (``memory_core`` for the CLI), for relative imports.
    A face that is a package of its own (``memory_core.server``) may import its own modules.
    """
    tree = ast.parse(source, filename)
    found: list[str] = []
    # Local names bound to memory_core itself ("") or to one of its public submodules ("scoring").
    bound: dict[str, str] = {}

    def bad(node: ast.AST, what: str) -> None:
        found.append(f"{filename}:{getattr(node, 'lineno', '?')}: {what}")

    def check_module(node: ast.AST, dotted: str, alias: str | None) -> None:
        if dotted == PACKAGE:
            bound[alias or PACKAGE] = ""
        elif dotted.startswith(PACKAGE + "."):
            sub = public_module(dotted)
            if sub is None:
                bad(node, f"imports the internal module {dotted}")
            elif alias:
                bound[alias] = sub

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                # "import memory_core.index.scoring" binds memory_core; "... as sc" binds the submodule.
                check_module(node, a.name, a.asname or (None if "." in a.name else a.name))
                if a.asname is None and a.name.startswith(PACKAGE + "."):
                    bound[PACKAGE] = ""
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if package is None:
                    continue  # relative to dashboard/: not memory_core
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                dotted = f"{base}.{node.module}" if node.module else base
            else:
                dotted = node.module or ""
            if dotted == PACKAGE:
                for a in node.names:
                    if a.name == "*":
                        bad(node, "imports * from memory_core (name what you use)")
                    elif a.name in memory_core.PUBLIC_MODULES:
                        bound[a.asname or a.name] = a.name
                    elif a.name not in memory_core.__all__:
                        bad(node, f"imports {a.name!r}, which memory_core does not export")
            elif package not in (None, PACKAGE) and (dotted == package or dotted.startswith(package + ".")):
                continue  # a face's own modules
            elif dotted.startswith(PACKAGE + "."):
                sub = public_module(dotted)
                for a in node.names:
                    child = public_module(f"{dotted}.{a.name}")
                    if child is not None:  # from memory_core.evaluation import metrics
                        bound[a.asname or a.name] = child
                    elif sub is None:
                        bad(node, f"imports from the internal module {dotted}")
                    elif a.name not in defined_names(sub):
                        bad(node, f"imports {a.name!r}, which is not a public name of {dotted}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            check_module(node, node.args[0].value, None)
        elif isinstance(node, ast.Attribute):
            if (isinstance(node.value, ast.Attribute) and isinstance(node.value.value, ast.Name)
                    and bound.get(node.value.value.id) == "" and public_package(node.value.attr)
                    and f"{node.value.attr}.{node.attr}" not in memory_core.PUBLIC_MODULES):
                bad(node, f"uses memory_core.{node.value.attr}.{node.attr}, an internal module")
            if node.attr.startswith("_") and not (node.attr.startswith("__") and node.attr.endswith("__")):
                bad(node, f"uses the private attribute .{node.attr}")
            elif isinstance(node.value, ast.Name) and node.value.id in bound:
                sub = bound[node.value.id]
                if sub == "":
                    if node.attr not in memory_core.__all__ and node.attr not in memory_core.PUBLIC_MODULES \
                            and not public_package(node.attr):
                        bad(node, f"uses memory_core.{node.attr}, which memory_core does not export")
                elif node.attr not in defined_names(sub):
                    bad(node, f"uses {node.value.id}.{node.attr}, not a public name of memory_core.{sub}")
    return found


@pytest.mark.parametrize("face", FACES, ids=[str(p.relative_to(ROOT)) for p in FACES])
def test_faces_use_the_public_surface_only(face: Path) -> None:
    package = {PACKAGE: PACKAGE, "server": f"{PACKAGE}.server", "cli": f"{PACKAGE}.cli",
               "integrations": f"{PACKAGE}.integrations"}.get(face.parent.name)
    name = str(face.relative_to(ROOT))
    allowed = tuple(f"uses the private attribute .{attr}" for attr in SDK_PRIVATE.get(name, ()))
    found = violations(face.read_text(encoding="utf-8"), name, package)
    assert [v for v in found if not v.endswith(allowed)] == []


# A library's private attribute a face must reach for, one by one, with the reason.
SDK_PRIVATE = {
    # mcp's MCPServer runs its protocol server over stdio only on the SDK's own streams; ours
    # answer a tools/call with a lone surrogate (see _run_stdio), so we run that server ourselves.
    "memory_core/server/mcp.py": ("_lowlevel_server",),
}


@pytest.mark.parametrize("source", [
    "from memory_core.bank import LOAD_PROGRESS_MIN",
    "import memory_core.store",
    "import memory_core.index as idx",
    "from memory_core import _private",
    "from memory_core import evaluate",
    "from memory_core import *",
    "from memory_core.index.scoring import _params_json",
    "from memory_core.curation.maintenance import utcnow",  # imported into maintenance from the store, not its own
    "from memory_core.evaluation import metrics as mx\nmx._rate(1, 2)",
    "from memory_core.evaluation import tuning\ntuning.parse_time('2024-01-01')",
    "from memory_core.curation import extract",
    "import memory_core\nmemory_core.curation.extract",
    "import memory_core\nmemory_core.bank.MemoryBank",
    "bank = get_bank()\nbank._session()",
    "import importlib\nimportlib.import_module('memory_core.curation.conflicts')",
])
def test_the_check_catches_reaching_past_the_surface(source: str) -> None:
    assert violations(source) != []


def test_relative_imports_in_the_cli_are_checked_too() -> None:
    assert violations("from .store import utcnow", package=PACKAGE) != []
    assert violations("from . import conflicts", package=PACKAGE) != []
    assert violations("from . import MemoryBank\nfrom .evaluation import metrics", package=PACKAGE) == []
    assert violations("from .common import get_bank") == []  # dashboard/: not memory_core
    assert violations("from .writes import WriteQueue", package="memory_core.server") == []  # its own module
    assert violations("from ..tokens import Token", package="memory_core.server") != []


def test_public_imports_pass() -> None:
    assert violations(
        "from memory_core import LOAD_PROGRESS_MIN, MemoryBank, ScoringParams\n"
        "from memory_core.index import scoring\nfrom memory_core.evaluation import tuning\n"
        "from memory_core.evaluation import metrics as mx\n"
        "from memory_core.curation.maintenance import STEPS, MaintenancePlan\n"
        "from memory_core.index.scoring import COLD_DAYS, HOT_DAYS, tier_bounds\n"
        "mx.ablation_rates(1, 2, 3); scoring.parts; tuning.LabeledSet\n"
        "import memory_core\nmemory_core.MemoryBank; memory_core.curation.merge\n") == []


def test_the_public_surface_exists_and_is_documented() -> None:
    for name in memory_core.__all__:
        assert hasattr(memory_core, name), name
    for module in memory_core.PUBLIC_MODULES:
        assert f"memory_core.{module}" in memory_core.__doc__, f"document memory_core.{module} in the docstring"
        assert defined_names(module), module


# -- old paths of moved modules ---------------------------------------------------------------------

MOVED_PUBLIC = {"memory_core.scoring": "memory_core.index.scoring", "memory_core.metrics": "memory_core.evaluation.metrics",
                "memory_core.tuning": "memory_core.evaluation.tuning", "memory_core.merge": "memory_core.curation.merge",
                "memory_core.maintenance": "memory_core.curation.maintenance"}


@pytest.mark.parametrize("old", sorted(MOVED_PUBLIC))
def test_a_moved_public_module_still_imports_from_its_old_path_with_a_warning(old: str) -> None:
    code = (f"import warnings, importlib\nwarnings.simplefilter('error', DeprecationWarning)\n"
            f"try:\n    importlib.import_module({old!r})\nexcept DeprecationWarning as w:\n    print('warned:', w)\n"
            f"warnings.simplefilter('ignore')\nimport {old} as old, {MOVED_PUBLIC[old]} as new\n"
            f"print(old is new, all(getattr(old, n) is getattr(new, n) for n in dir(new)))\n")
    # A fresh interpreter: this one has imported the old paths of other tests already.
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert f"warned: {old} moved to {MOVED_PUBLIC[old]}" in out
    assert out.strip().endswith("True True")


def test_from_memory_core_import_an_old_name_works_and_a_moved_package_keeps_its_modules() -> None:
    import importlib

    import memory_core.curation.conflicts.records as records
    with pytest.warns(DeprecationWarning, match="memory_core.conflicts.records moved to"):
        old = importlib.import_module("memory_core.conflicts.records")
    assert old is records
    from memory_core import tuning  # noqa: F401  (the old spelling of the public module)
    assert tuning is importlib.import_module("memory_core.evaluation.tuning")


def test_the_old_curation_module_s_class_still_imports_with_a_warning() -> None:
    """memory_core.curation was the service's module before it became the engines' package."""
    from memory_core.services.curation import Curation

    with pytest.warns(DeprecationWarning, match="import it from memory_core.services.curation"):
        from memory_core.curation import Curation as old
    assert old is Curation
    with pytest.raises(ImportError):
        from memory_core.curation import NoSuchName  # noqa: F401


def _old_path_imports(path: Path) -> list[str]:
    from memory_core._moved import new_path

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        found += [f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names
                  if n.startswith(PACKAGE + ".") and new_path(n) is not None]
    return found


def test_our_own_code_imports_the_new_paths() -> None:
    """The old paths are for other people's code: ours (the package, the dashboard, the benchmarks,
    the tests and examples) names the new ones, so nothing here leans on what goes next release."""
    files = [p for folder in ("memory_core", "dashboard", "bench", "tests", "examples", "scripts")
             for p in sorted((ROOT / folder).rglob("*.py")) if p.name != "test_public_api.py"]
    found = [hit for path in files + [ROOT / "app.py"] for hit in _old_path_imports(path)]
    assert found == []
