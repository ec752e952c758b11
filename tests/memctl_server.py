"""A real `memctl serve` in a child process, on a free loopback port, for the server's tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

MEMCTL = [sys.executable, "-m", "memory_core.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _location(bank: Path | str) -> Path | str:
    """A bank file as a Path; a ``postgresql://`` URL as it is (a Path would fold its ``//``)."""
    return bank if isinstance(bank, str) and "://" in bank else Path(bank)


class Served:
    """One `memctl --bank LOCATION serve` process (a bank file, or a PostgreSQL URL); :attr:`url`
    is where it answers. Its log goes next to the bank file, or to a temp folder for a URL."""

    def __init__(self, bank_path: Path | str, *args: str, log: Path | None = None):
        self.bank_path = _location(bank_path)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        if log is None:
            folder = Path(tempfile.mkdtemp(prefix="memctl-serve-")) if isinstance(self.bank_path, str) \
                else self.bank_path.parent
            log = folder / f"serve-{self.port}.log"
        self.log = log
        env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
        self._log_file = open(self.log, "w")
        self.proc = subprocess.Popen(
            MEMCTL + ["--bank", str(self.bank_path), "serve", "--port", str(self.port), "--log-level", "warning",
                      *args],
            stdout=self._log_file, stderr=subprocess.STDOUT, env=env, cwd=Path(__file__).parent.parent)
        self._wait_ready()

    def _wait_ready(self, timeout: float = 180.0) -> None:  # the model loads before the port opens
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"memctl serve exited with {self.proc.returncode}: {self.output()}")
            try:
                if httpx.get(self.url + "/v1/health", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"memctl serve did not answer within {timeout} s: {self.output()}")

    def output(self) -> str:
        if not self._log_file.closed:
            self._log_file.flush()
        return self.log.read_text(errors="replace")

    def client(self, token: str | None = None, **kwargs) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=kwargs.pop("timeout", 30.0), **kwargs)

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, as a service manager stops it; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log_file.close()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL: no chance to flush or close anything."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._log_file.close()


def serve_with_tokens(path: Path | str, specs: list[tuple[str, list[str], bool, bool]]) -> Served:
    """A server over the bank at ``path`` with a token per (name, namespaces, read_only, admin);
    their secrets are in ``.tokens`` by name."""
    from memory_core import MemoryBank

    with MemoryBank.open(_location(path)) as bank:
        tokens = {name: bank.tokens.create(name, spaces, read_only=ro, admin=admin)[1]
                  for name, spaces, ro, admin in specs}
    server = Served(path)
    server.tokens = tokens
    return server


def memctl(bank_path: Path | str, *args: str, check: bool = True,
           timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run one memctl command on the bank (a separate process, as an operator would); a command
    still running after ``timeout`` seconds is killed and raises ``subprocess.TimeoutExpired``."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run(MEMCTL + ["--bank", str(bank_path), *args], capture_output=True, text=True, env=env,
                          check=check, cwd=Path(__file__).parent.parent, timeout=timeout)
