"""Old import paths of the modules that moved into packages by domain, kept for a release.

``import memory_core.scoring`` (or ``from memory_core import scoring``) still works: a finder on
``sys.meta_path`` answers the old name with the module at its new path, the same module object,
and warns once per old name with a DeprecationWarning that says where to import it from.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

# old dotted name -> new one; a moved package's submodules follow it (memory_core.conflicts.records).
MOVED: dict[str, str] = {
    "memory_core.clock": "memory_core.storage.clock",
    "memory_core.cache_dir": "memory_core.storage.cache_dir",
    "memory_core.text": "memory_core.language.text",
    "memory_core.words": "memory_core.language.words",
    "memory_core.periods": "memory_core.language.periods",
    "memory_core.redact": "memory_core.language.redact",
    "memory_core.llm": "memory_core.language.llm",
    "memory_core.prompts": "memory_core.language.prompts",
    "memory_core.rules": "memory_core.language.rules",
    "memory_core.embed": "memory_core.embedding.embedder",
    "memory_core.embed_e5": "memory_core.embedding.e5",
    "memory_core.embed_onnx": "memory_core.embedding.onnx",
    "memory_core.embed_gather": "memory_core.embedding.gather",
    "memory_core.vectors": "memory_core.embedding.vectors",
    "memory_core.model_data": "memory_core.embedding.model_data",
    "memory_core.scoring": "memory_core.index.scoring",
    "memory_core.gate": "memory_core.index.gate",
    "memory_core.conflicts": "memory_core.curation.conflicts",
    "memory_core.merge": "memory_core.curation.merge",
    "memory_core.maintenance": "memory_core.curation.maintenance",
    "memory_core.extract": "memory_core.curation.extract",
    "memory_core.metrics": "memory_core.evaluation.metrics",
    "memory_core.tuning": "memory_core.evaluation.tuning",
    "memory_core.evaluate": "memory_core.evaluation.evaluate",
    "memory_core.usage": "memory_core.evaluation.usage",
    **{f"memory_core.{name}": f"memory_core.services.{name}" for name in (
        "core", "index_cache", "rows", "recall_log", "recall_writer", "writer", "transfer", "jsonl", "changes",
        "queries", "settings", "curation", "recall", "feedback", "labels", "tokens")},
}
# memory_core.curation was a module (the curation service) and is now the curation engines' package:
# the old name is the new package, so it is not redirected.
MOVED.pop("memory_core.curation")


def new_path(name: str) -> str | None:
    """The new dotted name of an old module name (or of a submodule of a moved package), else None."""
    if name in MOVED:
        return MOVED[name]
    head, _, tail = name.rpartition(".")
    while head:
        if head in MOVED:
            return f"{MOVED[head]}.{name[len(head) + 1:]}"
        head, _, _ = head.rpartition(".")
    return None


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers an old module name with the module at its new path."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if new_path(fullname) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # a placeholder; exec_module puts the real module in its place

    def exec_module(self, module: ModuleType) -> None:
        old = module.__name__
        new = new_path(old)
        warnings.warn(f"{old} moved to {new}: import it from there (the old path goes in the next release)",
                      DeprecationWarning, stacklevel=2)
        # The import machinery hands out whatever sys.modules holds under the old name once this
        # returns: the real module, not the placeholder.
        sys.modules[old] = importlib.import_module(new)


def install() -> None:
    """Put the finder first on ``sys.meta_path``, once: a submodule of a moved package
    (``memory_core.conflicts.records``) would otherwise be found by the path finder in its new
    folder and loaded a second time under its old name."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder())
