"""Dates in the query: the periods a query names ("in May 2023", "last week", relative to ``now``;
in English, Swedish and Chinese) lift memories created in them (``date_weight``), shown as their
own component and part of the score; a query naming no period ranks as before. Recall stays
exact and the tuner agrees."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from memory_core import ScoringParams
from memory_core.language.periods import query_periods
from memory_core.index.scoring import DATE_AFTER_DAYS, DATE_SCALE_DAYS, DAY, date_lift, date_match, parts


@pytest.fixture(scope="session")
def embedder():
    """all-MiniLM-L6-v2 rather than the default model: the date lifts these tests show were measured on its cosines."""
    from memory_core.embedding.embedder import MINILM_MODEL, get_embedder

    return get_embedder(MINILM_MODEL)

UTC = timezone.utc
NOW = datetime(2023, 11, 1, 12, tzinfo=UTC)


def _day(y: int, m: int, d: int) -> float:
    return datetime(y, m, d, tzinfo=UTC).timestamp()


@pytest.mark.parametrize("text, want", [
    ("What did Audrey sign up for in May 2023?", [(_day(2023, 5, 1), _day(2023, 6, 1))]),
    ("What did she set up on June 26, 2023?", [(_day(2023, 6, 26), _day(2023, 6, 27))]),
    ("What happened on the 3rd of October, 2022?", [(_day(2022, 10, 3), _day(2022, 10, 4))]),
    ("Which career highs did John reach in 2022?", [(_day(2022, 1, 1), _day(2023, 1, 1))]),
    # A month without a year: the latest one not after now (asked on 1 November 2023).
    ("When did Melanie go camping in July?", [(_day(2023, 7, 1), _day(2023, 8, 1))]),
    ("Any plans for December?", [(_day(2022, 12, 1), _day(2023, 1, 1))]),
    # A month of last year or this year; "last <month>" is the latest one before this month.
    ("Where did we go in July last year?", [(_day(2022, 7, 1), _day(2022, 8, 1))]),
    ("What happened on 4 July of last year?", [(_day(2022, 7, 4), _day(2022, 7, 5))]),
    ("What did we do in March this year?", [(_day(2023, 3, 1), _day(2023, 4, 1))]),
    ("What did we do last May?", [(_day(2023, 5, 1), _day(2023, 6, 1))]),
    ("How was last November?", [(_day(2022, 11, 1), _day(2022, 12, 1))]),
    ("Plans for this December?", [(_day(2023, 12, 1), _day(2024, 1, 1))]),
    ("This may help you", []),
    ("The last Mars rover", []),
    # Relative to now: yesterday, last week (Monday to Monday), last month, this year.
    ("What did we talk about yesterday?", [(_day(2023, 10, 31), _day(2023, 11, 1))]),
    ("What did I decide last week?", [(_day(2023, 10, 23), _day(2023, 10, 30))]),
    ("How was last weekend?", [(_day(2023, 10, 28), _day(2023, 10, 30))]),
    ("Anything new since last month?", [(_day(2023, 10, 1), _day(2023, 11, 1))]),
    ("My goals this year", [(_day(2023, 1, 1), _day(2024, 1, 1))]),
    ("In May or in June 2023?", [(_day(2023, 5, 1), _day(2023, 6, 1)), (_day(2023, 6, 1), _day(2023, 7, 1))]),
    # A day of the week (now is Wednesday 1 November): the latest one before today.
    ("What did I do last Friday?", [(_day(2023, 10, 27), _day(2023, 10, 28))]),
    ("Who called last Wednesday?", [(_day(2023, 10, 25), _day(2023, 10, 26))]),
    ("What was decided this past Monday?", [(_day(2023, 10, 30), _day(2023, 10, 31))]),
    ("What did we talk about the day before yesterday?", [(_day(2023, 10, 30), _day(2023, 10, 31))]),
    # ... counted back from the day the question names, if it names one.
    ("What did Joanna finish last Friday on 23 January, 2022?",
     [(_day(2022, 1, 21), _day(2022, 1, 22)), (_day(2022, 1, 23), _day(2022, 1, 24))]),
    # Days and weeks ago: that day, that Monday-to-Sunday week (months and years ago date what a
    # memory tells of, not when it was said: no period).
    ("What did we discuss 3 days ago?", [(_day(2023, 10, 29), _day(2023, 10, 30))]),
    ("What did I say two weeks ago?", [(_day(2023, 10, 16), _day(2023, 10, 23))]),
    ("Who did I meet a couple of days ago?", [(_day(2023, 10, 30), _day(2023, 10, 31))]),
    ("Where did Caroline move from 4 years ago?", []),
    ("I go swimming on Fridays", []),
    ("See you Friday!", []),
    # No period: "may" the verb, "today" (a greeting), numbers that are not years.
    ("May I ask what you recommend?", []),
    ("What I may have said about it", []),
    ("Hi there, how are you today?", []),
    ("I ran 3000 metres and 12 laps", []),
    ("Is there life on Mars?", []),
    # ISO dates, a timestamp's day included.
    ("What happened on 2023-06-26?", [(_day(2023, 6, 26), _day(2023, 6, 27))]),
    ("Notes from 2023-07", [(_day(2023, 7, 1), _day(2023, 8, 1))]),
    ("Logged at 2023-06-26T09:30:00Z", [(_day(2023, 6, 26), _day(2023, 6, 27))]),
    # Swedish: month names in the same shapes, and the relative periods.
    ("Vad hände den 26 juni 2023?", [(_day(2023, 6, 26), _day(2023, 6, 27))]),
    ("Vart reste vi i juli?", [(_day(2023, 7, 1), _day(2023, 8, 1))]),
    ("Vad bestämde vi i mars?", [(_day(2023, 3, 1), _day(2023, 4, 1))]),
    ("Vad åt jag i går?", [(_day(2023, 10, 31), _day(2023, 11, 1))]),
    ("Vad gjorde jag igår?", [(_day(2023, 10, 31), _day(2023, 11, 1))]),
    ("Vad bestämde jag förra veckan?", [(_day(2023, 10, 23), _day(2023, 10, 30))]),
    ("Hur var förra helgen?", [(_day(2023, 10, 28), _day(2023, 10, 30))]),
    ("Något nytt sedan förra månaden?", [(_day(2023, 10, 1), _day(2023, 11, 1))]),
    ("Mina mål i år", [(_day(2023, 1, 1), _day(2024, 1, 1))]),
    ("Vart flyttade hon i fjol?", [(_day(2022, 1, 1), _day(2023, 1, 1))]),
    ("Vart reste vi i juli förra året?", [(_day(2022, 7, 1), _day(2022, 8, 1))]),
    ("Vad hände den 4 juli i fjol?", [(_day(2022, 7, 4), _day(2022, 7, 5))]),
    ("Vad gjorde vi i mars i år?", [(_day(2023, 3, 1), _day(2023, 4, 1))]),
    ("Minns du förra årets december?", [(_day(2022, 12, 1), _day(2023, 1, 1))]),
    ("Vad gjorde jag i fredags?", [(_day(2023, 10, 27), _day(2023, 10, 28))]),
    ("Vem ringde i onsdags?", [(_day(2023, 10, 25), _day(2023, 10, 26))]),
    ("Vad åt vi i förrgår?", [(_day(2023, 10, 30), _day(2023, 10, 31))]),
    ("Vad sa jag för tre dagar sedan?", [(_day(2023, 10, 29), _day(2023, 10, 30))]),
    ("Vem ringde för en vecka sedan?", [(_day(2023, 10, 23), _day(2023, 10, 30))]),
    ("Vi ses på fredag", []),
    ("Hon går i gården varje dag", []),
    # Chinese: year, month and day with 年月日/号, months in Chinese numerals, relative periods.
    ("2023年6月26日发生了什么？", [(_day(2023, 6, 26), _day(2023, 6, 27))]),
    ("报名了 7 月 11 号的考试", [(_day(2023, 7, 11), _day(2023, 7, 12))]),
    ("我们七月去了哪里？", [(_day(2023, 7, 1), _day(2023, 8, 1))]),
    ("十二月有什么计划？", [(_day(2022, 12, 1), _day(2023, 1, 1))]),
    ("我在2022年搬家了吗？", [(_day(2022, 1, 1), _day(2023, 1, 1))]),
    ("昨天我们聊了什么？", [(_day(2023, 10, 31), _day(2023, 11, 1))]),
    ("我上周决定了什么？", [(_day(2023, 10, 23), _day(2023, 10, 30))]),
    ("上周末过得怎么样？", [(_day(2023, 10, 28), _day(2023, 10, 30))]),
    ("上个月有什么新消息？", [(_day(2023, 10, 1), _day(2023, 11, 1))]),
    ("今年的目标", [(_day(2023, 1, 1), _day(2024, 1, 1))]),
    ("去年她搬到哪里了？", [(_day(2022, 1, 1), _day(2023, 1, 1))]),
    ("去年七月我们去了哪里？", [(_day(2022, 7, 1), _day(2022, 8, 1))]),
    ("今年3月5日的会议", [(_day(2023, 3, 5), _day(2023, 3, 6))]),
    ("前年十二月", [(_day(2021, 12, 1), _day(2022, 1, 1))]),
    ("三个月前的事", []),
    ("三天前说了什么？", [(_day(2023, 10, 29), _day(2023, 10, 30))]),
    ("两个星期前见了谁？", [(_day(2023, 10, 16), _day(2023, 10, 23))]),
    ("十二天前", [(_day(2023, 10, 20), _day(2023, 10, 21))]),
    ("我上周五做了什么？", [(_day(2023, 10, 27), _day(2023, 10, 28))]),
    ("上星期日去了哪里？", [(_day(2023, 10, 29), _day(2023, 10, 30))]),
    ("这周一开了什么会？", [(_day(2023, 10, 30), _day(2023, 10, 31))]),
    ("前天吃了什么？", [(_day(2023, 10, 30), _day(2023, 10, 31))]),
    ("这周五有什么安排？", []),  # still to come: not "this week" either
    ("每个星期五都去游泳", []),
])
def test_the_periods_a_query_names(text, want):
    assert list(query_periods(text, NOW)) == want


def test_relative_periods_follow_now():
    """Time is a parameter: "last month" is October asked in November, and May asked in June."""
    assert query_periods("last month", NOW) == ((_day(2023, 10, 1), _day(2023, 11, 1)),)
    assert query_periods("last month", datetime(2024, 6, 3, tzinfo=UTC)) == ((_day(2024, 5, 1), _day(2024, 6, 1)),)
    assert query_periods("last month", datetime(2024, 1, 15, tzinfo=UTC)) == ((_day(2023, 12, 1), _day(2024, 1, 1)),)


def test_last_friday_is_the_latest_friday_before_today():
    """On a Friday, "last Friday" is a week ago; on a Saturday, yesterday."""
    assert query_periods("last Friday", datetime(2023, 11, 3, 9, tzinfo=UTC)) == ((_day(2023, 10, 27), _day(2023, 10, 28)),)
    assert query_periods("i fredags", datetime(2023, 11, 4, 9, tzinfo=UTC)) == ((_day(2023, 11, 3), _day(2023, 11, 4)),)
    assert query_periods("上周五", datetime(2023, 11, 4, 9, tzinfo=UTC)) == ((_day(2023, 10, 27), _day(2023, 10, 28)),)


def test_the_match_is_full_inside_a_period_and_a_week_after_and_decays_outside():
    start, end = _day(2023, 5, 1), _day(2023, 6, 1)
    created = np.array([start, end - 1, end + DATE_AFTER_DAYS * DAY, start - 30 * DAY,
                        end + (DATE_AFTER_DAYS + 60) * DAY])
    m = date_match(created, [(start, end)])
    assert m[:3] == pytest.approx([1.0, 1.0, 1.0])
    assert m[3] == pytest.approx(np.exp(-30 / DATE_SCALE_DAYS))
    assert m[4] == pytest.approx(np.exp(-60 / DATE_SCALE_DAYS))
    assert date_match(created, ()) is None


def test_the_lift_stays_in_range_and_keeps_the_order_of_relevance():
    """r + w·m·(1 − r) is in [0, 1] and non-decreasing in r for any weight and match: what exact
    recall's bounds rely on."""
    rel = np.linspace(0, 1, 101)
    for w in (0.0, 0.3, 1.0):
        for m in (0.0, 0.4, 1.0):
            lifted = rel + date_lift(ScoringParams(date_weight=w), rel, np.full_like(rel, m))
            assert np.all(lifted >= rel - 1e-12) and np.all(lifted <= 1 + 1e-12)
            assert np.all(np.diff(lifted) >= -1e-12)


WORKSHOPS = [
    (datetime(2023, 5, 11, 15, tzinfo=UTC), "Audrey: I signed up for a dog training workshop at the pet store."),
    (datetime(2023, 8, 20, 15, tzinfo=UTC), "Audrey: I signed up for a pottery workshop downtown."),
    (datetime(2023, 10, 2, 15, tzinfo=UTC), "Audrey: I signed up for a photography workshop with friends."),
]
QUESTION = "What workshop did Audrey sign up for in May 2023?"


def _workshops(bank) -> list[int]:
    return bank.add_many([{"text": t, "namespace": "audrey", "created_at": at} for at, t in WORKSHOPS])


def test_a_question_about_may_finds_what_was_said_in_may(bank):
    """Three workshops, one word apart: with the default, the one from May comes first, lifted by
    the date (its own component and part of the score); without dates the newest wins."""
    ids = _workshops(bank)
    p = ScoringParams(threshold=0.0)
    hits = bank.recall(QUESTION, namespace="audrey", params=p, now=NOW, record=False)
    assert hits[0].memory.id == ids[0]
    assert hits[0].components["dates"] > 0.05
    assert all(h.components["dates"] < hits[0].components["dates"] for h in hits[1:])
    shares = parts(p, hits[0].components)
    assert shares["dates"] > 0 and sum(shares.values()) == pytest.approx(hits[0].score)
    plain = bank.recall(QUESTION, namespace="audrey", params=p.replace(date_weight=0.0), now=NOW, record=False)
    assert plain[0].memory.id != ids[0]
    assert all(h.components["dates"] == 0 for h in plain)


def test_a_query_naming_no_period_ranks_as_without_dates(bank):
    _workshops(bank)
    p = ScoringParams(threshold=0.0)
    q = "What workshop did Audrey sign up for?"
    a = bank.recall(q, namespace="audrey", params=p, now=NOW, record=False)
    b = bank.recall(q, namespace="audrey", params=p.replace(date_weight=0.0), now=NOW, record=False)
    assert [(h.memory.id, h.score) for h in a] == [(h.memory.id, h.score) for h in b]
    assert all(h.components["dates"] == 0 for h in a)


def test_last_week_depends_on_now(bank):
    """The same question asked on two days: "last week" is the week before each."""
    ids = _workshops(bank)
    q = "Which workshop did I sign up for last week?"
    p = ScoringParams(threshold=0.0)
    in_may = bank.recall(q, namespace="audrey", params=p, now=datetime(2023, 5, 17, tzinfo=UTC), record=False)
    in_aug = bank.recall(q, namespace="audrey", params=p, now=datetime(2023, 8, 23, tzinfo=UTC), record=False)
    assert in_may[0].memory.id == ids[0]
    assert in_aug[0].memory.id == ids[1]


@pytest.mark.parametrize("question, now, which", [
    ("Which workshop did I sign up for last Thursday?", datetime(2023, 5, 17, tzinfo=UTC), 0),  # a Wednesday
    ("Vilken kurs anmälde jag mig till i söndags?", datetime(2023, 8, 23, tzinfo=UTC), 1),
    ("我上周一报名了什么课程？", datetime(2023, 10, 9, tzinfo=UTC), 2),
    ("Which workshop did I sign up for 6 days ago?", datetime(2023, 5, 17, tzinfo=UTC), 0),
    ("Vilken kurs anmälde jag mig till för tre dagar sedan?", datetime(2023, 8, 23, tzinfo=UTC), 1),
    ("我一周前报名了什么课程？", datetime(2023, 10, 9, tzinfo=UTC), 2),
])
def test_a_day_of_the_week_or_days_ago_finds_what_was_said_then(bank, question, now, which):
    """Three workshops on a Thursday, a Sunday and a Monday: a question naming the day of the
    week, or how many days or weeks ago, finds that day's, in each language."""
    ids = _workshops(bank)
    hits = bank.recall(question, namespace="audrey", params=bank.preset("default").replace(threshold=0.0, min_relevance=0.0),
                       now=now, record=False)
    assert hits[0].memory.id == ids[which] and hits[0].components["dates"] > 0


COURSES = {
    "sv": ("Jag anmälde mig till en kurs i {}.", ("hundträning", "keramik", "fotografi"),
           "Vilken kurs anmälde jag mig till förra veckan?", "Vilken kurs anmälde jag mig till i maj 2023?"),
    "zh": ("我报名了一个{}课程。", ("训狗", "陶艺", "摄影"), "我上周报名了什么课程？", "我2023年5月报名了什么课程？"),
}


@pytest.mark.parametrize("language", sorted(COURSES))
def test_a_question_in_swedish_or_chinese_finds_what_was_said_then(bank, language):
    """The same three courses, asked about in the memories' own language: "last week" is the
    week before each day it is asked, and a named month finds that month's."""
    template, courses, last_week, in_may = COURSES[language]
    ids = bank.add_many([{"text": template.format(c), "namespace": language, "created_at": at}
                         for (at, _), c in zip(WORKSHOPS, courses)])
    p = ScoringParams(threshold=0.0)
    for now, want in ((datetime(2023, 5, 17, tzinfo=UTC), ids[0]), (datetime(2023, 8, 23, tzinfo=UTC), ids[1]),
                      (datetime(2023, 10, 9, tzinfo=UTC), ids[2])):
        hits = bank.recall(last_week, namespace=language, params=p, now=now, record=False)
        assert hits[0].memory.id == want and hits[0].components["dates"] > 0
    hits = bank.recall(in_may, namespace=language, params=p, now=NOW, record=False)
    assert hits[0].memory.id == ids[0]
    plain = bank.recall(in_may, namespace=language, params=p.replace(date_weight=0.0), now=NOW, record=False)
    assert all(h.components["dates"] == 0 for h in plain)


def test_the_tuner_ranks_with_dates_as_recall_does(bank):
    """Candidates.select (the Tune page's and the tuner's re-ranking) returns what recall returns,
    for queries with and without periods, at any date weight."""
    _workshops(bank)
    bank.add_many([{"text": f"Audrey: note {i} about the dogs and the park", "namespace": "audrey",
                    "created_at": datetime(2023, 6, 1, tzinfo=UTC) + timedelta(days=9 * i)} for i in range(12)])
    queries = [QUESTION, "What did Audrey do last month?", "dogs in the park", "pottery in August"]
    cand = bank.candidates(queries, namespace="audrey", now=NOW)
    for w in (0.0, 0.3, 1.0):
        for nw in (0.0, 0.3):
            p = ScoringParams(date_weight=w, neighbour_weight=nw, k=8, threshold=0.0)
            want = [[h.memory.id for h in bank.recall(q, namespace="audrey", params=p, now=NOW, record=False)]
                    for q in queries]
            assert cand.select(p) == want
