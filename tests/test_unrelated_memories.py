"""An irrelevant memory is worse than none: on small, fresh banks of unrelated memories (everything
new, so recency and usage are at their highest), questions about none of them get nothing back,
in English, Chinese and Swedish, through the library, the REST API and MCP (issue 35, item 1)."""

from __future__ import annotations

from typing import Any

import anyio
import httpx as httpx2
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from memory_core import MemoryBank
from memctl_server import Served

MEMORIES = [
    "Prefers vegetarian food", "用户喜欢喝绿茶", "Anna tycker att bråk är svårt",
    "Has a dog called Pixel", "在上海的一家银行工作", "Spelar fotboll på lördagar",
    "Is allergic to penicillin", "女儿明年九月上小学", "Ska flytta till Umeå i augusti",
    "Drives a red Volvo", "每天早上跑步五公里", "Har två katter som heter Sixten och Maja",
    "Learning Japanese for a trip to Kyoto", "不喜欢吃香菜", "Jobbar som sjuksköterska på natten",
]
UNRELATED_QUESTIONS = [
    "What is the capital of Australia?", "How do I convert Celsius to Fahrenheit?",
    "澳大利亚的首都是哪里？", "光速是多少？",
    "Vad är huvudstaden i Australien?", "Hur många ben har en spindel?",
]


def _memories(n: int) -> list[str]:
    return [MEMORIES[i % len(MEMORIES)] + ("" if i < len(MEMORIES) else f" ({i})") for i in range(n)]


@pytest.mark.parametrize("n", [1, 3, 10, 100])
def test_questions_about_no_memory_get_nothing_on_a_fresh_bank(tmp_path, n):
    with MemoryBank.open(tmp_path / "b.duckdb") as bank:
        bank.add_many([{"text": t, "namespace": "u", "importance": 0.9} for t in _memories(n)])
        for question in UNRELATED_QUESTIONS:
            hits = bank.recall(question, namespace="u")  # recorded: usage counts rise as they would
            assert hits == [], (question, [(h.memory.text, round(h.score, 3), h.components) for h in hits])
        # ...while a question about one of them finds it, in another language too.
        for question in ("Is the user a vegetarian?", "Äter användaren vegetarisk mat?"):
            assert bank.recall(question, namespace="u", record=False)[0].memory.text == MEMORIES[0], question


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    path = tmp_path_factory.mktemp("unrelated") / "bank.duckdb"
    with MemoryBank.open(path) as bank:
        token = bank.tokens.create("agent", ["u"])[1]
        bank.add_many([{"text": t, "namespace": "u"} for t in MEMORIES[:3]])
    server = Served(path)
    server.token = token
    yield server
    assert server.stop() == 0, server.output()


def test_the_rest_api_and_the_remote_client_return_nothing_unrelated(served):
    with MemoryBank.open(served.url, token=served.token) as remote:
        hits = remote.recall("Vad har Anna svårt med?", namespace="u")  # the report's own question
        assert [h.memory.text for h in hits] == ["Anna tycker att bråk är svårt"], hits
        for question in UNRELATED_QUESTIONS:
            assert remote.recall(question, namespace="u") == [], question
    with served.client(served.token) as rest:
        for question in UNRELATED_QUESTIONS:
            body = rest.post("/v1/recall", json={"query": question, "namespace": "u"}).json()
            assert body["hits"] == [] and body["prompt"] == "", body


def test_mcp_search_returns_nothing_unrelated(served):
    async def main() -> list[Any]:
        headers = {"Authorization": f"Bearer {served.token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
            async with Client(streamable_http_client(served.url + "/mcp", http_client=http)) as client:
                return [await client.call_tool("search_memories", {"query": q}) for q in UNRELATED_QUESTIONS]

    for result in anyio.run(main):
        assert not result.is_error and result.structured_content["memories"] == [], result
