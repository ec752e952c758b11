"""What a bank file keeps beside it while in use is git-ignored, so `git status` in a checkout that
ran the dashboard, the server or the tests shows no `data/memory.duckdb.waiting` and the like.

A real bank is opened in a scratch git repository that has the project's .gitignore, used (add,
recall, a backup), and every other file the store names next to a bank (the waiters' file,
DuckDB's write-ahead log and spill folder, a killed backup's or compaction's hidden file) is made
as the store would make it: nothing may show as untracked.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from memory_core import MemoryBank

ROOT = Path(__file__).resolve().parent.parent


def test_the_files_a_bank_keeps_beside_it_are_ignored(tmp_path, embedder):
    repo = tmp_path / "checkout"
    (repo / "data").mkdir(parents=True)
    shutil.copy(ROOT / ".gitignore", repo / ".gitignore")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    path = repo / "data" / "memory.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add("Prefers vegetarian food", namespace="alice")
        bank.recall("what should I cook?", namespace="alice")
        bank.flush()
        store = bank._store
        runtime = [Path(str(path) + ".waiting"), Path(str(path) + ".wal"), Path(str(path) + ".lock"),
                   store.index_folder / "x.json", store.journal_folder / "x.jsonl", Path(str(path) + ".tmp") / "spill",
                   path.with_name(f".{path.name}.partial.123"), path.with_name(f".{path.name}.compact.123"),
                   path.with_name(f".{path.name}.restore.123"), path.with_name(f".{path.name}.partial.123.wal")]
        for p in runtime:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.touch()
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=all"],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    assert status == ["?? .gitignore"], status
