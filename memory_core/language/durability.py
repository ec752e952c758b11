"""Durability: whether a memory lasts (who someone is, what they prefer, want, find hard or
decided) or is transient (an event, a state of a day or a week, a log of the chat, small talk, a
thing scheduled for a date), read from its text, category, kind and importance when it is written.

An engine (pure: text in, a reading out). The bank stores the durability with each memory
(settable on add and update); maintenance expires a transient memory once its time has passed and
never expires a durable one for age or disuse alone (:mod:`memory_core.curation.maintenance`). The rule, in
English, Swedish and Chinese, in order (tables in :mod:`memory_core.language.rules.durability_patterns`):

1. a lasting change that starts now ("from today on eats vegan", "从今天起") or a habit ("every
   Thursday", "usually", "på fredagar", "每周六", "every year") is durable;
2. a day word ("today", "tonight", "right now", "tomorrow", "idag", "i morgon", "今天", "明天")
   makes it transient for a day; a date of the year ("on 20 March", "den 18 mars", "3月20日"),
   until that date, unless the day comes back each year (a birthday, "fyller år", "生日"); a week
   word or a weekday named as one day ("this week", "on Friday", "nästa onsdag", "下周三") for a
   couple of weeks ("Saturday runs" is not one day);
3. a milestone told as an event (someone's own first of something, "ran her first marathon",
   "sitt första maraton", "人生第一个"; a home bought, "köpte en lägenhet"; a thing done for a new
   home, job, pet or baby, "till nya valpen", "给新家") is durable, and so is a yearly holiday
   celebrated with no past day named (a tradition: "celebrated Eid with", "firade jul hos",
   "和家人一起过了中秋节"); a log of
   the chat, small talk, a one-off event told by its verb ("Asked how...", "Frågade",
   "问了"), a support ticket's log ("a customer reported..."), or a state of the moment ("is in a
   bad mood", "väntar på", "发烧"), is transient, unless the writer filed it under a lasting
   category (preference, goal, decision, difficulty, profile) or an event names its year
   ("Bought a flat in 2021");
4. a past day ("yesterday", "igår", "昨天") makes an event, unless filed under a lasting category
   ("Decided yesterday to use Postgres");
5. filed as ``other`` and rated below the default importance by its writer, with no sign that it
   lasts (a preference, opinion, impression, plan, who someone is: where they live or work, their
   family, health or diet; "since", a year): small talk or a log, transient;
6. anything else is durable: a fact the rule cannot place is kept and offered for review, not
   archived. A year or a past month ("Moved to Leipzig in 2019") dates a lasting fact.

Kind (explicit or inferred) does not change the reading: an inferred habit lasts as a stated one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from ..errors import ValidationError
from ..models import DEFAULT_IMPORTANCE, DURABILITIES
from .rules.durability_patterns import (
    DATE, DAY, DURABLE_CATEGORIES, FROM_NOW, HABIT, HOLIDAY, LASTING, LOG, MILESTONE, NOW, PAST_DAY, STATE, TRADITION,
    WEEK, YEAR, YEARLY,
)
from .text import fold_chinese, normalise

__all__ = ["DURABILITIES", "HORIZONS", "Reading", "check_durability", "infer", "named_date"]

# How long a transient memory's time lasts: a day's state, a week's, until a date, or by age alone.
HORIZONS: Final = ("day", "week", "date", "age")

_Table = dict[str, list[tuple[str, str]]]


def _compile(table: _Table) -> tuple[tuple[str, re.Pattern[str]], ...]:
    out = []
    for lang, rows in table.items():
        for label, pattern in rows:
            regex = re.compile(pattern)
            if regex.search("") is not None:
                raise ValueError(f"durability pattern {lang}/{label} matches the empty string")
            out.append((label, regex))
    return tuple(out)


(_FROM_NOW, _HABIT, _YEARLY, _DAY, _NOW, _DATE, _WEEK, _HOLIDAY, _LOG, _YEAR, _STATE, _PAST_DAY, _LASTING,
 _MILESTONE, _TRADITION) = (_compile(t) for t in (FROM_NOW, HABIT, YEARLY, DAY, NOW, DATE, WEEK, HOLIDAY, LOG, YEAR,
                                                  STATE, PAST_DAY, LASTING, MILESTONE, TRADITION))


@dataclass(frozen=True)
class Reading:
    """What the rule read: ``durability`` (durable or transient), for a transient memory its
    ``horizon`` (day, week, date or age; None when durable), and ``reason``, the cue that decided
    (quoted as the text has it, for a memory's page and a maintenance row)."""

    durability: str
    horizon: str | None
    reason: str


def check_durability(value: object) -> str:
    """``value`` as a durability, or a clear error."""
    if value not in DURABILITIES:
        raise ValidationError(f"durability must be one of {', '.join(DURABILITIES)}, got {value!r}")
    return str(value)


def _first(rules: tuple[tuple[str, re.Pattern[str]], ...], text: str) -> tuple[str, str] | None:
    for label, regex in rules:
        found = regex.search(text)
        if found:
            return label, found.group(0).strip()
    return None


def infer(text: str | None, category: str = "other", kind: str = "explicit",
          importance: float | None = None) -> Reading:
    """Read a memory's durability from its text, category, kind and importance (``None``: the
    default one) (see the module's rule)."""
    del kind  # read alike: see the module docstring
    if not text:
        return Reading("durable", None, "no text")
    t = fold_chinese(normalise(text))
    if hit := _first(_FROM_NOW, t):
        return Reading("durable", None, f"a lasting change from now ({hit[1]!r})")
    if hit := _first(_HABIT, t):
        return Reading("durable", None, f"a habit ({hit[1]!r})")
    if hit := _first(_DAY, t):
        return Reading("transient", "day", f"names a day ({hit[1]!r})")
    yearly = _first(_YEARLY, t) is not None
    lasts = yearly or _first(_LASTING, t) is not None
    if not lasts and (hit := _first(_NOW, t)):
        return Reading("transient", "day", f"a state of now ({hit[1]!r})")
    if not yearly and (hit := _first(_DATE, t)):
        return Reading("transient", "date", f"names a date ({hit[1]!r})")
    if hit := _first(_WEEK, t):
        return Reading("transient", "week", f"names a week or a weekday ({hit[1]!r})")
    if hit := _first(_MILESTONE, t):
        return Reading("durable", None, f"a milestone ({hit[1]!r})")
    if _first(_PAST_DAY, t) is None and (hit := _first(_TRADITION, t)):
        return Reading("durable", None, f"a tradition: a yearly holiday celebrated ({hit[1]!r})")
    lasting = category in DURABLE_CATEGORIES
    if not (lasting or lasts) and (hit := _first(_HOLIDAY, t)):
        return Reading("transient", "age", f"a plan for a holiday ({hit[1]!r})")
    if not lasting and _first(_YEAR, t) is None and (hit := _first(_LOG, t)):
        return Reading("transient", "age", f"a log or an event ({hit[1]!r})")
    if not lasts and (hit := _first(_STATE, t)):
        return Reading("transient", "day", f"a state of the moment ({hit[1]!r})")
    if hit := _first(_PAST_DAY, t):
        if lasting:
            return Reading("durable", None, f"a past day ({hit[1]!r}) but filed as {category}")
        return Reading("transient", "age", f"an event of a past day ({hit[1]!r})")
    if lasting:
        return Reading("durable", None, f"filed as {category}")
    low = importance is not None and importance < DEFAULT_IMPORTANCE
    if category == "other" and low and not lasts and _first(_YEAR, t) is None:
        return Reading("transient", "age", f"small talk or a log (filed as other, importance {importance:.2f}, "
                       "no sign that it lasts)")
    return Reading("durable", None, "no sign of a passing time")


_MONTHS_EN = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
              "november", "december")
_MONTHS_SV = ("januari", "februari", "mars", "april", "maj", "juni", "juli", "augusti", "september", "oktober",
              "november", "december")
_MONTH_NO = {m: i for months in (_MONTHS_EN, _MONTHS_SV) for i, m in enumerate(months, start=1)}
_MONTH = "|".join(sorted(_MONTH_NO, key=len, reverse=True))
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?(?:\s*(?:to|[–-])\s*(\d{{1,2}}))?\s+({_MONTH})\b")
_MONTH_DAY = re.compile(rf"\b({_MONTH})\s+(\d{{1,2}})(?:st|nd|rd|th)?\b")
_ZH_DATE = re.compile(r"(?<![年\d])(\d{1,2})月(\d{1,2})[日号](?:到(\d{1,2})[日号])?")


def named_date(text: str, written: datetime) -> datetime | None:
    """The last day a dated memory speaks of ("20 March", "12 to 15 March", "3月12日到15日"), at
    midnight of ``written``'s zone: in the year it was written, or the next one when that day
    was well past (more than 60 days before it was written). None when it names none."""
    t = fold_chinese(normalise(text))
    found: tuple[int, int] | None = None
    if m := _DAY_MONTH.search(t):
        found = (_MONTH_NO[m.group(3)], int(m.group(2) or m.group(1)))
    elif m := _MONTH_DAY.search(t):
        found = (_MONTH_NO[m.group(1)], int(m.group(2)))
    elif m := _ZH_DATE.search(t):
        found = (int(m.group(1)), int(m.group(3) or m.group(2)))
    if found is None:
        return None
    month, day = found
    for year in (written.year, written.year + 1):
        try:
            when = written.replace(year=year, month=month, day=day, hour=0, minute=0, second=0, microsecond=0)
        except ValueError:
            return None
        if when >= written - timedelta(days=60):
            return when
    return None
