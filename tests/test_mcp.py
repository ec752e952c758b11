"""MCP: the memory tools over streamable HTTP (`memctl serve`, /mcp) and stdio (`memctl mcp`),
spoken to with the official SDK's own clients against real processes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, AsyncIterator

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

import memory_core as mc
from memory_core import MemoryBank, Token
from memory_core.server.app import Caller
from memory_core.server.mcp import MIN_SEQ_HEADER, NAMESPACE_HEADER, choose_namespace, min_seq_of
from memctl_server import MEMCTL, Served

TOOLS = {"add_memory", "search_memories", "get_memory", "delete_memory", "memory_feedback"}
ROOT = Path(__file__).resolve().parent.parent


@contextlib.asynccontextmanager
async def session(url: str, token: str | None = None, namespace: str | None = None,
                  mode: str = "auto", min_seq: int | None = None) -> AsyncIterator[Client]:
    """The SDK's client on ``url``/mcp, with a bearer token, the namespace and min-seq headers if given."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if namespace:
        headers[NAMESPACE_HEADER] = namespace
    if min_seq is not None:
        headers[MIN_SEQ_HEADER] = str(min_seq)
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        async with Client(streamable_http_client(url + "/mcp", http_client=http), mode=mode) as client:
            yield client


def run(fn, *args: Any) -> Any:
    return anyio.run(fn, *args)


def text(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def ok(result: CallToolResult) -> dict:
    assert not result.is_error, text(result)
    return result.structured_content


def not_found(result: CallToolResult, memory_id: int) -> str:
    """The error's text with the id taken out, to compare with an unknown id's."""
    assert result.is_error, text(result)
    assert "NotFoundError" in text(result)
    return text(result).replace(str(memory_id), "N")


def test_the_tools_are_listed_with_schemas_descriptions_and_no_namespace_argument(served):
    async def main():
        async with session(served.url, served.tokens["alice"]) as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in run(main)}
    assert set(tools) == TOOLS
    for name, tool in tools.items():
        props = tool.input_schema["properties"]
        assert "namespace" not in props, name  # a model cannot be talked into another tenant
        assert all(p.get("description") for p in props.values()), name
        assert len(tool.description) > 150 and tool.output_schema, name
    assert tools["add_memory"].input_schema["required"] == ["text"]
    assert set(tools["add_memory"].input_schema["properties"]) == {"text", "importance", "category", "durability"}
    assert "preference" in tools["add_memory"].input_schema["properties"]["category"]["enum"]
    assert set(tools["search_memories"].input_schema["properties"]) == {"query", "k"}
    assert set(tools["memory_feedback"].input_schema["properties"]) == {"retrieval_id", "answer", "used_ids", "helpful"}
    # What tells the model when to use each: distilled facts, search before answering, feedback after.
    assert "small talk" in tools["add_memory"].description
    assert "before you answer" in tools["search_memories"].description
    assert "after answering" in tools["memory_feedback"].description.lower()
    assert tools["search_memories"].annotations.read_only_hint is True
    assert tools["delete_memory"].annotations.destructive_hint is True


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # 2026 per-request, and the initialize handshake clients use today
def test_a_memory_goes_through_add_search_feedback_get_and_delete(served, mode):
    async def main():
        async with session(served.url, served.tokens["alice"], mode=mode) as client:
            added = ok(await client.call_tool("add_memory", {
                "text": f"Alice's daughter Maja plays the cello ({mode})", "importance": 0.8, "category": "fact"}))
            found = await client.call_tool("search_memories", {"query": "What instrument does Alice's daughter play?"})
            feedback = await client.call_tool("memory_feedback", {
                "retrieval_id": ok(found)["retrieval_id"], "used_ids": [added["id"]], "helpful": True})
            got = await client.call_tool("get_memory", {"id": added["id"]})
            deleted = await client.call_tool("delete_memory", {"id": added["id"]})
            after = await client.call_tool("search_memories", {"query": "What instrument does Alice's daughter play?"})
            return added, found, feedback, got, deleted, after

    added, found, feedback, got, deleted, after = run(main)
    mid = added["id"]
    assert added["namespace"] == "alice" and added["importance"] == 0.8 and added["category"] == "fact"
    # For the prompt: each memory with its id, and the retrieval id that feedback takes.
    rid = ok(found)["retrieval_id"]
    assert isinstance(rid, int) and f"retrieval_id: {rid}" in text(found)
    assert f"[m:{mid}]" in text(found) and "cello" in text(found)
    assert mid in [m["id"] for m in ok(found)["memories"]]
    assert ok(feedback)["used_ids"] == [mid] and "helpful" in text(feedback)
    assert ok(got)["use_count"] == 1 and "cello" in text(got)
    assert ok(deleted)["status"] == "archived"
    assert mid not in [m["id"] for m in ok(after)["memories"]]
    with served.client(served.tokens["alice"]) as rest:  # the same memory, seen through the REST API
        assert rest.get(f"/v1/memories/{mid}").json()["status"] == "archived"


def test_concurrent_adds_are_all_stored(served):
    async def main():
        results: list[CallToolResult] = []
        async with session(served.url, served.tokens["alice"]) as client:
            async def add(i: int) -> None:
                line = f"Alice's locker number {i} is at the gym"
                results.append(await client.call_tool("add_memory", {"text": line}))
            async with anyio.create_task_group() as tg:
                for i in range(8):
                    tg.start_soon(add, i)
        return results

    ids = [ok(r)["id"] for r in run(main)]
    assert len(set(ids)) == 8
    with served.client(served.tokens["alice"]) as rest:
        assert all(rest.get(f"/v1/memories/{i}").status_code == 200 for i in ids)


def test_no_token_or_a_bad_or_revoked_one_is_refused(served):
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream"}
    for url in ["/mcp", "/mcp/"]:
        for headers in [{}, {"Authorization": "Bearer mct_not-a-real-token"}, {"Authorization": "Basic YTpi"}]:
            r = httpx.post(served.url + url, json=initialize, headers={**accept, **headers})
            assert r.status_code == 401, (url, headers, r.text)
            assert r.json()["error"]["type"] == "AuthenticationError" and r.headers["www-authenticate"] == "Bearer"

    async def listed(token: str) -> int:
        async with session(served.url, token) as client:
            return len((await client.list_tools()).tools)

    with pytest.raises(Exception):
        run(listed, "mct_not-a-real-token")
    with MemoryBank.open(served.bank_path, lock_timeout=30) as bank:  # another process, as the CLI is
        _, secret = bank.tokens.create("temp-mcp", ["carol"])
    assert run(listed, secret) == len(TOOLS)
    with MemoryBank.open(served.bank_path, lock_timeout=30) as bank:
        bank.tokens.revoke("temp-mcp")
    with pytest.raises(Exception):
        run(listed, secret)


def test_a_session_cannot_reach_another_namespace_and_cannot_tell_its_ids_exist(served):
    async def main():
        async with session(served.url, served.tokens["bob"]) as bob:
            secret = ok(await bob.call_tool("add_memory", {"text": "Bob's bank PIN is 4321", "importance": 1.0}))
            bob_search = ok(await bob.call_tool("search_memories", {"query": "What is Bob's PIN?"}))
            bob_get = await bob.call_tool("get_memory", {"id": secret["id"]})  # the control
        async with session(served.url, served.tokens["alice"]) as alice:
            out = {
                "get": await alice.call_tool("get_memory", {"id": secret["id"]}),
                "unknown": await alice.call_tool("get_memory", {"id": 987654321}),
                "delete": await alice.call_tool("delete_memory", {"id": secret["id"]}),
                "unknown_delete": await alice.call_tool("delete_memory", {"id": 987654321}),
                "search": await alice.call_tool("search_memories", {"query": "What is Bob's PIN?", "k": 50}),
                "feedback": await alice.call_tool("memory_feedback", {"retrieval_id": bob_search["retrieval_id"],
                                                                      "helpful": True}),
                # An argument the schema does not have cannot move the write to another tenant.
                "smuggled": await alice.call_tool("add_memory", {"text": "Alice likes tea", "namespace": "bob"}),
            }
        async with session(served.url, served.tokens["bob"]) as bob:
            out["bob_after"] = await bob.call_tool("get_memory", {"id": secret["id"]})
        return secret, bob_search, bob_get, out

    secret, bob_search, bob_get, out = run(main)
    mid = secret["id"]
    assert ok(bob_get)["text"] == "Bob's bank PIN is 4321" and mid in [m["id"] for m in bob_search["memories"]]
    assert not_found(out["get"], mid) == not_found(out["unknown"], 987654321)
    assert not_found(out["delete"], mid) == not_found(out["unknown_delete"], 987654321)
    found = ok(out["search"])
    assert mid not in [m["id"] for m in found["memories"]] and "4321" not in text(out["search"])
    assert all(m["text"] is None or "Bob" not in m["text"] for m in found["memories"])
    assert out["feedback"].is_error and "NotFoundError" in text(out["feedback"])
    assert out["smuggled"].is_error or ok(out["smuggled"])["namespace"] == "alice"
    assert ok(out["bob_after"])["status"] == "active"


def test_a_token_of_several_namespaces_or_an_admin_names_one_with_a_header(served):
    def post(token: str, **headers: str) -> httpx.Response:
        return httpx.post(served.url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                          headers={"Accept": "application/json, text/event-stream",
                                   "Authorization": f"Bearer {served.tokens[token]}", **headers})

    for name in ["both", "root"]:
        r = post(name)
        assert r.status_code == 400 and NAMESPACE_HEADER in r.json()["error"]["message"], r.text
    r = post("both", **{NAMESPACE_HEADER: "carol"})
    assert r.status_code == 403 and r.json()["error"]["type"] == "PermissionDeniedError"
    assert post("alice", **{NAMESPACE_HEADER: "bob"}).status_code == 403

    async def main():
        async with session(served.url, served.tokens["both"], namespace="bob") as both:
            shared = ok(await both.call_tool("add_memory", {"text": "Bob plans a Lisbon trip in May"}))
        async with session(served.url, served.tokens["root"], namespace="bob") as root:
            seen_by_admin = await root.call_tool("get_memory", {"id": shared["id"]})
        async with session(served.url, served.tokens["both"], namespace="alice") as both_as_alice:
            seen_as_alice = await both_as_alice.call_tool("get_memory", {"id": shared["id"]})
        return shared, seen_by_admin, seen_as_alice

    shared, seen_by_admin, seen_as_alice = run(main)
    assert shared["namespace"] == "bob" and ok(seen_by_admin)["id"] == shared["id"]
    assert seen_as_alice.is_error and "NotFoundError" in text(seen_as_alice)  # the session's namespace, not the token's


def test_a_request_waits_for_the_change_number_it_names_read_your_writes(served):
    """A client of several servers sends back the number an add returned (X-Memory-Min-Seq): the
    request runs once the server has seen that change; a number it never reaches gets a retriable
    503, and a malformed one a 400, before any tool runs."""
    async def main():
        async with session(served.url, served.tokens["alice"]) as s:
            added = ok(await s.call_tool("add_memory", {"text": "Alice keeps two beehives"}))
        async with session(served.url, served.tokens["alice"], min_seq=added["seq"]) as s:
            got = ok(await s.call_tool("get_memory", {"id": added["id"]}))
        return added, got

    added, got = run(main)
    assert added["seq"] >= 1 and got["text"] == "Alice keeps two beehives"

    def post(value: str) -> httpx.Response:
        return httpx.post(served.url + "/mcp", timeout=60,
                          json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                "params": {"name": "add_memory", "arguments": {"text": "Alice keeps wasps"}}},
                          headers={"Accept": "application/json, text/event-stream",
                                   "Authorization": f"Bearer {served.tokens['alice']}", MIN_SEQ_HEADER: value})

    for bad in ["soon", "-1", "1.5", str(2**63)]:
        r = post(bad)
        assert r.status_code == 400 and r.json()["error"]["type"] == "ValidationError", (bad, r.text)
    r = post(str(added["seq"] + 10**9))
    assert r.status_code == 503 and r.headers.get("Retry-After"), r.text
    listed = httpx.get(served.url + "/v1/memories", params={"namespace": "alice", "limit": 1000},
                       headers={"Authorization": f"Bearer {served.tokens['alice']}"}).json()["memories"]
    assert [m["text"] for m in listed if "wasps" in m["text"]] == []  # no refused request stored anything


@pytest.mark.parametrize("value", ["²", "٣", " ", "", "0x10", "+5"])
def test_a_min_seq_header_that_is_not_plain_ascii_digits_is_a_validation_error(value):
    with pytest.raises(mc.ValidationError, match=MIN_SEQ_HEADER):
        min_seq_of(value)


def test_a_read_only_token_searches_and_gets_but_cannot_change(served):
    async def main():
        async with session(served.url, served.tokens["alice"]) as alice:
            m = ok(await alice.call_tool("add_memory", {"text": "Alice runs on Tuesdays"}))
        async with session(served.url, served.tokens["alice-ro"]) as ro:
            out = {"get": await ro.call_tool("get_memory", {"id": m["id"]}),
                   "search": await ro.call_tool("search_memories", {"query": "When does Alice run?"}),
                   "add": await ro.call_tool("add_memory", {"text": "Alice hates running"}),
                   "delete": await ro.call_tool("delete_memory", {"id": m["id"]})}
            out["feedback"] = await ro.call_tool("memory_feedback", {
                "retrieval_id": ok(out["search"])["retrieval_id"], "helpful": True})
        return m, out

    m, out = run(main)
    assert ok(out["get"])["id"] == m["id"] and m["id"] in [x["id"] for x in ok(out["search"])["memories"]]
    for name in ["add", "delete", "feedback"]:
        assert out[name].is_error and "PermissionDeniedError" in text(out[name]) and "read-only" in text(out[name])
    with served.client(served.tokens["alice"]) as rest:
        assert rest.get(f"/v1/memories/{m['id']}").json()["status"] == "active"
        stored = rest.get("/v1/memories", params={"limit": 1000}).json()["memories"]
        assert "Alice hates running" not in [x["text"] for x in stored]


def test_bad_tool_arguments_get_a_clear_error_and_change_nothing(served):
    async def main():
        async with session(served.url, served.tokens["alice"]) as alice:
            return [await alice.call_tool("add_memory", args) for args in [
                {"text": ""}, {"text": "x", "importance": 7}, {"text": "x", "category": "gossip"}, {}]] + [
                await alice.call_tool("search_memories", {"query": "x", "k": 10**6}),
                await alice.call_tool("memory_feedback", {"retrieval_id": 1})]

    with served.client(served.tokens["alice"]) as rest:
        before = rest.get("/v1/memories", params={"status": "any"}).json()["total"]
    for result in run(main):
        assert result.is_error and text(result)
    with served.client(served.tokens["alice"]) as rest:
        assert rest.get("/v1/memories", params={"status": "any"}).json()["total"] == before


# -- the namespace rule, directly ----------------------------------------------------------------

def _caller(spaces: list[str], admin: bool = False) -> Caller:
    return Caller(Token("t", tuple(spaces), False, admin, None))


@pytest.mark.parametrize("who, header, auth, expected", [
    (_caller(["alice"]), None, True, "alice"),
    (_caller(["alice"]), "alice", True, "alice"),
    (_caller(["alice", "bob"]), "bob", True, "bob"),
    (_caller([], admin=True), "anyone", True, "anyone"),
    (Caller(None), None, False, "default"),
    (Caller(None), "scratch", False, "scratch"),
    (_caller(["alice", "bob"]), None, True, mc.ValidationError),
    (_caller([], admin=True), None, True, mc.ValidationError),
    (_caller(["alice"]), "bob", True, mc.PermissionDeniedError),
    (_caller(["alice"]), " ", True, mc.ValidationError),
])
def test_the_namespace_comes_from_the_token_or_the_header(who, header, auth, expected):
    if isinstance(expected, str):
        assert choose_namespace(who, header, auth=auth) == expected
    else:
        with pytest.raises(expected):
            choose_namespace(who, header, auth=auth)


# -- over stdio, and without auth ------------------------------------------------------------------

@pytest.fixture(scope="module")
def stdio_bank(tmp_path_factory, embedder):
    """A bank with a memory in each of bob's, alice's and the default namespace; the ids by namespace."""
    path = tmp_path_factory.mktemp("stdio") / "bank.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        ids = {"bob": bank.add("Bob's bank PIN is 4321", namespace="bob", importance=1.0),
               "alice": bank.add("Alice is vegetarian", namespace="alice", category="preference"),
               "default": bank.add("The default user likes chess", namespace="default")}
    return path, ids


def test_stdio_serves_one_namespace(stdio_bank):
    path, ids = stdio_bank
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memory_core.cli", "--bank", str(path), "mcp", "--namespace", "alice"],
        cwd=str(ROOT), env={"HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
                            "TOKENIZERS_PARALLELISM": "false"})

    async def main():
        async with Client(params) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            added = await client.call_tool("add_memory", {"text": "Alice plays the cello on Sundays",
                                                          "category": "fact"})
            found = await client.call_tool("search_memories", {"query": "What does Alice do on Sundays?"})
            pin = await client.call_tool("search_memories", {"query": "What is Bob's bank PIN?"})
            bobs = await client.call_tool("get_memory", {"id": ids["bob"]})
            return tools, added, found, pin, bobs

    tools, added, found, pin, bobs = run(main)
    assert tools == TOOLS
    mid = ok(added)["id"]
    assert ok(added)["namespace"] == "alice"
    assert f"[m:{mid}]" in text(found) and "retrieval_id:" in text(found)
    assert ids["bob"] not in [m["id"] for m in ok(pin)["memories"]] and "4321" not in text(pin)
    assert bobs.is_error and "NotFoundError" in text(bobs)
    with MemoryBank.open(path) as bank:
        assert bank.get(mid).namespace == "alice" and bank.get(mid).source == "mcp"
        assert bank.history(mid)[0].actor == "mcp"


def test_stdio_writes_only_protocol_to_stdout_and_sigterm_closes_the_bank(stdio_bank):
    path, ids = stdio_bank
    with MemoryBank.open(path) as bank:
        alices = bank.stats(namespace="alice")["total"]
    proc = subprocess.Popen(
        MEMCTL + ["--bank", str(path), "mcp", "--namespace", "alice"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    try:
        for message in [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "get_memory", "arguments": {"id": ids["alice"]}}},
            # a lone surrogate, as JavaScript's JSON.stringify writes a broken string: REST's message, not "Parse error"
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
             "params": {"name": "add_memory", "arguments": {"text": "\ud800 tea"}}},
        ]:
            proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()
        replies = {r["id"]: r for r in (json.loads(proc.stdout.readline()) for _ in range(3))}  # every line is JSON-RPC
        assert replies[1]["result"]["serverInfo"]["name"] == "memory-console"
        assert replies[2]["result"]["structuredContent"]["text"] == "Alice is vegetarian"
        assert replies[3]["result"]["isError"] is True
        assert replies[3]["result"]["content"][0]["text"].startswith(
            "Error executing tool add_memory: ValidationError: text contains a lone surrogate (U+D800) at character 1")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with MemoryBank.open(path, lock_timeout=5) as bank:  # it let go of the file, and stored nothing refused
        assert bank.get(ids["alice"]).text == "Alice is vegetarian"
        assert bank.stats(namespace="alice")["total"] == alices


def test_without_auth_the_header_names_the_namespace_or_it_is_default(stdio_bank):
    path, ids = stdio_bank
    server = Served(path, "--no-auth")

    async def main():
        async with session(server.url) as anonymous:
            own = await anonymous.call_tool("get_memory", {"id": ids["default"]})
            alices = await anonymous.call_tool("get_memory", {"id": ids["alice"]})
        async with session(server.url, namespace="alice") as as_alice:
            in_alice = await as_alice.call_tool("get_memory", {"id": ids["alice"]})
        return own, alices, in_alice

    try:
        own, alices, in_alice = run(main)
        # DNS rebinding: without tokens, a request naming another host is refused.
        r = httpx.post(server.url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                       headers={"Accept": "application/json, text/event-stream", "Host": "evil.example"})
        assert r.status_code in (400, 403, 421), r.text
    finally:
        assert server.stop() == 0, server.output()
    assert ok(own)["namespace"] == "default"
    assert alices.is_error and "NotFoundError" in text(alices)
    assert ok(in_alice)["namespace"] == "alice"


def test_serve_no_mcp_leaves_the_endpoint_out(tmp_path):
    server = Served(tmp_path / "bank.duckdb", "--no-auth", "--no-mcp")
    try:
        r = httpx.post(server.url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert r.status_code == 404 and r.json()["error"]["type"] == "NotFoundError"
    finally:
        assert server.stop() == 0, server.output()
