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

import re
import unicodedata
from typing import Final

from bm25s.stopwords import STOPWORDS_CHINESE, STOPWORDS_EN, STOPWORDS_SWEDISH

__all__ = [
    "CJK", "CJK_CHAR", "CJK_RUN", "WORD", "JOINED_WORD", "UNIT", "PUNCT_MAP", "STOP_WORDS", "STOP_CJK",
    "QUERY_FILLER", "fold_chinese", "mostly_cjk", "stem", "tokenize", "lexical_tokens",
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


def fold_chinese(text: str) -> str:
    """Fold traditional Chinese to simplified, keeping every offset unchanged."""
    folded = text.translate(_TRAD_TO_SIMP)
    for old, new in _ZH_BIGRAMS:
        folded = folded.replace(old, new)
    return folded


# -- tokens ----------------------------------------------------------------------------------------

STOP_WORDS: Final = frozenset(STOPWORDS_EN) | frozenset(STOPWORDS_SWEDISH)
STOP_CJK: Final = frozenset(w for w in STOPWORDS_CHINESE if len(w) == 1)

try:  # Snowball stemming makes "cooking" match "cook"; without it matching is exact words only.
    import Stemmer

    stem = Stemmer.Stemmer("english").stemWord
except ImportError:  # pragma: no cover - PyStemmer is a declared dependency
    def stem(word: str) -> str:
        return word


def tokenize(text: str) -> list[str]:
    """Lexical tokens of ``text``: casefolded, stemmed words without stop words.

    Runs of CJK characters (:data:`CJK`), which have no spaces between words, become their
    characters and character bigrams, so "喜欢咖啡" matches "咖啡".
    """
    text = unicodedata.normalize("NFKC", text).casefold()
    tokens: list[str] = []
    for word in WORD.findall(text):
        for i, part in enumerate(CJK_RUN.split(word)):
            if not part:
                continue
            if i % 2:  # odd parts of a split on a capturing group are the CJK runs
                tokens.extend(c for c in part if c not in STOP_CJK)
                tokens.extend(part[j:j + 2] for j in range(len(part) - 1))
            elif part not in STOP_WORDS and (len(part) > 1 or part.isdigit()):
                tokens.append(stem(part))
    return tokens


# Words that say how a question is asked or who speaks to whom, not what it is about. Matching
# them ranks long chatty memories first ("what did you do when..." against every turn holding
# "you", "did" and "when"), so the lexical index leaves them out; conflicts and merges keep
# using :func:`tokenize`, whose short stop list keeps negations and pronouns they compare.
QUERY_FILLER: Final = frozenset("""
i me my myself mine we us our ours ourselves you your yours yourself yourselves he him his himself she
her hers herself it its itself they them their theirs themselves what which who whom whose when where
why how this that these those am is are was were be been being have has had having do does did doing
done a an the and but if or because as until while of at by for with about against between into
through during before after above below to from up down in out on off over under again further then
once here there all any both each few more most other some such no nor not only own same so than too
very can could will would shall should may might must just don doesn didn isn wasn aren weren
wouldn also ever still yet like get got go going gone went really oh yeah yes hey hi thanks thank well
lot lots
""".split())
_QUERY_FILLER_STEMS: Final = frozenset(stem(w) for w in QUERY_FILLER) | QUERY_FILLER


def lexical_tokens(text: str | None) -> list[str]:
    """Tokens for lexical match (recall's BM25), of memories and queries alike: :func:`tokenize`
    without the question, pronoun and filler words of :data:`QUERY_FILLER`."""
    if not text:
        return []
    return [t for t in tokenize(text) if t not in _QUERY_FILLER_STEMS]
