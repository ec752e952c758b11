"""The dashboard opened directly on a bank that `memctl serve` serves, while 8 agents write to it.

The dashboard and the server are two processes on one DuckDB file: each operation of either takes
the file for one transaction and catches up with the other's changes by the change sequence. Every
page must load while the writes go on, and the operator's edits on the pages (archive a memory,
resolve a conflict) must reach the agents' next recall through the server.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
from streamlit.testing.v1 import AppTest

from dashboard.common import PAGES as DASHBOARD_PAGES, page_file
from memory_core import MemoryBank
from memctl_server import Served

APP = str(Path(__file__).resolve().parent.parent / "app.py")
PAGES = [page_file(module) for module, _, _ in DASHBOARD_PAGES]


def test_every_page_loads_and_edits_reach_the_agents_while_a_server_takes_writes(tmp_path, embedder, monkeypatch):
    path = tmp_path / "served.duckdb"
    now = datetime.now(timezone.utc)
    with MemoryBank.open(path, embedder=embedder) as bank:
        _, secret = bank.tokens.create("agents", ["alice", "load"])
        veg = bank.add("Alice prefers vegetarian food", namespace="alice", importance=0.9, category="preference")
        paris, berlin = bank.add_many([
            {"text": "Alice lives in Paris", "namespace": "alice", "created_at": now - timedelta(days=30)},
            {"text": "Alice moved to Berlin", "namespace": "alice", "created_at": now - timedelta(days=2)}])
        cid = bank.record_conflict(paris, berlin, kind="switch", evidence="Paris vs Berlin", confidence=0.9,
                                   suggestion="newer_wins", path="rules").id
    server = Served(path)
    headers = {"Authorization": f"Bearer {secret}"}
    acked: list[int] = []
    errors: list[str] = []
    stop = threading.Event()

    def agent(i: int) -> None:
        with httpx.Client(base_url=server.url, headers=headers, timeout=60) as c:
            n = 0
            while not stop.is_set():
                r = c.post("/v1/memories", json={"text": f"agent {i} note {n} about gardening and tea",
                                                 "namespace": "load"})
                n += 1
                (acked.append(r.json()["id"]) if r.status_code == 201 else errors.append(r.text))

    def recalled(query: str) -> list[int]:
        with httpx.Client(base_url=server.url, headers=headers, timeout=60) as c:
            r = c.post("/v1/recall", json={"query": query, "namespace": "alice", "threshold": 0.0, "k": 50})
            assert r.status_code == 200, r.text
            return [h["memory"]["id"] for h in r.json()["hits"]]

    assert veg in recalled("what food does Alice like?") and paris in recalled("where does Alice live?")
    agents = [threading.Thread(target=agent, args=(i,)) for i in range(8)]
    for t in agents:
        t.start()
    try:
        monkeypatch.setenv("MEMCTL_BANK", str(path))
        at = AppTest.from_file(APP, default_timeout=120).run()
        assert not at.exception, at.exception
        for page in PAGES:
            at.switch_page(page).run()
            assert not at.exception, (page, at.exception)
            assert not [e.value for e in at.error], (page, [e.value for e in at.error])

        # The operator archives a memory on Browse and resolves the conflict on Conflicts.
        at.switch_page("dashboard/memory.py")  # the memory's own page, as a Browse row opens it
        at.query_params["id"] = str(veg)
        at.session_state["id"] = str(veg)  # the page was opened before, without an id: its box keeps its own
        at.run()
        at.button(key="memory_forget").click().run()
        assert not at.exception and "Archived" in at.success[0].value
        at.switch_page("dashboard/conflicts.py").run()
        at.selectbox(key="namespace").select("alice").run()
        at.button(key=f"resolve-{cid}-newer_wins").click().run()
        assert not at.exception, at.exception

        # The agents' next recall, through the server, sees both edits.
        assert veg not in recalled("what food does Alice like?")
        where = recalled("where does Alice live?")
        assert paris not in where and berlin in where
    finally:
        stop.set()
        for t in agents:
            t.join()
    assert not errors, errors[:3]
    assert len(acked) > 0
    with server.client(secret) as c:
        missing = [mid for mid in acked if c.get(f"/v1/memories/{mid}").status_code != 200]
    assert server.stop() == 0
    assert not missing
