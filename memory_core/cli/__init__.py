"""memctl: the command line of Memory Console. A thin layer over MemoryBank.

Like the dashboard, it uses memory_core's public surface only (the package's exports and the
submodules of memory_core.PUBLIC_MODULES), and its choices are the package's vocabularies.
"""

from __future__ import annotations

# The command modules register their commands on the group as they are imported.
from . import curation, evaluation, memories, server  # noqa: F401
from .base import cli

__all__ = ["cli", "main"]


def main() -> None:
    """``memctl`` (the console script)."""
    cli(prog_name="memctl")

