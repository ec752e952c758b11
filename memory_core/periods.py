"""The periods of time a query names: "in July 2023", "on 26 June, 2023", "in 2022", "last week".

An engine (pure: text and a moment in, periods out). Recall hands the periods to scoring, whose
``date_weight`` lifts memories created in them (:func:`memory_core.scoring.date_match`). English
only: month names, "Month D[, YYYY]", "D Month[ YYYY]", a bare year 1900-2099, and, relative to
``now`` (time is a parameter): yesterday, this/last week, weekend, month and year ("today" is
left out: "how are you today?" is a greeting, not a question about today's memories). A month
without a year is the latest one not after ``now`` ("in June", asked in March 2024, is June
2023). "May" counts only with a day or a year, or as "in May" (else it is the verb).

Each period is ``(start, end)`` in POSIX seconds, start inclusive, end exclusive.
"""

from __future__ import annotations

import calendar
import re
from datetime import datetime, timedelta, timezone

__all__ = ["query_periods"]

_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_MONTH = "|".join(_MONTHS)
_DATE = re.compile(
    rf"\b(?:(?P<day1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?)?(?P<month>{_MONTH})\b"
    rf"(?:\s+(?P<day2>\d{{1,2}})(?:st|nd|rd|th)?\b)?(?:,?\s+(?P<year>(?:19|20)\d\d)\b)?"
    r"|\b(?P<bare>(?:19|20)\d\d)\b"
    r"|\b(?P<rel>yesterday|(?:this|last|past)\s+(?:week(?:end)?|month|year))\b",
    re.IGNORECASE,
)
_IN_MAY = re.compile(r"\b(?:in|during|of|since|until|by)\s+may\b", re.IGNORECASE)


def _utc(when: datetime) -> datetime:
    return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)


def _month(year: int, month: int) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1, tzinfo=timezone.utc)
    return start, datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=timezone.utc)


def _relative(word: str, now: datetime) -> tuple[datetime, datetime]:
    word = " ".join(word.lower().split())
    today = datetime(now.year, now.month, now.day, tzinfo=timezone.utc)
    if word == "yesterday":
        return today - timedelta(days=1), today
    which, unit = word.split(" ")
    if unit in ("week", "weekend"):
        monday = today - timedelta(days=today.weekday())
        start = monday if which == "this" else monday - timedelta(days=7)
        if unit == "weekend":
            start = start + timedelta(days=5)
            return start, start + timedelta(days=2)
        return start, start + timedelta(days=7)
    if unit == "month":
        if which == "this":
            return _month(now.year, now.month)
        return _month(now.year - (now.month == 1), (now.month - 2) % 12 + 1)
    year = now.year if which == "this" else now.year - 1
    return datetime(year, 1, 1, tzinfo=timezone.utc), datetime(year + 1, 1, 1, tzinfo=timezone.utc)


def query_periods(text: str, now: datetime) -> tuple[tuple[float, float], ...]:
    """Every period ``text`` names, as ``(start, end)`` POSIX seconds (end exclusive), in order of
    appearance, without repeats; ``()`` when it names none."""
    now = _utc(now)
    out: list[tuple[float, float]] = []
    for m in _DATE.finditer(text):
        if m.group("bare"):
            year = int(m.group("bare"))
            span = (datetime(year, 1, 1, tzinfo=timezone.utc), datetime(year + 1, 1, 1, tzinfo=timezone.utc))
        elif m.group("rel"):
            span = _relative(m.group("rel"), now)
        else:
            month = _MONTHS[m.group("month").lower()]
            day = m.group("day1") or m.group("day2")
            year = m.group("year")
            if month == 5 and not (day or year) and not _IN_MAY.search(text[max(0, m.start() - 8):m.end()]):
                continue  # "may" the verb
            y = int(year) if year else (now.year if month <= now.month else now.year - 1)
            if day and 1 <= int(day) <= calendar.monthrange(y, month)[1]:
                start = datetime(y, month, int(day), tzinfo=timezone.utc)
                span = (start, start + timedelta(days=1))
            else:
                span = _month(y, month)
        period = (span[0].timestamp(), span[1].timestamp())
        if period not in out:
            out.append(period)
    return tuple(out)
