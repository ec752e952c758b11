"""Find and redact personal identifiers before anything is written to memory.

Design principle 6 says a bank stores no personal identifiers: an agent should
remember "Lives in Uppsala", never a street address or a phone number. This
module finds the identifiers so the write side (:mod:`memory_core.curation.extract`) can
redact them, or refuse the statements that carry them.

What is detected (``PII_KINDS``):

=================  ==========================================================
``email``          ``anna.berg@example.se``, ``anna [at] example [dot] com``
``phone``          international (``+46 70 123 45 67``, ``0046…``, ``+1 (555) …``),
                   trunk-prefixed local numbers (Swedish ``070-123 45 67``,
                   ``08-123 456 78``, UK ``020 7946 0958``, Chinese landlines
                   ``010-12345678``), North-American ``(555) 123-4567``,
                   Chinese mobiles ``138 0013 8000``, and any 7-15 digit number
                   right after a word like "phone", "ring", "电话", "手机"
``card``           13-19 digit payment cards (IIN 2-6), Luhn-checked, grouped
                   by spaces or dashes
``iban``           IBANs (mod-97 checked, country length when known)
``bank_account``   digits after "account number", "kontonummer", "账号"…, and
                   the Swedish clearing form ``3300-7501011234``
``personnummer``   Swedish personal identity numbers (``YYMMDD-XXXX``,
                   ``YYYYMMDD-XXXX``, bare 10/12 digits), date- and Luhn-checked;
                   coordination numbers (day + 60) included
``cn_id``          Chinese resident identity numbers (18 characters, birth date
                   and ISO 7064 checksum verified)
``address``        EN street lines (``12 Baker Street``, a house number with a letter),
                   ``Apt 4``/``Flat 3``/``Suite 200``, ``PO Box 12``, UK postcodes,
                   US ``State 12345``; SV ``Storgatan 12``, ``lgh 1102``,
                   ``123 45 Stockholm``; ZH ``建国路88号``, ``3栋2单元501室``, ``邮编100020``
``ip``             IPv4 and IPv6 (loopback and unspecified addresses excluded:
                   ``127.0.0.1`` identifies nobody)
=================  ==========================================================

Precision comes first (an over-eager redactor mangles dates, prices and version
numbers the agent needs), so every numeric kind is either checksum-validated or
shape-restricted: dates (``2024-03-15``, ``15/03/2024``), years, times, prices,
``v3.11.4`` and ``16-week plan`` are left alone. Known limits: bare national
numbers without a trunk ``0`` or a keyword ("5551234567"), free-form addresses
without a house number or street suffix ("the yellow house by the lake"), other
countries' ID numbers, and names of people are not detected.

All patterns work on a copy of the text where full-width characters
(``１３８…``, ``＠``) are folded to ASCII one-for-one, so offsets stay those of
the original text.
"""

from __future__ import annotations

import calendar
import ipaddress
import re
from dataclasses import dataclass
from typing import Final, Iterator

from ..errors import ValidationError

__all__ = ["PII_KINDS", "Finding", "find_pii", "redact", "placeholder_pattern"]

PII_KINDS: Final[tuple[str, ...]] = (
    "email", "phone", "card", "iban", "bank_account", "personnummer", "cn_id", "address", "ip",
)


@dataclass(frozen=True)
class Finding:
    """One personal identifier: its ``kind`` (one of :data:`PII_KINDS`), its span in the
    original text (``text[start:end] == self.text``) and the matched text."""

    kind: str
    start: int
    end: int
    text: str


# --------------------------------------------------------------------------- #
# Helpers
# --------------------------------------------------------------------------- #

# Full-width ASCII (U+FF01..U+FF5E) and the ideographic space map one-to-one to
# ASCII, so a phone number typed with a Chinese IME is still found and the
# offsets of the folded copy are the offsets of the original.
_FULLWIDTH: Final[dict[int, int]] = {cp: cp - 0xFEE0 for cp in range(0xFF01, 0xFF5F)}
_FULLWIDTH[0x3000] = 0x20

# ASCII-only boundaries: \b treats CJK characters as word characters, so
# "电话13800138000" would have no boundary before the number.
_NB: Final = r"(?<![0-9A-Za-z])"   # not glued to a preceding letter or digit
_NA: Final = r"(?![0-9A-Za-z])"    # not glued to a following letter or digit


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _valid_date(year: int, month: int, day: int) -> bool:
    return 1 <= month <= 12 and 1 <= day <= calendar.monthrange(year, month)[1]


@dataclass(frozen=True)
class _Candidate:
    kind: str
    start: int
    end: int
    priority: int  # lower wins when candidates overlap


# --------------------------------------------------------------------------- #
# Email
# --------------------------------------------------------------------------- #

_EMAIL_RE: Final = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@"
    r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
    r"\.[A-Za-z]{2,24}(?![A-Za-z0-9-])"
)
# People dodge scrapers with "anna at example dot com"; only the bracketed
# forms, or plain "at"/"dot" with a well-known TLD, are taken, because
# "meet at home dot" is not an address.
_EMAIL_OBFUSCATED_RE: Final = re.compile(
    r"(?<![A-Za-z0-9._-])[A-Za-z0-9][A-Za-z0-9._-]*\s*(?:\[at\]|\(at\)|\{at\}|\sat\s)\s*"
    r"[A-Za-z0-9-]+(?:\s*(?:\[dot\]|\(dot\)|\{dot\}|\sdot\s)\s*[A-Za-z0-9-]+)*"
    r"\s*(?:\[dot\]|\(dot\)|\{dot\}|\sdot\s)\s*(?:com|se|org|net|cn|edu|io|uk|de|nu|info)(?![A-Za-z0-9])",
    re.IGNORECASE,
)


def _find_email(text: str) -> Iterator[_Candidate]:
    for m in _EMAIL_RE.finditer(text):
        yield _Candidate("email", m.start(), m.end(), 0)
    for m in _EMAIL_OBFUSCATED_RE.finditer(text):
        yield _Candidate("email", m.start(), m.end(), 0)


# --------------------------------------------------------------------------- #
# IP addresses
# --------------------------------------------------------------------------- #

_IPV4_RE: Final = re.compile(r"(?<![0-9A-Za-z.])(?:\d{1,3}\.){3}\d{1,3}(?![0-9A-Za-z]|\.\d)")
_IPV6_RE: Final = re.compile(r"(?<![0-9A-Za-z:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![0-9A-Za-z:])")
# "version 1.2.3.4" / "v1.2.3.4" / "版本1.2.3.4" is a four-part version number.
_VERSION_BEFORE_RE: Final = re.compile(
    r"(?:\b(?:v|version|ver\.?|release|build)(?:\s*(?:is|:|=|number))?|版本号?(?:是|为|:|：)?)\s*$", re.IGNORECASE
)


_IP_CONTEXT_RE: Final = re.compile(r"(?:\bip|address|host|server|router|gateway|ip地址|地址|服务器|主机)\W{0,3}(?:is|är|是|为|:|：)?\s*$", re.IGNORECASE)


def _find_ip(text: str) -> Iterator[_Candidate]:
    for m in _IPV4_RE.finditer(text):
        parts = m.group().split(".")
        if any(len(p) > 1 and p[0] == "0" for p in parts):  # 01.02.03.04 is not how IPs are written
            continue
        if _VERSION_BEFORE_RE.search(text[max(0, m.start() - 12):m.start()]):
            continue
        try:
            ip = ipaddress.IPv4Address(m.group())
        except ValueError:
            continue
        # Loopback, 0.0.0.0, netmasks and multicast groups identify nobody.
        if ip.is_loopback or ip.is_unspecified or ip.is_multicast or parts[0] == "255":
            continue
        # "4.2.1.7" is far more often a version than an address (and 1.1.1.1 or 8.8.8.8
        # are public resolvers, not a person's machine); all-single-digit needs context.
        if all(len(p) == 1 for p in parts) and not _IP_CONTEXT_RE.search(text[max(0, m.start() - 25):m.start()]):
            continue
        yield _Candidate("ip", m.start(), m.end(), 1)
    for m in _IPV6_RE.finditer(text):
        s = m.group()
        # Times ("12:30:45") have no "::" and fewer than 8 groups; requiring
        # either, plus a few hex digits, keeps "a::b"-like noise out.
        if "::" not in s and s.count(":") != 7:
            continue
        if sum(c.isalnum() for c in s) < 4 or not any(c.isdigit() for c in s):
            continue
        try:
            ip6 = ipaddress.IPv6Address(s)
        except ValueError:
            continue
        if ip6.is_loopback or ip6.is_unspecified:
            continue
        yield _Candidate("ip", m.start(), m.end(), 1)


# --------------------------------------------------------------------------- #
# IBAN and bank accounts
# --------------------------------------------------------------------------- #

# Lengths by country for the IBANs people in our three languages are likely
# to type; other countries are accepted on the checksum alone (15-34 chars).
_IBAN_LENGTHS: Final[dict[str, int]] = {
    "AT": 20, "BE": 16, "CH": 21, "CZ": 24, "DE": 22, "DK": 18, "EE": 20, "ES": 24, "FI": 18,
    "FO": 18, "FR": 27, "GB": 22, "GL": 18, "GR": 27, "HR": 21, "HU": 28, "IE": 22, "IS": 26,
    "IT": 27, "LT": 20, "LU": 20, "LV": 21, "MT": 31, "NL": 18, "NO": 15, "PL": 28, "PT": 25,
    "RO": 24, "SE": 24, "SI": 19, "SK": 24, "TR": 26,
}
_IBAN_RE: Final = re.compile(r"(?<![0-9A-Za-z])[A-Za-z]{2}[0-9]{2}(?:[ ]?[A-Za-z0-9]){11,32}")


def _iban_ok(compact: str) -> bool:
    rearranged = compact[4:] + compact[:4]
    try:
        number = int("".join(str(int(ch, 36)) for ch in rearranged))
    except ValueError:
        return False
    return number % 97 == 1


def _find_iban(text: str) -> Iterator[_Candidate]:
    for m in _IBAN_RE.finditer(text):
        raw = m.group()
        # Positions of the alphanumerics, so a compact length maps back to a span
        # (the greedy pattern may have swallowed a following word like "AND").
        positions = [i for i, ch in enumerate(raw) if ch != " "]
        compact = "".join(raw[i] for i in positions).upper()
        country = compact[:2]
        lengths = [_IBAN_LENGTHS[country]] if country in _IBAN_LENGTHS else range(min(len(compact), 34), 14, -1)
        for length in lengths:
            if length > len(compact):
                continue
            end = m.start() + positions[length - 1] + 1
            if re.match(r"[0-9A-Za-z]", text[end:end + 1] or " "):
                continue  # the IBAN would end in the middle of a word
            if _iban_ok(compact[:length]):
                yield _Candidate("iban", m.start(), end, 1)
                break


_ACCOUNT_KEYWORD_RE: Final = re.compile(
    r"(?:\baccount\s*(?:number|no\.?|nr\.?|#)?|\bacct\.?\s*(?:number|no\.?|#)?|\bsort\s*code|"
    r"\brouting\s*(?:number|no\.?)?|\bkontonummer|\bkontonr\.?|\bbankkonto(?:nummer)?|\bkonto|"
    r"\bclearingnummer|\bclearingnr\.?|\bbankgiro(?:nummer)?|\bplusgiro(?:nummer)?|"
    r"银行账号|银行账户|银行帐号|银行卡号|账号|账户|帐号|帐户|卡号)"
    r"(?:\s*(?:is|är|:|：|是|为|=)\s*|\s*#?\s*)",
    re.IGNORECASE,
)
_ACCOUNT_NUMBER_RE: Final = re.compile(r"[0-9](?:[0-9]|[ -](?=[0-9])){4,34}")
# Swedish "clearing-account": 4-digit clearing number (+ optional check digit),
# a dash, 7-10 digits. Dates and year ranges never have 7+ digits after a dash.
_SE_ACCOUNT_RE: Final = re.compile(r"(?<![0-9A-Za-z-])[1-9][0-9]{3}(?:-[0-9])?-[0-9]{7,10}(?![0-9A-Za-z-])")


def _find_bank_account(text: str) -> Iterator[_Candidate]:
    for k in _ACCOUNT_KEYWORD_RE.finditer(text):
        m = _ACCOUNT_NUMBER_RE.match(text, k.end())
        if m is None or re.match(r"[0-9A-Za-z]", text[m.end():m.end() + 1] or " "):
            continue
        if sum(ch.isdigit() for ch in m.group()) >= 6:
            yield _Candidate("bank_account", m.start(), m.end(), 4)
    for m in _SE_ACCOUNT_RE.finditer(text):
        yield _Candidate("bank_account", m.start(), m.end(), 4)


# --------------------------------------------------------------------------- #
# Payment cards
# --------------------------------------------------------------------------- #

_CARD_RE: Final = re.compile(r"(?<![0-9A-Za-z.,-])[0-9](?:[0-9]|[ -](?=[0-9])){12,22}(?![0-9A-Za-z]|[.,-][0-9])")
# Grouping people (and card faces) actually use: 4-4-4-4(-3), 4-6-5 (Amex),
# 4-6-4 (Diners), or none. "978-0-13-468599-1" (an ISBN) is not one of them.
_CARD_GROUPS: Final = re.compile(r"[0-9]{13,19}|[0-9]{4}(?:[ -][0-9]{4}){2,3}(?:[ -][0-9]{1,4})?|[0-9]{4}[ -][0-9]{6}[ -][0-9]{4,5}")


def _find_card(text: str) -> Iterator[_Candidate]:
    for m in _CARD_RE.finditer(text):
        s = m.group()
        if not _CARD_GROUPS.fullmatch(s) or ("-" in s and " " in s):
            continue
        digits = re.sub(r"[ -]", "", s)
        if not 13 <= len(digits) <= 19 or digits[0] not in "23456" or not _luhn_ok(digits):
            continue
        yield _Candidate("card", m.start(), m.end(), 3)


# --------------------------------------------------------------------------- #
# National identity numbers
# --------------------------------------------------------------------------- #

_PNR_RE: Final = re.compile(
    r"(?<![0-9A-Za-z-])(?P<cc>18|19|20)?(?P<yy>[0-9]{2})(?P<mm>[0-9]{2})(?P<dd>[0-9]{2})"
    r"(?P<sep>[-+]?)(?P<nnn>[0-9]{3})(?P<check>[0-9])(?![0-9A-Za-z]|-[0-9])"
)


def _find_personnummer(text: str) -> Iterator[_Candidate]:
    for m in _PNR_RE.finditer(text):
        yy, mm, dd = int(m["yy"]), int(m["mm"]), int(m["dd"])
        if dd > 60:  # samordningsnummer: day + 60
            dd -= 60
        # Without a century either reading will do (only 29 February depends on it).
        years = [int(m["cc"]) * 100 + yy] if m["cc"] else [1900 + yy, 2000 + yy]
        if not any(_valid_date(year, mm, dd) for year in years):
            continue
        ten = f"{m['yy']}{m['mm']}{m['dd']}{m['nnn']}{m['check']}"
        if not _luhn_ok(ten):
            continue
        # A bare ten-digit number is also the shape of a Swedish mobile number
        # (0701234567): those compete at a lower priority than phones.
        explicit = bool(m["sep"]) or bool(m["cc"])
        yield _Candidate("personnummer", m.start(), m.end(), 2 if explicit else 6)


_CN_ID_RE: Final = re.compile(
    r"(?<![0-9A-Za-z])[1-9][0-9]{5}(?P<y>18|19|20)(?P<yy>[0-9]{2})(?P<m>[0-9]{2})(?P<d>[0-9]{2})[0-9]{3}[0-9Xx](?![0-9A-Za-z])"
)
_CN_ID_WEIGHTS: Final = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CN_ID_CHECK: Final = "10X98765432"


def _find_cn_id(text: str) -> Iterator[_Candidate]:
    for m in _CN_ID_RE.finditer(text):
        s = m.group().upper()
        if not _valid_date(int(m["y"] + m["yy"]), int(m["m"]), int(m["d"])):
            continue
        total = sum(int(ch) * w for ch, w in zip(s[:17], _CN_ID_WEIGHTS))
        if _CN_ID_CHECK[total % 11] == s[17]:
            yield _Candidate("cn_id", m.start(), m.end(), 2)


# --------------------------------------------------------------------------- #
# Phone numbers
# --------------------------------------------------------------------------- #

# A run of digits with the separators people put in phone numbers. The
# look-arounds keep it off decimals, dates and ranges glued to other numbers.
_PHONE_RUN_RE: Final = re.compile(
    r"(?<![0-9A-Za-z])(?<![0-9][.,/:-])(?:\+|(?<![0-9])\()?[0-9][0-9().\- ]{5,24}[0-9]"
    r"(?![0-9A-Za-z]|[.,/:-][0-9])"
)
# A bare "number"/"nummer" would also catch "order number 12345678" and
# "organisationsnummer", so it needs a possessive in front.
_PHONE_CONTEXT_RE: Final = re.compile(
    r"(?:(?<![A-Za-zÅÄÖåäö])(?:phone(?: number)?|tel\.?|telephone|mobile(?: number)?|cell(?:phone)?(?: number)?|"
    r"(?:my|your|his|her|our|their) (?:phone |cell |mobile |home |work )?number|call me(?: at| on)?|"
    r"text me(?: at| on)?|reach me(?: at| on)?|whatsapp|ring(?: mig)?(?: på)?|telefon(?:nummer|nr)?|"
    r"mobil(?:nummer|nr)?|(?:mitt|ditt|hans|hennes|vårt|deras) (?:telefon|mobil|jobb)?nummer|sms)"
    r"|电话(?:号码)?|手机(?:号码|号)?|号码|联系方式|微信)"
    r"\s*(?:is|är|:|：|是|为|at|on|på)?\s*$",
    re.IGNORECASE,
)
_DATE_LIKE_RE: Final = re.compile(r"[0-9]{1,4}([./-])[0-9]{1,2}\1[0-9]{1,4}|[0-9]{4}[./-][0-9]{1,2}|[0-9]{1,2}[./-][0-9]{4}")
_NANP_RE: Final = re.compile(r"(?:\+?1[ .-]?)?(?:\([2-9][0-9]{2}\) ?|[2-9][0-9]{2}[ .-])[0-9]{3}[ .-][0-9]{4}")
_CN_MOBILE_RE: Final = re.compile(r"1[3-9][0-9]{9}|1[3-9][0-9][ -][0-9]{4}[ -][0-9]{4}")
_FR_DOTTED_RE: Final = re.compile(r"0[1-9](?:\.[0-9]{2}){4}")


def _phone_kind(s: str, after_keyword: bool) -> bool:
    """Decide whether the digit run ``s`` is a phone number (see module docstring)."""
    if "  " in s or re.search(r"[.\-(][ .\-]|[ .\-][.\-)]", s) or s.count("(") != s.count(")"):
        return False
    digits = re.sub(r"[^0-9]", "", s)
    n = len(digits)
    if _DATE_LIKE_RE.fullmatch(s):
        return False
    if "." in s and not (_NANP_RE.fullmatch(s) or _FR_DOTTED_RE.fullmatch(s)):
        return False  # dots mean decimals, versions and dates unless in a known phone layout
    if s.startswith("+"):
        return 8 <= n <= 15 and digits[0] != "0"
    if s.startswith("00") and digits[2:3] != "0":
        return 10 <= n <= 15
    if _CN_MOBILE_RE.fullmatch(s) or _NANP_RE.fullmatch(s) or _FR_DOTTED_RE.fullmatch(s):
        return True
    if s.startswith("0") or s.startswith("(0"):
        # Trunk-prefixed national numbers: SE 08-123 45 67 (9) to CN 0755-12345678 (12).
        if 9 <= n <= 12:
            return True
        # Short Stockholm/Göteborg numbers "08-12 34 56" need the area-code dash.
        return n == 8 and re.match(r"\(?0[0-9]{1,3}\)?[ -]", s) is not None
    return after_keyword and 7 <= n <= 15


def _find_phone(text: str) -> Iterator[_Candidate]:
    for m in _PHONE_RUN_RE.finditer(text):
        s = m.group()
        start, end = m.start(), m.end()
        # The run may swallow a trailing "(" or leading ")" that belongs to prose.
        while s and s[-1] in " (-":
            s, end = s[:-1], end - 1
        before = text[max(0, start - 30):start]
        if _phone_kind(s, bool(_PHONE_CONTEXT_RE.search(before))):
            yield _Candidate("phone", start, end, 5)


# --------------------------------------------------------------------------- #
# Addresses
# --------------------------------------------------------------------------- #

# Only abbreviations take a dot: "12 Baker Street. I like..." must keep its full stop,
# or the sentence after it would be glued to the placeholder.
_EN_STREET_SUFFIX: Final = (
    r"(?:(?:Street|Road|Avenue|Lane|Drive|Boulevard|Court|Place|Way|Terrace|Close|Crescent|Square|Parkway|"
    r"Highway|Gardens|Grove|Mews|Loop)(?![A-Za-z])|(?:St|Rd|Ave|Ln|Dr|Blvd|Ct|Pl|Sq|Pkwy|Hwy)(?![A-Za-z])\.?)"
)
_EN_STREET_RE: Final = re.compile(
    rf"{_NB}[0-9]{{1,5}}[A-Za-z]?(?:-[0-9]{{1,5}})?,?\s+(?:[A-Z][A-Za-z'.-]*\s+){{1,4}}{_EN_STREET_SUFFIX}"
    r"(?:\s+(?:N|S|E|W|NE|NW|SE|SW)(?![A-Za-z]))?"
)
_EN_UNIT_RE: Final = re.compile(
    r"(?<![A-Za-z])(?:[Aa]pt\.?|[Aa]partment|Flat|Suite|Ste\.)\s*#?\s*(?:[0-9]{1,5}[A-Za-z]?)(?![0-9A-Za-z])"
    r"|(?<![A-Za-z])P\.?\s?O\.?\s+Box\s+[0-9]{1,6}(?![0-9])"
)
# UK postcodes ("SW1A 1AA", "NW1 6XE"): case-sensitive, so ordinary words never match.
_UK_POSTCODE_RE: Final = re.compile(rf"{_NB}[A-Z]{{1,2}}[0-9][A-Z0-9]? ?[0-9][A-Z]{{2}}{_NA}")
_US_STATES: Final = (
    "AL|AK|AZ|AR|CA|CO|CT|DE|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|"
    "NM|NY|NC|ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|DC"
)
_US_ZIP_RE: Final = re.compile(
    rf"(?:[A-Z][a-z]+(?: [A-Z][a-z]+)?,\s*)?(?<![A-Za-z])(?:{_US_STATES})\s+[0-9]{{5}}(?:-[0-9]{{4}})?(?![0-9])"
)

_SV_LOWER: Final = "a-zåäöéü"
_SV_UPPER: Final = "A-ZÅÄÖÉÜ"
_SV_STREET_RE: Final = re.compile(
    rf"(?<![{_SV_LOWER}{_SV_UPPER}])(?:[{_SV_UPPER}][{_SV_LOWER}]+\s)?"
    rf"[{_SV_UPPER}{_SV_LOWER}][{_SV_LOWER}]+(?:gatan|vägen|gränd|gränden|torget|stigen|backen|allén|leden|kajen)"
    r"\s[0-9]{1,4}(?:\s?[A-Za-z](?![A-Za-zåäö]))?(?![0-9])"
    # "motorvägen 5 km", "backen 3 min": a number with a unit is a distance, not a house.
    r"(?!\s*(?:km|m|mil|min|minuter|kr|%|st|meter)\b)"
    r"(?:,?\s*(?:lgh|lägenhet)\.?\s*[0-9]{3,4})?",
)
_SV_LGH_RE: Final = re.compile(r"(?<![A-Za-z])(?:lgh|Lgh|LGH)\.?\s*(?:nr\.?\s*)?[0-9]{4}(?![0-9])")
_SV_POSTCODE_RE: Final = re.compile(
    rf"(?<![0-9A-Za-z])(?:SE-?\s?)?[1-9][0-9]{{2}} [0-9]{{2}}\s+[{_SV_UPPER}][{_SV_LOWER}{_SV_UPPER}]+(?:\s[{_SV_UPPER}][{_SV_LOWER}]+)?"
)

_ZH_NUM: Final = r"[0-9一二三四五六七八九十百千零〇]+"
_ZH_STREET_RE: Final = re.compile(
    r"[\u4e00-\u9fff]{1,15}(?:大道|大街|路|街|巷|胡同|弄)" + r"\s*" + _ZH_NUM + r"\s*号(?!线|楼|码)"
    r"(?:\s*(?:院|大厦|小区))?"
    r"(?:\s*[0-9]+\s*(?:栋|幢|号楼|座))?"
    r"(?:\s*[0-9]+\s*单元)?"
    r"(?:\s*[0-9]+\s*(?:室|房|号房))?"
)
# Characters that end the words before an address ("我住在", "搬到", "地址是"),
# so the match starts at the place name, not at the verb.
_ZH_ADDRESS_STOP: Final = set("在到于是为址：:，,。、的我你他她住搬去来")
# Verb + 街 ("逛街5号去" = go shopping on the 5th) is not a street.
_ZH_NOT_STREET: Final = ("逛街", "上街", "一路", "上路", "一条街")
_ZH_BUILDING_RE: Final = re.compile(r"[0-9]+\s*(?:栋|幢|号楼)\s*[0-9]+\s*单元(?:\s*[0-9]+\s*室)?|[0-9]+\s*单元\s*[0-9]+\s*室")
_ZH_POSTCODE_RE: Final = re.compile(r"(?:邮编|邮政编码)\s*[:：是为]?\s*[0-9]{6}(?![0-9])")


def _find_address(text: str) -> Iterator[_Candidate]:
    for regex in (_EN_STREET_RE, _EN_UNIT_RE, _UK_POSTCODE_RE, _US_ZIP_RE, _SV_STREET_RE, _SV_LGH_RE,
                  _SV_POSTCODE_RE, _ZH_BUILDING_RE, _ZH_POSTCODE_RE):
        for m in regex.finditer(text):
            yield _Candidate("address", m.start(), m.end(), 7)
    for m in _ZH_STREET_RE.finditer(text):
        body = m.group()
        road_end = re.search(r"(?:大道|大街|路|街|巷|胡同|弄)\s*" + _ZH_NUM, body)
        assert road_end is not None  # the pattern guarantees it
        prefix = body[:road_end.start()]
        cut = max((i for i, ch in enumerate(prefix) if ch in _ZH_ADDRESS_STOP), default=-1)
        start = m.start() + cut + 1
        name = text[start:m.start() + road_end.end()]
        if start >= m.start() + road_end.start() or any(bad in name for bad in _ZH_NOT_STREET):
            continue  # nothing left of the road name, or a verb phrase
        yield _Candidate("address", start, m.end(), 7)


# --------------------------------------------------------------------------- #
# Public API
# --------------------------------------------------------------------------- #

_DETECTORS: Final = (_find_email, _find_ip, _find_iban, _find_cn_id, _find_personnummer,
                     _find_card, _find_bank_account, _find_phone, _find_address)


def find_pii(text: str) -> list[Finding]:
    """Return the personal identifiers in ``text``, non-overlapping, in text order.

    When two detectors claim overlapping text the more specific one wins
    (checksummed identifiers over phone shapes over addresses), so
    ``850709-9805`` is one ``personnummer``, not also a phone number.
    Adjacent address parts ("12 Baker Street, Apt 4B") are merged into one finding.
    """
    if not isinstance(text, str):
        raise ValidationError(f"text must be a string, got {type(text).__name__}")
    folded = text.translate(_FULLWIDTH)
    candidates = [c for detect in _DETECTORS for c in detect(folded)]
    candidates.sort(key=lambda c: (c.priority, -(c.end - c.start), c.start))
    taken: list[_Candidate] = []
    for cand in candidates:
        if all(cand.end <= t.start or cand.start >= t.end for t in taken):
            taken.append(cand)
    taken.sort(key=lambda c: c.start)
    merged: list[_Candidate] = []
    for cand in taken:
        if (merged and cand.kind == "address" and merged[-1].kind == "address"
                and re.fullmatch(r"[\s,，、]*", folded[merged[-1].end:cand.start])):
            merged[-1] = _Candidate("address", merged[-1].start, cand.end, 7)
        else:
            merged.append(cand)
    return [Finding(c.kind, c.start, c.end, text[c.start:c.end]) for c in merged]


def redact(text: str, placeholder: str = "[{kind}]") -> tuple[str, list[Finding]]:
    """Replace every identifier :func:`find_pii` finds with ``placeholder``.

    ``placeholder`` may contain ``{kind}`` (``"[{kind}]"`` gives ``"[phone]"``).
    Returns the redacted text and the findings (offsets refer to the input text).
    """
    if not isinstance(placeholder, str):
        raise ValidationError(f"placeholder must be a string, got {type(placeholder).__name__}")
    findings = find_pii(text)
    parts: list[str] = []
    pos = 0
    for f in findings:
        parts.append(text[pos:f.start])
        try:
            parts.append(placeholder.format(kind=f.kind))
        except (KeyError, IndexError, ValueError) as exc:
            raise ValidationError(
                f"placeholder {placeholder!r} must be a format string whose only field is {{kind}} ({exc})"
            ) from None
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts), findings


def placeholder_pattern() -> re.Pattern[str]:
    """A regex matching the default placeholders (``[email]``, ``[phone]`` ...) left by :func:`redact`."""
    return re.compile(r"\[(?:" + "|".join(PII_KINDS) + r")\]")
