"""Memories in Chinese and Swedish: the per-language tokenizer (memory_core.language.text) in recall's BM25,
conflicts, merges and the gate, and the embedding models a bank can use. Real models, no mocks."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from memory_core import MemoryBank, ScoringParams
from memory_core.curation import conflicts, merge
from memory_core.index import gate
from memory_core.language import text
from memory_core.cli import cli
from memory_core.embedding.embedder import MINILM_MODEL, model_defaults
from memory_core.errors import ModelMismatchError

LEXICAL_ONLY = ScoringParams(alpha=1, beta=0, gamma=0, delta=0, lexical_weight=1, lexical_below_floor=1, k=3,
                             threshold=0.0)
NOW = datetime(2026, 2, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize("sample, language", [
    ("我对猫过敏。", "zh"), ("我在学Python，用来自动生成工作报表。", "zh"),
    ("Jag är allergisk mot katter.", "sv"), ("Var bor Erik?", "sv"), ("Allergisk mot katterna", "sv"),
    ("Which animals make me sneeze?", "en"), ("I grew up in a small village outside Umeå.", "en"),
    ("Bamse", "en"), ("Mårtensson Bygg stayed after project tags launched", "en"),
    ("Fjällström Carpentry's owner isn't very technical; explain things step by step", "en"),
    ("Går på SFI-kurs på kvällarna", "sv"), ("Läser lättlästa nyheter", "sv"),
])
def test_language_is_detected_per_text(sample: str, language: str) -> None:
    assert text.detect_language(sample) == language


def test_chinese_memory_found_by_a_chinese_paraphrase_through_bm25(bank) -> None:
    """jieba's words: "攀岩馆" in the question holds "攀岩", the memory's word; question words
    (多久, 我) are not matched."""
    ids = bank.add_many([{"text": t, "namespace": "zh", "created_at": NOW} for t in (
        "我每周去攀岩两次。", "我对猫过敏。", "我姐姐有两只猫，叫Sixten和Selma。", "我多久没见过我的表哥了。")])
    hits = bank.recall("我多久去一次攀岩馆？", namespace="zh", params=LEXICAL_ONLY, now=NOW, record=False)
    assert hits[0].memory.id == ids[0] and hits[0].components["lexical"] > 0
    assert "攀岩" in text.lexical_tokens("我多久去一次攀岩馆？")
    assert not {"多久", "我", "什么", "吗"} & set(text.lexical_tokens("我多久去一次？我什么时候去吗？"))


def test_chinese_tokens_fold_traditional_characters() -> None:
    assert text.tokenize("我對貓過敏") == text.tokenize("我对猫过敏")


def test_swedish_stemming_matches_inflections(bank) -> None:
    assert set(text.tokenize("katterna")) == set(text.tokenize("katter", "sv")) == {"katt"}
    assert text.tokenize("kaffet", "sv") == text.tokenize("kaffe", "sv")  # the definite -et Snowball keeps
    ids = bank.add_many([{"text": t, "namespace": "sv", "created_at": NOW} for t in (
        "Jag är allergisk mot katter.", "Vi har en golden retriever som heter Bamse.",
        "Min syster bor i Göteborg.")])
    hits = bank.recall("Får jag klappa katterna?", namespace="sv", params=LEXICAL_ONLY, now=NOW, record=False)
    assert hits and hits[0].memory.id == ids[0]


def test_swedish_question_words_are_not_matched() -> None:
    assert text.lexical_tokens("Vad heter min hund, och var bor han?") == ["het", "hund", "bor"]


def test_english_tokens_keep_their_stems() -> None:
    assert text.tokenize("I was Cooking the PASTA and cooked it") == ["cook", "pasta", "cook"]
    assert text.lexical_tokens("When did you go to the LGBTQ support group?") == ["lgbtq", "support", "group"]


def test_merge_covers_a_swedish_paraphrase_by_its_stems() -> None:
    """With English stemming "katterna" and "katter" were two words: the paraphrase was appended."""
    assert merge.extractive_merge(["Jag är allergisk mot katter", "Allergisk mot katterna"]) == \
        "Jag är allergisk mot katter"
    assert merge.extractive_merge(["我每周去攀岩两次", "每周攀岩两次"]) == "我每周去攀岩两次"


def test_conflicts_share_topic_words_across_inflections() -> None:
    old = conflicts.MemoryView(1, "Dricker kaffe varje morgon", datetime(2025, 1, 1), "explicit")
    new = conflicts.MemoryView(2, "Dricker inte kaffet längre", datetime(2025, 6, 1), "explicit")
    assert conflicts.judge_rules(old, new).conflict
    zh_old = conflicts.MemoryView(3, "每天跑步", datetime(2025, 1, 1), "explicit")
    zh_new = conflicts.MemoryView(4, "不再跑步了", datetime(2025, 6, 1), "explicit")
    assert conflicts.judge_rules(zh_old, zh_new).conflict


def test_gate_reads_text_as_the_tokenizer_does() -> None:
    """Full-width letters, curly quotes and traditional characters: the one normalisation."""
    assert text.normalise("  Ｍｙ   wife\u2019s  BIRTHDAY ") == "my wife's birthday"
    assert gate.should_recall("When is my wife\u2019s birthday?").recall
    assert gate.should_recall("我媽媽的生日是哪天？").recall and gate.should_recall("我妈妈的生日是哪天？").recall


# -- the multilingual embedding model -------------------------------------------------------------


def test_a_bank_made_with_the_multilingual_model_finds_facts_across_languages(tmp_path) -> None:
    with MemoryBank.open(tmp_path / "use.duckdb", model="use-multilingual-v3") as bank:
        ids = bank.add_many([{"text": t, "namespace": "u", "created_at": NOW} for t in (
            "我对猫过敏。", "我们四月要去日本玩两个星期。", "我的护照放在书桌最上面的抽屉里。")])
        assert bank.model == "use-multilingual-v3" and bank.dim == 512
        dense = ScoringParams(alpha=1, beta=0, gamma=0, delta=0, lexical_weight=0, k=1, threshold=0.0)
        for question, want in (("Which animals make me sneeze?", ids[0]), ("Where is my passport?", ids[2]),
                               ("When are we travelling to Japan?", ids[1])):
            assert bank.recall(question, namespace="u", params=dense, now=NOW, record=False)[0].memory.id == want
    with MemoryBank.open(tmp_path / "use.duckdb") as again:  # the bank remembers its model
        assert again.model == "use-multilingual-v3"
    with pytest.raises(ModelMismatchError, match="reembed --model"):
        MemoryBank.open(tmp_path / "use.duckdb", model="all-MiniLM-L6-v2")


def test_memctl_init_and_reembed_with_the_multilingual_model(tmp_path) -> None:
    path = str(tmp_path / "cli.duckdb")
    res = CliRunner().invoke(cli, ["--bank", path, "init", "--model", "use-multilingual-v3"])
    assert res.exit_code == 0 and "model use-multilingual-v3" in res.output, res.output
    CliRunner().invoke(cli, ["--bank", path, "add", "Jag är allergisk mot katter.", "-n", "sv"])
    res = CliRunner().invoke(cli, ["--bank", path, "reembed", "--model", "all-MiniLM-L6-v2"])
    assert res.exit_code == 0 and f"re-embedded 1 memories with {MINILM_MODEL}" in res.output, res.output
    with MemoryBank.open(path) as bank:
        assert bank.model == MINILM_MODEL and bank.dim == 384
    res = CliRunner().invoke(cli, ["--bank", path, "reembed", "--model", "usem3"])
    assert res.exit_code == 0 and "with use-multilingual-v3" in res.output, res.output


def test_memctl_demo_builds_the_demo_with_the_multilingual_model(tmp_path) -> None:
    """``memctl demo --model`` records the model in the new bank, and recall on it finds a Chinese
    memory for an English question. A small demo (its own files) keeps the test fast."""
    memories = tmp_path / "memories.jsonl"
    memories.write_text("\n".join(json.dumps(row, ensure_ascii=False) for row in (
        {"text": "我对猫过敏", "namespace": "chen", "created_at": "2026-01-05T10:00:00Z"},
        {"text": "最想去的学校是 TU Delft", "namespace": "chen", "created_at": "2026-01-06T10:00:00Z"},
        {"text": "Moved to Berlin in August", "namespace": "bob", "created_at": "2026-01-07T10:00:00Z"},
    )) + "\n", encoding="utf-8")
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"namespace": "chen", "query": "我对什么过敏？", "at": "2026-01-20T10:00:00Z"},
                                  ensure_ascii=False) + "\n", encoding="utf-8")
    path = str(tmp_path / "demo.duckdb")
    res = CliRunner().invoke(cli, ["--bank", path, "demo", "--model", "use-multilingual-v3",
                                   "--memories", str(memories), "--queries", str(queries)])
    assert res.exit_code == 0, res.output
    assert "(model use-multilingual-v3): 3 memories in 2 namespaces, 1 recalls replayed" in res.output
    with MemoryBank.open(path) as bank:
        assert bank.model == "use-multilingual-v3" and bank.dim == 512
        dense = ScoringParams(alpha=1, beta=0, gamma=0, delta=0, lexical_weight=0, k=1, threshold=0.0)
        hits = bank.recall("Which animals am I allergic to?", namespace="chen", params=dense, record=False)
        assert [h.memory.text for h in hits] == ["我对猫过敏"]
    # The bank keeps its model: building again with another one is refused, nothing changes.
    res = CliRunner().invoke(cli, ["--bank", path, "demo", "--force", "--model", "all-MiniLM-L6-v2",
                                   "--memories", str(memories), "--queries", str(queries)])
    assert res.exit_code == 1 and "reembed --model" in res.output, res.output
    with MemoryBank.open(path) as bank:
        assert bank.count(status=None) == 3


def test_the_tune_page_names_the_banks_model(tmp_path, monkeypatch) -> None:
    """The Tune page (and the sidebar of every page) says which model the bank's vectors are of."""
    from streamlit.testing.v1 import AppTest

    path = tmp_path / "use.duckdb"
    with MemoryBank.open(path, model="use-multilingual-v3") as bank:
        bank.add("我对猫过敏", namespace="chen")
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    app = str(Path(__file__).resolve().parent.parent / "app.py")
    at = AppTest.from_file(app, default_timeout=60).run()
    assert not at.exception
    assert "Embedding model **use-multilingual-v3** · active preset **default**" in [c.value for c in at.sidebar.caption]
    at.switch_page("dashboard/tune.py").run()  # (AppTest renders no sidebar after a page switch)
    assert not at.exception and at.title[0].value == "Tune recall"
    assert any(c.value.startswith("Embedding model **use-multilingual-v3**") for c in at.main.caption), \
        [c.value for c in at.main.caption]


# -- curation across languages ----------------------------------------------------------------------

SAME_FACT_TWO_LANGUAGES = [
    "Loves spicy food, hotpot above all", "喜欢吃辣，尤其是火锅",
    "Tends to procrastinate until the night before a deadline", "有拖延症，deadline 前一晚才开始写",
]
UNRELATED = ["Knows Python and Java well", "在 GitHub 上开源了课程设计的座位预约系统", "我对猫过敏", "Moved to Berlin in August"]


def merge_groups(bank: MemoryBank, namespace: str) -> list[set[str]]:
    return [{bank.get(i).text for i in cluster.ids} for cluster, _ in bank.plan_merges(namespace)]


def test_a_multilingual_bank_proposes_a_fact_stated_in_two_languages_as_a_merge(tmp_path) -> None:
    """An English and a Chinese memory saying the same fact are one merge suggestion on a USE bank
    (they share no word, and need not: the model's defaults say its cosine holds across languages);
    unrelated memories, in one language or two, are in none."""
    with MemoryBank.open(tmp_path / "use.duckdb", model="use-multilingual-v3") as bank:
        bank.add_many([{"text": t, "namespace": "chen", "created_at": NOW} for t in SAME_FACT_TWO_LANGUAGES + UNRELATED])
        groups = merge_groups(bank, "chen")
        assert set(map(frozenset, groups)) == {frozenset(SAME_FACT_TWO_LANGUAGES[:2]),
                                               frozenset(SAME_FACT_TWO_LANGUAGES[2:])}, groups
        assert bank.model_defaults.across_languages
        assert bank.model_defaults.merge_threshold < model_defaults(MINILM_MODEL).merge_threshold


def test_the_english_model_never_merges_across_languages(tmp_path) -> None:
    """MiniLM does not read Chinese (it rates unrelated Chinese sentences close): a pair in two
    languages must share words, so the same memories give no cross-language suggestion."""
    bank = MemoryBank.open(tmp_path / "minilm.duckdb", model=MINILM_MODEL)
    bank.add_many([{"text": t, "namespace": "chen", "created_at": NOW} for t in SAME_FACT_TWO_LANGUAGES + UNRELATED])
    assert not bank.model_defaults.across_languages
    assert not [g for g in merge_groups(bank, "chen") if len({text.detect_language(t) for t in g}) > 1]


def test_a_chinese_double_negation_is_not_a_negation(tmp_path) -> None:
    """无辣不欢 ("no meal is good without spice") says the same as "loves spicy food": merged, while
    a real negation on one side still keeps a pair apart."""
    with MemoryBank.open(tmp_path / "use.duckdb", model="use-multilingual-v3") as bank:
        bank.add_many([{"text": t, "namespace": "chen", "created_at": NOW}
                       for t in ("Loves spicy food, hotpot above all", "无辣不欢，最爱成都火锅")])
        bank.add_many([{"text": t, "namespace": "zh", "created_at": NOW} for t in ("我吃辣", "我不吃辣")])
        assert merge_groups(bank, "chen") == [{"Loves spicy food, hotpot above all", "无辣不欢，最爱成都火锅"}]
        assert merge_groups(bank, "zh") == []


def test_a_banks_default_preset_is_on_its_models_scale(tmp_path) -> None:
    """A USE bank's built-in "default" preset (what agents get) weighs lexical match less and asks
    for a higher score, from embed.MODEL_DEFAULTS; a MiniLM bank keeps ScoringParams(); moving a
    bank to another model moves its default with it."""
    path = tmp_path / "use.duckdb"
    with MemoryBank.open(path, model="use-multilingual-v3") as bank:
        bank.add("我对猫过敏", namespace="chen")
        name, params = bank.active_preset()
        assert name == "default" and (params.lexical_weight, params.threshold) == (0.2, 0.5)
        assert bank.presets()["default"] == params
        # A Chinese memory clears the default threshold for an English question.
        assert [h.memory.text for h in bank.recall("Which animals am I allergic to?", namespace="chen",
                                                   record=False)] == ["我对猫过敏"]
        bank.reembed(model="all-MiniLM-L6-v2")
        minilm = ScoringParams().replace(**model_defaults(MINILM_MODEL).recall)
        assert bank.active_preset() == ("default", minilm) and minilm != ScoringParams()
    with MemoryBank.open(path) as again:
        assert again.active_preset() == ("default", minilm)
    with MemoryBank.open(tmp_path / "e5.duckdb") as default:  # the default model's is ScoringParams()
        assert default.active_preset() == ("default", ScoringParams())


def test_generative_agents_on_a_use_bank_is_on_uses_scale(tmp_path) -> None:
    """The generative-agents preset's threshold was set on MiniLM's cosines; on a USE bank it moves
    to USE's own (MODEL_DEFAULTS), so a general question gets nothing while the fact asked about
    still comes back."""
    with MemoryBank.open(tmp_path / "use.duckdb", model="use-multilingual-v3") as bank:
        bank.add_many([{"text": t, "namespace": "chen", "created_at": NOW} for t in (
            "I am allergic to cats", "我们四月要去日本玩两个星期", "Keeps the passport in the top desk drawer")])
        preset = bank.presets()["generative-agents"]
        assert preset.threshold == model_defaults("use-multilingual-v3").presets["generative-agents"]["threshold"]
        assert preset.threshold != ScoringParams.preset("generative-agents").threshold
        asked = bank.recall("Which animals am I allergic to?", namespace="chen", params="generative-agents",
                            now=NOW, record=False)
        assert [h.memory.text for h in asked][:1] == ["I am allergic to cats"]
        assert bank.recall("What is the boiling point of tungsten?", namespace="chen", params="generative-agents",
                           now=NOW, record=False) == []
