"""Access tokens (memory_core.tokens): checked on every request, so the check is cheap and never
stale. The server's end-to-end token behaviour (401, 403, revoking with the CLI) is in
test_server.py and test_mcp.py."""

from __future__ import annotations

import threading

from memory_core import MemoryBank


def test_a_token_check_does_not_wait_for_a_write_in_progress(bank):
    """A server's writer holds the bank's lock for a whole group of adds; the requests arriving
    meanwhile must still get their token checked, or they cannot even join the next group."""
    token, secret = bank.tokens.create("agent", ["a"])
    bank.add("keeps the file leased", namespace="a")
    assert bank.tokens.check(secret) == token  # confirmed once under the lock
    core = bank._core
    holding, release = threading.Event(), threading.Event()

    def long_write() -> None:
        with core.lock:
            holding.set()
            release.wait(30)

    writer = threading.Thread(target=long_write)
    writer.start()
    holding.wait(10)
    try:
        checked: list = []
        checker = threading.Thread(target=lambda: checked.append(bank.tokens.check(secret)))
        checker.start()
        checker.join(5)
        assert checked == [token], "the token check waited for the bank's lock"
        assert bank.tokens.check("mct_not-a-token") is None
    finally:
        release.set()
        writer.join()


def test_a_token_revoked_through_another_bank_object_is_refused_at_once(bank_path, embedder):
    with MemoryBank.open(bank_path, embedder=embedder) as served, \
            MemoryBank.open(bank_path, embedder=embedder) as other:
        _, secret = served.tokens.create("temp", ["a"])
        served.add("keeps the file leased", namespace="a")
        assert served.tokens.check(secret) is not None
        other.tokens.revoke("temp")  # the same process, so the same lease of the file
        assert served.tokens.check(secret) is None
