"""Damaged files: index caches are rebuilt; a damaged database file gives a clear error, never a traceback.

Index caches that are missing or truncated are rebuilt from the store (test_recall_exact.py checks
a truncated FAISS file and a garbage BM25 file against brute force; here: the header, empty files,
a deleted folder). A truncated or corrupted DuckDB file raises CorruptBankError that names the
file and the way out (restore from a backup), through the library, the CLI and the dashboard.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from bench.checks import recall_matches_brute_force
from memory_core import CorruptBankError, MemoryBank

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)
QUERIES = ["what does she drink", "where does he live"]


def _fill(path: Path, embedder, n: int = 3000) -> None:
    """A bank big enough that its memories live in blocks past the file's first megabytes."""
    words = "tea coffee berlin paris cello running garden python budget dog".split()
    rows = [{"text": f"Note {i}: {words[i % 10]} and {words[(i * 7) % 10]} " + "detail " * 30,
             "namespace": ("alice", "bob")[i % 2], "created_at": datetime(2026, 1, 1, tzinfo=timezone.utc)}
            for i in range(n)]
    vecs = embedder.encode([r["text"] for r in rows[:50]])
    for i, r in enumerate(rows):
        r["embedding"] = vecs[i % 50].tolist()  # vectors of the bank's model; the texts are what matter here
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add_many(rows)
        for ns in ("alice", "bob"):
            bank.recall("tea", namespace=ns, record=False)


@pytest.fixture(scope="module")
def filled(tmp_path_factory, embedder) -> Path:
    path = tmp_path_factory.mktemp("damaged") / "full.duckdb"
    _fill(path, embedder)
    return path


def _copy(src: Path, dest: Path) -> Path:
    shutil.copy(src, dest)
    return dest


@pytest.mark.parametrize("damage", ["deleted folder", "empty files", "truncated header", "truncated vectors"])
def test_missing_or_truncated_index_files_are_rebuilt(tmp_path, filled, embedder, damage):
    path = _copy(filled, tmp_path / "bank.duckdb")
    shutil.copytree(str(filled) + ".index", str(path) + ".index")
    folder = Path(str(path) + ".index")
    files = sorted(folder.iterdir())
    assert files, "the fixture saved index caches"
    if damage == "deleted folder":
        shutil.rmtree(folder)
    for f in files if folder.exists() else []:
        if damage == "empty files":
            f.write_bytes(b"")
        elif damage == "truncated header" and f.suffix == ".json":
            f.write_bytes(f.read_bytes()[:10])
        elif damage == "truncated vectors" and f.name.endswith(".vec.npy"):
            f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert recall_matches_brute_force(bank, QUERIES, now=NOW) == []
        assert bank.count() == 3000
    assert any(folder.glob("*.vec.npy")), "the rebuilt index was saved again"


def _truncate(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def _scribble(path: Path) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        for at in range(size // 3, size - 4096, 65536):  # damage blocks throughout the data
            fh.seek(at)
            fh.write(os.urandom(4096))


def _header(path: Path) -> None:
    with open(path, "r+b") as fh:
        fh.write(os.urandom(8192))


DAMAGES = {"truncated": _truncate, "corrupted blocks": _scribble, "corrupted header": _header}


def _use(bank_path: Path, embedder) -> None:
    """What an agent does on opening a bank: read everything once, recall, write."""
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        bank.memories(limit=None, status=None)
        bank.recall("tea", namespace="alice")
        bank.add("Likes green tea", namespace="alice")


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_database_file_names_the_file_and_the_way_out(tmp_path, filled, embedder, damage):
    path = _copy(filled, tmp_path / "damaged.duckdb")
    DAMAGES[damage](path)
    with pytest.raises(CorruptBankError) as caught:
        _use(path, embedder)
    message = str(caught.value)
    assert str(path) in message
    assert "restore --from" in message and "backup" in message
    assert "Traceback" not in message


@pytest.mark.parametrize("damage", ["truncated", "corrupted header"])
def test_the_cli_gives_one_clear_line_not_a_traceback(tmp_path, filled, damage):
    path = _copy(filled, tmp_path / "damaged.duckdb")
    DAMAGES[damage](path)
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    out = subprocess.run([sys.executable, "-m", "memory_core.cli", "--bank", str(path), "export", "-"],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    assert str(path) in out.stderr and "restore --from" in out.stderr


@pytest.mark.parametrize("damage", ["truncated", "corrupted header"])
def test_the_dashboard_shows_the_error_instead_of_a_traceback(tmp_path, filled, monkeypatch, damage):
    path = _copy(filled, tmp_path / f"dash-{damage.replace(' ', '-')}.duckdb")
    DAMAGES[damage](path)
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    at = AppTest.from_file(APP, default_timeout=120).run()
    if not at.exception:  # the overview may open the bank before reading a damaged block
        at.switch_page("dashboard/browse.py").run()
    assert not at.exception, at.exception
    shown = " ".join(e.value for e in at.error)
    assert str(path) in shown and "restore --from" in shown
