"""The dashboard placeholder: opens a bank, lists it, and tries a what-if recall without writing."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from memory_core import MemoryBank

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def test_app_lists_the_bank_and_recalls_without_writing(bank_path, embedder, monkeypatch):
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        bank.add("Prefers vegetarian food", namespace="alice", importance=0.8, category="preference")
        bank.add("Moved to Berlin in August", namespace="alice")
        bank.add("Works night shifts", namespace="bob")
        seq = bank.stats()["change_seq"]
    monkeypatch.setenv("MEMCTL_BANK", str(bank_path))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert [m.value for m in at.metric][:2] == ["3", "2"]  # active memories, namespaces
    assert at.selectbox[0].options == ["alice", "bob"]
    table = at.dataframe[-1].value
    assert set(table["text"]) == {"Prefers vegetarian food", "Moved to Berlin in August"}

    at.text_input[0].input("vegetarian food for dinner").run()
    assert not at.exception
    hits = at.dataframe[0].value
    assert hits["text"].iloc[0] == "Prefers vegetarian food"
    at.selectbox[0].select("bob").run()
    assert set(at.dataframe[-1].value["text"]) == {"Works night shifts"}
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        assert bank.stats()["change_seq"] == seq and bank.retrievals() == []


def test_app_explains_a_broken_bank(tmp_path, monkeypatch):
    broken = tmp_path / "broken.duckdb"
    broken.write_bytes(b"not a database" * 100)
    monkeypatch.setenv("MEMCTL_BANK", str(broken))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert "broken.duckdb" in at.error[0].value
