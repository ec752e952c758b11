"""Memory Console as a service: the REST API and MCP endpoint of ``memctl serve``, and MCP over stdio.

A face over :class:`~memory_core.MemoryBank`, like the CLI and the dashboard: it uses the
package's public surface and adds what a network needs (tokens per namespace, JSON errors, body
limits, grouped writes). :func:`create_app` builds the ASGI app for one open bank; :func:`serve`
runs it with uvicorn until SIGTERM or Ctrl-C, then writes what is queued and closes the bank;
:func:`serve_workers` runs several such processes on one port (a PostgreSQL bank).
:func:`serve_stdio` serves the MCP tools of one namespace over stdin/stdout (``memctl mcp``).
"""

from __future__ import annotations

import ipaddress
import logging
import signal
import socket
import sys
import threading
import time
from typing import Any, Sequence

from memory_core import ValidationError

from .app import MAX_BATCH, MAX_BODY, MAX_K, create_app

__all__ = ["create_app", "serve", "serve_workers", "serve_stdio", "is_loopback", "check_exposure", "log_to_stderr",
           "MAX_BODY", "MAX_BATCH", "MAX_K"]

log = logging.getLogger("memctl.serve")
GRACEFUL_SECONDS = 10.0  # how long requests in flight may take to finish once SIGTERM came


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        try:
            return all(ipaddress.ip_address(info[4][0]).is_loopback
                       for info in socket.getaddrinfo(host, None))
        except (OSError, ValueError):
            return False


def check_exposure(host: str, *, auth: bool, tokens: int) -> None:
    """Refuse to serve beyond this machine without auth, or before any token exists."""
    if is_loopback(host):
        return
    if not auth:
        raise ValidationError(f"--no-auth serves only on a loopback address (127.0.0.1), not {host}")
    if tokens == 0:
        raise ValidationError(f"no token exists, so nobody could use the server on {host}; create one first: "
                              "memctl token create --namespace NS --name NAME")


def log_to_stderr(level: str) -> None:
    """Send the process's log records of ``level`` and above to stderr, one plain line each
    (unless logging is configured already). The MCP SDK's chatter stays at warning unless debugging."""
    number = logging.getLevelName(level.upper())
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
        root.setLevel(number)
    logging.getLogger("mcp").setLevel(number if number <= logging.DEBUG else max(number, logging.WARNING))


def serve(bank: Any, *, host: str = "127.0.0.1", port: int = 8765, auth: bool = True, concurrency: int = 64,
          max_body: int = MAX_BODY, mcp: bool = True, log_level: str = "info",
          graceful_seconds: float = GRACEFUL_SECONDS, sock: socket.socket | None = None,
          worker: int | None = None, idle_seconds: float | None = None, routes: Sequence[Any] = ()) -> None:
    """Serve ``bank`` (an open MemoryBank, which the server closes when it stops) until SIGTERM.

    ``concurrency`` bounds the requests handled at once (threads for the bank's work; above it
    uvicorn answers 503). ``mcp`` adds the MCP endpoint at ``/mcp`` (streamable HTTP, the same
    tokens). On SIGTERM the server stops accepting connections, lets requests in flight finish
    for up to ``graceful_seconds``, writes queued adds, flushes the recall journal and closes the
    bank. ``sock`` (a listening socket) replaces ``host`` and ``port``, and ``worker`` numbers
    this process: one of ``memctl serve --workers`` (:mod:`.workers`). ``idle_seconds``, when
    given, stops the server as SIGTERM would once no request came for that long, and ``routes``
    (Starlette routes) are served beside the API (both for memctl's warm helper).
    """
    import uvicorn

    check_exposure(host, auth=auth, tokens=len(bank.tokens.list()) if auth else 0)
    log_to_stderr(log_level)
    # The model loads before the port opens: once /v1/health answers, the first add or recall is
    # as fast as the next (the load takes seconds, the first time on a machine a little longer).
    log.info("loading the embedding model %s", bank.model)
    bank.embedder.encode(["warm up"])
    endpoint = None
    if mcp:
        from .mcp import McpEndpoint

        endpoint = McpEndpoint(bank, auth=auth)
    app = create_app(bank, auth=auth, max_body=max_body, mcp=endpoint, threads=concurrency, worker=worker)
    app.router.routes.extend(routes)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, limit_concurrency=concurrency * 4,
                            timeout_graceful_shutdown=graceful_seconds, server_header=False)
    if worker is not None:
        from .workers import watch_parent

        watch_parent()
    # uvicorn shuts down gracefully on SIGTERM/SIGINT, then raises the signal again against the
    # handlers it found: with these, a graceful stop ends the process normally (exit 0).
    stops: list[int] = []
    handled = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, lambda sig, frame: stops.append(sig)) for sig in handled} \
        if threading.current_thread() is threading.main_thread() else {}
    server = uvicorn.Server(config)
    if idle_seconds is not None:
        config.app = app = _IdleStop(app, server, idle_seconds)
    try:
        server.run(sockets=None if sock is None else [sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if stops:
        log.warning("stopped by %s: queued writes stored, recall journal flushed, bank closed",
                    signal.Signals(stops[-1]).name)


class _IdleStop:
    """ASGI middleware that tells uvicorn to stop gracefully once no request has been in flight for
    ``seconds``: a helper nobody uses gives its memory back."""

    def __init__(self, app: Any, server: Any, seconds: float) -> None:
        self.app, self.server, self.seconds = app, server, seconds
        self.active = 0
        self.last = time.monotonic()
        threading.Thread(target=self.watch, name="memctl-idle-stop", daemon=True).start()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":  # in flight for the server's whole life: not a request
            await self.app(scope, receive, send)
            return
        self.active += 1  # the event loop's thread only: no lock needed
        try:
            await self.app(scope, receive, send)
        finally:
            self.active -= 1
            self.last = time.monotonic()

    def watch(self) -> None:
        while not self.server.should_exit:
            time.sleep(min(5.0, max(0.05, self.seconds / 4)))
            if self.active == 0 and time.monotonic() - self.last >= self.seconds:
                log.info("no request for %.0f s: stopping", self.seconds)
                self.server.should_exit = True


def serve_workers(bank: str, workers: int, *, host: str = "127.0.0.1", port: int = 8765,
                  serve_args: Sequence[str] = (), log_level: str = "info") -> int:
    """Serve the PostgreSQL bank at ``bank`` (its URL) from ``workers`` processes on one port,
    each a ``memctl serve`` with ``serve_args``, until SIGTERM or Ctrl-C; the exit code. See
    :mod:`.workers`."""
    from .workers import Workers, listen

    log_to_stderr(log_level)
    try:
        socks = listen(host, port, workers)
    except OSError as exc:
        raise ValidationError(f"cannot listen on {host}:{port} ({exc.strerror or exc}): is another server there? "
                              "Stop it, or choose another --port") from None
    return Workers(bank, socks, serve_args, GRACEFUL_SECONDS).run()


def serve_stdio(bank: Any, namespace: str) -> None:
    """Serve the MCP tools over stdin/stdout for ``namespace`` until the client closes stdin, then
    close ``bank`` (see :mod:`memory_core.server.mcp`)."""
    from .mcp import serve_stdio as run

    run(bank, namespace)
