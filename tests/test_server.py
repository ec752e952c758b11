"""`memctl serve`: the REST contract, tokens per namespace and errors, against a real server process."""

from __future__ import annotations

import json

import pytest

from memory_core import MemoryBank
from memctl_server import Served, memctl


@pytest.fixture
def alice(served):
    with served.client(served.tokens["alice"]) as c:
        yield c


@pytest.fixture
def bob(served):
    with served.client(served.tokens["bob"]) as c:
        yield c


def _add(client, text, **fields):
    r = client.post("/v1/memories", json={"text": text, **fields})
    assert r.status_code == 201, r.text
    return r.json()


def test_health_needs_no_token_and_openapi_describes_every_route(served):
    with served.client() as c:
        assert c.get("/v1/health").json()["status"] == "ok"
        paths = c.get("/openapi.json").json()["paths"]
        assert c.get("/docs").status_code == 200
    for route in ["/v1/memories", "/v1/memories/batch", "/v1/memories/{memory_id}", "/v1/memories/{memory_id}/restore",
                  "/v1/memories/{memory_id}/history", "/v1/recall", "/v1/feedback", "/v1/conflicts",
                  "/v1/conflicts/{conflict_id}/resolve", "/v1/conflicts/dismiss"]:
        assert route in paths, route


def test_a_memory_goes_through_its_whole_life(alice):
    m = _add(alice, "Alice is allergic to peanuts", importance=0.9, category="fact")
    assert m["namespace"] == "alice" and m["importance"] == 0.9 and isinstance(m["id"], int)
    assert alice.get(f"/v1/memories/{m['id']}").json()["text"] == "Alice is allergic to peanuts"
    changed = alice.patch(f"/v1/memories/{m['id']}", json={"text": "Alice is allergic to peanuts and cashews"}).json()
    assert changed["text"].endswith("cashews")
    assert alice.delete(f"/v1/memories/{m['id']}").json()["status"] == "archived"
    listed = alice.get("/v1/memories", params={"namespace": "alice", "status": "archived"}).json()
    assert m["id"] in [x["id"] for x in listed["memories"]] and listed["total"] >= 1
    assert alice.post(f"/v1/memories/{m['id']}/restore").json()["status"] == "active"
    events = alice.get(f"/v1/memories/{m['id']}/history").json()["events"]
    actions = [e["action"] for e in events]
    assert actions[0] == "add" and "update" in actions and "restore" in actions
    assert {e["actor"] for e in events} == {"token:alice"}  # the history names the token that made each change
    gone = alice.delete(f"/v1/memories/{m['id']}", params={"hard": "true"}).json()
    assert gone["text"] is None and gone["status"] == "deleted"


def test_recall_returns_scored_hits_and_a_retrieval_id_that_feedback_takes(alice):
    m = _add(alice, "Alice's daughter is called Maja and she is seven", importance=0.8)
    r = alice.post("/v1/recall", json={"query": "What is the name of Alice's daughter?"}).json()
    assert [h["memory"]["id"] for h in r["hits"]][:1] == [m["id"]]
    assert set(r["hits"][0]["components"]) >= {"similarity", "lexical", "recency", "importance", "frequency"}
    assert isinstance(r["retrieval_id"], int) and "Maja" in r["prompt"]
    fb = alice.post("/v1/feedback", json={"retrieval_id": r["retrieval_id"], "used_ids": [m["id"]], "helpful": True})
    assert fb.status_code == 200, fb.text
    assert alice.get(f"/v1/memories/{m['id']}").json()["use_count"] == 1
    dry = alice.post("/v1/recall", json={"query": "daughter's name", "record": False}).json()
    assert dry["retrieval_id"] is None


def test_a_gated_recall_says_why_it_recalled_nothing(alice):
    r = alice.post("/v1/recall", json={"query": "thanks!", "gate": True}).json()
    assert r["gate"]["recall"] is False and r["hits"] == []


def test_a_batch_is_stored_all_or_nothing(alice):
    before = alice.get("/v1/memories", params={"namespace": "alice", "status": "any"}).json()["total"]
    bad = alice.post("/v1/memories/batch", json={"rows": [{"text": "fine"}, {"text": "bad", "importance": 7}]})
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "ValidationError"
    assert alice.get("/v1/memories", params={"namespace": "alice", "status": "any"}).json()["total"] == before
    ok = alice.post("/v1/memories/batch", json={"rows": [{"text": "Likes hiking"}, {"text": "Works as a nurse"}]})
    assert ok.status_code == 201
    ids = ok.json()["ids"]
    assert [alice.get(f"/v1/memories/{i}").json()["text"] for i in ids] == ["Likes hiking", "Works as a nurse"]


def test_no_token_or_a_bad_one_is_refused(served):
    with served.client() as anon:
        r = anon.post("/v1/recall", json={"query": "x", "namespace": "alice"})
        assert r.status_code == 401 and r.json()["error"]["type"] == "AuthenticationError"
    with served.client("mct_not-a-real-token") as wrong:
        assert wrong.get("/v1/memories").status_code == 401


def test_a_token_cannot_reach_another_namespace_and_cannot_tell_its_ids_exist(served, alice, bob):
    secret = _add(bob, "Bob's PIN is 4321")
    # The control: bob sees his memory, so the refusals below come from the namespace check.
    assert bob.get(f"/v1/memories/{secret['id']}").status_code == 200
    unknown = alice.get("/v1/memories/987654321")
    for method, url, body in [("GET", f"/v1/memories/{secret['id']}", None),
                              ("PATCH", f"/v1/memories/{secret['id']}", {"text": "mine now"}),
                              ("DELETE", f"/v1/memories/{secret['id']}", None),
                              ("POST", f"/v1/memories/{secret['id']}/restore", None),
                              ("GET", f"/v1/memories/{secret['id']}/history", None)]:
        r = alice.request(method, url, json=body)
        assert r.status_code == 404, (method, url, r.text)
        assert r.json()["error"]["message"].replace(str(secret["id"]), "N") == \
            unknown.json()["error"]["message"].replace("987654321", "N")
    for method, url, body in [("POST", "/v1/memories", {"text": "x", "namespace": "bob"}),
                              ("POST", "/v1/recall", {"query": "PIN", "namespace": "bob"}),
                              ("GET", "/v1/memories?namespace=bob", None),
                              ("GET", "/v1/conflicts?namespace=bob", None)]:
        assert alice.request(method, url, json=body).status_code == 403, (method, url)
    rid = bob.post("/v1/recall", json={"query": "What is Bob's PIN?"}).json()["retrieval_id"]
    assert alice.post("/v1/feedback", json={"retrieval_id": rid, "helpful": True}).status_code == 404
    assert bob.get(f"/v1/memories/{secret['id']}").json()["text"] == "Bob's PIN is 4321"


def test_a_token_of_two_namespaces_must_say_which(served):
    with served.client(served.tokens["both"]) as both:
        r = both.post("/v1/memories", json={"text": "Shared plan: Lisbon trip in May"})
        assert r.status_code == 400 and "namespace" in r.json()["error"]["message"]
        assert both.post("/v1/memories", json={"text": "Lisbon trip in May", "namespace": "bob"}).status_code == 201


def test_a_read_only_token_reads_but_cannot_change(served, alice):
    m = _add(alice, "Alice runs on Tuesdays")
    with served.client(served.tokens["alice-ro"]) as ro:
        assert ro.get(f"/v1/memories/{m['id']}").status_code == 200
        assert ro.post("/v1/recall", json={"query": "When does Alice run?"}).status_code == 200
        for method, url, body in [("POST", "/v1/memories", {"text": "x"}),
                                  ("PATCH", f"/v1/memories/{m['id']}", {"importance": 1.0}),
                                  ("DELETE", f"/v1/memories/{m['id']}", None)]:
            r = ro.request(method, url, json=body)
            assert r.status_code == 403 and r.json()["error"]["type"] == "PermissionDeniedError"
    assert alice.get(f"/v1/memories/{m['id']}").json()["status"] == "active"


def test_an_admin_token_uses_every_namespace_and_lists_tokens(served, alice):
    with served.client(served.tokens["root"]) as root:
        assert root.get("/v1/memories", params={"namespace": "bob"}).status_code == 200
        names = [t["name"] for t in root.get("/v1/tokens").json()["tokens"]]
        assert "alice" in names and "root" in names
    assert alice.get("/v1/tokens").status_code == 403


def test_a_revoked_token_is_refused_at_once_and_a_new_one_works(served, tmp_path):
    with MemoryBank.open(served.bank_path, lock_timeout=30) as bank:  # another process, as the CLI is
        _, secret = bank.tokens.create("temp", ["carol"])
    with served.client(secret) as carol:
        assert carol.post("/v1/memories", json={"text": "Carol likes jazz"}).status_code == 201
        out = memctl(served.bank_path, "token", "revoke", "temp")
        assert "revoked" in out.stdout
        assert carol.get("/v1/memories").status_code == 401


@pytest.mark.parametrize("body, status", [
    (b"{not json", 400),
    (json.dumps({"text": "x", "colour": "red"}).encode(), 400),  # unknown field
    (json.dumps({"text": 5}).encode(), 400),  # wrong type
    (json.dumps({"text": "x", "importance": "high"}).encode(), 400),
    (json.dumps({"text": ""}).encode(), 400),
    (json.dumps({"text": "x" * (9 * 1024 * 1024)}).encode(), 413),
])
def test_bad_bodies_get_a_clear_4xx_and_change_nothing(alice, body, status):
    before = alice.get("/v1/memories", params={"namespace": "alice", "status": "any"}).json()["total"]
    r = alice.post("/v1/memories", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == status, r.text
    assert r.json()["error"]["message"]
    assert alice.get("/v1/memories", params={"namespace": "alice", "status": "any"}).json()["total"] == before


def test_ids_beyond_64_bits_are_refused_not_crashed_on(alice):
    huge = 2**127
    for method, url, body in [("POST", "/v1/feedback", {"retrieval_id": huge, "answer": "0"}),
                              ("POST", "/v1/feedback", {"retrieval_id": 1, "used_ids": [huge]}),
                              ("GET", f"/v1/memories/{huge}", None),
                              ("GET", f"/v1/memories?offset={huge}", None),
                              ("POST", f"/v1/conflicts/{huge}/resolve", {"rule": "dismiss"})]:
        r = alice.request(method, url, json=body)
        assert r.status_code in (400, 404), (method, url, r.status_code, r.text)
        assert r.json()["error"]["type"] in ("ValidationError", "NotFoundError")


def test_a_huge_k_or_unknown_route_is_refused(alice):
    assert alice.post("/v1/recall", json={"query": "x", "k": 10**9}).status_code == 400
    r = alice.get("/v1/nothing-here")
    assert r.status_code == 404 and r.json()["error"]["type"] == "NotFoundError"


def test_conflicts_are_listed_and_resolved_within_the_namespace(served, alice, bob):
    a = _add(alice, "Alice lives in Oslo", category="fact")
    b = _add(alice, "Alice lives in Bergen", category="fact")
    found = alice.get("/v1/conflicts").json()["conflicts"]
    pair = [c for c in found if {c["a"]["id"], c["b"]["id"]} == {a["id"], b["id"]}]
    assert pair, found
    assert bob.post(f"/v1/conflicts/{pair[0]['id']}/resolve", json={"rule": "newer_wins"}).status_code == 404
    done = alice.post(f"/v1/conflicts/{pair[0]['id']}/resolve", json={"rule": "newer_wins"})
    assert done.status_code == 200 and done.json()["status"] == "resolved"
    assert alice.get(f"/v1/memories/{a['id']}").json()["status"] == "superseded"


def test_conflicts_are_dismissed_together_within_the_namespace(served, alice, bob):
    for older, newer in (("Alice lives in Oslo", "Alice lives in Bergen"),
                         ("Alice works at Spotify", "Alice now works at Klarna")):
        _add(alice, older, category="fact")
        _add(alice, newer, category="fact")
    ids = [c["id"] for c in alice.get("/v1/conflicts").json()["conflicts"]]
    assert len(ids) >= 2, ids
    refused = bob.post("/v1/conflicts/dismiss", json={"ids": ids})  # another tenant's: as if absent
    assert refused.status_code == 404 and refused.json()["error"]["type"] == "NotFoundError"
    assert {c["id"] for c in alice.get("/v1/conflicts").json()["conflicts"]} >= set(ids)
    done = alice.post("/v1/conflicts/dismiss", json={"ids": ids})
    assert done.status_code == 200 and isinstance(done.json()["group"], int) and done.json()["dismissed"] == len(ids)
    assert not {c["id"] for c in alice.get("/v1/conflicts").json()["conflicts"]} & set(ids)
    dismissed = alice.get("/v1/conflicts", params={"status": "dismissed"}).json()["conflicts"]
    assert {c["id"] for c in dismissed} == set(ids) and {c["group_id"] for c in dismissed} == {done.json()["group"]}
    again = alice.post("/v1/conflicts/dismiss", json={"ids": ids})  # already dismissed: nothing changes
    assert again.status_code == 409 and again.json()["error"]["type"] == "StateError"
    assert alice.post("/v1/conflicts/dismiss", json={"ids": []}).json() == {"group": None, "dismissed": 0}
    assert alice.post("/v1/conflicts/dismiss", json={"ids": "all"}).status_code in (400, 422)


def test_sigterm_writes_every_recorded_recall_and_closes_the_bank(tmp_path):
    path = tmp_path / "bank.duckdb"
    with MemoryBank.open(path) as bank:
        _, secret = bank.tokens.create("agent", ["a"])
    server = Served(path)
    with server.client(secret) as c:
        c.post("/v1/memories", json={"text": "The agent's user likes green tea"})
        rids = [c.post("/v1/recall", json={"query": "green tea"}).json()["retrieval_id"] for _ in range(5)]
    assert server.stop() == 0, server.output()
    with MemoryBank.open(path) as bank:
        logged = {r["id"] for r in bank.retrievals("a", limit=None)}
    assert set(rids) <= logged


def test_it_will_not_listen_beyond_loopback_without_a_token(tmp_path):
    path = tmp_path / "bank.duckdb"
    out = memctl(path, "serve", "--host", "0.0.0.0", check=False)
    assert out.returncode != 0 and "token create" in out.stderr
    out = memctl(path, "serve", "--host", "0.0.0.0", "--no-auth", check=False)
    assert out.returncode != 0 and "loopback" in out.stderr


def test_every_answer_carries_the_change_number_and_reads_take_min_seq(served, alice):
    """X-Memory-Seq on every answer (after a write: at least the write's own number); reads with
    min_seq at or below it answer at once; a bad min_seq is a 400 that changes nothing."""
    with served.client() as anonymous:
        before = int(anonymous.get("/v1/health").headers["x-memory-seq"])
    added = alice.post("/v1/memories", json={"text": "Alice started learning the cello"})
    seq = int(added.headers["x-memory-seq"])
    assert added.status_code == 201 and seq > before
    batch = alice.post("/v1/memories/batch", json={"rows": [{"text": "Alice's cello is rented"},
                                                            {"text": "Alice practises on Sundays"}]})
    assert batch.status_code == 201 and batch.json()["seq"] == int(batch.headers["x-memory-seq"]) > seq
    latest = batch.json()["seq"]
    mid = added.json()["id"]
    for answer in (alice.get(f"/v1/memories/{mid}", params={"min_seq": latest}),
                   alice.get("/v1/memories", params={"min_seq": latest}),
                   alice.get(f"/v1/memories/{mid}/history", params={"min_seq": latest}),
                   alice.post("/v1/recall", json={"query": "cello", "min_seq": latest, "record": False})):
        assert answer.status_code == 200, answer.text
        assert int(answer.headers["x-memory-seq"]) >= latest
    missing = alice.get("/v1/memories/987654321")
    assert missing.status_code == 404 and int(missing.headers["x-memory-seq"]) >= latest
    for bad in (alice.get(f"/v1/memories/{mid}", params={"min_seq": -1}),
                alice.get(f"/v1/memories/{mid}", params={"min_seq": "soon"}),
                alice.post("/v1/recall", json={"query": "cello", "min_seq": "soon"}),
                alice.post("/v1/recall", json={"query": "cello", "min_seq": 2 ** 64})):
        assert bad.status_code == 400 and bad.json()["error"]["type"] == "ValidationError", bad.text
    assert int(alice.get("/v1/health").headers["x-memory-seq"]) == latest, "the bad reads changed nothing"


def test_a_change_number_the_bank_never_reached_is_a_retriable_503(tmp_path, embedder, monkeypatch):
    """min_seq beyond the bank's latest change (a number from another bank, or from a replica
    ahead of this server): the server waits a bounded time, then answers 503 with Retry-After."""
    import time

    from fastapi.testclient import TestClient

    from memory_core.server import app as app_module

    monkeypatch.setattr(app_module, "MIN_SEQ_WAIT", 0.3)
    bank = MemoryBank.open(tmp_path / "bank.duckdb", embedder=embedder)
    with TestClient(app_module.create_app(bank, auth=False)) as client:
        mid = client.post("/v1/memories", json={"text": "Plays chess", "namespace": "n"}).json()["id"]
        seq = int(client.get("/v1/health").headers["x-memory-seq"])
        started = time.monotonic()
        late = client.get(f"/v1/memories/{mid}", params={"min_seq": seq + 100})
        waited = time.monotonic() - started
        assert late.status_code == 503 and late.headers["retry-after"] == "1", late.text
        assert late.json()["error"]["type"] == "BankLockedError" and str(seq + 100) in late.json()["error"]["message"]
        assert 0.3 <= waited < 3
        recall = client.post("/v1/recall", json={"query": "chess", "namespace": "n", "min_seq": seq + 100})
        assert recall.status_code == 503
        assert client.get(f"/v1/memories/{mid}", params={"min_seq": seq}).status_code == 200
