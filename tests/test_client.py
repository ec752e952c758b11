"""RemoteBank: the bank's API over HTTP against a real `memctl serve`.

The scenarios are written once and run twice, on a local MemoryBank and on a RemoteBank (the
``bank`` fixture), so a difference in behaviour, return type or error class fails one of the two.
"""

from __future__ import annotations

import http.server
import itertools
import json
import threading
from datetime import datetime, timedelta, timezone

import pytest

from memory_core import (
    AuthenticationError, BankLockedError, Conflict, Event, Feedback, Hit, ImportReport, Memory, MemoryBank,
    ModelMismatchError, NotFoundError, PermissionDeniedError, RemoteBank, ScoringParams, ServerUnavailableError,
    StateError, ValidationError,
)
from memory_core.client import RemoteBank as RemoteBankFromModule
from memctl_server import free_port

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
ROWS = [  # text, importance, category, days before NOW
    ("Alice is vegetarian and never eats fish", 0.8, "preference", 40),
    ("Alice's daughter Maja plays the violin", 0.7, "fact", 20),
    ("Alice is training for the Oslo marathon in June", 0.9, "goal", 10),
    ("Alice prefers green tea over coffee in the morning", 0.6, "preference", 5),
    ("Alice works night shifts as a nurse at the city hospital", 0.7, "profile", 60),
    ("Alice finds Italian grammar hard, especially the subjunctive", 0.5, "difficulty", 2),
]
QUERIES = ["What should I cook for Alice tonight?", "What instrument does Maja play?",
           "How is the marathon training going?", "What does Alice drink in the morning?",
           "What is the capital of Australia?"]
_names = itertools.count()


def rows(namespace: str) -> list[dict]:
    return [{"text": t, "namespace": namespace, "importance": i, "category": c, "created_at": NOW - timedelta(days=d)}
            for t, i, c, d in ROWS]


@pytest.fixture(params=["local", "remote"])
def bank(request, served, tmp_path, embedder):
    """A local bank (a fresh file) or the served one through an admin token: any namespace, like a file."""
    if request.param == "local":
        b = MemoryBank.open(tmp_path / "bank.duckdb", embedder=embedder)
    else:
        b = MemoryBank.open(served.url, token=served.tokens["root"])
    yield b
    b.close()


@pytest.fixture
def ns() -> str:
    """A namespace no other test uses (the served bank is shared by the module's tests)."""
    return f"scenario-{next(_names)}"


# -- one scenario, two banks -----------------------------------------------------------------------


def test_a_memory_goes_through_its_whole_life(bank, ns):
    mid = bank.add("Alice is allergic to peanuts", namespace=ns, importance=0.9, category="fact",
                   created_at=NOW - timedelta(days=3), source="chat-12")
    assert isinstance(mid, int)
    m = bank.get(mid)
    assert isinstance(m, Memory)
    assert (m.text, m.namespace, m.importance, m.category, m.source, m.status) == \
        ("Alice is allergic to peanuts", ns, 0.9, "fact", "chat-12", "active")
    assert m.created_at == NOW - timedelta(days=3) and m.created_at.tzinfo is not None
    changed = bank.update(mid, text="Alice is allergic to peanuts and cashews", importance=0.95)
    assert isinstance(changed, Memory) and changed.text.endswith("cashews") and bank.get(mid) == changed
    assert bank.forget(mid, reason="asked to") is None
    assert bank.get(mid).status == "archived"
    with pytest.raises(StateError):
        bank.forget(mid)  # already archived
    restored = bank.restore(mid)
    assert isinstance(restored, Memory) and restored.status == "active"
    with pytest.raises(StateError):
        bank.restore(mid)  # already active
    events = bank.history(mid)
    assert all(isinstance(e, Event) for e in events)
    assert [e.action for e in events] == ["add", "update", "forget", "restore"]
    assert events[2].note == "asked to" and events[1].after["importance"] == 0.95
    bank.forget(mid, hard=True)
    gone = bank.get(mid)
    assert gone.text is None and gone.status == "deleted"


def test_durability_is_read_set_and_edited_alike_on_both_faces(bank, ns):
    """What Browse and the memory's page edit: the durability the rule read on add, one given on
    add, and one changed by hand, each as the local bank has it, and a bad one refused."""
    read = bank.add("Has a cold today", namespace=ns)
    given = bank.add("Prefers window seats", namespace=ns, durability="transient")
    assert (bank.get(read).durability, bank.get(given).durability) == ("transient", "transient")
    assert bank.update(given, durability="durable").durability == "durable" == bank.get(given).durability
    with pytest.raises(ValidationError):
        bank.update(read, durability="forever")
    assert bank.get(read).durability == "transient"
    assert [e.action for e in bank.history(given)] == ["add", "update"]


def test_rows_with_vectors_and_batches_are_stored_in_order(bank, ns, embedder):
    vector = embedder.encode_one("Alice keeps bees on her balcony")  # a numpy array
    one = bank.add("Alice keeps bees on her balcony", namespace=ns, embedding=vector)
    assert bank.get(one).text == "Alice keeps bees on her balcony"
    seen: list[int] = []
    report = ImportReport()
    ids = bank.add_many(rows(ns), batch_size=4, progress=seen.append, report=report)
    assert [bank.get(i).text for i in ids] == [r[0] for r in ROWS]
    assert sum(seen) == len(ROWS) and report.added == len(ROWS) and report.ids == ids
    with_vectors = bank.add_many([{"text": "Alice's bees swarmed in May", "namespace": ns,
                                   "embedding": embedder.encode_one("Alice's bees swarmed in May")}])
    assert bank.get(with_vectors[0]).text == "Alice's bees swarmed in May"
    assert bank.add_many([]) == []
    assert bank.count(ns) == len(ROWS) + 2
    assert {m.id for m in bank.memories(ns, limit=None)} == {one, *ids, *with_vectors}


def test_recall_ranks_and_feedback_counts_the_use(bank, ns):
    ids = bank.add_many(rows(ns))
    hits = bank.recall("What should I cook for Alice tonight?", namespace=ns, now=NOW)
    assert hits and all(isinstance(h, Hit) and isinstance(h.memory, Memory) for h in hits)
    assert hits[0].memory.id == ids[0]
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert set(hits[0].components) >= {"similarity", "lexical", "recency", "importance", "frequency"}
    assert hits[0].score == pytest.approx(max(h.score for h in hits))
    rid = bank.last_retrieval_id
    assert isinstance(rid, int)
    fb = bank.feedback(rid, used_ids=[ids[0]], helpful=True, at=NOW + timedelta(minutes=1))
    assert isinstance(fb, Feedback) and (fb.retrieval_id, fb.namespace, fb.helpful) == (rid, ns, True)
    assert fb.used_ids == [ids[0]] and fb.decided_by == "given"
    assert fb.given_at == NOW + timedelta(minutes=1)
    assert bank.get(ids[0]).use_count == 1 and bank.get(ids[0]).access_count == 1
    what_if = bank.recall("What should I cook for Alice tonight?", namespace=ns, now=NOW, record=False)
    assert [h.memory.id for h in what_if] == [h.memory.id for h in hits] and bank.last_retrieval_id == rid
    assert bank.recall("thanks!", namespace=ns, gate=True) == []
    assert len(bank.recall("What should I cook?", namespace=ns, params="generative-agents", k=1, now=NOW)) <= 1
    with pytest.raises(ValidationError):
        bank.feedback(bank.last_retrieval_id, used_ids=[ids[5]])  # not among that recall's hits


def test_a_contradiction_is_flagged_listed_and_resolved(bank, ns):
    a = bank.add("Alice lives in Oslo", namespace=ns, category="fact", created_at=NOW - timedelta(days=30))
    b = bank.add("Alice lives in Bergen", namespace=ns, category="fact", created_at=NOW - timedelta(days=1))
    found = bank.conflicts(namespace=ns)
    assert len(found) == 1 and isinstance(found[0], Conflict)
    assert {found[0].a.id, found[0].b.id} == {a, b} and found[0].status == "open"
    assert bank.conflicts(namespace=ns, memory_id=a) == found
    with pytest.raises(ValidationError):
        bank.resolve_conflict(found[0].id, "coin_flip")
    done = bank.resolve_conflict(found[0].id, "newer_wins")
    assert isinstance(done, Conflict) and (done.status, done.resolution) == ("resolved", "newer_wins")
    assert bank.get(a).status == "superseded" and bank.get(b).status == "active"
    assert bank.conflicts(namespace=ns) == []
    assert [c.id for c in bank.conflicts(namespace=ns, status=None)] == [found[0].id]
    quiet = bank.add("Alice lives in Trondheim", namespace=ns, category="fact", detect_conflicts=False)
    assert bank.conflicts(namespace=ns, memory_id=quiet, status=None) == []


def test_contradictions_are_dismissed_as_one_undoable_operation(bank, ns):
    for older, newer in (("Alice lives in Oslo", "Alice lives in Bergen"),
                         ("Alice works at Spotify", "Alice now works at Klarna")):
        bank.add(older, namespace=ns, category="fact", created_at=NOW - timedelta(days=30))
        bank.add(newer, namespace=ns, category="fact", created_at=NOW - timedelta(days=1))
    found = bank.conflicts(namespace=ns)
    assert len(found) >= 2
    group = bank.dismiss_conflicts([c.id for c in found])
    assert isinstance(group, int) and bank.conflicts(namespace=ns) == []
    dismissed = bank.conflicts(namespace=ns, status="dismissed")
    assert {c.id for c in dismissed} == {c.id for c in found} and {c.group_id for c in dismissed} == {group}
    with pytest.raises(StateError):
        bank.dismiss_conflicts([found[0].id])  # already dismissed
    assert bank.dismiss_conflicts([]) is None
    with pytest.raises(NotFoundError):
        bank.dismiss_conflicts([987654321])
    with pytest.raises(ValidationError):
        bank.dismiss_conflicts(["one"])


@pytest.mark.parametrize("bad", [
    {"text": ""}, {"text": 5}, {"text": "x", "importance": 7}, {"text": "x", "importance": float("nan")},
    {"text": "x", "kind": "rumour"}, {"text": "x", "created_at": "last tuesday"},
    {"text": "x", "created_at": object()}, {"text": "x", "embedding": [0.1, 0.2]},
])
def test_bad_input_is_a_validation_error_and_changes_nothing(bank, ns, bad):
    with pytest.raises(ValidationError):
        bank.add(namespace=ns, **bad)
    with pytest.raises(ValidationError):
        bank.add_many([{"text": "fine", "namespace": ns}, {"namespace": ns, **bad}])
    assert bank.count(ns, status=None) == 0


def test_every_method_raises_the_same_errors(bank, ns):
    mid = bank.add("Alice likes jazz", namespace=ns)
    for call in [lambda: bank.get(987654321), lambda: bank.update(987654321, importance=0.1),
                 lambda: bank.forget(987654321), lambda: bank.restore(987654321),
                 lambda: bank.history(987654321), lambda: bank.feedback(987654321, helpful=True),
                 lambda: bank.resolve_conflict(987654321, "newer_wins"),
                 lambda: bank.recall("jazz", namespace=ns, params="no-such-preset")]:
        with pytest.raises(NotFoundError):
            call()
    for call in [lambda: bank.get("abc"), lambda: bank.get(True), lambda: bank.update(mid, colour="red"),
                 lambda: bank.update(mid), lambda: bank.update(mid, importance=-1),
                 lambda: bank.recall("", namespace=ns), lambda: bank.recall("jazz", namespace=ns, k=0),
                 lambda: bank.recall("jazz", namespace=ns, now="someday"),
                 lambda: bank.feedback(bank.last_retrieval_id or 1), lambda: bank.add_many("not rows")]:
        with pytest.raises(ValidationError):
            call()
    assert bank.get(mid).text == "Alice likes jazz" and len(bank.history(mid)) == 1


# -- the same answers as the local bank --------------------------------------------------------------


def test_recall_returns_what_the_local_bank_returns_for_the_same_data(served, tmp_path, embedder):
    """Same memories, same queries, same moment: the same memories in the same order with the same
    scores, for the active preset, a named one and parameters given whole."""
    results = {}
    ns = f"compare-{next(_names)}"
    with MemoryBank.open(tmp_path / "local.duckdb", embedder=embedder) as local, \
            RemoteBank(served.url, token=served.tokens["root"]) as remote:
        for name, b in (("local", local), ("remote", remote)):
            ids = b.add_many(rows(ns))
            got = []
            for query in QUERIES:
                for params in (None, "generative-agents", ScoringParams(k=3, threshold=0.0, lexical_weight=0.3)):
                    hits = b.recall(query, namespace=ns, params=params, now=NOW, record=False)
                    got.append([(ids.index(h.memory.id), h.rank, h.score, h.components) for h in hits])
            results[name] = got
    assert any(results["local"]) and not all(results["local"])  # some queries recall, the off-topic one does not
    for mine, theirs in zip(results["local"], results["remote"]):
        assert [x[:2] for x in mine] == [x[:2] for x in theirs]
        for (_, _, s1, c1), (_, _, s2, c2) in zip(mine, theirs):
            assert s1 == pytest.approx(s2, abs=1e-5) and c1 == pytest.approx(c2, abs=1e-5)


def test_records_read_back_equal_to_what_the_bank_handed_out(bank, ns):
    a = bank.add("Alice lives in Oslo", namespace=ns, created_at=NOW - timedelta(days=30))
    bank.add("Alice lives in Bergen", namespace=ns, created_at=NOW - timedelta(days=1))
    hits = bank.recall("Where does Alice live?", namespace=ns, now=NOW)
    fb = bank.feedback(bank.last_retrieval_id, answer="She lives in Bergen.")
    records = [bank.get(a), *hits, *bank.history(a), *bank.conflicts(ns, status=None), fb]
    assert {type(r) for r in records} == {Memory, Hit, Event, Conflict, Feedback}
    for record in records:
        assert type(record).from_dict(json.loads(json.dumps(record.to_dict()))) == record


# -- tokens and tenants ------------------------------------------------------------------------------


def test_memory_bank_open_with_a_url_returns_a_remote_bank(served):
    with MemoryBank.open(served.url, token=served.tokens["alice"]) as b:
        assert isinstance(b, RemoteBank) and RemoteBank is RemoteBankFromModule
        assert b.url == served.url and b.health()["status"] == "ok"
        assert b.model == "multilingual-e5-small"
        mid = b.add("Alice takes the 7:40 train")  # no namespace: the token's only one
        assert b.get(mid).namespace == "alice"
    with pytest.raises(StateError):
        b.get(mid)  # closed
    with MemoryBank.open(served.url + "/", model="multilingual-e5-small") as anonymous:
        assert isinstance(anonymous, RemoteBank) and anonymous.url == served.url
    with pytest.raises(ModelMismatchError):
        MemoryBank.open(served.url, token=served.tokens["alice"], model="some/other-model")
    with pytest.raises(ValidationError):
        RemoteBank("ftp://127.0.0.1:1")


def test_token_problems_are_authentication_and_permission_errors(served):
    with RemoteBank(served.url) as anonymous:
        assert anonymous.health()["auth"] is True  # health needs no token
        with pytest.raises(AuthenticationError):
            anonymous.recall("jazz", namespace="alice")
    with RemoteBank(served.url, token="mct_not-a-real-token") as wrong:
        with pytest.raises(AuthenticationError):
            wrong.get(1)
    with RemoteBank(served.url, token=served.tokens["alice"]) as alice, \
            RemoteBank(served.url, token=served.tokens["alice-ro"]) as read_only:
        mid = alice.add("Alice runs on Tuesdays")
        assert read_only.get(mid).text == "Alice runs on Tuesdays" and read_only.recall("When does Alice run?")
        for call in [lambda: read_only.add("x"), lambda: read_only.update(mid, importance=1.0),
                     lambda: read_only.forget(mid), lambda: alice.add("x", namespace="bob")]:
            with pytest.raises(PermissionDeniedError):
                call()
        assert alice.get(mid).status == "active"


def test_another_tenants_ids_are_not_found_and_its_namespace_is_refused(served):
    with RemoteBank(served.url, token=served.tokens["alice"]) as alice, \
            RemoteBank(served.url, token=served.tokens["bob"]) as bob:
        secret = bob.add("Bob's PIN is 4321", category="fact")
        assert bob.get(secret).namespace == "bob"  # the control: bob sees it, so alice's refusals are the check
        for call in [lambda: alice.get(secret), lambda: alice.update(secret, text="mine now"),
                     lambda: alice.forget(secret), lambda: alice.restore(secret), lambda: alice.history(secret)]:
            with pytest.raises(NotFoundError) as refused:
                call()
            assert str(secret) in str(refused.value)
        for call in [lambda: alice.recall("PIN", namespace="bob"), lambda: alice.conflicts(namespace="bob"),
                     lambda: alice.memories("bob")]:
            with pytest.raises(PermissionDeniedError):
                call()
        assert bob.recall("What is Bob's PIN?")[0].memory.id == secret
        with pytest.raises(NotFoundError):
            alice.feedback(bob.last_retrieval_id, helpful=True)
        assert alice.last_retrieval_id is None  # per client and per thread
        assert dict(alice.namespaces()).keys() <= {"alice"} and "bob" in dict(bob.namespaces())
        assert bob.get(secret).text == "Bob's PIN is 4321"


# -- when the server is busy or away ---------------------------------------------------------------


class _Scripted(http.server.BaseHTTPRequestHandler):
    """Answers each request with the next of ``server.script``: (status, headers, body)."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.seen.append(self.path)
        status, headers, body = self.server.script.pop(0) if self.server.script else self.server.last
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def stand_in():
    """A tiny HTTP server on 127.0.0.1 that answers from a script (not a Memory Console server)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    server.seen, server.script, server.last = [], [], (500, {}, "no script")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


LOCKED = (503, {"Retry-After": "0", "Content-Type": "application/json"},
          {"error": {"type": "BankLockedError", "message": "the bank file is busy; try again"}})


def test_a_503_is_retried_after_its_retry_after_then_answers(stand_in, served):
    with RemoteBank(served.url, token=served.tokens["alice"]) as alice:
        stored = alice.get(alice.add("Alice collects stamps")).to_dict()
    stand_in.script = [LOCKED, LOCKED, (200, {"Content-Type": "application/json"}, stored)]
    with RemoteBank(f"http://127.0.0.1:{stand_in.server_port}", token="t", retries=3) as b:
        assert b.get(stored["id"]).text == "Alice collects stamps"
    assert len(stand_in.seen) == 3


def test_a_503_that_lasts_is_a_bank_locked_error_after_the_retries(stand_in):
    stand_in.last = LOCKED
    with RemoteBank(f"http://127.0.0.1:{stand_in.server_port}", token="t", retries=2) as b:
        with pytest.raises(BankLockedError, match="busy") as locked:
            b.get(1)
    assert type(locked.value) is BankLockedError and len(stand_in.seen) == 3
    stand_in.seen.clear()
    stand_in.last = (503, {"Retry-After": "0"}, "Service Unavailable")  # uvicorn at its concurrency limit
    with RemoteBank(f"http://127.0.0.1:{stand_in.server_port}", retries=1) as b:
        with pytest.raises(ServerUnavailableError, match="stayed busy"):
            b.get(1)
    assert len(stand_in.seen) == 2


def test_an_error_the_client_does_not_know_is_a_memory_core_error_with_the_servers_words(stand_in):
    stand_in.last = (500, {"Content-Type": "application/json"},
                     {"error": {"type": "InternalError", "message": "the server failed on this request"}})
    with RemoteBank(f"http://127.0.0.1:{stand_in.server_port}") as b:
        with pytest.raises(Exception, match="InternalError: the server failed") as failed:
            b.get(1)
        assert type(failed.value).__name__ == "MemoryCoreError"
        stand_in.last = (404, {}, "<html>nothing here</html>")  # a proxy's page, not our JSON
        with pytest.raises(NotFoundError, match="nothing here"):
            b.get(1)


def test_an_unreachable_server_is_a_server_unavailable_error_naming_its_address():
    url = f"http://127.0.0.1:{free_port()}"  # nobody listens there
    with RemoteBank(url, token="t", retries=1) as b:
        with pytest.raises(ServerUnavailableError, match=url.replace(".", r"\.")) as down:
            b.recall("anything", namespace="alice")
    assert isinstance(down.value, BankLockedError)  # the same "try again later" as a busy bank file


def test_grouped_single_adds_keep_each_rows_detect_conflicts(tmp_path, embedder):
    """The server's write queue stores concurrent adds as one group; each row's detect_conflicts holds."""
    from concurrent.futures import Future

    from memory_core.server.writes import WriteQueue

    with MemoryBank.open(tmp_path / "bank.duckdb", embedder=embedder) as bank:
        oslo = bank.add("Alice lives in Oslo", namespace="alice", category="fact", created_at=NOW - timedelta(days=30))
        queue = WriteQueue(bank)
        try:
            group = [({"text": text, "namespace": "alice", "category": "fact", "detect_conflicts": detect}, None,
                      Future())
                     for text, detect in [("Alice lives in Bergen", False), ("Alice lives in Tromsø", True)]]
            queue.write_group(group)
            quiet, checked = (done.result().id for _, _, done in group)
        finally:
            queue.close()
        pairs = {frozenset((c.a.id, c.b.id)) for c in bank.conflicts("alice")}
    assert frozenset((oslo, checked)) in pairs and frozenset((oslo, quiet)) not in pairs  # Bergen was not checked
