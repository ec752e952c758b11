"""The machine's cache folder for Memory Console: derived files that can be rebuilt at any time
(index caches of banks that have no file of their own, exported embedding models)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``$MEMCTL_CACHE_DIR``, else ``$XDG_CACHE_HOME/memory-console``, else ``~/.cache/memory-console``."""
    if os.environ.get("MEMCTL_CACHE_DIR"):
        return Path(os.environ["MEMCTL_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "memory-console"
