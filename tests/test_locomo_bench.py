"""bench/locomo.py on a tiny conversation in LoCoMo's format: banks built through the public API,
recall@k by mode and category, and the no-memory analysis (a smoke test: no timings, no figures)."""

from __future__ import annotations

import json

import pytest

from bench import locomo

CONVERSATION = [{
    "sample_id": "tiny",
    "conversation": {
        "speaker_a": "Caroline", "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Caroline", "dia_id": "D1:1", "text": "Hey Mel! How have you been?"},
            {"speaker": "Melanie", "dia_id": "D1:2", "text": "Swamped with the kids. Anything new?"},
            {"speaker": "Caroline", "dia_id": "D1:3", "text": "I went to an LGBTQ support group yesterday."},
            {"speaker": "Melanie", "dia_id": "D1:4", "text": "That's great! How did it feel?"},
            {"speaker": "Caroline", "dia_id": "D1:5", "text": "So powerful. I felt accepted."},
        ],
        "session_2_date_time": "1:14 pm on 25 May, 2023",
        "session_2": [
            {"speaker": "Melanie", "dia_id": "D2:1", "text": "I ran a charity race for mental health last Saturday."},
            {"speaker": "Caroline", "dia_id": "D2:2", "text": "Wow! What made you do it?"},
            {"speaker": "Melanie", "dia_id": "D2:3", "text": "It reminded me that self-care really matters."},
            {"speaker": "Caroline", "dia_id": "D2:4", "text": "I'm researching adoption agencies these days."},
        ],
    },
    "qa": [
        {"question": "When did Melanie run a charity race?", "answer": "20 May 2023", "evidence": ["D2:1"],
         "category": 2},
        {"question": "What did Caroline research?", "answer": "Adoption agencies", "evidence": ["D2:4"],
         "category": 1},
        {"question": "How did Caroline feel at the LGBTQ support group?", "answer": "accepted",
         "evidence": ["D1:3", "D1:5"], "category": 4},
        {"question": "What did Caroline realize after her charity race?", "evidence": ["D2:3"], "category": 5,
         "adversarial_answer": "self-care is important"},
    ],
}]


@pytest.fixture(scope="module")
def result(tmp_path_factory, embedder):
    path = tmp_path_factory.mktemp("locomo") / "tiny.json"
    path.write_text(json.dumps(CONVERSATION))
    return locomo.run(path, general=["What is the capital of Australia?", "How do I reverse a list in Python?"],
                      log=lambda *_: None)


def test_every_turn_is_a_memory_with_its_neighbours_as_context(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(CONVERSATION))
    conv = locomo.load(path)[0]
    assert [t["dia_id"] for t in conv["turns"]][:2] == ["D1:1", "D1:2"] and len(conv["turns"]) == 9
    reply = conv["turns"][4]
    assert reply["text"] == "Caroline: So powerful. I felt accepted."
    assert reply["context"] == "Melanie: That's great! How did it feel?"  # last of its session: no next
    # Dated by session, in turn order; recalled as of the day after the last session.
    assert conv["turns"][5]["created_at"].day == 25 and conv["now"].day == 26


def test_recall_at_k_by_mode_and_category(result):
    summary = locomo.summarize(result)
    recall = summary["recall"]["all"]
    assert set(recall) == {"dense", "lexical", "hybrid", "no_lifts"}  # no_lifts: the default without its lifts
    assert set(recall["hybrid"]) == {"all", "multi-hop", "temporal", "single-hop"}
    for mode in recall.values():
        values = [mode["all"][k] for k in locomo.KS]
        assert values == sorted(values) and 0 <= values[0] and values[-1] <= 1  # recall grows with k
    # Nine memories: every evidence turn is in the top 20 whatever the mode.
    assert all(m["all"][20] == 1 for m in recall.values())
    # The distinctive questions find their turn first with the default.
    assert recall["hybrid"]["temporal"][1] == 1 and recall["hybrid"]["multi-hop"][1] == 1
    assert summary["questions"]["all"] == 3 and "held-out (5-9)" not in summary["recall"]


def test_no_memory_questions_and_the_threshold_cost(result):
    summary = locomo.summarize(result)
    nm = summary["no_memory"]
    assert nm["general"]["questions"] == 2 and nm["adversarial"]["questions"] == 1
    assert nm["general"]["empty_at_default"] == 1.0  # nothing about Canberra or Python here
    assert nm["r10_default_threshold"] <= nm["r10_threshold_0"]
    sweep = summary["threshold_sweep"]
    assert sweep[0]["threshold"] == 0 and sweep[0]["general_empty"] == 0
    assert [s["general_empty"] for s in sweep] == sorted(s["general_empty"] for s in sweep)
    text = locomo.report(summary, result)
    assert "| hybrid |" in text and "No memory needed" in text


def test_a_run_resumes_from_its_records_file(tmp_path, result, embedder):
    """Finished conversations are kept one per line; a second run with the same file asks nothing
    again and summarizes the same figures."""
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(CONVERSATION))
    records = tmp_path / "records.jsonl"
    general = ["What is the capital of Australia?", "How do I reverse a list in Python?"]
    first = locomo.run(path, general=general, records_file=records, log=lambda *_: None)
    assert len(records.read_text().splitlines()) == 1
    again = locomo.run(path, general=general, records_file=records, log=lambda *_: None)
    assert len(records.read_text().splitlines()) == 1
    assert locomo.summarize(again) == locomo.summarize(first) == locomo.summarize(result)
