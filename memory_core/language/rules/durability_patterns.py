"""The durability rule's tables: per language, the cues that a memory is transient (a day's or a
week's state, a date, a log of the chat, a one-off event) and the cues that keep it durable (a
lasting change that starts now, a habit). ``durability.py`` compiles and runs them."""

from __future__ import annotations

from typing import Final

# Patterns run on NFKC-normalised, casefolded text with traditional Chinese folded to simplified,
# so they are lowercase and use simplified characters. Each table maps a language to
# (label, pattern) rows; the label names the cue in the reason a memory's page shows. Every
# language's rows run on every text (a Swedish word does not read as an English one here), so a
# mixed or misdetected text is still read.

_WD_EN = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_WD_SV = "måndag|tisdag|onsdag|torsdag|fredag|lördag|söndag"
_MON_EN = "january|february|march|april|may|june|july|august|september|october|november|december"
_MON_SV = "januari|februari|mars|april|maj|juni|juli|augusti|september|oktober|november|december"

# A lasting change that starts now ("from today on eats vegan"): durable, whatever day words it has.
FROM_NOW: Final[dict[str, list[tuple[str, str]]]] = {
    "en": [("from now on", r"\b(?:from (?:now|today|tonight) on|starting (?:today|now)|as of today|from today)\b")],
    "sv": [("från och med nu", r"\b(?:från och med (?:idag|i dag|nu)|fr\.o\.m\. idag|hädanefter)\b")],
    "zh": [("从今天起", r"从(?:今天|现在|今晚)(?:起|开始)|今后|以后都")],
}

# A habit: a weekday or a period that recurs is not a date ("every Thursday", "on Fridays").
HABIT: Final[dict[str, list[tuple[str, str]]]] = {
    "en": [("every", rf"\b(?:every|each)\s+(?:day|week|morning|evening|night|{_WD_EN})"),
           ("weekdays", rf"\b(?:{_WD_EN})s\b|\b(?:{_WD_EN}) (?:mornings|afternoons|evenings|nights)\b|\bweekdays\b"),
           ("times a week", r"\b(?:times?|once|twice) a (?:day|week|month)\b")],
    "sv": [("varje", rf"\b(?:varje|var)\s+(?:dag|vecka|morgon|kväll|{_WD_SV})"),
           ("på måndagar", rf"\bpå\s+(?:{_WD_SV})ar\b|\b(?:{_WD_SV})s(?:morgnar|kvällar|eftermiddagar)\b|\bvardagar\b"),
           ("gånger i veckan", r"\bgånger? i (?:veckan|månaden)\b")],
    "zh": [("每周", r"每(?:天|周|星期|个?礼拜|个?月|晚|早)|一周[一二三四五六七八九两]次"),
           ("习惯", r"习惯|只在(?:周|星期)")],
}

# A day: today, tonight, now, tomorrow, after work. Its state passes within days.
DAY: Final[dict[str, list[tuple[str, str]]]] = {
    "en": [("today", r"\b(?:today|today's|tonight|tonight's|this (?:morning|afternoon|evening))\b"),
           ("now", r"\b(?:right now|at the moment)\b"),
           ("tomorrow", r"\btomorrow\b"),
           ("after work", r"\bafter work\b")],
    "sv": [("idag", r"\b(?:idag|i dag|ikväll|i kväll|kvällens|i morse|i eftermiddag|i eftermiddags|dagens)\b"),
           ("just nu", r"\b(?:just nu|för tillfället)\b"),
           ("i morgon", r"\b(?:i morgon|imorgon)\b"),
           ("efter jobbet", r"\befter jobbet\b")],
    "zh": [("今天", r"今天|今晚|今早"), ("目前", r"目前|刚才|刚刚|此刻"), ("明天", r"明天|明早|明晚"),
           ("下班后", r"下班后")],
}

# A date of the year without a year ("on 20 March", "den 18 mars", "3月20日"): a thing scheduled.
DATE: Final[dict[str, list[tuple[str, str]]]] = {
    "en": [("date", rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:to \d{{1,2}}\s+)?(?:{_MON_EN})\b(?!,?\s+(?:19|20)\d\d)"
                    rf"|\b(?:{_MON_EN})\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?!,?\s+(?:19|20)\d\d)")],
    "sv": [("datum", rf"\b\d{{1,2}}(?:[–-]\d{{1,2}})?\s+(?:{_MON_SV})\b(?!\s+(?:19|20)\d\d)")],
    "zh": [("日期", r"(?<![年\d])\d{1,2}月\d{1,2}[日号]")],
}

# A week: this or next week, the weekend, a weekday, the last few days. Over within a couple of weeks.
WEEK: Final[dict[str, list[tuple[str, str]]]] = {
    "en": [("this week", r"\b(?:this|next) (?:week|weekend)\b|\bthe weekend\b"),
           ("weekday", rf"\b(?:{_WD_EN})\b"),
           ("last few days", r"\b(?:last|past) few (?:days|nights)\b")],
    "sv": [("den här veckan", r"\b(?:den här|denna|nästa) (?:veckan?|helgen?)\b|\bi helgen\b|\bhelgens\b"),
           ("veckodag", rf"\b(?:{_WD_SV})\b"),
           ("de senaste dagarna", r"\bde senaste (?:dagarna|nätterna)\b")],
    "zh": [("这周", r"这周|本周|下周|这个周末|周末"),
           ("星期几", r"(?:周|星期|礼拜)[一二三四五六日天]"),
           ("最近几天", r"最近几天")],
}

# A log of the chat, small talk or a one-off event, told by its verb at the start.
LOG: Final[dict[str, list[tuple[str, str]]]] = {
    "en": [("chat", r"^(?:asked|said|greeted|mentioned|pasted|laughed|thanked)\b"),
           ("event", r"^(?:ran|debugged|watched|had|got|skipped|ate|went|bought|ordered)\b")],
    "sv": [("chatt", r"^(?:frågade|sa|sade|hälsade|nämnde|klistrade|skrattade|tackade|bad)\b"),
           ("händelse", r"^(?:körde|felsökte|såg|åt|fick|hoppade|köpte|gick)\b")],
    "zh": [("对话", r"^(?:问了|说了|说|提到|贴了|让助手|跟助手)|^[^，。]{0,4}(?:问了|提到|说了)|^被.*逗"),
           ("事件", r"^(?:排查了|跑了|中午吃了|晚上吃了|看了)")],
}

# A state of the moment without a time word ("is in a bad mood", "running a fever").
STATE: Final[dict[str, list[tuple[str, str]]]] = {
    "en": [("state", r"\b(?:is|am|feels?|feeling) (?:tired|sick|ill|stuck|nervous|stressed|in a (?:bad|good) mood|"
                     r"waiting|busy|in a hurry)\b|\bfever\b|\bis down\b|\bhasn't slept\b|\bneeds to pick up\b|\bpile of\b")],
    "sv": [("tillstånd", r"\b(?:är|känner sig) (?:trött|sjuk|förkyld|nervös|stressad|på (?:dåligt|bra) humör)\b|"
                         r"\bväntar på\b|\bfeber\b|\bligger nere\b|\bhar sovit dåligt\b|\bska hämta\b|\bmycket mejl\b|"
                         r"\bbråttom\b")],
    "zh": [("状态", r"卡在|感冒|发烧|很累|心情不好|紧张|在等|挂了|睡不好|取快递|一堆邮件|赶时间")],
}

# A day already past ("yesterday"): an event, unless the writer said it is a lasting kind of memory.
PAST_DAY: Final[dict[str, list[tuple[str, str]]]] = {
    "en": [("yesterday", r"\b(?:yesterday|last night)\b")],
    "sv": [("igår", r"\b(?:igår|i går|i natt|inatt)\b")],
    "zh": [("昨天", r"昨天|昨晚")],
}

# The categories that say a memory lasts: who someone is, what they prefer, want, find hard or decided.
DURABLE_CATEGORIES: Final = frozenset({"preference", "goal", "decision", "difficulty", "profile"})
