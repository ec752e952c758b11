"""memory_core.language.redact: personal identifiers in EN/SV/ZH text, measured on a labelled corpus.

Every case lists the identifiers a careful human would mask, as ``(kind, exact text)``.
Negatives (dates, prices, versions, distances...) list none. Cases marked
``known_miss`` document what the detector does not catch; they are xfail(strict) so a
fix shows up as an XPASS to promote, and they still count in the precision/recall figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from memory_core.errors import ValidationError
from memory_core.language.redact import PII_KINDS, Finding, find_pii, placeholder_pattern, redact


@dataclass(frozen=True)
class Case:
    lang: str
    text: str
    expected: tuple[tuple[str, str], ...] = ()
    known_miss: str = ""  # why the detector misses it (empty: it must pass)
    tags: tuple[str, ...] = field(default_factory=tuple)


def P(lang: str, text: str, *expected: tuple[str, str], known_miss: str = "") -> Case:
    return Case(lang, text, tuple(expected), known_miss)


def N(lang: str, text: str) -> Case:
    return Case(lang, text, ())


CORPUS: list[Case] = [
    # ------------------------------------------------------------ English positives
    P("en", "You can reach me at john.smith@example.com anytime.", ("email", "john.smith@example.com")),
    P("en", "Email me: anna_b+news@mail.co.uk", ("email", "anna_b+news@mail.co.uk")),
    P("en", "my address is anna [at] example [dot] com", ("email", "anna [at] example [dot] com")),
    P("en", "Call me on +1 (555) 123-4567 after work.", ("phone", "+1 (555) 123-4567")),
    P("en", "My number is 555-123-4567.", ("phone", "555-123-4567")),
    P("en", "My number is 5551234567", ("phone", "5551234567")),
    P("en", "Our office line is 020 7946 0958.", ("phone", "020 7946 0958")),
    P("en", "Text me at 07700 900123.", ("phone", "07700 900123")),
    P("en", "The hotline is 1-800-555-0199, open 24/7.", ("phone", "1-800-555-0199")),
    P("en", "My card is 4111 1111 1111 1111, expires 12/27.", ("card", "4111 1111 1111 1111")),
    P("en", "Use card 5555-5555-5555-4444 for the booking.", ("card", "5555-5555-5555-4444")),
    P("en", "Amex 3782 822463 10005", ("card", "3782 822463 10005")),
    P("en", "Please transfer to GB82 WEST 1234 5698 7654 32.", ("iban", "GB82 WEST 1234 5698 7654 32")),
    P("en", "My account number is 12345678, sort code 12-34-56.",
      ("bank_account", "12345678"), ("bank_account", "12-34-56")),
    P("en", "I live at 221B Baker Street, London NW1 6XE.",
      ("address", "221B Baker Street"), ("address", "NW1 6XE")),
    P("en", "Send it to 1600 Pennsylvania Avenue NW, Washington, DC 20500.",
      ("address", "1600 Pennsylvania Avenue NW, Washington, DC 20500")),
    P("en", "I'm in Apt 4B on the third floor.", ("address", "Apt 4B")),
    P("en", "PO Box 1234, Springfield, IL 62704", ("address", "PO Box 1234, Springfield, IL 62704")),
    P("en", "Meet me at 42 Elm Rd. tomorrow.", ("address", "42 Elm Rd.")),
    P("en", "My server's IP is 203.0.113.42.", ("ip", "203.0.113.42")),
    P("en", "Whitelist 2001:db8:85a3::8a2e:370:7334 please.", ("ip", "2001:db8:85a3::8a2e:370:7334")),
    P("en", "Swedish mobile +46701234567, US office 1-800-555-0199.",
      ("phone", "+46701234567"), ("phone", "1-800-555-0199")),
    # ------------------------------------------------------------ Swedish positives
    P("sv", "Ring mig på 070-123 45 67 efter fem.", ("phone", "070-123 45 67")),
    P("sv", "Mitt nummer är 0701234567.", ("phone", "0701234567")),
    P("sv", "Växeln har 08-123 456 78.", ("phone", "08-123 456 78")),
    P("sv", "Ring 08-12 34 56 för att boka.", ("phone", "08-12 34 56")),
    P("sv", "Tel. 031-12 34 56", ("phone", "031-12 34 56")),
    P("sv", "Internationellt: +46 70 123 45 67", ("phone", "+46 70 123 45 67")),
    P("sv", "Mitt personnummer är 850709-9805.", ("personnummer", "850709-9805")),
    P("sv", "Personnummer 19900101-1239 (min bror)", ("personnummer", "19900101-1239")),
    P("sv", "Samordningsnummer 701063-2391", ("personnummer", "701063-2391")),
    P("sv", "pnr 8112189876 står på blanketten", ("personnummer", "8112189876")),
    P("sv", "Jag bor på Storgatan 12, 123 45 Stockholm.", ("address", "Storgatan 12, 123 45 Stockholm")),
    P("sv", "Adressen är Drottninggatan 45B, lgh 1102.", ("address", "Drottninggatan 45B, lgh 1102")),
    P("sv", "Skicka till Kungsvägen 3, 411 06 Göteborg", ("address", "Kungsvägen 3, 411 06 Göteborg")),
    P("sv", "Jag bor i lägenhet på Sveavägen 44 lgh 1201.", ("address", "Sveavägen 44 lgh 1201")),
    P("sv", "Mitt kontonummer är 3300-7501011234 hos Nordea.", ("bank_account", "3300-7501011234")),
    P("sv", "IBAN: SE45 5000 0000 0583 9825 7466", ("iban", "SE45 5000 0000 0583 9825 7466")),
    P("sv", "Kortnummer 4012 8888 8888 1881", ("card", "4012 8888 8888 1881")),
    P("sv", "Mejla mig på erik.svensson@foretaget.se", ("email", "erik.svensson@foretaget.se")),
    # ------------------------------------------------------------ Chinese positives
    P("zh", "我的手机号是13800138000，有事打给我。", ("phone", "13800138000")),
    P("zh", "电话：138 0013 8000", ("phone", "138 0013 8000")),
    P("zh", "手机：１３９１２３４５６７８", ("phone", "１３９１２３４５６７８")),  # full-width digits
    P("zh", "办公室电话是010-12345678。", ("phone", "010-12345678")),
    P("zh", "国际号码 +86 138 0013 8000", ("phone", "+86 138 0013 8000")),
    P("zh", "我的身份证号是11010519491231002X。", ("cn_id", "11010519491231002X")),
    P("zh", "身份证：440301198506121231", ("cn_id", "440301198506121231")),
    P("zh", "我住在北京市朝阳区建国路88号。", ("address", "北京市朝阳区建国路88号")),
    P("zh", "寄到上海市浦东新区世纪大道100号3栋2单元501室", ("address", "上海市浦东新区世纪大道100号3栋2单元501室")),
    P("zh", "我家在中山路12号", ("address", "中山路12号")),
    P("zh", "邮编100020", ("address", "邮编100020")),
    P("zh", "邮箱是wang.li@163.com", ("email", "wang.li@163.com")),
    P("zh", "我的银行卡号是6222021234567890128。", ("card", "6222021234567890128")),
    P("zh", "服务器地址是192.168.1.20", ("ip", "192.168.1.20")),
    P("zh", "请转账到账号：6214 8301 2345 678", ("bank_account", "6214 8301 2345 678")),
    # ------------------------------------------------------------ known misses (honest limits)
    P("en", "mail me at anna at gmail", ("email", "anna at gmail"),
      known_miss="obfuscated address without a domain suffix"),
    P("en", "my phone is five five five, one two three, four five six seven",
      ("phone", "five five five, one two three, four five six seven"),
      known_miss="numbers spelled out in words"),
    P("sv", "Jag bor på Baker Street 221b i London.", ("address", "Baker Street 221b"),
      known_miss="English street name in Swedish order (name before number)"),
    P("zh", "我住在望京SOHO T1 1802室", ("address", "望京SOHO T1 1802室"),
      known_miss="building and room without a road and 号"),
    # A held-out batch written after the detector (the first run found the two false
    # positives below; the version-number one was fixed, the other is a known limit).
    P("en", "I paid with my Visa, number 4000 0566 5566 5556.", ("card", "4000 0566 5566 5556")),
    P("en", "Reach me at +44 7911 123456 or anna.k@uni.ox.ac.uk.",
      ("phone", "+44 7911 123456"), ("email", "anna.k@uni.ox.ac.uk")),
    P("sv", "Adress: Hamngatan 3B, 111 47 Stockholm", ("address", "Hamngatan 3B, 111 47 Stockholm")),
    P("zh", "我的邮箱：zhang_san@qq.com，电话：021-87654321",
      ("email", "zhang_san@qq.com"), ("phone", "021-87654321")),
    P("en", "My zip is 90210.", ("address", "90210"),
      known_miss="a US ZIP code without a state is just a five-digit number"),
    Case("en", "There are 3 Main Street cafés in town.", (),
         known_miss="false positive: number + capitalised name + street suffix reads as a house address"),
    N("en", "Patch notes for 4.2.1.7 are out."),
    N("en", "The 2022 Tesla Model 3 has 358 km range."),
    N("en", "Call 112 in an emergency."),
    N("en", "Train 4711 departs from platform 3."),
    N("en", "The recipe needs 200 g flour, 2 eggs and 1 dl milk."),
    N("en", "Read pages 120-145 before 10/11."),
    N("en", "Stock went from 123.45 to 130.10."),
    N("en", "Route 66 and Highway 101 are famous."),
    N("en", "We shipped 1,000,000 units at 99.99 each."),
    N("en", "It's 2024 and Python 3.13.0 is out; the PR is #4521."),
    N("en", "The ratio was 16:9 and the score 21-17."),
    N("en", "Deadline 2025-06-30 23:59 CET."),
    N("en", "The Apollo 11 landed on 20 July 1969."),
    N("sv", "Kl. 08.00–17.00 mån–fre."),
    N("sv", "Jag väger 72,5 kg och är 180 cm lång."),
    N("sv", "Bussen 4 går till Odenplan."),
    N("sv", "Storgatan är stängd mellan 10 och 14."),
    N("sv", "Vi flyttade 2015 och köpte huset för 3 250 000 kr."),
    N("sv", "Kör 3 set om 12 reps, vila 90 sek."),
    N("zh", "订单号：202403150001"),
    N("zh", "我住在3楼。"),
    N("zh", "北京时间2024年3月15日14:30"),
    N("zh", "我每天走10000步。"),
    N("zh", "这款手机支持5G，屏幕6.7英寸。"),
    # ------------------------------------------------------------ English negatives
    N("en", "I ran 5 km this morning and plan a 16-week training block."),
    N("en", "The meeting is on 2024-03-15 at 14:30."),
    N("en", "It costs $1,299.99 or 1 299 kr."),
    N("en", "We upgraded to Python 3.11.4 and numpy 1.26.0 last week."),
    N("en", "Version 10.0.19045.2965 of Windows is installed."),
    N("en", "In 2019 we had 12,500 users; by 2023 it was 1.2 million."),
    N("en", "Her birthday is 15/03/1990 and his is 03.07.1985."),
    N("en", "ISBN 978-0-13-468599-1 is a great book."),
    N("en", "Room temperature is 21.5°C, humidity 45%."),
    N("en", "Flight SK1415 leaves at 07:45 from gate 12."),
    N("en", "Order #123456789 shipped."),
    N("en", "I scored 1450 on the SAT and ran a 3:45 marathon."),
    N("en", "The population of Sweden is 10 500 000."),
    N("en", "Unit 3 of the course covers recursion."),
    N("en", "localhost is 127.0.0.1 and the default port is 8080."),
    N("en", "Timestamp 1700000000000 in ms, commit 3f2a9c1, build 20240315."),
    N("en", "The call lasted 12 minutes; meeting id 845 2231 9987."),
    N("en", "Between 2020-2024 we grew 300%."),
    N("en", "Score was 3-1, then 2-2."),
    N("en", "My coordinates: 59.3293, 18.0686"),
    N("en", "Card ending 4242."),
    N("en", "I finished in 2nd Place and got 3 Gold medals."),
    N("en", "Use std::vector and a::b in C++."),
    N("en", "The netmask is 255.255.255.0."),
    # ------------------------------------------------------------ Swedish negatives
    N("sv", "Jag sprang 10 km på 52 minuter den 2024-05-12."),
    N("sv", "Priset är 1 495 kr inkl. moms."),
    N("sv", "Mötet är kl 13.30 i sal 4."),
    N("sv", "Vi ses vecka 12, dvs 18-22 mars."),
    N("sv", "Motorvägen 5 km bort var avstängd."),
    N("sv", "Jag har en 16-veckors plan inför Vasaloppet 2025."),
    N("sv", "Vår omsättning var 1 234 567 SEK under Q3."),
    N("sv", "Organisationsnummer 556677-8899 finns i registret."),
    # ------------------------------------------------------------ Chinese negatives
    N("zh", "我今天跑了5公里，用时30分钟。"),
    N("zh", "会议在2024年3月15日下午3点。"),
    N("zh", "坐地铁5号线到人民广场。"),
    N("zh", "这个手机价格是2999元。"),
    N("zh", "我们3月5号去逛街。"),
    N("zh", "Python 3.12 版本发布于2023年10月2日。"),
    N("zh", "我的版本号是1.2.3.4，更新于2024-01-01。"),
]


def _found(text: str) -> set[tuple[str, str]]:
    return {(f.kind, f.text) for f in find_pii(text)}


def _params() -> list:
    params = []
    for i, case in enumerate(CORPUS):
        marks = [pytest.mark.xfail(reason=case.known_miss, strict=True)] if case.known_miss else []
        label = f"{i:03d}-{case.lang}-{'pos' if case.expected else 'neg'}"
        params.append(pytest.param(case, id=label, marks=marks))
    return params


@pytest.mark.parametrize("case", _params())
def test_corpus_case(case: Case) -> None:
    assert _found(case.text) == set(case.expected)


def corpus_scores() -> dict[str, float]:
    """Finding-level precision and recall over the whole corpus (known misses included).

    A prediction is a true positive when it has the right kind and exactly the expected text.
    """
    tp = fp = fn = 0
    for case in CORPUS:
        found = _found(case.text)
        expected = set(case.expected)
        tp += len(found & expected)
        fp += len(found - expected)
        fn += len(expected - found)
    return {"tp": tp, "fp": fp, "fn": fn,
            "precision": tp / (tp + fp) if tp + fp else 1.0,
            "recall": tp / (tp + fn) if tp + fn else 1.0}


def test_corpus_size_and_coverage() -> None:
    assert len(CORPUS) >= 60
    assert {c.lang for c in CORPUS} == {"en", "sv", "zh"}
    for lang in ("en", "sv", "zh"):
        assert any(c.expected for c in CORPUS if c.lang == lang), lang
        assert any(not c.expected for c in CORPUS if c.lang == lang), lang
    covered = {kind for c in CORPUS for kind, _ in c.expected}
    assert covered == set(PII_KINDS)


def test_corpus_precision_and_recall(capsys: pytest.CaptureFixture[str]) -> None:
    scores = corpus_scores()
    with capsys.disabled():
        print(f"\nredaction corpus: {len(CORPUS)} cases, tp={scores['tp']} fp={scores['fp']} fn={scores['fn']}, "
              f"precision={scores['precision']:.3f} recall={scores['recall']:.3f}")
    # Precision matters more than recall: a false positive mangles a date or a price.
    assert scores["precision"] >= 0.98
    assert scores["recall"] >= 0.90


# ---------------------------------------------------------------- API behaviour


def test_finding_offsets_point_into_the_original_text() -> None:
    text = "Mail anna@example.se eller ring 070-123 45 67, tack!"
    findings = find_pii(text)
    assert [f.kind for f in findings] == ["email", "phone"]
    for f in findings:
        assert isinstance(f, Finding)
        assert text[f.start:f.end] == f.text


def test_full_width_text_keeps_original_offsets() -> None:
    text = "手机：１３８００１３８０００，邮箱ｗａｎｇ＠１６３．ｃｏｍ"
    findings = find_pii(text)
    assert [f.kind for f in findings] == ["phone", "email"]
    assert findings[0].text == "１３８００１３８０００"
    assert text[findings[1].start:findings[1].end] == "ｗａｎｇ＠１６３．ｃｏｍ"


def test_redact_replaces_with_default_placeholders() -> None:
    text, findings = redact("I'm at 12 Baker Street, call +44 20 7946 0958 or mail me@x.org.")
    assert text == "I'm at [address], call [phone] or mail [email]."
    assert [f.kind for f in findings] == ["address", "phone", "email"]
    assert placeholder_pattern().findall(text) == ["[address]", "[phone]", "[email]"]


def test_redact_custom_placeholder() -> None:
    text, _ = redact("pnr 850709-9805", placeholder="<{kind} removed>")
    assert text == "pnr <personnummer removed>"
    text, _ = redact("pnr 850709-9805", placeholder="***")
    assert text == "pnr ***"


def test_redact_without_identifiers_returns_text_unchanged() -> None:
    text = "I prefer tea in the mornings; 16-week plan, 5 km, v3.11."
    assert redact(text) == (text, [])


def test_checksums_decide() -> None:
    # One digit off: the Luhn / ISO 7064 / mod-97 checks fail, so nothing is flagged.
    assert find_pii("card 4111 1111 1111 1112") == []
    assert find_pii("身份证11010519491231002Y") == []
    assert find_pii("身份证110105194912310021") == []
    assert find_pii("IBAN SE45 5000 0000 0583 9825 7467") == []
    assert _found("pnr 850709-9806") == set()


def test_specific_identifier_wins_over_phone_shape() -> None:
    # 850709-9805 is also a plausible digit run; it must be one personnummer, not two findings.
    assert _found("850709-9805") == {("personnummer", "850709-9805")}
    # A Swedish mobile written without separators reads as a phone, not a personnummer.
    assert _found("0701234567") == {("phone", "0701234567")}


def test_iban_does_not_swallow_following_words() -> None:
    assert _found("SE45 5000 0000 0583 9825 7466 AND more") == {("iban", "SE45 5000 0000 0583 9825 7466")}


def test_loopback_and_version_numbers_are_not_ips() -> None:
    assert find_pii("server at 127.0.0.1 and ::1, version 1.2.3.4, v2.0.0.1") == []
    assert _found("host 10.0.0.5") == {("ip", "10.0.0.5")}
    # Single-digit quads are versions unless the words before say "IP"/"server".
    assert find_pii("upgrade to 4.2.1.7") == []
    assert _found("my IP is 4.2.1.7") == {("ip", "4.2.1.7")}


@pytest.mark.parametrize("bad", [None, 42, b"bytes", ["list"]])
def test_non_string_input_is_a_validation_error(bad: object) -> None:
    with pytest.raises(ValidationError):
        find_pii(bad)  # type: ignore[arg-type]


def test_bad_placeholder_is_a_validation_error() -> None:
    with pytest.raises(ValidationError):
        redact("mail a@b.se", placeholder="{name}")
    with pytest.raises(ValidationError):
        redact("mail a@b.se", placeholder=None)  # type: ignore[arg-type]


def test_empty_text() -> None:
    assert find_pii("") == []
    assert redact("") == ("", [])
