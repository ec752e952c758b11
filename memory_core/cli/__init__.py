"""memctl: the command line of Memory Console. A thin layer over MemoryBank.

Like the dashboard, it uses memory_core's public surface only (the package's exports and the
submodules of memory_core.PUBLIC_MODULES), and its choices are the package's vocabularies.
``memctl`` first offers the call to the bank's warm helper (:mod:`.warm`), importing nothing of
click's tree before; the commands load only when the call runs in process.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import click

__all__ = ["cli", "main"]


def commands() -> click.Group:
    """The ``memctl`` group with every command (the command modules register theirs on import)."""
    from . import curation, evaluation, memories, server  # noqa: F401
    from .base import cli

    return cli


def __getattr__(name: str) -> Any:
    if name == "cli":
        return commands()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """``memctl`` (the console script)."""
    from . import warm

    warm.forward(sys.argv[1:])  # exits when the helper answered
    warm.one_shot(sys.argv[1:])
    commands()(prog_name="memctl")
