"""An exposed dashboard is guarded by a password, and erasing for good asks for it again."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from memory_core import MemoryBank

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def make_bank(path: Path, embedder) -> int:
    with MemoryBank.open(path, embedder=embedder) as bank:
        return bank.add("Keeps a diary in Esperanto", namespace="alice")


def test_without_a_password_the_dashboard_opens(tmp_path, embedder, monkeypatch):
    make_bank(tmp_path / "open.duckdb", embedder)
    monkeypatch.setenv("MEMCTL_BANK", str(tmp_path / "open.duckdb"))
    monkeypatch.delenv("MEMCTL_DASHBOARD_PASSWORD", raising=False)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception and at.metric  # the Overview, no sign-in form
    assert not [t for t in at.text_input if t.label == "Password"]


def test_a_password_shows_only_the_sign_in_form(tmp_path, embedder, monkeypatch):
    """Signing in itself (wrong and right passwords, pages opened by URL) is tested in a real
    browser in test_browser.py; AppTest's form and page switching bypass the app's entry script."""
    make_bank(tmp_path / "guarded.duckdb", embedder)
    monkeypatch.setenv("MEMCTL_BANK", str(tmp_path / "guarded.duckdb"))
    monkeypatch.setenv("MEMCTL_DASHBOARD_PASSWORD", "correct horse")
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception and not at.metric and not at.dataframe  # nothing of the bank
    assert [t.label for t in at.text_input] == ["Password"] and [b.label for b in at.button] == ["Sign in"]


def test_password_check_is_exact(monkeypatch):
    from dashboard.common import password_matches

    monkeypatch.setenv("MEMCTL_DASHBOARD_PASSWORD", "correct horse")
    assert password_matches("correct horse")
    assert not password_matches("correct horse ") and not password_matches("") and not password_matches("Correct horse")
    monkeypatch.delenv("MEMCTL_DASHBOARD_PASSWORD")
    assert not password_matches("")  # no password configured: nothing matches, nothing is needed


def test_hard_delete_asks_for_the_password_again(tmp_path, embedder, monkeypatch):
    path = tmp_path / "hard.duckdb"
    mid = make_bank(path, embedder)
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    monkeypatch.setenv("MEMCTL_DASHBOARD_PASSWORD", "correct horse")
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["signed_in"] = True  # as after signing in
    at.run()
    at.switch_page("dashboard/memory.py")  # hard delete is on the memory's own page
    at.query_params["id"] = str(mid)
    at.run()
    at.text_input(key="memory_hard_confirm").input(str(mid)).run()
    at.text_input(key="memory_hard_password").input("guess").run()
    at.button(key="memory_hard_delete").click().run()
    assert "Wrong password" in at.error[0].value
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.get(mid).status == "active"
    at.text_input(key="memory_hard_password").input("correct horse").run()
    at.button(key="memory_hard_delete").click().run()
    assert not at.exception
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.get(mid).status == "deleted"
