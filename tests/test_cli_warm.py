"""memctl over its warm helper: the same outputs, errors and exit codes as in process, and nothing
acknowledged lost when the helper is killed outright.

Real processes throughout: ``memctl`` subprocesses with ``MEMCTL_WARM=0`` and ``=1``, the helper a
real ``memctl serve`` on a unix socket in a cache folder of the test's own.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memory_core import MemoryBank, NotFoundError

ROOT = Path(__file__).resolve().parent.parent

# add, recall, show, forget, restore go through the helper; stats runs in process either way. The
# errors: an unknown id, a bad importance, an empty text, a malformed namespace, a bad time, a bad k.
COMMANDS: list[list[str]] = [
    ["add", "Prefers green tea to coffee", "-n", "alice", "--created-at", "2026-01-05", "-i", "0.8", "-c", "preference"],
    ["add", "Allergic to peanuts", "-n", "alice", "--created-at", "2026-02-01", "--source", "chat"],
    ["add", "Lives in Uppsala", "-n", "bob", "--created-at", "2026-02-03", "--context", "talking about moving"],
    ["add", "Prefers green tea to coffee", "-n", "alice"],
    ["recall", "what does alice like to drink", "-n", "alice", "--now", "2026-03-01", "--dry-run"],
    ["recall", "what does alice like to drink", "-n", "alice", "--now", "2026-03-01", "--json", "--dry-run"],
    ["recall", "is she allergic to anything", "-n", "alice", "--now", "2026-03-01"],
    ["recall", "where does bob live", "-n", "bob", "--now", "2026-03-01", "-k", "1", "--threshold", "0.1"],
    ["recall", "quantum chromodynamics", "-n", "nobody", "--now", "2026-03-01"],
    ["show", "1"],
    ["show", "1", "--json"],
    ["forget", "2", "--reason", "asked to"],
    ["show", "2"],
    ["restore", "2"],
    ["forget", "3", "--hard", "--yes"],
    ["show", "3", "--json"],
    ["stats"],
    ["show", "999"],
    ["forget", "999"],
    ["restore", "999"],
    ["add", "x", "-i", "2"],
    ["add", "   "],
    ["recall", "tea", "-n", "bad namespace!"],
    ["recall", "tea", "-n", "alice", "--now", "not a time"],
    ["show", "0"],
    ["recall", "tea", "-n", "alice", "-k", "0"],
    ["add", "y", "--created-at", "garbage"],
]

# What differs between two runs of the same commands however they run: the clock of the bank
# itself (created and updated times, the history's), the file's size, and a recorded recall's id:
# each process reserves retrieval ids in blocks, so one in-process call per process numbers its
# recalls 1, 4097, 8193... where the helper, one process, numbers them 1, 2, 3.
_TIMES = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d+)?)?(\+00:00|Z)?")
_SIZE = re.compile(r"\(\d+\.\d MB\)")
_RETRIEVAL = re.compile(r"(retrieval|feedback) \d+")


def _same(text: str, bank: Path) -> str:
    text = _RETRIEVAL.sub(r"\1 N", text.replace(str(bank), "BANK"))
    return _SIZE.sub("(SIZE)", _TIMES.sub("TIME", text))


def memctl(bank: Path, cache: Path, warm: bool, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MEMCTL_WARM": "1" if warm else "0", "MEMCTL_CACHE_DIR": str(cache),
           "MEMCTL_WARM_IDLE": "5", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "memory_core.cli", "--bank", str(bank), *args], capture_output=True,
                          text=True, env=env, timeout=300, cwd=ROOT)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """A cache folder of the test's own that shares the machine's built models."""
    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / "models").symlink_to(Path(os.environ["MEMCTL_CACHE_DIR"]) / "models", target_is_directory=True)
    return folder


def _stop_helper(bank: Path, cache: Path) -> None:
    code = ("import sys; from memory_core.cli import warm; sys.exit(0 if warm.stop(sys.argv[1]) else 3)")
    subprocess.run([sys.executable, "-c", code, str(bank)], env={**os.environ, "PYTHONPATH": str(ROOT),
                   "MEMCTL_CACHE_DIR": str(cache)}, timeout=60)


def _helper_pid(bank: Path, cache: Path) -> int:
    pids = list((cache / "warm").glob("*.pid"))
    assert len(pids) == 1, pids
    return int(pids[0].read_text())


def test_warm_and_in_process_give_the_same_outputs_errors_and_exit_codes(tmp_path, cache):
    cold_bank, warm_bank = tmp_path / "cold" / "bank.duckdb", tmp_path / "warm" / "bank.duckdb"
    cold_bank.parent.mkdir()
    warm_bank.parent.mkdir()
    try:
        for command in COMMANDS:
            cold = memctl(cold_bank, cache, False, *command)
            warm = memctl(warm_bank, cache, True, *command)
            assert "Traceback" not in cold.stderr + warm.stderr, (command, cold.stderr, warm.stderr)
            assert (warm.returncode, _same(warm.stdout, warm_bank), _same(warm.stderr, warm_bank)) == \
                   (cold.returncode, _same(cold.stdout, cold_bank), _same(cold.stderr, cold_bank)), command
        assert list((cache / "warm").glob("*.sock")), "the warm runs went through a helper"
    finally:
        _stop_helper(warm_bank, cache)
    # the helper's changes are the bank's, named as the CLI's
    with MemoryBank.open(warm_bank) as bank:
        assert {e.actor for e in bank.history(1)} == {"cli"}


def test_memctl_warm_0_starts_no_helper(tmp_path, cache):
    bank = tmp_path / "bank.duckdb"
    run = memctl(bank, cache, False, "add", "Likes chess")
    assert run.returncode == 0, run.stderr
    assert not list((cache / "warm").glob("*.sock")) if (cache / "warm").exists() else True


def test_the_helper_stops_when_idle_and_the_next_call_starts_another(tmp_path, cache):
    bank = tmp_path / "bank.duckdb"
    env_idle = {"MEMCTL_WARM_IDLE": "0.05"}  # three seconds
    first = subprocess.run([sys.executable, "-m", "memory_core.cli", "--bank", str(bank), "add", "Likes chess"],
                           capture_output=True, text=True, timeout=300, cwd=ROOT,
                           env={**os.environ, "PYTHONPATH": str(ROOT), "MEMCTL_WARM": "1",
                                "MEMCTL_CACHE_DIR": str(cache), **env_idle})
    assert first.returncode == 0, first.stderr
    pid = _helper_pid(bank, cache)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.2)
    assert not _alive(pid), "the helper should stop once idle"
    assert not list((cache / "warm").glob("*.sock")), "it removes its socket"
    again = memctl(bank, cache, True, "show", "1")
    try:
        assert again.returncode == 0 and "Likes chess" in again.stdout, again.stderr
    finally:
        _stop_helper(bank, cache)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie has exited
        return f.read().split(") ")[1][0] != "Z"


def test_sigkill_of_the_helper_during_adds_loses_nothing_acknowledged(tmp_path, cache):
    bank = tmp_path / "bank.duckdb"
    first = memctl(bank, cache, True, "add", "memory 0")
    assert first.returncode == 0, first.stderr
    acknowledged: dict[int, str] = {int(first.stdout.strip()): "memory 0"}
    pid = _helper_pid(bank, cache)
    failures: list[str] = []
    killed = threading.Event()

    def writer(offset: int) -> None:
        for i in range(offset, offset + 400, 4):
            if killed.is_set():
                return
            run = memctl(bank, cache, True, "add", f"memory {i}", "--no-dedupe")
            if run.returncode != 0:  # a call the kill cut off: not acknowledged
                failures.append(run.stderr)
                return
            acknowledged[int(run.stdout.strip())] = f"memory {i}"

    threads = [threading.Thread(target=writer, args=(k,)) for k in (1, 2, 3, 4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 240
    while len(acknowledged) < 12 and time.monotonic() < deadline and not failures:
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    killed.set()
    for t in threads:
        t.join(timeout=600)
    try:
        assert len(acknowledged) >= 12, failures
        assert all("Traceback" not in f for f in failures), failures
        with MemoryBank.open(bank) as opened:
            for mid, text in sorted(acknowledged.items()):
                try:
                    assert opened.get(mid).text == text
                except NotFoundError:
                    pytest.fail(f"memory {mid} ({text!r}) was acknowledged, then lost")
    finally:
        _stop_helper(bank, cache)


_REPORT = """
import atexit, json, sys
atexit.register(lambda: sys.stderr.write("\\nMODULES " + json.dumps(sorted(m for m in sys.modules if "." not in m)) + "\\n"))
sys.argv = ["memctl"] + sys.argv[1:]
from memory_core.cli import main
main()
"""


def test_a_call_over_the_helper_loads_neither_click_nor_numpy_nor_the_store(tmp_path, cache):
    """What makes a warm call fast: ``memctl`` speaks to the helper before importing click, NumPy,
    an HTTP client or the store's driver; ``stats`` goes there too once a helper runs."""
    bank = tmp_path / "bank.duckdb"
    first = memctl(bank, cache, True, "add", "Prefers tea to coffee", "-n", "alice")
    assert first.returncode == 0, first.stderr
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MEMCTL_WARM": "1", "MEMCTL_CACHE_DIR": str(cache),
           "HF_HUB_OFFLINE": "1"}
    try:
        for command in (["recall", "tea", "-n", "alice", "--dry-run"], ["stats"]):
            run = subprocess.run([sys.executable, "-c", _REPORT, "--bank", str(bank), *command], capture_output=True,
                                 text=True, env=env, timeout=120, cwd=ROOT)
            assert run.returncode == 0, run.stderr
            modules = set(json.loads(run.stderr.rsplit("MODULES ", 1)[1]))
            assert not modules & {"click", "numpy", "duckdb", "httpx", "onnxruntime"}, (command, modules)
            assert run.stdout == memctl(bank, cache, True, *command).stdout
            assert ("Prefers tea" if command[0] == "recall" else "memories: 1 (1 active)") in run.stdout
    finally:
        _stop_helper(bank, cache)


def test_a_question_on_the_terminal_is_asked_in_process(tmp_path, cache):
    """``forget --hard`` without ``--yes`` asks first: the helper has no terminal, so that call runs
    in process, answers as it would there, and the refused erase erases nothing."""
    bank = tmp_path / "bank.duckdb"
    mid = memctl(bank, cache, True, "add", "Lives in Lund").stdout.strip()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MEMCTL_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1"}
    try:
        runs = [subprocess.run([sys.executable, "-m", "memory_core.cli", "--bank", str(bank), "forget", mid, "--hard"],
                               input="n\n", capture_output=True, text=True, timeout=300, cwd=ROOT,
                               env={**env, "MEMCTL_WARM": warm}) for warm in ("1", "0")]
        assert [(r.returncode, r.stdout, r.stderr) for r in runs][0] == [(r.returncode, r.stdout, r.stderr)
                                                                        for r in runs][1]
        assert runs[0].returncode == 1 and "Aborted" in runs[0].stderr
        assert "Lives in Lund" in memctl(bank, cache, True, "show", mid).stdout
    finally:
        _stop_helper(bank, cache)
