"""memctl's warm helper: one ``memctl serve`` per bank on a unix socket, so a call does not load the model.

Loading the model and a namespace's index costs seconds; a recall on a loaded bank, milliseconds.
The commands a served bank covers (:data:`FORWARDED`: add, recall, show, forget, restore of a
memory, stats) therefore run in a helper process that keeps the bank open. ``memctl`` asks
:func:`forward` first, which imports nothing but the standard library's socket and json: it sends
the call's arguments to the helper (``POST /v1/cli``), which runs the same click command against
its open bank with the call's output captured, and writes back what the command printed and its
exit code. The output and errors are therefore the in-process command's own. The first call of a
command that needs the model starts the helper (detached, in its own session) and waits for it;
``stats`` only uses a helper that runs. It stops after ``MEMCTL_WARM_IDLE`` minutes without a
request (default 10); ``MEMCTL_WARM=0`` runs every command in process. Anything else (another
command, ``--help``, a question to answer on the terminal, a helper that cannot start) runs in
process; on a bank file they and the helper share it through the file's lease, as the dashboard
and a server do.

The socket and its files sit in the cache folder under ``warm/``, named by a digest of the
bank's location (its absolute path, or its URL) and the code that runs it; the folder is the
user's own (0700) and the socket 0600, so the helper runs without tokens. A helper killed
outright leaves a socket nobody answers: the next call notices (the connection is refused),
removes it and starts another. The helper answers after each write commits, so what a call
printed as stored is stored, whatever happens to the helper after; a call whose helper dies
after the request was sent says so and exits 1, never running the command a second time.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator, NoReturn, Sequence

from memory_core import cache_root

DEFAULT_BANK = "data/memory.duckdb"  # memctl's --bank when neither it nor MEMCTL_BANK is given
FORWARDED = frozenset({"add", "recall", "show", "forget", "restore", "stats"})  # what the helper runs
STARTING = FORWARDED - {"stats"}  # commands that start a helper: stats in process costs less than a start
ROUTE = "/v1/cli"
ENV = "MEMCTL_WARM"  # "0" turns the helper off
IDLE_ENV = "MEMCTL_WARM_IDLE"  # minutes without a request before the helper stops
DEFAULT_IDLE_MINUTES = 10.0
START_SECONDS = 120.0  # the longest a call waits for a new helper (the model's first load included)
ONE_SHOT_ENV = "MEMORY_CORE_ONE_SHOT"  # memory_core.embedding.onnx.ONE_SHOT_ENV: lean model sessions
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


def forward(argv: Sequence[str]) -> None:
    """Answer ``memctl ARGV`` through the bank's helper and exit with the command's code, or return
    when the helper cannot answer it (the CLI then runs it in process). Nothing is sent twice: once
    the request is out, a helper that dies before answering ends the call with exit code 1."""
    call = _call(argv)
    if call is None or not enabled(call[1]):
        return
    bank, command = call[1], call[2]
    where = paths(bank)
    sock = _connect(where["socket"])
    if sock is None and command in STARTING:
        with _start_lock(where["lock"]):
            sock = _connect(where["socket"])
            if sock is None and _start(bank, where):
                sock = _connect(where["socket"])
    if sock is None:
        return
    try:
        status, payload = _exchange(sock, "POST", ROUTE, json.dumps({"argv": call}).encode())
        answer = json.loads(payload) if status == 200 else None
    except (OSError, ValueError) as exc:
        _cut_off(exc)
    if answer is None:  # refused before running (another version's helper, or at its limit)
        return
    sys.stdout.write(answer["stdout"])
    sys.stdout.flush()
    sys.stderr.write(answer["stderr"])
    sys.stderr.flush()
    raise SystemExit(answer["code"])


def one_shot(argv: Sequence[str]) -> None:
    """Before ``memctl ARGV`` runs in process: a command the helper would have run embeds a text
    or two and exits, so its model sessions keep no pre-packed weights (less memory, a cold call)."""
    if _call(argv) is not None:
        os.environ[ONE_SHOT_ENV] = "1"


def _call(argv: Sequence[str]) -> list[str] | None:
    """``["--bank", BANK, COMMAND, *ARGS]`` when the helper can run ``memctl ARGV``: a command of
    :data:`FORWARDED`, no help to format for this terminal and no question to ask
    on it; else None."""
    bank = os.environ.get("MEMCTL_BANK") or DEFAULT_BANK
    args = list(argv)
    while args and args[0].startswith("--bank"):
        if args[0] == "--bank" and len(args) > 1:
            bank, args = args[1], args[2:]
        elif args[0].startswith("--bank="):
            bank, args = args[0][len("--bank="):], args[1:]
        else:
            return None
    if not args or args[0] not in FORWARDED:
        return None
    command, rest = args[0], args[1:]
    if "--help" in rest or (command == "forget" and "--hard" in rest and "--yes" not in rest) \
            or (command == "restore" and any(a.startswith("--from") or a == "--force" for a in rest)):
        return None
    return ["--bank", bank, command, *rest]


def _cut_off(exc: BaseException) -> NoReturn:
    sys.stderr.write(f"Error: memctl's warm helper stopped before answering ({exc or type(exc).__name__}); "
                     "the command may have run: check before running it again\n")
    raise SystemExit(1)


def _connect(path: Path, timeout: float | None = None) -> socket.socket | None:
    """A connection to the helper listening at ``path``, or None when none listens."""
    if not path.exists():
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(2.0)
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    sock.settimeout(timeout)
    return sock


def _exchange(sock: socket.socket, method: str, target: str, body: bytes = b"") -> tuple[int, bytes]:
    """One HTTP/1.1 request on ``sock`` (closed after); the answer's status and body. OSError or
    ValueError when the answer is cut off. Plain sockets: an HTTP client's import costs more
    than the whole call."""
    with sock:
        sock.sendall(f"{method} {target} HTTP/1.1\r\nHost: memctl-warm\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        chunks = []
        while chunk := sock.recv(1 << 16):
            chunks.append(chunk)
    head, blank, payload = b"".join(chunks).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    if not blank or len(payload) != int(headers.get("content-length", -1)):
        raise ConnectionError("the answer was cut off")
    return int(lines[0].split()[1]), payload


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
    import subprocess

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
    sock = _connect(path, max(1.0, timeout))
    try:
        return sock is not None and _exchange(sock, "GET", "/v1/health")[0] == 200
    except (OSError, ValueError):
        return False


def run_helper(obj: Any, path: str, idle: float | None, log_level: str) -> None:
    """The helper's side (``memctl serve --warm-socket PATH``): bind the socket, open the bank as
    the CLI would (actor ``cli``), serve it without tokens or MCP, and the CLI's calls at
    :data:`ROUTE`, until idle or SIGTERM."""
    import click

    from memory_core import server

    group = click.get_current_context().find_root().command  # memctl's, every command registered
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
                     idle_seconds=None if idle is None else idle * 60, routes=[_cli_route(group)])
    finally:
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == mine:  # not a newer helper's
                sock_path.unlink()
                pid_path.unlink()


def served() -> Any | None:
    """The bank a command opens in this thread when the helper runs it for a call, else None."""
    return _PerThread.local.bank


def _cli_route(group: Any) -> Any:
    """``POST /v1/cli`` ``{"argv": [...]}``: run the memctl command against the served bank in a
    worker thread; ``{"code", "stdout", "stderr"}``. 409 for a call :func:`_call` would not send."""
    import anyio.to_thread
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def run(request: Any) -> Any:
        argv = (await request.json()).get("argv")
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) or _call(argv) != argv:
            return JSONResponse({"error": "not a call the helper runs"}, status_code=409)
        answer = await anyio.to_thread.run_sync(_run, group, argv, request.app.state.service)
        return JSONResponse(answer)

    return Route(ROUTE, run, methods=["POST"])


def _run(group: Any, argv: list[str], svc: Any) -> dict[str, Any]:
    """Run ``memctl ARGV`` (``group``: memctl's click group) as in process, on ``svc``'s bank, with
    this thread's output captured."""
    import io
    import traceback

    out, err = io.StringIO(), io.StringIO()
    _PerThread.install()
    with _PerThread.capture(out, err, _Served(svc, argv[1])):
        try:
            group.main(args=argv[:], prog_name="memctl", standalone_mode=True)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
            if isinstance(exc.code, str):  # sys.exit("message") prints it
                err.write(exc.code + "\n")
        except Exception:  # as in process: the traceback, exit code 1
            traceback.print_exc(file=err)
            code = 1
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


class _Served:
    """The helper's bank as a command in :func:`_run` sees it: the command's ``with`` leaves it
    open, an add goes through the server's write queue (grouped with concurrent adds, answered once
    committed), and ``stats`` names the bank as the call did, as in process."""

    def __init__(self, svc: Any, given: str) -> None:
        self.svc, self.given = svc, given

    def __getattr__(self, name: str) -> Any:
        return getattr(self.svc.bank, name)

    def __enter__(self) -> _Served:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add(self, text: str, **fields: Any) -> int:
        return self.svc.writes.add({"text": text, **fields}).id  # made by the bank's actor, cli

    def stats(self, **kwargs: Any) -> dict[str, Any]:
        s = self.svc.bank.stats(**kwargs)
        return s if "://" in self.given else {**s, "path": str(Path(self.given))}


class _Local(threading.local):
    stdout: Any = None
    stderr: Any = None
    bank: Any = None


class _PerThread:
    """``sys.stdout`` or ``sys.stderr`` in the helper: a thread running a call writes to that
    call's buffer (click writes to the standard streams), every other thread to the stream it
    replaced (the helper's log). :attr:`local` also holds the bank of the call the thread runs."""

    local = _Local()
    lock = threading.Lock()

    def __init__(self, name: str, default: Any) -> None:
        self.name, self.default = name, default
        self.encoding, self.errors = "utf-8", "strict"

    def target(self) -> Any:
        return getattr(self.local, self.name) or self.default

    def write(self, text: str) -> int:
        return self.target().write(text)

    def flush(self) -> None:
        self.target().flush()

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    @classmethod
    def install(cls) -> None:
        with cls.lock:
            for name in ("stdout", "stderr"):
                if not isinstance(getattr(sys, name), cls):
                    setattr(sys, name, cls(name, getattr(sys, name)))

    @classmethod
    @contextlib.contextmanager
    def capture(cls, out: Any, err: Any, bank: Any) -> Iterator[None]:
        cls.local.stdout, cls.local.stderr, cls.local.bank = out, err, bank
        try:
            yield
        finally:
            cls.local.stdout = cls.local.stderr = cls.local.bank = None
