"""Curation engines: finding what to supersede, merge, expire and remember, as plain data.

``conflicts/`` finds and judges contradictions, ``merge`` plans merges of near-duplicates,
``maintenance`` plans a maintenance run from reads only, ``extract`` distils a conversation into
memories. None of them writes: the curation service (``services.curation``) records what they
find, and the façade combines the steps.

May import: ``errors``, ``models``, ``storage`` (times), ``language``, ``embedding`` and ``index``;
never ``services`` or the façade.
"""


def __getattr__(name: str) -> object:
    """``from memory_core.curation import Curation`` keeps working for a release, with a DeprecationWarning.

    ``memory_core.curation`` was the curation service's module before it became this package; the
    service lives in ``memory_core.services.curation``. Imported by name so this package does not
    depend on the services it sits below."""
    if name == "Curation":
        import importlib
        import warnings

        warnings.warn("memory_core.curation.Curation moved: import it from memory_core.services.curation",
                      DeprecationWarning, stacklevel=2)
        return importlib.import_module("memory_core.services.curation").Curation
    raise AttributeError(f"module 'memory_core.curation' has no attribute {name!r}")
