"""memctl's server commands: ``serve`` (REST and MCP over HTTP), ``mcp`` (stdio) and the access tokens."""

from __future__ import annotations

import contextlib
import json
import socket
import sys
from pathlib import Path

import click

from memory_core import MemoryCoreError, ValidationError

from .base import LOG_LEVELS, _Context, cli


# -- the server ----------------------------------------------------------------------------------

@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Beyond loopback only once a token exists.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option("--no-auth", is_flag=True, help="Serve without tokens: for development on 127.0.0.1 only.")
@click.option("--concurrency", type=click.IntRange(1, 1024), default=64, show_default=True,
              help="Requests that work on the bank at once (the rest wait).")
@click.option("--max-body", type=click.IntRange(1024), default=None,
              help="Largest request body in bytes (default 8 MiB).")
@click.option("--no-mcp", is_flag=True, help="Leave out the MCP endpoint at /mcp (REST API only).")
@click.option("--log-level", type=click.Choice(LOG_LEVELS), default="info", show_default=True)
@click.option("--workers", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Server processes sharing the port, one core each (a PostgreSQL bank; a bank file has one "
                   "writer at a time).")
@click.option("--socket-fd", type=int, default=None, hidden=True)  # a worker's inherited listening socket
@click.option("--worker", type=int, default=None, hidden=True)  # and its number
@click.option("--warm-socket", type=click.Path(dir_okay=False), default=None, hidden=True)  # memctl's warm helper
@click.option("--idle-minutes", type=float, default=None, hidden=True)  # stop after so long without a request
@click.pass_obj
def serve(obj: _Context, host: str, port: int, no_auth: bool, concurrency: int, max_body: int | None,
          no_mcp: bool, log_level: str, workers: int, socket_fd: int | None, worker: int | None,
          warm_socket: str | None, idle_minutes: float | None) -> None:
    """Serve the bank over HTTP: the REST API (/docs) for agents in any language, and MCP at /mcp."""
    from memory_core import server

    if warm_socket is not None:  # the CLI's own helper: see memory_core.cli.warm
        from . import warm

        warm.run_helper(obj, warm_socket, idle_minutes, log_level)
        return
    bank = obj.open(actor="server")
    try:
        server.check_exposure(host, auth=not no_auth, tokens=0 if no_auth else len(bank.tokens.list()))
        if workers > 1 and isinstance(bank.path, Path):
            raise ValidationError(f"--workers {workers}: the bank file {bank.path} has one writer at a time, so one "
                                  "process serves it. Serve it with one worker, or move it to PostgreSQL (memctl "
                                  "migrate --from FILE --to postgresql://...) and serve that with several.")
    except MemoryCoreError:
        bank.close()
        raise
    if worker is not None:  # one of several: the supervisor said where it serves
        server.serve(bank, auth=not no_auth, concurrency=concurrency, max_body=max_body or server.MAX_BODY,
                     mcp=not no_mcp, log_level=log_level, sock=socket.socket(fileno=socket_fd), worker=worker)
        return
    if no_auth:
        click.secho("WARNING: --no-auth: every request may read and change every namespace of "
                    f"{bank.path}. Use it only for development on this machine.", fg="red", bold=True, err=True)
    where = f"http://{host}:{port}"
    several = f" with {workers} workers" if workers > 1 else ""
    click.echo(f"serving {bank.path} on {where}{several} (API docs: /docs{'' if no_mcp else f'; MCP: {where}/mcp'}); "
               "Ctrl-C or SIGTERM stops", err=True)
    if workers > 1:
        bank.close()  # each worker opens its own
        args = ["--concurrency", str(concurrency), "--log-level", log_level]
        args += ["--no-auth"] * no_auth + ["--no-mcp"] * no_mcp + (["--max-body", str(max_body)] if max_body else [])
        sys.exit(server.serve_workers(obj.bank_path, workers, host=host, port=port, serve_args=args,
                                      log_level=log_level))
    server.serve(bank, host=host, port=port, auth=not no_auth, concurrency=concurrency,
                 max_body=max_body or server.MAX_BODY, mcp=not no_mcp, log_level=log_level)


@cli.command()
@click.option("-n", "--namespace", required=True,
              help="The namespace the MCP client reads and writes (its tools cannot reach another).")
@click.option("--log-level", type=click.Choice(LOG_LEVELS), default="warning", show_default=True)
@click.pass_obj
def mcp(obj: _Context, namespace: str, log_level: str) -> None:
    """Serve MCP over stdio for one namespace: for desktop clients (Claude Desktop, Cursor, IDEs).

    The client starts this command and speaks MCP on its stdin and stdout; logs go to stderr.
    """
    from memory_core import server

    server.log_to_stderr(log_level)
    with contextlib.redirect_stdout(sys.stderr):  # stdout is the protocol: nothing else may reach it
        bank = obj.open(actor="mcp")
        try:
            bank.count(namespace)  # a clear error for a malformed namespace, before the client connects
        except MemoryCoreError:
            bank.close()
            raise
    server.serve_stdio(bank, namespace)


@cli.group()
def token() -> None:
    """Access tokens of the server, each limited to namespaces (kept hashed in the bank)."""


@token.command(name="create")
@click.option("-n", "--namespace", "namespaces", multiple=True, help="A namespace it may use (repeatable).")
@click.option("--name", required=True, help="A name to list and revoke it by.")
@click.option("--read-only", is_flag=True, help="It may read and recall, not change.")
@click.option("--admin", is_flag=True, help="It may use every namespace and the admin routes.")
@click.pass_obj
def token_create(obj: _Context, namespaces: tuple[str, ...], name: str, read_only: bool, admin: bool) -> None:
    """Create a token and print its secret (shown this once only)."""
    with obj.open() as bank:
        made, secret = bank.tokens.create(name, namespaces, read_only=read_only, admin=admin)
    scope = "every namespace" if made.admin else ", ".join(made.namespaces)
    click.echo(f"token {made.name!r} for {scope}{' (read-only)' if made.read_only else ''}; "
               "keep the secret now, it is not shown again:", err=True)
    click.echo(secret)


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}" + ("" if n == 1 else "s")


@token.command(name="list")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
def token_list(obj: _Context, as_json: bool) -> None:
    """The tokens: names, namespaces and scope (never their secrets)."""
    with obj.open() as bank:
        tokens = bank.tokens.list()
        activity = bank.tokens.activity(names=[t.name for t in tokens])
        made = [(t, activity[t.name]) for t in tokens]
    if as_json:
        click.echo(json.dumps([{**t.to_dict(), "last_used": used.last_used and used.last_used.isoformat(),
                                "changes_30d": used.changes, "recalls_30d": used.recalls}
                               for t, used in made], indent=1))
        return
    if not made:
        click.echo("no tokens; create one: memctl token create --namespace NS --name NAME")
    for t, used in made:
        scope = "admin (every namespace)" if t.admin else ", ".join(t.namespaces)
        last = "never used" if used.last_used is None else (
            f"last used {used.last_used:%Y-%m-%d %H:%M}, {_count(used.changes, 'change')} and "
            f"{_count(used.recalls, 'recall')} in 30 days")
        click.echo(f"{t.name}\t{scope}\t{'read-only' if t.read_only else 'read-write'}\t"
                   f"created {t.created_at:%Y-%m-%d %H:%M}\t{last}")


@token.command(name="rotate")
@click.argument("name")
@click.pass_obj
def token_rotate(obj: _Context, name: str) -> None:
    """Give token NAME a new secret (same namespaces and scope); the old one is refused from the
    next request on. Prints the new secret once."""
    with obj.open() as bank:
        made, secret = bank.tokens.rotate(name)
    click.echo(f"token {made.name!r} has a new secret; the old one no longer works. Keep it now, "
               "it is not shown again:", err=True)
    click.echo(secret)


@token.command(name="revoke")
@click.argument("name")
@click.pass_obj
def token_revoke(obj: _Context, name: str) -> None:
    """Revoke a token: a server refuses it from its next request on."""
    with obj.open() as bank:
        bank.tokens.revoke(name)
    click.echo(f"revoked {name}")
