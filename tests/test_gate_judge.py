"""The recall gate's LLM judge (memory_core.index.gate.LLMJudge) against the stand-in OpenAI server.

The judge costs a model call, so it is asked only for turns no trigger rule decides, and once per
distinct turn. A judge that answers nonsense (or nothing) never breaks a turn: the gate falls back
to its default and says why. Wired into a bank with ``use_llm``, its decisions show up in the
retrieval log.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from llm_server import StandInLLM, closed_port_url
from memory_core import MemoryBank
from memory_core.index.gate import Gate, LLMJudge
from memory_core.language.llm import LLMClient, LLMConfig

NOW = datetime(2026, 11, 30, 12, tzinfo=timezone.utc)
UNDECIDED = "Is the Lisbon trip still a good idea?"  # no trigger rule and no no-memory rule matches
YES = {"recall": True, "reason": "asks about a trip the user planned"}
NO = {"recall": False, "reason": "small talk, nothing personal"}


def make_client(base_url: str) -> LLMClient:
    return LLMClient(LLMConfig(base_url=base_url, model="stand-in-model", timeout=5, max_retries=0),
                     backoff_base=0.01)


@pytest.fixture
def gate(llm_server: StandInLLM) -> Gate:
    return Gate(judge=LLMJudge(make_client(llm_server.base_url)))


def test_the_query_is_undecided_by_the_rules() -> None:
    decision = Gate().decide(UNDECIDED)
    assert (decision.source, decision.recall) == ("default", False)


@pytest.mark.parametrize("query, recall, rule", [
    ("What did we talk about last time?", True, "en.earlier_talk.last_time"),
    ("What should I cook tonight?", True, "en.recommendation.what_should_i"),
    ("What is the capital of France?", False, "en.no_memory.factual_question"),
])
def test_a_rule_decided_turn_makes_no_request(gate: Gate, llm_server: StandInLLM, query: str, recall: bool,
                                              rule: str) -> None:
    llm_server.always(YES if not recall else NO)  # would flip the answer, if it were asked
    decision = gate.decide(query)
    assert (decision.recall, decision.source, decision.rule) == (recall, "rules", rule)
    assert llm_server.chat_requests == []


@pytest.mark.parametrize("reply, recall", [(YES, True), (NO, False)])
def test_the_judge_answers_yes_or_no_with_a_reason(gate: Gate, llm_server: StandInLLM, reply: dict,
                                                   recall: bool) -> None:
    llm_server.always(reply)
    decision = gate.decide(UNDECIDED)
    assert (decision.recall, decision.source) == (recall, "llm")
    assert reply["reason"] in decision.reason
    [request] = llm_server.chat_requests
    messages = request.messages
    assert messages[-1] == {"role": "user", "content": UNDECIDED}
    assert "recall" in messages[0]["content"] and "JSON" in " ".join(m["content"] for m in messages)


def test_answers_are_cached_per_query(gate: Gate, llm_server: StandInLLM) -> None:
    llm_server.script(YES, NO)
    first = gate.decide(UNDECIDED)
    assert len(llm_server.chat_requests) == 1
    # The same turn again, also with other spacing and case: no second call, the same answer.
    assert gate.decide(UNDECIDED) == first
    assert gate.decide("  is the LISBON trip   still a good idea?") == first
    assert len(llm_server.chat_requests) == 1
    # Another turn is asked about.
    other = gate.decide("Any thoughts on the new kitchen?")
    assert other.recall is False and len(llm_server.chat_requests) == 2


@pytest.mark.parametrize("reply", [
    "Yes, I think you should recall.",  # not JSON, even after the repair request
    {"recall": "yes", "reason": "sure"},  # a string, not a bool
    {"answer": True},  # the wrong key
    [True],  # not an object
])
def test_an_unusable_reply_falls_back_to_the_default_with_a_reason(gate: Gate, llm_server: StandInLLM,
                                                                   reply) -> None:
    llm_server.always(reply)
    decision = gate.decide(UNDECIDED)
    assert (decision.recall, decision.source, decision.rule) == (False, "default", None)
    assert "judge failed" in decision.reason and "used default (False)" in decision.reason
    # A failure is not remembered: once the model answers properly, it is used.
    llm_server.reset()
    llm_server.always(YES)
    assert gate.decide(UNDECIDED).source == "llm"


def test_an_unreachable_endpoint_falls_back_to_the_default() -> None:
    gate = Gate(judge=LLMJudge(make_client(closed_port_url())))
    decision = gate.decide(UNDECIDED)
    assert (decision.recall, decision.source) == (False, "default")
    assert "judge failed" in decision.reason


# -- wired into a bank ---------------------------------------------------------------------------


@pytest.fixture
def trip_bank(bank: MemoryBank) -> MemoryBank:
    # add_many: no write-time conflict checks, so the only LLM calls are the gate's.
    bank.add_many([
        {"text": "Plans a trip to Lisbon in May with her sister", "namespace": "alice", "importance": 0.7,
         "category": "goal", "created_at": "2026-10-01T10:00:00Z"},
        {"text": "Prefers window seats on long flights", "namespace": "alice", "importance": 0.6,
         "category": "preference", "created_at": "2026-09-01T10:00:00Z"},
    ])
    return bank


def test_use_llm_makes_recall_ask_the_judge_and_log_it(trip_bank: MemoryBank, llm_server: StandInLLM) -> None:
    trip_bank.use_llm(make_client(llm_server.base_url))
    llm_server.script(YES, NO)

    hits = trip_bank.recall(UNDECIDED, namespace="alice", gate=True, now=NOW, threshold=0)

    assert hits and hits[0].memory.text == "Plans a trip to Lisbon in May with her sister"
    [logged] = trip_bank.retrievals(namespace="alice", limit=1)
    assert logged["gate"]["source"] == "llm" and logged["gate"]["recall"] is True
    assert YES["reason"] in logged["gate"]["reason"]
    assert logged["n_results"] == len(hits)

    # The judge says no: nothing is recalled, and the log says who decided.
    assert trip_bank.recall("Any thoughts on the weather in Porto?", namespace="alice", gate=True, now=NOW,
                            threshold=0) == []
    logged = trip_bank.retrievals(namespace="alice", limit=1)[0]
    assert logged["gate"]["source"] == "llm" and logged["gate"]["recall"] is False
    # A rule-decided turn never reaches the model.
    trip_bank.recall("What did we talk about last time?", namespace="alice", gate=True, now=NOW)
    assert trip_bank.retrievals(namespace="alice", limit=1)[0]["gate"]["source"] == "rules"
    assert len(llm_server.chat_requests) == 2


def test_recall_with_a_broken_judge_does_not_crash(trip_bank: MemoryBank, llm_server: StandInLLM) -> None:
    trip_bank.use_llm(make_client(llm_server.base_url))
    llm_server.always_broken_json()

    assert trip_bank.recall(UNDECIDED, namespace="alice", gate=True, now=NOW, threshold=0) == []

    logged = trip_bank.retrievals(namespace="alice", limit=1)[0]
    assert logged["gate"]["source"] == "default" and logged["gate"]["recall"] is False
    assert "judge failed" in logged["gate"]["reason"]
    # Without the gate the same turn still recalls: the memory itself is fine.
    assert trip_bank.recall(UNDECIDED, namespace="alice", now=NOW, threshold=0, record=False)


def test_use_llm_none_goes_back_to_rules_only(trip_bank: MemoryBank, llm_server: StandInLLM) -> None:
    trip_bank.use_llm(make_client(llm_server.base_url))
    trip_bank.use_llm(None)
    llm_server.always(YES)
    assert trip_bank.recall(UNDECIDED, namespace="alice", gate=True, now=NOW) == []
    assert trip_bank.retrievals(limit=1)[0]["gate"]["source"] == "default"
    assert llm_server.chat_requests == []
