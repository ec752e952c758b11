"""Faults under load with real `memctl serve` processes over one PostgreSQL database.

- SIGKILL of one of two servers while 4 clients write: every acknowledged id is in the database
  (read directly and through the other server), and the other server answers throughout.
- ``pg_ctlcluster 15 main restart`` while 4 clients write to a server: the clients get only
  successes or retriable 503s with Retry-After (never a 500, never a hang), the server reconnects
  by itself, nothing acknowledged is lost. Other jobs use this PostgreSQL too: the test waits until
  it accepts connections again before it ends, whatever happened.

Marked ``crash`` (the file) and ``postgres``: ``make test`` runs them in its second pass, alone.
"""

from __future__ import annotations

import subprocess
import threading
import time
from typing import Callable

import httpx
import psycopg
import pytest

import stores
from bench import pg_servers
from memctl_server import Served

pytestmark = pytest.mark.postgres

CLIENTS = 4


def _stored(url: str, ids: list[int]) -> dict[int, str]:
    with psycopg.connect(url) as con:
        return dict(con.execute("SELECT id, text FROM memories WHERE id = ANY(%s)", [ids]).fetchall())


def _until(done: Callable[[], bool], seconds: float) -> None:
    """Wait while the load runs until ``done()`` or ``seconds`` pass (the asserts after say which)."""
    deadline = time.monotonic() + seconds
    while not done() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_sigkill_of_one_server_loses_nothing_and_the_other_keeps_answering(pg_url):
    a, b, token = pg_servers.two_servers(pg_url)
    headers = {"Authorization": f"Bearer {token}"}
    acked: dict[int, str] = {}
    failed_on_b: list[str] = []
    probes: list[tuple[int, float]] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(i: int) -> None:
        """Clients 0 and 1 write to A until it dies, then to B (what a load balancer does); 2 and 3 to B."""
        urls = [a.url, b.url] if i < 2 else [b.url]
        n = 0
        while urls and not stop.is_set():
            with httpx.Client(base_url=urls[0], headers=headers, timeout=30) as c:
                while not stop.is_set():
                    text = f"writer {i} memory {n} about the garden"
                    n += 1
                    try:
                        r = c.post("/v1/memories", json={"text": text, "namespace": "shared",
                                                         "detect_conflicts": n % 2 == 0})
                    except httpx.HTTPError as exc:
                        if urls[0] == b.url:
                            failed_on_b.append(repr(exc))
                        break  # never acknowledged; on to the next server
                    if r.status_code == 201:
                        with lock:
                            acked[r.json()["id"]] = text
                    elif urls[0] == b.url:
                        failed_on_b.append(f"{r.status_code} {r.text[:200]}")
            urls.pop(0)

    def probe() -> None:
        """B answers throughout: a recall every 50 ms, each timed."""
        with httpx.Client(base_url=b.url, headers=headers, timeout=30) as c:
            while not stop.is_set():
                t = time.perf_counter()
                try:
                    status = c.post("/v1/recall", json={"query": "garden", "namespace": "shared",
                                                        "record": False}).status_code
                except httpx.HTTPError:
                    status = -1
                probes.append((status, time.perf_counter() - t))
                time.sleep(0.05)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(CLIENTS)] + [threading.Thread(target=probe)]
    try:
        for t in threads:
            t.start()
        _until(lambda: len(acked) >= 30, 90)
        at_kill = len(acked)
        a.kill()  # SIGKILL, with writes in flight
        _until(lambda: len(acked) >= at_kill + 30, 60)  # the load goes on, on B
    finally:
        stop.set()
        for t in threads:
            t.join()
    try:
        assert at_kill >= 30 and len(acked) >= at_kill + 30, (a.output()[-2000:], b.output()[-2000:])
        assert failed_on_b == [], failed_on_b[:5]
        assert probes and all(status == 200 for status, _ in probes), [p for p in probes if p[0] != 200][:5]
        ids = sorted(acked)
        assert _stored(pg_url, ids) == acked, "every acknowledged memory is in the database"
        with b.client(token) as c:  # and B returns each
            for mid, text in acked.items():
                r = c.get(f"/v1/memories/{mid}")
                assert r.status_code == 200 and r.json()["text"] == text, (mid, r.text)
        worst = max(s for _, s in probes)
        print(f"\n[sigkill] {at_kill} acknowledged before A was killed, {len(acked)} in all, every one stored; "
              f"B answered {len(probes)} probe recalls meanwhile, slowest {1000 * worst:.0f} ms")
    finally:
        assert b.stop() == 0, b.output()[-2000:]


def _wait_for_postgres(seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while stores.check_server() is not None:
        if time.monotonic() > deadline:
            raise AssertionError(f"PostgreSQL did not come back within {seconds:g} s: {stores.check_server()}")
        time.sleep(0.5)


def test_a_postgresql_restart_under_load_costs_only_retriable_503s(pg_url):
    from memory_core import MemoryBank

    with MemoryBank.open(pg_url) as bank:
        _, token = bank.tokens.create("agents", ["shared"])
    server = Served(pg_url)
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=120) as c:  # the model loaded
        c.post("/v1/memories", json={"text": "warming up"}).raise_for_status()
        c.post("/v1/recall", json={"query": "warming up", "record": False}).raise_for_status()
    acked: dict[int, str] = {}
    answers: list[tuple[str, int, str | None]] = []  # (route, status, Retry-After)
    broken: list[str] = []  # timeouts, refused connections, anything but an HTTP answer
    lock = threading.Lock()
    stop = threading.Event()
    restarted_at: list[float] = []
    acked_after: list[int] = []

    def client(i: int) -> None:
        with httpx.Client(base_url=server.url, headers=headers, timeout=30) as c:
            n = 0
            while not stop.is_set():
                n += 1
                text = f"client {i} memory {n} about the weekend"
                try:
                    r = c.post("/v1/memories", json={"text": text, "detect_conflicts": n % 2 == 0})
                    answers.append(("add", r.status_code, r.headers.get("retry-after")))
                    if r.status_code == 201:
                        with lock:
                            acked[r.json()["id"]] = text
                            if restarted_at:
                                acked_after.append(r.json()["id"])
                    if n % 3 == 0:
                        q = c.post("/v1/recall", json={"query": f"weekend {n}", "record": n % 2 == 0})
                        answers.append(("recall", q.status_code, q.headers.get("retry-after")))
                except httpx.HTTPError as exc:
                    broken.append(repr(exc))
                if answers and answers[-1][1] == 503:
                    time.sleep(float(answers[-1][2] or 1))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    try:
        for t in threads:
            t.start()
        _until(lambda: len(acked) >= 20, 90)
        before_restart = len(acked)
        done = subprocess.run(["pg_ctlcluster", "15", "main", "restart"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        _wait_for_postgres()
        restarted_at.append(time.monotonic())
        _until(lambda: len(acked_after) >= 20, 60)  # the server reconnects by itself: acknowledged adds again
    finally:
        stop.set()
        for t in threads:
            t.join()
        _wait_for_postgres()  # other jobs use this server: never leave it down
    try:
        statuses = sorted({s for _, s, _ in answers})
        print(f"\n[pg restart] {before_restart} adds acknowledged before the restart, {len(acked_after)} after; "
              f"answers: {', '.join(f'{s}: {sum(1 for _, x, _ in answers if x == s)}' for s in statuses)}")
        assert broken == [], broken[:5]
        assert set(statuses) <= {200, 201, 503}, [a for a in answers if a[1] not in (200, 201, 503)][:5]
        assert all(retry is not None for _, s, retry in answers if s == 503), "every 503 says when to retry"
        assert before_restart >= 20 and len(acked_after) >= 20, server.output()[-3000:]
        assert _stored(pg_url, sorted(acked)) == acked, "nothing acknowledged is lost"
    finally:
        assert server.stop() == 0, server.output()[-3000:]
