#!/usr/bin/env python3
"""Deterministic generator of the Memory Console demo bank.

Writes, next to this file:

* ``demo_memories.jsonl`` - distilled memories an agent kept about four users
  (one JSON object per line: text, namespace, kind, category, importance,
  created_at, source and, for a few, status="archived").
* ``demo_queries.jsonl`` - a recall history: user turns sent to the agent,
  each {"namespace", "query", "at"}, sorted by "at".
* ``demo_truth.json`` - the answer key: which lines of the two files are the
  planted duplicate clusters, contradictions, stale facts, trivia and logs, and
  which memory lines each query was written to recall (see ``build_truth``).

Every text below was written by hand for this project (no dataset was copied).
Standard library only; seeded with ``random.Random(2026)``, so running it twice
gives byte-identical files.

    python data/generate_demo.py            # write the three files and print stats
    python data/generate_demo.py --check    # regenerate in memory, compare with files on disk
"""

from __future__ import annotations

import calendar
import json
import random
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent / "memory_core" / "demo_data"
MEMORIES_PATH = HERE / "memories.jsonl"
QUERIES_PATH = HERE / "queries.jsonl"
TRUTH_PATH = HERE / "truth.json"

SEED = 2026
PERIOD_START = datetime(2025, 9, 1, tzinfo=timezone.utc)
PERIOD_END = datetime(2026, 11, 25, 23, 59, 59, tzinfo=timezone.utc)

PREF, GOAL, DEC, DIFF, FACT, PROF, OTH = (
    "preference", "goal", "decision", "difficulty", "fact", "profile", "other",
)
CATEGORIES = (PREF, GOAL, DEC, DIFF, FACT, PROF, OTH)
KINDS = {"e": "explicit", "i": "inferred"}


# --------------------------------------------------------------------------
# Content model
# --------------------------------------------------------------------------

@dataclass
class Mem:
    text: str
    category: str
    importance: float
    kind: str = "e"            # "e" explicit, "i" inferred
    source: str = "chat"
    lo: datetime | None = None
    hi: datetime | None = None
    tag: str = ""              # "", "stale", "trivia", "dup", "old", "new", "log"
    group: int = -1            # cluster / contradiction pair id
    created: datetime | None = None
    status: str | None = None


@dataclass
class QuerySpec:
    text: str
    times: int = 1
    before_next: bool = False  # for the old side of a contradiction: ask before the update


@dataclass
class Entry:
    """One hand-written unit: a single memory, a paraphrase cluster, or a contradiction pair."""
    kind: str                      # "single", "cluster", "contra"
    mems: list[Mem]
    queries: list[tuple[int, QuerySpec]] = field(default_factory=list)  # (index into mems, query)


@dataclass
class Namespace:
    name: str
    start: datetime                # first conversation (onboarding) - nothing earlier
    entries: list[Entry] = field(default_factory=list)
    offtopic: list[str] = field(default_factory=list)
    first_contact: datetime | None = None  # set when dates are assigned


NAMESPACES: dict[str, Namespace] = {}
_current: Namespace | None = None
_group_counter = [0]


def namespace(name: str, start: str) -> None:
    global _current
    _current = NAMESPACES.setdefault(name, Namespace(name, _parse_point(start, lo=True)))


def _parse_point(s: str, lo: bool) -> datetime:
    """'2026-03' or '2026-03-14' -> first/last second of that month/day (UTC)."""
    parts = [int(p) for p in s.split("-")]
    if len(parts) == 2:
        y, m = parts
        d = 1 if lo else calendar.monthrange(y, m)[1]
    elif len(parts) == 3:
        y, m, d = parts
    else:
        raise ValueError(f"bad date {s!r}")
    if lo:
        return datetime(y, m, d, 0, 0, 0, tzinfo=timezone.utc)
    return datetime(y, m, d, 23, 59, 59, tzinfo=timezone.utc)


def _window(when) -> tuple[datetime | None, datetime | None]:
    if when is None:
        return None, None
    if isinstance(when, str):
        return _parse_point(when, True), _parse_point(when, False)
    a, b = when
    return _parse_point(a, True), _parse_point(b, False)


def _qspecs(q) -> list[QuerySpec]:
    out = []
    for item in q or ():
        if isinstance(item, tuple):
            out.append(QuerySpec(item[0], item[1]))
        else:
            out.append(QuerySpec(item))
    return out


def F(text, cat, imp, when=None, kind="e", src="chat", tag="", q=()):
    """A single memory. `q`: user turns that should recall it (str or (str, times))."""
    lo, hi = _window(when)
    e = Entry("single", [Mem(text, cat, imp, kind, src, lo, hi, tag)])
    e.queries = [(0, s) for s in _qspecs(q)]
    _current.entries.append(e)


def S(text, cat, imp, when, kind="e", q=()):
    """A stale memory: only true around `when` ("is on vacation this week")."""
    F(text, cat, imp, when, kind, tag="stale", q=q)


def T(text, cat, imp, when=None, kind="e", q=()):
    """Low-importance trivia, a natural target for a forgetting pass."""
    F(text, cat, imp, when, kind, tag="trivia", q=q)


def D(cat, imp, texts, when=None, kinds=None, q=()):
    """A cluster of 2-4 paraphrases of one fact, stored at different dates."""
    assert 2 <= len(texts) <= 4, texts
    lo, hi = _window(when)
    _group_counter[0] += 1
    kinds = kinds or "e" * len(texts)
    mems = [Mem(t, cat, imp, k, "chat", lo, hi, "dup", _group_counter[0]) for t, k in zip(texts, kinds)]
    e = Entry("cluster", mems)
    e.queries = [(0, s) for s in _qspecs(q)]
    _current.entries.append(e)


def C(cat, imp, old, new, kind="ee", q=(), qo=()):
    """A contradiction: `old` = (text, when) later superseded by `new` = (text, when).

    `q` are asked after the update, `qo` between the old statement and the update.
    `imp` may be a number or an (old, new) pair.
    """
    _group_counter[0] += 1
    imp_old, imp_new = imp if isinstance(imp, tuple) else (imp, imp)
    (t_old, w_old), (t_new, w_new) = old, new
    src_old = "chat"
    if w_old in ("onboarding", "import"):  # stated on the namespace's first day
        src_old, w_old = w_old, None
    lo1, hi1 = _window(w_old)
    lo2, hi2 = _window(w_new)
    m_old = Mem(t_old, cat, imp_old, kind[0], src_old, lo1, hi1, "old", _group_counter[0])
    m_new = Mem(t_new, cat, imp_new, kind[1], "chat", lo2, hi2, "new", _group_counter[0])
    e = Entry("contra", [m_old, m_new])
    e.queries = [(1, s) for s in _qspecs(q)]
    for s in _qspecs(qo):
        s.before_next = True
        e.queries.append((0, s))
    _current.entries.append(e)


def OB(text, cat, imp, kind="e", q=()):
    """Stated during onboarding (first conversation), source="onboarding"."""
    F(text, cat, imp, None, kind, src="onboarding", q=q)


def IM(text, cat, imp, q=()):
    """Bulk-imported on the namespace's first day, source="import"."""
    F(text, cat, imp, None, "e", src="import", q=q)


def OFF(*queries):
    """General-knowledge / off-topic turns: they should recall nothing."""
    _current.offtopic.extend(queries)


# ==========================================================================
# alice - UX researcher, moved from Manchester to Stockholm, home cook,
#         runner, learning Swedish (some memories written in Swedish)
# ==========================================================================
namespace("alice", "2025-09-03")

OB("Name is Alice", PROF, 0.95, q=["do you remember my name?"])
OB("Moved from Manchester to Stockholm in June 2025", PROF, 0.8,
   q=["how long have I been in Sweden now?"])
OB("Works remotely as a UX researcher for a London design agency", PROF, 0.8,
   q=["help me plan my workday, I have client calls later"])
OB("Lives with her partner, who is Swedish", PROF, 0.75)
OB("Wants help with three things: cooking, running and learning Swedish", GOAL, 0.8)
OB("Prefers short answers with bullet points", PREF, 0.7)
C(PROF, 0.5, ("Is 34 years old", "onboarding"),
  ("Turned 35 in March 2026", ("2026-03-10", "2026-03-25")),
  q=["how old am I again? I keep forgetting lol"])
C(PREF, 0.8, ("Prefers vegetarian food", "onboarding"),
  ("Started eating fish again, mostly salmon and cod", ("2026-04-05", "2026-04-28")),
  q=["do I eat fish these days?", "plan three dinners for next week"],
  qo=["is there a vegetarian version of fish tacos?"])

# --- cooking ---------------------------------------------------------------
D(PROF, 0.9, ["Mildly allergic to cashews",
              "Gets an itchy mouth from cashews, so recipes must leave them out",
              "Cashew allergy (mild): no cashew cream or cashew nuts"],
  kinds="eei", q=["can I make a creamy vegan curry sauce with nuts?",
                  "is this korma recipe safe for me?"])
D(PREF, 0.7, ["Hates coriander; says it tastes like soap",
              "Leave fresh coriander out of recipe suggestions",
              "Dislikes coriander leaves"], kinds="eii",
  q=["what herbs go well in a lentil soup?"])
D(PREF, 0.55, ["Batch-cooks on Sunday afternoons for the working week",
               "Does meal prep every Sunday",
               "Sunday afternoon is her cooking-for-the-week slot"], kinds="eii",
  q=["what should I prep this Sunday?", "give me a meal-prep plan for the week"])
D(PREF, 0.6, ["Her partner doesn't eat mushrooms",
              "Avoid mushrooms when she cooks for two: her partner dislikes them"], kinds="ei",
  q=["suggest a dinner for two tonight", "my partner is cooking tonight, any ideas for him?"])
D(PREF, 0.65, ["Loves Indian food, especially dals and curries",
               "Favourite cuisine is Indian",
               "Makes some kind of dal almost every week"], kinds="eei",
  q=[("what should I cook tonight?", 5), "I'm craving something warming, ideas?"])
F("Prefers weekday recipes that take under 40 minutes", PREF, 0.6,
  q=["any quick dinner idea? I only have half an hour", "quick lunch idea?"])
F("Likes spicy food, but not blow-your-head-off hot", PREF, 0.45, kind="i",
  q=["how many chillies should I put in the vindaloo?"])
F("Loves Levantine dishes like shakshuka and mujaddara", PREF, 0.45,
  q=["what's a good brunch for Saturday?"])
F("Prefers metric units in recipes", PREF, 0.5, q=["how much flour is a cup?"])
F("Dislikes very sweet desserts", PREF, 0.35,
  q=["what dessert should I bring to the dinner party?"], kind="i")
F("Likes learning the Swedish word for each ingredient", PREF, 0.4, kind="i",
  q=["what's the Swedish word for chickpeas?"])
F("Kitchen has only two induction zones, so one-pot meals work best", FACT, 0.4,
  q=["can I make a three-course dinner on my hob?"], kind="i")
F("Owns a cast-iron pan and a large Dutch oven", FACT, 0.3, ("2025-10", "2026-01"))
F("Bought a cast-iron pan instead of another non-stick one", DEC, 0.3, ("2025-09", "2025-10"))
F("Struggles to get enough protein on a vegetarian diet", DIFF, 0.5, ("2025-10", "2026-02"),
  kind="i", q=["how can I get more protein without meat?"])
F("Wants to cook more with seasonal Swedish vegetables", GOAL, 0.4, ("2025-09", "2025-12"),
  q=["what vegetables are in season now?"], kind="i")
F("Wants to get better at knife skills", GOAL, 0.35, q=["how do I dice an onion faster?"])
C(PREF, 0.4, ("Doesn't bake bread; finds it too fiddly", ("2025-10", "2025-11")),
  ("Bakes a sourdough loaf most weekends now", ("2026-03", "2026-04")),
  q=["what should I bake this weekend?"])
F("Her sourdough keeps coming out too dense", DIFF, 0.3, ("2026-04", "2026-05"),
  q=["my bread is a brick again, what am I doing wrong?"])
F("Keeps her sourdough starter in the fridge between bakes", FACT, 0.2, ("2026-04", "2026-06"), kind="i")
F("Keeps weekdays vegetarian and eats fish at weekends", DEC, 0.5, ("2026-05", "2026-06"),
  q=["it's Wednesday, what's for dinner?"])
F("Grows basil, thyme and chives on the balcony", FACT, 0.25, ("2026-05", "2026-07"),
  q=["what herbs do I have at home?"])
F("Likes oat milk in her coffee", PREF, 0.3, ("2026-08-20", "2026-10"), kind="i")
C(PREF, 0.5, ("Prefers tea in the morning", ("2025-10", "2025-10")),
  ("Switched to coffee in the morning", ("2026-08", "2026-08")),
  q=["what do I usually drink in the morning?"])
S("Oven is broken; waiting for a repair", FACT, 0.3, ("2026-02-02", "2026-02-08"),
  q=["can I roast vegetables tonight?"])
S("Oven was repaired", FACT, 0.25, ("2026-02-16", "2026-02-22"))
T("Found a good falafel place near Medborgarplatsen", OTH, 0.15, ("2025-10", "2025-11"))
T("Tried surströmming at a party and hated it", OTH, 0.2, ("2026-08-20", "2026-08-31"))
T("Thinks Swedish crispbread is underrated", OTH, 0.1, ("2025-09", "2025-11"))
T("Her cat stole a cinnamon bun off the table", OTH, 0.08, ("2025-10", "2025-10"))
F("Has a cat called Smilla", FACT, 0.45, ("2025-09", "2025-10"), q=["what's my cat called again?"])
F("Thinks Swedish supermarket tomatoes are tasteless in winter", OTH, 0.15, ("2025-12", "2026-02"),
  kind="i")
F("Wants to host a curry night for her Swedish class", GOAL, 0.35, ("2026-10", "2026-11"),
  q=["how much dal do I need for twelve people?"])

# --- running ---------------------------------------------------------------
D(FACT, 0.6, ["Runs four times a week",
              "Usual week: two easy runs, one interval session and one long run",
              "Running schedule is four sessions a week"], kinds="eie",
  q=["plan my training week", "how many times a week am I running again?"])
D(PREF, 0.5, ["Dislikes running on treadmills",
              "Would rather run outside in the cold than on a treadmill",
              "Finds treadmill running boring"], kinds="eii",
  q=["it's icy out, should I just do the treadmill today?"])
D(GOAL, 0.85, ["Goal: run 10 km under 55 minutes at Midnattsloppet in August 2026",
               "Wants a sub-55 10K at Midnattsloppet",
               "Target for Midnattsloppet 2026 is under 55 minutes"], kinds="eei",
  when=("2025-10", "2026-07"), q=["what's my 10k goal?", "what pace do I need for my 10k target?"])
C(PREF, 0.45, ("Prefers to run early in the morning", ("2025-09", "2025-10")),
  ("Now runs in the evening; winter mornings are too dark", ("2025-12", "2025-12")),
  q=["what time should I run tomorrow?"])
F("Has trouble getting out the door when it's dark and cold", DIFF, 0.45, ("2025-11", "2026-01"),
  kind="i", q=["I really don't feel like running today"])
C(FACT, 0.45, ("5 km personal best is 26:30", ("2025-10", "2025-10")),
  ("New 5 km personal best: 25:05 at a parkrun", ("2026-06", "2026-06")),
  q=["what's my 5k PB?"], qo=["is 26 minutes a good 5k time for me?"])
F("Owns a Garmin watch and logs her runs on Strava", FACT, 0.35, kind="i")
F("Doesn't run with music; listens to podcasts instead", PREF, 0.3,
  q=["any podcast recommendations for my long run?"])
F("Gets side stitches during interval sessions", DIFF, 0.3, ("2025-10", "2026-03"),
  q=["how do I stop getting a stitch during intervals?"])
F("Has recurring pain on the outside of the right knee (IT band)", DIFF, 0.7, ("2026-01", "2026-01"),
  q=["my knee hurts again after the long run"])
F("Decided to see a physiotherapist about the knee", DEC, 0.6, ("2026-01-20", "2026-02-05"))
F("Physio said: reduce mileage for three weeks and do hip strength work", FACT, 0.65,
  ("2026-02-06", "2026-02-20"), q=["what did the physio tell me to do?"])
F("Aims to do strength training twice a week to protect her knees", GOAL, 0.6, ("2026-02", "2026-03"),
  q=["give me a short strength routine"])
F("Training for the Stockholm half marathon in September 2026", GOAL, 0.85, ("2026-01", "2026-02"),
  q=["when is the half marathon?", "how many weeks until my half?"])
F("Decided to follow a 16-week half marathon plan starting in late May", DEC, 0.65,
  ("2026-04", "2026-05"), q=["remind me how long my half marathon plan is"])
F("Chose Asics Novablast as her new daily trainers", DEC, 0.3, ("2026-03", "2026-04"),
  q=["which running shoes did I end up buying?"])
S("Running shoes are worn out; needs a new pair", FACT, 0.3, ("2026-03", "2026-03"))
F("Weekly mileage is around 35 km", FACT, 0.4, ("2026-06", "2026-07"), kind="i")
F("Long runs are usually on Sunday mornings around Årstaviken", FACT, 0.35, ("2026-05", "2026-07"), kind="i")
S("Tapering this week before Midnattsloppet", FACT, 0.3, ("2026-08-10", "2026-08-14"))
F("Finished Midnattsloppet in 54:12 and hit her sub-55 goal", FACT, 0.7, ("2026-08-16", "2026-08-24"),
  q=["how did Midnattsloppet go?"])
F("Finished the Stockholm half marathon in 1:58:40", FACT, 0.7, ("2026-09-13", "2026-09-20"),
  q=["what was my half marathon time?"])
F("Considering running the Stockholm Marathon in 2027", GOAL, 0.6, ("2026-10", "2026-10"),
  q=["should I do a full marathon next year?"])
F("Prefers gentle encouragement over strict training plans", PREF, 0.5, kind="i")
S("Knee is sore today after the long run", DIFF, 0.25, ("2026-01-11", "2026-01-18"))
T("Asked once for a playlist for long runs", OTH, 0.12, ("2025-10", "2025-11"))
T("Saw a moose on a trail run outside the city", OTH, 0.12, ("2025-10", "2026-06"))
F("Runs with a club from the neighbourhood on Thursdays", FACT, 0.4, ("2026-06", "2026-08"))

# --- Swedish ---------------------------------------------------------------
D(DIFF, 0.5, ["Tycker att sj-ljudet är svårt att uttala",
              "Struggles with the Swedish sj-sound",
              "Finds the 'sj' sound really hard to pronounce"], kinds="eei",
  when=("2025-09", "2026-06"), q=["vad är det jag har svårt med i uttalet?"])
D(DIFF, 0.5, ["Gets 'en' and 'ett' mixed up all the time",
              "Blandar ihop en- och ett-ord",
              "Often uses the wrong gender (en/ett) for Swedish nouns"], kinds="iei",
  q=["is it en hus or ett hus?"])
D(PREF, 0.6, ["Wants replies in Swedish on Fridays, for practice",
              "Vill att vi pratar svenska på fredagar",
              "Friday is Swedish practice day in the chat"], kinds="eei",
  when=("2026-01", "2026-11"), q=[("hej! ska vi prata svenska idag?", 3)])
C(FACT, 0.6, ("Går på SFI-kurs på kvällarna", ("2025-09", "2025-09")),
  ("Har klarat SFI D och läser nu svenska som andraspråk, grundläggande nivå", ("2026-06", "2026-06")),
  q=["which Swedish course am I doing now?"], qo=["when is my SFI class this week?"])
C(DIFF, 0.5, ("Tycker att det är jättesvårt att prata svenska", ("2025-10", "2025-11")),
  ("Känner sig mycket säkrare när hon pratar svenska nu", ("2026-09", "2026-10")), kind="ei",
  q=["hur går det med svenskan, tycker du?"])
C(DEC, 0.4, ("Uses Duolingo every day for Swedish", ("2025-09", "2025-10")),
  ("Stopped using Duolingo; prefers reading and a conversation group", ("2026-02", "2026-02")),
  q=["should I start Duolingo again?"])
F("Signed up for a weekly språkcafé at the local library", DEC, 0.5, ("2026-02", "2026-03"),
  q=["when is my language café?"])
F("Wants to reach B1 level in Swedish by summer 2026", GOAL, 0.75, ("2025-10", "2025-10"),
  q=["what's my Swedish goal for the summer?"])
F("Vill kunna prata svenska med svärföräldrarna till jul", GOAL, 0.6, ("2025-10", "2025-11"))
F("Pratade bara svenska med svärföräldrarna i julas", FACT, 0.45, ("2025-12-27", "2026-01-06"))
F("Wants to read a Swedish novel without a dictionary", GOAL, 0.55, ("2025-11", "2026-01"))
F("Läser 'Mördare utan ansikte' av Henning Mankell på svenska", FACT, 0.4, ("2026-04", "2026-04"),
  q=["which book am I reading at the moment?"])
F("Tyckte att boken var spännande men svår, med många okända ord", PREF, 0.4,
  ("2026-05", "2026-05"), q=["vad tyckte jag om boken?"])
F("Decided to read one Swedish children's book a month", DEC, 0.35, ("2025-11", "2025-12"))
F("Lyssnar på Klartext i Sveriges Radio för att öva hörförståelse", PREF, 0.35,
  q=["tips för att förstå radio på svenska?"])
F("Läser lättlästa nyheter i 8 Sidor varje morgon", FACT, 0.3, ("2025-10", "2026-03"))
F("Finds it hard to follow Swedish when people speak fast", DIFF, 0.5,
  q=["how do I keep up when Swedes talk fast?"], kind="i")
F("Har svårt med prepositioner, särskilt 'på' och 'i'", DIFF, 0.4, ("2026-02", "2026-06"),
  q=["heter det 'på jobbet' eller 'i jobbet'?"], kind="i")
F("Vill öva på att beställa mat på svenska", GOAL, 0.35, ("2025-11", "2026-01"))
F("Lär sig ord för köksredskap just nu", FACT, 0.25, ("2026-03", "2026-04"), kind="i")
F("Wants to apply for Swedish citizenship eventually", GOAL, 0.5, ("2026-06", "2026-09"))
T("Favourite Swedish word is 'lagom'", OTH, 0.15, ("2025-10", "2025-12"))
T("Watched Bron with Swedish subtitles", OTH, 0.18, ("2025-11", "2025-12"))
F("Firade midsommar med sambons familj", OTH, 0.25, ("2026-06-19", "2026-06-28"))
F("Tycker att 'fika' är det bästa med svensk arbetskultur", PREF, 0.2, kind="i")

# --- life & work -------------------------------------------------------------
C(PROF, 0.7, ("Lives in a rented one-bedroom flat in Södermalm", ("2025-09", "2025-10")),
  ("Moved to a two-bedroom flat in Hägersten", ("2026-05", "2026-05")),
  q=["which part of Stockholm do I live in now?", "find me a running route near home"])
S("Has no internet at the new flat until Friday", DIFF, 0.2, ("2026-05-18", "2026-05-28"))
F("Works mostly with healthcare clients", PROF, 0.4, ("2025-09", "2025-11"))
F("Has calls with London in the afternoons, so runs before 15:00 or after 18:00", FACT, 0.45,
  ("2025-10", "2026-01"), kind="i")
F("Her partner's family lives in Umeå", FACT, 0.4, ("2025-10", "2025-12"),
  q=["how long is the train to my in-laws?"], kind="i")
F("Sleeps badly in the week before big deadlines", DIFF, 0.35, ("2025-11", "2026-04"), kind="i")
S("Has a cold this week and is skipping runs", DIFF, 0.3, ("2025-11", "2025-11"))
S("Is visiting her parents in Manchester over Christmas", FACT, 0.3, ("2025-12-15", "2025-12-20"),
  q=["what should I pack for Manchester?"])
S("Has a big client presentation on Thursday", FACT, 0.3, ("2026-03", "2026-03"))
S("Is on vacation in Greece this week", FACT, 0.3, ("2026-07-06", "2026-07-20"),
  q=["any good vegetarian Greek dishes to try?"])
F("Wants to get a driving licence in Sweden", GOAL, 0.35, ("2026-09", "2026-11"))
T("Mentioned the first snow of the winter fell in Stockholm", OTH, 0.1, ("2025-11", "2025-11"))
T("Complained that IKEA meatballs are overrated", OTH, 0.1, ("2025-09", "2025-10"))
T("Bought a new winter coat on sale", OTH, 0.08, ("2025-11", "2025-12"))
F("Finds Swedish winters long and gets low energy in January", DIFF, 0.4, ("2026-01", "2026-01"),
  kind="i")
F("Uses a daylight lamp in the mornings during winter", FACT, 0.25, ("2026-01", "2026-02"))
F("Is thinking about getting a second cat", OTH, 0.2, ("2026-10", "2026-11"), kind="i")
F("Asked to stop suggesting recipes with tofu skins; she couldn't find them in shops", PREF, 0.3,
  ("2025-11", "2026-02"))

OFF("what's the capital of Australia?",
    "how far away is the moon?",
    "tell me a joke about penguins",
    "what year did the Berlin Wall fall?",
    "vad betyder 'ordspråk'?",
    "how do airplanes stay in the air?",
    "write a haiku about autumn leaves",
    "who painted the Mona Lisa?",
    "what's the difference between a virus and a bacterium?",
    "vilket är Sveriges längsta flod?",
    "how many bones are in the human body?",
    "how tall is Mount Everest?",
    "what's a good name for a fantasy novel villain?",
    "why is the sky blue?",
    "how does compound interest work?",
    "recommend a board game for four people")


# ==========================================================================
# bob - backend engineer in Paris, moving to Berlin, side project
# ==========================================================================
namespace("bob", "2025-09-10")

OB("Name is Bob", PROF, 0.95)
OB("Backend software engineer, mostly Go and Python", PROF, 0.85,
   q=["what languages do I mostly work in?"])
OB("Canadian; has lived in Paris for four years", PROF, 0.7)
OB("Speaks English and fluent French", PROF, 0.6)
OB("Planning to move to Berlin in 2026", GOAL, 0.9,
   q=["what's left on my moving checklist?", "I feel like I'm forgetting something for the move"])
OB("Wants help keeping track of the move and his side project", GOAL, 0.6)
OB("Prefers concise technical answers with code examples", PREF, 0.65,
   q=["explain context cancellation in Go", "how do I write a table-driven test?"])
C(PROF, 0.85, ("Lives in Paris", "onboarding"),
  ("Moved to Berlin", ("2026-05-16", "2026-05-21")),
  q=["what's the weather like where I live this week?", "recommend a weekend trip from where I live"],
  qo=["any good running clubs near me?"])
C(PROF, 0.8, ("Works at a payments fintech in Paris", "onboarding"),
  ("Started as a senior backend engineer at a logistics company in Berlin", ("2026-06-01", "2026-06-08")),
  q=["what's my job title now?", "help me update my LinkedIn headline"])

# --- the move ----------------------------------------------------------------
C(GOAL, 0.75, ("Plans to move to Berlin in March 2026", ("2025-10", "2025-10")),
  ("Pushed the move to May 2026 because the Blue Card appointment was delayed", ("2026-01", "2026-01")),
  q=["when am I moving again?"], qo=["how many weeks until I move?"])
F("Notice period at the Paris job is three months", FACT, 0.5, ("2025-10", "2025-11"),
  q=["what's my notice period?"])
F("Wants to save a three-month emergency fund before moving", GOAL, 0.6, ("2025-10", "2025-11"),
  q=["how much should I have saved before the move?"])
F("Accepted the offer from the Berlin logistics company; starts 1 June 2026", DEC, 0.85,
  ("2025-12", "2025-12"), q=["when does the new job start?"])
F("Blue Card appointment at the immigration office keeps getting delayed", DIFF, 0.6,
  ("2025-12-15", "2026-01-10"))
F("Submitted the EU Blue Card application", FACT, 0.6, ("2026-01-15", "2026-01-31"))
F("Received his EU Blue Card", FACT, 0.7, ("2026-04", "2026-04"), q=["did I get the Blue Card yet?"])
F("Handed in his resignation; last day at the Paris job is end of May", FACT, 0.6,
  ("2026-02-20", "2026-02-28"))
F("Will rent a furnished flat for the first three months in Berlin", DEC, 0.6, ("2026-03", "2026-03"),
  q=["what's the plan for housing when I arrive?"])
D(PREF, 0.6, ["Wants a flat within cycling distance of the new office",
              "Looking for an apartment he can bike to work from",
              "A short bike commute is a must for the Berlin apartment"],
  when=("2026-01", "2026-07"), kinds="eie", q=["is Spandau a good area for me?"])
F("Finding a flat in Berlin is very hard: many viewings, no offers yet", DIFF, 0.6,
  ("2026-03", "2026-06"), q=["any tips for my apartment search?"])
F("Has no German credit history, so landlords ask about SCHUFA", DIFF, 0.55, ("2026-03", "2026-04"),
  q=["what is SCHUFA and how do I get one?"])
F("Decided to ship his things with a small moving company rather than rent a van", DEC, 0.4,
  ("2026-04", "2026-04"))
S("All his stuff is in boxes; waiting for the movers", FACT, 0.2, ("2026-05-10", "2026-05-15"))
T("Sold his desk and sofa before the move", OTH, 0.15, ("2026-04-20", "2026-05-10"))
F("Temporary furnished flat is in Friedrichshain until the end of August", FACT, 0.45,
  ("2026-05-22", "2026-06-05"), q=["until when do I have the temporary flat?"])
F("Registered his Berlin address (Anmeldung done)", FACT, 0.55, ("2026-05-25", "2026-06-15"),
  q=["do I still need to do the Anmeldung?"])
F("Opened a German bank account online", FACT, 0.4, ("2026-05-20", "2026-06-10"))
F("Keeps his French bank account until the end of 2026", DEC, 0.4, ("2026-05", "2026-06"),
  q=["do I still have my French bank account?"])
S("Internet at the temporary flat is down", DIFF, 0.2, ("2026-06", "2026-06"))
F("Signed a lease for an unfurnished flat in Neukölln from September", FACT, 0.65,
  ("2026-08", "2026-08"), q=["when do I get the keys to the new flat?"])
F("Moved into the Neukölln flat", FACT, 0.6, ("2026-09-01", "2026-09-10"),
  q=["what furniture do I still need to buy?"])
D(DIFF, 0.55, ["German bureaucracy stresses him out",
               "Finds German paperwork (Anmeldung, tax ID, insurance) overwhelming",
               "Gets anxious before official appointments held in German"],
  when=("2025-12", "2026-07"), kinds="eii", q=["I have another appointment at the Bürgeramt, help"])
C(DEC, 0.4, ("Wants to buy a car once in Berlin", ("2026-02", "2026-02")),
  ("Decided not to buy a car: his bike and public transport are enough", ("2026-06", "2026-07")),
  q=["should I get a car this winter?"])
F("Misses his friends in Paris", DIFF, 0.4, ("2026-07", "2026-08"), kind="i",
  q=["I feel kind of lonely here"])
F("Joined a board-game meetup to meet people in Berlin", DEC, 0.35, ("2026-08", "2026-09"))
F("Thinks the Berlin salary works out similar to Paris after tax", OTH, 0.3, ("2025-12", "2026-01"),
  kind="i")
F("Plans to visit Paris for a friend's wedding in October", GOAL, 0.4, ("2026-07", "2026-08"),
  q=["how should I get to Paris for the wedding?"])
S("Is in Paris this weekend for a friend's wedding", FACT, 0.25, ("2026-10-08", "2026-10-14"))

# --- German ------------------------------------------------------------------
D(FACT, 0.55, ["Learning German; currently around A2",
               "German level is roughly A2",
               "Takes German classes twice a week at A2 level"],
  when=("2026-02", "2026-09"), kinds="eie", q=["what German level am I at?"])
F("Wants to reach B1 German by the end of 2026", GOAL, 0.65, ("2026-02", "2026-02"),
  q=["how can I get to B1 faster?"])
F("Struggles with German word order in subordinate clauses", DIFF, 0.4, ("2026-04", "2026-08"),
  q=["why does the verb go at the end after 'weil'?"], kind="i")
F("Mixes up German articles constantly, especially der and die", DIFF, 0.35, ("2026-03", "2026-09"), kind="i")
F("Watches German series with German subtitles to practise", PREF, 0.3, ("2026-05", "2026-09"), kind="i")
F("Passed the A2 exam", FACT, 0.5, ("2026-10", "2026-10"))

# --- side project ------------------------------------------------------------
D(PROF, 0.7, ["Side project: an app for splitting shared expenses with flatmates",
              "Building a shared-expenses app as a side project",
              "His side project tracks who owes what in a shared flat"],
  q=["what was my side project about again? need to pitch it"])
C(DEC, 0.7, ("Decided to use SQLite for the side project", ("2025-10", "2025-10")),
  ("Decided to use PostgreSQL for the side project", ("2026-01", "2026-01")),
  q=[("remind me what we decided about the database", 2)],
  qo=["is SQLite ok for a multi-user app?"])
F("Migrating from SQLite to Postgres broke the date handling", DIFF, 0.35, ("2026-01", "2026-02"),
  q=["what was the problem with the dates after the migration?"])
C(DEC, 0.45, ("Frontend of the side project will be React", ("2025-11", "2025-11")),
  ("Rewrote the side project frontend in Svelte", ("2026-03", "2026-03")),
  q=["which frontend framework did I pick for the app?"])
F("Decided to build the API first and the mobile app later", DEC, 0.45, ("2025-10", "2025-11"))
F("Deploys the side project on a single small VPS with Docker Compose", DEC, 0.5,
  ("2026-02", "2026-02"), q=["how do I deploy the app again?"])
F("Uses GitHub Actions for the side project's CI", DEC, 0.3, ("2026-02", "2026-03"))
F("The app will be free, with optional donations", DEC, 0.4, ("2026-04", "2026-05"),
  q=["should I add a paid tier?"])
F("Integration tests in the side project are flaky when run in parallel", DIFF, 0.35,
  ("2026-02", "2026-03"), q=["my tests fail randomly in CI again"])
F("Wants to launch the side project publicly by autumn 2026", GOAL, 0.6, ("2026-02", "2026-03"))
F("Launched a public beta of the expenses app", FACT, 0.65, ("2026-10", "2026-10"))
F("The beta has about 40 users, mostly friends of friends", FACT, 0.45, ("2026-10-20", "2026-11-15"),
  q=["how many users does the beta have?"])
F("Beta users keep asking for multi-currency support", DIFF, 0.45, ("2026-11", "2026-11"),
  q=["what should I build next for the app?"])
D(PREF, 0.6, ["Prefers Go for backend services",
              "Go is his default language for new services",
              "Would rather write Go than Java"], kinds="eii",
  q=["which language should I use for a small webhook service?"])
D(PREF, 0.5, ["Dislikes ORMs; prefers writing SQL by hand",
              "Likes plain SQL with a thin query builder, no heavy ORM",
              "Thinks ORMs hide too much of what the database does"], kinds="eii",
  q=["should I use GORM for the new service?"])
F("Prefers Postgres-backed job queues over Redis", PREF, 0.3, ("2026-02", "2026-05"), kind="i")
F("Wants to contribute to an open-source Go project", GOAL, 0.35, ("2025-11", "2026-02"))
C(PREF, 0.3, ("Uses VS Code", ("2025-09", "2025-10")),
  ("Switched to Neovim", ("2026-03", "2026-03")),
  q=["how do I set up a Go debugger in my editor?"])
D(PREF, 0.2, ["Prefers dark mode everywhere", "Always asks for dark themes"], kinds="ei",
  when=("2025-09", "2026-03"))

# --- work ----------------------------------------------------------------------
F("Wants to get better at system design interviews", GOAL, 0.55, ("2025-10", "2025-11"),
  q=["give me a system design question to practise"])
F("Team at the new job uses Kotlin and Go", FACT, 0.4, ("2026-06", "2026-06"))
F("On-call rotation at the new job: one week in six", FACT, 0.4, ("2026-06", "2026-07"),
  q=["when's my next on-call week?"])
S("Is on call this week", FACT, 0.2, ("2025-11", "2025-11"))
S("Is at a tech conference in Lisbon this week", FACT, 0.25, ("2025-11-10", "2025-11-14"))
F("Prefers remote-friendly teams with at most two office days", PREF, 0.5, ("2025-10", "2025-12"), kind="i")
F("Hard to focus at work because of the move; feels scattered", DIFF, 0.4, ("2026-04", "2026-05"),
  kind="i")
C(PREF, 0.35, ("Does his best work late at night", ("2025-11", "2025-11")),
  ("Now does his deep work in the morning", ("2026-07", "2026-07")), kind="ei",
  q=["when should I block focus time this week?"])
F("Finds code review at the new job slower than in Paris", DIFF, 0.3, ("2026-07", "2026-09"),
  kind="i")
F("Leads the migration of the route-planning service to Go", FACT, 0.55, ("2026-09", "2026-10"),
  q=["help me write the migration plan for the routing service"])

# --- personal ----------------------------------------------------------------
D(PROF, 0.85, ["Is lactose intolerant",
               "Can't have regular milk or cream: lactose intolerant",
               "Avoid dairy-heavy suggestions; he's lactose intolerant"], kinds="eei",
  q=["suggest a dinner I can make in 20 minutes", "can I eat a flat white?"])
D(FACT, 0.45, ["Goes bouldering twice a week",
               "Bouldering is his main sport, about two sessions a week",
               "Climbs at a bouldering gym on Tuesdays and Thursdays"], kinds="iee",
  q=["can you fit a workout into my week?"])
F("Aims to climb V5 boulders by next summer", GOAL, 0.3, ("2025-11", "2026-01"))
F("Found a bouldering gym near the new flat", FACT, 0.3, ("2026-09", "2026-10"))
C(PREF, 0.35, ("Drinks about three espressos a day", ("2025-10", "2025-10")),
  ("Cut down to one coffee a day, before noon", ("2026-04", "2026-04")),
  q=["I'm so tired, should I have another coffee?"])
F("Likes Vietnamese food, especially pho", PREF, 0.35, q=["where should we go for dinner?"], kind="i")
F("Prefers trains over planes for trips under six hours", PREF, 0.45,
  q=["best way to get to Amsterdam?"])
F("Reads sci-fi; recently a lot of Ursula K. Le Guin", PREF, 0.3,
  q=["recommend me a book for the train"], kind="i")
F("Birthday is in February", PROF, 0.4, ("2025-12", "2026-01"))
S("Has a cold and is working from bed", DIFF, 0.2, ("2026-01", "2026-01"))
T("Bought a mechanical keyboard with brown switches", OTH, 0.15, ("2025-10", "2025-10"))
T("Asked for a pun about Kubernetes", OTH, 0.08, ("2025-11", "2025-11"))
T("Watched the Champions League final with friends", OTH, 0.1, ("2026-05-30", "2026-06-02"))
T("Says Berlin croissants can't compete with Paris ones", OTH, 0.12, ("2026-06", "2026-06"))
T("Went to watch the Berlin Marathon", OTH, 0.12, ("2026-09-20", "2026-09-30"))
F("Finds cash-only places annoying", PREF, 0.2, ("2026-06", "2026-07"), kind="i")
F("Wants to visit his family in Toronto at Christmas 2026", GOAL, 0.5, ("2026-09", "2026-10"),
  q=["when should I book flights home for Christmas?"])
F("Sister is expecting a baby in December", FACT, 0.45, ("2026-08", "2026-09"))

OFF("what's the tallest building in the world?",
    "explain the offside rule in football",
    "tell me a fun fact about octopuses",
    "how many time zones does Russia have?",
    "what is the boiling point of water at altitude?",
    "who won the 2018 World Cup?",
    "wie spät ist es in Tokio?",
    "write a limerick about a cat",
    "what's the plural of 'octopus'?",
    "how do vaccines work?",
    "what's the population of Canada?",
    "summarise the plot of Hamlet",
    "what's the speed of sound?",
    "how do I remove a red wine stain?",
    "what does 'carpe diem' mean?",
    "is a tomato a fruit?")


# ==========================================================================
# chen - CS undergraduate in Hangzhou, preparing IELTS and master's
#        applications in Europe (most memories in Chinese)
# ==========================================================================
namespace("chen", "2025-10-08")

OB("名字是陈，大家叫 Chen", PROF, 0.95, q=["你还记得我叫什么吗？"])
OB("杭州一所大学计算机专业的大二学生", PROF, 0.85)
OB("老家在成都", PROF, 0.6)
OB("Wants to do a master's degree in Europe after graduating", GOAL, 0.85,
   q=["我出国读研的计划是什么来着？"])
OB("希望用中文回答，专业术语可以保留英文", PREF, 0.7,
   q=["解释一下什么是 hash table", "什么是 TCP 三次握手？用我习惯的方式讲"])
C(PROF, 0.55, ("住在学校宿舍，四人间", "onboarding"),
  ("搬到校外和两个同学合租了", ("2026-09-01", "2026-09-15")),
  q=["我现在住哪儿来着？"], qo=["宿舍太吵了，怎么才能睡好？"])
C(PROF, 0.5, ("Is a second-year student", "onboarding"),
  ("现在大三了", ("2026-09-05", "2026-09-20")),
  q=["这学期我有哪些专业课要注意？"])

# --- IELTS & English ---------------------------------------------------------
C(GOAL, 0.7, ("雅思目标是总分 6.5", ("2025-10", "2025-10")),
  ("雅思目标提高到总分 7.0", ("2026-04-05", "2026-04-20")),
  q=["我的雅思目标是多少分？"], qo=["6.5 分够申请吗？"])
D(DIFF, 0.7, ["英语口语是最大的短板",
              "雅思口语一直卡在 5.5",
              "Speaking is the weakest IELTS skill"],
  when=("2025-10", "2026-06"), kinds="eei",
  q=["我的口语怎么提高？", "can we practise IELTS speaking part 2?"])
D(FACT, 0.45, ["用 Anki 背单词",
               "每天用 Anki 复习雅思词汇",
               "Uses Anki flashcards for vocabulary every day"], kinds="eie",
  q=["今天背什么单词好？"])
F("报名了 2026 年 3 月 14 日的雅思考试", DEC, 0.65, ("2025-12", "2026-01"),
  q=[("我上次说的考试是什么时候？", 2), "离雅思还有几天？"])
F("雅思写作 Task 2 总是写不完", DIFF, 0.5, ("2025-12", "2026-03"),
  q=["我写作老是写不完怎么办？"])
F("听力里的数字和拼写经常出错", DIFF, 0.4, ("2025-11", "2026-02"),
  q=["听力填空总丢分，有什么办法？"], kind="i")
S("明天就是雅思考试了，有点紧张", DIFF, 0.3, ("2026-03-13", "2026-03-13"))
F("第一次雅思总分 6.0：听力 6.5，阅读 7.0，写作 5.5，口语 5.5", FACT, 0.7,
  ("2026-03-27", "2026-04-03"), q=["我雅思第一次考了多少分？"])
F("报名了 7 月 11 日的第二次雅思", DEC, 0.6, ("2026-04-10", "2026-04-30"),
  q=["第二次雅思是哪天？"])
F("决定每天早上先练 20 分钟口语", DEC, 0.4, ("2026-04", "2026-04"))
F("Practises speaking by shadowing TED talks", PREF, 0.35, ("2026-04", "2026-06"),
  q=["推荐一些适合跟读的材料"])
F("第二次雅思总分 7.0，口语 6.5，终于达标了", FACT, 0.8, ("2026-07-24", "2026-08-02"),
  q=["我雅思最后考了多少？", "do I need to take IELTS again?"])
F("想练好口语，能和外国同学自然地聊天", GOAL, 0.55, ("2025-11", "2026-01"))
F("和一个荷兰的语伴每周视频聊天一次", FACT, 0.35, ("2026-05", "2026-09"))

# --- studies -----------------------------------------------------------------
C(PREF, 0.5, ("不喜欢数学，觉得高数很枯燥", ("2025-10", "2025-10")),
  ("现在觉得数学挺有意思的，尤其是线性代数", ("2026-05", "2026-05")),
  q=["我还讨厌数学吗？哈哈"], qo=["高数太无聊了，怎么坚持学下去？"])
D(PREF, 0.6, ["喜欢有例子的解释，不喜欢纯理论",
              "讲概念的时候最好先举一个具体例子",
              "Prefers explanations that start with a concrete example"], kinds="eii",
  q=["can you explain eigenvalues?", "给我讲讲动态规划"])
D(DIFF, 0.5, ["容易拖延，作业总是最后一天才做",
              "有拖延症，deadline 前一晚才开始写",
              "Tends to procrastinate until the night before a deadline"], kinds="eii",
  q=["帮我安排一下这周的复习计划", "我又不想写作业了"])
D(DIFF, 0.4, ["早上起不来，最怕早八的课",
              "不喜欢早上八点的课",
              "Not a morning person; struggles with 8 a.m. classes"], kinds="eei",
  q=["选课的时候要注意什么？"])
F("Struggles with recursion in the data structures course", DIFF, 0.45, ("2025-10", "2025-11"),
  q=["递归到底怎么想？"])
F("选了数据库课程设计的题目：图书馆座位预约系统", DEC, 0.4, ("2025-11", "2025-11"),
  q=["课程设计我选的什么题目？"])
F("决定用 Python 和 Flask 写课程设计的后端", DEC, 0.35, ("2025-11", "2025-12"),
  q=["Flask 怎么连接 MySQL？"])
F("课程设计拿了优秀", FACT, 0.35, ("2026-01", "2026-01"))
F("数据结构期末考了 88 分", FACT, 0.4, ("2026-01-20", "2026-02-05"))
F("目标是大三结束前 GPA 达到 3.7", GOAL, 0.7, ("2025-11", "2025-11"),
  q=["我的 GPA 目标是多少？"])
F("上学期 GPA 3.5", FACT, 0.55, ("2026-02", "2026-02"), q=["what was my GPA last semester?"])
F("这学期 GPA 3.8，是目前最好的一次", FACT, 0.55, ("2026-07-10", "2026-07-31"))
F("决定选修机器学习导论", DEC, 0.45, ("2026-02", "2026-03"))
F("高数下学期期中考了 72 分", FACT, 0.3, ("2026-04", "2026-04"))
F("Finds it hard to write rigorous proofs in linear algebra", DIFF, 0.35, ("2026-03", "2026-06"), kind="i")
F("考试前很焦虑，会失眠", DIFF, 0.45, ("2025-12", "2026-06"), kind="i",
  q=["明天考试，睡不着怎么办"])
F("喜欢晚上学习，十点到十二点效率最高", PREF, 0.4, kind="i")
F("Prefers studying in the library rather than in the dorm", PREF, 0.35, ("2025-10", "2026-06"), kind="i")
F("喜欢看 B 站上的学习视频", PREF, 0.3, kind="i")
F("喜欢别人直接指出错误，不用太委婉", PREF, 0.55, q=["帮我看看这段英文有没有语法错误"])
F("在学校的机器人社团，负责视觉模块", PROF, 0.35, ("2025-10", "2026-03"))
F("Knows Python and Java well", PROF, 0.45, ("2025-10", "2025-12"), kind="i")
C(GOAL, 0.6, ("Wants to become a game developer", ("2025-10", "2025-11")),
  ("对机器学习更感兴趣了，想做 ML 方向", ("2026-04", "2026-05")),
  q=["我以后想做什么方向来着？"])
S("下周三高数期中考试", FACT, 0.3, ("2025-11-03", "2025-11-08"), q=["高数期中考什么范围？"])
S("正在期末考试周，压力很大", DIFF, 0.3, ("2026-01-05", "2026-01-15"))
F("Wants to publish a small open-source project on GitHub", GOAL, 0.35, ("2026-05", "2026-08"))
F("在 GitHub 上开源了课程设计的座位预约系统", FACT, 0.35, ("2026-09", "2026-10"))

# --- applications ------------------------------------------------------------
C(DEC, 0.75, ("Wants to apply to master's programmes in the UK", ("2025-10", "2025-11")),
  ("决定申请荷兰的学校，不考虑英国了（学费太贵）", ("2026-05", "2026-05")),
  q=["我要申请哪个国家的学校？"], qo=["英国一年制硕士值得读吗？"])
D(GOAL, 0.8, ["目标是代尔夫特理工（TU Delft）的计算机硕士",
              "Dream school is TU Delft for a CS master's",
              "最想去的学校是 TU Delft"],
  when=("2026-05", "2026-11"), kinds="eie", q=["我的目标学校是哪所？"])
F("父母支持出国读研，但希望尽量申请奖学金", FACT, 0.6, ("2025-11", "2026-01"),
  q=["有哪些奖学金可以申请？"])
F("计划 2026 年 10 月开始递交申请", GOAL, 0.7, ("2026-06", "2026-06"),
  q=["我打算什么时候开始申请？"])
F("决定不考 GRE，目标学校都不要求", DEC, 0.5, ("2026-06", "2026-06"),
  q=["要不要考 GRE 来着？"])
F("个人陈述不知道怎么开头", DIFF, 0.45, ("2026-09", "2026-10"),
  q=["my personal statement is stuck again", "帮我想个个人陈述的开头"])
F("决定请学长帮忙看个人陈述", DEC, 0.4, ("2026-09-20", "2026-10-10"))
F("决定申请三所学校：TU Delft、TU Eindhoven 和阿姆斯特丹大学", DEC, 0.75, ("2026-10", "2026-10"),
  q=["我一共申请几所学校？"])
F("已经提交了 TU Delft 的申请", FACT, 0.7, ("2026-11-01", "2026-11-20"),
  q=["我哪些学校已经交了？"])
F("需要两封推荐信，已经找了数据结构老师", FACT, 0.55, ("2026-09", "2026-10"),
  q=["推荐信的事情进展到哪了？"])

# --- internship ----------------------------------------------------------------
F("想在大二暑假找一份后端实习", GOAL, 0.7, ("2025-12", "2026-01"),
  q=["简历怎么写比较好？"])
S("这周在准备实习面试", FACT, 0.3, ("2026-04", "2026-04"), q=["面试前要复习哪些八股文？"])
F("拿到了杭州一家电商公司的后端实习 offer", DEC, 0.75, ("2026-05", "2026-05"))
F("暑假在电商公司实习，做订单系统的后端", FACT, 0.65, ("2026-07-01", "2026-07-12"),
  q=["我实习是做什么的？"])
F("Is learning Go during the internship", FACT, 0.45, ("2026-07", "2026-07"),
  q=["Go 的 goroutine 和线程有什么区别？"], kind="i")
F("实习时觉得代码评审很有压力", DIFF, 0.35, ("2026-07", "2026-08"), kind="i")
F("实习结束了，mentor 评价不错，说可以写推荐信", FACT, 0.55, ("2026-08-25", "2026-09-05"))

# --- everyday life -----------------------------------------------------------
D(PREF, 0.4, ["喜欢吃辣，尤其是火锅",
              "无辣不欢，最爱成都火锅",
              "Loves spicy food, hotpot above all"], kinds="eie",
  q=["今晚吃什么？想吃辣的", "推荐一家好吃的店"])
D(FACT, 0.3, ["每周三晚上打羽毛球",
              "周三晚上固定和室友打羽毛球"],
  when=("2025-10", "2026-06"), q=["周三晚上有空复习吗？"])
C(OTH, 0.35, ("Plays League of Legends almost every night", ("2025-10", "2025-11")),
  ("已经卸载了英雄联盟，想专心备考", ("2026-02", "2026-02")),
  q=["周末玩会儿游戏放松一下可以吗？"])
C(PREF, 0.25, ("每天都要喝一杯奶茶", ("2025-11", "2025-11")),
  ("为了健康戒掉奶茶了", ("2026-06", "2026-06")),
  q=["下午好困，喝点什么提神？"])
C(FACT, 0.25, ("用一台 Windows 笔记本写代码", ("2025-11", "2025-12")),
  ("换了一台 MacBook", ("2026-09", "2026-09")),
  q=["怎么在我的电脑上装 Python 环境？"])
F("和室友作息不一样，晚上睡不好", DIFF, 0.35, ("2025-11", "2026-05"),
  q=["怎么才能睡得好一点？"])
F("有一个上初中的妹妹", PROF, 0.3, ("2025-10", "2026-01"))
F("喜欢听周杰伦的歌", PREF, 0.15, kind="i")
S("这周感冒了，嗓子疼", DIFF, 0.25, ("2025-11", "2025-11"))
S("寒假回成都过年", FACT, 0.3, ("2026-01-25", "2026-02-10"))
S("国庆假期留在杭州没回家", FACT, 0.2, ("2026-09-28", "2026-10-03"))
S("Is at a hackathon this weekend", FACT, 0.25, ("2026-11-05", "2026-11-15"))
F("每周跑三次步，想提高体能", GOAL, 0.3, ("2026-03", "2026-05"))
F("觉得自己压力大的时候会暴饮暴食", DIFF, 0.3, ("2026-01", "2026-03"), kind="i")
T("说学校的桂花开了，很香", OTH, 0.1, ("2025-10", "2025-10"))
T("室友养了一只仓鼠", OTH, 0.08, ("2025-10", "2025-12"))
T("食堂的麻辣香锅很好吃", OTH, 0.1, ("2025-10", "2025-12"))
T("双十一买了一个机械键盘", OTH, 0.1, ("2025-11-11", "2025-11-14"))
T("最近在看《葬送的芙莉莲》", OTH, 0.12, ("2025-11", "2026-01"))
T("周末去西湖边骑车了", OTH, 0.1, ("2026-04", "2026-05"))
F("Gets motivated by study streaks and checklists", PREF, 0.4, ("2026-01", "2026-03"), kind="i")

OFF("光速是多少？",
    "what's the capital of Canada?",
    "给我讲个笑话",
    "珠穆朗玛峰有多高？",
    "who wrote Pride and Prejudice?",
    "唐朝是哪一年建立的？",
    "how many planets are in the solar system?",
    "为什么天空是蓝色的？",
    "翻译一下：The early bird catches the worm",
    "what is photosynthesis?",
    "长城有多长？",
    "世界上最大的沙漠是哪个？",
    "what's the time difference between London and Tokyo?",
    "写一首关于月亮的诗",
    "how many legs does a spider have?",
    "中国有多少个省？")


# ==========================================================================
# support-bot - memories of the customer-support agent of "Ledgerly",
#               an invoicing & bookkeeping app for small businesses
# ==========================================================================
namespace("support-bot", "2025-09-01")

# Knowledge imported from the old help centre on day one.
IM("Ledgerly is an invoicing and bookkeeping app for small businesses in the Nordics and the EU", PROF, 0.9,
   q=["what exactly does Ledgerly do?"])
IM("Plans: Starter, Team and Business, billed monthly or yearly", FACT, 0.8,
   q=["what plans do you have?", "is there a discount if I pay yearly?"])
IM("Customer data is hosted in the EU (Frankfurt)", FACT, 0.65, q=["where is my data stored?"])
IM("Deleted accounts can be restored for 30 days, then are gone for good", FACT, 0.6,
   q=["I deleted my account by mistake, can you get it back?"])
IM("The mobile app can scan receipts and attach them to expenses", FACT, 0.45,
   q=["can I take a photo of a receipt with the app?"])
IM("Payroll is only available for Swedish companies", FACT, 0.55,
   q=["can I run payroll for my Norwegian employees?"])
IM("Bank sync works with most Swedish banks through open banking", FACT, 0.6)
IM("Invoices can be numbered with a custom prefix per year", FACT, 0.35)
IM("Recurring invoices can be scheduled weekly, monthly or yearly", FACT, 0.45,
   q=["can I send the same invoice every month automatically?"])
IM("Reminders for unpaid invoices go out 3, 10 and 20 days after the due date", FACT, 0.4,
   q=["when does a customer get a payment reminder?"])
IM("Accountants can be invited as free read-only users on every plan", FACT, 0.5,
   q=["does my accountant need a paid seat?"])
C(FACT, 0.75, ("Starter plan allows 3 users", "import"),
  ("Starter plan allows 5 users since the March 2026 pricing update", ("2026-03-01", "2026-03-06")),
  q=[("how many users can I have on Starter?", 2)], qo=["we're 4 people, which plan do we need?"])
C(FACT, 0.65, ("CSV export is only on the Team and Business plans", "import"),
  ("CSV export is included in all plans since March 2026", ("2026-03-01", "2026-03-06")),
  q=["can I export my invoices to CSV on the Starter plan?"])
C(FACT, 0.75, ("Refunds are possible within 14 days of payment", "import"),
  ("Refund window extended to 30 days", ("2026-04-01", "2026-04-07")),
  q=["can I get a refund? I paid three weeks ago"], qo=["I paid 10 days ago and want a refund"])
C(FACT, 0.6, ("Support hours: weekdays 8:00-17:00 CET", "import"),
  ("Support is now also open Saturdays 10:00-14:00 CET", ("2026-09-01", "2026-09-07")),
  q=["are you open on Saturdays?"], qo=["when can I reach a human?"])
C(FACT, 0.5, ("Invoice languages: Swedish, English, German and Finnish", "import"),
  ("Invoices can now also be sent in Norwegian and Danish", ("2026-06", "2026-06")),
  q=["can I send invoices in Danish?"])
C(FACT, 0.65, ("Nordea bank sync is not supported yet", ("2025-09", "2025-10")),
  ("Nordea bank sync launched in June 2026", ("2026-06-08", "2026-06-20")),
  q=["does Ledgerly work with Nordea?"], qo=["my bank is Nordea, can I connect it?"])
C(DEC, 0.8, ("Two-factor authentication is optional", "import"),
  ("Two-factor authentication is mandatory for admin accounts since October 2026", ("2026-10-01", "2026-10-06")),
  q=["why am I being asked for a code when I log in?", "is 2FA required?"])

# --- team policies -------------------------------------------------------------
F("Escalate every payroll-related ticket to tier 2", DEC, 0.75, ("2025-09", "2025-09"),
  q=["a customer's payslips are wrong, what do I do?"])
F("Security questions go to the security team; never answer them directly", DEC, 0.8,
  ("2025-09", "2025-09"), q=["a customer asks if we had a data breach"])
F("Never promise release dates to customers; say a feature is 'planned'", DEC, 0.7,
  ("2025-10", "2025-10"), q=["when will multi-currency bank accounts ship?"])
F("Refunds above 500 EUR need a team lead's approval", DEC, 0.65, ("2025-10", "2025-10"),
  q=["a customer wants a 700 EUR refund, can I approve it?"])
F("Use the 'VAT-setup' macro for questions about VAT rates", DEC, 0.5, ("2025-11", "2025-11"))
F("Reply to Swedish-speaking customers in Swedish", DEC, 0.55, ("2025-09", "2025-10"),
  q=["kan ni svara på svenska?"])
C(DEC, 0.4, ("Tickets close automatically after 7 days without a reply", ("2025-09", "2025-10")),
  ("Auto-close changed to 14 days without a reply", ("2026-05", "2026-05")),
  q=["how long until an unanswered ticket closes?"])
C(GOAL, 0.7, ("Team goal: first response under 2 hours in business hours", ("2025-09", "2025-09")),
  ("First-response target tightened to 1 hour", ("2026-07", "2026-07")),
  q=["what's our first response target?"])
F("Goal: CSAT above 92% for Q1 2026", GOAL, 0.55, ("2026-01", "2026-01"),
  q=["how are we doing on satisfaction this quarter?"])
F("Goal: cut VAT tickets by rewriting the VAT help article", GOAL, 0.45, ("2025-12", "2025-12"))
F("Goal for H2 2026: answer 30% of simple questions through self-service", GOAL, 0.5,
  ("2026-07", "2026-07"))
F("Offer one free month to customers hit by the February bank sync outage", DEC, 0.6,
  ("2026-02-13", "2026-02-20"), q=["the outage cost me a day of work, any compensation?"])
F("Tag tickets about the new project tags feature with 'projects'", DEC, 0.3, ("2026-08", "2026-09"))
F("Point customers who ask for tax advice to an accountant; we don't give tax advice", DEC, 0.6,
  ("2025-10", "2025-11"), q=["should I register for VAT as a freelancer?"])

# --- product knowledge & known issues ----------------------------------------
D(DIFF, 0.6, ["Customers often can't find where to change the VAT rate",
              "VAT settings are hard to find; very common question",
              "Many tickets ask how to change the default VAT rate on an invoice",
              "Users keep missing the VAT option under Settings > Invoicing"],
  kinds="iiie", q=[("where do I change the VAT rate?", 3)])
D(FACT, 0.65, ["Bank sync disconnects every 90 days and customers must re-authorise",
               "Open banking consent expires after 90 days; customers need to reconnect",
               "Frequent ticket: bank feed stopped, usually because the 90-day consent expired"],
  kinds="eei", q=[("my bank feed stopped updating", 2)])
D(DIFF, 0.45, ["Customers mix up 'draft' and 'sent' invoices",
               "People think a draft invoice has already been sent to their client"],
  kinds="ii", q=["my client says they never got the invoice"])
D(DIFF, 0.45, ["Excel import fails when dates are in US format",
               "Spreadsheet imports break on MM/DD/YYYY dates",
               "Import errors are usually caused by US-style dates in the file"],
  when=("2025-10", "2026-11"), kinds="iei", q=["my import says 'invalid date' on every row"])
D(PREF, 0.4, ["Customers prefer short step-by-step answers with screenshots",
              "Answers with numbered steps get better ratings than long paragraphs"],
  kinds="ii", q=["how do I add a logo to my invoices?"])
C(DIFF, 0.6, ("Known bug: invoice PDF dates are off by one day in Safari", ("2025-11", "2025-11")),
  ("The Safari PDF date bug was fixed in version 4.2", ("2026-03-10", "2026-03-20")),
  q=["the dates on my PDF invoices are wrong in Safari"], qo=["why is my invoice dated yesterday?"])
S("Version 4.2 release slipped to next week", FACT, 0.2, ("2026-03-02", "2026-03-05"))
F("Version 4.2 added dark mode and the Safari fix", FACT, 0.45, ("2026-03-10", "2026-03-20"),
  q=["is there a dark mode?"])
F("Xero import is on the roadmap; no date promised", FACT, 0.4, ("2025-12", "2026-02"),
  q=["when will Xero import be available?"])
F("Project tags launched in version 5.0 for tracking income per project", FACT, 0.5,
  ("2026-08-25", "2026-09-05"), q=["can I see profit per project?"])
F("Invoices can't be edited after they are sent; use a credit note instead", FACT, 0.55,
  q=["I made a mistake on an invoice I already sent"])
F("Credit notes are linked to the original invoice automatically", FACT, 0.35, ("2025-10", "2026-04"))
F("Card payments on invoices go through a payment partner and cost 1.4% + 0.25 EUR", FACT, 0.5,
  ("2025-12", "2026-02"), q=["how much does it cost to let clients pay by card?"])
F("Multi-currency invoices are supported, but bank accounts are EUR, SEK, NOK and DKK only", FACT, 0.45,
  ("2026-02", "2026-04"))
F("SIE export for Swedish accountants is available on all plans", FACT, 0.4, ("2025-10", "2026-01"),
  q=["min revisor vill ha en SIE-fil, hur exporterar jag?"])
S("Ongoing outage: bank sync down for EU customers since this morning", DIFF, 0.3,
  ("2026-02-12", "2026-02-12"))
S("Email notifications are delayed this afternoon", DIFF, 0.15, ("2025-10", "2025-10"))
S("Black Friday: 30% off yearly plans this week", FACT, 0.25, ("2025-11-24", "2025-11-27"),
  q=["is there any discount right now?"])
S("Support is short-staffed this week because of the team offsite", FACT, 0.2, ("2026-05", "2026-05"))
S("Planned maintenance on Sunday night 02:00-04:00 CET", FACT, 0.2, ("2026-08", "2026-08"))
S("Holiday reduced support hours until 2 January", FACT, 0.2, ("2025-12-20", "2025-12-23"))
F("Swedish customers mostly ask about VAT and SIE files; German ones about GoBD", FACT, 0.35,
  ("2026-02", "2026-06"), kind="i")
F("Customers find the word 'ledger' confusing in the menu", DIFF, 0.25, ("2025-10", "2026-01"),
  kind="i")
F("Kunder som skriver på svenska blir nöjdare när vi svarar på svenska", PREF, 0.35,
  ("2025-11", "2026-02"), kind="i")
F("Många frågar hur man bokför en kreditfaktura", DIFF, 0.4, ("2026-01", "2026-05"),
  q=["hur bokför jag en kreditfaktura?"], kind="i")
T("A customer sent a photo of cinnamon buns to say thanks", OTH, 0.08, ("2025-10", "2025-10"))
T("Someone asked whether Ledgerly can do their taxes for them", OTH, 0.12, ("2025-11", "2026-01"))
T("A customer said the new logo looks 'friendlier'", OTH, 0.1, ("2026-01", "2026-01"))
T("A customer found Ledgerly through a podcast about freelancing", OTH, 0.12, ("2025-10", "2026-02"))
T("One customer asked if the app has a Christmas theme", OTH, 0.06, ("2025-12", "2025-12"))

# --- named customers (small businesses, fictional) ----------------------------
C(FACT, 0.5, ("Hallberg Bakery is a three-person bakery on the Team plan", ("2025-09", "2025-10")),
  ("Hallberg Bakery upgraded to Business to get payroll", ("2026-04", "2026-04")), kind="ie",
  q=["Hallberg Bakery wrote again, what plan are they on?"])
D(PREF, 0.45, ["Hallberg Bakery prefers replies in Swedish",
               "Svara Hallbergs bageri på svenska"], kinds="ei", q=["hej, det är Hallbergs bageri igen"])
F("Nordkust Surf School only uses Ledgerly in summer and pauses its subscription in winter", FACT, 0.4,
  ("2025-10", "2025-11"), q=["can I pause my subscription for the winter?"], kind="i")
F("Pinewood Dental keeps hitting the Starter user limit", DIFF, 0.45, ("2025-12", "2026-01"),
  q=["Pinewood Dental can't add their new hygienist"], kind="i")
F("Fjällström Carpentry's owner isn't very technical; explain things step by step", PREF, 0.5,
  ("2025-10", "2025-12"), kind="i")
S("Café Linnea was charged twice in November; refunded", FACT, 0.3, ("2025-11", "2025-11"))
F("Brightwater Translations invoices mostly in EUR and GBP", FACT, 0.35, ("2026-01", "2026-03"), kind="i")
F("Oakridge Studio asked for a Xero import", FACT, 0.3, ("2025-11", "2025-12"))
F("Mårtensson Bygg may cancel because there's no project tracking", DIFF, 0.55, ("2026-05", "2026-05"),
  kind="i")
F("Mårtensson Bygg stayed after project tags launched", FACT, 0.45, ("2026-09", "2026-09"))
F("Lindqvist Physio wants invoices to include their clinic registration number", PREF, 0.35,
  ("2026-02", "2026-04"))
F("Solberg Design Studio is moving their books from a spreadsheet", FACT, 0.3, ("2026-06", "2026-07"))
F("Greenleaf Catering asked three times about splitting one invoice into instalments", DIFF, 0.4,
  ("2026-07", "2026-09"), q=["can I split an invoice into two payments?"])

OFF("what's the weather like in Madrid today?",
    "can you recommend a good pizza place?",
    "what is the GDP of Germany?",
    "tell me a story about a dragon",
    "who is the best football player ever?",
    "hur många invånare har Stockholm?",
    "what is 17 times 23?",
    "how do I bake banana bread?",
    "what's the meaning of life?",
    "give me a workout for my abs",
    "what's a black hole?",
    "how do I fix a flat bike tyre?",
    "can you write a poem for my mom's birthday?",
    "vem vann melodifestivalen?",
    "how do I learn to play guitar?",
    "what time is sunset in Oslo?")


# ==========================================================================
# Later months (mid-2026 onwards): what the agent picked up more recently
# ==========================================================================
namespace("alice", "2025-09-03")
F("Seems to run better in the evening than in the morning", PREF, 0.35, ("2026-06", "2026-08"), kind="i")
F("Tends to skip strength sessions when work gets busy", DIFF, 0.4, ("2026-06", "2026-09"), kind="i",
  q=["I missed strength again this week"])
F("Cooks fish mostly at weekends since the summer", FACT, 0.3, ("2026-07", "2026-09"), kind="i")
F("Often feels flat after 15 km; probably under-fuels before long runs", DIFF, 0.45,
  ("2026-07", "2026-08"), kind="i", q=["what should I eat before my long run?"])
F("Enjoys dishes from her partner's family, like Västerbotten cheese pie", PREF, 0.35,
  ("2026-06", "2026-09"), kind="i", q=["what should I bring to my in-laws for dinner?"])
F("Usually underestimates how long weeknight recipes take", DIFF, 0.3, ("2026-04", "2026-08"), kind="i")
F("Finds phone calls in Swedish much harder than talking face to face", DIFF, 0.45, ("2026-09", "2026-10"),
  q=["I have to call the vårdcentral in Swedish, help me prepare"])
F("Har börjat tänka på svenska ibland", FACT, 0.35, ("2026-10", "2026-11"))
F("Verkar tycka om att läsa deckare på svenska", PREF, 0.3, ("2026-06", "2026-07"), kind="i")
F("Läser nu 'Hundraåringen som klev ut genom fönstret'", FACT, 0.4, ("2026-08", "2026-09"),
  q=["vilken bok läser jag nu?"])
F("Tycker att Hundraåringen är rolig och lättare än Mankell", PREF, 0.4, ("2026-09-15", "2026-10-20"),
  q=[("vad tyckte jag om boken?", 1), "ge mig ett boktips på svenska"])
F("Wants to take the SAS grund exam in December 2026", GOAL, 0.65, ("2026-09", "2026-10"),
  q=["when is my Swedish exam?", "hjälp mig plugga inför provet"])
F("Next running goal: a sub-1:55 half marathon in 2027", GOAL, 0.6, ("2026-09-20", "2026-10-15"),
  q=["what's my next running goal?"])
F("Decided to take two easy weeks after the half marathon", DEC, 0.4, ("2026-09-13", "2026-09-25"))
C(GOAL, 0.6, ("Is undecided about running a full marathon", ("2026-09-21", "2026-10-05")),
  ("Signed up for the Stockholm Marathon 2027", ("2026-11", "2026-11")),
  q=["did I sign up for the marathon?", "when should marathon training start?"])
F("Bought studded running shoes for icy winter runs", DEC, 0.3, ("2026-11", "2026-11"),
  q=["what shoes should I wear on ice?"])
F("The new flat has a bigger kitchen with a proper oven", FACT, 0.35, ("2026-05-20", "2026-06-15"),
  q=["can I bake two loaves at once?"])
F("Seems happier since moving to the bigger flat", OTH, 0.2, ("2026-06", "2026-07"), kind="i")
F("Hosts a dinner for friends about once a month", FACT, 0.3, ("2026-06", "2026-10"), kind="i",
  q=["menu idea for six people on Saturday?"])
F("Wants to learn to bake proper kanelbullar", GOAL, 0.3, ("2026-09", "2026-09"),
  q=["kanelbullens dag is coming, can you give me a recipe?"])
F("Baked kanelbullar for kanelbullens dag; the dough was too sticky", OTH, 0.2, ("2026-10-04", "2026-10-08"))
F("Has a work trip to London in November", FACT, 0.35, ("2026-10", "2026-10"))
S("Is in London for work this week", FACT, 0.25, ("2026-11-09", "2026-11-13"),
  q=["where can I get a good curry near King's Cross?"])
F("Wants to cut down on screen time in the evenings", GOAL, 0.35, ("2026-06", "2026-09"))
F("Usually asks for dinner ideas around 17:00, right after work", OTH, 0.25, ("2026-04", "2026-09"),
  kind="i")
F("Likes a reminder about strength training on Mondays", PREF, 0.3, ("2026-03", "2026-06"), kind="i")
F("Sleeps badly in the light summer nights; uses an eye mask", DIFF, 0.3, ("2026-06", "2026-06"))
F("Her partner started joining her Saturday runs", FACT, 0.3, ("2026-07", "2026-08"))
F("Gets tired of dal in summer and wants lighter dishes", PREF, 0.35, ("2026-06", "2026-07"), kind="i",
  q=["it's too hot to cook, what's for dinner?"])
F("Grilled halloumi and vegetables are her go-to summer dinner", PREF, 0.3, ("2026-07", "2026-08"),
  kind="i")
F("Is worried about the dark months coming again", DIFF, 0.35, ("2026-10", "2026-11"), kind="i",
  q=["how do I survive November here?"])
F("Decided to take vitamin D over the winter after asking her doctor", DEC, 0.4, ("2026-10", "2026-11"))
F("Likes recipes with lots of vegetables and one clear protein", PREF, 0.4, ("2026-05", "2026-09"),
  kind="i")
F("Responds well to concrete weekly plans rather than open-ended advice", PREF, 0.45,
  ("2026-02", "2026-05"), kind="i")
F("Is more motivated when she has a race on the calendar", PREF, 0.4, ("2026-03", "2026-07"), kind="i")
F("Uses English at work and Swedish at home more and more", FACT, 0.3, ("2026-08", "2026-11"), kind="i")
F("Verkar ha svårare med skriven svenska än med att läsa", DIFF, 0.35, ("2026-07", "2026-10"),
  kind="i", q=["kan du rätta min text?"])

namespace("bob", "2025-09-10")
F("Seems to be settling in; mentions friends in Berlin more often", OTH, 0.3, ("2026-09", "2026-10"),
  kind="i")
F("Likes the new team more than his old one", PREF, 0.35, ("2026-07", "2026-08"), kind="i")
F("Tends to pile on side-project features right before a deadline", DIFF, 0.4, ("2026-03", "2026-10"),
  kind="i", q=["should I add one more feature before the beta?"])
F("Cycles to work even in light rain", PREF, 0.25, ("2026-06", "2026-09"), kind="i")
F("Will probably need proper winter cycling gear soon", OTH, 0.2, ("2026-10", "2026-11"), kind="i",
  q=["what should I wear to cycle in the snow?"])
F("Wants one German-only day a week in the chat", GOAL, 0.45, ("2026-09", "2026-09"),
  q=["heute nur Deutsch, okay?"])
F("Had his first work meeting entirely in German", FACT, 0.45, ("2026-10", "2026-11"))
T("Thinks Berlin döner beats any kebab in Paris", OTH, 0.1, ("2026-06", "2026-07"))
F("Bought a used sofa and a desk for the new flat", FACT, 0.25, ("2026-09-05", "2026-09-30"))
F("Would like to adopt a dog next year", GOAL, 0.35, ("2026-10", "2026-11"),
  q=["which dog breeds are good for a flat?"])
F("Has to file taxes in both France and Germany for 2026", FACT, 0.55, ("2026-11", "2026-11"),
  q=["what do I need to sort out for taxes this year?"])
F("Decided to hire a tax advisor for the 2026 return", DEC, 0.5, ("2026-11-05", "2026-11-20"))
F("Chose public health insurance in Germany", DEC, 0.5, ("2026-05-20", "2026-06-05"),
  q=["what health insurance do I have?"])
F("Works late again whenever beta users are waiting on a fix", DIFF, 0.35, ("2026-10", "2026-11"),
  kind="i")
F("Prefers written async updates over meetings", PREF, 0.4, ("2026-07", "2026-09"), kind="i",
  q=["help me write my weekly update"])
F("Wants to become a staff engineer within two years", GOAL, 0.6, ("2026-08", "2026-09"),
  q=["what should I work on to get promoted?"])
F("His mentor at work suggested writing more design docs", FACT, 0.4, ("2026-09", "2026-09"))
F("Wrote the design doc for the routing service migration", FACT, 0.45, ("2026-10", "2026-10"))
F("Chose Postgres partitioning over a separate time-series database for routing events", DEC, 0.5,
  ("2026-10-10", "2026-11-10"), q=["remind me why we didn't pick a time-series DB"])
F("Beta users asked for CSV export of balances", FACT, 0.3, ("2026-10-25", "2026-11-20"))
F("Decided multi-currency will be the next big feature of the app", DEC, 0.5, ("2026-11-10", "2026-11-25"))
F("Seems stretched thin between the new job and the beta", DIFF, 0.4, ("2026-11", "2026-11"), kind="i",
  q=["I'm exhausted, how do I plan this week?"])
T("Two friends from Paris visited him in Berlin", OTH, 0.12, ("2026-09", "2026-09"))
C(FACT, 0.3, ("Has a Brompton folding bike", ("2025-09", "2025-12")),
  ("His Brompton was stolen; now rides a second-hand city bike", ("2026-08", "2026-08")),
  q=["my bike chain keeps slipping, what should I check?"])
F("Runs on Tempelhofer Feld on Sunday mornings", FACT, 0.25, ("2026-07", "2026-09"))
F("Likes getting the German word next to the English one", PREF, 0.3, ("2026-04", "2026-08"), kind="i")
F("Worried about his first Berlin winter", DIFF, 0.3, ("2026-10", "2026-11"), kind="i")
F("Wants a standing desk for home-office days", GOAL, 0.2, ("2026-09", "2026-10"))
F("Reacts badly to vague requirements; wants tickets with clear acceptance criteria", PREF, 0.4,
  ("2026-07", "2026-10"), kind="i")
F("Usually chats late in the evening, after climbing", OTH, 0.15, ("2025-11", "2026-03"), kind="i")
F("Probably underestimates how long paperwork takes", DIFF, 0.3, ("2026-02", "2026-05"), kind="i")
F("Gets more done on the side project on Sunday mornings", FACT, 0.3, ("2026-07", "2026-10"), kind="i")

namespace("chen", "2025-10-08")
F("搬出宿舍以后睡眠好多了", FACT, 0.3, ("2026-09-20", "2026-10-20"), kind="i")
F("Seems more confident in English since the IELTS result", OTH, 0.3, ("2026-08", "2026-09"), kind="i")
F("似乎更喜欢用英文讨论技术问题", PREF, 0.35, ("2026-07", "2026-09"), kind="i")
F("大三的专业课有操作系统、计算机网络和编译原理", FACT, 0.45, ("2026-09-05", "2026-09-20"),
  q=["这学期哪门课最该花时间？"])
F("觉得操作系统很难，尤其是内存管理", DIFF, 0.4, ("2026-10", "2026-10"),
  q=["页表到底是怎么回事？", "虚拟内存怎么理解？"])
F("编译原理老师讲得很快，跟不上", DIFF, 0.4, ("2026-10", "2026-11"), q=["LL(1) 文法怎么判断？"])
F("计划在申请截止前把 GPA 保持在 3.7 以上", GOAL, 0.6, ("2026-09", "2026-09"))
F("决定个人陈述重点写实习经历和开源项目", DEC, 0.55, ("2026-10", "2026-10"),
  q=["帮我列一下个人陈述的提纲"])
F("推荐信定了：数据结构老师一封，实习 mentor 一封", DEC, 0.55, ("2026-10-10", "2026-10-31"))
F("阿姆斯特丹大学的申请还没交", FACT, 0.5, ("2026-11-15", "2026-11-25"))
F("担心拿不到奖学金", DIFF, 0.4, ("2026-10", "2026-11"), kind="i", q=["如果没有奖学金怎么办？"])
F("决定同时申请学校的奖学金", DEC, 0.5, ("2026-10", "2026-11"))
F("开始做助教，帮大一学生批改 C 语言作业", FACT, 0.4, ("2026-09", "2026-10"))
F("喜欢给大一学生讲题，觉得能巩固知识", PREF, 0.3, ("2026-10", "2026-11"), kind="i")
F("Prefers short bullet-point feedback on essays", PREF, 0.4, ("2026-09", "2026-10"), kind="i",
  q=["can you check my statement of purpose?"])
F("好像一到周日晚上就会焦虑下周的事情", DIFF, 0.35, ("2026-09", "2026-11"), kind="i")
C(DIFF, 0.35, ("觉得自己绝对不是能早起的人", ("2025-12", "2026-01")),
  ("现在每天七点起床晨跑，感觉不错", ("2026-10", "2026-10")),
  q=["明天几点起床合适？"])
F("室友也是计算机专业的，经常一起刷题", FACT, 0.3, ("2026-09", "2026-10"))
F("合租的房子离学校骑车十分钟", FACT, 0.25, ("2026-09-10", "2026-09-30"))
F("开始自己做饭，会做番茄炒蛋和麻婆豆腐", FACT, 0.3, ("2026-09", "2026-10"),
  q=["今晚自己做饭，做什么好？"])
F("想学做川菜，特别是回锅肉", GOAL, 0.25, ("2026-10", "2026-11"), q=["回锅肉怎么做？"])
F("Got interested in reinforcement learning after the ML course", PREF, 0.4, ("2026-07", "2026-08"),
  kind="i")
F("机器学习大作业做的是垃圾分类图像识别", FACT, 0.4, ("2026-05", "2026-06"),
  q=["卷积神经网络的 padding 有什么用？"])
F("机器学习大作业拿了 92 分", FACT, 0.35, ("2026-07", "2026-07"))
F("觉得 PyTorch 比 TensorFlow 好用", PREF, 0.3, ("2026-05", "2026-07"))
F("想在 Kaggle 上参加一次比赛", GOAL, 0.35, ("2026-08", "2026-10"), q=["新手适合参加哪种比赛？"])
T("双十一想买一个新显示器", OTH, 0.1, ("2026-11-01", "2026-11-10"))
F("家里希望过年早点回成都", OTH, 0.2, ("2026-11", "2026-11"), q=["寒假什么时候买票比较好？"])
F("Works best with a fixed daily study plan", PREF, 0.45, ("2026-02", "2026-04"), kind="i",
  q=["今天该复习什么？"])
F("常常在晚上十一点以后问问题", OTH, 0.15, ("2025-11", "2026-02"), kind="i")
F("对自己的英语要求很高，考到 7 分还想再提高写作", PREF, 0.35, ("2026-08", "2026-09"), kind="i")

namespace("support-bot", "2025-09-01")
IM("ROT and RUT deductions can be shown on invoices for Swedish customers", FACT, 0.45,
   q=["hur lägger jag till ROT-avdrag på en faktura?"])
F("Tickets spike on the first working day of each month, when people invoice", FACT, 0.4,
  ("2026-01", "2026-03"), kind="i")
F("Customers who ask about payroll twice usually upgrade within a month", FACT, 0.35,
  ("2026-04", "2026-06"), kind="i")
F("Questions about the 2FA requirement peaked in the first week of October", FACT, 0.3,
  ("2026-10-08", "2026-10-20"), kind="i")
F("Customers rarely read release notes; big changes need an in-app notice", DIFF, 0.45,
  ("2026-03", "2026-04"), kind="i")
F("Norwegian customers often ask about EHF e-invoicing", DIFF, 0.45, ("2026-06", "2026-08"), kind="i",
  q=["can I send EHF invoices?"])
F("EHF e-invoicing for Norway is planned but not scheduled", FACT, 0.4, ("2026-08", "2026-09"))
F("German customers keep asking about XRechnung", FACT, 0.4, ("2025-12", "2026-01"), kind="i")
C(FACT, 0.55, ("XRechnung is not supported yet", ("2026-02", "2026-02")),
  ("XRechnung export is available since version 5.1", ("2026-10-12", "2026-10-25")),
  q=["can Ledgerly create XRechnung invoices?"], qo=["my German client needs an XRechnung, what now?"])
F("Escalate XRechnung validation errors to tier 2", DEC, 0.5, ("2026-10-20", "2026-11-05"))
F("Saturday shifts are quiet: mostly password resets", FACT, 0.3, ("2026-09-15", "2026-10-31"), kind="i")
F("Cancellation requests often mention price right after the renewal email", DIFF, 0.45,
  ("2026-06", "2026-07"), kind="i")
F("Send a heads-up email two weeks before yearly renewals", DEC, 0.5, ("2026-07-15", "2026-08-15"),
  q=["why did I get an email about my renewal?"])
F("Project tags confuse people: they mix up tags and categories", DIFF, 0.4, ("2026-09-10", "2026-10-10"),
  kind="i", q=["what's the difference between a tag and a category?"])
F("Wrote a help article comparing tags and categories", DEC, 0.35, ("2026-10-10", "2026-10-31"))
S("Black Friday offer next week: 25% off yearly plans", FACT, 0.25, ("2026-11-18", "2026-11-25"),
  q=["will there be a Black Friday deal this year?"])
F("Holiday support hours are planned for 23 December to 2 January", FACT, 0.35, ("2026-11-15", "2026-11-25"))
F("Goal: keep CSAT above 94% through the holiday season", GOAL, 0.5, ("2026-11", "2026-11"))
F("CSAT for Q1 2026 ended at 93%, above target", FACT, 0.45, ("2026-04-01", "2026-04-10"))
F("CSAT for Q3 2026 was 95%", FACT, 0.45, ("2026-10-01", "2026-10-10"),
  q=["how did we do on CSAT last quarter?"])
F("Average first response in August was 48 minutes", FACT, 0.4, ("2026-09-01", "2026-09-07"))
F("A new tier-2 colleague handles German-language tickets", FACT, 0.4, ("2026-06", "2026-06"),
  q=["who can take this ticket in German?"])
F("A Norwegian-speaking agent now covers weekdays", FACT, 0.4, ("2026-07", "2026-07"))
C(DIFF, 0.35, ("The receipt scanner struggles with faded thermal receipts", ("2025-11", "2026-04")),
  ("The 5.0 scanner update fixed most faded-receipt problems", ("2026-09", "2026-09")),
  q=["the app can't read my receipt"])
C(DIFF, 0.3, ("Dashboard loads slowly for customers on poor mobile connections", ("2026-01", "2026-05")),
  ("Dashboard speed improved a lot after the August performance release", ("2026-08-15", "2026-09-10")),
  kind="ie", q=["is the app still slow on mobile?"])
F("Svenska kunder frågar ofta om ROT-avdrag på fakturor", DIFF, 0.4, ("2026-04", "2026-06"), kind="i")
F("Many customers confuse the invoice due date with the payment terms setting", DIFF, 0.35,
  ("2026-02", "2026-06"), kind="i", q=["why does my invoice say due in 30 days when I chose 14?"])
F("Starter customers often don't know they can invite their accountant for free", DIFF, 0.35,
  ("2025-11", "2026-02"), kind="i")
F("Instalment invoices are planned, not promised", FACT, 0.35, ("2026-10", "2026-11"),
  q=["do you support payment plans for my clients?"])
F("Kestrel Bike Repair seems close to outgrowing the Starter plan", DIFF, 0.3, ("2026-06", "2026-09"),
  kind="i")
F("Customers who were offered a free month after the outage mostly stayed", FACT, 0.3,
  ("2026-04", "2026-05"), kind="i")
F("Angry customers calm down faster when we give a concrete next step and a time", PREF, 0.45,
  ("2026-02", "2026-05"), kind="i", q=["a customer is furious about a double charge"])
F("Most churn happens in the first 60 days after sign-up", FACT, 0.45, ("2026-05", "2026-07"), kind="i")
F("Onboarding calls for new Business customers cut their ticket volume in half", FACT, 0.4,
  ("2026-08", "2026-10"), kind="i")
F("Decided to offer a free onboarding call to every new Business customer", DEC, 0.5,
  ("2026-10", "2026-11"), q=["do I get help setting up my account?"])
F("Kunder uppskattar korta svar med en tydlig länk till rätt inställning", PREF, 0.3,
  ("2026-03", "2026-06"), kind="i")

namespace("alice", "2025-09-03")
F("Seems to cook more Swedish dishes since the autumn", PREF, 0.3, ("2026-10", "2026-11"), kind="i")
F("Prefers shorter runs in the darkest weeks of the year", PREF, 0.3, ("2026-11", "2026-11"), kind="i")
F("Asks a lot about marathon fuelling; probably nervous about the distance", DIFF, 0.35,
  ("2026-11", "2026-11"), kind="i", q=["how many gels do I need for a marathon?"])
F("Sticks to plans better when she helped write them", PREF, 0.4, ("2026-08", "2026-10"), kind="i")
F("Will likely want speaking practice before the December Swedish exam", GOAL, 0.4,
  ("2026-11", "2026-11"), kind="i", q=["kan vi öva muntligt inför provet?"])
F("Verkar mer avslappnad när hon skriver på svenska nu", OTH, 0.25, ("2026-10", "2026-11"), kind="i")
F("Behöver öva mer på att skriva formella mejl på svenska", DIFF, 0.35, ("2026-10", "2026-11"), kind="i",
  q=["hjälp mig skriva ett mejl till hyresvärden"])
F("Her partner now does the Sunday meal prep with her", FACT, 0.3, ("2026-09", "2026-10"))
F("Wants to try a plant-based Christmas menu this year", GOAL, 0.35, ("2026-11", "2026-11"),
  q=["what should we cook for Christmas Eve?"])
F("Is spending Christmas with her partner's family in Umeå this year", FACT, 0.4, ("2026-11", "2026-11"),
  q=["what's the plan for Christmas again?"])
F("Has been eating out less to save for a holiday", FACT, 0.25, ("2026-09", "2026-11"), kind="i")
F("Planning a winter sun trip to the Canary Islands in February", GOAL, 0.4, ("2026-11", "2026-11"),
  q=["are there good running routes on Gran Canaria?"])
F("Enjoys the running club more for the people than for the training", PREF, 0.3, ("2026-09", "2026-10"),
  kind="i")
F("Tends to increase mileage too fast after a break", DIFF, 0.45, ("2026-10", "2026-11"), kind="i",
  q=["can I go back to 40 km this week?"])
F("Started a weekly yoga class for mobility", FACT, 0.3, ("2026-10", "2026-10"))

namespace("bob", "2025-09-10")
F("Seems happier with the move; complains less about bureaucracy", OTH, 0.3, ("2026-10", "2026-11"),
  kind="i")
F("Risks burning out if the beta keeps growing without help", DIFF, 0.45, ("2026-11", "2026-11"), kind="i")
F("Is thinking about finding a co-maintainer for the app", GOAL, 0.45, ("2026-11", "2026-11"),
  q=["how do I find someone to help with the app?"])
F("Wants the app's stack to stay boring: Go, Postgres, Svelte", PREF, 0.4, ("2026-09", "2026-11"),
  kind="i", q=["should I add GraphQL to the app?"])
F("Gets frustrated by long Slack threads at work", DIFF, 0.3, ("2026-08", "2026-10"), kind="i")
F("Wants to take the German B1 exam in spring 2027", GOAL, 0.5, ("2026-11", "2026-11"),
  q=["wann ist die B1-Prüfung?"])
F("Understands spoken German much better than he speaks it", FACT, 0.35, ("2026-10", "2026-11"), kind="i")
F("Cooks Vietnamese dishes at home more often now", PREF, 0.3, ("2026-09", "2026-11"), kind="i",
  q=["can you give me a pho recipe I can eat?"])
F("Booked flights to Toronto for 20 December", DEC, 0.45, ("2026-10-15", "2026-11-10"),
  q=["when is my flight home?"])
F("Usually plans his week on Sunday evenings", OTH, 0.25, ("2026-07", "2026-10"), kind="i")
F("Prefers blunt feedback on his code", PREF, 0.4, ("2026-05", "2026-09"), kind="i",
  q=["review this Go function for me"])
F("His team's biggest pain is flaky end-to-end tests", DIFF, 0.35, ("2026-09", "2026-10"),
  q=["how do we make our e2e tests less flaky?"])

namespace("chen", "2025-10-08")
F("申请季压力很大，最近睡得很晚", DIFF, 0.35, ("2026-11", "2026-11"), kind="i")
F("似乎对 TU Eindhoven 越来越感兴趣", PREF, 0.4, ("2026-11", "2026-11"), kind="i",
  q=["埃因霍温和代尔夫特怎么选？"])
F("操作系统期中考了 81 分，比预期好", FACT, 0.35, ("2026-11", "2026-11"))
F("计算机网络的实验作业做得很顺", FACT, 0.25, ("2026-10", "2026-11"), kind="i")
F("学习时更喜欢先看图再看文字", PREF, 0.4, ("2026-09", "2026-11"), kind="i",
  q=["给我画个图讲讲 TCP 拥塞控制"])
F("和荷兰语伴聊天时喜欢聊文化差异", OTH, 0.2, ("2026-09", "2026-10"), kind="i")
F("决定每天写一段英文日记练写作", DEC, 0.4, ("2026-09", "2026-09"))
F("想提前了解荷兰的租房情况", GOAL, 0.35, ("2026-11", "2026-11"), q=["荷兰租房难吗？"])
F("Usually asks for a study plan on Sunday nights", OTH, 0.2, ("2026-09", "2026-11"), kind="i")
F("觉得做助教占用的时间太多了", DIFF, 0.3, ("2026-11", "2026-11"), kind="i")
F("Wants all school deadlines summarised in one table", PREF, 0.4, ("2026-11", "2026-11"),
  q=["帮我整理一下各个学校的截止日期"])

namespace("support-bot", "2025-09-01")
F("Invoice volume peaks in the last week of November", FACT, 0.35, ("2026-11", "2026-11"), kind="i")
F("German customers often ask whether GoBD compliance is documented", FACT, 0.35, ("2026-07", "2026-09"),
  kind="i", q=["is Ledgerly GoBD compliant?"])
F("Customers upgrading for payroll usually ask about sick-leave pay next", DIFF, 0.3,
  ("2026-06", "2026-09"), kind="i")
F("Many Norwegian sign-ups came right after the Norwegian invoice templates", FACT, 0.3,
  ("2026-07", "2026-08"), kind="i")
F("The 2FA rollout locked out customers who lost their phone", DIFF, 0.45, ("2026-10", "2026-10"),
  q=["I lost my phone and can't log in"])
F("Lost-2FA cases need an identity check by tier 2 before a reset", DEC, 0.6, ("2026-10", "2026-10"))
F("Customers take a 'no' better when we explain why a feature isn't there", PREF, 0.4,
  ("2026-05", "2026-08"), kind="i")
F("Year-end closing questions start around mid-November", FACT, 0.35, ("2026-11", "2026-11"), kind="i",
  q=["how do I close the year in Ledgerly?"])
F("Decided to publish a year-end checklist article in November", DEC, 0.4, ("2026-11", "2026-11"))
F("Kunder i Norge föredrar svar på norska men accepterar svenska", PREF, 0.3, ("2026-08", "2026-10"),
  kind="i")
F("Saturday support gets mostly bank sync questions", FACT, 0.3, ("2026-10", "2026-11"), kind="i")


# --- more recall turns for memories defined above ----------------------------

def ASK(ns: str, memory_text: str, *queries) -> None:
    """Attach extra user turns that should recall the memory with exactly this text."""
    for e in NAMESPACES[ns].entries:
        for i, m in enumerate(e.mems):
            if m.text == memory_text:
                e.queries += [(i, s) for s in _qspecs(queries)]
                return
    raise KeyError(f"{ns}: no memory {memory_text!r}")


ASK("alice", "Uses a daylight lamp in the mornings during winter", "I feel so tired in the mornings lately")
ASK("alice", "Pratade bara svenska med svärföräldrarna i julas", "minns du hur det gick i julas?")
ASK("alice", "Wants to get a driving licence in Sweden", "how does the Swedish driving test work?")
ASK("alice", "Has a work trip to London in November", "when is my London trip?")
ASK("alice", "Runs with a club from the neighbourhood on Thursdays", "is it club night tomorrow?")
ASK("alice", "Physio said: reduce mileage for three weeks and do hip strength work",
    "how much should I run this week with my knee?")
ASK("bob", "Birthday is in February", "any ideas for my birthday weekend?")
ASK("bob", "Sister is expecting a baby in December", "what's a good gift for a newborn?")
ASK("bob", "Opened a German bank account online", "which account should my salary go to?")
ASK("bob", "Passed the A2 exam", "what should I study now that A2 is done?")
ASK("bob", "Aims to climb V5 boulders by next summer", "how do I get stronger fingers for climbing?")
ASK("bob", "Wants to contribute to an open-source Go project", "any Go projects with good first issues?")
ASK("chen", "有一个上初中的妹妹", "给妹妹买什么生日礼物好？")
ASK("chen", "在学校的机器人社团，负责视觉模块", "OpenCV 怎么识别颜色？")
ASK("chen", "每周跑三次步，想提高体能", "跑步前要怎么热身？")
ASK("chen", "开始做助教，帮大一学生批改 C 语言作业", "怎么给大一学生讲清楚指针？")
ASK("chen", "决定每天写一段英文日记练写作", "帮我改一下今天的英文日记")
ASK("support-bot", "Credit notes are linked to the original invoice automatically",
    "how do I refund part of an invoice?")
ASK("support-bot", "Multi-currency invoices are supported, but bank accounts are EUR, SEK, NOK and DKK only",
    "can I have a USD bank account in Ledgerly?")
ASK("support-bot", "Invoices can be numbered with a custom prefix per year", "can my invoice numbers start with 2026-?")
ASK("support-bot", "A Norwegian-speaking agent now covers weekdays", "kan jeg få svar på norsk?")
ASK("support-bot", "Accountants can be invited as free read-only users on every plan",
    "my bookkeeper needs access, do I pay extra?")


# ==========================================================================
# Slot-filled "log" memories: small, dated, low-importance observations that
# follow each user's timeline (built with the seeded rng, then dated normally)
# ==========================================================================

def _add(ns: str, text, cat, imp, when, kind="e", q=()):
    namespace(ns, "2000-01")  # existing namespace: start is kept
    F(text, cat, imp, when, kind, tag="log", q=q)


def _alice_logs(rng: random.Random) -> None:
    # (dish, earliest month) - fish only after she started eating it again
    dishes = [
        ("a red lentil dal with spinach", "2025-09"), ("chana masala", "2025-09"),
        ("a sweet potato and peanut stew", "2025-10"), ("shakshuka with feta", "2025-09"),
        ("mujaddara with crispy onions", "2025-10"), ("a pumpkin risotto", "2025-10"),
        ("a vegetarian ärtsoppa with pancakes for dessert", "2025-11"),
        ("halloumi tacos with pickled red onion", "2026-05"), ("palak paneer", "2025-12"),
        ("an aubergine and chickpea traybake", "2026-03"), ("baked salmon with dill potatoes", "2026-05"),
        ("cod in a spicy tomato sauce", "2026-06"), ("a beetroot and lentil salad", "2026-06"),
        ("Swedish potato dumplings (kroppkakor) with a veggie filling", "2026-01"),
        ("a Thai-style green curry with tofu", "2025-11"), ("homemade falafel", "2026-04"),
        ("a big pot of minestrone", "2025-12"), ("gnocchi with brown butter and sage", "2026-10"),
        ("a fish pie with smoked haddock", "2026-10"), ("a cauliflower and chickpea curry", "2025-10"),
    ]
    verdicts = [
        "her partner asked for seconds", "too salty; go easier on the salt next time",
        "wants to make it again soon", "a bit bland, needed more lemon", "took longer than planned",
        "it froze well for lunches", "the spice level was just right", "will double the garlic next time",
        "came out too watery", "a good post-run dinner", "the leftovers were even better",
        "would add more chilli", "an easy weeknight win",
    ]
    frames = ["Cooked {d}; {v}", "Made {d}: {v}", "Tried {d} for the first time; {v}"]
    for i, (dish, since) in enumerate(rng.sample(dishes, 16)):
        text = rng.choice(frames).format(d=dish, v=rng.choice(verdicts))
        q = ["what did I cook that my partner liked?"] if "seconds" in text else ()
        _add("alice", text, rng.choice([OTH, OTH, PREF]), rng.choice([0.15, 0.2, 0.25]), (since, "2026-11"),
             q=q)

    # Long runs: distance follows her training (base -> knee break -> half plan -> marathon talk).
    phases = [("2025-09", "2025-12", 8, 12), ("2026-02-20", "2026-05", 9, 13),
              ("2026-06", "2026-08", 13, 18), ("2026-08-20", "2026-09-10", 17, 21),
              ("2026-10", "2026-11", 10, 16)]
    feel = ["felt strong", "legs were heavy", "negative split", "windy along the water",
            "knee was fine", "ran it with the club", "too fast at the start", "rain the whole way",
            "fuelled with two gels", "stopped twice for the lights"]
    frames = ["Long run: {k} km at {p}/km, {f}", "Weekend long run of {k} km ({p}/km); {f}",
              "Did {k} km for the long run, {f}"]
    for lo, hi, dmin, dmax in phases:
        for _ in range(3):
            k = rng.randint(dmin, dmax)
            secs = 6 * 60 + rng.randrange(-20, 50, 5)  # easy long-run pace, slower than race pace
            pace = f"{secs // 60}:{secs % 60:02d}"
            _add("alice", rng.choice(frames).format(k=k, p=pace, f=rng.choice(feel)), OTH,
                 rng.choice([0.1, 0.15, 0.2]), (lo, hi), q=["how far was my last long run?"] if k >= 18 else ())


def _bob_logs(rng: random.Random) -> None:
    districts = ["Kreuzberg", "Neukölln", "Friedrichshain", "Wedding", "Moabit", "Prenzlauer Berg",
                 "Pankow", "Schöneberg", "Lichtenberg", "Tempelhof", "Treptow"]
    issues = ["too dark and on the ground floor", "about 80 other people at the viewing",
              "the landlord wanted a SCHUFA on the spot", "nice but 40 minutes by bike to the office",
              "no kitchen included", "great, but well above budget", "on a very loud street",
              "small but bright; he applied", "the agent never replied", "needs a lot of renovation"]
    frames = ["Viewed a flat in {d}: {i}", "Flat viewing in {d} - {i}", "Went to see an apartment in {d}; {i}"]
    for d in rng.sample(districts, 9):
        _add("bob", rng.choice(frames).format(d=d, i=rng.choice(issues)), OTH,
             rng.choice([0.1, 0.15, 0.2]), ("2026-03", "2026-07"))
    milestones = [
        ("Side project: wrote the first API endpoints for groups and expenses", ("2025-10", "2025-11")),
        ("Side project: added settle-up suggestions that minimise transfers", ("2025-12", "2026-01")),
        ("Side project: finished the Postgres migration", ("2026-02", "2026-02")),
        ("Side project: added recurring expenses like rent and internet", ("2026-04", "2026-05")),
        ("Side project: set up nightly database backups", ("2026-03", "2026-04")),
        ("Side project: first outside tester found a rounding bug in splits", ("2026-08", "2026-09")),
        ("Side project: added receipt photo uploads", ("2026-09", "2026-10")),
        ("Side project: wrote a privacy page before the beta", ("2026-09", "2026-10")),
    ]
    for text, when in milestones:
        _add("bob", text, FACT, rng.choice([0.25, 0.3, 0.35]), when)


def _chen_logs(rng: random.Random) -> None:
    # Mock test scores creep up over the year (listening/reading out of 40).
    windows = ["2025-10", "2025-11", "2025-12", "2026-01", "2026-02", "2026-03",
               "2026-04", "2026-05", "2026-06", "2026-07"]
    frames = {"听力": ["做了一套剑桥雅思{b}的听力，{s}/40", "剑桥{b}听力模考 {s}/40"],
              "阅读": ["做了剑桥雅思{b}的阅读，{s}/40", "剑桥{b}阅读模考对了 {s} 题"]}
    notes = ["", "，比上次进步了", "，第三部分错得最多", "，时间有点不够", "，状态不太好"]
    books = rng.sample(range(11, 20), 9) + [20]
    for i, month in enumerate(windows):
        part = "听力" if i % 2 == 0 else "阅读"
        base = 24 + i * 1.2 + (2 if part == "阅读" else 0)
        score = min(39, int(base + rng.randint(-2, 2)))
        text = rng.choice(frames[part]).format(b=books[i], s=score) + rng.choice(notes)
        _add("chen", text, OTH, rng.choice([0.1, 0.15, 0.2]), (month, month),
             q=["我最近模考成绩怎么样？"] if i in (5, 9) else ())
    essays = ["写了一篇关于城市交通的 Task 2 作文，老师给了 6 分", "写了一篇关于网课利弊的作文，结构还可以但例子太少",
              "Task 1 的柱状图写得太长了", "写作练习：环保话题，用了太多重复的词"]
    for text, month in zip(essays, ["2025-12", "2026-02", "2026-05", "2026-06"]):
        _add("chen", text, OTH, 0.2, (month, month))


COMPANIES = [
    ("Hagström Flowers", "florist", "Uppsala"), ("Vik & Strand Architects", "architecture studio", "Malmö"),
    ("Kestrel Bike Repair", "bike workshop", "Hamburg"), ("Tallbacken Yoga", "yoga studio", "Umeå"),
    ("Blue Fjord Consulting", "IT consultancy", "Bergen"), ("Maple & Oak Interiors", "interior design firm", "Dublin"),
    ("Sundqvist Electric", "electrician business", "Västerås"), ("Lumo Photography", "photography studio", "Tampere"),
    ("Hafen Coffee Roasters", "coffee roastery", "Bremen"), ("Ekholm Accounting", "small accounting office", "Örebro"),
    ("North Pier Fishmongers", "fish shop", "Aarhus"), ("Granite Peak Guides", "mountain guiding company", "Innsbruck"),
    ("Vinter Ceramics", "ceramics studio", "Gothenburg"), ("Alder Dog Grooming", "dog groomer", "Lund"),
    ("Kaleido Events", "event agency", "Copenhagen"), ("Rosenlund Vet Clinic", "veterinary clinic", "Linköping"),
]
TOPICS = [
    "how to add a logo to invoices", "changing the invoice due date default", "a missing bank transaction",
    "exporting everything for their accountant", "adding a second company to the same login",
    "reverse-charge VAT for EU clients", "why a payment reminder went out twice", "invoicing in GBP",
    "inviting their accountant", "a card payment that failed", "the receipt scanner on Android",
    "changing the invoice number series", "cancelling a recurring invoice", "paying yearly instead of monthly",
]


def _support_logs(rng: random.Random) -> None:
    frames = ["{n} ({t}, {c}) is on the {p} plan with {u} users",
              "{n} is {a} {t} in {c}; {p} plan, {u} users",
              "Customer {n}: {t} from {c}, {p} plan ({u} users)"]
    for i, (name, trade, city) in enumerate(COMPANIES):
        plan = rng.choice(["Starter", "Starter", "Team", "Team", "Business"])
        users = {"Starter": rng.randint(2, 3), "Team": rng.randint(4, 12), "Business": rng.randint(8, 30)}[plan]
        article = "an" if trade[0] in "aeiou" else "a"
        text = rng.choice(frames).format(n=name, a=article, t=trade, c=city, p=plan, u=users)
        q = [f"what plan is {name} on?"] if i % 3 == 0 else ()
        _add("support-bot", text, PROF, rng.choice([0.35, 0.4, 0.45]), None, kind="ie"[i % 2], q=q)
    asked = ["{n} asked about {t}", "{n} wrote in about {t}", "Ticket from {n} about {t}"]
    pairs = set()
    while len(pairs) < 18:
        pairs.add((rng.randrange(len(COMPANIES)), rng.randrange(len(TOPICS))))
    for ci, ti in sorted(pairs):
        name = COMPANIES[ci][0]
        text = rng.choice(asked).format(n=name, t=TOPICS[ti])
        q = [f"{name} is asking about {TOPICS[ti]} again"] if ti % 4 == 0 else ()
        _add("support-bot", text, OTH, rng.choice([0.1, 0.15, 0.2]), None, q=q)


def build_templated(rng: random.Random) -> None:
    _alice_logs(rng)
    _bob_logs(rng)
    _chen_logs(rng)
    _support_logs(rng)


# ==========================================================================
# Realisation: dates, archive flags, queries, output
# ==========================================================================

# Hours (UTC) at which each namespace's conversations usually happen, with weights.
ACTIVE_HOURS = {
    "alice": {5: 2, 6: 3, 7: 2, 8: 1, 11: 1, 12: 2, 16: 2, 17: 3, 18: 4, 19: 4, 20: 3, 21: 1},
    "bob": {6: 1, 7: 2, 8: 2, 11: 2, 12: 2, 17: 2, 18: 3, 19: 3, 20: 4, 21: 4, 22: 3, 23: 1},
    "chen": {0: 1, 1: 2, 2: 2, 3: 1, 5: 1, 6: 2, 8: 2, 10: 2, 11: 3, 12: 4, 13: 4, 14: 3, 15: 2},
    "support-bot": {7: 3, 8: 5, 9: 5, 10: 4, 11: 3, 12: 4, 13: 5, 14: 5, 15: 3},
}
MONTHS = [(2025, m) for m in range(9, 13)] + [(2026, m) for m in range(1, 12)]
MIN_CLUSTER_GAP = timedelta(days=12)
MIN_CONTRA_GAP = timedelta(days=20)
ARCHIVED_SHARE = 0.04


def month_index(d) -> int:
    return (d.year - 2025) * 12 + d.month - 9


def month_weight(d) -> float:
    """Recent months are denser: weight grows linearly from 1.0 (Sep 2025) to 5.2 (Nov 2026)."""
    return 1.0 + 0.3 * month_index(d)


class Clock:
    def __init__(self, rng: random.Random, ns: Namespace):
        self.rng = rng
        self.ns = ns
        hours = ACTIVE_HOURS[ns.name]
        self.hours, self.hour_w = list(hours), list(hours.values())

    def at_day(self, day: date) -> datetime:
        h = self.rng.choices(self.hours, self.hour_w)[0]
        return datetime(day.year, day.month, day.day, h, self.rng.randrange(60),
                        self.rng.randrange(60), tzinfo=timezone.utc)

    def pick(self, lo: datetime | None, hi: datetime | None, recency: bool = True) -> datetime:
        floor = (self.ns.first_contact or self.ns.start) + timedelta(minutes=20)
        lo = max(lo or self.ns.start + timedelta(days=1), floor)
        hi = min(hi or PERIOD_END, PERIOD_END)
        if lo > hi:
            raise ValueError(f"{self.ns.name}: empty window {lo}..{hi}")
        days, d = [], lo.date()
        while d <= hi.date():
            days.append(d)
            d += timedelta(days=1)
        weights = [month_weight(x) if recency else 1.0 for x in days]
        for _ in range(20):
            t = self.at_day(self.rng.choices(days, weights)[0])
            if lo <= t <= hi:
                return t
        return min(max(t, lo), hi)

    def pick_many(self, n: int, lo, hi, gap: timedelta) -> list[datetime]:
        best: list[datetime] = []
        for _ in range(200):
            ts = sorted(self.pick(lo, hi) for _ in range(n))
            if all(b - a >= gap for a, b in zip(ts, ts[1:])):
                return ts
            if len({t.date() for t in ts}) == n and not best:
                best = ts
        if not best:
            raise ValueError(f"{self.ns.name}: cannot place {n} dates in {lo}..{hi}")
        return best


def assign_dates(rng: random.Random) -> None:
    for ns in NAMESPACES.values():
        clock = Clock(rng, ns)
        first = ns.start + timedelta(hours=clock.rng.choices(clock.hours, clock.hour_w)[0],
                                     minutes=rng.randrange(30))
        onboard_t = first
        ns.first_contact = first
        import_t = ns.start + timedelta(hours=8, minutes=12)
        if any(m.source == "import" for e in ns.entries for m in e.mems):
            ns.first_contact = import_t

        def first_day(m: Mem) -> datetime:
            nonlocal onboard_t, import_t
            if m.source == "onboarding":
                onboard_t += timedelta(seconds=rng.randint(40, 200))
                return onboard_t
            import_t += timedelta(seconds=rng.randint(1, 4))
            return import_t

        for e in ns.entries:
            if e.kind == "single":
                m = e.mems[0]
                if m.source in ("onboarding", "import"):
                    m.created = first_day(m)
                else:
                    m.created = clock.pick(m.lo, m.hi)
            elif e.kind == "cluster":
                m0 = e.mems[0]
                for m, t in zip(e.mems, clock.pick_many(len(e.mems), m0.lo, m0.hi, MIN_CLUSTER_GAP)):
                    m.created = t
            else:  # contradiction
                old, new = e.mems
                if old.source in ("onboarding", "import"):
                    old.created = first_day(old)
                for _ in range(200):
                    if old.source == "chat":
                        old.created = clock.pick(old.lo, old.hi)
                    new.created = clock.pick(new.lo, new.hi)
                    if new.created - old.created >= MIN_CONTRA_GAP:
                        break
                else:
                    raise ValueError(f"contradiction cannot be ordered: {old.text!r} / {new.text!r}")


def mark_archived(rng: random.Random) -> None:
    """A few memories soft-deleted by an operator: doubtful inferences, trivia, stale notes
    and redundant paraphrases. Never a contradiction side or a memory a query is meant to find."""
    pool = []
    for ns in NAMESPACES.values():
        for e in ns.entries:
            asked = {i for i, _ in e.queries}
            for i, m in enumerate(e.mems):
                if m.source != "chat" or e.kind == "contra" or i in asked:
                    continue
                if m.kind == "i" and m.importance < 0.6:
                    pool.append((m, 3.0))
                elif m.tag in ("trivia", "stale", "log"):
                    pool.append((m, 2.0))
                elif e.kind == "cluster" and i > 0:
                    pool.append((m, 1.0))
    total = sum(len(e.mems) for ns in NAMESPACES.values() for e in ns.entries)
    n = round(total * ARCHIVED_SHARE)
    chosen: set[int] = set()
    while len(chosen) < n:
        chosen.add(rng.choices(range(len(pool)), [w for _, w in pool])[0])
    for i in sorted(chosen):
        pool[i][0].status = "archived"


def jitter_importance(rng: random.Random) -> None:
    for ns in NAMESPACES.values():
        for e in ns.entries:
            for m in e.mems:
                v = m.importance + rng.uniform(-0.04, 0.04)
                m.importance = round(min(0.99, max(0.02, v)), 2)


def make_queries(rng: random.Random) -> list[dict]:
    out = []
    for ns in NAMESPACES.values():
        clock = Clock(rng, ns)
        for e in ns.entries:
            for idx, spec in e.queries:
                base = e.mems[idx].created
                lo = base + timedelta(minutes=30)
                if spec.before_next:
                    hi = e.mems[1].created - timedelta(hours=1)
                else:
                    hi = min(PERIOD_END, base + timedelta(days=240))
                if lo > hi:
                    raise ValueError(f"no room to ask {spec.text!r}")
                # Most recall happens within weeks of the memory being written;
                # the later tail comes from pick()'s recency weighting.
                for _ in range(spec.times):
                    if rng.random() < 0.45:
                        hi2 = min(hi, lo + timedelta(days=30))
                        t = clock.pick(lo, hi2, recency=False)
                    else:
                        t = clock.pick(lo, hi)
                    out.append({"namespace": ns.name, "query": spec.text, "at": t,
                                "_about": (e, idx)})
        for text in ns.offtopic:
            out.append({"namespace": ns.name, "query": text, "at": clock.pick(None, None),
                        "_offtopic": True})
    out.sort(key=lambda q: (q["at"], q["namespace"], q["query"]))
    return out


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def build() -> tuple[list[dict], list[dict], dict, dict]:
    rng = random.Random(SEED)
    build_templated(rng)
    assign_dates(rng)
    jitter_importance(rng)
    mark_archived(rng)
    queries = make_queries(rng)

    memories = []
    for ns in NAMESPACES.values():
        for e in ns.entries:
            for m in e.mems:
                row = {
                    "text": m.text,
                    "namespace": ns.name,
                    "kind": KINDS[m.kind],
                    "category": m.category,
                    "importance": m.importance,
                    "created_at": iso(m.created),
                    "source": m.source,
                }
                if m.status:
                    row["status"] = m.status
                memories.append((m.created, ns.name, m.text, row, m))
    memories.sort(key=lambda r: r[:3])
    mem_rows = [r[3] for r in memories]
    line_of = {id(r[4]): n for n, r in enumerate(memories, start=1)}

    info = {
        "clusters": sum(e.kind == "cluster" for ns in NAMESPACES.values() for e in ns.entries),
        "contradictions": sum(e.kind == "contra" for ns in NAMESPACES.values() for e in ns.entries),
        "stale": sum(m.tag == "stale" for ns in NAMESPACES.values() for e in ns.entries for m in e.mems),
        "trivia": sum(m.tag == "trivia" for ns in NAMESPACES.values() for e in ns.entries for m in e.mems),
        "offtopic": sum(1 for q in queries if q.get("_offtopic")),
        "contra_by_ns": Counter(ns.name for ns in NAMESPACES.values() for e in ns.entries
                                if e.kind == "contra"),
        "clusters_by_ns": Counter(ns.name for ns in NAMESPACES.values() for e in ns.entries
                                  if e.kind == "cluster"),
        "non_english_contra": sum(
            1 for ns in NAMESPACES.values() for e in ns.entries
            if e.kind == "contra" and any(not m.text.isascii() and _lang(m.text) != "en" for m in e.mems)),
    }
    query_rows = [{"namespace": q["namespace"], "query": q["query"], "at": iso(q["at"])} for q in queries]
    truth = build_truth(line_of, queries)
    return mem_rows, query_rows, info, truth


TRUTH_NOTE = (
    "Answer key for the cases planted in demo_memories.jsonl and demo_queries.jsonl, written by "
    "generate_demo.py from what it planted (nothing here is inferred from the texts). Memories are "
    "referenced by their 1-based line number in demo_memories.jsonl: the lines carry no ids, so "
    "importing the file into a fresh, empty bank assigns id N to line N. Queries are referenced by "
    "their 1-based line number in demo_queries.jsonl. duplicate_clusters: paraphrases of one fact, "
    "lines ascending and texts in the same order. contradictions: an old statement superseded by a "
    "later new one (old_line was stored before new_line); category is the category of both sides; "
    "the generator does not classify the kind of contradiction, so no kind is given. stale: facts "
    "only true around the time they were stored. trivia: hand-written low-importance trivia. logs: "
    "slot-filled low-importance dated logs (cooking notes, long runs, flat viewings, mock-test "
    "scores, customer tickets), the other target of a forgetting pass. queries: relevant_lines are "
    "the memories the turn was written to recall, as of its 'at': the target memory and, when it "
    "belongs to a duplicate cluster, all of the cluster's paraphrases (some of them stored after the "
    "turn was asked); for a contradiction only the side that was current when it was asked (the old "
    "one for turns asked before the update). The same query text can therefore point at different "
    "memories at different times. relevant_lines is what was planted, not an exhaustive relevance "
    "judgement: other memories may be related too. Off-topic (general-knowledge) turns have "
    "off_topic true and no relevant lines. A few referenced memories carry status \"archived\" "
    "(soft-deleted) in demo_memories.jsonl."
)


def build_truth(line_of: dict[int, int], queries: list[dict]) -> dict:
    """The answer key: planted cases by line number (1-based) in the two JSONL files."""
    def line(m: Mem) -> int:
        return line_of[id(m)]

    clusters, contradictions = [], []
    tagged: dict[str, list[dict]] = {"stale": [], "trivia": [], "log": []}
    for ns in NAMESPACES.values():
        for e in ns.entries:
            if e.kind == "cluster":
                mems = sorted(e.mems, key=line)
                clusters.append({"namespace": ns.name, "lines": [line(m) for m in mems],
                                 "texts": [m.text for m in mems]})
            elif e.kind == "contra":
                old, new = e.mems
                contradictions.append({"namespace": ns.name, "old_line": line(old), "new_line": line(new),
                                       "old": old.text, "new": new.text, "category": old.category})
            for m in e.mems:
                if m.tag in tagged:
                    tagged[m.tag].append({"namespace": ns.name, "line": line(m), "text": m.text})
    clusters.sort(key=lambda c: c["lines"])
    contradictions.sort(key=lambda c: (c["old_line"], c["new_line"]))
    for rows in tagged.values():
        rows.sort(key=lambda r: r["line"])

    query_rows = []
    for n, q in enumerate(queries, start=1):
        if q.get("_offtopic"):
            relevant = []
        else:
            e, idx = q["_about"]
            relevant = sorted(line(m) for m in e.mems) if e.kind == "cluster" else [line(e.mems[idx])]
        query_rows.append({"line": n, "namespace": q["namespace"], "query": q["query"],
                           "relevant_lines": relevant, "off_topic": bool(q.get("_offtopic"))})

    counts = {"duplicate_clusters": len(clusters),
              "duplicate_cluster_memories": sum(len(c["lines"]) for c in clusters),
              "contradictions": len(contradictions),
              "stale": len(tagged["stale"]), "trivia": len(tagged["trivia"]), "logs": len(tagged["log"]),
              "queries": len(query_rows), "off_topic_queries": sum(r["off_topic"] for r in query_rows)}
    return {"note": TRUTH_NOTE, "counts": counts, "duplicate_clusters": clusters,
            "contradictions": contradictions, "stale": tagged["stale"], "trivia": tagged["trivia"],
            "logs": tagged["log"], "queries": query_rows}


_SV_HINTS = re.compile(r"\b(och|att|är|på|med|som|inte|har|vill|svenska|hon)\b", re.I)


def _lang(text: str) -> str:
    if re.search(r"[\u4e00-\u9fff]", text):
        return "zh"
    if _SV_HINTS.search(text) and re.search(r"[åäö]|\b(och|att|är|på|vill)\b", text, re.I):
        return "sv"
    return "en"


# ==========================================================================
# Checks and report
# ==========================================================================

PII = [re.compile(p) for p in (r"[\w.+-]+@[\w-]+\.\w", r"\+?\d[\d ()-]{7,}\d", r"https?://", r"www\.")]


def validate(mems: list[dict], queries: list[dict], info: dict, truth: dict) -> None:
    problems = []
    texts = Counter((m["namespace"], m["text"]) for m in mems)
    problems += [f"duplicate text: {k}" for k, v in texts.items() if v > 1]
    for m in mems:
        t = datetime.fromisoformat(m["created_at"].replace("Z", "+00:00"))
        if not PERIOD_START <= t <= PERIOD_END:
            problems.append(f"created_at out of range: {m}")
        if m["category"] not in CATEGORIES or m["kind"] not in KINDS.values():
            problems.append(f"bad category/kind: {m}")
        if not 0 <= m["importance"] <= 1 or round(m["importance"], 2) != m["importance"]:
            problems.append(f"bad importance: {m}")
        if any(p.search(m["text"]) for p in PII):
            problems.append(f"looks like a personal identifier: {m['text']}")
        if set(m) - {"text", "namespace", "kind", "category", "importance", "created_at", "source", "status"}:
            problems.append(f"unexpected field: {m}")
    ats = [q["at"] for q in queries]
    if ats != sorted(ats):
        problems.append("queries are not sorted by 'at'")
    for q in queries:
        t = datetime.fromisoformat(q["at"].replace("Z", "+00:00"))
        if not PERIOD_START <= t <= PERIOD_END:
            problems.append(f"query out of range: {q}")
    if len(mems) < 650:
        problems.append(f"only {len(mems)} memories")
    if len(queries) < 400:
        problems.append(f"only {len(queries)} queries")
    if info["clusters"] < 30:
        problems.append(f"only {info['clusters']} duplicate clusters")
    if info["contradictions"] < 25:
        problems.append(f"only {info['contradictions']} contradiction pairs")
    problems += check_truth(mems, queries, info, truth)
    if problems:
        raise SystemExit("generate_demo.py: checks failed:\n  " + "\n  ".join(problems[:40]))


def check_truth(mems: list[dict], queries: list[dict], info: dict, truth: dict) -> list[str]:
    """The answer key points at the right lines: texts and namespaces match, old before new,
    every query asked after the memory it was written for, off-topic turns recall nothing."""
    problems = []

    def mem(n: int, ns: str, text: str | None = None) -> dict | None:
        if not 1 <= n <= len(mems):
            problems.append(f"truth: memory line {n} out of range")
            return None
        row = mems[n - 1]
        if row["namespace"] != ns or (text is not None and row["text"] != text):
            problems.append(f"truth: memory line {n} is not {ns}/{text!r}")
        return row

    seen_dup: set[int] = set()
    for c in truth["duplicate_clusters"]:
        if not 2 <= len(c["lines"]) <= 4 or c["lines"] != sorted(c["lines"]) or seen_dup & set(c["lines"]):
            problems.append(f"truth: bad cluster {c['lines']}")
        seen_dup |= set(c["lines"])
        for n, t in zip(c["lines"], c["texts"], strict=True):
            mem(n, c["namespace"], t)
    for c in truth["contradictions"]:
        old, new = mem(c["old_line"], c["namespace"], c["old"]), mem(c["new_line"], c["namespace"], c["new"])
        if old and new and not old["created_at"] < new["created_at"]:
            problems.append(f"truth: contradiction {c['old_line']}/{c['new_line']} is not old before new")
    for key in ("stale", "trivia", "logs"):
        for r in truth[key]:
            mem(r["line"], r["namespace"], r["text"])
    if len(truth["queries"]) != len(queries):
        problems.append("truth: not one entry per query")
    for r, q in zip(truth["queries"], queries):
        if (r["namespace"], r["query"]) != (q["namespace"], q["query"]):
            problems.append(f"truth: query line {r['line']} does not match")
        if r["off_topic"] == bool(r["relevant_lines"]):
            problems.append(f"truth: query line {r['line']} off_topic/relevant_lines disagree")
        rows = [mem(n, q["namespace"]) for n in r["relevant_lines"]]
        if rows and not any(m and m["created_at"] < q["at"] for m in rows):
            problems.append(f"truth: query line {r['line']} is asked before every memory it is about")
    expected = {"duplicate_clusters": info["clusters"], "contradictions": info["contradictions"],
                "stale": info["stale"], "trivia": info["trivia"], "off_topic_queries": info["offtopic"]}
    for key, n in expected.items():
        if truth["counts"][key] != n:
            problems.append(f"truth: {key} = {truth['counts'][key]}, expected {n}")
    return problems


def report(mems: list[dict], queries: list[dict], info: dict, truth: dict) -> None:
    def show(title: str, counter: Counter, order=None) -> None:
        keys = order or sorted(counter)
        print(f"{title}: " + ", ".join(f"{k}={counter[k]}" for k in keys if counter[k]))

    print(f"memories: {len(mems)}  ->  {MEMORIES_PATH.name}")
    show("  per namespace", Counter(m["namespace"] for m in mems), list(NAMESPACES))
    show("  per category", Counter(m["category"] for m in mems), list(CATEGORIES))
    kinds = Counter(m["kind"] for m in mems)
    show("  per kind", kinds)
    print(f"    explicit share: {kinds['explicit'] / len(mems):.0%}")
    show("  per source", Counter(m["source"] for m in mems))
    show("  per status", Counter(m.get("status", "active") for m in mems))
    show("  per language", Counter(_lang(m["text"]) for m in mems))
    print("  per month:")
    per_month = Counter(m["created_at"][:7] for m in mems)
    q_month = Counter(q["at"][:7] for q in queries)
    for y, mo in MONTHS:
        k = f"{y}-{mo:02d}"
        print(f"    {k}  memories {per_month[k]:4d}  queries {q_month[k]:4d}")
    imps = sorted(m["importance"] for m in mems)
    print(f"  importance: min {imps[0]}, median {imps[len(imps) // 2]}, max {imps[-1]}; "
          f">=0.8: {sum(i >= 0.8 for i in imps)}, <0.2: {sum(i < 0.2 for i in imps)}")
    print(f"  duplicate clusters: {info['clusters']} "
          f"({', '.join(f'{k}={v}' for k, v in info['clusters_by_ns'].items())})")
    print(f"  contradiction pairs: {info['contradictions']} "
          f"({', '.join(f'{k}={v}' for k, v in info['contra_by_ns'].items())}; "
          f"{info['non_english_contra']} in Swedish/Chinese)")
    print(f"  stale facts: {info['stale']}, low-importance trivia: {info['trivia']}")
    print(f"queries: {len(queries)}  ->  {QUERIES_PATH.name}")
    show("  per namespace", Counter(q["namespace"] for q in queries), list(NAMESPACES))
    print(f"  off-topic / general knowledge: {info['offtopic']} ({info['offtopic'] / len(queries):.0%})")
    print(f"  distinct query texts: {len({(q['namespace'], q['query']) for q in queries})}")
    print(f"answer key  ->  {TRUTH_PATH.name}: " + ", ".join(f"{k}={v}" for k, v in truth["counts"].items()))


def dumps(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def main(argv: list[str]) -> int:
    mems, queries, info, truth = build()
    validate(mems, queries, info, truth)
    outputs = {MEMORIES_PATH: dumps(mems), QUERIES_PATH: dumps(queries),
               TRUTH_PATH: json.dumps(truth, ensure_ascii=False, indent=1) + "\n"}
    if "--check" in argv:
        stale = [p.name for p, text in outputs.items()
                 if not p.exists() or p.read_text(encoding="utf-8") != text]
        print("demo files are up to date" if not stale
              else "demo files differ from the generator output: " + ", ".join(stale))
        return 0 if not stale else 1
    for path, text in outputs.items():
        path.write_text(text, encoding="utf-8")
    report(mems, queries, info, truth)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
