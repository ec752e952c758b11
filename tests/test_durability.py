"""Durability: each memory is durable or transient, read from its text, category and kind when it
is written (English, Swedish, Chinese), stored, settable on add and update through the library, the
CLI, REST and MCP, carried by export/import and the saved index, and read for an existing bank by
its migration. Bad values are refused and change nothing."""

from __future__ import annotations

import io
import json
from datetime import datetime, timezone

import duckdb
import pytest
from click.testing import CliRunner

from conftest import downgrade
from memory_core import DURABILITIES, MemoryBank, ValidationError
from memory_core.language.durability import infer, named_date

WRITTEN = datetime(2026, 3, 4, 9, 0, tzinfo=timezone.utc)  # a Wednesday


@pytest.mark.parametrize("text, category, expected, horizon", [
    # A time of the day, the week or a date: transient, for that long.
    ("Has a cold today.", "other", "transient", "day"),
    ("Is stuck on a failing build right now.", "difficulty", "transient", "day"),
    ("Är ledig i morgon.", "other", "transient", "day"),
    ("今晚要加班。", "other", "transient", "day"),
    ("Has a dentist appointment next Wednesday.", "other", "transient", "week"),
    ("Har tandläkartid nästa onsdag.", "other", "transient", "week"),
    ("下周三要去看牙医。", "other", "transient", "week"),
    ("Is on call this week.", "fact", "transient", "week"),
    ("Flies to Oslo on 20 March.", "fact", "transient", "date"),
    ("Flyger till Oslo den 20 mars.", "fact", "transient", "date"),
    ("3月20日飞奥斯陆。", "fact", "transient", "date"),
    # A log of the chat, small talk, an event, a state of the moment.
    ("Asked how to squash commits.", "other", "transient", "age"),
    ("Frågade hur man skriver en join.", "other", "transient", "age"),
    ("问了怎么写正则表达式。", "other", "transient", "age"),
    ("Väntar på svar från banken.", "other", "transient", "day"),
    ("Got a speeding ticket yesterday.", "other", "transient", "age"),
    # Durable: who someone is, what they prefer, want, find hard or decided, even with a time in it.
    ("Moved to Leipzig in 2019.", "other", "durable", None),
    ("Allergic to shellfish.", "fact", "durable", None),
    ("Är vegan sedan 2017.", "other", "durable", None),
    ("老家在湖南。", "other", "durable", None),
    ("Decided yesterday to use Postgres for billing.", "decision", "durable", None),
    ("Plays football every Thursday.", "other", "durable", None),
    ("Tränar tre gånger i veckan.", "other", "durable", None),
    ("每周六去游泳。", "other", "durable", None),
    ("From today on eats vegan.", "preference", "durable", None),
    ("Äter inget kött från och med idag.", "preference", "durable", None),
    ("从今天起不喝咖啡。", "preference", "durable", None),
])
def test_the_rule_reads_text_and_category_in_three_languages(text, category, expected, horizon):
    reading = infer(text, category)
    assert (reading.durability, reading.horizon) == (expected, horizon), reading
    assert reading.reason


@pytest.mark.parametrize("text, category, expected, horizon", [
    # A day that comes back each year is who someone is, not a thing scheduled.
    ("Birthday is on 2 August.", "other", "durable", None),
    ("Fyller år den 2 augusti.", "other", "durable", None),
    ("生日是8月2日。", "other", "durable", None),
    # A standing fact with a date or a weekday in it: a habit, not one day.
    ("The support desk closes on 24 December every year.", "fact", "durable", None),
    ("Supporten stänger den 24 december varje år.", "fact", "durable", None),
    ("客服每年12月24日休息。", "fact", "durable", None),
    ("Saturday mornings are for the farmers' market.", "other", "durable", None),
    ("Lördagsmorgnarna är till för bondemarknaden.", "other", "durable", None),
    ("周日的长距离散步是她一周里最喜欢的时光。", "other", "durable", None),
    ("周四下午是读书会时间。", "other", "durable", None),
    ("Usually asks for a recipe right after work.", "other", "durable", None),
    ("Brukar träna efter jobbet.", "other", "durable", None),
    ("通常下班后去游泳。", "other", "durable", None),
    # A weekday named as one day is still a week's thing.
    ("Has a physio appointment on Friday.", "other", "transient", "week"),
    ("Har en tid hos sjukgymnasten på fredag.", "other", "transient", "week"),
    ("周五约了理疗。", "other", "transient", "week"),
    # A support ticket's log about a customer.
    ("A customer from Brightwater Dental reported that invoices show the wrong VAT rate.", "other", "transient", "age"),
    ("Ärende 3312: Bageri Norrsken kan inte logga in.", "other", "transient", "age"),
    ("客户明辉牙科反馈发票上的增值税率不对。", "other", "transient", "age"),
    # A one-off event or state, without a time word, whatever its category.
    ("The broken dishwasher was repaired.", "fact", "transient", "age"),
    ("Diskmaskinen blev lagad.", "fact", "transient", "age"),
    ("洗碗机修好了。", "fact", "transient", "age"),
    ("Waiting for the new passport to arrive.", "other", "transient", "day"),
    ("Has the flu and is staying home.", "difficulty", "transient", "day"),
    ("Är förkyld och stannar hemma.", "difficulty", "transient", "day"),
    ("得了流感，在家休息。", "difficulty", "transient", "day"),
    ("Is staying with her sister over Easter.", "fact", "transient", "age"),
    ("Hälsar på sin syster över påsken.", "fact", "transient", "age"),
    ("春节去姐姐家住几天。", "fact", "transient", "age"),
    # ...but what lasts, or is filed as lasting, stays.
    ("Is learning Korean at the moment.", "other", "durable", None),
    ("Lär sig koreanska just nu.", "other", "durable", None),
    ("象棋等级分从去年秋天起一直卡在1500。", "difficulty", "durable", None),
    ("Bought an e-bike instead of a second car.", "decision", "durable", None),
    ("Köpte en elcykel i stället för en bil till.", "decision", "durable", None),
    ("买了电动自行车，不再买第二辆车。", "decision", "durable", None),
    ("Had knee surgery in 2021 and avoids jumping.", "other", "durable", None),
])
def test_the_cases_a_time_word_rule_missed(text, category, expected, horizon):
    reading = infer(text, category)
    assert (reading.durability, reading.horizon) == (expected, horizon), reading


@pytest.mark.parametrize("milestone, event", [
    ("Ran his first half marathon in Oslo.", "Ran 8 km along the river."),
    ("Bought a house outside Uppsala.", "Bought a new kettle."),
    ("Got promoted to senior designer.", "Got a new phone."),
    ("Spelade sin första konsert som cellist.", "Spelade padel med kollegorna."),
    ("Köpte ett hus utanför Uppsala.", "Köpte en ny vattenkokare."),
    ("Fick fast anställning som lärare.", "Fick en ny telefon."),
    ("买了一套郊区的房子。", "买了一个新水壶。"),
])
def test_a_milestone_told_as_an_event_lasts_where_a_one_off_event_does_not(milestone, event):
    """Someone's own first of something, a home bought, a job gained say who they are: an event verb
    does not make them a log, while the same verb on a one-off event still does."""
    reading = infer(milestone, "fact")
    assert reading.durability == "durable" and "milestone" in reading.reason, reading
    assert infer(event, "fact").durability == "transient"


@pytest.mark.parametrize("lasting, one_off, cue", [
    ("Bought a rug for the new apartment.", "Bought a new rug.", "milestone"),
    ("Ordered a bed for the new puppy.", "Ordered a new phone case.", "milestone"),
    ("Köpte en matta till nya lägenheten.", "Köpte en ny matta.", "milestone"),
    ("给新公寓买了一块地毯。", "买了一块新地毯。", "milestone"),
    ("Celebrated Hanukkah with her grandparents.", "Celebrated Hanukkah with her grandparents last night.", "tradition"),
    ("Baked lussekatter for Lucia.", "Baking lussekatter for Christmas.", "tradition"),
    ("Firade midsommar på Gotland med vännerna.", "Firade midsommar på Gotland med vännerna igår.", "tradition"),
    ("Åt semlor på fettisdagen.", "Fick ett julkort från banken.", "tradition"),
    ("Lagade mat till nationaldagen.", "Lagade middagen till grannarna.", "tradition"),
    ("和奶奶一起过了端午节。", "昨晚和奶奶一起过了端午节。", "tradition"),
    ("冬至和家人一起包了饺子。", "国庆假期去云南。", "tradition"),
])
def test_a_life_change_or_a_tradition_told_as_an_event_lasts_where_its_one_off_twin_does_not(lasting, one_off, cue):
    """A thing done for a new home, job, pet or baby says who someone is now, and a yearly holiday
    celebrated with no bounded time tells a tradition: both last, at a low rating filed as other
    too. A new thing bought, the same holiday with a past day, a plan for a holiday or a card
    received on one stays transient."""
    reading = infer(lasting, "other", importance=0.2)
    assert reading.durability == "durable" and cue in reading.reason, reading
    assert infer(one_off, "other", importance=0.2).durability == "transient"


@pytest.mark.parametrize("small_talk, lasting", [
    ("The new café downstairs sells decent croissants.", "Thinks open-plan offices are overrated."),
    ("Nya fiket på hörnet har bra croissanter.", "Tycker att öppna kontorslandskap är överskattade."),
    ("楼下新开的咖啡店可颂还不错。", "觉得开放式办公室被高估了。"),
])
def test_a_low_rated_memory_filed_as_other_is_small_talk_unless_it_says_it_lasts(small_talk, lasting):
    reading = infer(small_talk, "other", importance=0.1)
    assert (reading.durability, reading.horizon) == ("transient", "age") and "small talk" in reading.reason
    # At the default importance, or filed under a category, the writer has not called it small talk.
    assert infer(small_talk, "other").durability == "durable"
    assert infer(small_talk, "other", importance=0.5).durability == "durable"
    assert infer(small_talk, "fact", importance=0.1).durability == "durable"
    # An opinion (or a habit, a plan, who someone is) lasts however low it is rated.
    assert infer(lasting, "other", importance=0.1).durability == "durable"


def test_the_writer_reads_importance_on_add(bank: MemoryBank):
    low = bank.add("The new café downstairs sells decent croissants.", namespace="a", importance=0.1)
    default = bank.add("The bakery on the corner sells decent croissants.", namespace="a")
    assert (bank.get(low).durability, bank.get(default).durability) == ("transient", "durable")


def test_a_past_day_is_an_event_unless_filed_under_a_lasting_category():
    assert infer("Went climbing yesterday", "other").durability == "transient"
    assert infer("Switched to decaf yesterday", "preference").durability == "durable"


def test_traditional_chinese_reads_as_simplified():
    assert infer("今天有點感冒。").durability == "transient"
    assert infer("從今天起不再喝含糖飲料。").durability == "durable"


def test_named_dates_are_the_last_day_spoken_of():
    assert named_date("Flies to Tokyo on 20 March", WRITTEN) == WRITTEN.replace(month=3, day=20, hour=0)
    assert named_date("Parents visit from 12 to 15 March", WRITTEN).day == 15
    assert named_date("Föräldrarna hälsar på 12–15 mars", WRITTEN).day == 15
    assert named_date("父母3月12日到15日来玩", WRITTEN).day == 15
    assert named_date("Has an exam on 10 January", WRITTEN.replace(month=6)).year == 2027  # well past: next year's
    assert named_date("Had an exam on 10 February", WRITTEN).year == 2026  # just past: this year's
    assert named_date("Has a cold today", WRITTEN) is None


def test_a_new_memory_gets_its_durability_read_or_given(bank: MemoryBank):
    cold = bank.add("Has a cold today.", namespace="a")
    peanuts = bank.add("Allergic to peanuts.", namespace="a")
    given = bank.add("Lives in Uppsala.", namespace="a", durability="transient")
    many = bank.add_many([{"text": "Frågade om vädret.", "namespace": "a"},
                          {"text": "Bor i Malmö.", "namespace": "a", "durability": "transient"}])
    assert [bank.get(i).durability for i in (cold, peanuts, given, *many)] == [
        "transient", "durable", "transient", "transient", "transient"]
    assert bank.get(cold).to_dict()["durability"] == "transient"
    assert set(DURABILITIES) == {"durable", "transient"}


def test_update_sets_it_and_bad_values_change_nothing(bank: MemoryBank):
    mid = bank.add("Has a cold today.", namespace="a")
    assert bank.update(mid, durability="durable").durability == "durable"
    events = len(bank.history(mid))
    for bad in ("forever", "", None, 1, True):
        with pytest.raises(ValidationError, match="durability"):
            bank.update(mid, durability=bad)
        with pytest.raises(ValidationError, match="durability"):
            bank.add("Another memory", namespace="a", durability=bad if bad is not None else "x")
    assert bank.get(mid).durability == "durable" and len(bank.history(mid)) == events
    assert bank.count(namespace="a") == 1
    # Undoing the change puts the former durability back.
    last = bank.history(mid)[-1]
    assert bank.undo(last.id).durability == "transient"


def test_recall_and_a_reopened_index_carry_it(tmp_path, embedder):
    path = tmp_path / "bank.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        mid = bank.add("Has a cold today.", namespace="a")
        assert bank.recall("cold", namespace="a", threshold=0)[0].memory.durability == "transient"
        bank.update(mid, durability="durable")
        assert bank.recall("cold", namespace="a", threshold=0)[0].memory.durability == "durable"
    with MemoryBank.open(path, embedder=embedder) as bank:  # the saved index
        assert bank.recall("cold", namespace="a", threshold=0)[0].memory.durability == "durable"


def test_export_and_import_carry_it(bank: MemoryBank, tmp_path, embedder):
    a = bank.add("Has a cold today.", namespace="a")
    b = bank.add("Has a cold today, still.", namespace="a", durability="durable")
    out = io.StringIO()
    bank.export_jsonl(out)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert {r["id"]: r["durability"] for r in rows} == {a: "transient", b: "durable"}
    with MemoryBank.open(tmp_path / "copy.duckdb", embedder=embedder) as copy:
        copy.import_jsonl(io.StringIO(out.getvalue()))
        assert {m.id: m.durability for m in copy.memories("a")} == {a: "transient", b: "durable"}
        bad = json.dumps({"text": "x", "namespace": "a", "durability": "sometimes"})
        with pytest.raises(ValidationError, match="durability"):
            copy.import_jsonl(io.StringIO(bad + "\n"))
        assert copy.count(namespace="a") == 2


def test_an_existing_bank_is_read_by_the_migration(tmp_path, embedder):
    path = tmp_path / "old.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        ids = bank.add_many([{"text": t, "namespace": "a"} for t in
                             ("Has a cold today.", "Allergic to peanuts.", "今天有点感冒。", "Bor i Malmö.")])
    downgrade(path, 10)
    con = duckdb.connect(str(path))
    assert "durability" not in [r[0] for r in con.execute("DESCRIBE memories").fetchall()]
    con.close()
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert [bank.get(i).durability for i in ids] == ["transient", "durable", "transient", "durable"]
        assert bank.recall("cold", namespace="a", threshold=0)[0].memory.durability == "transient"


def test_a_merge_lasts_when_a_member_does(bank: MemoryBank):
    a = bank.add("Prefers dark mode", namespace="a", detect_conflicts=False)
    b = bank.add("Prefers dark mode today", namespace="a", detect_conflicts=False)
    assert bank.get(b).durability == "transient"
    merged = bank.merge([a, b], "Prefers dark mode")
    assert bank.get(merged.merged_id).durability == "durable"


def test_cli_sets_and_shows_it(tmp_path):
    from memory_core.cli import cli

    path = str(tmp_path / "cli.duckdb")
    run = lambda *args: CliRunner().invoke(cli, ["--bank", path, *args])  # noqa: E731
    added = run("add", "Lives in Lund", "-n", "a", "--durability", "transient")
    assert added.exit_code == 0, added.output
    mid = int(added.output.strip())
    shown = run("show", str(mid), "--json")
    assert json.loads(shown.output)["memory"]["durability"] == "transient"
    changed = run("set-durability", str(mid), "durable")
    assert changed.exit_code == 0 and "durable" in changed.output
    refused = run("set-durability", str(mid), "sometimes")
    assert refused.exit_code != 0
    assert json.loads(run("show", str(mid), "--json").output)["memory"]["durability"] == "durable"


def test_rest_and_mcp_take_it(served):
    with served.client(served.tokens["alice"]) as c:
        read = c.post("/v1/memories", json={"text": "Has a cold today", "namespace": "alice"}).json()
        given = c.post("/v1/memories", json={"text": "Lives in Lund", "durability": "transient"}).json()
        assert read["durability"] == "transient" and given["durability"] == "transient"
        changed = c.patch(f"/v1/memories/{given['id']}", json={"durability": "durable"})
        assert changed.status_code == 200 and changed.json()["durability"] == "durable"
        bad = c.patch(f"/v1/memories/{given['id']}", json={"durability": "sometimes"})
        assert bad.status_code == 400 and "durability" in bad.text
        assert c.get(f"/v1/memories/{given['id']}").json()["durability"] == "durable"

    from test_mcp import ok, run, session

    async def mcp() -> tuple[dict, dict]:
        async with session(served.url, served.tokens["alice"]) as client:
            read = ok(await client.call_tool("add_memory", {"text": "Är förkyld idag"}))
            given = ok(await client.call_tool("add_memory", {"text": "Bor i Lund", "durability": "transient"}))
            refused = await client.call_tool("add_memory", {"text": "Bor i Ystad", "durability": "sometimes"})
            assert refused.is_error
            return read, given

    read, given = run(mcp)
    assert read["durability"] == "transient" and given["durability"] == "transient"


def test_memories_can_be_listed_and_counted_by_durability(bank: MemoryBank):
    bank.add_many([{"text": t, "namespace": "a"} for t in ("Has a cold today.", "Allergic to peanuts.",
                                                            "Asked about the weather.")])
    assert {m.text for m in bank.memories("a", durability="transient")} == {"Has a cold today.",
                                                                              "Asked about the weather."}
    assert bank.count("a", durability="durable") == 1
    with pytest.raises(ValidationError, match="durability"):
        bank.memories("a", durability="sometimes")


def test_an_edited_text_is_read_again_unless_its_durability_was_set_by_hand(bank: MemoryBank):
    read = bank.add("Lives in Lund", namespace="a")
    assert bank.update(read, text="Has a cold today").durability == "transient"
    assert bank.update(read, text="Har flyttat till Lund").durability == "durable"
    chosen = bank.add("Has a cold today", namespace="a", durability="durable")  # the operator knows better
    assert bank.update(chosen, text="Has a bad cold today").durability == "durable"
    both = bank.add("Lives in Lund", namespace="a")
    assert bank.update(both, text="今天感冒了", durability="durable").durability == "durable"
