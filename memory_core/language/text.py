"""Text as the rules and the lexical index read it: scripts, normalisation, words, stop words.

Owns the one CJK character class (:data:`CJK`: the scripts written without spaces between
words), the punctuation and traditional-to-simplified folds the rule tables match against, how
text splits into words (:data:`WORD`, :data:`JOINED_WORD`, :data:`UNIT`), the stop and filler
word lists, and :func:`tokenize` / :func:`lexical_tokens`, the tokens BM25 indexes. The index,
merges, conflicts and the recall gate use these; nothing here knows about memories or the store.

Changing what :func:`tokenize` or :func:`lexical_tokens` return changes what saved indexes hold:
bump ``memory_core.index.FORMAT_VERSION`` with it, so they are rebuilt.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from typing import Any, Final


def _bm25s_stopwords() -> dict[str, Any]:
    """bm25s's stop word tables, read from its ``stopwords`` module without importing the package,
    whose ``__init__`` imports SciPy: a command that never ranks (``memctl stats``) would pay for it."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("bm25s")
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover - a declared dependency
        raise ImportError("bm25s is not installed (pip install bm25s)")
    path = os.path.join(next(iter(spec.submodule_search_locations)), "stopwords.py")
    table: dict[str, Any] = {}
    with open(path, encoding="utf-8") as f:
        exec(compile(f.read(), path, "exec"), table)  # data only: tuples of words
    return table


_BM25S = _bm25s_stopwords()
STOPWORDS_EN, STOPWORDS_SWEDISH, STOPWORDS_CHINESE = (_BM25S["STOPWORDS_EN"], _BM25S["STOPWORDS_SWEDISH"],
                                                      _BM25S["STOPWORDS_CHINESE"])

__all__ = [
    "CJK", "CJK_CHAR", "CJK_RUN", "WORD", "JOINED_WORD", "UNIT", "PUNCT_MAP", "STOP_WORDS", "STOP_CJK",
    "QUERY_FILLER", "LANGUAGES", "LANGUAGE_NAMES", "detect_language", "normalise", "fold_chinese", "mostly_cjk",
    "stem", "tokenize", "lexical_tokens",
]

# -- scripts ---------------------------------------------------------------------------------------

# The scripts whose words are not separated by spaces, so that a run of them is split into
# characters and character bigrams ("喜欢咖啡" matches "咖啡"): Hiragana and Katakana
# (3040-30FF), CJK Unified Ideographs Extension A (3400-4DBF), CJK Unified Ideographs
# (4E00-9FFF), CJK Compatibility Ideographs (F900-FAFF) and Hangul syllables (AC00-D7AF; Korean
# does put spaces between words, but its words are one to a few syllables, and bigrams match
# across its particles as they do in Chinese). CJK punctuation (3000-303F) is not in it: it is
# never part of a word (\w does not match it) and the rules fold what they need (PUNCT_MAP).
# Ideographs outside the BMP (Extension B and later) are left out: adding them changes the
# tokens of saved indexes (see the module docstring).
CJK: Final = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
CJK_CHAR: Final = re.compile(f"[{CJK}]")
CJK_RUN: Final = re.compile(f"([{CJK}]+)")  # capturing: re.split keeps the runs at odd positions

# -- words -----------------------------------------------------------------------------------------

WORD: Final = re.compile(r"[^\W_]+")  # letters and digits; apostrophes and hyphens split
JOINED_WORD: Final = re.compile(r"[^\W_]+(?:['-][^\W_]+)*")  # "don't" and "co-worker" stay one word
# One Latin-script word or one CJK character: the measure of "a few words away".
UNIT: Final = re.compile(rf"[{CJK}]|[^\W_{CJK}]+(?:['-][^\W_{CJK}]+)*")


def mostly_cjk(text: str) -> bool:
    """Whether at least half of ``text``'s letters are CJK (joined with full-width punctuation, no spaces)."""
    letters = [ch for ch in text if ch.isalpha()]
    return bool(letters) and sum(bool(CJK_CHAR.match(ch)) for ch in letters) * 2 >= len(letters)


# -- normalisation ---------------------------------------------------------------------------------

# NFKC already turns full-width ASCII (？，！Ａ) into plain ASCII; this maps
# what it leaves alone so patterns can use one spelling of each mark.
PUNCT_MAP: Final = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201b": "'", "\u02bc": "'", "\u00b4": "'", "`": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"',
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-",
    "\u2015": "-", "\u2212": "-",
    "\u3002": ".", "\u3001": ",",
    # Invisible characters would split words ("my\u200bwife") and defeat \b.
    "\u200b": None, "\u200c": None, "\u200d": None, "\u2060": None, "\ufeff": None,
    "\u00ad": None,
})

# Traditional -> simplified, one character each, only as wide as the rules
# need. Keeping it 1:1 keeps match offsets valid for quoting the user's text.
_TRAD_SIMP_PAIRS: Final = (
    "們们 說说 過过 記记 嗎吗 麼么 這这 個个 來来 時时 還还 項项 寵宠 貓猫 媽妈 兒儿 "
    "闆板 薦荐 該该 應应 給给 點点 體体 裡里 裏里 樣样 讓让 對对 話话 憶忆 會会 從从 "
    "後后 週周 歲岁 職职 業业 學学 電电 機机 車车 親亲 飯饭 頭头 進进 實实 現现 夢梦 "
    "幫帮 選选 擇择 買买 適适 讀读 書书 聽听 見见 處处 於于 氣气 為为 誰谁 國国 謝谢 "
    "開开 關关 約约 錯错 別别 愛爱 歡欢 習习 慣惯 經经 總总 標标 劃划 畫画 計计 議议 "
    "討讨 論论 決决 談谈 訴诉 興兴 厭厌 專专 題题 問问 沒没 囉啰 舊旧 繼继 續续 著着 "
    "當当 剛刚 講讲 發发 齡龄 資资 訊讯 況况 願愿 辦办 務务 預预 醫医 藥药 飲饮 規规 "
    "準准 備备 結结 紀纪 節节 禮礼 領领 導导 團团 隊队 侶侣 寶宝 閨闺 鄰邻 師师 廳厅 "
    "產产 創创 貸贷 價价 錢钱 碼码 員员 識识 語语 義义 請请 釋释 譯译 紹绍 寫写 幾几 "
    "試试 課课 據据 夠够 爺爷 姊姐 妳你 瞭了 網网 單单 級级 優优 養养 鸚鹦 鵡鹉 倉仓 "
    "魚鱼 蘭兰 鐘钟 號号 間间 飛飞 場场 遊游 戲戏 錄录 兩两 邊边 種种 類类 雞鸡 "
    "頓顿 運运 動动 練练 歷历 華华 漢汉 認认 門门 區区 陽阳 達达 溫温 麗丽 驗验 "
    "證证 屬属 係系 懷怀 孫孙 婦妇 嬸婶 聯联 絡络 郵邮 訂订 購购 賣卖 銀银 贏赢 輸输 "
    "腦脑 藝艺 術术 聲声 樂乐 視视 詩诗 檢检 帳账 賬账 層层 圖图 設设 戶户 夥伙"
)
_TRAD_TO_SIMP: Final[dict[int, int]] = {
    ord(pair[0]): ord(pair[1]) for pair in _TRAD_SIMP_PAIRS.split()
}
# Two-character spellings that a per-character map cannot fold; each pair has
# equal length so offsets stay aligned.
_ZH_BIGRAMS: Final[tuple[tuple[str, str], ...]] = (
    ("甚么", "什么"),  # Taiwan/HK spelling of 什么
    ("计画", "计划"),  # 計畫 (Taiwan) after the per-character fold
)


_WHITESPACE: Final = re.compile(r"\s+")


def normalise(text: str) -> str:
    """What the rule tables read: NFKC, one spelling of each punctuation mark (:data:`PUNCT_MAP`),
    casefolded, runs of whitespace as one space, stripped. (Fold traditional Chinese with
    :func:`fold_chinese` on top where the rules are written in simplified characters.)"""
    text = unicodedata.normalize("NFKC", text).translate(PUNCT_MAP).casefold()
    return _WHITESPACE.sub(" ", text).strip()


def fold_chinese(text: str) -> str:
    """Fold traditional Chinese to simplified, keeping every offset unchanged."""
    folded = text.translate(_TRAD_TO_SIMP)
    for old, new in _ZH_BIGRAMS:
        folded = folded.replace(old, new)
    return folded


# -- languages ------------------------------------------------------------------------------------

# The languages the tokenizer tells apart. Latin-script words are stemmed and filtered by the
# language of the text they are in; runs of CJK characters are segmented by their script whatever
# the text's language (Han by jieba's dictionary, kana and Hangul into characters and bigrams).
LANGUAGES: Final = ("en", "sv", "zh")
# Each language's name as people read it (warnings, conflict evidence); the one table of them.
LANGUAGE_NAMES: Final = {"en": "English", "sv": "Swedish", "zh": "Chinese"}

# Frequent Swedish and English function words: the words a short text is told apart by. Words
# both languages spell alike ("i", "man", "under") are in neither.
_SV_MARKERS: Final = frozenset("""
och att är jag inte det som på med för har till av om en ett den vi du han hon min mitt mina din
ditt vad hur när var vem vilken vilket vilka varför kan ska vill mig dig sig sin sitt oss också
eller men så från efter över här där nu ni de dem sina hade blir blev varit vara gör gjorde brukar
någon något några mycket lite ju bara aldrig alltid varje heter bor jobbar gillar tycker får
mot vid hos utan inom mellan sedan åt än då dock samt alla allt ingen inget ej
""".split())
# Swedish definite plurals and abstract nouns ("katterna", "barnen", "friheten") mark a Swedish
# text that has no function word ("Allergisk mot katterna").
_SV_ENDINGS: Final = re.compile(r"[^\W\d_]{2,}(?:arna|erna|orna|heten|ningen|ningar)")
_EN_MARKERS: Final = frozenset("""
the and is are my to of it you do does did what how when where which who whom why with for on
at have has was were be been this that these those me we our your they their them not an from
can will would should could about am there just like a in up out after before very because than
then but or if into over its
""".split())


def detect_language(text: str | None) -> str:
    """``"zh"``, ``"sv"`` or ``"en"``: the language whose rules tokenize ``text``.

    Chinese when at least half its letters are CJK (:func:`mostly_cjk`); Swedish when it has
    more Swedish than English function words (and Swedish plural endings), å, ä or ö counting as one (so "I grew up outside
    Umeå" stays English); English otherwise (a text with no clue, such as a lone name, is
    tokenized as English).
    """
    if not text:
        return "en"
    low = unicodedata.normalize("NFKC", text).casefold()
    if mostly_cjk(low):
        return "zh"
    return _latin_language(WORD.findall(low), bool(re.search("[åäö]", low)))


def _latin_language(words: list[str], has_aao: bool) -> str:
    """Swedish or English, by the function words (and endings) among ``words``: Swedish when
    more of them speak for Swedish than for English."""
    score = int(has_aao)
    votes = _memo(_VOTES)
    for w in words:
        vote = votes.get(w)
        if vote is None:
            vote = votes[w] = (w in _SV_MARKERS or bool(_SV_ENDINGS.fullmatch(w))) - (w in _EN_MARKERS)
        score += vote
    return "sv" if score > 0 else "en"


# Per word, what :func:`_latin_language` and :func:`_latin_token` make of it, kept across texts:
# a cold load tokenizes every memory of a namespace and most words recur (the regex, the set
# lookups and the stemmer ran for every word, a third of the load's time). Bounded: emptied when
# it holds MEMO_MAX words.
MEMO_MAX = 500_000
_VOTES: dict[str, int] = {}
_TOKEN_MEMOS: dict[tuple[str, bool], dict[str, str | None]] = {}


def _memo(memo: dict) -> dict:
    if len(memo) >= MEMO_MAX:
        memo.clear()
    return memo


# -- tokens ----------------------------------------------------------------------------------------

# Words that carry no topic: bm25s's lists per language. For a Chinese text's Latin words (names,
# "Python") the English list applies.
STOP_WORDS: Final[dict[str, frozenset[str]]] = {
    "en": frozenset(STOPWORDS_EN), "sv": frozenset(STOPWORDS_SWEDISH), "zh": frozenset(STOPWORDS_EN)}
STOP_CJK: Final = frozenset(STOPWORDS_CHINESE)

try:  # Snowball stemming makes "cooking" match "cook" and "katterna" match "katt".
    import Stemmer

    _sv_snowball = Stemmer.Stemmer("swedish").stemWord
    _STEMMERS: Final = {"en": Stemmer.Stemmer("english").stemWord, "sv": lambda w: _sv_definite(_sv_snowball(w))}
except ImportError:  # pragma: no cover - PyStemmer is a declared dependency
    _STEMMERS = {"en": str, "sv": str}


def _sv_definite(word: str) -> str:
    """Snowball's Swedish stemmer keeps the definite neuter ending -et ("kaffet", "jobbet", "huset"),
    so "kaffet" would not match "kaffe": strip it from words of six letters or more (a few words
    that merely end so, "paket", lose it too, alike in memories and queries)."""
    return word[:-2] if len(word) >= 6 and word.endswith("et") else word


def stem(word: str, language: str = "en") -> str:
    """``word`` (casefolded) stemmed by the Snowball stemmer of ``language`` (English for Chinese)."""
    return _STEMMERS.get(language, _STEMMERS["en"])(word)


_HAN_RUN: Final = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_jieba: Any = None
_jieba_lock = threading.Lock()


def _segmenter() -> Any:
    """jieba's tokenizer with its bundled dictionary, loaded on first use (about a second)."""
    global _jieba
    if _jieba is None:
        with _jieba_lock:
            if _jieba is None:
                import jieba

                jieba.setLogLevel(logging.WARNING)  # "Building prefix dict..." on every process start
                seg = jieba.Tokenizer()
                seg.initialize()
                _jieba = seg
    return _jieba


def _cjk_tokens(run: str, stop: frozenset[str]) -> list[str]:
    """Tokens of a run of CJK characters. Chinese: the words of jieba's search mode (the words
    and the shorter words inside long ones: "攀岩馆" gives "攀岩" and "攀岩馆") that are not in
    ``stop``, then the characters of those words, so that compounds sharing a character still
    match a little ("燕麦奶" and "牛奶"). Kana and Hangul, which jieba does not know: characters
    and character bigrams."""
    run = fold_chinese(run)
    if not _HAN_RUN.fullmatch(run):
        return [c for c in run if c not in stop] + [run[j:j + 2] for j in range(len(run) - 1)]
    words = [w for w in _segmenter().lcut_for_search(run, HMM=True) if w not in stop]
    singles = set(w for w in words if len(w) == 1)
    chars = dict.fromkeys(c for w in words if len(w) > 1 for c in w if c not in stop and c not in singles)
    return words + list(chars)


def _tokens(text: str | None, language: str | None, filler: bool) -> list[str]:
    if not text:
        return []
    if text.isascii():
        return _ascii_tokens(text, language, filler)
    return _unicode_tokens(text, language, filler)


def _unicode_tokens(text: str, language: str | None, filler: bool) -> list[str]:
    """:func:`_tokens` of any text."""
    text = unicodedata.normalize("NFKC", text).casefold()
    language = detect_language(text) if language is None else language
    latin = language if language in _STEMMERS else "en"
    stop = STOP_WORDS[latin]
    stop_cjk = STOP_CJK
    drop: frozenset[str] = frozenset()
    if filler:  # a Chinese text's Latin words lose the English filler
        drop = _QUERY_FILLER_STEMS[latin]
        stop_cjk = STOP_CJK | QUERY_FILLER["zh"]
    stem_word = _STEMMERS[latin]
    tokens: list[str] = []
    for word in WORD.findall(text):
        for i, part in enumerate(CJK_RUN.split(word)):
            if not part:
                continue
            if i % 2:  # odd parts of a split on a capturing group are the CJK runs
                tokens.extend(_cjk_tokens(part, stop_cjk))
            elif (stemmed := _latin_token(part, stop, drop, stem_word)) is not None:
                tokens.append(stemmed)
    return tokens


def _ascii_tokens(text: str, language: str | None, filler: bool) -> list[str]:
    """:func:`_tokens` of an ASCII text, the same tokens for a third of the work (a namespace's
    cold load tokenizes every memory): NFKC changes no ASCII character, casefolding is lowering,
    and there is no CJK run to split off or count."""
    words = WORD.findall(text.lower())
    if language is None:
        latin = _latin_language(words, False)
    else:
        latin = language if language in _STEMMERS else "en"  # a Chinese text's Latin words: English lists
    stop = STOP_WORDS[latin]
    drop = _QUERY_FILLER_STEMS[latin] if filler else frozenset()
    stem_word = _STEMMERS[latin]
    memo = _memo(_TOKEN_MEMOS.setdefault((latin, filler), {}))
    out = []
    for part in words:
        token = memo.get(part, _UNSEEN)
        if token is _UNSEEN:
            token = memo[part] = _latin_token(part, stop, drop, stem_word)
        if token is not None:
            out.append(token)
    return out


_UNSEEN: Final = object()


def _latin_token(word: str, stop: frozenset[str], drop: frozenset[str], stem_word: Any) -> str | None:
    """The token of one casefolded Latin word, or None: stop words, filler and single letters
    (not digits) are dropped, the rest stemmed (and dropped when the stem is filler)."""
    if word in stop or word in drop or not (len(word) > 1 or word.isdigit()):
        return None
    stemmed = stem_word(word)
    return None if stemmed in drop else stemmed


def tokenize(text: str | None, language: str | None = None) -> list[str]:
    """Lexical tokens of ``text``: casefolded words without stop words, stemmed, by the rules of
    ``language`` (``"en"``, ``"sv"`` or ``"zh"``; default: :func:`detect_language`). Runs of CJK
    characters, which have no spaces between words, are segmented (:func:`_cjk_tokens`), so
    "我喜欢喝咖啡" matches "咖啡"; traditional characters are folded to simplified first.

    Conflicts and merges compare memories with it; the lexical index uses :func:`lexical_tokens`.
    """
    return _tokens(text, language, filler=False)


# Words that say how a question is asked or who speaks to whom, not what it is about, per
# language. Matching them ranks long chatty memories first ("what did you do when..." against
# every turn holding "you", "did" and "when"), so the lexical index leaves them out; conflicts
# and merges keep using :func:`tokenize`, whose shorter stop lists keep negations and pronouns
# they compare.
QUERY_FILLER: Final[dict[str, frozenset[str]]] = {
    "en": frozenset("""
i me my myself mine we us our ours ourselves you your yours yourself yourselves he him his himself she
her hers herself it its itself they them their theirs themselves what which who whom whose when where
why how this that these those am is are was were be been being have has had having do does did doing
done a an the and but if or because as until while of at by for with about against between into
through during before after above below to from up down in out on off over under again further then
once here there all any both each few more most other some such no nor not only own same so than too
very can could will would shall should may might must just don doesn didn isn wasn aren weren
wouldn also ever still yet like get got go going gone went really oh yeah yes hey hi thanks thank well
lot lots
""".split()),
    "sv": frozenset("""
jag mig min mitt mina vi oss vår vårt våra du dig din ditt dina ni er era ert han honom hans hon henne
hennes den det de dem deras sig sin sitt sina vad vilken vilket vilka vem vems var vart varifrån när
hur varför är var varit vara blir blev bli har hade haft ha gör gjorde göra gjort kan kunde ska skulle
vill ville måste får fick brukar och men om eller att som så än också ju väl nog bara just nu då här
där någon något några ingen inget inga alla allt mycket lite ja nej hej tack okej verkligen typ
""".split()),
    "zh": frozenset("""
我 我的 我们 我们的 你 你的 你们 他 她 它 他们 她们 的 了 吗 呢 吧 啊 呀 是 在 有 没有 什么 哪 哪里 哪儿
哪个 哪些 哪家 哪位 哪天 哪种 怎么 怎样 怎么样 为什么 多少 多久 多长 多大 多远 几 几点 几时 谁 会 要 想 能 可以
应该 一下 一个 这 那 都
也 就 还 很
""".split()),
}
_QUERY_FILLER_STEMS: Final[dict[str, frozenset[str]]] = {
    lang: frozenset(stem(w, lang) for w in words) | words for lang, words in QUERY_FILLER.items() if lang != "zh"}


def lexical_tokens(text: str | None, language: str | None = None) -> list[str]:
    """Tokens for lexical match (recall's BM25), of memories and queries alike: :func:`tokenize`
    without the question, pronoun and filler words of :data:`QUERY_FILLER` for the text's
    language (Chinese filler goes before its words are split into characters)."""
    return _tokens(text, language, filler=True)
