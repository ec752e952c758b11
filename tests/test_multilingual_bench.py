"""bench/multilingual.py on a tiny set in its format: banks built through the public API, hit@1
beside the model's own cosine, and namespaces named after the set's person (a smoke test: no
figures)."""

from __future__ import annotations

from bench import multilingual

TINY = {
    "person": {"namespace": "ines", "name": {"en": "Ines", "zh": "伊内丝", "sv": "Ines"}},
    "facts": [
        {"id": 1, "text": {"en": "Allergic to peanuts", "zh": "对花生过敏", "sv": "Allergisk mot jordnötter"},
         "questions": {"en": ["What is Ines allergic to?"], "zh": ["伊内丝对什么过敏？"], "sv": ["Vad är Ines allergisk mot?"]}},
        {"id": 2, "text": {"en": "Plays the violin in an orchestra", "zh": "在乐团里拉小提琴",
                           "sv": "Spelar fiol i en orkester"},
         "questions": {"en": ["Which instrument does Ines play?"], "zh": ["伊内丝演奏什么乐器？"],
                       "sv": ["Vilket instrument spelar Ines?"]}},
    ],
    "general": {"en": ["How tall is the Eiffel Tower?"], "zh": ["埃菲尔铁塔有多高？"], "sv": ["Hur högt är Eiffeltornet?"]},
    "unanswered": [
        {"id": 1, "question": {"en": "Who is Ines's violin teacher?", "zh": "伊内丝的小提琴老师是谁？",
                               "sv": "Vem är Ines fiollärare?"}},
        {"id": 2, "question": {"en": "What is Ines's blood type?", "zh": "伊内丝是什么血型？",
                               "sv": "Vilken blodgrupp har Ines?"}},
    ],
}


def test_a_tiny_set_reports_the_blend_beside_the_cosine(embedder):
    result = multilingual.run(data=TINY, log=lambda *_: None)
    assert len(result["records"]) == 2 * 3 * 3 and all("cosine_got" in r for r in result["records"])
    summary = multilingual.summarize(result)
    for split in ("all", "dev", "test"):
        s = summary["splits"][split]
        assert set(s["same"]) == set(s["same_cosine"]) == {"en", "zh", "sv"}
        assert 0.0 <= s["all_thr"] <= 1.0
    text = multilingual.report(summary)
    assert "cosine" in text and "| all |" in text and "personal unanswered empty" in text
    assert len(result["unanswered"]) == 2 * 3
    for split, asked in (("all", 2), ("dev", 1), ("test", 1)):
        for lang in ("en", "zh", "sv"):
            share = summary["unanswered_empty"][split][lang]
            assert share * asked == round(share * asked) and 0.0 <= share <= 1.0
