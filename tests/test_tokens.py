"""Access tokens (memory_core.services.tokens): checked on every request, so the check is cheap and never
stale. The server's end-to-end token behaviour (401, 403, revoking with the CLI) is in
test_server.py and test_mcp.py."""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timedelta, timezone

import pytest
from click.testing import CliRunner

from memory_core import MemoryBank, NotFoundError, ValidationError
from memory_core.cli import cli


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
        _wait(lambda: served._store.known_signature() in (None, served.seen_seq), "the add's notification")
        assert served.tokens.check(secret) == token
        assert served.tokens.check_at_once(secret) == (True, token)
        assert served.tokens.check_at_once("mct_not-a-token") == (True, None)
        before = served._store.known_signature()  # a number while PostgreSQL notifies, else None
        with MemoryBank.open(bank_path, embedder=embedder) as other:
            other.tokens.revoke("temp")
            _wait(lambda: before is None or served._store.known_signature() != before, "the revoke's notification")
            known, stale = served.tokens.check_at_once(secret)
            assert stale is None, "the revoked token was taken from the old cache"
            assert served.tokens.check(secret) is None


@pytest.mark.postgres
def test_memories_written_elsewhere_leave_the_cached_tokens_confirmed(pg_url, embedder):
    """On PostgreSQL every write moves the change number, and another server writes all the time.
    The tokens are read again when a token changes (a notification of their own), not on every
    request after another server's add: a token check then costs the request no round trip."""
    with MemoryBank.open(pg_url, embedder=embedder) as served, \
            MemoryBank.open(pg_url, embedder=embedder) as other:
        token, secret = served.tokens.create("agent", ["a"])
        served.watch_changes()  # as memctl serve does
        _wait(lambda: served._store.known_tokens_version() is not None, "the listener")
        assert served.tokens.check(secret) == token
        for i in range(3):
            other.add(f"another server's memory {i}", namespace="a")
        _wait(lambda: served._store.known_signature() == other.seen_seq, "the adds' notifications")
        assert [m.text for m in served.memories("a")][0] == "another server's memory 2"  # caught up
        assert served.tokens.check_at_once(secret) == (True, token)
        other.tokens.revoke("agent")
        _wait(lambda: served.tokens.check_at_once(secret) != (True, token), "the revoke's notification")
        assert served.tokens.check(secret) is None


def _wait(done, what: str, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, f"{what} did not arrive within {seconds:g} s"
        time.sleep(0.01)


def test_activity_tells_which_tokens_are_still_used(bank):
    """What an operator reads before revoking: a token's latest change and recall and how many of
    each lately, from what was done in its name; an unused token has none, and the bank's own
    work (the dashboard, a script) counts for no token."""
    used, _ = bank.tokens.create("agent", ["a"])
    bank.tokens.create("idle", ["a"])
    bank.add("made by the bank itself", namespace="a")
    bank.recall("made by the bank", namespace="a")
    with bank.acting_as(used.actor):
        mid = bank.add("Prefers tea in the morning", namespace="a")
        bank.update(mid, importance=0.9)
        bank.recall("what does she drink", namespace="a")
    activity = bank.tokens.activity()
    assert set(activity) == {"agent", "idle"}
    agent, idle = activity["agent"], activity["idle"]
    assert (agent.changes, agent.recalls) == (2, 1)
    assert agent.last_change is not None and agent.last_recall is not None
    assert agent.last_used == max(agent.last_change, agent.last_recall)
    assert (idle.changes, idle.recalls, idle.last_used) == (0, 0, None)
    # Counted over the last `days` only; the latest use is kept however old.
    later = bank.tokens.activity(days=1, now=datetime.now(timezone.utc) + timedelta(days=3))["agent"]
    assert (later.changes, later.recalls) == (0, 0) and later.last_used == agent.last_used
    # A revoked token is no longer listed, though its history stays.
    bank.tokens.revoke("agent")
    assert set(bank.tokens.activity()) == {"idle"}
    with pytest.raises(ValidationError):
        bank.tokens.activity(days=0)


def test_memctl_token_list_says_when_each_token_was_last_used(bank_path, embedder):
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        used, _ = bank.tokens.create("agent", ["a"])
        bank.tokens.create("idle", ["a"])
        with bank.acting_as(used.actor):
            bank.add("Prefers tea", namespace="a")
    runner = CliRunner()
    out = runner.invoke(cli, ["--bank", str(bank_path), "token", "list"])
    assert out.exit_code == 0, out.output
    lines = dict(line.split("\t", 1) for line in out.output.splitlines())
    assert "last used" in lines["agent"] and "1 change and 0 recalls in 30 days" in lines["agent"]
    assert lines["idle"].endswith("never used")
    listed = json.loads(runner.invoke(cli, ["--bank", str(bank_path), "token", "list", "--json"]).output)
    by_name = {t["name"]: t for t in listed}
    assert by_name["agent"]["changes_30d"] == 1 and by_name["agent"]["last_used"] is not None
    assert by_name["idle"]["last_used"] is None and "secret" not in json.dumps(listed)


def test_a_rotated_token_keeps_its_scope_and_history_with_a_new_secret(bank_path, embedder):
    """A leaked secret: rotating refuses the old secret at once (also to another bank object that
    had it cached), the new one works with the same namespaces, and the history keeps the name."""
    with MemoryBank.open(bank_path, embedder=embedder) as bank, \
            MemoryBank.open(bank_path, embedder=embedder) as serving:
        token, old = bank.tokens.create("agent", ["a", "b"], read_only=True)
        with bank.acting_as(token.actor):
            bank.recall("anything", namespace="a")
        assert serving.tokens.check(old) == token  # cached there
        same, new = bank.tokens.rotate("agent")
        assert new != old and same == token
        assert bank.tokens.check(old) is None and serving.tokens.check(old) is None
        assert serving.tokens.check(new) == token
        assert bank.tokens.activity()["agent"].recalls == 1
        assert [e.action for e in bank.events(action="rotate_token")] == ["rotate_token"]
        with pytest.raises(NotFoundError):
            bank.tokens.rotate("nobody")
        assert [t.name for t in bank.tokens.list()] == ["agent"]
    out = CliRunner().invoke(cli, ["--bank", str(bank_path), "token", "rotate", "agent"])
    assert out.exit_code == 0, out.output
    newest = out.stdout.strip().splitlines()[-1]
    assert newest.startswith("mct_") and newest != new
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        assert bank.tokens.check(newest) == token and bank.tokens.check(new) is None
    missing = CliRunner().invoke(cli, ["--bank", str(bank_path), "token", "rotate", "nobody"])
    assert missing.exit_code != 0 and "no token named 'nobody'" in missing.output


def test_activity_for_the_tokens_a_caller_listed(bank):
    """A page lists the tokens, then asks for their activity: a token revoked in between (by
    another process) still gets its row, with what was done under it, instead of a missing key."""
    token, _ = bank.tokens.create("agent", ["a"])
    listed = bank.tokens.list()
    with bank.acting_as(token.actor):
        bank.add("Prefers tea", namespace="a")
    bank.tokens.revoke("agent")
    assert bank.tokens.activity(names=[t.name for t in listed])["agent"].changes == 1
    assert bank.tokens.activity() == {}
