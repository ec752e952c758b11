"""The durability rule's tables: per language, the cues that a memory is transient (a day's or a
week's state, a date, a holiday plan, a log of the chat or of a support ticket, a one-off event or
state) and the cues that keep it durable (a lasting change that starts now, a habit, a day that
comes back each year, a year, what says a memory lasts). ``durability.py`` compiles and runs them."""

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

# A habit: a weekday or a period that recurs is not a date ("every Thursday", "on Fridays", "every
# year"), and a thing done usually, always or often is not a state of one day.
HABIT: Final[dict[str, list[tuple[str, str]]]] = {
    "en": [("every", rf"\b(?:every|each)\s+(?:day|week|month|year|morning|evening|night|{_WD_EN})"),
           ("weekdays", rf"\b(?:{_WD_EN})s\b|\b(?:{_WD_EN}) (?:mornings|afternoons|evenings|nights)\b|\bweekdays\b"),
           ("times a week", r"\b(?:times?|once|twice) a (?:day|week|month|year)\b"),
           ("usually", r"\b(?:usually|always|often|normally|regularly|tends? to)\b")],
    "sv": [("varje", rf"\b(?:varje|var)\s+(?:dag|vecka|månad|år|morgon|kväll|{_WD_SV})"),
           ("på måndagar", rf"\bpå\s+(?:{_WD_SV})ar\b|\b(?:{_WD_SV})s(?:morgnar|kvällar|eftermiddagar)\b|\bvardagar\b"),
           ("gånger i veckan", r"\bgånger? i (?:veckan|månaden|året)\b"),
           ("brukar", r"\b(?:brukar|alltid|ofta|oftast|vanligtvis|regelbundet)\b")],
    "zh": [("每周", r"每(?:天|周|星期|个?礼拜|个?月|年|晚|早)|一周[一二三四五六七八九两]次"),
           ("习惯", r"习惯|只在(?:周|星期)|固定|通常|平时|总是|经常|常常|一到.{0,8}就")],
}

# A day that comes back each year ("Birthday is on 14 May", "fyller år den 3 maj", "生日是5月14日"):
# its date is who someone is, not a thing scheduled.
YEARLY: Final[dict[str, list[tuple[str, str]]]] = {
    "en": [("birthday", r"\b(?:birthday|anniversary|name day|born on)\b")],
    "sv": [("fyller år", r"\b(?:fyller år|födelsedag|namnsdag|bröllopsdag|född den)\b")],
    "zh": [("生日", r"生日|纪念日|出生")],
}

# A day: today, tonight, now, tomorrow, after work. Its state passes within days.
DAY: Final[dict[str, list[tuple[str, str]]]] = {
    "en": [("today", r"\b(?:today|today's|tonight|tonight's|this (?:morning|afternoon|evening))\b"),
           ("tomorrow", r"\btomorrow\b"),
           ("after work", r"\bafter work\b")],
    "sv": [("idag", r"\b(?:idag|i dag|ikväll|i kväll|kvällens|i morse|i eftermiddag|i eftermiddags|dagens)\b"),
           ("i morgon", r"\b(?:i morgon|imorgon)\b"),
           ("efter jobbet", r"\befter jobbet\b")],
    "zh": [("今天", r"今天|今晚|今早"), ("刚才", r"刚才|刚刚"), ("明天", r"明天|明早|明晚"),
           ("下班后", r"下班后")],
}

# Now: a state of this moment ("right now"), unless what it says lasts ("is learning Japanese right now").
NOW: Final[dict[str, list[tuple[str, str]]]] = {
    "en": [("now", r"\b(?:right now|at the moment)\b")],
    "sv": [("just nu", r"\b(?:just nu|för tillfället)\b")],
    "zh": [("此刻", r"此刻|这会儿")],
}

# A date of the year without a year ("on 20 March", "den 18 mars", "3月20日"): a thing scheduled.
DATE: Final[dict[str, list[tuple[str, str]]]] = {
    "en": [("date", rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:to \d{{1,2}}\s+)?(?:{_MON_EN})\b(?!,?\s+(?:19|20)\d\d)"
                    rf"|\b(?:{_MON_EN})\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?!,?\s+(?:19|20)\d\d)")],
    "sv": [("datum", rf"\b\d{{1,2}}(?:[–-]\d{{1,2}})?\s+(?:{_MON_SV})\b(?!\s+(?:19|20)\d\d)")],
    "zh": [("日期", r"(?<![年\d])\d{1,2}月\d{1,2}[日号]")],
}

# A week: this or next week, the weekend, a weekday named as one day ("on Friday", "på fredag",
# "周五约了"; not "Saturday runs", "lördagsmorgnarna", "周日的散步", "周三晚上是…"), the last few
# days. Over within a couple of weeks.
WEEK: Final[dict[str, list[tuple[str, str]]]] = {
    "en": [("this week", r"\b(?:this|next) (?:week|weekend)\b|\bthe weekend\b"),
           ("weekday", rf"\b(?:on|this|next|last|until|till|by|before|from|since|coming) (?:{_WD_EN})\b"
                       rf"|\b(?:{_WD_EN})(?: (?:morning|afternoon|evening|night))?,? (?:at )?\d"),
           ("last few days", r"\b(?:last|past) few (?:days|nights)\b")],
    "sv": [("den här veckan", r"\b(?:den här|denna|nästa) (?:veckan?|helgen?)\b|\bi helgen\b|\bhelgens\b"),
           ("veckodag", rf"\b(?:på|nästa|till|tills|före|innan|senast|från|sedan|denna|den här) (?:{_WD_SV})\b"
                        rf"|\bi (?:{_WD_SV})s\b|\b(?:{_WD_SV})(?: (?:morgon|kväll|eftermiddag))?,? (?:kl\.? ?)?\d"),
           ("de senaste dagarna", r"\bde senaste (?:dagarna|nätterna)\b")],
    "zh": [("这周", r"这周|本周|下周|这个周末|周末"),
           ("星期几", r"(?:这|下|本|上)个?(?:周|星期|礼拜)[一二三四五六日天]|(?:周|星期|礼拜)[一二三四五六日天]"
                     r"(?!的|(?:早上|上午|中午|下午|晚上)?是)"),
           ("最近几天", r"最近几天")],
}

# A holiday a plan is for ("over Christmas", "över julen", "国庆假期"): over once the holiday is,
# read by age and disuse, as a log is (the holiday's date is not read). A school break alone
# ("暑假在...实习", "summer job") tells a lasting experience as often as a plan, so it is not one.
HOLIDAY: Final[dict[str, list[tuple[str, str]]]] = {
    "en": [("holiday", r"\b(?:over|during|for|at) (?:the )?(?:christmas|easter|new year|holidays|half-term|"
                       r"(?:spring|summer|winter|christmas|easter) (?:break|holidays?))\b")],
    "sv": [("lov", r"\b(?:över|under|i) (?:julen|jul|påsken|påsk|nyår|nyåret)\b"
                   r"|\b(?:jul|påsk|sport|höst|sommar)lovet\b")],
    "zh": [("假期", r"(?:国庆|春节|五一|中秋|元旦|清明)(?:假期)?|(?:这个|今年)假期|过年")],
}

# A log of the chat, small talk or a one-off event, told by its verb at the start, and a support
# ticket's log (a customer who asked or reported something).
LOG: Final[dict[str, list[tuple[str, str]]]] = {
    "en": [("chat", r"^(?:asked|said|greeted|mentioned|pasted|laughed|thanked|complained|joked|chatted|wondered)\b"),
           ("event", r"^(?:ran|debugged|watched|had|got|skipped|ate|went|bought|ordered|cooked|baked|tried|visited|"
                     r"played|attended)\b(?! (?:married|engaged|divorced|promoted|interested|used to|into)\b)"),
           ("done", r"\b(?:was|were|got|has been) (?:repaired|fixed|refunded|cancell?ed|canceled|delivered|postponed|"
                    r"resolved|replaced)\b"),
           ("diary", r"^[^:.!?]{1,30}:\s*(?:added|finished|wrote|fixed|set up|did|made|cooked|ran|tested|shipped|"
                     r"released|deployed|cleaned|planted)\b"),
           ("ticket", r"^(?:support )?ticket\b|^(?:a |the )?(?:customer|client|user|someone)\b.{0,80}?\b(?:asked|"
                      r"reported|complained|wrote in|called|requested|wondered)\b")],
    "sv": [("chatt", r"^(?:frågade|sa|sade|hälsade|nämnde|klistrade|skrattade|tackade|bad|klagade|skämtade|undrade)\b"),
           ("händelse", r"^(?:körde|felsökte|såg|åt|fick|hoppade|köpte|gick|lagade|bakade|provade|besökte|spelade)\b"),
           ("klart", r"\b(?:blev|har blivit) (?:lagad|lagat|fixad|fixat|återbetald|inställd|inställt|levererad|"
                     r"uppskjuten|löst)\b|\b(?:lagades|ställdes in|levererades|återbetalades)\b"),
           ("dagbok", r"^[^:.!?]{1,30}:\s*(?:lade till|la till|gjorde|skrev|fixade|lagade|körde|testade|släppte|"
                      r"städade|planterade)\b"),
           ("ärende", r"^(?:support)?ärende\b|^(?:en |kunden|kund|användaren|någon)\b.{0,80}?\b(?:frågade|"
                      r"rapporterade|klagade|skrev|ringde|undrade|bad om)\b")],
    "zh": [("对话", r"^(?:问了|说了|说|提到|贴了|让助手|跟助手|抱怨|吐槽)|^[^，。]{0,4}(?:问了|提到|说了)|^被.*逗"),
           ("事件", r"^(?:排查了|跑了|中午吃了|晚上吃了|看了|做了|试了)|^[^，。]{0,6}?买了|修好了|已退款|退款了|取消了|到货了"),
           ("日志", r"^[^：:。]{1,12}[：:]\s*(?:加了|做了|写了|修了|跑了|种了|完成了)"),
           ("工单", r"^工单|客户.{0,30}?(?:问|咨询|投诉|反馈|报告|来信)")],
}

# A milestone told as an event: someone's own first of something ("ran her first marathon", "sitt
# första maraton", "人生第一个"), a home bought ("bought a flat", "köpte en lägenhet", "买了一套公寓"),
# a job, a place or a degree gained ("got promoted", "fick fast anställning"). It says who someone
# is, so an event verb does not make it a log.
MILESTONE: Final[dict[str, list[tuple[str, str]]]] = {
    "en": [("their first", r"\b(?:his|her|their|my|our) first\b"),
           ("a home", r"^(?:bought|got)\s+(?:a|an|the|his|her|their|our)\s+(?:new\s+)?(?:house|flat|apartment|home|"
                      r"cottage)\b"),
           ("gained", r"^(?:got|landed|earned|received)\s+(?:a |an |the |his |her |their )?(?:new |permanent )?"
                      r"(?:job|position|place|promotion|degree|phd|doctorate|master'?s)\b|^got promoted\b"),
           ("a new home", r"\b(?:for|to|in|into)\s+(?:the|our|their|his|her|my)\s+new\s+(?:house|flat|apartment|home|"
                          r"job|puppy|dog|kitten|cat|baby)\b")],
    "sv": [("sitt första", r"\b(?:sitt|sin|sina|hans|hennes|deras|mitt|min) första\b"),
           ("ett hem", r"^(?:köpte|fick)\s+(?:ett|en|sitt|sin|deras)\s+(?:nytt?\s+)?(?:hus|lägenhet|bostadsrätt|villa|"
                       r"radhus|hem|sommarstuga)\b"),
           ("fick jobb", r"^(?:fick|tog|landade)\s+(?:en |ett |sin |sitt )?(?:ny |nytt |fast |fasta )?(?:jobb|anställning|"
                         r"tjänst|plats|befordran|examen|doktorsexamen|masterexamen)\b"),
           ("nya hemmet", r"\b(?:till|för|i|åt|på)\s+(?:den |det )?nya\s+(?:huset|lägenheten|hemmet|bostaden|jobbet|"
                          r"valpen|hunden|kattungen|katten|bebisen)\b")],
    "zh": [("人生第一", r"人生(?:中的)?第一|(?:他|她|我|他们)的第一(?:个|本|次|场|份)"),
           ("买房", r"买了?(?:一套|一栋|一间)?[^，。]{0,8}?(?:房子|公寓|住宅|别墅)"),
           ("新家", r"新(?:家|房子|公寓|公司|工作|学校)|新(?:来|养|领养)的小?(?:狗|猫)|(?:刚出生|新生)的(?:宝宝|孩子|女儿|儿子)")],
}

# A yearly holiday celebrated, told as done ("celebrated Eid with", "firade jul hos", "和家人一起过了中秋节"):
# a tradition, who someone is and with whom, as a birthday is; read only where no past day bounds it
# ("last night"). A plan for one is a holiday plan, a card or a sale on one an event.
_HOLIDAYS_EN = (r"christmas|xmas|easter|thanksgiving|eid|diwali|hanukkah|passover|midsummer|(?:lunar |chinese )?new year|"
                r"halloween|lucia|shrove tuesday|(?:mother|father|valentine)'?s day|(?:pancake|waffle|boxing) day")
_HOLIDAYS_SV = (r"jul|julen|julafton|påsk|påsken|midsommar|midsommarafton|nyår|nyåret|nyårsafton|lucia|valborg|"
                r"allhelgona|kräftskiva|kräftskivan|eid|diwali|halloween|nationaldagen|juldagen|trettondagen|"
                r"fettisdagen|våffeldagen|morsdag|farsdag|mors dag|fars dag|alla hjärtans dag"
                r"|(?!(?:hans|hennes|deras|dens|dets|sin|sitt)\b)\w+(?:ens|ans|s) dag")
_HOLIDAYS_ZH = r"中秋|端午|春节|除夕|元宵|圣诞|感恩节|过年|七夕|重阳|平安夜|跨年|腊八|冬至|母亲节|父亲节|情人节"
TRADITION: Final[dict[str, list[tuple[str, str]]]] = {
    # English and Swedish alike: "Baked semlor for fettisdagen" is told in one with the other's holiday.
    "en, sv": [("a holiday celebrated", rf"^(?:celebrated|spent|baked|cooked|made|lit|decorated|hosted|firade|bakade|"
                                        rf"lagade|gjorde|tände|pyntade|åt|tillbringade)\b.{{0,60}}?"
                                        rf"\b(?:{_HOLIDAYS_EN}|{_HOLIDAYS_SV})\b")],
    "zh": [("过节", rf"(?:{_HOLIDAYS_ZH}).{{0,12}}?(?:过了|一起过|庆祝|包了|做了|吃了|贴了)"
                  rf"|(?:过了|庆祝了?).{{0,6}}?(?:{_HOLIDAYS_ZH})")],
}

# A year ("in 2019") dates a lasting fact: an event told with one is kept ("Bought a flat in 2021").
YEAR: Final[dict[str, list[tuple[str, str]]]] = {
    "all": [("year", r"(?<!\d)(?:19|20)\d\d(?!\d)")],
}

# A state of the moment without a time word ("is in a bad mood", "running a fever", "waiting for"),
# whatever the category, unless what it says lasts ("has been stuck at level 5 for a year").
STATE: Final[dict[str, list[tuple[str, str]]]] = {
    "en": [("state", r"\b(?:is|am|feels?|feeling) (?:tired|sick|ill|stuck|nervous|stressed|in a (?:bad|good) mood|"
                     r"waiting|busy|in a hurry)\b|\bfever\b|\b(?:is|are) (?:down|broken|out of order)\b|"
                     r"\bhasn't slept\b|\bneeds to pick up\b|\bpile of\b|\bwaiting for\b|\bhas (?:a cold|the flu)\b")],
    "sv": [("tillstånd", r"\b(?:är|känner sig) (?:trött|sjuk|förkyld|nervös|stressad|på (?:dåligt|bra) humör)\b|"
                         r"\bväntar på\b|\bfeber\b|\bligger nere\b|\bär (?:trasig|trasigt|sönder)\b|"
                         r"\bhar sovit dåligt\b|\bska hämta\b|\bmycket mejl\b|\bbråttom\b")],
    "zh": [("状态", r"卡在|感冒|流感|发烧|很累|心情不好|紧张|在等|挂了|坏了|没睡好|取快递|一堆邮件|赶时间")],
}

# A day already past ("yesterday"): an event, unless the writer said it is a lasting kind of memory.
PAST_DAY: Final[dict[str, list[tuple[str, str]]]] = {
    "en": [("yesterday", r"\b(?:yesterday|last night)\b")],
    "sv": [("igår", r"\b(?:igår|i går|i natt|inatt)\b")],
    "zh": [("昨天", r"昨天|昨晚")],
}

# What says a memory lasts when nothing else does: a preference, an opinion, an impression, a
# plan or wish, who someone is (where they live, work, come from, their family, health, diet),
# what they speak or learn, since when.
LASTING: Final[dict[str, list[tuple[str, str]]]] = {
    "en": [("lasting", r"\b(?:prefers?|likes?|loves?|hates?|dislikes?|enjoys?|wants?|hopes?|wishes|plans?|intends?|"
                       r"aims?|thinks|believes|finds|seems|appears|lives|works|studies|speaks|owns|never|will|"
                       r"would like|since|is (?:allergic|learning|thinking|planning|trying)|allergic|born|grew up|"
                       r"hometown|married|kids|children|daughters?|sons?|native|vegetarian|vegan|citizen|based in)\b"
                       r"|\bis an? (?!bit\b|little\b)")],
    "sv": [("varaktig", r"\b(?:föredrar|gillar|älskar|hatar|ogillar|avskyr|tycker|tror|vill|hoppas|planerar|tänker|"
                        r"siktar|verkar|bor|jobbar|arbetar|studerar|pluggar|talar|pratar|äger|aldrig|sedan|kommer att|"
                        r"lär sig|allergisk|född|växte upp|hemstad|gift|sambo|barn|döttrar|söner|modersmål|"
                        r"vegetarian|vegan|medborgare)\b")],
    "zh": [("持久", r"喜欢|爱|讨厌|想|希望|打算|计划|觉得|认为|好像|似乎|住在|工作|学习|会说|从来|一直|已经|自从|以来|不吃|不喝|"
                    r"过敏|出生|长大|老家|家乡|结婚|孩子|女儿|儿子|母语|素食|吃素")],
}

# The categories that say a memory lasts: who someone is, what they prefer, want, find hard or decided.
DURABLE_CATEGORIES: Final = frozenset({"preference", "goal", "decision", "difficulty", "profile"})
