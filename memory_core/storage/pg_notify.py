"""Change notifications of a PostgreSQL bank: LISTEN/NOTIFY instead of asking on every recall.

A trigger on the ``meta`` row ``change_seq`` sends ``NOTIFY memctl_change, '<schema>:<seq>'``
whenever a transaction advances the change sequence; PostgreSQL delivers it when (and only if)
the transaction commits, in commit order. :class:`ChangeListener` keeps one connection of its own
listening and remembers the latest number, so a process learns within milliseconds that another
one wrote, without polling: :meth:`PostgresStore.wait_for_change` waits on it (a client that got
a change number from one server asks another for read-your-writes). Recall does not trust it
(a notification arrives after the commit it announces; :meth:`PostgresStore.signature` reads the
sequence). While the listener is not connected (starting, the server restarting) it knows
nothing; a notification lost during a disconnect cannot leave it stale, because it reads the
sequence again after every (re)connect, after its ``LISTEN``.

A second trigger, on the ``tokens`` table, sends ``NOTIFY memctl_tokens, '<schema>'`` whenever
a statement changes it, whoever runs it. The listener counts those (:meth:`ChangeListener.tokens_version`),
so a server's cached tokens stay confirmed while memories are written and are read again once a
token changes: before, every add moved the change number and the next request read the tokens.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

CHANNEL = "memctl_change"
TRIGGER = "memctl_change_notify"
TOKENS_CHANNEL = "memctl_tokens"
TOKENS_TRIGGER = "memctl_tokens_notify"

# PostgreSQL-only DDL, run by PostgresStore.initialize after the schema's migrations (idempotent).
TRIGGER_DDL = (
    f"""CREATE OR REPLACE FUNCTION {TRIGGER}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_notify('{CHANNEL}', current_schema() || ':' || NEW.value);
        RETURN NULL;
    END $$""",
    f"""CREATE OR REPLACE TRIGGER {TRIGGER} AFTER UPDATE ON meta FOR EACH ROW
    WHEN (NEW.key = 'change_seq' AND NEW.value IS DISTINCT FROM OLD.value) EXECUTE FUNCTION {TRIGGER}()""",
    f"""CREATE OR REPLACE FUNCTION {TOKENS_TRIGGER}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_notify('{TOKENS_CHANNEL}', current_schema());
        RETURN NULL;
    END $$""",
    f"""CREATE OR REPLACE TRIGGER {TOKENS_TRIGGER} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON tokens
    FOR EACH STATEMENT EXECUTE FUNCTION {TOKENS_TRIGGER}()""",
)


class ChangeListener:
    """A thread that listens for a bank's change numbers (see the module's docstring)."""

    def __init__(self, url: str):
        self.url = url
        self._seq: int | None = None  # the latest change number, None while not listening
        self._tokens: int | None = None  # counts token changes heard; None while not hearing them
        self._tokens_heard = 0  # every notification and (re)connect counts: a new value each time
        self._cond = threading.Condition()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory-bank-listen", daemon=True)
        self._conn: Any = None

    def start(self) -> "ChangeListener":
        self._thread.start()
        return self

    def latest(self) -> int | None:
        """The bank's latest change number as notified, or None when not listening right now."""
        return self._seq

    def tokens_version(self) -> int | None:
        """A number that changes whenever the bank's tokens may have changed (a notification, a
        reconnect after which some may have been missed), or None while not hearing of it."""
        return self._tokens

    def wait_for(self, seq: int, timeout: float) -> bool:
        """Wait until change ``seq`` (or a later one) is known; False after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._seq is None or self._seq < seq:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def halt(self) -> None:
        """Ask the thread to stop (it does within a second), without waiting for it."""
        self._stopped.set()

    def stop(self) -> None:
        """Stop the thread and wait for it (briefly)."""
        self._stopped.set()
        conn = self._conn
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.cancel()
        self._thread.join(timeout=2)

    def _set(self, seq: int | None) -> None:
        with self._cond:
            if seq is None:
                self._seq = None
            elif self._seq is None or seq > self._seq:
                self._seq = seq
            self._cond.notify_all()

    def _heard_tokens(self, listening: bool) -> None:
        self._tokens_heard += 1
        self._tokens = self._tokens_heard if listening else None

    def _run(self) -> None:
        import psycopg

        delay = 0.1
        while not self._stopped.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as conn:
                    self._conn = conn
                    conn.execute(f"LISTEN {CHANNEL}")
                    conn.execute(f"LISTEN {TOKENS_CHANNEL}")
                    schema_name = conn.execute("SELECT current_schema()").fetchone()[0]
                    armed = {r[0] for r in conn.execute(
                        "SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE t.tgname IN (%s, %s) "
                        "AND c.relname IN ('meta', 'tokens') AND n.nspname = %s",
                        [TRIGGER, TOKENS_TRIGGER, schema_name]).fetchall()}
                    if TRIGGER not in armed:  # a bank no writer of this version opened yet: ask instead
                        self._stopped.wait(5.0)
                        continue
                    row = conn.execute("SELECT value FROM meta WHERE key = 'change_seq'").fetchone()
                    self._set(int(row[0]) if row else 0)
                    hears_tokens = TOKENS_TRIGGER in armed  # else a bank no writer of this version opened
                    self._heard_tokens(hears_tokens)
                    delay = 0.1
                    prefix = schema_name + ":"
                    while not self._stopped.is_set():
                        for note in conn.notifies(timeout=1.0):
                            if note.channel == TOKENS_CHANNEL:
                                if note.payload == schema_name:
                                    self._heard_tokens(hears_tokens)
                            elif note.payload.startswith(prefix):
                                self._set(int(note.payload[len(prefix):]))
            except Exception:  # noqa: BLE001 - any failure: not listening until reconnected
                pass
            finally:
                self._conn = None
                self._heard_tokens(False)
                self._set(None)
            self._stopped.wait(delay)
            delay = min(delay * 2, 5.0)
