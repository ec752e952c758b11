"""Tests for memory_core.index.gate, the cheap "should this turn recall memory?" gate."""

from __future__ import annotations

import json
import re
import time
import unicodedata
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.index import gate as gate_module
from memory_core.errors import MemoryCoreError, ValidationError
from memory_core.language.rules.gate_patterns import ABOUT_USER
from memory_core.index.gate import RULES, Gate, GateDecision, explain_rules, should_recall
from memory_core.language.text import fold_chinese

POSITIVE_CATEGORIES = {
    "earlier_talk", "preference", "decision_or_goal", "personal_fact", "recommendation",
}

# --------------------------------------------------------------------------- #
# Example tables: (query, expected rule-id prefix "<lang>.<category>")
# --------------------------------------------------------------------------- #

EN_POSITIVE = [
    ("What did we talk about last time?", "en.earlier_talk"),
    ("As we discussed, let's go with Postgres.", "en.earlier_talk"),
    ("You told me about a book on habits, which one was it?", "en.earlier_talk"),
    ("Do you remember the name of that hotel?", "en.earlier_talk"),
    ("Remember when I said I'd visit Rome?", "en.earlier_talk"),
    ("Format the report like before.", "en.earlier_talk"),
    ("Can you explain that again?", "en.earlier_talk"),
    ("Let's pick up where we left off.", "en.earlier_talk"),
    ("What's my preference for seats on flights?", "en.preference"),
    ("What kind of music do I like?", "en.preference"),
    ("What's my favorite colour?", "en.preference"),
    ("I usually run in the mornings, plan a week around that.", "en.preference"),
    ("What did we decide about the database?", "en.decision_or_goal"),
    ("How am I doing on my goal for this quarter?", "en.decision_or_goal"),
    ("Where was I?", "en.decision_or_goal"),
    ("My wife's birthday is next week.", "en.personal_fact"),
    ("How old is my dog now?", "en.personal_fact"),
    ("Any news on my project?", "en.personal_fact"),
    ("Is a keto diet good for me?", "en.personal_fact"),
    ("What do you know about me?", "en.personal_fact"),
    ("Recommend me a movie for tonight.", "en.recommendation"),
    ("Can you suggest a restaurant nearby?", "en.recommendation"),
    ("What should I cook tonight?", "en.recommendation"),
    ("Any ideas for me this weekend?", "en.recommendation"),
]

EN_NEGATIVE = [
    "What is the capital of France?",
    "hi",
    "Thanks!",
    "thanks again!",
    "Good morning!",
    "How do I cook rice?",
    "Who wrote Hamlet?",
    "Why is the sky blue?",
    "Explain how photosynthesis works.",
    "Can you explain photosynthesis for me?",
    "When was the last time the Cubs won the World Series?",
    "What does the research suggest about coffee?",
    "What does the WHO recommend for daily water intake?",
    "Tell me about the history of the Roman Empire.",
    "I want to learn about black holes.",
    "Translate 'good night' into German.",
]

SV_POSITIVE = [
    ("Vad pratade vi om förra gången?", "sv.earlier_talk"),
    ("Som vi diskuterade igår, kör vi på Postgres.", "sv.earlier_talk"),
    ("Du sa att jag borde läsa en bok, vilken var det?", "sv.earlier_talk"),
    ("Kommer du ihåg vad jag sa om resan?", "sv.earlier_talk"),
    ("Minns du namnet på hotellet?", "sv.earlier_talk"),
    ("Gör som förut.", "sv.earlier_talk"),
    ("Kan du förklara det igen?", "sv.earlier_talk"),
    ("Vad är min favoritfärg?", "sv.preference"),
    ("Vad gillar jag för musik?", "sv.preference"),
    ("Jag brukar springa på morgonen, gör ett veckoschema.", "sv.preference"),
    ("VAD ÄR MIN FAVORITMAT?", "sv.preference"),
    ("Vad bestämde vi om databasen?", "sv.decision_or_goal"),
    ("Hur går det med mina mål för i år?", "sv.decision_or_goal"),
    ("Var var jag?", "sv.decision_or_goal"),
    ("Min fru fyller år nästa vecka.", "sv.personal_fact"),
    ("Hur gammal är min hund?", "sv.personal_fact"),
    ("Hur går det med mitt projekt?", "sv.personal_fact"),
    ("Mina barn vill ha glass.", "sv.personal_fact"),
    ("Vilken laptop passar mig bäst?", "sv.personal_fact"),
    ("Kan du rekommendera en film?", "sv.recommendation"),
    ("Föreslå något att göra i helgen.", "sv.recommendation"),
    ("Vad ska jag laga till middag ikväll?", "sv.recommendation"),
]

SV_NEGATIVE = [
    "Vad är huvudstaden i Frankrike?",
    "Hej!",
    "Tack så mycket!",
    "tack igen",
    "Hej då",
    "Hur kokar man ris?",
    "Hur kokar jag ris?",
    "Vem skrev Röda rummet?",
    "Vilket år föll Berlinmuren?",
    "Förklara fotosyntesen.",
    "När var sista gången Sverige vann VM?",
    "Vad betyder ordet lagom?",
    "Jag vill lära mig om svarta hål.",
]

ZH_POSITIVE = [
    ("上次我们聊到哪了？", "zh.earlier_talk"),
    ("我们之前讨论过这个方案。", "zh.earlier_talk"),
    ("你上次说的那本书叫什么？", "zh.earlier_talk"),
    ("你还记得我的生日吗？", "zh.earlier_talk"),
    ("像上次一样做。", "zh.earlier_talk"),
    ("再来一次。", "zh.earlier_talk"),
    ("我跟你说过我对花生过敏。", "zh.earlier_talk"),
    ("我的偏好是什么？", "zh.preference"),
    ("我喜欢什么音乐？", "zh.preference"),
    ("我平时几点起床？", "zh.preference"),
    ("我们决定用哪个数据库？", "zh.decision_or_goal"),
    ("我的目标是什么？", "zh.decision_or_goal"),
    ("我做到哪一步了？", "zh.decision_or_goal"),
    ("我老婆下周过生日。", "zh.personal_fact"),
    ("我家的狗多大了？", "zh.personal_fact"),
    ("我的项目进展如何？", "zh.personal_fact"),
    ("给我推荐一部电影。", "zh.recommendation"),
    ("有什么建议吗？", "zh.recommendation"),
    ("我今晚应该吃什么？", "zh.recommendation"),
    # Traditional characters (Taiwan / Hong Kong spellings).
    ("上次我們聊到哪裡了？", "zh.earlier_talk"),
    ("你還記得嗎？", "zh.earlier_talk"),
    ("我最喜歡的電影是什麼？", "zh.preference"),
    ("我的目標是甚麼？", "zh.decision_or_goal"),
    ("我們的計畫有變嗎？", "zh.decision_or_goal"),
    ("我老公的生日快到了。", "zh.personal_fact"),
    ("推薦一本書給我。", "zh.recommendation"),
    ("我應該買什麼？", "zh.recommendation"),
]

ZH_NEGATIVE = [
    "法国的首都是哪里？",
    "法國的首都是哪裡？",
    "你好",
    "谢谢！",
    "再见！",
    "我怎么煮米饭？",
    "为什么天空是蓝色的？",
    "请解释一下相对论。",
    "美国上次登月是什么时候？",
    "地球有多大？",
    "帮我翻译这句话：good night",
]

ALL_POSITIVE = EN_POSITIVE + SV_POSITIVE + ZH_POSITIVE
ALL_NEGATIVE = EN_NEGATIVE + SV_NEGATIVE + ZH_NEGATIVE

# Turns where a sloppy pattern would fire on part of a word or on a
# non-personal use of a trigger word.
WORD_BOUNDARY_TRAPS = [
    "Who led the Human Taxonomy Project?",             # "my project" inside "taxonomy project"
    "What is the economy plan of Sweden?",             # "my plan" inside "economy plan"
    "Did the economy work well in ancient Rome?",      # "my work" inside "economy work"
    "Why did Britain fight against Napoleon?",         # "again" inside "against"
    "Is it raining in Hawaii usually in May?",         # "i usually" inside "hawaii usually"
    "Give me ideas for meals with lentils.",           # "ideas for me" inside "for meals"
    "What is a myth?",                                 # "my" inside "myth"
    "Hur tar man sig igenom tullen?",                  # "igen" inside "igenom"
    "Hur fungerar ansiktsigenkänning?",                # "igen" inside a compound
    "Vad händer mitt i en orkan?",                     # "mitt" meaning "middle"
    "Hur många minuter tar det att koka ett ägg?",     # "min" inside "minuter"
    "Vad är skillnaden mellan korttidsminne och långtidsminne?",
    "什么是自我意识？",                                  # 我 inside 自我
    "再见",                                            # 再 in "goodbye", not "again"
    "你告诉我法国的首都",                                # "tell me", not "you told me"
    "我们定义函数f(x)=x+1",                             # 我们定义 is not 我们定下
    "我们应用这个公式",                                  # 应用 as a verb, not "our app"
    "医生推荐成年人每天睡几个小时",                        # third-party 推荐, not a request
]

# Clear general-knowledge / small-talk turns must be settled by a no-memory
# rule so a configured judge is not paid for them.
NO_MEMORY_RULE_CASES = [
    ("What is the capital of France?", "en.no_memory."),
    ("hi", "en.no_memory."),
    ("thanks again!", "en.no_memory."),
    ("How do I cook rice?", "en.no_memory."),
    ("Vad är huvudstaden i Frankrike?", "sv.no_memory."),
    ("Hej!", "sv.no_memory."),
    ("tack igen", "sv.no_memory."),
    ("Hur kokar man ris?", "sv.no_memory."),
    ("法国的首都是哪里？", "zh.no_memory."),
    ("法國的首都是哪裡？", "zh.no_memory."),
    ("谢谢！", "zh.no_memory."),
    ("我怎么煮米饭？", "zh.no_memory."),
]


def _rule_category(rule_id: str) -> str:
    return rule_id.split(".")[1]


def _to_fullwidth(text: str) -> str:
    """Rewrite ASCII as full-width forms, as typed on a CJK keyboard."""
    out = []
    for ch in text:
        if ch == " ":
            out.append("\u3000")
        elif "!" <= ch <= "~":
            out.append(chr(ord(ch) + 0xFEE0))
        else:
            out.append(ch)
    return "".join(out)


# --------------------------------------------------------------------------- #
# Positive / negative tables
# --------------------------------------------------------------------------- #


def test_tables_meet_minimum_sizes() -> None:
    # Guards against the tables being trimmed below what the brief requires.
    for positive, negative in [(EN_POSITIVE, EN_NEGATIVE), (SV_POSITIVE, SV_NEGATIVE),
                               (ZH_POSITIVE, ZH_NEGATIVE)]:
        assert len(positive) >= 12
        assert len(negative) >= 8


@pytest.mark.parametrize(("query", "expected_prefix"), ALL_POSITIVE)
def test_positive_examples_recall(query: str, expected_prefix: str) -> None:
    decision = should_recall(query)
    assert decision.recall is True
    assert decision.source == "rules"
    assert decision.rule is not None
    assert decision.rule.startswith(expected_prefix + "."), decision


@pytest.mark.parametrize("query", ALL_NEGATIVE)
def test_negative_examples_do_not_recall(query: str) -> None:
    decision = should_recall(query)
    assert decision.recall is False, decision
    assert decision.source in {"rules", "default"}


@pytest.mark.parametrize("query", WORD_BOUNDARY_TRAPS)
def test_word_boundary_traps_do_not_recall(query: str) -> None:
    decision = should_recall(query)
    assert decision.recall is False, decision


@pytest.mark.parametrize(("query", "expected_prefix"), NO_MEMORY_RULE_CASES)
def test_clear_no_memory_turns_are_decided_by_rules(query: str, expected_prefix: str) -> None:
    decision = should_recall(query)
    assert decision.recall is False
    assert decision.source == "rules"
    assert decision.rule is not None and decision.rule.startswith(expected_prefix)


def test_cooking_recommendation_vs_cooking_howto() -> None:
    # The brief's own contrast: a personalised choice recalls, a recipe does not.
    assert should_recall("what should I cook tonight?").recall is True
    assert should_recall("how do I cook rice").recall is False


def test_bare_for_me_politeness_does_not_recall_but_suitability_does() -> None:
    assert should_recall("Could you summarise this article for me?").recall is False
    assert should_recall("Is running every day too much for me?").recall is True


def test_new_topic_without_personal_reference_falls_to_default() -> None:
    decision = should_recall("I want to learn about black holes.")
    assert decision == GateDecision(False, "no trigger rule matched", None, "default")


# --------------------------------------------------------------------------- #
# Normalisation
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(("query", "expected_prefix"), ALL_POSITIVE)
def test_case_and_fullwidth_do_not_change_the_rule(query: str, expected_prefix: str) -> None:
    rule = should_recall(query).rule
    assert should_recall(query.upper()).rule == rule
    assert should_recall(_to_fullwidth(query)).rule == rule


@pytest.mark.parametrize(
    ("query", "expected_rule"),
    [
        ("ＷＨＡＴ　ＳＨＯＵＬＤ　Ｉ　ＣＯＯＫ？", "en.recommendation.what_should_i"),
        ("you\u2019re right, like I said before", "en.earlier_talk.as_discussed"),
        ("what did we decide about my\u00a0\u00a0  wife's   party", "en.decision_or_goal.what_did_we_decide"),
        ("how is my\u200b wife doing", "en.personal_fact.my_people"),
        ("上\u200b次我们聊了什么", "zh.earlier_talk.last_time"),
        ("Ｍｉｎ　ｆｒｕ　ｆｙｌｌｅｒ　år", "sv.personal_fact.my_people"),
        ("my ex\u2013wife called", "en.personal_fact.my_people"),
        ("Straße? my dog", "en.personal_fact.my_pets"),
    ],
)
def test_unicode_normalisation(query: str, expected_rule: str) -> None:
    assert should_recall(query).rule == expected_rule


def test_reason_quotes_users_traditional_spelling() -> None:
    # Matching runs on simplified text, but operators should see what was typed.
    decision = should_recall("上次我們聊到哪裡了？")
    assert decision.reason == 'matched "上次" (reference to earlier conversation, zh)'
    decision = should_recall("你還記得嗎？")
    assert '"還記得"' in decision.reason


def test_fullwidth_chinese_punctuation_is_handled() -> None:
    # "？" and "。" must not stop the end-anchored question rule.
    for text in ["法国的首都是哪里？", "法国的首都是哪里?", "法国的首都是哪里。", "法国的首都是哪里 ？ "]:
        decision = should_recall(text)
        assert decision.rule == "zh.no_memory.question_end", text


# --------------------------------------------------------------------------- #
# Decision format
# --------------------------------------------------------------------------- #


def test_reason_format_matches_spec() -> None:
    decision = should_recall("What did we talk about LAST TIME?")
    assert decision == GateDecision(
        recall=True,
        reason='matched "last time" (reference to earlier conversation, en)',
        rule="en.earlier_talk.last_time",
        source="rules",
    )


def test_no_memory_reason_names_language_and_strips_punctuation() -> None:
    decision = should_recall("Thanks so much!!")
    assert decision.reason == (
        'matched "thanks so much" (general knowledge or small talk, no memory needed, en)'
    )


def test_to_dict_round_trips_through_json() -> None:
    decision = should_recall("my dog is sick")
    data = decision.to_dict()
    assert data == {
        "recall": True,
        "reason": 'matched "my dog" (personal fact about the user, en)',
        "rule": "en.personal_fact.my_pets",
        "source": "rules",
    }
    assert json.loads(json.dumps(data)) == data
    assert GateDecision(**data) == decision


def test_to_dict_for_default_decision_has_null_rule() -> None:
    data = should_recall("quantum tunnelling in semiconductors").to_dict()
    assert data == {"recall": False, "reason": "no trigger rule matched", "rule": None,
                    "source": "default"}


def test_gate_decision_is_frozen() -> None:
    decision = GateDecision(True, "x", None, "llm")
    with pytest.raises(AttributeError):
        decision.recall = False  # type: ignore[misc]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"recall": "yes", "reason": "r", "rule": None, "source": "llm"},
        {"recall": 1, "reason": "r", "rule": None, "source": "llm"},
        {"recall": True, "reason": None, "rule": None, "source": "llm"},
        {"recall": True, "reason": "r", "rule": 5, "source": "llm"},
        {"recall": True, "reason": "r", "rule": None, "source": "gpt"},
    ],
)
def test_gate_decision_rejects_bad_fields(kwargs: dict) -> None:
    with pytest.raises(ValidationError):
        GateDecision(**kwargs)


# --------------------------------------------------------------------------- #
# Bad input
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("query", [None, 42, 3.5, b"last time", ["last time"], {"q": "hi"}])
def test_non_str_query_raises_validation_error(query: object) -> None:
    with pytest.raises(ValidationError, match=r"query must be a str.*got " + type(query).__name__):
        should_recall(query)  # type: ignore[arg-type]


@pytest.mark.parametrize("query", ["", " ", "\n\t  ", "\u3000\u3000", "\u200b", "\ufeff \u200d"])
def test_empty_query_raises_validation_error(query: str) -> None:
    with pytest.raises(ValidationError, match="non-empty string"):
        Gate().decide(query)


def test_validation_error_is_catchable_as_library_and_value_error() -> None:
    with pytest.raises(MemoryCoreError):
        should_recall("")
    with pytest.raises(ValueError):
        should_recall("")


def test_bad_input_error_wins_over_judge() -> None:
    calls: list[str] = []
    gate = Gate(judge=lambda q: calls.append(q) or True)
    with pytest.raises(ValidationError):
        gate.decide("   ")
    assert calls == []


@pytest.mark.parametrize("judge", ["not callable", 5, True])
def test_non_callable_judge_rejected(judge: object) -> None:
    with pytest.raises(ValidationError, match="judge must be a callable"):
        Gate(judge=judge)  # type: ignore[arg-type]


@pytest.mark.parametrize("default", [None, 0, 1, "false"])
def test_non_bool_default_rejected(default: object) -> None:
    with pytest.raises(ValidationError, match="default must be a bool"):
        Gate(default=default)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- #
# Judge path
# --------------------------------------------------------------------------- #


class RecordingJudge:
    """Judge stub that records every query and returns a fixed verdict."""

    def __init__(self, verdict: object) -> None:
        self.verdict = verdict
        self.calls: list[str] = []

    def __call__(self, query: str) -> object:
        self.calls.append(query)
        if isinstance(self.verdict, BaseException):
            raise self.verdict
        return self.verdict


UNDECIDED = "quantum tunnelling in semiconductors"


@pytest.mark.parametrize("verdict", [True, False])
def test_judge_bool_decides_undecided_turns(verdict: bool) -> None:
    judge = RecordingJudge(verdict)
    decision = Gate(judge=judge).decide(UNDECIDED)
    assert decision.recall is verdict
    assert decision.source == "llm"
    assert decision.rule is None
    assert judge.calls == [UNDECIDED]


def test_judge_receives_original_text() -> None:
    judge = RecordingJudge(False)
    original = "  Ｑｕａｎｔｕｍ tunnelling?  "
    Gate(judge=judge).decide(original)
    assert judge.calls == [original]


def test_judge_gate_decision_is_kept_but_marked_llm() -> None:
    verdict = GateDecision(True, "mentions an ongoing topic", "llm.topic", "default")
    decision = Gate(judge=RecordingJudge(verdict)).decide(UNDECIDED)
    assert decision == GateDecision(True, "mentions an ongoing topic", "llm.topic", "llm")


@pytest.mark.parametrize(
    "query", ["What did we decide last time?", "my wife", "我的目标", "min hund", "hi",
              "What is the capital of France?", "法国的首都是哪里？"]
)
def test_judge_not_called_when_a_rule_fires(query: str) -> None:
    judge = RecordingJudge(not should_recall(query).recall)  # would flip the answer
    decision = Gate(judge=judge).decide(query)
    assert judge.calls == []
    assert decision.source == "rules"
    assert decision == should_recall(query)


@pytest.mark.parametrize("default", [False, True])
def test_raising_judge_falls_back_to_default(default: bool) -> None:
    judge = RecordingJudge(RuntimeError("endpoint timed out"))
    decision = Gate(judge=judge, default=default).decide(UNDECIDED)
    assert decision.recall is default
    assert decision.source == "default"
    assert decision.rule is None
    assert "RuntimeError" in decision.reason and "endpoint timed out" in decision.reason
    assert judge.calls == [UNDECIDED]


def test_raising_judge_long_message_is_truncated() -> None:
    judge = RecordingJudge(ValueError("x" * 10_000))
    decision = Gate(judge=judge).decide(UNDECIDED)
    assert decision.source == "default"
    assert len(decision.reason) < 400


def test_library_errors_from_judge_are_also_contained() -> None:
    from memory_core.errors import LLMError

    decision = Gate(judge=RecordingJudge(LLMError("unreachable"))).decide(UNDECIDED)
    assert (decision.recall, decision.source) == (False, "default")
    assert "LLMError" in decision.reason


def test_keyboard_interrupt_in_judge_is_not_swallowed() -> None:
    # Only Exception is contained; Ctrl-C must still stop the process.
    with pytest.raises(KeyboardInterrupt):
        Gate(judge=RecordingJudge(KeyboardInterrupt())).decide(UNDECIDED)


@pytest.mark.parametrize("verdict", ["yes", 1, None, 0.9, {"recall": True}])
def test_judge_returning_garbage_falls_back_to_default(verdict: object) -> None:
    decision = Gate(judge=RecordingJudge(verdict), default=True).decide(UNDECIDED)
    assert decision.recall is True
    assert decision.source == "default"
    assert type(verdict).__name__ in decision.reason


def test_default_true_without_judge() -> None:
    decision = Gate(default=True).decide(UNDECIDED)
    assert decision == GateDecision(True, "no trigger rule matched", None, "default")


def test_default_does_not_override_rules() -> None:
    assert Gate(default=True).decide("hi").recall is False
    assert Gate(default=False).decide("my dog").recall is True


def test_should_recall_uses_judge() -> None:
    judge = RecordingJudge(True)
    assert should_recall(UNDECIDED, judge=judge).source == "llm"
    assert should_recall(UNDECIDED).source == "default"
    assert judge.calls == [UNDECIDED]


# --------------------------------------------------------------------------- #
# Rule table
# --------------------------------------------------------------------------- #

ALL_ROWS = [(lang, *row) for table in (RULES, ABOUT_USER) for lang, rows in table.items() for row in rows]


def test_languages_and_rule_counts() -> None:
    assert {"en", "sv", "zh"} <= set(RULES)
    for lang, rows in RULES.items():
        positive = [r for r in rows if r[1] in POSITIVE_CATEGORIES]
        assert len(positive) >= 15, lang
        # Every language covers every trigger category.
        assert {r[1] for r in positive} == POSITIVE_CATEGORIES, lang
        assert any(r[1] == "no_memory" for r in rows), lang


def test_rule_ids_unique_and_well_formed() -> None:
    ids = [row[1] for row in ALL_ROWS]
    assert [i for i, n in Counter(ids).items() if n > 1] == []
    for lang, rule_id, category, _pattern, _example in ALL_ROWS:
        assert rule_id.startswith(f"{lang}.{category}."), rule_id


@pytest.mark.parametrize(("lang", "rule_id", "category", "pattern", "example"), ALL_ROWS,
                         ids=[row[1] for row in ALL_ROWS])
def test_each_rule_fires_on_its_own_example(
    lang: str, rule_id: str, category: str, pattern: str, example: str
) -> None:
    # The table's examples are documentation; they must stay true.
    text = fold_chinese(gate_module._normalise(example))
    assert re.search(pattern, text), f"{rule_id} does not match its example {example!r}"
    decision = should_recall(example)
    assert decision.recall is (category != "no_memory"), decision
    assert decision.rule is not None and decision.rule.startswith(f"{lang}.")


@pytest.mark.parametrize("row", RULES["zh"], ids=[r[0] for r in RULES["zh"]])
def test_chinese_patterns_are_written_in_simplified(row: tuple[str, str, str, str]) -> None:
    # Input is folded to simplified; a traditional character in a pattern
    # could never match.
    pattern = row[2]
    assert fold_chinese(pattern) == pattern


def test_explain_rules_lists_every_rule() -> None:
    listed = explain_rules()
    assert len(listed) == len(ALL_ROWS)
    by_id = {item["rule_id"]: item for item in listed}
    for lang, rule_id, category, pattern, example in ALL_ROWS:
        item = by_id[rule_id]
        assert (item["language"], item["category"], item["pattern"], item["example"]) == (
            lang, category, pattern, example)
        assert item["recall"] is (category != "no_memory")
    json.dumps(listed)  # dashboard-ready


def test_explain_rules_order_is_evaluation_order() -> None:
    # Positive rules are tried before no-memory rules, and the questions about the user after
    # both; the listing says so.
    listed = explain_rules()
    recalls = [item["recall"] for item in listed]
    first_negative = recalls.index(False)
    about_user = [i for i, item in enumerate(listed) if item["rule_id"].endswith("first_person_question")]
    assert all(recalls[:first_negative]) and about_user == list(range(len(listed) - 3, len(listed)))
    assert not any(recalls[first_negative:about_user[0]])


def test_malformed_rule_tables_fail_loudly() -> None:
    bad_tables = [
        {"en": [("en.nope.x", "nope", r"x", "x")]},
        {"en": [("sv.earlier_talk.x", "earlier_talk", r"x", "x")]},
        {"en": [("en.earlier_talk.x", "earlier_talk", r"x", "x"),
                ("en.earlier_talk.x", "earlier_talk", r"y", "y")]},
        {"en": [("en.earlier_talk.x", "earlier_talk", r"(?:maybe)?", "")]},
    ]
    for table in bad_tables:
        with pytest.raises(ValueError):
            gate_module._compile_rules(table)
    with pytest.raises(re.error):
        gate_module._compile_rules({"en": [("en.earlier_talk.x", "earlier_talk", r"(", "")]})


# --------------------------------------------------------------------------- #
# Properties and performance
# --------------------------------------------------------------------------- #

_INVISIBLE = {"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"}


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_text_gives_consistent_decision_or_validation_error(text: str) -> None:
    visible = "".join(c for c in unicodedata.normalize("NFKC", text) if c not in _INVISIBLE)
    if not visible.strip():
        with pytest.raises(ValidationError):
            should_recall(text)
        return
    decision = should_recall(text)
    assert decision.source in {"rules", "default"}
    assert (decision.rule is None) == (decision.source == "default")
    if decision.rule is not None:
        assert decision.recall is (_rule_category(decision.rule) != "no_memory")
    assert decision == should_recall(text)  # deterministic


_NEUTRAL_WORDS = ["the", "river", "blue", "quickly", "seven", "stone", "history", "paris",
                  "of", "and", "ocean", "ancient", "green", "mountain", "is", "a", "light"]
_TRIGGERS = ["last time", "as we discussed", "my wife", "my favourite", "what should i",
             "recommend me", "where was i", "mitt projekt", "förra gången", "上次", "我的目标"]


# "is the last time ..." is deliberately read as trivia ("when is the last time X ..."), so
# "is" stays out of the words that surround a trigger here.
_AROUND_TRIGGERS = [w for w in _NEUTRAL_WORDS if w != "is"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(_AROUND_TRIGGERS), max_size=8),
    st.sampled_from(_TRIGGERS),
    st.lists(st.sampled_from(_AROUND_TRIGGERS), max_size=8),
)
def test_trigger_fires_wherever_it_appears(before: list[str], trigger: str, after: list[str]) -> None:
    text = " ".join([*before, trigger, *after])
    assert should_recall(text).recall is True, text


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_NEUTRAL_WORDS), min_size=1, max_size=15))
def test_neutral_words_never_trigger_recall(words: list[str]) -> None:
    text = " ".join(words)
    assert should_recall(text).recall is False, text


@pytest.mark.parametrize(
    "text",
    [
        "hi " * 30_000 + "x",
        "thank you " * 10_000 + "?",
        "my " * 30_000,
        "上次" * 30_000 + "是什么时候",
        "我" * 100_000,
        "what " * 20_000 + "was the last time",
    ],
    ids=["small-talk-repeat", "thanks-repeat", "my-repeat", "zh-lookahead", "zh-long", "lookbehind"],
)
def test_long_adversarial_input_is_fast(text: str) -> None:
    # Runs on every turn: a pathological regex would stall the agent.
    start = time.perf_counter()
    should_recall(text)
    assert time.perf_counter() - start < 2.0


def test_trivia_lookbehind_respects_word_boundaries() -> None:
    """'paris the last time' ends in '...is the ', but it is no 'is the last time' trivia question."""
    assert should_recall("paris the last time").recall is True
    assert should_recall("this is the last time").recall is False


@pytest.mark.parametrize("question", [
    "Do I eat meat?", "What kind of diet do I follow?", "Should you add milk or sugar to my cup?",
    "Äter jag kött?", "Vilken sorts kost håller jag mig till?", "Vilka allergier har jag?",
    "我吃肉吗？", "我对什么过敏？", "给我的咖啡要放奶放糖吗？",
])
def test_a_question_about_the_user_recalls_in_each_language(question):
    assert should_recall(question).recall, should_recall(question)


@pytest.mark.parametrize("question", [
    "Can you explain to me how tides work?", "Vilka regler gäller för rockad i schack?",
    "Hur kan flygplan hålla sig uppe i luften?", "请解释一下相对论。", "我怎么煮米饭？", "What is the capital of Australia?",
])
def test_general_questions_stay_general_with_a_first_person_word_or_a_swedish_i(question):
    assert not should_recall(question).recall
