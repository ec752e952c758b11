"""Exposed safely: loopback by default; any other address without a password is refused.

The real server on 0.0.0.0 is driven in a browser in test_browser.py; here the same check through
AppTest (every page, with and without a password), the address rules, the project's Streamlit
config, and the password comparison going through a constant-time compare.
"""

from __future__ import annotations

import hmac
import logging
import tomllib
from pathlib import Path

import pytest
from streamlit import config as st_config
from streamlit.testing.v1 import AppTest

from memory_core import MemoryBank
from dashboard.common import is_loopback, password_matches

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")


@pytest.fixture
def exposed_bank(tmp_path, embedder, monkeypatch):
    path = tmp_path / "exposed.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add("Keeps a diary in Esperanto", namespace="alice")
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    monkeypatch.delenv("MEMCTL_DASHBOARD_PASSWORD", raising=False)
    yield path
    st_config.set_option("server.address", "127.0.0.1")  # as conftest.py sets it for every other test


def test_the_project_config_listens_on_loopback():
    conf = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert conf["server"]["address"] == "127.0.0.1"


@pytest.mark.parametrize("address,loopback", [
    ("127.0.0.1", True), ("127.0.0.53", True), ("localhost", True), ("::1", True), ("[::1]", True),
    ("0.0.0.0", False), ("::", False), ("192.168.1.20", False), ("example.com", False), ("", False), (None, False),
])
def test_which_addresses_are_loopback(address, loopback):
    assert is_loopback(address) is loopback


@pytest.mark.parametrize("address", ["0.0.0.0", "192.168.1.20", None])
@pytest.mark.parametrize("page", [None, "dashboard/browse.py", "dashboard/tune.py"])
def test_exposed_without_a_password_every_page_refuses(exposed_bank, caplog, address, page):
    st_config.set_option("server.address", address)
    caplog.set_level(logging.ERROR, logger="memory_console.dashboard")
    at = AppTest.from_file(APP, default_timeout=60).run()
    if page:
        at.switch_page(page).run()
    assert not at.exception
    assert len(at.error) == 1 and "refuses to serve" in at.error[0].value
    assert "MEMCTL_DASHBOARD_PASSWORD" in at.error[0].value and "127.0.0.1" in at.error[0].value
    assert not at.metric and not at.dataframe and not at.text_input  # nothing of the bank, no form
    assert any("refuses to serve" in r.getMessage() for r in caplog.records)


def test_exposed_with_a_password_asks_for_it(exposed_bank, monkeypatch):
    st_config.set_option("server.address", "0.0.0.0")
    monkeypatch.setenv("MEMCTL_DASHBOARD_PASSWORD", "correct horse")
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception and not at.error
    assert [t.label for t in at.text_input] == ["Password"]
    assert all("correct horse" not in str(e.proto) for e in at.main)  # never echoed into the page


def test_on_loopback_no_password_is_needed(exposed_bank):
    st_config.set_option("server.address", "127.0.0.1")
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception and not at.error and at.metric


def test_the_password_check_is_constant_time(monkeypatch):
    """Comparing goes through hmac.compare_digest (time independent of where a guess goes wrong)."""
    calls = []
    real = hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    monkeypatch.setenv("MEMCTL_DASHBOARD_PASSWORD", "correct horse")
    assert password_matches("correct horse") and not password_matches("correct horsf")
    assert len(calls) == 2 and calls[0] == (b"correct horse", b"correct horse")
