"""Access tokens (memory_core.tokens): checked on every request, so the check is cheap and never
stale. The server's end-to-end token behaviour (401, 403, revoking with the CLI) is in
test_server.py and test_mcp.py."""

from __future__ import annotations

import threading
import time

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


def test_a_token_is_checked_at_once_only_while_the_cached_tokens_are_known_true(bank_path, embedder):
    """The server checks a token on its event loop when the cache is confirmed without the store
    (the file still leased by this bank alone, or a notified change number the tokens were read
    at); after a revoke through another bank object it must not answer from the old cache."""
    with MemoryBank.open(bank_path, embedder=embedder) as served:
        served.watch_changes()  # as memctl serve does (a PostgreSQL bank: notifications)
        token, secret = served.tokens.create("temp", ["a"])
        served.add("keeps the file leased", namespace="a")
        # The add's own notification arrives a moment later and moves what confirms the cache:
        # wait for it, as a server's next request would find it arrived.
        deadline = time.monotonic() + 5
        while served._store.known_signature() not in (None, served.seen_seq):
            assert time.monotonic() < deadline, "the add's notification did not arrive"
            time.sleep(0.01)
        assert served.tokens.check(secret) == token
        assert served.tokens.check_at_once(secret) == (True, token)
        assert served.tokens.check_at_once("mct_not-a-token") == (True, None)
        before = served._store.known_signature()  # a number while PostgreSQL notifies, else None
        with MemoryBank.open(bank_path, embedder=embedder) as other:
            other.tokens.revoke("temp")
            deadline = time.monotonic() + 5
            while before is not None and served._store.known_signature() == before:
                assert time.monotonic() < deadline, "the revoke's notification did not arrive"
                time.sleep(0.01)
            known, stale = served.tokens.check_at_once(secret)
            assert stale is None, "the revoked token was taken from the old cache"
            assert served.tokens.check(secret) is None
