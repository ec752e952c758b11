"""memctl's warm helper: one ``memctl serve`` per bank on a unix socket, so a call does not load the model.

Loading the model and a namespace's index costs seconds; a recall on a loaded bank, milliseconds.
The commands a served bank covers (add, recall, show, forget, restore of a memory) therefore go to a
helper process that keeps the bank open: the first such call starts it (detached, in its own
session) and waits for it, later calls speak to it over its socket with :class:`RemoteBank`.
It stops after ``MEMCTL_WARM_IDLE`` minutes without a request (default 10); ``MEMCTL_WARM=0``
runs every command in process. Other commands always run in process; on a bank file they and the
helper share it through the file's lease, as the dashboard and a server do.

The socket and its files sit in the cache folder under ``warm/``, named by a digest of the
bank's location (its absolute path, or its URL) and the code that runs it; the folder is the
user's own (0700) and the socket 0600, so the helper runs without tokens. A helper killed
outright leaves a socket nobody answers: the next call notices (the connection is refused),
removes it and starts another. The helper answers after each write commits, so what a call
printed as stored is stored, whatever happens to the helper after.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

from memory_core import cache_root

ENV = "MEMCTL_WARM"  # "0" turns the helper off
IDLE_ENV = "MEMCTL_WARM_IDLE"  # minutes without a request before the helper stops
DEFAULT_IDLE_MINUTES = 10.0
START_SECONDS = 120.0  # the longest a call waits for a new helper (the model's first load included)
URL = "http://memctl-warm"  # names the helper in messages; the socket is what connects


def enabled(bank: str) -> bool:
    """Whether calls on ``bank`` go through a helper: not with ``MEMCTL_WARM=0``, nor for a bank
    that is already served over HTTP (``--bank http://...`` is a RemoteBank of its own)."""
    if os.environ.get(ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    return not str(bank).lower().startswith(("http://", "https://"))


def location(bank: str) -> str:
    """What names the bank across calls: a URL as given, a file by its absolute path."""
    return bank if "://" in bank else str(Path(bank).expanduser().resolve())


def folder() -> Path:
    """The helpers' folder in the cache folder, private to this user."""
    path = cache_root() / "warm"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def paths(bank: str) -> dict[str, Path]:
    """The helper's socket, pid file, start lock and log for ``bank``."""
    # 12 hex digits keep the socket's path under the kernel's limit (108 bytes) in deep cache folders
    key = hashlib.sha256(f"{_code()}\0{location(bank)}".encode()).hexdigest()[:12]
    base = folder() / key
    return {"socket": base.with_suffix(".sock"), "pid": base.with_suffix(".pid"), "lock": base.with_suffix(".lock"),
            "log": base.with_suffix(".log")}


def _code() -> str:
    """Which code a helper runs: this interpreter and this copy of the package (a helper started
    by another install, or before the package changed, is not this one's)."""
    package = Path(__file__).resolve().parent.parent
    newest = max(p.stat().st_mtime_ns for p in package.rglob("*.py"))
    return f"{sys.executable}\0{package}\0{newest}"


def idle_minutes() -> float:
    try:
        return max(0.05, float(os.environ.get(IDLE_ENV, DEFAULT_IDLE_MINUTES)))
    except ValueError:
        return DEFAULT_IDLE_MINUTES


def connect(bank: str) -> Any | None:
    """A RemoteBank on ``bank``'s helper, started if none answers; None when the helper is off or
    cannot start (the call then runs in process, as it would without one)."""
    if not enabled(bank):
        return None
    where = paths(bank)
    if not _answers(where["socket"]):
        with _start_lock(where["lock"]):
            if not _answers(where["socket"]) and not _start(bank, where):
                return None
    from memory_core import RemoteBank

    return RemoteBank(URL, uds=str(where["socket"]), retries=0)


def helper_pid(bank: str) -> int | None:
    """The pid of ``bank``'s helper, if one has started (it may have died since)."""
    try:
        return int(paths(bank)["pid"].read_text())
    except (OSError, ValueError):
        return None


def stop(bank: str, timeout: float = 30.0) -> bool:
    """Stop ``bank``'s helper (SIGTERM: queued writes stored, bank closed) and wait; whether one ran."""
    pid = helper_pid(bank)
    if pid is None:
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return True


def _answers(path: Path) -> bool:
    """Whether a process listens on the socket at ``path`` (a connect, no request)."""
    if not path.exists():
        return False
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(2.0)
        probe.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        probe.close()


@contextlib.contextmanager
def _start_lock(path: Path) -> Iterator[None]:
    """One call at a time starts a bank's helper; the others wait and then use it."""
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _start(bank: str, where: dict[str, Path]) -> bool:
    """Start the helper, detached, and wait until it answers; whether it does."""
    with contextlib.suppress(FileNotFoundError):
        where["socket"].unlink()  # a dead helper's
    env = {**os.environ, ENV: "0"}
    command = [sys.executable, "-m", "memory_core.cli", "--bank", bank, "serve", "--warm-socket",
               str(where["socket"]), "--idle-minutes", str(idle_minutes()), "--log-level", "warning"]
    with open(where["log"], "ab") as log:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                                start_new_session=True, close_fds=True)
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline and proc.poll() is None:
        if where["socket"].exists() and _healthy(where["socket"], deadline - time.monotonic()):
            return True
        time.sleep(0.02)
    return False


def _healthy(path: Path, timeout: float) -> bool:
    """Whether the helper answers ``/v1/health`` within ``timeout`` (it binds its socket first and
    answers once the bank is open and the model loaded: the request waits in the socket's queue)."""
    import httpx

    try:
        with httpx.Client(transport=httpx.HTTPTransport(uds=str(path)), timeout=max(1.0, timeout)) as http:
            return http.get(f"{URL}/v1/health").status_code == 200
    except httpx.HTTPError:
        return False


def run_helper(obj: Any, path: str, idle: float | None, log_level: str) -> None:
    """The helper's side (``memctl serve --warm-socket PATH``): bind the socket, open the bank as
    the CLI would (actor ``cli``), serve it without tokens or MCP until idle or SIGTERM."""
    from memory_core import server

    sock_path = Path(path)
    pid_path = sock_path.with_suffix(".pid")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        sock_path.unlink()
    old = os.umask(0o177)  # the socket is this user's only
    try:
        sock.bind(path)
    finally:
        os.umask(old)
    sock.listen(256)
    pid_path.write_text(str(os.getpid()))
    mine = os.stat(path).st_ino
    try:
        bank = obj.open(actor="cli")
        server.serve(bank, auth=False, mcp=False, log_level=log_level, sock=sock,
                     idle_seconds=None if idle is None else idle * 60)
    finally:
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == mine:  # not a newer helper's
                sock_path.unlink()
                pid_path.unlink()
