"""memory_core.language.text and memory_core.language.words: one CJK class, one tokenizer, one set of people/pet words."""

from __future__ import annotations

import re

import pytest

from memory_core.curation import conflicts, extract, merge
from memory_core.language import text, words
from memory_core.language.rules import extract_patterns, gate_patterns


def test_chinese_runs_become_words_and_their_characters() -> None:
    """jieba's words ("欢咖" straddles two words and is gone), then the words' characters."""
    assert text.tokenize("喜欢咖啡") == ["喜欢", "咖啡", "喜", "欢", "咖", "啡"]


@pytest.mark.parametrize("sample, expected", [
    ("コーヒー", ["コ", "ー", "ヒ", "ー", "コー", "ーヒ", "ヒー"]),  # katakana
    ("커피를", ["커", "피", "를", "커피", "피를"]),  # Hangul
])
def test_kana_and_hangul_runs_become_characters_and_bigrams(sample: str, expected: list[str]) -> None:
    assert text.tokenize(sample) == expected


def test_every_cjk_token_is_recognised_by_the_one_class() -> None:
    """Conflicts tell CJK tokens from Latin ones with text.CJK_CHAR: it must cover every script
    tokenize splits into characters (it used to cover Han only)."""
    for sample in ("我搬到了上海", "東京に住んでいます", "서울에 살아요", "I moved to 上海 last year"):
        for token in text.tokenize(sample):
            cjk = [bool(text.CJK_CHAR.fullmatch(c)) for c in token]
            assert all(cjk) or not any(cjk), token
    assert conflicts.rule_judge.CJK_CHAR is text.CJK_CHAR and merge.mostly_cjk is text.mostly_cjk


def test_units_count_a_cjk_character_or_a_latin_word() -> None:
    assert [m.group() for m in text.UNIT.finditer("i don't 喜欢 co-workers")] == [
        "i", "don't", "喜", "欢", "co-workers"]


def test_fold_chinese_keeps_offsets() -> None:
    sample = "我們說過這個計畫"
    folded = text.fold_chinese(sample)
    assert folded == "我们说过这个计划" and len(folded) == len(sample)


def test_gate_and_extraction_share_the_people_and_pet_words() -> None:
    for name in ("EN_PEOPLE", "EN_PETS", "SV_PEOPLE", "SV_PETS", "ZH_PEOPLE", "ZH_PETS"):
        assert getattr(gate_patterns, name) is getattr(words, name), name
        assert getattr(extract_patterns, name) is getattr(words, name), name
    assert extract.SV_DEFINITE is words.SV_DEFINITE


def test_every_swedish_word_has_a_definite_form() -> None:
    listed = set(words.SV_PEOPLE.split("|")) | set(words.SV_PETS.split("|"))
    assert listed - set(words.SV_DEFINITE) == set()
    for word in listed:
        assert re.fullmatch(rf"(?:{words.SV_PEOPLE}|{words.SV_PETS})", word), word


def test_the_ascii_shortcut_gives_the_tokens_of_the_general_path() -> None:
    """An ASCII text skips normalisation, language detection's CJK count and CJK splitting (a
    namespace's cold load tokenizes every memory): the tokens must be those of the general path,
    for every language and with and without the filler words."""
    import random
    import string

    from memory_core.language.text import _ascii_tokens, _unicode_tokens

    rng = random.Random(7)
    words = ["the", "och", "katterna", "is", "jag", "I", "don't", "co-worker", "What", "did", "you", "x", "7",
             "A1", "friheten", "cooking", "Running", "x_y", "hej", "THE", "kaffet", "ningen"]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 9))) for _ in range(3000)]
    alphabet = string.ascii_letters + string.digits + " '-_.,!?\t\n"
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 50))) for _ in range(3000)]
    for text in texts:
        for language in (None, "en", "sv", "zh"):
            for filler in (False, True):
                assert _ascii_tokens(text, language, filler) == _unicode_tokens(text, language, filler), (text, language)
