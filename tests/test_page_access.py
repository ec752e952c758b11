"""The Access page: an operator lists, creates and revokes the tokens agents use with `memctl serve`,
driven through the dashboard with AppTest, checked in the bank and against a real server."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from memory_core import MemoryBank
from memctl_server import Served

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def _app(path: Path, monkeypatch) -> AppTest:
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    at = AppTest.from_file(APP, default_timeout=90).run()
    assert not at.exception, at.exception
    at.switch_page("dashboard/access.py").run()
    assert not at.exception, at.exception
    return at


def _secrets(at: AppTest) -> list[str]:
    return [c.value for c in at.code if c.value.startswith("mct_")]


def _create(at: AppTest, name: str, namespaces: list[str], *, read_only: bool = False) -> AppTest:
    at.text_input(key="token-name").set_value(name)
    at.multiselect(key="token-namespaces").set_value(namespaces)
    at.checkbox(key="token-read-only").set_value(read_only)
    next(b for b in at.button if b.label == "Create token").click().run()
    assert not at.exception, at.exception
    return at


def _confirmed(at: AppTest, name: str, button: str) -> AppTest:
    """Choose token ``name``, tick "I am sure", click ``button`` (rotate or revoke)."""
    at.selectbox(key="revoke-name").set_value(name)
    at.checkbox(key="revoke-sure").check()
    at.run()
    at.button(key=button).click().run()
    assert not at.exception, at.exception
    return at


def _bank(path: Path, embedder) -> None:
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add("Alice prefers tea", namespace="alice")
        bank.add("Bob works nights", namespace="bob")


def test_a_bank_without_tokens_says_how_to_make_one(tmp_path, embedder, monkeypatch):
    path = tmp_path / "none.duckdb"
    _bank(path, embedder)
    at = _app(path, monkeypatch)
    assert any("No tokens yet" in i.value for i in at.info)


def test_a_token_created_on_the_page_is_shown_once_and_works(tmp_path, embedder, monkeypatch):
    path = tmp_path / "create.duckdb"
    _bank(path, embedder)
    at = _create(_app(path, monkeypatch), "support-agent", ["alice"], read_only=True)
    [secret] = _secrets(at)
    assert any("Created" in s.value and "support-agent" in s.value for s in at.success)
    assert at.dataframe[0].value["name"].tolist() == ["support-agent"]
    with MemoryBank.open(path, embedder=embedder) as bank:
        token = bank.tokens.check(secret)
        assert token is not None and token.namespaces == ("alice",) and token.read_only and not token.admin
    at.run()  # any next run: the secret is gone from the page for good
    assert not _secrets(at)


def test_a_bad_name_is_refused_and_changes_nothing(tmp_path, embedder, monkeypatch):
    path = tmp_path / "bad.duckdb"
    _bank(path, embedder)
    at = _create(_app(path, monkeypatch), "no spaces allowed!", ["alice"])
    assert any("token name" in e.value for e in at.error)
    assert not _secrets(at)
    assert at.text_input(key="token-name").value == "no spaces allowed!"  # kept, to correct it
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.tokens.list() == []


def test_a_token_revoked_on_the_page_is_refused_by_the_running_server(tmp_path, embedder, monkeypatch):
    """The operator's whole loop: create a token on the page, an agent uses it against `memctl
    serve`, the operator revokes it on the page, the server refuses it from the next request."""
    path = tmp_path / "served.duckdb"
    _bank(path, embedder)
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.tokens.create("other", ["bob"])
    at = _create(_app(path, monkeypatch), "alice-agent", ["alice"])
    [secret] = _secrets(at)
    server = Served(path)
    try:
        with server.client(secret) as agent:
            assert agent.post("/v1/recall", json={"query": "what does she drink"}).status_code == 200
            _confirmed(at, "alice-agent", "revoke")
            assert any("Revoked" in s.value for s in at.success)
            assert at.dataframe[0].value["name"].tolist() == ["other"]
            assert agent.post("/v1/recall", json={"query": "what does she drink"}).status_code == 401
    finally:
        server.stop()


def test_the_page_shows_which_tokens_agents_still_use(tmp_path, embedder, monkeypatch):
    path = tmp_path / "activity.duckdb"
    _bank(path, embedder)
    with MemoryBank.open(path, embedder=embedder) as bank:
        busy, _ = bank.tokens.create("busy-agent", ["alice"])
        bank.tokens.create("idle-agent", ["alice"])
        with bank.acting_as(busy.actor):
            bank.add("Alice takes the train", namespace="alice")
            for q in ("how does she travel", "what does she drink"):
                bank.recall(q, namespace="alice")
    at = _app(path, monkeypatch)
    table = at.dataframe[0].value.set_index("name")
    assert (table.loc["busy-agent", "changes (30 d)"], table.loc["busy-agent", "recalls (30 d)"]) == (1, 2)
    assert (table.loc["idle-agent", "changes (30 d)"], table.loc["idle-agent", "recalls (30 d)"]) == (0, 0)
    used, idle = table.loc["busy-agent", "last used"], table.loc["idle-agent", "last used"]
    assert table.loc["busy-agent", "created"].endswith(" UTC")  # one time zone throughout, said on every time
    assert used.endswith(" UTC") and used[:4].isdigit() and idle == "never"  # not "None" for a token never used
    at.selectbox(key="revoke-name").set_value("busy-agent").run()
    assert any("Last used" in c.value for c in at.caption)
    at.selectbox(key="revoke-name").set_value("idle-agent").run()
    assert any("Never used." in c.value for c in at.caption)


def test_a_token_rotated_on_the_page_refuses_its_old_secret_on_the_running_server(tmp_path, embedder, monkeypatch):
    path = tmp_path / "rotate.duckdb"
    _bank(path, embedder)
    with MemoryBank.open(path, embedder=embedder) as bank:
        _, old = bank.tokens.create("alice-agent", ["alice"])
    at = _app(path, monkeypatch)
    server = Served(path)
    try:
        _confirmed(at, "alice-agent", "rotate")
        [new] = _secrets(at)
        assert new != old and any("New secret for" in s.value for s in at.success)
        with server.client(old) as before, server.client(new) as after:
            assert before.post("/v1/recall", json={"query": "tea"}).status_code == 401
            assert after.post("/v1/recall", json={"query": "tea"}).status_code == 200
        assert at.dataframe[0].value["name"].tolist() == ["alice-agent"]
    finally:
        server.stop()


def test_revoking_needs_a_confirmation(tmp_path, embedder, monkeypatch):
    path = tmp_path / "confirm.duckdb"
    _bank(path, embedder)
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.tokens.create("keep-me", ["alice"])
    at = _app(path, monkeypatch)
    assert at.button(key="revoke").disabled and at.button(key="rotate").disabled
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert [t.name for t in bank.tokens.list()] == ["keep-me"]
