"""Several server processes on one port: ``memctl serve --workers N`` over a PostgreSQL bank.

One server process does the bank's Python work on one core at a time (Python's lock), so on a
machine with several cores one port is served by several processes. This module is their
supervisor: it binds the port (a listening socket per worker), starts N workers (each ``memctl
serve`` on its socket, with its own connection pool and in-memory indexes, learning of the
others' writes as any server of the bank does), starts again a worker that dies, and on SIGTERM
or Ctrl-C stops them gracefully. The kernel spreads new connections over the workers.

A bank file has one writer at a time, so only a shared store (PostgreSQL) is served this way.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Sequence

from prometheus_client.multiprocess import mark_process_dead

log = logging.getLogger("memctl.serve")

POLL_SECONDS = 0.2
QUICK_EXIT_SECONDS = 10.0  # a worker that dies this soon after starting, three times running, stops all
QUICK_EXITS = 3


def listen(host: str, port: int, count: int) -> list[socket.socket]:
    """``count`` listening sockets on one address, one per worker (inherited by it). With
    SO_REUSEPORT (Linux) the kernel spreads new connections over them evenly; a connection that
    comes to a restarting worker's socket waits in its queue (the supervisor keeps it open). Where
    SO_REUSEPORT is missing, the workers share one socket."""
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    spread = hasattr(socket, "SO_REUSEPORT")
    if spread:
        # SO_REUSEPORT would let these sockets join another server's on this port (another
        # supervisor's, even of another bank) and share its connections: a plain bind first, which
        # fails while anything is bound there, so that the port is ours alone (port 0: the one it
        # was given, which the workers' sockets then share).
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
            port = probe.getsockname()[1]
    socks: list[socket.socket] = []
    try:
        for _ in range(count if spread else 1):
            sock = socket.socket(family, socket.SOCK_STREAM)
            socks.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if spread:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind((host, port))
            sock.listen(2048)
            sock.set_inheritable(True)
    except OSError:
        for sock in socks:
            sock.close()
        raise
    return socks * count if not spread else socks


class Workers:
    """``memctl serve`` processes, one per listening socket of :func:`listen`, kept running until stopped."""

    def __init__(self, bank: str, socks: Sequence[socket.socket], serve_args: Sequence[str],
                 graceful_seconds: float):
        self.bank, self.count, self.socks = bank, len(socks), list(socks)
        self.serve_args = list(serve_args)
        self.graceful_seconds = graceful_seconds
        self.procs: dict[int, subprocess.Popen] = {}
        self.started: dict[int, float] = {}
        self.quick_exits: dict[int, int] = {}
        self.stopping: list[int] = []
        # Prometheus' multiprocess files: the request metrics of every worker, summed at a scrape.
        self.metrics_dir = tempfile.mkdtemp(prefix="memctl-metrics-")

    def start(self, number: int) -> None:
        fd = self.socks[number - 1].fileno()
        env = dict(os.environ, MEMCTL_BANK=self.bank, PROMETHEUS_MULTIPROC_DIR=self.metrics_dir)
        cmd = [sys.executable, "-m", "memory_core.cli", "serve", *self.serve_args,
               "--socket-fd", str(fd), "--worker", str(number)]
        # A session of its own: Ctrl-C in a terminal reaches the supervisor only, which stops the
        # workers with one SIGTERM each (a second signal would cut a worker's graceful stop short).
        # A worker stops by itself if the supervisor dies (see watch_parent).
        self.procs[number] = subprocess.Popen(cmd, env=env, pass_fds=(fd,), start_new_session=True)
        self.started[number] = time.monotonic()
        log.info("worker %d started (pid %d)", number, self.procs[number].pid)

    def run(self) -> int:
        """Start the workers and keep them running until SIGTERM or SIGINT; the exit code."""
        handled = (signal.SIGINT, signal.SIGTERM)
        previous = {sig: signal.signal(sig, lambda sig, frame: self.stopping.append(sig)) for sig in handled}
        try:
            for number in range(1, self.count + 1):
                self.start(number)
            while not self.stopping:
                time.sleep(POLL_SECONDS)
                failed = self.mend()
                if failed:
                    log.error(failed)
                    self.stop()
                    return 1
            self.stop()
            log.warning("stopped by %s: every worker stored its queued writes and closed the bank",
                        signal.Signals(self.stopping[-1]).name)
            return 0
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            for sock in self.socks:
                sock.close()
            shutil.rmtree(self.metrics_dir, ignore_errors=True)

    def mend(self) -> str | None:
        """Start again each worker that died; a message when one keeps dying at start."""
        for number, proc in list(self.procs.items()):
            code = proc.poll()
            if code is None or self.stopping:
                continue
            mark_process_dead(proc.pid, self.metrics_dir)
            quick = time.monotonic() - self.started[number] < QUICK_EXIT_SECONDS
            self.quick_exits[number] = self.quick_exits.get(number, 0) + 1 if quick else 0
            if self.quick_exits[number] >= QUICK_EXITS:
                return (f"worker {number} exited {QUICK_EXITS} times within {QUICK_EXIT_SECONDS:g} s of starting "
                        f"(last exit code {code}); its errors are above. Stopping.")
            log.warning("worker %d (pid %d) exited with code %s; starting it again", number, proc.pid, code)
            self.start(number)
        return None

    def stop(self) -> None:
        """SIGTERM to every worker (each finishes its requests, stores its queued writes, flushes
        its recall journal, closes the bank); SIGKILL to one still running well after that."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.graceful_seconds + 30
        for number, proc in self.procs.items():
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.error("worker %d (pid %d) did not stop in time: killed", number, proc.pid)
                proc.kill()
                proc.wait()


def watch_parent() -> None:
    """In a worker: stop this process (SIGTERM, a graceful stop) once its supervisor is gone, so a
    killed supervisor leaves no worker serving the port on its own."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        log.warning("the supervisor (pid %d) is gone: stopping", parent)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="memctl-watch-parent", daemon=True).start()
