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
    def __init__(self, bank_path: str, token: str | None = None):
        self.bank_path = bank_path
        self.token = token

    def open(self, actor: str = "cli", **kwargs: Any) -> MemoryBank:
        """The bank; in memctl's warm helper, the bank it serves (see :mod:`memory_core.cli.warm`)."""
        bank = served()
        if bank is not None:
            return bank
        from memory_core import MemoryBank

        if self.token is not None:
            kwargs["token"] = self.token
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
              help="The bank file (created if missing), or a running memctl serve's URL. Also MEMCTL_BANK.")
@click.option("--token", envvar="MEMCTL_TOKEN", default=None, metavar="SECRET",
              help="The token for a served bank (--bank http://...), as memctl token create printed it. "
                   "Also MEMCTL_TOKEN.")
@click.version_option(package_name="memory-console")
@click.pass_context
def cli(ctx: click.Context, bank_path: str, token: str | None) -> None:
    """Memory Console: long-term memory for LLM agents."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    served_bank = bank_path.lower().startswith(("http://", "https://"))
    if token is not None and not served_bank:
        if ctx.get_parameter_source("token") is click.core.ParameterSource.COMMANDLINE:
            raise click.UsageError("--token is for a served bank: give its URL with --bank http://HOST:PORT")
        token = None  # MEMCTL_TOKEN set for another call; a bank file needs none
    ctx.obj = _Context(bank_path, token)
