"""A server killed with SIGKILL under 8 concurrent writers loses no acknowledged write."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from memory_core import MemoryBank
from memctl_server import Served

CLIENTS = 8


def test_sigkill_during_concurrent_adds_loses_no_acknowledged_write(tmp_path):
    path = tmp_path / "bank.duckdb"
    with MemoryBank.open(path) as bank:
        _, secret = bank.tokens.create("agents", ["crash"])
    server = Served(path)
    acked: dict[int, str] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def writer(i: int) -> None:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {secret}"}, timeout=30) as c:
            n = 0
            while not stop.is_set():
                text = f"writer {i} memory {n}: likes tea number {n}"
                n += 1
                try:
                    r = c.post("/v1/memories", json={"text": text})
                except httpx.HTTPError:
                    return  # the server is gone: this write was never acknowledged
                if r.status_code == 201:
                    with lock:
                        acked[r.json()["id"]] = text

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while len(acked) < 40 and time.monotonic() < deadline:  # kill it mid-load, with writes in flight
        time.sleep(0.05)
    server.kill()
    stop.set()
    for t in threads:
        t.join()
    assert len(acked) >= 40, server.output()

    # The next server (or any process) opens the bank and finds every acknowledged memory.
    restarted = Served(path)
    try:
        with restarted.client(secret) as c:
            for mid, text in acked.items():
                r = c.get(f"/v1/memories/{mid}")
                assert r.status_code == 200 and r.json()["text"] == text, (mid, r.text)
            assert c.post("/v1/memories", json={"text": "written after the restart"}).status_code == 201
    finally:
        restarted.stop()


def _gathered_load(path) -> None:
    """8 clients add, 2 recall (their queries share the model with the adds' batches), and one
    client gives up on each add before its answer comes (a disconnect mid-batch); SIGKILL while
    all of it runs. After a restart every acknowledged add is there exactly once, and no memory
    at all is there twice (each text is sent once)."""
    with MemoryBank.open(path) as bank:
        _, secret = bank.tokens.create("agents", ["crash"])
        bank.add("seed memory so recall has something to rank")
    server = Served(path)
    headers = {"Authorization": f"Bearer {secret}"}
    acked: dict[int, str] = {}
    sent: set[str] = set()
    lock = threading.Lock()
    stop = threading.Event()

    def writer(i: int) -> None:
        with httpx.Client(base_url=server.url, headers=headers, timeout=30) as c:
            n = 0
            while not stop.is_set():
                text = f"writer {i} memory {n}: prefers green tea at {n} o'clock"
                n += 1
                with lock:
                    sent.add(text)
                try:
                    r = c.post("/v1/memories", json={"text": text})
                except httpx.HTTPError:
                    return  # the server is gone: this write was never acknowledged
                if r.status_code == 201:
                    with lock:
                        acked[r.json()["id"]] = text

    def quitter() -> None:
        n = 0
        while not stop.is_set():
            text = f"impatient memory {n}: sent and left before the answer"
            n += 1
            with lock:
                sent.add(text)
            try:  # a new connection each time, closed before the answer: the server sees a disconnect
                with httpx.Client(base_url=server.url, headers=headers, timeout=0.002) as c:
                    c.post("/v1/memories", json={"text": text})
            except httpx.HTTPError:
                pass
            time.sleep(0.01)

    def recaller() -> None:
        with httpx.Client(base_url=server.url, headers=headers, timeout=30) as c:
            n = 0
            while not stop.is_set():
                n += 1
                try:
                    c.post("/v1/recall", json={"query": f"who prefers tea at {n} o'clock?"})
                except httpx.HTTPError:
                    return

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(CLIENTS)]
    threads += [threading.Thread(target=quitter)] + [threading.Thread(target=recaller) for _ in range(2)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 90
    while len(acked) < 80 and time.monotonic() < deadline:
        time.sleep(0.05)
    server.kill()
    stop.set()
    for t in threads:
        t.join()
    assert len(acked) >= 80, server.output()

    with MemoryBank.open(path) as bank:
        stored = bank.memories(status=None, limit=None)
    texts = [m.text for m in stored]
    by_id = {m.id: m.text for m in stored}
    for mid, text in acked.items():
        assert by_id.get(mid) == text, (mid, text)
    doubled = {t for t in texts if texts.count(t) > 1}
    assert not doubled, sorted(doubled)[:5]
    assert set(texts) <= sent | {"seed memory so recall has something to rank"}

    restarted = Served(path)
    try:
        with restarted.client(secret) as c:
            assert c.post("/v1/memories", json={"text": "written after the restart"}).status_code == 201
    finally:
        restarted.stop()


def test_sigkill_during_gathered_batches_keeps_each_acknowledged_add_once(tmp_path):
    _gathered_load(tmp_path / "bank.duckdb")


@pytest.mark.postgres
def test_sigkill_during_gathered_batches_keeps_each_acknowledged_add_once_on_postgresql(pg_url):
    _gathered_load(pg_url)
