"""A LangGraph agent whose long-term memory is a Memory Console bank; runs offline, no LLM.

    python examples/langgraph_agent.py --bank data/agent.duckdb
    # or --bank postgresql://user@host/db, or --bank http://127.0.0.1:8765 --token SECRET

The graph has three nodes. ``remember`` stores what the user asks it to remember ("Remember that
...") in the store, under ``("users", <user id>, "memories")``; otherwise ``recall`` searches that namespace
with the user's message (the bank's blended recall and its threshold: an off-topic question gets
no memories); ``answer`` puts what was recalled into the system prompt and asks the chat model.
The chat model here is langchain_core's ``GenericFakeChatModel`` (canned replies), so the example
runs anywhere; swap in any chat model for a real agent. The memories, the recalls and their
scores are in the bank: open it in the dashboard (``memctl --bank ... ``, ``make run BANK=...``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from typing import Annotated, Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from memory_core.integrations.langgraph_store import MemoryBankStore


@dataclass
class Context:
    user_id: str


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    memories: list[dict[str, Any]]
    stored: bool


def namespace(runtime: Runtime[Context]) -> tuple[str, ...]:
    return ("users", runtime.context.user_id, "memories")


def remember(state: State, runtime: Runtime[Context]) -> State:
    """Store "Remember that ..." statements; the key is the statement's hash, so saying it again
    updates the same memory instead of adding a copy."""
    text = state["messages"][-1].content
    if isinstance(text, str) and text.lower().startswith("remember that "):
        fact = text[len("remember that "):].strip().rstrip(".")
        key = hashlib.sha256(fact.lower().encode()).hexdigest()[:16]
        runtime.store.put(namespace(runtime), key, {"text": fact[0].upper() + fact[1:] + ".", "importance": 0.8})
        return {"stored": True, "memories": []}
    return {"stored": False}


def recall(state: State, runtime: Runtime[Context]) -> State:
    query = state["messages"][-1].content
    found = runtime.store.search(namespace(runtime), query=query, limit=3)
    return {"memories": [{"text": item.value["text"], "score": round(item.score or 0.0, 3)} for item in found]}


def make_answer(model: Any):
    def answer(state: State) -> State:
        known = "\n".join(f"- {m['text']}" for m in state.get("memories", [])) or "(nothing relevant)"
        prompt = SystemMessage(f"You are a helpful assistant. What you remember about the user:\n{known}")
        return {"messages": [model.invoke([prompt, *state["messages"]])]}
    return answer


def build(store: MemoryBankStore, replies: list[str]) -> Any:
    """The compiled graph, with the store as its long-term memory."""
    model = GenericFakeChatModel(messages=iter(AIMessage(r) for r in replies))
    graph = StateGraph(State, context_schema=Context)
    graph.add_node("remember", remember)
    graph.add_node("recall", recall)
    graph.add_node("answer", make_answer(model))
    graph.add_edge(START, "remember")
    graph.add_conditional_edges("remember", lambda state: "answer" if state.get("stored") else "recall")
    graph.add_edge("recall", "answer")
    graph.add_edge("answer", END)
    return graph.compile(store=store)


CONVERSATION = [  # (user, message, the fake model's reply)
    ("alice", "Remember that I am vegetarian and never eat fish.", "Noted: no meat or fish for you."),
    ("alice", "Remember that I am training for the Oslo marathon in June.", "Good luck with the training!"),
    ("alice", "Do I eat fish? Thinking of dinner.", "None: you never eat fish. How about a lentil curry?"),
    ("alice", "Which race am I training for?", "The Oslo marathon in June."),
    ("bob", "Do I eat fish? Thinking of dinner.", "Salmon with lemon is quick and good."),
    ("alice", "What is the capital of Australia?", "Canberra."),
]


def run(location: str, token: str | None = None) -> list[dict[str, Any]]:
    """Play the conversation; one record per turn (user, message, recalled memories, reply)."""
    turns = []
    with MemoryBankStore(location, token=token) as store:
        agent = build(store, [reply for _, _, reply in CONVERSATION])
        for user, message, _ in CONVERSATION:
            out = agent.invoke({"messages": [HumanMessage(message)]}, context=Context(user_id=user))
            turns.append({"user": user, "message": message, "memories": out.get("memories", []),
                          "reply": out["messages"][-1].content})
    return turns


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bank", required=True, help="a bank file, a postgresql:// URL or a served bank's URL")
    parser.add_argument("--token", default=None, help="the token of a served bank")
    parser.add_argument("--json", action="store_true", help="print the turns as JSON lines")
    args = parser.parse_args(argv)
    for turn in run(args.bank, args.token):
        if args.json:
            print(json.dumps(turn, ensure_ascii=False))
            continue
        print(f"{turn['user']}: {turn['message']}")
        for m in turn["memories"]:
            print(f"    recalled ({m['score']}): {m['text']}")
        print(f"assistant: {turn['reply']}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
