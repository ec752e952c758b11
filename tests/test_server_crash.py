"""A server killed with SIGKILL under 8 concurrent writers loses no acknowledged write."""

from __future__ import annotations

import threading
import time

import httpx

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
