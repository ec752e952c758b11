"""`GET /metrics`: a real `memctl serve` tells its operator, in Prometheus' text format, what it
answered and how fast, how it grouped single adds, and where it stands, without naming a tenant."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
from prometheus_client.parser import text_string_to_metric_families


def scrape(served) -> tuple[dict[tuple[str, tuple], float], str]:
    """Every sample of /metrics by (name, sorted labels), and the text as served."""
    with served.client(served.tokens["root"]) as admin:
        r = admin.get("/metrics")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(r.text) for s in family.samples}
    return samples, r.text


def requests(samples, route: str, method: str, status: int) -> float:
    return samples.get(("memctl_requests_total", (("method", method), ("route", route), ("status", str(status)))), 0.0)


def test_requests_are_counted_and_timed_by_their_declared_route(served):
    before, _ = scrape(served)
    with served.client(served.tokens["alice"]) as alice:
        ids = [alice.post("/v1/memories", json={"text": f"Alice note {i} about the garden"}).json()["id"]
               for i in range(3)]
        for mid in ids:
            assert alice.get(f"/v1/memories/{mid}").status_code == 200
        assert alice.get("/v1/memories/999999").status_code == 404
        assert alice.post("/v1/recall", json={"query": "the garden"}).status_code == 200
        assert alice.get("/no/such/route").status_code == 404
    after, text = scrape(served)

    def grew(route: str, method: str, status: int) -> float:
        return requests(after, route, method, status) - requests(before, route, method, status)

    assert grew("/v1/memories", "POST", 201) == 3
    # Ids are not labels: every GET by id counts under the route as declared.
    assert grew("/v1/memories/{memory_id}", "GET", 200) == 3
    assert grew("/v1/memories/{memory_id}", "GET", 404) == 1
    assert grew("/v1/recall", "POST", 200) == 1
    assert grew("unmatched", "GET", 404) == 1
    # Neither the unknown path nor the id becomes a label (a float such as 0.18999999 may hold the digits).
    assert "/no/such/route" not in text and "/v1/memories/999999" not in text
    assert not any('"999999"' in line or "=999999" in line for line in text.splitlines())
    count = ("memctl_request_seconds_count", (("method", "POST"), ("route", "/v1/memories")))
    total = ("memctl_request_seconds_sum", (("method", "POST"), ("route", "/v1/memories")))
    assert after[count] - before.get(count, 0) == 3
    assert 0 < after[total] - before.get(total, 0) < 60
    assert after[("process_resident_memory_bytes", ())] > 10_000_000  # the model alone is more


def test_concurrent_single_adds_show_how_they_were_grouped(served):
    """Eight clients at once: every add is counted once, in fewer groups than adds when the
    queue grouped them (never more), and nothing is left waiting."""
    before, _ = scrape(served)

    def add(i: int) -> int:
        with served.client(served.tokens["bob"]) as bob:
            return bob.post("/v1/memories", json={"text": f"Bob's reminder number {i}"}).status_code

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(add, range(40))) == [201] * 40
    after, _ = scrape(served)
    rows = after[("memctl_adds_stored_total", ())] - before[("memctl_adds_stored_total", ())]
    groups = after[("memctl_add_groups_total", ())] - before[("memctl_add_groups_total", ())]
    assert rows == 40 and 1 <= groups <= 40
    assert after[("memctl_adds_waiting", ())] == 0
    assert after[("memctl_change_seq_seen", ())] > before[("memctl_change_seq_seen", ())]


def test_no_tenant_is_named_and_only_an_admin_may_read_them(served):
    with served.client(served.tokens["alice"]) as alice:
        alice.post("/v1/memories", json={"text": "Alice keeps her passport in the blue drawer"})
        assert alice.get("/metrics").status_code == 403  # a tenant's token: not the operator's figures
    with served.client() as anonymous:
        assert anonymous.get("/metrics").status_code == 401
    _, text = scrape(served)
    for secret in ("alice", "bob", "passport", "drawer", served.tokens["alice"]):
        assert secret not in text


def test_a_refused_body_is_counted_too(served):
    """A body over the limit never reaches a route: it is counted, as unmatched, with its 413."""
    before, _ = scrape(served)
    with served.client(served.tokens["alice"]) as alice:
        r = alice.post("/v1/memories", content=b"x" * (9 * 1024 * 1024), headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    after, _ = scrape(served)
    assert requests(after, "unmatched", "POST", 413) - requests(before, "unmatched", "POST", 413) == 1


def test_metrics_need_no_token_only_when_the_server_needs_none(tmp_path):
    from memctl_server import Served

    server = Served(tmp_path / "bank.duckdb", "--no-auth")
    try:
        r = httpx.get(server.url + "/metrics", timeout=10)
        assert r.status_code == 200 and "memctl_requests_total" in r.text
    finally:
        assert server.stop() == 0, server.output()
