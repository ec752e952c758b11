"""The contradiction rules' tables: per language, negators, negative and positive cues, antonyms,
change and past cues, attribute templates, and the filler and subject word lists. ``conflicts/rule_judge.py``
compiles and runs them."""

from __future__ import annotations

import re
from typing import Final


# --------------------------------------------------------------------------- #
# Rule tables
# --------------------------------------------------------------------------- #
# Patterns run on NFKC-normalised, casefolded text with traditional Chinese folded to simplified
# (as in gate.py), so they are lowercase and use simplified characters. Each table maps a
# language to (label, pattern) rows; the label names the cue in evidence and for people reading.
#
# Polarity has three kinds of cue, so that two negatives can cancel:
#   NEGATORS        turn a statement around: not, never, no longer, stopped, sold, 不, 不再, inte...
#   NEGATIVE_WORDS  are a negative stance or a problem by themselves: hates, boring, struggles,
#                   allergic, bug, too <adjective>, 讨厌, 枯燥, svårt...
#   REMEDIES        only undo a problem: "the bug was fixed", "improved the slow import".
# A negator just before a negative word ("doesn't mind", "no longer hates", "不再讨厌") and a remedy
# next to one ("fixed the bug") cancel each other. A cue only counts within a few words of the
# shared topic and in the same clause, so "Customers can't find where to change the VAT rate"
# says nothing negative about "VAT rate".

NEGATORS: dict[str, list[tuple[str, str]]] = {
    "en": [
        ("not", r"\bnot\b|n't\b|\bcannot\b"),
        ("never", r"\bnever\b"),
        ("no longer", r"\bno longer\b|\bno more\b"),
        ("no", r"\bno\b(?! longer| more)|\bnone\b|\bwithout\b"),      # forward only: "no heavy ORM"
        # "Stopped running" is a negation; "the bank feed stopped, usually because..." is an event.
        ("stopped", r"\b(?:stop(?:s|ped|ping)?|quit(?:s|ting)?)\b(?=\s+[^\W\d_])"),
        ("gave up", r"\b(?:gave|given|gives|giving) up\b|\bgot rid of\b|\bgave away\b"),
        ("lost", r"\b(?:sold|stolen|lost)\b|\bwas stolen\b"),
        ("undecided", r"\bundecided\b|\bunsure\b|\bnot sure\b|\bhesitant\b"),
        ("uninstalled", r"\buninstall(?:ed|s)?\b|\bdeleted\b|\bcancel(?:l?ed|s)\b"),
    ],
    "sv": [
        ("inte", r"\binte\b|\bej\b"),
        ("aldrig", r"\baldrig\b"),
        ("ingen", r"\bingen\b|\binget\b|\binga\b|\butan\b"),      # forward only
        ("slutat", r"\bslut(?:at|ade|ar)\b(?=\s+[^\W\d_])|\b(?:gett|gav|givit|ger) upp\b|"
                   r"\b(?:lagt|lade|la) av\b"),
        ("sålt", r"\bsål(?:t|de)\b|\bstul(?:en|its)\b|\bstals\b|\btappa(?:t|de)\b"),
        ("osäker", r"\bosäker\b|\btveksam\b|\bobestämd\b"),
    ],
    "zh": [
        # 不 also starts words that negate nothing: 不错 (good), 不过 (but), 不少 (many), 不得不
        # (must), 差不多 (about)...
        ("不", r"(?<![差得])不(?!错|过|同|少|断|仅|久|管|但|得不|论|如|然|止)"),
        ("没", r"没(?!错|关系|问题)"),
        ("别", r"别(?!的|人|处|墅)"),
        ("戒", r"戒(?:掉|了|烟|酒)"),
        ("放弃", r"放弃|停止|停了|卸载|删掉|删除"),
        ("卖了", r"卖(?:了|掉)|丢了|被偷"),
        ("犹豫", r"犹豫|不确定|没决定"),
    ],
}

NEGATIVE_WORDS: dict[str, list[tuple[str, str]]] = {
    "en": [
        ("hates", r"\bhat(?:e|es|ed|ing)\b|\bdislik(?:e|es|ed|ing)\b|\bdetest\w*|\bcan't stand\b"),
        ("avoids", r"\bavoid(?:s|ed|ing)?\b|\bskip(?:s|ped|ping)?\b|\bleave (?:[\w'-]+ ){0,3}out\b"),
        ("boring", r"\bbor(?:ing|ed)\b|\bdull\b|\btedious\b|\bfiddly\b|\bannoy\w*|\bfrustrat\w*"),
        ("hard", r"\bhard\b|\bdifficult\w*|\bstruggl\w*|\bconfus\w*|\bmix(?:es|ed)? up\b|\bmixed up\b"),
        ("stress", r"\bstress\w*|\banxious\b|\banxiety\b|\boverwhelm\w*|\bworr(?:y|ies|ied)\b|\bafraid\b|"
                   r"\bscared\b|\bfears?\b|\btired of\b|\bfed up\b|\bsick of\b"),
        ("bad", r"\bbad(?:ly)?\b|\bworse\b|\bworst\b|\bterrible\b|\bawful\b|\bpoor(?:ly)?\b|\bweak(?:er|est)?\b|"
                r"\bwrong\b|\bslow(?:ly|er)?\b|\bbroken\b|\bfail(?:s|ed|ing|ure)?\b|\bkeeps? missing\b"),
        ("problem", r"\bbugs?\b|\bproblems?\b|\bissues?\b|\berrors?\b|\bmistakes?\b|\bglitch\w*"),
        ("allergic", r"\ballerg\w*|\bintoleran\w*"),
        ("too", r"\btoo (?!much\b|many\b|\.|$)[^\W\d_]+|\btoo (?:much|many)\b(?=\s+\w)"),
    ],
    "sv": [
        ("ogillar", r"\bogill(?:ar|ade|at)\b|\bhat(?:ar|ade|at)\b|\bundvik(?:er|it)\b|\bundvek\b|\bhoppar över\b"),
        # Swedish compounds put intensifiers in front: "jättesvårt", "supertråkigt".
        ("svårt", r"svår(?:t|a|are|ast)?\b|\bjobbig(?:t|a)?\b|\bkämpar\b|\bblandar ihop\b"),
        ("tråkigt", r"tråkig(?:t|a)?\b|\bstress\w*|\borolig\w*|\brädd\b|\bnervös\w*"),
        ("dålig", r"\bdålig(?:t|a)?\b|\bsämre\b|\bsämst\b|\blångsam\w*|\bfel\b|\bproblem\w*|\bbugg\w*"),
        ("allergisk", r"\ballergi\w*|\bintolerant\w*|\böverkänslig\w*"),
    ],
    "zh": [
        ("讨厌", r"讨厌|厌恶|受不了|反感"),
        ("枯燥", r"枯燥|无聊|没意思|烦"),
        ("难", r"(?<!困)难(?!忘|得)|困难|吃力|头疼|头痛|短板|弱|差(?!不多)|慢|卡在|起不来"),
        ("怕", r"害?怕|焦虑|压力|紧张|担心"),
        ("问题", r"问题|毛病|bug|故障|拖延"),
        ("过敏", r"过敏|不耐受"),
    ],
}

REMEDIES: dict[str, list[tuple[str, str]]] = {
    "en": [("fixed", r"\bfix(?:ed|es)\b|\bresolv(?:ed|es)\b|\bsolv(?:ed|es)\b|\bimprov(?:ed|es)\b|\bovercame\b")],
    "sv": [("fixat", r"\bfixa(?:t|de|d)\b|\blös(?:t|te)\b|\båtgärda(?:t|de)\b|\bförbättra(?:t|de)\b")],
    "zh": [("修复", r"修复|修好|解决|改善|改进|克服")],
}

# Phrases built from negations that mean something positive: blanked before negation is looked for.
NEGATED_POSITIVES: dict[str, list[tuple[str, str]]] = {
    "en": [("can't get enough", r"\bcan't get enough of\b|\bnever misses\b|\bcan't wait\b|\bno problem\b|"
                                r"\bnot bad\b|\bno doubt\b")],
    "sv": [("kan inte få nog", r"\bkan inte få nog\b|\binte dåligt\b|\binga problem\b")],
    "zh": [("无辣不欢", r"无.{1,2}不欢|没问题|不错")],
}

# Words that state a negative without a negator: "Is vegetarian" says "does not eat meat".
# Each row: (label, pattern, topic words the negation is about). They count as negative words,
# so "Is no longer vegetarian" comes out positive.
IMPLIED_NEGATIONS: dict[str, list[tuple[str, str, str]]] = {
    "en": [
        # Everyday "vegetarian" excludes fish too; a pescatarian eats fish.
        ("vegetarian", r"\bvegetarian\b", "meat fish"),
        ("pescatarian", r"\bpescatarian\b", "meat"),
        ("vegan", r"\bvegan\b", "meat fish dairy eggs milk cheese"),
        ("teetotal", r"\bteetotal(?:ler)?\b|\bsober\b", "alcohol drinks"),
        ("non-smoker", r"\bnon-?smoker\b", "smokes smoking"),
    ],
    "sv": [
        ("vegetarian", r"\bvegetarian\b", "kött fisk"),
        ("vegan", r"\bvegan\b", "kött fisk mjölk ost ägg"),
        ("nykterist", r"\bnykterist\b|\bnykter\b", "alkohol dricker"),
        ("icke-rökare", r"\bicke-?rökare\b", "röker röka"),
    ],
    "zh": [
        ("素食", r"素食|吃素", "肉 鱼"),
    ],
}

# Opposite words: one memory says A, the other B, about the same thing. Each row: (label A,
# pattern A, label B, pattern B).
ANTONYMS: dict[str, list[tuple[str, str, str, str]]] = {
    "en": [
        ("optional", r"\boptional\b", "mandatory", r"\bmandatory\b|\brequired\b|\bcompulsory\b|\bobligatory\b"),
        ("enabled", r"\benabled\b|\bturned on\b", "disabled", r"\bdisabled\b|\bturned off\b"),
        ("free", r"\bfree of charge\b|\bis free\b|\bfor free\b", "paid", r"\bpaid\b|\bcosts? extra\b"),
        ("public", r"\bpublic\b", "private", r"\bprivate\b"),
        ("single", r"\bsingle\b", "married", r"\bmarried\b|\bengaged\b|\bhusband\b|\bwife\b"),
        ("allowed", r"\ballowed\b|\bpermitted\b", "forbidden", r"\bforbidden\b|\bprohibited\b|\bbanned\b"),
        ("morning person", r"\bmorning person\b|\bearly bird\b", "night owl", r"\bnight owl\b"),
        ("introvert", r"\bintrovert\w*", "extrovert", r"\bextrovert\w*"),
    ],
    "sv": [
        ("valfri", r"\bvalfri(?:tt|a)?\b|\bfrivillig\w*", "obligatorisk", r"\bobligatorisk\w*|\bkrävs\b"),
        ("singel", r"\bsingel\b", "gift", r"\bgift\b|\bförlovad\b"),
        ("gratis", r"\bgratis\b|\bkostnadsfri\w*", "betald", r"\bbetal(?:d|t|as)\b|\bkostar\b"),
        ("tillåten", r"\btillåt(?:en|et|na)\b", "förbjuden", r"\bförbjud(?:en|et|na)\b"),
    ],
    "zh": [
        ("可选", r"可选|可以不", "必须", r"必须|强制|必选"),
        ("免费", r"免费", "收费", r"收费|付费"),
        ("单身", r"单身", "结婚", r"结婚|已婚|订婚"),
        ("允许", r"允许", "禁止", r"禁止"),
    ],
}

# Explicitly positive words. A polarity flip needs explicit evidence on the affirmative side (one
# of these near the topic) unless the newer memory itself signals a change: a paraphrase that
# merely lacks a negative word ("Finds German paperwork overwhelming" beside "German bureaucracy
# stresses him out") is not a flip.
POSITIVE_CUES: dict[str, list[tuple[str, str]]] = {
    "en": [("likes", r"\blik(?:e|es|ed|ing)\b"), ("loves", r"\blov(?:e|es|ed|ing)\b"),
           ("enjoys", r"\benjoy(?:s|ed|ing)?\b"), ("fun", r"\bfun\b|\binteresting\b|\bgreat\b|\bgood at\b"),
           ("prefers", r"\bprefer(?:s|red)?\b"), ("fond of", r"\bfond of\b|\bkeen on\b|\binto\b"),
           ("available", r"\bavailable\b|\bsupported\b|\bincluded\b|\bworks fine\b|\bconfident\b")],
    "sv": [("gillar", r"\bgill(?:ar|ade|at)\b"), ("älskar", r"\bälsk(?:ar|ade|at)\b"),
           ("tycker om", r"\btyck(?:er|te) om\b"), ("rolig", r"\brolig(?:t|a)?\b|\bkul\b"),
           ("föredrar", r"\bföredr(?:ar|og)\b"), ("trivs", r"\btrivs\b|\bsäker(?:are)?\b|\bbra på\b"),
           ("tillgänglig", r"\btillgänglig\w*|\bstöds\b|\bingår\b")],
    "zh": [("喜欢", r"喜欢|喜爱|热爱|偏爱"), ("爱", r"爱"), ("有趣", r"有趣|好玩|有意思|不错"),
           ("享受", r"享受"), ("支持", r"支持|可用|上线")],
}
# Words of opinion that are neither positive nor negative; kept out of the topic all the same.
NEUTRAL_CUES: dict[str, list[tuple[str, str]]] = {
    "en": [("finds", r"\bfind(?:s)?\b|\bthinks?\b|\bfeels?\b|\bsays?\b")],
    "sv": [("tycker", r"\btycker\b|\bkänner\b|\btänker\b")],
    "zh": [("觉得", r"觉得|感觉|认为")],
}

# Change words: the memory reports a change. Only the labels in SWITCH_LABELS make the generic
# switch rule fire: "Started learning Swedish" does not replace "Takes Swedish classes", and a bare
# "change" is as often a topic ("how to change the VAT rate") as a change.
CHANGE_CUES: dict[str, list[tuple[str, str]]] = {
    "en": [
        ("switched", r"\bswitch(?:ed|es)\b"), ("changed", r"\bchanged\b"),
        ("moved", r"\bmov(?:ed|es)\b|\brelocated\b"), ("migrated", r"\bmigrated\b"),
        ("replaced", r"\breplaced\b|\bswapped\b"), ("instead", r"\binstead\b|\brather than\b"),
        ("upgraded", r"\bupgraded\b|\bdowngraded\b|\brewrote\b|\brebuilt\b|\bported\b|\bredesigned\b"),
        ("postponed", r"\bpostpon\w*|\bpushed\b|\bdelayed\b|\bbrought forward\b|\bextended\b|\btightened\b|"
                      r"\braised\b|\blowered\b|\bcut down\b|\breduced\b|\bincreased\b"),
        ("launched", r"\blaunch(?:ed|es)\b|\breleased\b|\bintroduced\b|\badded\b|\bshipped\b"),
        ("decided", r"\bdecided\b|\bsigned up\b|\bregistered\b|\benrolled\b|\bbooked\b|\bcommitted\b"),
        ("no longer", r"\bno longer\b|\bany ?more\b|\bany longer\b"),
        ("stopped", r"\bstop(?:s|ped|ping)?\b|\bquit(?:s|ting)?\b|\b(?:gave|given|gives) up\b"),
        ("started", r"\bstart(?:s|ed|ing)\b|\bbeg(?:an|un|ins)\b|\b(?:took|taken|takes) up\b"),
        ("again", r"\bagain\b"),
        # Losing something is a change event too ("His Brompton was stolen"). Finishing is not
        # counted: "finished the half marathon" does not end "easy weeks after the half marathon".
        ("lost", r"\b(?:sold|stolen|lost|got rid of|gave away|uninstall(?:ed|s)?|deleted|cancell?ed)\b"),
    ],
    "sv": [
        ("bytt", r"\bbyt(?:t|te)\b"), ("flyttat", r"\bflytt(?:at|ade)\b"),
        ("ändrat", r"\bändr(?:at|ade)\b"), ("istället", r"\bistället\b|\bi stället\b"),
        ("gått över", r"\b(?:gått|gick) över\b|\bövergått\b|\buppgraderat\b"),
        ("inte längre", r"\binte(?: [^\W\d_]+){0,3}? längre\b"),
        ("slutat", r"\bslut(?:at|ade|ar)\b"), ("börjat", r"\börj(?:at|ade|ar)\b"), ("igen", r"\bigen\b"),
        ("skjutit upp", r"\bskjut(?:it|er) upp\b|\bsköt upp\b|\bförläng\w*|\bhöj(?:t|de)\b|\bsänk(?:t|te)\b"),
        ("lanserat", r"\blansera(?:t|de)\b|\bsläppt\b|\binför(?:t|de)\b"),
        ("bestämt", r"\bbestäm(?:t|de)\b|\banmäl(?:t|de)\b|\bbokat\b"),
        ("sålt", r"\bsål(?:t|de)\b|\bstul(?:en|its)\b|\bstals\b|\btappa(?:t|de)\b|\bavinstallera\w*"),
    ],
    "zh": [
        ("改成", r"改成|换成|改为|换为|改用|换用|换到|转到|转而|改去|换了"), ("搬到", r"搬到|搬去|搬回"),
        ("不再", r"不再"), ("开始", r"开始"), ("而不是", r"而不是"), ("戒", r"戒(?:掉|了)"),
        ("推迟", r"推迟|提前|提高|降低|延长|调整"), ("卖了", r"卖(?:了|掉)|丢了|被偷|卸载|删掉"),
        ("上线", r"上线|推出|发布"), ("决定", r"决定|报名|报了"),
    ],
}
SWITCH_LABELS: Final = frozenset({"switched", "changed", "moved", "migrated", "replaced", "instead", "upgraded",
                                  "bytt", "flyttat", "ändrat", "istället", "gått över", "改成", "搬到", "而不是"})

# Weak change words: "now" often only stresses the present ("Now works remotely on Fridays").
WEAK_CHANGE_CUES: dict[str, list[tuple[str, str]]] = {
    "en": [("now", r"\bnow\b|\bnowadays\b|\bthese days\b|\bcurrently\b|\blately\b"),
           ("new", r"\bnew\b|\bupdated?\b")],
    "sv": [("nu", r"\bnu\b|\bnumera\b|\bnumer\b|\bnuförtiden\b"), ("ny", r"\bny(?:tt|a)?\b")],
    "zh": [("现在", r"现在|目前|如今|已经|最近"), ("新", r"新的|换新|更新")],
}

# The whole memory is about the past ("Used to live in Manchester").
PAST_CUES: dict[str, list[tuple[str, str]]] = {
    "en": [("used to", r"\bused to\b|\bformerly\b|\bpreviously\b|\bin the past\b")],
    "sv": [("brukade", r"\bbrukade\b|\btidigare\b|\bförut\b|\bförr\b")],
    "zh": [("以前", r"^(?:我)?(?:以前|曾经|过去)")],
}

# Clause boundaries: a negation in one clause says nothing about a word in the next.
CLAUSE_BREAKS: Final = (r"[;!?。，；！？]|[,.](?!\d)|\b(?:but|however|although|though|whereas|while|and)\b|"
                        r"\b(?:men|och|utan att)\b|但是|但|不过|可是|而且|并且|以及|和")
# What follows these is the dispreferred side ("would rather run outside than on a treadmill").
DISPREFERRED: Final = (r"\b(?:than|rather than|instead of|over)\b|\b(?:hellre|snarare) än\b|"
                       r"\b(?:istället|i stället) för\b|而不是|比起")
# How many words (or Chinese characters) away from a topic word a polarity cue still counts.
CUE_WINDOW: Final = 5
# Negators that are determiners or prepositions reach only forward, to their noun: "without a
# dictionary" says nothing about "read", "no heavy ORM" nothing about "SQL".
FORWARD_ONLY: Final = frozenset({"no", "ingen"})

# --- attribute templates ----------------------------------------------------
# A value runs to the first qualifier ("Uses SQLite | for the side project"); residence values
# keep "in" ("a flat in Paris") so that "Lives in a flat in Paris" still agrees with "Lives in Paris".
_EN_CUT = (r"(?=\s+(?:in|at|for|on|as|with|since|because|after|before|during|when|instead|over|from|to|"
           r"every|each|this|next|last|until|but|so|now|again|anymore|any more)\b|\s*[,;:.!?()](?!\d)|$)")
_EN_RES_CUT = (r"(?=\s+(?:with|since|because|after|when|for|until|but|so|now|again|and)\b|"
               r"\s*[,;:.!?()](?!\d)|$)")
_SV_CUT = (r"(?=\s+(?:i|på|för|som|med|sedan|sen|eftersom|efter|när|istället|till|varje|nu|numera|igen|"
           r"och|men)\b|\s*[,;:.!?()](?!\d)|$)")
_SV_RES_CUT = r"(?=\s+(?:med|sedan|sen|eftersom|efter|när|för|och|men|nu|numera)\b|\s*[,;:.!?()](?!\d)|$)"
_ZH_CUT = r"(?=[了的啦呢吧啊]*(?:$|[,.;:!?，。；：！？](?!\d)|和|跟|与|工作|上班|读书|生活|写|来))"

# A point or colon between digits belongs to a number ("6.5", "8:00"), not to the punctuation.
_NUM_SEP = r"(?<=\d)[.:,](?=\d)"
_VAL = rf"(?:[^,;:.!?()]|{_NUM_SEP})+?"
_EN_V = rf"(?P<v>{_VAL}){_EN_CUT}"
_EN_RES_V = rf"(?P<v>{_VAL}){_EN_RES_CUT}"
_SV_V = rf"(?P<v>{_VAL}){_SV_CUT}"
_SV_RES_V = rf"(?P<v>{_VAL}){_SV_RES_CUT}"
# Chinese values may hold Latin words with spaces ("一台 Windows 笔记本"); a leading measure
# word ("一台", "一个") is not part of the value.
_ZH_MEASURE = r"(?:[一两几]\s*[台个部辆家间只本件款]\s*)?"
_ZH_V = rf"{_ZH_MEASURE}(?P<v>(?:[^,.;:!?，。；：！？]|{_NUM_SEP})+?){_ZH_CUT}"
_EN_ADV = r"(?:(?:now|currently|still|also|actually|recently|just|finally|has|have|had|then|later)\s+)*"
_SV_ADV = r"(?:(?:nu|numera|numer|fortfarande|också|har|hade|nyss|precis|just|äntligen|sedan)\s+)*"
# Attributes with one value at a time. Not "goal": people have several (numbers in goals are
# still compared by the numeric rule).
_EN_HEADS = (r"budget|deadline|due date|salary|rent|name|birthday|hometown|main \w+|"
             r"primary \w+|preferred \w+|go-to \w+|default \w+|favou?rite \w+")
_SV_HEADS = r"budget(?:en)?|deadline(?:n)?|lönen|hyran|namnet|huvud\w+|favorit\w+"
_ZH_HEADS = r"预算|截止日期|工资|房租|名字|最(?:喜欢|爱)的[^是]{1,6}"
_EN_CHANGE_VERB = (r"(?:switch(?:ed|es|ing)?|chang(?:e|ed|es|ing)|mov(?:e|ed|es|ing)|migrat(?:e|ed|es|ing)|"
                   r"convert(?:ed|s|ing)?|transition(?:ed|s)?|upgrad(?:e|ed|es)|downgrad(?:e|ed|es)|"
                   r"pushed|postponed|raised|lowered|increased|reduced|extended|tightened|cut)")

# Each row: (attribute, single-valued?, role, pattern). Roles: "current" (holds now), "target" (the
# value after a change), "past" (the value before a change). A pattern may also name groups
# "old" (a past value), "attr" (refines the attribute) and "obj" (context, kept out of the value).
TEMPLATES: dict[str, list[tuple[str, bool, str, str]]] = {
    "en": [
        ("residence", True, "current",
         rf"\b(?:lives|living|live|resides|residing|based|settled|staying) in {_EN_RES_V}"),
        ("residence", True, "target",
         rf"^{_EN_ADV}(?:moved|relocated|moving|relocating|moves) (?:back |over )?to {_EN_RES_V}"),
        ("employer", True, "current",
         rf"\b(?:works|working|work|employed|job|employee|intern|engineer|designer|researcher) "
         rf"(?:at|for|with) {_EN_V}"),
        ("employer", True, "target",
         rf"\b(?:joined|(?:started|starting|got|took|accepted) (?:a |the )?(?:new )?(?:job|position|role|working) "
         rf"(?:at|with|for)|new job at|hired (?:at|by)) {_EN_V}"),
        ("tool", False, "current", rf"\b(?:uses|using|use) {_EN_V}"),
        ("preference", True, "current", rf"\bprefer(?:s|red)? {_EN_V}"),
        ("age", True, "current", r"\b(?P<v>\d{1,3}) (?:years?|yrs?) old\b"),
        ("age", True, "target", r"\b(?:turned|turns|just turned) (?P<v>\d{1,3})\b"),
        ("head", True, "current",
         rf"\b(?P<attr>{_EN_HEADS})(?: for (?P<obj>[\w' -]+?))? (?:is|are|was|will be) {_EN_ADV}"
         rf"(?:set (?:to|for) )?{_EN_RES_V}"),
        ("head", True, "target",
         rf"\b(?P<attr>{_EN_HEADS})(?: for (?P<obj>[\w' -]+?))? (?:was |has been |got |is |have been )?"
         rf"{_EN_CHANGE_VERB}(?: back| forward| up| down)? to {_EN_RES_V}"),
        ("switch", False, "target",
         rf"\bfrom (?P<old>[^,;:.!?()]+?) to {_EN_V}"),
        ("switch", False, "target",
         rf"\b{_EN_CHANGE_VERB}(?P<obj>(?: (?!to\b|from\b)[\w'-]+){{0,4}}?)(?: over| back)? to (?!be\b){_EN_V}"),
        ("switch", False, "target",
         rf"\b(?:rewrote|rebuilt|ported|redid|redesigned)(?P<obj>(?: (?!in\b)[\w'-]+){{0,4}}?) "
         rf"(?:in|with|using) {_EN_V}"),
        ("switch", False, "target", rf"\breplac(?:ed|es|ing) (?P<old>[^,;:.!?()]+?) with {_EN_V}"),
        ("switch", False, "past", rf"\b(?:instead of|rather than) (?P<v>[^,;:.!?()]+)"),
    ],
    "sv": [
        ("residence", True, "current", rf"\b(?:bor|bosatt|boende) (?:i|på) {_SV_RES_V}"),
        ("residence", True, "target",
         rf"^{_SV_ADV}(?:flyttat|flyttade|flyttar|flytta) (?:hem |tillbaka )?till {_SV_RES_V}"),
        ("employer", True, "current",
         rf"\b(?:jobbar|arbetar|jobbade|arbetade|anställd|praktiserar) (?:{_SV_ADV})?(?:på|hos|för|vid) {_SV_V}"),
        ("employer", True, "target",
         rf"\b(?:(?:börjat|började|börjar) (?:jobba |arbeta )?|nytt jobb )(?:på|hos) {_SV_V}"),
        ("tool", False, "current", rf"\b(?:använder|kör med) {_SV_V}"),
        ("preference", True, "current", rf"\bföredr(?:ar|og) {_SV_V}"),
        ("age", True, "current", r"\b(?:är|blev|fyllde|fyller) (?P<v>\d{1,3}) år\b"),
        ("head", True, "current",
         rf"\b(?P<attr>{_SV_HEADS})(?: för (?P<obj>[\w -]+?))? (?:är|var|blir) {_SV_ADV}{_SV_RES_V}"),
        ("switch", False, "target", rf"\bfrån (?P<old>[^,;:.!?()]+?) till {_SV_V}"),
        ("switch", False, "target",
         rf"\b(?:byt(?:t|te|er|a)|gått över|gick över|övergått|ändr(?:at|ade|ar)|flytt(?:at|ade|ar|a)|"
         rf"uppgraderat)"
         rf"(?P<obj>(?: (?!till\b|från\b)[\w-]+){{0,3}}?) till {_SV_V}"),
        ("switch", False, "target", rf"\bersatt (?P<old>[^,;:.!?()]+?) med {_SV_V}"),
        ("switch", False, "past", r"\b(?:istället|i stället) för (?:att )?(?P<v>[^,;:.!?()]+)"),
    ],
    "zh": [
        ("residence", True, "current", rf"(?:住在|定居在?|居住在|生活在){_ZH_V}"),
        ("residence", True, "target", rf"(?:搬到|搬去|搬回|迁到|移居到?)了?{_ZH_V}"),
        ("employer", True, "current",
         r"在(?P<v>[^,.;:!?，。；：！？\s找想要做准备]{1,8}?)(?:工作|上班|任职|实习)"),
        ("employer", True, "target",
         r"(?:入职|跳槽到|加入)了?(?P<v>[^,.;:!?，。；：！？\s]{1,12}?)(?=$|[了的,.;:!?，。；：！？\s]|工作|上班)|"
         r"(?:换到|转到|去|到)了?(?P<v2>[^,.;:!?，。；：！？\s]{1,12}?)(?:工作|上班|任职)"),
        ("tool", False, "current", rf"^(?:现在|目前|平时|一直|主要)?(?:使用|在用|用){_ZH_V}"),
        ("preference", True, "current", rf"(?:更喜欢|最喜欢|最爱|偏爱|偏好)(?!的){_ZH_V}"),
        ("age", True, "current", r"(?P<v>\d{1,3})\s*岁"),
        ("head", True, "current", rf"(?P<attr>{_ZH_HEADS})(?:是|为|定为|定在){_ZH_V}"),
        ("head", True, "target", rf"(?P<attr>{_ZH_HEADS})(?:提高|降低|改|调整|推迟|提前)(?:到|为|成)了?{_ZH_V}"),
        ("switch", False, "target",
         rf"从(?P<old>[^,.;:!?，。；：！？]+?)(?:换|改|搬|转|切换)(?:成|到|为|去)了?{_ZH_V}"),
        ("switch", False, "target", rf"(?:改成|换成|改为|换为|改用|换用|切换到|转到|换到|换了)了?{_ZH_V}"),
        ("switch", False, "past", r"而不是(?P<v>[^,.;:!?，。；：！？]+)"),
    ],
}

# Values that name a setting, not an attribute's value ("Works at home", "在家工作").
GENERIC_VALUES: Final = frozenset({"home", "office", "work", "night", "weekend", "hemma", "jobbet", "kontoret",
                                   "家", "公司", "家里"})
# Words that carry no topic: auxiliaries and fillers that bm25s' short English list keeps.
_TOPIC_FILLER: Final = frozenset({
    "has", "have", "had", "doe", "does", "did", "doesn", "don", "didn", "isn", "wasn", "aren", "won", "can",
    "is", "be", "been", "get", "got", "gets", "also", "just", "still", "only", "realli", "really", "veri", "very",
    "all", "ani", "any", "want", "wants", "decid", "decided", "plan", "plans", "will", "would", "user", "think",
    "feel", "thing", "lot", "much", "mani", "more", "after", "year", "week", "day", "month", "time", "usual",
    "often", "alway", "always", "keep", "keeps", "most", "mostli",
    "är", "har", "hade", "blir", "vill", "ska", "kan", "mycket", "också", "bara", "helt", "ganska",
    "是", "了", "的", "在", "很", "也", "都", "就", "还", "会", "要", "想", "觉", "得", "觉得", "有", "天", "每", "每天",
    "自己", "我们", "他们", "她们", "大家",
})
# A shared topic made only of these is too vague to carry a polarity flip with full confidence.
_GENERIC_TOPIC: Final = frozenset({"work", "job", "jobb", "day", "morn", "even", "night", "home", "week",
                                   "time", "peopl", "thing", "工作", "时间", "早上", "晚上"})
_CJK_PARTICLES: Final = frozenset("了的是在很也都就还把被着吗呢吧啊")
_VALUE_FILLER: Final = frozenset({
    "the", "a", "an", "my", "his", "her", "their", "its", "our", "in", "on", "at", "to", "of", "and", "or", "some",
    "en", "ett", "den", "det", "min", "mitt", "sin", "sitt", "sina", "och", "eller", "i", "på", "till",
})
_SV_MARKERS: Final = frozenset({
    "och", "att", "är", "har", "inte", "jag", "med", "för", "till", "av", "om", "en", "ett", "den", "det", "som",
    "bor", "nu", "varje", "på", "sig", "sin", "sitt", "gillar", "tycker", "aldrig", "numera", "igen", "hos",
    "slutat", "börjat", "bytt", "flyttat", "istället", "längre", "brukade", "helgerna",
})
_SV_SUFFIXES: Final = ("arna", "erna", "orna", "heten", "ande", "ende", "ade", "are", "ast", "het",
                       "en", "et", "ar", "er", "or", "at", "na", "a", "e")

# A memory's named subject: a capitalised name opening it, followed by a verb from this list
# ("Anders moved to Oslo", "Elin bor i Umeå") or by a possessive and a noun ("Yara's father lives
# in Porto"). Two memories about different named people never contradict each other; a memory
# without such a subject ("Prefers tea", "User is vegan", "I moved to Oslo") names nobody.
SUBJECT_VERBS: Final = frozenset({
    "is", "was", "are", "were", "has", "had", "have", "lives", "lived", "moved", "moves", "works", "worked",
    "prefers", "preferred", "likes", "liked", "loves", "loved", "hates", "hated", "dislikes", "disliked",
    "drinks", "drank", "eats", "ate", "plays", "played", "studies", "studied", "owns", "owned", "uses", "used",
    "wants", "wanted", "plans", "planned", "will", "would", "can", "cannot", "can't", "does", "did", "doesn't",
    "didn't", "isn't", "wasn't", "never", "always", "now", "no", "just", "recently", "started", "stopped", "quit",
    "got", "became", "switched", "teaches", "taught", "runs", "ran", "speaks", "spoke", "joined", "left",
    "bor", "bodde", "flyttade", "flyttar", "jobbar", "jobbade", "arbetar", "arbetade", "föredrar", "gillar",
    "älskar", "hatar", "har", "hade", "är", "var", "ska", "vill", "kan", "dricker", "äter", "spelar", "studerar",
    "pluggar", "äger", "använder", "slutade", "började", "bytte", "talar", "pratar", "tycker", "brukar",
})
# Openers that are capitalised but are no one's name.
_NOT_NAMES: Final = frozenset({"i", "user", "the", "my", "we", "he", "she", "they", "you", "it", "this", "that",
                               "our", "his", "her", "their", "jag", "vi", "han", "hon", "de", "den", "det", "min",
                               "mitt", "användaren"})
_SUBJECT: Final = re.compile(r"([A-ZÅÄÖÆØÉ][\w-]*(?: [A-ZÅÄÖÆØÉ][\w-]*)*)(?:(['’]s|s['’]) ([a-zåäö][\w-]*)| ([\w'’-]+))")


# --------------------------------------------------------------------------- #
# The same-subject candidate rule and the supersede signals (conflicts/subject.py)
# --------------------------------------------------------------------------- #
# What a memory is about, whatever it says of it: where someone lives, their diet, pets, work, a
# relationship, a habit, a sport, a study plan, their devices and how they get around, what they
# drink, play, read, write code in and host on. Two memories that name one slot (or share a content
# word) are about the same subject; a shared topic ("food", "travel") is not enough. A slot is one
# subject in three languages: across two, the memories share no word, only the slot ("Föredrar kaffe"
# / "不喝咖啡了"). Patterns run on casefolded text with simplified Chinese.
SUBJECT_SLOTS: dict[str, dict[str, str]] = {
    "residence": {"en": r"\b(?:lives?|lived|living|moved|moving|relocat\w*|home is|flat|apartment|house)\b",
                  "sv": r"\b(?:bor|bodde|bott|flytta\w*|lägenhet\w*|hus(?:et)?|hem(?:ma)?)\b",
                  "zh": r"住|搬|公寓|房子"},  # not 老家: a hometown is where someone is from, another subject
    "diet": {"en": r"\b(?:vegetarian|vegan|meat|pescatarian|eats?|diet)\b",
             "sv": r"\b(?:vegetarian|vegan|kött|äter|kost)\b", "zh": r"素|吃肉|肉|饮食"},
    "pets": {"en": r"\b(?:dogs?|cats?|pets?|pupp(?:y|ies)|rabbits?|horses?)\b",
             "sv": r"\b(?:hund\w*|katt\w*|husdjur|valp\w*|kanin\w*|häst\w*)\b", "zh": r"狗|猫|宠物|兔"},
    "work": {"en": r"\b(?:works?|working|job|employ\w*|unemployed|office|career)\b",
             "sv": r"\b(?:jobb\w*|arbet\w*|kontor\w*|anställ\w*)\b", "zh": r"工作|上班|失业|办公"},
    "relationship": {"en": r"\b(?:married|marri\w*|divorc\w*|single|girlfriend|boyfriend|partner|wife|husband)\b",
                     "sv": r"\b(?:gift|skild\w*|skilde|singel|flickvän|pojkvän|sambo|fru)\b",
                     "zh": r"结婚|离婚|单身|女朋友|男朋友|伴侣|妻子|丈夫"},
    "smoking": {"en": r"\b(?:smok\w*|cigarettes?|vap\w*)\b", "sv": r"\b(?:rök\w*|cigarett\w*|snus\w*)\b", "zh": r"烟"},
    "alcohol": {"en": r"\b(?:alcohol|wine|beer)\b", "sv": r"\b(?:alkohol|vin|öl)\b", "zh": r"酒"},
    "transport": {"en": r"\b(?:drives?|car|cycl\w*|bikes?|commut\w*)\b", "sv": r"\b(?:bil\w*|cykl\w*|pendl\w*)\b",
                  "zh": r"开车|车|骑车|通勤"},
    "study": {"en": r"\b(?:stud\w*|universit\w*|degree|course|learning|learn|school|college|master's|phd|thesis|"
                    r"exams?|semester)\b",
              "sv": r"\b(?:läs(?:a|er)|plugg\w*|universitet\w*|utbildning\w*|kurs\w*|lär|skola\w*|högskola\w*|"
                    r"examen|tent(?:a|or|an)|termin\w*|master\w*|doktorand\w*)\b",
              "zh": r"读|学|大学|课程|硕士|博士|考试|专业|论文"},
    "device": {"en": r"\b(?:phone|iphone|android|laptop|computer|windows|linux|mac\w*)\b",
               "sv": r"\b(?:telefon\w*|iphone|android|laptop\w*|dator\w*|windows|linux|mac\w*)\b",
               "zh": r"手机|电脑|iphone|安卓|windows|linux"},
    "sport": {"en": r"\b(?:runs?|running|swim\w*|pool|gym|yoga|climb\w*|boulder\w*|chess|football|tennis|"
                    r"work(?:s|ing)? out|workouts?)\b",
              "sv": r"\b(?:spring\w*|löp\w*|sim\w*|badhus\w*|gym\w*|yoga|klättr\w*|schack|fotboll|tennis|träna\w*)\b",
              "zh": r"跑步|游泳|健身|瑜伽|攀岩|象棋|足球|网球|锻炼"},
    "drink": {"en": r"\b(?:coffee|espresso|latte|tea|matcha)\b", "sv": r"\b(?:kaffe\w*|espresso|latte|te|teet|matcha)\b",
              "zh": r"咖啡|茶"},
    "music": {"en": r"\b(?:guitar|piano|violin|cello|drums?|drummer|saxophone|ukulele|singing|choir|instruments?)\b",
              "sv": r"\b(?:gitarr\w*|piano\w*|fiol\w*|violin\w*|cello|trumm\w*|saxofon\w*|sjung\w*|körsång|"
                    r"instrument\w*)\b",
              "zh": r"吉他|钢琴|小提琴|大提琴|打鼓|架子鼓|鼓手|萨克斯|唱歌|合唱|乐器"},
    "reading": {"en": r"\b(?:books?|novels?|audiobooks?|crime fiction|sci-?fi|reads|reading)\b",
                "sv": r"\b(?:böcker|bok(?:en)?|roman(?:er)?|deckare|ljudböcker|läser)\b", "zh": r"看书|读书|小说|书"},
    "tools": {"en": r"\b(?:editor|ide|vs ?code|vim|neovim|emacs|intellij|pycharm|sublime)\b",
              "sv": r"\b(?:editor(?:n)?|vs ?code|vim|neovim|emacs|intellij|pycharm|sublime)\b",
              "zh": r"编辑器|vs ?code|vim|neovim|emacs|intellij|pycharm"},
    "hosting": {"en": r"\b(?:servers?|cloud|aws|azure|gcp|heroku|hetzner|vps|digitalocean|hosting|self-host\w*)\b",
                "sv": r"\b(?:server\w*|moln\w*|aws|azure|gcp|heroku|hetzner|vps|digitalocean|hosting)\b",
                "zh": r"服务器|托管|云|aws|azure|heroku|hetzner"},
}

# Words too common to make two memories about one subject by being shared (as ``tokenize`` stems
# them): light verbs, and the pronouns and small words its stop lists keep.
SUBJECT_LIGHT_WORDS: Final = frozenset({
    "is", "has", "have", "had", "like", "likes", "prefer", "prefers", "now", "use", "uses", "get", "got",
    "his", "her", "him", "she", "them", "about", "from", "than", "instead", "also",
    "har", "är", "gillar", "föredrar", "nu", "numera", "använder", "sitt", "mer", "mest", "också", "iställ"})

# Supersede signals: words in the newer memory that say the older one no longer holds. Each row is
# (signal, pattern); the signal names it in evidence and decides how far it is trusted:
#   stop    the older habit or state ended: quit, gave up, no longer, cancelled, divorced, 不再, 放弃, 戒
#   move    a new place: moved to, flyttade, 搬到
#   switch  one thing replaced another: switched, instead, now prefers, bytt, istället, 换成, 改成
#   again   a stopped habit resumed ("started again", "igen", "又开始"); it counts only against an
#           older memory that says the habit stopped ("Went to the dentist again" is two events)
#   now     the newer is the current state (now, numera, 现在): trusted only with a shared slot
SUPERSEDE_SIGNALS: dict[str, list[tuple[str, str]]] = {
    # "n't" follows a letter ("doesn't"), so no word boundary stands before it.
    "en": [("stop", r"\b(?:quit|quitting|gave up|giv(?:e|en|ing) up|stopped|no longer|not any ?more|cancel+ed|sold|"
                    r"divorced|died|left)\b|(?:n't|\bnot)(?: \w+){1,2} any ?more\b"),
           ("move", r"\b(?:moved|relocated)\b"),
           ("switch", r"\b(?:switched|changed|instead|replaced|now prefers|prefers \w+ now)\b|\bfrom \w+.* to\b"),
           ("again", r"\b(?:again|back)\b"),
           ("now", r"\b(?:now|these days|nowadays|since)\b")],
    "sv": [("stop", r"\b(?:slutat|slutade|gett upp|gav upp|inte längre|inte \w+ längre|sagt upp|sade upp|sålde|"
                    r"skilde|dog)\b"),
           ("move", r"\b(?:flyttade|flyttat)\b"),
           ("switch", r"\b(?:bytt|bytte|istället|ändrat|gått över|föredrar numera|föredrar nu)\b"),
           ("again", r"\b(?:igen|tillbaka)\b"),
           ("now", r"\b(?:nu|numera|sedan)\b")],
    "zh": [("stop", r"不再|放弃|戒|退了|退订|离婚|去世|不\S{0,3}了|没有"),
           ("move", r"搬到|搬出|搬去|搬回|搬进"),
           ("switch", r"换成|换到|换了|改成|改\S|转\S|现在更喜欢"),
           ("again", r"又|重新|回到"),
           ("now", r"现在|如今|开始")],
}

# A plan or intention not yet carried out ("considering", "plans to", "applying for"): beside a memory
# without one on the same subject, the pair is a step forward (an update), never a duplicate to merge.
PLAN_CUES: dict[str, str] = {
    "en": r"\b(?:consider\w*|plans?|planning|thinking (?:about|of)|hop(?:es|ing) to|applying|preparing for|"
          r"training for|waiting for|saving (?:up )?for|looking (?:for|at)|intends? to|wants? to|would like to|"
          r"goals?|is \w+ing)\b",
    "sv": r"\b(?:funderar|överväger|planerar|hoppas|söker till|letar efter|tittar på|plugga\w* inför|träna\w* inför|"
          r"väntar på|sparar till|tänker|vill|mål|håller på att)\b",
    "zh": r"考虑|打算|计划|希望|在找|准备|在等|在攒|申请|想|目标|正在",
}

# A move that is not the person's own move to a new home: someone or something else moves (a named
# mover before the verb, "The company moved", "Sonen flyttade", "儿子搬到"; or a thing moved,
# "Moved the server to", "Flyttade båten till", "把船搬到"). It says nothing of where the person lives,
# so it counts against an older memory only when that memory names the same thing.
MOVED_OTHER: dict[str, str] = {
    "en": r"\b(?:the|his|her|their|its|our|my)\b(?: (?!and\b|then\b|but\b|so\b)[\w']+){1,4} (?:has |have |was |were )?"
          r"(?:moved|relocated)\b|\b(?:moved|relocated) (?:the|his|her|their|its|our|my|a|an|some|all)\b",
    "sv": r"^(?:(?:hennes|hans|deras|sin|sitt|sina) \w+|(?!sedan\b|igen\b|nyligen\b)\w+(?:en|et|na|rn))"
          r"(?: \w+){0,2} (?:har )?(?:flyttade|flyttat)\b|"
          r"\b(?:flyttade|flyttat) (?!igen\b|sedan\b|nyligen\b|sen\b)"
          r"(?:sin|sitt|sina|hans|hennes|deras|de|den|det|\w+(?:en|et|na|rn))\b",
    "zh": r"把\S+?搬|^[她他我]?的?(?:儿子|女儿|孩子|父母|爸爸|妈妈|母亲|父亲|哥哥|姐姐|弟弟|妹妹|朋友|同事|邻居|公司|团队)\S{0,6}搬",
}
# An older memory about a home in the past ("Grew up in Kiruna", "Bodde i London", "以前在伦敦住"): a
# move beside it replaces nothing that still holds.
FORMER_HOME: dict[str, str] = {
    "en": r"\b(?:grew up|was born|used to live)\b|(?<!has )(?<!have )\blived\b",
    "sv": r"\b(?:växte upp|föddes|bodde|brukade bo)\b",
    "zh": r"以前|曾经|过去|长大|出生",
}

# For merges only (``subject.moved_on``). A want ("wants", "vill", "希望") is a plan beside a deed or a
# habit ("Wants to learn the piano" / "Takes piano lessons"), but a preference beside a stated
# preference ("Vill ha korta svar" / "Föredrar korta svar"): ``PREFER_CUES``.
WANT_CUES: dict[str, str] = {
    "en": r"\b(?:wants?|would like|hop(?:es|ing))\b",
    "sv": r"\b(?:vill|hoppas|önskar)\b",
    "zh": r"希望|想要|想",
}
PREFER_CUES: dict[str, str] = {
    "en": r"\b(?:prefers?|likes?|loves?|enjoys?|favou?rite)\b",
    "sv": r"\b(?:föredrar|gillar|tycker om|älskar|favorit\w*)\b",
    "zh": r"喜欢|偏好|爱|更愿意",
}
# A state that waits for an outcome ("is pregnant", "applied for", "waiting for", "engaged"): beside a
# memory of the outcome without it, the subject moved on ("Had a baby girl", "Got the visa").
EXPECTATION_CUES: dict[str, str] = {
    "en": r"\b(?:pregnant|expecting (?:a|twins)|due (?:in|on|date)|engaged|appl(?:y|ied|ies|ying)|"
          r"waiting (?:for|on|list)|in (?:the|a) queue)\b",
    "sv": r"\b(?:gravid|väntar (?:barn|tvillingar|på)|beräknad|förlovad|förlovade|ansökt|sökt till|söker|\w*kö)\b",
    "zh": r"怀孕|怀了|预产期|订婚|申请|排队|在等|等待",
}
# "X instead of Y" states a standing choice; it moves on only beside a memory that names Y.
INSTEAD_OF: dict[str, str] = {
    "en": r"\binstead of\b",
    "sv": r"\bi ?stället för\b",
    "zh": r"而不是|代替|取代",
}
