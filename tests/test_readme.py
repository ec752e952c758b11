"""The README's commands work when pasted in order into a fresh shell (issue 35 item 3).

The ```bash and ```python blocks of README.md (and of the "Quick start" section of each page under
docs/) become one bash script, run in a copy of the project without any bank, with the venv off
PATH, as a new user's shell is: it is the README that has to say how `memctl` is reached. A Python
block runs as ``python - <<'EOF'``, with the ``python`` the commands before it put on PATH. What a
test cannot do as a user does is changed in plain sight, and nothing else:

- ``make run`` runs in the background on a free port without its set-up step (``-o
  .venv/.installed``: the venv exists, and must not be reinstalled), and the script goes on once
  the dashboard answers, as a user would once the browser shows it;
- ``make test`` is left out: it is the command that runs this test;
- the server's port 8765 becomes a free one (so a command that starts it names it: ``--port 8765``).

Everything the script started is stopped at the end (SIGTERM to its process group, then SIGKILL).
A docs page's quick start runs in a copy of its own after ``. .venv/bin/activate``, which the page's
opening line asks for.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_core import MemoryBank

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
RUN_LANGS = {"bash": "shell", "sh": "shell", "python": "python"}
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
SERVE_PORT = "8765"
TIMEOUT_S = 900


def runnable_blocks(markdown: str) -> list[tuple[str, str]]:
    """The shell and Python blocks of ``markdown`` in order, as ("shell" | "python", text)."""
    return [(RUN_LANGS[lang], body) for lang, body in FENCE.findall(markdown) if lang in RUN_LANGS]


def quick_start(markdown: str) -> str:
    """The "## Quick start" section of a docs page ("" when it has none)."""
    match = re.search(r"^## Quick start[^\n]*\n(.*?)(?=^## |\Z)", markdown, re.S | re.M)
    return match.group(1) if match else ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _shell_line(line: str, dash_port: int) -> str:
    """One README shell line as the test runs it (see the module docstring for what changes)."""
    command = line.split("#", 1)[0].strip()
    if command == "make test":
        return ": make test is the command that runs this test"
    if command == "make run":
        return (f"make -o .venv/.installed run PORT={dash_port} > make-run.log 2>&1 &\n"
                f"DASHBOARD=$!\n"
                f"until curl -sf http://127.0.0.1:{dash_port}/_stcore/health > /dev/null; do\n"
                f"  kill -0 $DASHBOARD 2> /dev/null || {{ echo 'make run stopped:'; cat make-run.log; exit 1; }}\n"
                f"  sleep 1\ndone")
    if re.search(r"\bmemctl\b.*\bserve\b", command) and "--port" not in command:
        raise AssertionError(f"{command!r}: name the port (--port {SERVE_PORT}) so that the test can move it")
    if command.startswith("make "):
        raise AssertionError(f"the test does not know how to run {command!r} from the README: teach it")
    return line


def to_script(blocks: list[tuple[str, str]], dash_port: int, serve_port: int, prelude: str = "") -> str:
    """The blocks as one bash script that stops at the first failing command."""
    out = ["set -eo pipefail", prelude]
    for n, (kind, body) in enumerate(blocks, 1):
        body = body.replace(SERVE_PORT, str(serve_port))
        out.append(f"echo '>>> block {n} ({kind})'")
        if kind == "shell":
            out.extend(_shell_line(line, dash_port) for line in body.splitlines())
        else:
            assert "PYEOF" not in body
            out.append(f"python - <<'PYEOF'\n{body}PYEOF")
    out.append("echo '>>> all blocks ran'")
    return "\n".join(out) + "\n"


def fresh_copy(dest: Path) -> Path:
    """The project as a fresh clone has it: no banks, no caches, no secrets; the venv linked in."""
    shutil.copytree(ROOT, dest, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", "*.duckdb", "*.duckdb.*", "__pycache__", ".pytest_cache", "test-artifacts",
        "secrets.toml", "*.egg-info", "results"))
    (dest / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    return dest


def user_env() -> dict[str, str]:
    """A new user's environment: no venv on PATH and no bank or password chosen; this checkout's code."""
    venv_bin = (Path(sys.prefix) / "bin").resolve()
    env = {k: v for k, v in os.environ.items()
           if k not in {"VIRTUAL_ENV", "MEMCTL_BANK", "MEMCTL_DASHBOARD_PASSWORD", "MEMCTL_CONFIG", "PYTHONHOME"}
           and not k.startswith(("MEMCTL_LLM_", "MEMCTL_JUDGE_"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p).resolve() != venv_bin)
    env["PYTHONPATH"] = str(ROOT)  # this checkout's memory_core, also when the venv's install is another
    env["HF_HUB_OFFLINE"] = "1"
    return env


def run_script(script: str, cwd: Path) -> str:
    """Run ``script`` in ``cwd``; return its output, or fail with it. Stops what it started."""
    (cwd / "readme.sh").write_text(script, encoding="utf-8")
    log_path = cwd / "readme.log"
    with open(log_path, "wb") as log:  # a file, not a pipe: background servers keep their output open
        proc = subprocess.Popen(["bash", "readme.sh"], cwd=cwd, env=user_env(), stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            _stop_group(proc.pid)
    output = log_path.read_text(encoding="utf-8", errors="replace")
    extra = "".join(f"\n--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in cwd.glob("make-run.log"))
    assert rc == 0, f"a command failed (exit {rc}; None = timed out after {TIMEOUT_S} s):\n{output[-6000:]}{extra}"
    assert ">>> all blocks ran" in output
    return output


def _stop_group(pgid: int) -> None:
    """SIGTERM the script's process group (servers shut down cleanly, flushing), SIGKILL what stays."""
    for sig, grace in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)


def test_blocks_are_found_in_order():
    """The extraction itself: shell and Python blocks in order, JSON and YAML left alone."""
    text = "a\n```bash\nmemctl stats\n```\n```json\n{}\n```\n```python\nprint(1)\n```\n"
    assert runnable_blocks(text) == [("shell", "memctl stats\n"), ("python", "print(1)\n")]
    assert "make -o .venv/.installed run PORT=9" in to_script([("shell", "make run   # x\n")], 9, 1)
    with pytest.raises(AssertionError, match="make clean"):
        to_script([("shell", "make clean\n")], 9, 1)
    with pytest.raises(AssertionError, match="name the port"):
        to_script([("shell", "memctl --bank b serve &\n")], 9, 1)
    assert "serve --port 1 &" in to_script([("shell", f"memctl serve --port {SERVE_PORT} &\n")], 9, 1)


def test_readme_is_a_front_door():
    """At most 200 lines (issue 32): the reference material lives in docs/, the README links to it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    assert ". .venv/bin/activate" in readme  # how the venv's commands are reached (issue 35 item 3)


def test_readme_commands_run_in_order(tmp_path):
    """Every README command works pasted in order after the set-up command, on one bank: the
    dashboard `make run` opened holds the demo and what the library, the CLI and the server wrote."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = runnable_blocks(readme)
    assert any(kind == "python" for kind, _ in blocks) and any("make run" in b for _, b in blocks)
    work = fresh_copy(tmp_path / "clone")
    run_script(to_script(blocks, free_port(), free_port()), work)

    bank_file = work / "data" / "memory.duckdb"
    assert bank_file.exists(), "the README's commands did not use data/memory.duckdb"
    with MemoryBank.open(bank_file) as bank:
        texts = {m.text for m in bank.memories(namespace="alice", limit=10_000)}
        served = [t.name for t in bank.tokens.list()]
        assert bank.count(status=None) > 753  # the demo make run built, plus what the README added
    assert {"Prefers window seats on long flights", "Plays the cello in a community orchestra", "Allergic to cats",
            "Walks to work every day"} <= texts
    assert "alice-agent" in served


@pytest.mark.parametrize("page", sorted(p.name for p in (ROOT / "docs").glob("*.md")
                                        if runnable_blocks(quick_start(p.read_text(encoding="utf-8")))))
def test_docs_quick_start_runs(page, tmp_path):
    """A docs page's quick start works pasted in order into a fresh shell with the venv activated."""
    blocks = runnable_blocks(quick_start((ROOT / "docs" / page).read_text(encoding="utf-8")))
    work = fresh_copy(tmp_path / "clone")
    run_script(to_script(blocks, free_port(), free_port(), prelude=". .venv/bin/activate"), work)
