"""memory_core.curation.extract: conversations in, distilled memories out (rules and LLM paths)."""

from __future__ import annotations

import json
import re
import unicodedata
from datetime import datetime, timezone

import pytest

from memory_core.errors import LLMError, ValidationError
from memory_core.curation.extract import (
    PII_MODES, RULES, Candidate, Extraction, Turn, explain_rules, extract, extract_llm, extract_rules,
    parse_conversation,
)
from memory_core.language.llm import LLMClient, LLMConfig
from memory_core.models import CATEGORIES, KINDS
from memory_core.language.redact import find_pii

# The same module object as the llm_server fixture (conftest imports it as "llm_server"),
# so Reply instances are recognised by the server.
try:
    from llm_server import BROKEN_JSON, Reply, StandInLLM, closed_port_url
except ImportError:
    from tests.llm_server import BROKEN_JSON, Reply, StandInLLM, closed_port_url


def norm(text: str) -> str:
    """Compare statements without case, punctuation or spacing differences."""
    return re.sub(r"[\W_]+", " ", unicodedata.normalize("NFKC", text).casefold()).strip()


def texts(extraction: Extraction) -> list[str]:
    return [norm(m.text) for m in extraction.memories]


def reasons(extraction: Extraction, turn: int) -> set[str]:
    return {reason for index, reason in extraction.skipped if index == turn}


def user(content: str, at: str | None = None) -> dict:
    return {"role": "user", "content": content, **({"at": at} if at else {})}


def assistant(content: str) -> dict:
    return {"role": "assistant", "content": content}


def make_client(server: StandInLLM | None = None, *, base_url: str | None = None) -> LLMClient:
    config = LLMConfig(base_url=base_url or server.base_url, model="stand-in-model", timeout=5, max_retries=0)
    return LLMClient(config, backoff_base=0.01)


# ---------------------------------------------------------------- the rule table documents itself


@pytest.mark.parametrize("row", explain_rules(), ids=lambda row: row["id"])
def test_every_rule_example_gives_its_expected_memory(row: dict) -> None:
    result = extract_rules([Turn("user", row["example"])])
    assert [m.text for m in result.memories] == [row["expected"]], result.skipped
    memory = result.memories[0]
    assert memory.category == row["category"]
    assert memory.kind == "explicit"
    assert memory.evidence  # the words that justified it


def test_rule_table_covers_three_languages_and_all_five_kinds_of_memory() -> None:
    assert set(RULES) == {"en", "sv", "zh"}
    for language, rules in RULES.items():
        categories = {rule.category for rule in rules}
        assert {"preference", "goal", "decision", "difficulty", "profile"} <= categories, language
    assert all(rule.category in CATEGORIES for rules in RULES.values() for rule in rules)


# ---------------------------------------------------------------- realistic conversations

EN_CONVERSATION = [
    user("Hi! Thanks for the help yesterday.", "2025-03-01T08:00:00Z"),
    assistant("You're welcome! How can I help today?"),
    user("I'm training for the Stockholm half marathon in September, and I really prefer running in the "
         "mornings. I always struggle with keeping a regular sleep schedule though.", "2025-03-01T08:01:00Z"),
    assistant("Great goal. Would you like a 16-week plan? I prefer plans with one rest day a week."),
    user("Yes please. What's a good long-run pace? I'm so tired today, I ran 10 km this morning.",
         "2025-03-01T08:03:00Z"),
    user("For the training app I've decided to use PostgreSQL. My wife is called Anna and we live in Uppsala.",
         "2025-03-01T08:05:00Z"),
    user("I love that idea! When I travel, I prefer aisle seats. I now prefer tea over coffee. "
         "Right now I want pizza.", "2025-03-01T08:07:00Z"),
    user("Today we decided to switch the frontend to Svelte. I decided to have sushi tonight.",
         "2025-03-01T08:09:00Z"),
    user("Thanks, bye!", "2025-03-01T08:10:00Z"),
]


def test_english_conversation() -> None:
    result = extract_rules(parse_conversation(EN_CONVERSATION))
    assert result.path == "rules"
    assert texts(result) == [norm(t) for t in [
        "Training for the Stockholm half marathon in September",
        "Prefers running in the mornings",
        "Always struggles with keeping a regular sleep schedule",
        "Decided to use PostgreSQL for the training app",
        "Wife is called Anna",
        "Lives in Uppsala",
        "Prefers aisle seats when they travel",
        "Now prefers tea over coffee",
        "Decided to switch the frontend to Svelte",
    ]]
    by_text = {norm(m.text): m for m in result.memories}
    assert by_text[norm("Prefers running in the mornings")].category == "preference"
    assert by_text[norm("Training for the Stockholm half marathon in September")].category == "goal"
    assert by_text[norm("Wife is called Anna")].category == "profile"
    assert by_text[norm("Always struggles with keeping a regular sleep schedule")].category == "difficulty"
    assert by_text[norm("Decided to switch the frontend to Svelte")].category == "decision"
    # Provenance: the turn, its time, and the user's own words.
    tea = by_text[norm("Now prefers tea over coffee")]
    assert tea.source_turn == 6
    assert tea.created_at == datetime(2025, 3, 1, 8, 7, tzinfo=timezone.utc)
    assert tea.evidence == "I now prefer tea over coffee."
    # What was dropped, and why.
    assert "small talk" in reasons(result, 0)
    assert reasons(result, 1) == {"assistant turn"}
    assert reasons(result, 3) == {"assistant turn"}  # "I prefer plans..." was the assistant talking
    assert {"question", "only true today"} <= reasons(result, 4)
    assert {"not standalone", "only true today"} <= reasons(result, 6)
    assert "only true today" in reasons(result, 7)  # sushi tonight
    assert reasons(result, 8) == {"small talk"}


SV_CONVERSATION = [
    user("Hej! Tack för senast."),
    user("Jag föredrar te på morgonen och jag jobbar som sjuksköterska på Akademiska. "
         "Mitt mål är att springa Göteborgsvarvet under två timmar. Jag är jättetrött idag."),
    assistant("Vad roligt! Vill du ha ett träningsschema?"),
    user("Ja tack. Vi har bestämt oss för att köra Postgres i projektet. Min hund heter Ludde. "
         "Vad ska jag äta ikväll?"),
    user("Jag glömmer alltid att dricka vatten. Jag gillar inte långa möten, men jag älskar fjällvandring. "
         "Just nu sitter jag på tåget."),
    user("Jag bor i Västerås och har två barn. Numera föredrar jag löpband framför asfalt."),
]


def test_swedish_conversation() -> None:
    result = extract_rules(SV_CONVERSATION)
    assert texts(result) == [norm(t) for t in [
        "Föredrar te på morgonen",
        "Jobbar som sjuksköterska på Akademiska",
        "Målet är att springa Göteborgsvarvet under två timmar",
        "Har bestämt sig för att köra Postgres i projektet",
        "Hunden heter Ludde",
        "Glömmer alltid att dricka vatten",
        "Gillar inte långa möten",
        "Älskar fjällvandring",
        "Bor i Västerås",
        "Har två barn",
        "Föredrar löpband framför asfalt numera",
    ]]
    assert reasons(result, 0) == {"small talk"}
    assert "only true today" in reasons(result, 1)
    assert reasons(result, 2) == {"assistant turn"}
    assert "question" in reasons(result, 3)
    assert "only true today" in reasons(result, 4)
    categories = {norm(m.text): m.category for m in result.memories}
    assert categories[norm("Målet är att springa Göteborgsvarvet under två timmar")] == "goal"
    assert categories[norm("Har bestämt sig för att köra Postgres i projektet")] == "decision"
    assert categories[norm("Glömmer alltid att dricka vatten")] == "difficulty"


ZH_CONVERSATION = [
    user("你好！谢谢你昨天的帮助。"),
    user("我喜欢早上喝茶，我不喜欢吃香菜。我决定用PostgreSQL。我的目标是明年跑完全程马拉松。"),
    assistant("好的，我记住了。你想要一个训练计划吗？"),
    user("我住在杭州，我在阿里巴巴工作。今天我很累。我现在正在吃饭。你觉得我应该怎么训练？"),
    user("周末我喜欢爬山。我打算明年换工作。那就用Redis吧。我总是记不住别人的名字。"),
    user("我家的狗叫旺财。从今天开始我吃素。"),
]


def test_chinese_conversation() -> None:
    result = extract_rules(ZH_CONVERSATION)
    assert texts(result) == [norm(t) for t in [
        "喜欢早上喝茶", "不喜欢吃香菜", "决定用PostgreSQL", "目标是明年跑完全程马拉松",
        "住在杭州", "在阿里巴巴工作",
        "周末喜欢爬山", "打算明年换工作", "决定用Redis", "总是记不住别人的名字",
        "狗叫旺财", "吃素",
    ]]
    assert reasons(result, 0) == {"small talk"}
    assert reasons(result, 2) == {"assistant turn"}
    assert {"only true today", "question"} <= reasons(result, 3)
    categories = {m.text: m.category for m in result.memories}
    assert categories["决定用PostgreSQL"] == "decision"
    assert categories["目标是明年跑完全程马拉松"] == "goal"
    assert categories["总是记不住别人的名字"] == "difficulty"
    assert categories["在阿里巴巴工作"] == "profile"


# ---------------------------------------------------------------- what must NOT become a memory

NOTHING_TO_KEEP = [
    # small talk and reactions
    "Thanks so much!", "ok", "Good morning!", "lol", "Sounds good, thanks again.", "I love it!",
    "I like that idea.", "Yes, I'd like that.", "Tack så mycket!", "Hej hej!", "谢谢！", "好的。", "我爱你。",
    # questions and requests
    "What's a good book about habits?", "Can you recommend a restaurant in Lund?", "I prefer tea, do you?",
    "Do you think I should learn Rust?", "Vad ska jag laga till middag?", "你觉得我应该学什么？",
    "I want to know how to cook rice.", "Jag vill veta mer om det.", "我想知道怎么做饭。",
    # only true today
    "I'm so tired today.", "Right now I want pizza.", "I'm in a meeting at the moment.",
    "Tonight I prefer something light.", "Jag är trött idag.", "Just nu gillar jag inte ens kaffe.",
    "今天我很累。", "我现在正在吃饭。", "今天我喜欢安静一点。",
    # opinions and facts about the world, third parties, reported speech
    "The capital of France is Paris.", "Python is a programming language.",
    "My brother says I like cats.", "She prefers coffee.", "Det regnar mycket i Bergen.", "北京是中国的首都。",
    # temporary states without a marker are simply not matched
    "I'm a bit confused.", "I'm tired.", "Jag är hungrig.", "我准备好了。",
]


@pytest.mark.parametrize("sentence", NOTHING_TO_KEEP)
def test_sentences_that_must_not_become_memories(sentence: str) -> None:
    result = extract_rules([Turn("user", sentence)])
    assert result.memories == [], [m.text for m in result.memories]
    assert result.skipped, "every dropped sentence gets a reason"


@pytest.mark.parametrize("sentence, kept", [
    ("I now prefer tea over coffee.", "Now prefers tea over coffee"),
    ("From now on I prefer email updates.", "Prefers email updates"),
    ("Starting today, I'm vegetarian.", "Is vegetarian"),
    ("Today we decided to move the standup to 9:30.", "Decided to move the standup to 9:30"),
    ("Från och med idag är jag vegetarian.", "Är vegetarian"),
    ("Numera föredrar jag te.", "Föredrar te numera"),
    ("我现在更喜欢喝茶。", "现在更喜欢喝茶"),
    ("今天我决定用Vue。", "决定用Vue"),
])
def test_a_lasting_change_is_not_mistaken_for_today_only(sentence: str, kept: str) -> None:
    result = extract_rules([Turn("user", sentence)])
    assert [m.text for m in result.memories] == [kept]


def test_assistant_and_system_turns_are_never_mined() -> None:
    result = extract_rules([
        Turn("system", "You are a helpful assistant. I prefer short answers."),
        Turn("assistant", "I love hiking and I live in Oslo."),
    ])
    assert result.memories == []
    assert result.skipped == [(0, "system turn"), (1, "assistant turn")]


# ---------------------------------------------------------------- importance


def test_importance_follows_category_and_emphasis() -> None:
    result = extract_rules([Turn("user", line) for line in [
        "I work as a nurse.",                          # profile
        "My goal is to run a marathon.",               # goal
        "I prefer tea.",                               # preference
        "I really prefer window seats.",               # preference, emphatic
        "I've decided to use PostgreSQL.",             # decision
        "I struggle with public speaking.",            # difficulty
        "I always struggle with waking up early.",     # difficulty, emphatic
    ]])
    got = {m.text: (m.category, m.importance) for m in result.memories}
    assert got == {
        "Works as a nurse": ("profile", 0.75),
        "Goal is to run a marathon": ("goal", 0.75),
        "Prefers tea": ("preference", 0.6),
        "Prefers window seats": ("preference", 0.7),
        "Decided to use PostgreSQL": ("decision", 0.6),
        "Struggles with public speaking": ("difficulty", 0.5),
        "Always struggles with waking up early": ("difficulty", 0.6),
    }
    assert all(m.kind == "explicit" for m in result.memories)


def test_restated_memory_is_kept_once_with_the_latest_date() -> None:
    result = extract_rules([
        user("I prefer tea in the mornings.", "2025-01-10T08:00:00Z"),
        user("As I said, I prefer tea in the mornings!", "2025-06-01T08:00:00Z"),
        user("Like I said: I prefer tea in the mornings", "2025-06-02T08:00:00Z"),
    ])
    assert [m.text for m in result.memories] == ["Prefers tea in the mornings"]
    assert result.memories[0].source_turn == 2
    assert result.memories[0].created_at == datetime(2025, 6, 2, 8, tzinfo=timezone.utc)
    assert (0, "duplicate") in result.skipped and (1, "duplicate") in result.skipped


def test_rewritten_statements_carry_no_first_person() -> None:
    result = extract_rules([Turn("user", line) for line in [
        "I live in Uppsala with my partner and our two cats.",
        "I keep forgetting my keys when I leave home.",
        "Jag bor i Malmö med min sambo.",
        "我喜欢我妈妈做的菜。",
    ]])
    assert [m.text for m in result.memories] == [
        "Lives in Uppsala with their partner and their two cats",
        "Keeps forgetting their keys when they leave home",
        "Bor i Malmö med sin sambo",
        "喜欢自己妈妈做的菜",
    ]


# ---------------------------------------------------------------- personal identifiers

PII_TURNS = [
    user("I work as a dentist in Lund. Call me on +46 70 123 45 67 or mail erik@example.se."),
    user("I live at 12 Baker Street. I prefer email over phone calls, my email is erik@example.se."),
    user("Jag bor på Storgatan 12, 123 45 Stockholm. Mitt personnummer är 850709-9805."),
    user("我的手机号是13800138000，我住在北京市朝阳区建国路88号。我喜欢喝茶。"),
]


def test_pii_redact_masks_identifiers_and_drops_statements_left_empty() -> None:
    result = extract_rules(PII_TURNS, pii="redact")
    assert texts(result) == [norm(t) for t in [
        "Works as a dentist in Lund", "Prefers email over phone calls", "喜欢喝茶",
    ]]
    assert result.redacted == [(0, "email, phone"), (1, "email, address"), (2, "personnummer, address"),
                               (3, "phone, address")]
    assert (1, "only a personal identifier") in result.skipped   # "Lives at [address]"
    assert (2, "only a personal identifier") in result.skipped   # "Bor på [address]"
    for memory in result.memories:
        assert find_pii(memory.text) == [] and find_pii(memory.evidence) == []


def test_pii_refuse_drops_every_statement_with_an_identifier() -> None:
    result = extract_rules(PII_TURNS, pii="refuse")
    # Refusal is per clause: "I prefer email over phone calls" survives its neighbour
    # ", my email is erik@example.se".
    assert texts(result) == [norm(t) for t in ["Works as a dentist in Lund", "Prefers email over phone calls", "喜欢喝茶"]]
    assert result.redacted == []
    assert (1, "personal identifier refused") in result.skipped  # "I live at 12 Baker Street"
    assert (2, "personal identifier refused") in result.skipped  # "Jag bor på Storgatan 12, …"
    assert (3, "personal identifier refused") in result.skipped
    for memory in result.memories:
        assert find_pii(memory.evidence) == []


def test_pii_allow_keeps_identifiers() -> None:
    result = extract_rules(PII_TURNS, pii="allow")
    assert "Lives at 12 Baker Street" in [m.text for m in result.memories]
    assert "Bor på Storgatan 12, 123 45 Stockholm" in [m.text for m in result.memories]
    assert result.redacted == []


@pytest.mark.parametrize("bad", ["mask", "", None, "REDACT"])
def test_unknown_pii_mode_is_a_validation_error(bad: object) -> None:
    with pytest.raises(ValidationError, match="pii must be one of"):
        extract_rules([Turn("user", "I prefer tea.")], pii=bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        extract([Turn("user", "I prefer tea.")], pii=bad)  # type: ignore[arg-type]
    assert PII_MODES == ("redact", "refuse", "allow")


# ---------------------------------------------------------------- parse_conversation


def test_parse_conversation_accepts_the_three_shapes() -> None:
    items = [user("I prefer tea.", "2025-03-01T08:00:00Z"), {"role": "Assistant", "content": "Noted."}]
    as_list = parse_conversation(items)
    assert as_list == parse_conversation({"messages": items}) == parse_conversation({"turns": items})
    assert as_list[0] == Turn("user", "I prefer tea.", datetime(2025, 3, 1, 8, tzinfo=timezone.utc))
    assert as_list[1].role == "assistant" and as_list[1].at is None
    assert parse_conversation(as_list) == as_list  # Turn objects pass through


def test_parse_conversation_times_and_extra_keys() -> None:
    turns = parse_conversation([
        {"role": "user", "content": "a", "timestamp": "2025-03-01 08:00"},      # naive -> UTC
        {"role": "user", "content": "b", "at": "2025-03-01T10:00:00+02:00", "name": "alice", "id": 7},
        {"role": "user", "content": "c", "at": None},
    ])
    assert turns[0].at == datetime(2025, 3, 1, 8, tzinfo=timezone.utc)
    assert turns[1].at == datetime(2025, 3, 1, 8, tzinfo=timezone.utc)
    assert turns[2].at is None


@pytest.mark.parametrize("data, message", [
    ({"messages": [user("ok"), {"role": "robot", "content": "beep"}]}, r"messages\[1\]: role must be one of"),
    ({"turns": [{"content": "no role"}]}, r"turns\[0\]: role must be one of"),
    ([user("ok"), {"role": "user"}], r'conversation\[1\]: "content" must be a string, got nothing'),
    ([{"role": "user", "content": 42}], r'conversation\[0\]: "content" must be a string, got int'),
    ([user("ok"), "just text"], r"conversation\[1\] must be an object"),
    ([{"role": "user", "content": "x", "at": "yesterday"}], r"conversation\[0\]\.at 'yesterday' is not an ISO 8601"),
    ({"history": []}, r'needs a "messages" or "turns" list'),
    ({"messages": "hello"}, r"messages must be a list"),
    ('[{"role": "user", "content": "hi"}]', r"parse the JSON first"),
    (42, r"conversation must be a list"),
    (None, r"conversation must be a list"),
])
def test_parse_conversation_errors_name_the_bad_item(data: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_conversation(data)


def test_turn_validates_itself() -> None:
    with pytest.raises(ValidationError):
        Turn("bot", "hi")
    with pytest.raises(ValidationError):
        Turn("user", None)  # type: ignore[arg-type]
    assert Turn("user", "hi", "2025-01-01").at == datetime(2025, 1, 1, tzinfo=timezone.utc)


def test_extractors_accept_raw_conversation_data() -> None:
    data = {"messages": [user("I prefer tea.")]}
    assert [m.text for m in extract_rules(data).memories] == ["Prefers tea"]
    assert [m.text for m in extract(data).memories] == ["Prefers tea"]


def test_candidate_and_extraction_serialise_to_json() -> None:
    result = extract_rules([user("I prefer tea.", "2025-03-01T08:00:00Z"), user("Hi!")])
    payload = json.loads(json.dumps(result.to_dict()))
    assert payload["path"] == "rules"
    assert payload["memories"] == [{
        "text": "Prefers tea", "category": "preference", "kind": "explicit", "importance": 0.6,
        "created_at": "2025-03-01T08:00:00+00:00", "source_turn": 0, "evidence": "I prefer tea.",
    }]
    assert payload["skipped"] == [[1, "small talk"]]
    assert isinstance(result.memories[0], Candidate)


def test_empty_conversation() -> None:
    result = extract_rules([])
    assert result.memories == [] and result.skipped == [] and result.path == "rules"
    result = extract_rules([Turn("user", "   ")])
    assert result.skipped == [(0, "empty")]


# ---------------------------------------------------------------- LLM path (real HTTP stand-in)

LLM_CONVERSATION = [
    user("Hi! I really prefer tea in the mornings. Call me on 070-123 45 67.", "2025-03-01T08:00:00Z"),
    assistant("Noted! Anything else?"),
    user("I've decided to use PostgreSQL. My email is erik@example.se.", "2025-03-01T08:02:00Z"),
]


def memory(text: str, category: str = "preference", *, kind: str = "explicit", importance: float = 0.6,
           source_turn: int = 0, evidence: str = "") -> dict:
    return {"text": text, "category": category, "kind": kind, "importance": importance,
            "source_turn": source_turn, "evidence": evidence}


def test_llm_path_with_a_valid_reply(llm_server: StandInLLM) -> None:
    llm_server.script({"memories": [
        memory("Prefers tea in the mornings", importance=0.7, evidence="I really prefer tea in the mornings"),
        memory("Decided to use PostgreSQL", "decision", source_turn=2, evidence="I've decided to use PostgreSQL"),
        memory("Probably drinks little coffee", "preference", kind="inferred", importance=0.3),
    ]})
    result = extract(LLM_CONVERSATION, make_client(llm_server))
    assert result.path == "llm"
    assert "stand-in-model" in result.detail
    assert [(m.text, m.category, m.kind, m.importance, m.source_turn) for m in result.memories] == [
        ("Prefers tea in the mornings", "preference", "explicit", 0.7, 0),
        ("Probably drinks little coffee", "preference", "inferred", 0.3, 0),
        ("Decided to use PostgreSQL", "decision", "explicit", 0.6, 2),
    ]
    assert result.memories[2].created_at == datetime(2025, 3, 1, 8, 2, tzinfo=timezone.utc)
    assert (1, "assistant turn") in result.skipped
    # Identifiers never left the process: the prompt had placeholders, not the numbers.
    [request] = llm_server.chat_requests
    sent = json.dumps(request.body, ensure_ascii=False)
    assert "070-123 45 67" not in sent and "erik@example.se" not in sent
    assert "[phone]" in sent and "[email]" in sent
    assert request.body["messages"][0]["role"] == "system"
    assert '"memories"' in request.body["messages"][0]["content"]
    assert "[2] user (2025-03-01T08:02:00+00:00): I've decided to use PostgreSQL." in request.body["messages"][1]["content"]
    assert result.redacted == [(0, "phone"), (2, "email")]


def test_llm_output_is_redacted_too(llm_server: StandInLLM) -> None:
    # A model may echo (or invent) an identifier; it must not reach the bank.
    llm_server.always({"memories": [
        memory("Prefers calls on 070-123 45 67 after six", "preference", evidence="Call me on 070-123 45 67"),
        memory("Email is erik@example.se", "profile", source_turn=2),
        memory("Decided to use PostgreSQL", "decision", source_turn=2),
    ]})
    client = make_client(llm_server)
    redacted = extract_llm(LLM_CONVERSATION, client, pii="redact")
    assert [m.text for m in redacted.memories] == ["Prefers calls on [phone] after six", "Decided to use PostgreSQL"]
    assert redacted.memories[0].evidence == "Call me on [phone]"
    assert (2, "only a personal identifier") in redacted.skipped
    refused = extract_llm(LLM_CONVERSATION, client, pii="refuse")
    assert [m.text for m in refused.memories] == ["Decided to use PostgreSQL"]
    assert (0, "personal identifier refused") in refused.skipped
    allowed = extract_llm(LLM_CONVERSATION, client, pii="allow")
    assert len(allowed.memories) == 3 and allowed.redacted == []
    assert "070-123 45 67" in json.dumps(llm_server.chat_requests[-1].body)  # "allow" sends the raw text


def test_invalid_category_falls_back_to_rules_and_says_why(llm_server: StandInLLM) -> None:
    llm_server.script({"memories": [memory("Likes hiking", "hobby")]})
    result = extract(LLM_CONVERSATION, make_client(llm_server))
    assert result.path == "rules"
    assert "LLM failed" in result.detail and "category 'hobby'" in result.detail
    assert [m.text for m in result.memories] == ["Prefers tea in the mornings", "Decided to use PostgreSQL"]
    assert len(llm_server.chat_requests) == 1  # valid JSON: no repair round-trip


@pytest.mark.parametrize("item, problem", [
    (memory("Likes hiking", "hobby"), "category"),
    (memory("Likes hiking", kind="guessed"), "kind"),
    (memory("Likes hiking", importance=1.5), "importance"),
    (memory("Likes hiking", importance=-0.1), "importance"),
    (memory("Likes hiking", importance=True), "importance"),  # type: ignore[arg-type]
    ({**memory("Likes hiking"), "importance": "high"}, "importance"),
    (memory("Likes hiking", source_turn=3), "source_turn"),
    (memory("Likes hiking", source_turn=-1), "source_turn"),
    ({**memory("Likes hiking"), "source_turn": "0"}, "source_turn"),
    (memory("   "), "no text"),
    (memory("x" * 301), "300"),
    ({**memory("Likes hiking"), "evidence": 5}, "evidence"),
    ("Likes hiking", "must be an object"),
])
def test_every_item_is_validated(llm_server: StandInLLM, item: object, problem: str) -> None:
    llm_server.always({"memories": [memory("Prefers tea"), item]})
    with pytest.raises(LLMError, match=problem) as excinfo:
        extract_llm(LLM_CONVERSATION, make_client(llm_server))
    assert "memories[1]" in str(excinfo.value)


@pytest.mark.parametrize("reply", [{"facts": []}, {"memories": "none"}, {"memories": None}])
def test_reply_without_a_memories_list_is_an_llm_error(llm_server: StandInLLM, reply: dict) -> None:
    llm_server.always(reply)
    with pytest.raises(LLMError, match='must be {"memories"'):
        extract_llm(LLM_CONVERSATION, make_client(llm_server))


def test_empty_memories_list_is_a_valid_answer(llm_server: StandInLLM) -> None:
    llm_server.script({"memories": []})
    result = extract(LLM_CONVERSATION, make_client(llm_server))
    assert result.path == "llm" and result.memories == []
    assert (0, "nothing worth keeping") in result.skipped and (2, "nothing worth keeping") in result.skipped


def test_broken_json_is_repaired_once_then_falls_back(llm_server: StandInLLM) -> None:
    llm_server.broken_json_once({"memories": [memory("Prefers tea in the mornings")]})
    repaired = extract(LLM_CONVERSATION, make_client(llm_server))
    assert repaired.path == "llm" and [m.text for m in repaired.memories] == ["Prefers tea in the mornings"]
    llm_server.reset()
    llm_server.always_broken_json(BROKEN_JSON)
    fallen = extract(LLM_CONVERSATION, make_client(llm_server))
    assert fallen.path == "rules" and "valid JSON" in fallen.detail
    assert len(llm_server.chat_requests) == 2  # the reply and its one repair


def test_server_down_falls_back_to_rules() -> None:
    result = extract(LLM_CONVERSATION, make_client(base_url=closed_port_url()))
    assert result.path == "rules"
    assert "LLM failed" in result.detail and "connect" in result.detail
    assert [m.text for m in result.memories] == ["Prefers tea in the mornings", "Decided to use PostgreSQL"]


def test_server_error_falls_back_to_rules(llm_server: StandInLLM) -> None:
    llm_server.always(Reply(status=500))
    result = extract(LLM_CONVERSATION, make_client(llm_server))
    assert result.path == "rules" and "500" in result.detail


def test_no_client_uses_rules_and_says_so() -> None:
    result = extract(LLM_CONVERSATION)
    assert result.path == "rules"
    assert "no LLM configured" in result.detail


def test_llm_is_not_called_without_user_content(llm_server: StandInLLM) -> None:
    result = extract_llm([assistant("Hello!"), Turn("user", "  ")], make_client(llm_server))
    assert result.memories == [] and llm_server.chat_requests == []
    assert result.skipped == [(0, "assistant turn"), (1, "empty")]


def test_llm_duplicates_are_collapsed(llm_server: StandInLLM) -> None:
    llm_server.script({"memories": [memory("Prefers tea in the mornings"),
                                    memory("prefers tea in the mornings.", source_turn=2)]})
    result = extract_llm(LLM_CONVERSATION, make_client(llm_server))
    assert [(m.text, m.source_turn) for m in result.memories] == [("prefers tea in the mornings.", 2)]


def test_llm_memories_satisfy_the_bank_contract(llm_server: StandInLLM) -> None:
    llm_server.script({"memories": [memory("Prefers tea in the mornings", importance=1)]})
    [m] = extract_llm(LLM_CONVERSATION, make_client(llm_server)).memories
    assert m.category in CATEGORIES and m.kind in KINDS and isinstance(m.importance, float)
    assert 0 <= m.importance <= 1
