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
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

CHANNEL = "memctl_change"
TRIGGER = "memctl_change_notify"

# PostgreSQL-only DDL, run by PostgresStore.initialize after the schema's migrations (idempotent).
TRIGGER_DDL = (
    f"""CREATE OR REPLACE FUNCTION {TRIGGER}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM pg_notify('{CHANNEL}', current_schema() || ':' || NEW.value);
        RETURN NULL;
    END $$""",
    f"""CREATE OR REPLACE TRIGGER {TRIGGER} AFTER UPDATE ON meta FOR EACH ROW
    WHEN (NEW.key = 'change_seq' AND NEW.value IS DISTINCT FROM OLD.value) EXECUTE FUNCTION {TRIGGER}()""",
)


class ChangeListener:
    """A thread that listens for a bank's change numbers (see the module's docstring)."""

    def __init__(self, url: str):
        self.url = url
        self._seq: int | None = None  # the latest change number, None while not listening
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

    def _run(self) -> None:
        import psycopg

        delay = 0.1
        while not self._stopped.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as conn:
                    self._conn = conn
                    conn.execute(f"LISTEN {CHANNEL}")
                    schema_name = conn.execute("SELECT current_schema()").fetchone()[0]
                    armed = conn.execute("SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                                         "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE t.tgname = %s "
                                         "AND c.relname = 'meta' AND n.nspname = %s",
                                         [TRIGGER, schema_name]).fetchone()[0]
                    if not armed:  # a bank no writer of this version opened yet: ask instead
                        self._stopped.wait(5.0)
                        continue
                    row = conn.execute("SELECT value FROM meta WHERE key = 'change_seq'").fetchone()
                    self._set(int(row[0]) if row else 0)
                    delay = 0.1
                    prefix = schema_name + ":"
                    while not self._stopped.is_set():
                        for note in conn.notifies(timeout=1.0):
                            if note.payload.startswith(prefix):
                                self._set(int(note.payload[len(prefix):]))
            except Exception:  # noqa: BLE001 - any failure: not listening until reconnected
                pass
            finally:
                self._conn = None
                self._set(None)
            self._stopped.wait(delay)
            delay = min(delay * 2, 5.0)
