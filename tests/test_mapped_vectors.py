"""Large namespaces keep their vectors in a memory-mapped scratch file (issue 6, item 9): recall
stays exact through every change, the saved index reloads, and nothing is left beside the bank."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from memory_core import MemoryBank, ScoringParams
from memory_core.index import LexicalIndex, NamespaceIndex, RowInfos
from test_recall_exact import WORDS, assert_exact

T0 = datetime(2025, 9, 1, tzinfo=timezone.utc)
NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)
QUERIES = [" ".join(WORDS[i:i + 3]) for i in range(0, 12, 3)]
PRESETS = [ScoringParams(), ScoringParams(recency_from="last_access", beta=0.4, k=8, threshold=0.0)]


@pytest.fixture
def small_thresholds(monkeypatch):
    """Map vectors, prune, read rows and compact at sizes a test can reach."""
    monkeypatch.setattr(NamespaceIndex, "MAP_MIN_ROWS", 64)
    monkeypatch.setattr(NamespaceIndex, "PREAD_MAX_ROWS", 40)  # both ways of reading rows
    monkeypatch.setattr(NamespaceIndex, "PRUNE_MIN_ROWS", 100)
    monkeypatch.setattr(LexicalIndex, "COMPACT_MIN", 16)
    monkeypatch.setattr(RowInfos, "COMPACT_MIN", 16)


def _rows(n: int, seed: int, dim: int) -> list[dict]:
    from bench._util import unit_vectors

    rng = np.random.default_rng(seed)
    vectors = unit_vectors(n, dim, seed=seed)
    return [{"text": " ".join(rng.choice(WORDS, 5)) + f" n{seed}x{i}", "namespace": "big",
             "importance": float(rng.random()), "created_at": T0 + timedelta(days=float(rng.random() * 400)),
             "embedding": vectors[i]} for i in range(n)]


def _check(bank: MemoryBank, embedder) -> None:
    for p in PRESETS:
        for q in QUERIES:
            assert_exact(bank, q, "big", p, NOW, embedder)


@pytest.mark.slow
def test_mapped_vectors_keep_recall_exact_through_changes_and_reopening(bank_path, embedder, small_thresholds):
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        ids = bank.add_many(_rows(300, 1, embedder.dim))
        _check(bank, embedder)
        idx = bank._indexes["big"]
        assert isinstance(idx.emb, np.memmap), "300 rows are past MAP_MIN_ROWS: the vectors are mapped"
        rng = np.random.default_rng(2)
        for mid in rng.choice(ids, 40, replace=False).tolist():  # removals move the last row in
            bank.forget(int(mid))
        for mid in rng.choice(ids, 20, replace=False).tolist():
            if bank.get(int(mid)).status == "active":
                bank.update(int(mid), text=" ".join(rng.choice(WORDS, 4)) + f" edited {mid}")
        for q in QUERIES:  # recorded recalls change access counts and recency
            bank.recall(q, namespace="big", params=PRESETS[1], now=NOW)
        _check(bank, embedder)
        bank.add_many(_rows(200, 3, embedder.dim))  # past the mapped capacity: the file grows
        _check(bank, embedder)
        assert isinstance(bank._indexes["big"].emb, np.memmap)
        live = bank.count(namespace="big")
    folder = bank_path.parent / (bank_path.name + ".index")
    # Scratch files are unlinked from the start: only the saved index is there (with the side
    # structures pruned recall built: side.npz).
    assert {p.name.split(".", 1)[1] for p in folder.iterdir()} == {"json", "lex.npz", "vec.npy", "info.arrow",
                                                                    "side.npz"}
    with MemoryBank.open(bank_path, embedder=embedder) as bank:  # loaded from the saved index
        _check(bank, embedder)
        idx = bank._indexes["big"]
        assert isinstance(idx.emb, np.memmap) and idx.n == live == 460
        texts = {int(idx.ids[r]): idx.info[r][0] for r in range(idx.n)}
        assert texts == {m.id: m.text for m in bank.memories(namespace="big", limit=1000)}


def test_a_read_only_bank_keeps_vectors_in_memory(bank_path, embedder, small_thresholds):
    """No scratch file where the bank may not write: the vectors are an ordinary array."""
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        bank.add_many(_rows(120, 5, embedder.dim))
    with MemoryBank.open(bank_path, embedder=embedder, read_only=True) as bank:
        _check(bank, embedder)
        assert not isinstance(bank._indexes["big"].emb, np.memmap)


def test_loading_a_namespace_reports_progress(bank_path, embedder, small_thresholds, monkeypatch):
    """The first use of a large namespace can take a minute at a million memories: load_namespace
    reports every memory read (building from the store, then from the saved index), and the CLI
    shows it as a progress bar."""
    from click.testing import CliRunner

    from memory_core import cli

    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        bank.add_many(_rows(150, 7, embedder.dim))
    for _ in range(2):  # from the store, then from the index it saved
        with MemoryBank.open(bank_path, embedder=embedder) as bank:
            assert not bank.namespace_loaded("big")
            seen: list[int] = []
            assert bank.load_namespace("big", progress=seen.append) == 150
            assert sum(seen) == 150 and bank.namespace_loaded("big")
            assert bank.load_namespace("big") == 150  # already loaded: nothing read
            _check(bank, embedder)
    import memory_core

    monkeypatch.setattr(memory_core, "LOAD_PROGRESS_MIN", 100)  # what recall's command reads when it runs
    result = CliRunner().invoke(cli.cli, ["--bank", str(bank_path), "recall", WORDS[0], "--namespace", "big"])
    assert result.exit_code == 0, result.output
    assert "loading the index of big" in result.output
