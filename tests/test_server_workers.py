"""`memctl serve --workers N` over a PostgreSQL bank: several processes on one port.

A real supervisor and its workers (``memctl --bank postgresql://... serve --workers 2`` on a free
loopback port), spoken to over HTTP with a new connection per request, as many clients would:
both workers answer; a write through one is read through the other; the request metrics are
summed over the workers; a killed worker is started again and no request fails meanwhile;
SIGTERM stops every worker with every acknowledged add stored; a killed supervisor leaves no
worker behind; a bank file refuses several workers, and a port in use is a clear error.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest

from memory_core import MemoryBank
from tests.memctl_server import Served, memctl


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _fresh(url: str, path: str, token: str | None = None, **kwargs) -> httpx.Response:
    """One request on a connection of its own (no keep-alive): the kernel picks the worker."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        return client.request(kwargs.pop("method", "GET"), path, **kwargs)


def _workers_seen(url: str, requests: int = 40) -> list[int]:
    return [_fresh(url, "/v1/health").json()["worker"] for _ in range(requests)]


def _health_count(url: str, admin: str) -> float:
    text = _fresh(url, "/metrics", admin).text
    match = re.search(r'^memctl_requests_total\{method="GET",route="/v1/health",status="200"\} (\S+)$', text, re.M)
    return float(match.group(1)) if match else 0.0


def _start(url: str) -> Served:
    """A supervisor with two workers over the database at ``url``, both answering; tokens for
    alice and an admin."""
    with MemoryBank.open(url) as bank:
        alice = bank.tokens.create("alice", ["alice"])[1]
        admin = bank.tokens.create("ops", [], admin=True)[1]
    server = Served(url, "--workers", "2")
    server.alice, server.admin = alice, admin
    deadline = time.monotonic() + 120
    while set(_workers_seen(server.url, 10)) != {1, 2}:  # both loaded their model
        assert time.monotonic() < deadline, server.output()[-3000:]
    return server


@pytest.fixture(scope="module")
def two_workers(pg_databases):
    """Two workers shared by the tests that leave them running."""
    server = _start(pg_databases())
    yield server
    assert server.stop(timeout=60) == 0, server.output()[-3000:]


@pytest.fixture
def own(pg_url):
    """Two workers for a test that stops them."""
    server = _start(pg_url)
    yield server
    if server.proc.poll() is None:
        server.stop(timeout=60)


def test_both_workers_answer_on_one_port(two_workers):
    seen = _workers_seen(two_workers.url)
    assert set(seen) == {1, 2}, seen
    # Spread, not all but one to one worker.
    assert min(seen.count(1), seen.count(2)) >= 5, seen
    assert len(_children(two_workers.proc.pid)) == 2


def test_a_write_through_one_worker_is_read_through_either(two_workers):
    for i in range(6):
        added = _fresh(two_workers.url, "/v1/memories", two_workers.alice, method="POST",
                       json={"text": f"Parks the bike in garage number {i}"})
        assert added.status_code == 201, added.text
        seq = int(added.headers["X-Memory-Seq"])
        answers = [_fresh(two_workers.url, "/v1/recall", two_workers.alice, method="POST",
                          json={"query": f"where is the bike parked, garage {i}?", "k": 3, "min_seq": seq})
                   for _ in range(4)]
        for answer in answers:
            assert answer.status_code == 200, answer.text
            assert added.json()["id"] in [h["memory"]["id"] for h in answer.json()["hits"]]
    # The other tenant's token cannot see it through either worker (the control: alice can).
    with MemoryBank.open(two_workers.bank_path) as bank:
        bob = bank.tokens.create("bob", ["bob"])[1]
    for _ in range(6):
        assert _fresh(two_workers.url, f"/v1/memories/{added.json()['id']}", bob).status_code == 404
        assert _fresh(two_workers.url, f"/v1/memories/{added.json()['id']}", two_workers.alice).status_code == 200


def test_request_metrics_are_summed_over_the_workers(two_workers):
    before = _health_count(two_workers.url, two_workers.admin)
    seen = _workers_seen(two_workers.url, 30)
    assert set(seen) == {1, 2}
    assert _health_count(two_workers.url, two_workers.admin) - before == 30
    # What a worker knows alone is labelled with it.
    assert re.search(r'^memctl_change_seq_seen\{worker="[12]"\} ', _fresh(two_workers.url, "/metrics", two_workers.admin).text,
                     re.M)


def test_a_killed_worker_is_started_again_and_no_request_fails(two_workers):
    first = _children(two_workers.proc.pid)
    os.kill(first[0], signal.SIGKILL)
    # Requests the kernel hands to the dead worker's socket wait there until it is back.
    seen = _workers_seen(two_workers.url, 20)
    assert len(seen) == 20
    deadline = time.monotonic() + 120
    while set(_workers_seen(two_workers.url, 10)) != {1, 2}:
        assert time.monotonic() < deadline, two_workers.output()[-3000:]
    assert "starting it again" in two_workers.output()
    now = _children(two_workers.proc.pid)
    assert len(now) == 2 and first[0] not in now


def test_sigterm_stops_every_worker_and_keeps_every_acknowledged_add(own):
    acked: list[int] = []
    errors: list[str] = []
    started = threading.Event()

    def client(i: int) -> None:
        for n in range(200):
            try:
                r = _fresh(own.url, "/v1/memories", own.alice, method="POST",
                           json={"text": f"Client {i} noted fact number {n} about the garden"})
            except httpx.HTTPError as exc:  # refused once the workers stop: not acknowledged
                errors.append(repr(exc))
                return
            if r.status_code != 201:
                errors.append(f"{r.status_code} {r.text[:100]}")
                return
            acked.append(r.json()["id"])
            started.set()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    assert started.wait(60)
    time.sleep(1.0)
    workers = _children(own.proc.pid)
    assert own.stop(timeout=60) == 0, own.output()[-3000:]
    for t in threads:
        t.join()
    assert not any(_alive(pid) for pid in workers)
    assert len(acked) >= 4
    with MemoryBank.open(own.bank_path) as bank:
        stored = set(bank.get_many(acked))
    assert stored == set(acked)


def test_a_killed_supervisor_leaves_no_worker_serving(own):
    workers = _children(own.proc.pid)
    own.kill()
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in workers):
        assert time.monotonic() < deadline, "a worker outlived its supervisor"
        time.sleep(0.2)
    with pytest.raises(httpx.HTTPError):
        _fresh(own.url, "/v1/health")


def test_a_bank_file_refuses_several_workers(tmp_path):
    done = memctl(tmp_path / "bank.duckdb", "serve", "--port", "0", "--workers", "2", check=False)
    assert done.returncode == 1
    assert "one writer at a time" in done.stderr and "PostgreSQL" in done.stderr


def test_a_port_in_use_is_a_clear_error(two_workers):
    port = str(two_workers.port)
    # Refused at once: never a second server joining the first one's port (it would take a share
    # of its connections).
    done = memctl(two_workers.bank_path, "serve", "--port", port, "--workers", "2", check=False, timeout=60)
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "Traceback" not in done.stderr
    assert set(_workers_seen(two_workers.url, 10)) <= {1, 2}  # the server there goes on
