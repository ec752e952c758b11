"""The periods of time a query names: "in July 2023", "on 26 June, 2023", "last week", "förra
veckan", "2023年7月", "上周", "2023-07-26".

An engine (pure: text and a moment in, periods out; what is a CJK character is :mod:`.text`'s
rule). Recall hands the periods to scoring, whose ``date_weight`` lifts memories created in them
(:func:`memory_core.index.scoring.date_match`). In English, Swedish and Chinese, the languages the rest
of the bank reads:

* a day, a month or a year by name: "26 June 2023", "June 26, 2023", "July", "in 2022"; Swedish
  month names in the same shapes ("den 26 juni 2023", "i juli"); Chinese "2023年7月26日",
  "7月26号", "七月", "2023年", "去年七月" (July of last year); ISO "2023-07-26" and "2023-07";
  a bare year 1900-2099;
* relative to ``now`` (time is a parameter): yesterday, the day before, this/last week, weekend,
  month and year ("igår", "i förrgår", "förra veckan", "i helgen", "förra månaden", "i fjol",
  "i år"; "昨天", "前天", "上周", "这个周末", "上个月", "去年", "今年"). "Today" is left out: "how
  are you today?" is a greeting, not a question about today's memories;
* days and weeks ago: "3 days ago", "two weeks ago", "för en vecka sedan", "三天前", "两周前" (that
  day; that Monday-to-Sunday week). Months and years ago are left out: they mostly date what a
  memory tells of, which an agent hears long after ("moved here four years ago");
* a day of the week: "last Friday" and "i fredags" are the latest Friday before today, "上周五" is
  Friday of last week and "这周五" of this one (when it has come). A bare "Friday" is left out
  ("on Fridays", "see you Friday"). Where the text also names a day ("last Friday, on 23 January
  2022"), the weekday counts back from that day, not from ``now``.

A month without a year is the latest one not after ``now`` ("in June", asked in March 2024, is
June 2023); "last June" is the latest one before this month, and a month "last year" ("July last
year", "juli förra året", "去年七月") or "this year" is that year's. A month name that is also a
common word counts only with a day or a year, or after a preposition such as "in": "May" (the
verb) and "mars" (Swedish March, English Mars).

Each period is ``(start, end)`` in POSIX seconds, start inclusive, end exclusive.
"""

from __future__ import annotations

import calendar
import re
from datetime import datetime, timedelta, timezone

from .text import CJK_CHAR

__all__ = ["query_periods"]

Span = tuple[datetime, datetime]

_SWEDISH_MONTHS = ("januari", "februari", "mars", "april", "maj", "juni", "juli", "augusti", "september",
                   "oktober", "november", "december")
_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_MONTHS.update({m: i for i, m in enumerate(_SWEDISH_MONTHS, start=1)})
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
# Month names that are also everyday words: a period only with a day or a year, or after one of
# their language's prepositions ("in May"; "i mars", "i början av mars").
_AMBIGUOUS = {
    "may": re.compile(r"\b(?:in|during|of|since|until|by)\s+may$", re.IGNORECASE),
    "mars": re.compile(r"\b(?:i|av|under|sedan|till|före|efter|in|of)\s+mars$", re.IGNORECASE),
}

# Relative periods, by the words that name them: (which, unit).
_RELATIVE: dict[str, tuple[str, str]] = {
    "yesterday": ("last", "day"), "the day before yesterday": ("before last", "day"),
    **{f"{which} {unit}": ("last" if which == "past" else which, unit)
       for which in ("this", "last", "past") for unit in ("week", "weekend", "month", "year")},
    # Swedish
    "igår": ("last", "day"), "i går": ("last", "day"), "i förrgår": ("before last", "day"),
    "förra veckan": ("last", "week"), "den här veckan": ("this", "week"), "denna vecka": ("this", "week"),
    "i veckan": ("this", "week"),
    "förra helgen": ("last", "weekend"), "i helgen": ("this", "weekend"), "den här helgen": ("this", "weekend"),
    "förra månaden": ("last", "month"), "den här månaden": ("this", "month"), "denna månad": ("this", "month"),
    "förra året": ("last", "year"), "i fjol": ("last", "year"), "i år": ("this", "year"),
    # Chinese
    "昨天": ("last", "day"), "前天": ("before last", "day"),
    **{w: ("last", "week") for w in ("上周", "上星期", "上个星期", "上礼拜", "上个礼拜")},
    **{w: ("this", "week") for w in ("这周", "本周", "这星期", "这个星期", "这礼拜", "这个礼拜")},
    **{w: ("last", "weekend") for w in ("上周末", "上个周末")},
    **{w: ("this", "weekend") for w in ("这周末", "本周末", "这个周末")},
    "上个月": ("last", "month"), "这个月": ("this", "month"), "本月": ("this", "month"),
    "去年": ("last", "year"), "今年": ("this", "year"),
}


def _phrase(words: str) -> str:
    """A relative phrase as a pattern: words apart by any space; whole words where they are words
    (Chinese has no spaces between words, so its phrases match anywhere)."""
    body = r"\s+".join(re.escape(w) for w in words.split())
    return body if CJK_CHAR.match(words) else rf"\b{body}\b"


_ZH_DIGITS = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"两": 2}
_ZH_MONTH = r"1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九]"

# One pattern per shape; where two match the same text (an ISO date and its year, say) the
# earliest and then longest wins.
_ISO = re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>1[0-2]|0?[1-9])(?:-(?P<day>[12]\d|3[01]|0?[1-9]))?(?:\b|(?=T\d))")
_DAY_MONTH = (rf"(?:(?P<day1>\d{{1,2}})(?:st|nd|rd|th|:e|:a)?\.?\s+(?:of\s+)?)?(?P<month>{_MONTH})\b"
              rf"(?:\s+(?P<day2>\d{{1,2}})(?:st|nd|rd|th)?\b)?")
_NAMED = re.compile(rf"\b{_DAY_MONTH}(?:,?\s+(?P<year>(?:19|20)\d\d)\b)?", re.IGNORECASE)
# The year a month is of, as years back from now's: "July last year", "去年七月", "this July".
_YEARS_BACK = {"last year": 1, "this year": 0, "förra året": 1, "i fjol": 1, "i år": 0, "förra årets": 1,
               "this": 0, "前年": 2, "去年": 1, "今年": 0}
# A month of last year or this year: "July last year", "4 July of last year", "juli förra året",
# "mars i år"; "last July" (the latest July before this month), "this July", "förra årets juli".
_NAMED_IN_YEAR = re.compile(
    rf"\b{_DAY_MONTH},?\s+(?:of\s+)?(?P<which>last\s+year|this\s+year|förra\s+året|i\s+fjol|i\s+år)\b",
    re.IGNORECASE)
_WHICH_MONTH = re.compile(rf"\b(?P<which>last|this|förra\s+årets)\s+(?P<month>{_MONTH})\b", re.IGNORECASE)
_CHINESE = re.compile(
    rf"(?P<year>(?:19|20)\d\d)\s*年(?:\s*(?P<month>{_ZH_MONTH})\s*月(?:\s*(?P<day>[0-3]?\d)\s*[日号])?)?"
    rf"|(?P<ago>前年|去年|今年)\s*(?P<month3>{_ZH_MONTH})\s*月(?:\s*(?P<day3>[0-3]?\d)\s*[日号])?"
    rf"|(?<![\d年])(?P<month2>{_ZH_MONTH})\s*月(?:\s*(?P<day2>[0-3]?\d)\s*[日号])?"
)
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
# Days and weeks ago: "3 days ago", "two weeks ago", "för två veckor sedan", "三天前", "两周前".
_COUNTS = {w: i for i, w in enumerate(("one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                                       "ten", "eleven", "twelve"), start=1)}
_COUNTS.update({"a": 1, "an": 1, "a couple of": 2, "en": 1, "ett": 1, "ett par": 2, "två": 2, "tre": 3,
                "fyra": 4, "fem": 5, "sex": 6, "sju": 7, "åtta": 8, "nio": 9, "tio": 10, "elva": 11, "tolv": 12})
_COUNT = r"\d{1,3}|" + "|".join(r"\s+".join(map(re.escape, w.split())) for w in sorted(_COUNTS, key=len, reverse=True))
_ZH_COUNT = r"\d{1,3}|[一二两三四五六七八九十]{1,3}"
_AGO = re.compile(
    rf"\b(?P<n>{_COUNT})\s+(?P<unit>days?|weeks?)\s+ago\b"
    rf"|\bför\s+(?P<sv_n>{_COUNT})\s+(?P<sv_unit>dag(?:ar)?|veck(?:a|or))\s+sedan\b"
    rf"|(?P<zh_n>{_ZH_COUNT})\s*(?P<zh_unit>天|日|周|个?星期|个?礼拜)前",
    re.IGNORECASE)
# Days of the week, Monday 0: "last Friday", "i fredags" (the latest one before today); "上周五"
# (in last week), "这周五" (in this week).
_SWEDISH_WEEKDAYS = ("måndag", "tisdag", "onsdag", "torsdag", "fredag", "lördag", "söndag")
_WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
_WEEKDAYS.update({name: i for i, name in enumerate(_SWEDISH_WEEKDAYS)})
_ZH_WEEKDAYS = {c: i for i, c in enumerate("一二三四五六")} | {"日": 6, "天": 6}
_WEEKDAY = re.compile(
    rf"\b(?:last|this\s+past|past|previous)\s+(?P<en>{'|'.join(calendar.day_name)})\b"
    rf"|\bi\s+(?P<sv>{'|'.join(_SWEDISH_WEEKDAYS)})s\b"
    r"|(?P<zh>上个?|这个?|本)(?:周|星期|礼拜)(?P<zhday>[一二三四五六日天])",
    re.IGNORECASE)
_REL = re.compile("|".join(_phrase(w) for w in sorted(_RELATIVE, key=len, reverse=True)), re.IGNORECASE)


def _utc(when: datetime) -> datetime:
    return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)


def _today(now: datetime) -> datetime:
    return datetime(now.year, now.month, now.day, tzinfo=timezone.utc)


def _days(start: datetime, days: int = 1) -> Span:
    """The ``days`` days from ``start`` on (one: that day)."""
    return start, start + timedelta(days=days)


def _monday(today: datetime, weeks_back: int) -> datetime:
    """The Monday of ``today``'s week, or of the week ``weeks_back`` weeks before it."""
    return today - timedelta(days=today.weekday() + 7 * weeks_back)


def _month(year: int, month: int) -> Span:
    start = datetime(year, month, 1, tzinfo=timezone.utc)
    return start, datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=timezone.utc)


def _year(year: int) -> Span:
    return datetime(year, 1, 1, tzinfo=timezone.utc), datetime(year + 1, 1, 1, tzinfo=timezone.utc)


def _date(year: int | None, month: int, day: int | None, now: datetime) -> Span:
    """A day, or a whole month when there is no such day; a month without a year is the latest
    one not after ``now``."""
    y = year if year is not None else (now.year if month <= now.month else now.year - 1)
    if day and 1 <= day <= calendar.monthrange(y, month)[1]:
        return _days(datetime(y, month, day, tzinfo=timezone.utc))
    return _month(y, month)


def _relative(which: str, unit: str, now: datetime) -> Span:
    today = _today(now)
    if unit == "day":
        return _days(today - timedelta(days=2 if which == "before last" else 1))
    if unit in ("week", "weekend"):
        start = _monday(today, 0 if which == "this" else 1)
        return _days(start + timedelta(days=5), 2) if unit == "weekend" else _days(start, 7)
    if unit == "month":
        if which == "this":
            return _month(now.year, now.month)
        return _month(now.year - (now.month == 1), (now.month - 2) % 12 + 1)
    return _year(now.year if which == "this" else now.year - 1)


def _weekday(m: re.Match, now: datetime) -> Span | None:
    """The day a weekday phrase names, counted from ``now``'s day; None for one still to come
    ("这周五" asked on a Wednesday: no memory was made then)."""
    today = _today(now)
    if m["zh"]:
        day = _monday(today, int(m["zh"].startswith("上"))) + timedelta(days=_ZH_WEEKDAYS[m["zhday"]])
        if day > today:
            return None
    else:  # the latest one before today
        wanted = _WEEKDAYS[(m["en"] or m["sv"]).lower()]
        day = today - timedelta(days=(today.weekday() - wanted - 1) % 7 + 1)
    return _days(day)


def _zh_number(text: str) -> int | None:
    """A number in digits or in Chinese numerals up to 99 ("三", "十二", "二十", "两"); None for
    characters that make none."""
    if text.isdigit():
        return int(text)
    if "十" not in text:
        return _ZH_DIGITS.get(text) if len(text) == 1 else None
    tens, _, units = text.partition("十")
    if len(tens) > 1 or len(units) > 1 or (tens and tens not in _ZH_DIGITS) or (units and units not in _ZH_DIGITS):
        return None
    return (_ZH_DIGITS[tens] if tens else 1) * 10 + (_ZH_DIGITS[units] if units else 0)


def _ago(m: re.Match, now: datetime) -> Span | None:
    """The day or week "N days/weeks ago" names; None for a count that is no number."""
    if m["zh_n"]:
        n, weeks = _zh_number(m["zh_n"]), m["zh_unit"] not in ("天", "日")
    else:
        count = " ".join((m["n"] or m["sv_n"]).lower().split())
        n = int(count) if count.isdigit() else _COUNTS[count]
        weeks = (m["unit"] or m["sv_unit"]).lower().startswith(("week", "veck"))
    if n is None:
        return None
    today = _today(now)
    return _days(_monday(today, n), 7) if weeks else _days(today - timedelta(days=n))


def _int(text: str | None) -> int | None:
    return int(text) if text else None


def _found(text: str, now: datetime) -> list[tuple[int, int, Span | None]]:
    """(start, end, span) of every match of every shape, overlaps included; span None for a
    phrase that names no past period (it still covers its words: "这周五" is not "这周")."""
    out: list[tuple[int, int, Span | None]] = []
    for m in _ISO.finditer(text):
        out.append((m.start(), m.end(), _date(int(m["year"]), int(m["month"]), _int(m["day"]), now)))
    for m in _NAMED.finditer(text):
        name = m["month"].lower()
        day, year = _int(m["day1"] or m["day2"]), _int(m["year"])
        if name in _AMBIGUOUS and not (day or year) and not _AMBIGUOUS[name].search(text[max(0, m.start() - 8):m.end()]):
            continue  # "May I ask", "life on Mars"
        out.append((m.start(), m.end(), _date(year, _MONTHS[name], day, now)))
    for m in _NAMED_IN_YEAR.finditer(text):
        year = now.year - _YEARS_BACK[" ".join(m["which"].lower().split())]
        out.append((m.start(), m.end(), _date(year, _MONTHS[m["month"].lower()], _int(m["day1"] or m["day2"]), now)))
    for m in _WHICH_MONTH.finditer(text):
        which, month = " ".join(m["which"].lower().split()), m["month"].lower()
        if month in _AMBIGUOUS and (which == "this" or which == "last" and month == "mars"):
            continue  # "this may help", "the last Mars rover" (but "last May", "förra årets mars")
        if which == "last":  # the latest one before this month
            year = now.year if _MONTHS[month] < now.month else now.year - 1
        else:
            year = now.year - _YEARS_BACK[which]
        out.append((m.start(), m.end(), _month(year, _MONTHS[month])))
    for m in _CHINESE.finditer(text):
        if m["year"] and not m["month"]:
            span = _year(int(m["year"]))
        elif m["year"]:
            span = _date(int(m["year"]), _zh_number(m["month"]), _int(m["day"]), now)
        elif m["ago"]:
            span = _date(now.year - _YEARS_BACK[m["ago"]], _zh_number(m["month3"]), _int(m["day3"]), now)
        else:
            span = _date(None, _zh_number(m["month2"]), _int(m["day2"]), now)
        out.append((m.start(), m.end(), span))
    for m in _YEAR.finditer(text):
        out.append((m.start(), m.end(), _year(int(m.group()))))
    # A weekday counts back from the first day the text names by date, if it names one.
    days = [span[0] for _, _, span in sorted(out, key=lambda f: f[0]) if span[1] - span[0] == timedelta(days=1)]
    for m in _REL.finditer(text):
        out.append((m.start(), m.end(), _relative(*_RELATIVE[" ".join(m.group().lower().split())], now)))
    for m in _AGO.finditer(text):
        out.append((m.start(), m.end(), _ago(m, now)))
    for m in _WEEKDAY.finditer(text):
        out.append((m.start(), m.end(), _weekday(m, days[0] if days else now)))
    return out


def query_periods(text: str, now: datetime) -> tuple[tuple[float, float], ...]:
    """Every period ``text`` names, as ``(start, end)`` POSIX seconds (end exclusive), in order of
    appearance, without repeats; ``()`` when it names none."""
    now = _utc(now)
    out: list[tuple[float, float]] = []
    taken = 0  # where the last match kept ends: a match inside it is part of it ("2023" of "2023-07")
    for start, end, span in sorted(_found(text, now), key=lambda f: (f[0], -f[1])):
        if start < taken:
            continue
        taken = end
        if span is None:
            continue
        period = (span[0].timestamp(), span[1].timestamp())
        if period not in out:
            out.append(period)
    return tuple(out)
