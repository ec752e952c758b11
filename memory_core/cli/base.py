"""The ``memctl`` group every command belongs to: the bank option, the context that opens the bank,
and the typed errors shown as one line with exit code 1."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import click

from memory_core import ImportFormatError, MemoryCoreError

from .warm import DEFAULT_BANK, served

if TYPE_CHECKING:
    from memory_core import MemoryBank


LOG_LEVELS = ["critical", "error", "warning", "info", "debug"]


class _Context:
    def __init__(self, bank_path: str):
        self.bank_path = bank_path

    def open(self, actor: str = "cli", **kwargs: Any) -> MemoryBank:
        """The bank; in memctl's warm helper, the bank it serves (see :mod:`memory_core.cli.warm`)."""
        bank = served()
        if bank is not None:
            return bank
        from memory_core import MemoryBank

        return MemoryBank.open(self.bank_path, actor=actor, **kwargs)


def _fail(exc: Exception) -> None:
    raise click.ClickException(str(exc))


class _Group(click.Group):
    """Turns memory_core's typed errors into one clear line and exit code 1, not a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ImportFormatError as exc:
            for line, msg in exc.problems[:20]:
                click.echo(f"line {line}: {msg}", err=True)
            _fail(exc)
        except MemoryCoreError as exc:
            _fail(exc)


@click.group(cls=_Group)
@click.option("--bank", "bank_path", envvar="MEMCTL_BANK", default=DEFAULT_BANK, show_default=True,
              help="The bank file (created if missing). Also MEMCTL_BANK.")
@click.version_option(package_name="memory-console")
@click.pass_context
def cli(ctx: click.Context, bank_path: str) -> None:
    """Memory Console: long-term memory for LLM agents."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    ctx.obj = _Context(bank_path)
