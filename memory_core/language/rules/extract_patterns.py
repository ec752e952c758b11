"""Extraction's rule tables: per language, the statements worth remembering (:class:`Rule`: a pattern,
the memory it writes, an example the tests check) and the word lists and patterns that prepare a
turn for them (lead-ins, small talk, questions, clause splits, pronouns). ``extract.py`` runs them."""

from __future__ import annotations

import re
from typing import Final, NamedTuple

from ..words import EN_PEOPLE, EN_PETS, SV_PEOPLE, SV_PETS, ZH_PEOPLE, ZH_PETS


# --------------------------------------------------------------------------- #
# Rule tables
# --------------------------------------------------------------------------- #


class Rule(NamedTuple):
    """One extraction rule.

    ``pattern`` is matched (case-insensitively for en/sv) at the start of a clause,
    after optional lead-in words ("Honestly, ..."). Its named groups feed
    ``template``: ``{rest}`` (the object, pronouns rewritten), ``{adv}`` (kept
    adverbs such as "always", "now"), ``{verb}``/``{verb3}`` (the verb, and its
    English third person), and any other group verbatim. ``example`` is a turn the
    rule fires on and ``expected`` the memory it gives; the tests check both.
    """

    rule_id: str
    category: str
    pattern: str
    template: str
    example: str
    expected: str


# Shared pieces. Adverbs are captured so they can be dropped ("really") or kept
# ("always", "now": "now prefers X" records a change, not a mood).
_EN_ADV = (
    r"(?P<adv>(?:(?:really|actually|definitely|honestly|truly|genuinely|also|just|still|now|always|never|"
    r"usually|normally|generally|typically|mostly|often|absolutely|totally|much|very much|strongly|do|"
    r"kind of|sort of|personally|seriously|especially|particularly|no longer|rarely|sometimes)\s+)*)"
)
_EN_KEEP_ADV: Final = {"always": "always", "never": "never", "still": "still", "now": "now", "usually": "usually",
                       "normally": "usually", "typically": "usually", "mostly": "mostly", "often": "often",
                       "no longer": "no longer", "rarely": "rarely", "sometimes": "sometimes"}
_EN_IM = r"i(?:'m| am)"
# Verbs that make "I want to ..." a request about this chat, not a goal.
_EN_REQUEST = (
    r"(?!\s*(?:know|ask|see|check|understand|say|tell|confirm|clarify|mention|add|point out|thank|make sure|"
    r"be sure|talk|discuss|chat|go back|start over|rephrase|share|show you|give you|let you|try (?:this|that|it)|"
    r"figure out|find out|double[- ]check|get (?:this|that|it)|do (?:this|that|it)|see (?:this|that|it)|brag|vent|"
    r"admit|apologi[sz]e|remind|update|let|tell|hear|learn more about)\b)"
)
_EN_PAST = (
    r"(?![a-z]+ed\b|(?:got|went|thought|knew|said|made|came|took|saw|felt|had|was|were|did|told|found|ran|"
    r"ate|drank|wrote|left|bought|am|is|are|be|have|has|do|does|can|could|will|would|should|shall|may|"
    r"might|must|get|think|guess|mean|feel|forget|struggle|prefer|like|love|hate|want|need)\b)"
)

_SV_ADV = (
    r"(?P<adv>(?:(?:verkligen|faktiskt|också|nog|ju|väldigt|jättemycket|mycket|alltid|aldrig|fortfarande|"
    r"numera|helst|oftast|gärna|egentligen|personligen|nu|inte längre)\s+)*)"
)
_SV_KEEP_ADV: Final = {"alltid": "alltid", "aldrig": "aldrig", "fortfarande": "fortfarande", "numera": "numera",
                       "helst": "helst", "oftast": "oftast", "nu": "numera", "inte längre": "inte längre"}
_SV_REQUEST = r"(?!\s*(?:veta|fråga|se|kolla|be|säga|tacka|förstå|bara|ha hjälp|prata|diskutera|börja om|testa det)\b)"
_SV_PROFESSIONS = (
    r"student|lärare|läkare|sjuksköterska|utvecklare|programmerare|ingenjör|designer|pensionär|doktorand|"
    r"forskare|frilansare|konsult|snickare|kock|journalist|advokat|ekonom|säljare|projektledare|arkitekt|"
    r"elektriker|undersköterska|förskollärare|psykolog|tandläkare|revisor|chef"
)

_ZH_ADV = r"(?P<adv>(?:现在|一直|总是|真的|非常|特别|很|最|更|比较|也|还|都|从来|通常|一般|其实|确实|挺|蛮|超|向来)*)"
_ZH_DROP_ADV: Final = ("真的", "也", "还", "都", "其实", "确实")
_ZH_NOT_YOU = r"(?!你|您)"

RULES: dict[str, list[Rule]] = {
    "en": [
        # --- difficulty (before preference/habit: "I always struggle" is a difficulty) ---
        Rule("en.difficulty.struggle", "difficulty",
             rf"i {_EN_ADV}(?P<verb>struggle|have (?:a hard time|trouble|difficulty|problems|a problem)|"
             r"find it (?:hard|difficult|tough) to)\b\s*(?P<rest>.+)",
             "{adv} {verb3} {rest}",
             "I always struggle with keeping a regular sleep schedule.",
             "Always struggles with keeping a regular sleep schedule"),
        Rule("en.difficulty.keep_forgetting", "difficulty",
             rf"i {_EN_ADV}keep (?P<verb>forgetting|losing|missing|skipping|procrastinating|putting off|"
             r"breaking|getting)\b\s*(?P<rest>.+)",
             "{adv} keeps {verb} {rest}",
             "I keep forgetting to drink water during long runs.",
             "Keeps forgetting to drink water during long runs"),
        Rule("en.difficulty.always_forget", "difficulty",
             r"i (?P<adv>(?:(?:really|also|just)\s+)*(?:always|often|constantly|tend to|never)\s+)"
             r"(?P<verb>forget|remember|lose|miss|skip|procrastinate on)\b\s*(?P<rest>.+)",
             "{adv} {verb3} {rest}",
             "I often forget my dentist appointments.",
             "Often forgets their dentist appointments"),
        Rule("en.difficulty.hard_for_me", "difficulty",
             r"(?P<rest>(?!it\b|that\b|this\b)[^,]{2,80}?) (?:is|are) (?:really |very |so |always |quite |"
             r"pretty |super )?"
             r"(?:hard|difficult|tough|a struggle|a challenge|confusing) for me\b.*",
             "finds {rest} hard",
             "Public speaking is really hard for me.",
             "Finds public speaking hard"),
        Rule("en.difficulty.bad_at", "difficulty",
             rf"{_EN_IM} (?:really |very |so |quite |pretty |just |still )?(?P<verb>bad|terrible|awful|hopeless|"
             r"not (?:very |so |that )?good) (?:at|with) (?P<rest>.+)",
             "is {verb} at {rest}",
             "I'm terrible at remembering names.",
             "Is terrible at remembering names"),
        # --- preference ----------------------------------------------------
        Rule("en.preference.not_fan", "preference",
             rf"{_EN_IM} {_EN_ADV}not (?:a (?:big |huge )?fan of|into|keen on|fond of) (?P<rest>.+)",
             "{adv} is not a fan of {rest}",
             "I'm not a big fan of spicy food.",
             "Is not a fan of spicy food"),
        Rule("en.preference.fan", "preference",
             rf"{_EN_IM} {_EN_ADV}(?:a (?:big |huge |massive )?fan of|(?:really )?into|obsessed with|"
             rf"fond of) (?P<rest>.+)",
             "{adv} is a fan of {rest}",
             "I'm a huge fan of Nordic noir novels.",
             "Is a fan of Nordic noir novels"),
        Rule("en.preference.dislike", "preference",
             rf"i {_EN_ADV}(?:don't|do not|dont) (?:really |much |particularly |even )?(?:like|enjoy|"
             rf"care for|love) (?P<rest>.+)",
             "{adv} dislikes {rest}",
             "I don't really like crowded gyms.",
             "Dislikes crowded gyms"),
        Rule("en.preference.cant_stand", "preference",
             rf"i {_EN_ADV}(?:can't|cannot|can not|cant) stand (?P<rest>.+)",
             "{adv} can't stand {rest}",
             "I can't stand cilantro.",
             "Can't stand cilantro"),
        Rule("en.preference.dont_habit", "preference",
             rf"i {_EN_ADV}(?:don't|do not|dont) (?P<verb>eat|drink|smoke|drive|own|use|watch|drink) (?P<rest>.+)",
             "{adv} does not {verb} {rest}",
             "I don't eat pork.",
             "Does not eat pork"),
        Rule("en.preference.verb", "preference",
             rf"i {_EN_ADV}(?P<verb>prefer|love|like|enjoy|adore|hate|dislike|detest|loathe)\b\s*(?P<rest>.+)",
             "{adv} {verb3} {rest}",
             "I really prefer tea in the mornings.",
             "Prefers tea in the mornings"),
        Rule("en.preference.favourite", "preference",
             r"my (?:absolute |all-time |personal )?favou?rite (?P<what>[a-z' -]{2,30}?) (?P<be>is|are) (?P<rest>.+)",
             "favourite {what} {be} {rest}",
             "My favourite cuisine is Ethiopian.",
             "Favourite cuisine is Ethiopian"),
        Rule("en.preference.diet", "preference",
             rf"{_EN_IM} {_EN_ADV}(?P<rest>(?:a |an )?(?:vegetarian|vegan|pescatarian|pescetarian|teetotal|"
             r"teetotaler|non-drinker|morning person|night owl|early bird|introvert|extrovert)\b.*)",
             "{adv} is {rest}",
             "I'm vegetarian.",
             "Is vegetarian"),
        Rule("en.preference.habit", "preference",
             r"i (?P<adv>(?:(?:really|also|just|still)\s+)*(?:usually|always|never|normally|typically|often|"
             r"rarely|no longer|generally|mostly)\s+)" + _EN_PAST + r"(?P<verb>[a-z]+)\s+(?P<rest>.+)",
             "{adv} {verb3} {rest}",
             "I usually go to bed around 11.",
             "Usually goes to bed around 11"),
        # --- goal ----------------------------------------------------------
        Rule("en.goal.goal_is", "goal",
             r"(?:my|our) (?:main |big |biggest |long-term |short-term |ultimate |real |personal |new |"
             r"(?:fitness|career|savings|financial|reading|running|training) )?(?P<noun>goal|aim|dream|ambition|"
             r"target|objective|resolution)(?P<when> for [a-z0-9' -]{1,25}?)? is (?P<to>to )?(?P<rest>.+)",
             "{noun} {when} is {to} {rest}",
             "My goal is to run a marathon under four hours.",
             "Goal is to run a marathon under four hours"),
        Rule("en.goal.working_on", "goal",
             rf"{_EN_IM} {_EN_ADV}(?:currently )?(?P<verb>training for|saving (?:up )?for|saving (?:up )?to|"
             r"working towards?|studying for|preparing for|trying to|learning|aiming (?:for|to)|planning (?:to|on)|"
             r"hoping to|looking to|hoping for)\b\s*" + _EN_REQUEST
             + r"(?!\s*(?:a lot|a ton|so much|something|things|stuff)\b)(?P<rest>.+)",
             "{adv} {verb} {rest}",
             "I'm training for the Stockholm half marathon in September.",
             "Training for the Stockholm half marathon in September"),
        Rule("en.goal.want", "goal",
             rf"i {_EN_ADV}(?P<verb>want to|plan to|plan on|intend to|hope to|aim to|dream of|"
             r"wish to|am determined to)\s+" + _EN_REQUEST + r"(?P<rest>.+)",
             "{adv} {verb3} {rest}",
             "I want to learn Spanish before our trip to Mexico.",
             "Wants to learn Spanish before their trip to Mexico"),
        Rule("en.goal.would_love", "goal",
             rf"i(?:'d| would) {_EN_ADV}(?P<verb>love to|like to one day|really like to|"
             rf"be happy to) " + _EN_REQUEST + r"(?P<rest>.+)",
             "{adv} would {verb} {rest}",
             "I'd love to visit Japan someday.",
             "Would love to visit Japan someday"),
        # --- decision ------------------------------------------------------
        Rule("en.decision.decided", "decision",
             r"(?:i|we)(?:'ve| have|'d| had)? (?:finally |just |already |now |"
             r"officially )?decided (?P<how>to|against|on|that)\s+(?P<rest>.+)",
             "decided {how} {rest}",
             "I've decided to use PostgreSQL.",
             "Decided to use PostgreSQL"),
        Rule("en.decision.agreed", "decision",
             r"(?:i|we)(?:'ve| have)? (?:finally |just |already )?(?P<verb>agreed|settled|"
             r"committed) (?P<how>on|to|that)\s+(?P<rest>.+)",
             "{verb} {how} {rest}",
             "We agreed on weekly check-ins every Monday.",
             "Agreed on weekly check-ins every Monday"),
        Rule("en.decision.go_with", "decision",
             r"(?:i|we)(?:'ll| will|'re going to| are going to| am going to|'m going to) (?P<verb>go with|"
             r"stick with|stick to|use) (?P<rest>.+)",
             "decided to {verb} {rest}",
             "I'll go with the standing desk from IKEA.",
             "Decided to go with the standing desk from IKEA"),
        Rule("en.decision.chose", "decision",
             r"(?:i|we)(?:'ve| have)? (?:finally |just |already )?(?P<verb>chose|chosen|picked|opted for|went with|"
             r"selected|switched to|moved to using|ended up (?:choosing|going with))\s+(?P<rest>.+)",
             "{verb} {rest}",
             "We chose Svelte for the new dashboard.",
             "Chose Svelte for the new dashboard"),
        Rule("en.decision.lets", "decision",
             r"let'?s (?P<verb>use|go with|stick with|stick to|pick|choose|switch to|keep using) (?P<rest>.+)",
             "decided to {verb} {rest}",
             "Let's use SQLite for the prototype.",
             "Decided to use SQLite for the prototype"),
        # --- profile -------------------------------------------------------
        Rule("en.profile.allergic", "profile",
             rf"{_EN_IM} {_EN_ADV}(?P<rest>(?:allergic to|lactose[- ]intolerant|gluten[- ]intolerant|coeliac|celiac|"
             r"diabetic|colou?r[- ]?blind|left-handed|deaf|hard of hearing|pregnant)\b.*)",
             "{adv} is {rest}",
             "I'm allergic to peanuts.",
             "Is allergic to peanuts"),
        Rule("en.profile.work", "profile",
             r"i (?:currently |now |still )?(?P<verb>work|teach|study|freelance) (?P<prep>as|at|for|in|on|"
             r"from)\s+(?P<rest>.+)",
             "{verb3} {prep} {rest}",
             "I work as a nurse at Akademiska sjukhuset.",
             "Works as a nurse at Akademiska sjukhuset"),
        Rule("en.profile.employed", "profile",
             rf"{_EN_IM} (?:currently |now )?(?:employed|working) (?P<prep>as|at|for)\s+(?P<rest>.+)",
             "works {prep} {rest}",
             "I'm working as a data engineer these days.",
             "Works as a data engineer these days"),
        Rule("en.profile.live", "profile",
             r"(?:i|we)(?:'ve| have)? (?:currently |now |still |all )?(?:live|been living|"
             r"living) (?P<prep>in|on|near|with|outside|at|by)\s+(?P<rest>.+)",
             "lives {prep} {rest}",
             "I live in Uppsala with my partner.",
             "Lives in Uppsala with their partner"),
        Rule("en.profile.moved", "profile",
             r"(?:i|we)(?:'ve| have)? (?:just |recently |finally )?(?:moved|relocated) (?P<prep>to|from|"
             r"back to)\s+(?P<rest>.+)",
             "moved {prep} {rest}",
             "I moved to Gothenburg last year.",
             "Moved to Gothenburg last year"),
        Rule("en.profile.from", "profile",
             rf"{_EN_IM} (?:originally )?from (?P<rest>.+)",
             "is from {rest}",
             "I'm originally from Kraków.",
             "Is from Kraków"),
        Rule("en.profile.grew_up", "profile",
             r"i (?P<verb>grew up|was born|was raised) in (?P<rest>.+)",
             "{verb} in {rest}",
             "I grew up in Kiruna.",
             "Grew up in Kiruna"),
        Rule("en.profile.named", "profile",
             rf"(?:my|our) (?P<rel>(?:(?:little|younger|older|big|new|baby|eldest|youngest) )?(?:{EN_PEOPLE}|{EN_PETS}))"
             r"(?:'s name is|s' names are|'s names are| is called| is named| are called| are named|"
             r" name is) (?P<rest>.+)",
             "{rel} is called {rest}",
             "My dog is called Ludde.",
             "Dog is called Ludde"),
        Rule("en.profile.have", "profile",
             rf"(?:i|we) (?:have|'ve got|have got) (?P<rest>(?:a|an|one|two|three|four|five|\d+) "
             rf"(?:[a-z-]+ ){{0,2}}(?:{EN_PEOPLE}|{EN_PETS})\b.*)",
             "has {rest}",
             "I have two kids, aged 4 and 7.",
             "Has two kids, aged 4 and 7"),
        Rule("en.profile.have_named", "profile",
             r"(?:i|we) (?:have|'ve got|have got) (?P<rest>(?:a|an|one|two|three) [a-z -]{2,30}? (?:called|named) .+)",
             "has {rest}",
             "I have a golden retriever called Max.",
             "Has a golden retriever called Max"),
        Rule("en.profile.age", "profile",
             rf"{_EN_IM} (?P<rest>\d{{1,3}})(?: years old| years of age| y/?o)?$",
             "is {rest} years old",
             "I'm 34 years old.",
             "Is 34 years old"),
        Rule("en.profile.speak", "profile",
             r"i (?:speak|am fluent in|'m fluent in) (?P<rest>.+)",
             "speaks {rest}",
             "I speak Swedish, English and some Mandarin.",
             "Speaks Swedish, English and some Mandarin"),
        Rule("en.profile.i_am_a", "profile",
             rf"{_EN_IM} (?:currently |now )?(?P<rest>(?:a|an) (?!bit\b|little\b|lot\b|fan\b|big fan\b|huge fan\b|"
             r"few\b|couple\b|bit\b|tad\b|while\b|minute\b|second\b|moment\b|way\b|step\b|mile\b)[a-z].*)",
             "is {rest}",
             "I'm a backend developer at a fintech startup.",
             "Is a backend developer at a fintech startup"),
    ],
    "sv": [
        # --- difficulty ----------------------------------------------------
        Rule("sv.difficulty.svart_for", "difficulty",
             rf"jag har {_SV_ADV}(?:lite |väldigt |jätte|riktigt )?svårt (?P<prep>för|med) (?P<rest>.+)",
             "{adv} har svårt {prep} {rest}",
             "Jag har väldigt svårt för att komma upp på morgonen.",
             "Har svårt för att komma upp på morgonen"),
        Rule("sv.difficulty.always_forget", "difficulty",
             r"jag (?P<verb>glömmer|tappar bort|missar|skjuter upp|slarvar med) (?P<adv>(?:alltid|ofta|jämt|"
             r"hela tiden)\s+)(?P<rest>.+)",
             "{verb} {adv} {rest}",
             "Jag glömmer alltid att ta mina vitaminer.",
             "Glömmer alltid att ta sina vitaminer"),
        Rule("sv.difficulty.kampar", "difficulty",
             r"jag (?:kämpar|brottas|har problem) (?P<prep>med|mot) (?P<rest>.+)",
             "kämpar {prep} {rest}",
             "Jag kämpar med motivationen på vintern.",
             "Kämpar med motivationen på vintern"),
        Rule("sv.difficulty.svart_for_mig", "difficulty",
             r"(?P<rest>(?!det\b|den\b|detta\b)[^,]{2,80}?) är (?:väldigt |jätte|riktigt |så |"
             r"alltid )?(?:svårt|svår|jobbigt|jobbig|"
             r"krångligt|krånglig|knepigt|tufft) för mig\b.*",
             "har svårt för {rest}",
             "Matematik är jättesvårt för mig.",
             "Har svårt för matematik"),
        Rule("sv.difficulty.dalig_pa", "difficulty",
             r"jag är (?:väldigt |riktigt |jätte|så |ganska )?(?P<verb>dålig|usel|kass|inte så bra) på (?P<rest>.+)",
             "är {verb} på {rest}",
             "Jag är usel på att laga mat.",
             "Är usel på att laga mat"),
        # --- preference ----------------------------------------------------
        Rule("sv.preference.gillar_inte", "preference",
             rf"jag (?P<verb>gillar|tycker|uppskattar) {_SV_ADV}inte (?P<om>om )?(?P<rest>.+)",
             "{verb} {adv} inte {om} {rest}",
             "Jag gillar verkligen inte trånga gym.",
             "Gillar inte trånga gym"),
        Rule("sv.preference.tycker_om", "preference",
             rf"jag tycker {_SV_ADV}om (?P<rest>.+)",
             "tycker {adv} om {rest}",
             "Jag tycker mycket om klassisk musik.",
             "Tycker om klassisk musik"),
        Rule("sv.preference.verb", "preference",
             rf"jag (?P<verb>föredrar|gillar|älskar|uppskattar|avskyr|hatar|ogillar|"
             rf"står inte ut med) {_SV_ADV}(?P<rest>.+)",
             "{verb} {adv} {rest}",
             "Jag föredrar te på morgonen.",
             "Föredrar te på morgonen"),
        Rule("sv.preference.favourite", "preference",
             r"(?:min|mitt|mina) (?:absoluta )?favorit(?P<what>[a-zåäö]*) (?:är|e) (?P<rest>.+)",
             "favorit{what} är {rest}",
             "Min favoritfärg är grön.",
             "Favoritfärg är grön"),
        Rule("sv.preference.diet", "preference",
             rf"jag är {_SV_ADV}(?P<rest>(?:vegetarian|vegan|veganer|pescetarian|nykterist|morgonmänniska|"
             rf"kvällsmänniska|"
             r"introvert|extrovert)\b.*)",
             "{adv} är {rest}",
             "Jag är vegetarian sedan fem år.",
             "Är vegetarian sedan fem år"),
        Rule("sv.preference.brukar", "preference",
             r"jag brukar (?P<rest>.+)",
             "brukar {rest}",
             "Jag brukar springa tre gånger i veckan.",
             "Brukar springa tre gånger i veckan"),
        Rule("sv.preference.habit", "preference",
             r"jag (?!är\b|har\b|var\b|hade\b|kan\b|ska\b|skulle\b|vill\b|måste\b|tror\b|tycker\b|vet\b|sa\b|sade\b)"
             r"(?P<verb>[a-zåäö]+r) (?P<adv>(?:alltid|aldrig|helst|oftast|sällan|nästan aldrig|"
             r"inte längre)\s+)(?P<rest>.+)",
             "{verb} {adv} {rest}",
             "Jag äter aldrig kött.",
             "Äter aldrig kött"),
        # --- goal ----------------------------------------------------------
        Rule("sv.goal.goal_is", "goal",
             r"(?:mitt|vårt) (?:stora |största |främsta |långsiktiga |nya |egentliga )?(?P<noun>mål|delmål)"
             r"(?P<when> för [a-zåäö0-9 ]{1,20}?)? är (?P<to>att )?(?P<rest>.+)",
             "{noun}et {when} är {to} {rest}",
             "Mitt mål är att springa Göteborgsvarvet under två timmar.",
             "Målet är att springa Göteborgsvarvet under två timmar"),
        Rule("sv.goal.dream_is", "goal",
             r"(?:min|vår) (?:stora |största )?dröm (?:är|e) (?P<to>att )?(?P<rest>.+)",
             "drömmen är {to} {rest}",
             "Min dröm är att öppna ett eget bageri.",
             "Drömmen är att öppna ett eget bageri"),
        Rule("sv.goal.plan", "goal",
             rf"(?:jag|vi) {_SV_ADV}(?P<verb>planerar att|planerar|siktar på att|siktar på|hoppas kunna|"
             rf"hoppas att|hoppas|"
             r"drömmer om att|drömmer om|har som mål att|tänker försöka|vill)\s+" + _SV_REQUEST + r"(?P<rest>.+)",
             "{verb} {adv} {rest}",
             "Jag planerar att byta jobb nästa år.",
             "Planerar att byta jobb nästa år"),
        Rule("sv.goal.working_on", "goal",
             r"jag (?:håller på (?:att|och) )?(?P<verb>tränar (?:inför|för)|sparar (?:till|för|pengar till)|"
             r"pluggar (?:till|inför)|"
             r"förbereder mig (?:för|inför)|försöker|lär mig|jobbar mot|satsar på)\s+" + _SV_REQUEST + r"(?P<rest>.+)",
             "{verb} {rest}",
             "Jag tränar inför Vasaloppet.",
             "Tränar inför Vasaloppet"),
        # --- decision ------------------------------------------------------
        Rule("sv.decision.decided", "decision",
             r"(?:jag|vi) (?P<har>har )?(?:till slut |äntligen |nu |redan )?(?P<verb>bestämt mig för|bestämt oss för|"
             r"bestämde mig för|bestämde oss för|bestämt att|bestämde att|beslutat att|beslutade att|beslutat|"
             r"kommit överens om|kom överens om|valt|valde|landat i|landade i)\s+(?P<rest>.+)",
             "{har} {verb} {rest}",
             "Jag har bestämt mig för att använda PostgreSQL.",
             "Har bestämt sig för att använda PostgreSQL"),
        Rule("sv.decision.kor_pa", "decision",
             r"(?:vi|jag) (?P<verb>kör på|går på|satsar på|använder oss av) (?P<rest>.+)",
             "{verb} {rest}",
             "Vi kör på React för frontend.",
             "Kör på React för frontend"),
        Rule("sv.decision.lets", "decision",
             r"(?:då )?(?:kör vi på|tar vi|låt oss (?:använda|köra på|ta)) (?P<rest>.+)",
             "har valt {rest}",
             "Då kör vi på Svelte.",
             "Har valt Svelte"),
        # --- profile -------------------------------------------------------
        Rule("sv.profile.bor", "profile",
             r"(?:jag|vi) (?:bor|har bott|bor numera) (?P<prep>i närheten av|tillsammans med|i|på|nära|"
             r"utanför|med|hos)\s+(?P<rest>.+)",
             "bor {prep} {rest}",
             "Jag bor i Malmö med min sambo.",
             "Bor i Malmö med sin sambo"),
        Rule("sv.profile.jobbar", "profile",
             r"jag (?:jobbar|arbetar) (?:numera |nu |fortfarande )?(?P<prep>som|på|hos|med|inom|deltid som|"
             r"heltid som)\s+(?P<rest>.+)",
             "jobbar {prep} {rest}",
             "Jag jobbar som sjuksköterska på Karolinska.",
             "Jobbar som sjuksköterska på Karolinska"),
        Rule("sv.profile.flyttat", "profile",
             r"(?:jag|vi) (?P<har>har )?(?:precis |nyss |nyligen |äntligen )?(?P<verb>flyttat|"
             r"flyttade) (?P<prep>till|från|hem till|tillbaka till)\s+(?P<rest>.+)",
             "{har} {verb} {prep} {rest}",
             "Jag har flyttat till Umeå.",
             "Har flyttat till Umeå"),
        Rule("sv.profile.fran", "profile",
             r"jag (?P<verb>kommer från|är född i|är uppvuxen i|växte upp i)\s+(?P<rest>.+)",
             "{verb} {rest}",
             "Jag kommer från Kiruna.",
             "Kommer från Kiruna"),
        Rule("sv.profile.heter", "profile",
             rf"(?:min|mitt|mina|vår|vårt) (?P<rel>(?:lilla |stora |nya |äldsta |"
             rf"yngsta )?(?:{SV_PEOPLE}|{SV_PETS})) heter (?P<rest>.+)",
             "{rel_def} heter {rest}",
             "Min hund heter Ludde.",
             "Hunden heter Ludde"),
        Rule("sv.profile.har", "profile",
             rf"(?:jag|vi) har (?P<rest>(?:en|ett|två|tre|fyra|fem|"
             rf"\d+) (?:[a-zåäö-]+ ){{0,2}}(?:{SV_PEOPLE}|{SV_PETS})\b.*)",
             "har {rest}",
             "Jag har två barn och en katt.",
             "Har två barn och en katt"),
        Rule("sv.profile.alder", "profile",
             r"jag är (?P<rest>\d{1,3}) år(?: gammal)?$",
             "är {rest} år gammal",
             "Jag är 42 år.",
             "Är 42 år gammal"),
        Rule("sv.profile.allergisk", "profile",
             r"jag är (?P<rest>(?:allergisk mot|laktosintolerant|glutenintolerant|celiaki|diabetiker|"
             r"färgblind|vänsterhänt|gravid)\b.*)",
             "är {rest}",
             "Jag är allergisk mot nötter.",
             "Är allergisk mot nötter"),
        Rule("sv.profile.studerar", "profile",
             r"jag (?P<verb>studerar|pluggar|läser) (?P<rest>(?!till\b|inför\b).+ (?:på|vid) .+)",
             "{verb} {rest}",
             "Jag pluggar datavetenskap på KTH.",
             "Pluggar datavetenskap på KTH"),
        Rule("sv.profile.jag_ar", "profile",
             rf"jag är (?:numera |nu )?(?P<rest>(?:en |ett )?(?:[a-zåäö-]*(?:{_SV_PROFESSIONS}))\b.*)",
             "är {rest}",
             "Jag är mjukvaruutvecklare på ett litet bolag.",
             "Är mjukvaruutvecklare på ett litet bolag"),
    ],
    "zh": [
        # --- difficulty ----------------------------------------------------
        Rule("zh.difficulty.always", "difficulty",
             r"我(?P<adv>总是|老是|经常|一直|常常|每次都|总)(?P<rest>(?:记不住|忘记|忘了|忘|搞不懂|学不会|拖延|坚持不了|坚持不下来|失眠|控制不住).*)",
             "{adv}{rest}",
             "我总是记不住别人的名字。",
             "总是记不住别人的名字"),
        Rule("zh.difficulty.hard_for_me", "difficulty",
             r"(?P<rest>(?!这|那|它)[^，,]{1,30}?)对我(?:来说|而言)(?:太|很|非常|特别|挺|有点|真的)?(?:难|困难|吃力|痛苦)",
             "觉得{rest}很难",
             "早起对我来说很难。",
             "觉得早起很难"),
        Rule("zh.difficulty.not_good_at", "difficulty",
             r"我(?:真的|一直|实在)?(?P<verb>不擅长|不太擅长|很不擅长|很难|难以|搞不定)(?P<rest>.+)",
             "{verb}{rest}",
             "我不擅长公开演讲。",
             "不擅长公开演讲"),
        # --- preference ----------------------------------------------------
        Rule("zh.preference.favourite", "preference",
             r"我(?:的)?最(?:喜欢|爱)的(?P<rest>.+?(?:是|就是).+)",
             "最喜欢的{rest}",
             "我最喜欢的颜色是绿色。",
             "最喜欢的颜色是绿色"),
        Rule("zh.preference.dislike", "preference",
             rf"我{_ZH_ADV}(?P<verb>不喜欢|不太喜欢|不爱|讨厌|受不了|不吃|不喝|不碰)" + _ZH_NOT_YOU + r"(?P<rest>.+)",
             "{adv}{verb}{rest}",
             "我不喜欢吃香菜。",
             "不喜欢吃香菜"),
        Rule("zh.preference.like", "preference",
             rf"我{_ZH_ADV}(?P<verb>喜欢|偏好|偏爱|爱吃|爱喝|爱看|爱听|热爱|享受|习惯)" + _ZH_NOT_YOU + r"(?P<rest>.+)",
             "{adv}{verb}{rest}",
             "我更喜欢早上喝茶。",
             "更喜欢早上喝茶"),
        Rule("zh.preference.diet", "preference",
             rf"我{_ZH_ADV}(?P<rest>吃素|是素食(?:主义)?者|不吃肉|不喝酒|滴酒不沾)(?P<more>.*)",
             "{adv}{rest}{more}",
             "我吃素。",
             "吃素"),
        Rule("zh.preference.habit", "preference",
             r"我(?P<adv>一般|通常|平时|每天|每周|经常|总是|从来不|从不)(?!几|什么|怎么)(?P<rest>.+)",
             "{adv}{rest}",
             "我每天早上跑步五公里。",
             "每天早上跑步五公里"),
        # --- goal ----------------------------------------------------------
        Rule("zh.goal.goal_is", "goal",
             r"我(?:的|们的)?(?:最大的|长期|今年的|明年的)?(?P<noun>目标|梦想|计划|愿望|心愿)(?:是|就是)(?P<rest>.+)",
             "{noun}是{rest}",
             "我的目标是明年跑完全程马拉松。",
             "目标是明年跑完全程马拉松"),
        Rule("zh.goal.plan", "goal",
             rf"我们?{_ZH_ADV}(?P<verb>打算|计划|准备|希望|想要|梦想|决心|要努力|在努力|正在努力)(?!好|一下|问|知道|你)(?P<rest>.+)",
             "{adv}{verb}{rest}",
             "我打算明年换工作。",
             "打算明年换工作"),
        # A bare 我想 is also "I think"/"I'd like (right now)"; only long-term verbs follow it here.
        Rule("zh.goal.want", "goal",
             r"我(?:一直|很|真的)?想(?P<rest>(?:学会|学|成为|当一名|当|考|换工作|换个工作|创业|移民|开一家|去.{1,8}(?:留学|工作|定居))[^，,。]*)",
             "想{rest}",
             "我想学日语。",
             "想学日语"),
        Rule("zh.goal.working_on", "goal",
             r"我(?:正在|在)(?P<rest>为.{1,20}?(?:做准备|准备|训练|存钱|攒钱|努力).*)",
             "{rest}",
             "我在为半程马拉松训练。",
             "为半程马拉松训练"),
        Rule("zh.goal.learning", "goal",
             r"我(?P<zai>正在|在)(?P<verb>学习|学(?!校|生|院|期|费)|备考|攒钱|存钱|练习)(?P<rest>.+)",
             "{zai}{verb}{rest}",
             "我在学日语。",
             "在学日语"),
        # --- decision ------------------------------------------------------
        Rule("zh.decision.decided", "decision",
             r"我们?(?:已经|终于|最后|最终|还是)?(?P<verb>决定了?|选择了|选了|定了|确定了?)(?P<rest>.+)",
             "{verb}{rest}",
             "我决定用PostgreSQL。",
             "决定用PostgreSQL"),
        Rule("zh.decision.lets_use", "decision",
             r"(?:那|那就|就|那我们就|我们就|我们还是|还是)(?P<verb>用|选|定|采用)(?P<rest>.+?)吧",
             "决定{verb}{rest}",
             "那就用Redis吧。",
             "决定用Redis"),
        # --- profile -------------------------------------------------------
        Rule("zh.profile.live", "profile",
             r"我们?(?:现在|目前|一直)?住在(?P<rest>.+)",
             "住在{rest}",
             "我住在杭州。",
             "住在杭州"),
        Rule("zh.profile.work_at", "profile",
             r"我(?:现在|目前|一直)?在(?P<rest>[^，,。]{1,20}?)(?P<verb>工作|上班|上学|读书|读研|读博|实习|当老师|做开发)(?P<more>.*)",
             "在{rest}{verb}{more}",
             "我在腾讯工作。",
             "在腾讯工作"),
        Rule("zh.profile.moved", "profile",
             r"我们?(?:已经|刚|刚刚|最近|去年)?搬(?P<verb>到|去|回)了?(?P<rest>.+)",
             "搬{verb}了{rest}",
             "我最近搬到了深圳。",
             "搬到了深圳"),
        Rule("zh.profile.from", "profile",
             r"我(?:来自|老家在|出生在|出生于)(?P<rest>[^，,。]{1,15})",
             "来自{rest}",
             "我来自成都。",
             "来自成都"),
        Rule("zh.profile.named", "profile",
             rf"我(?:的|家的?)?(?P<rel>{ZH_PEOPLE}|{ZH_PETS})(?:叫|名叫|的名字是|名字叫|名字是)(?P<rest>.+)",
             "{rel}叫{rest}",
             "我家的狗叫旺财。",
             "狗叫旺财"),
        Rule("zh.profile.have", "profile",
             rf"我(?:们)?有(?P<rest>(?:一|两|二|三|四|五|\d+)(?:个|只|条|位)(?:{ZH_PEOPLE}|{ZH_PETS}).*)",
             "有{rest}",
             "我有两个孩子。",
             "有两个孩子"),
        Rule("zh.profile.age", "profile",
             r"我今年(?P<rest>\d{1,3}|[一二三四五六七八九十]{1,3})岁",
             "今年{rest}岁",
             "我今年35岁。",
             "今年35岁"),
        Rule("zh.profile.allergic", "profile",
             r"我对(?P<rest>.{1,12}?)过敏",
             "对{rest}过敏",
             "我对花生过敏。",
             "对花生过敏"),
        Rule("zh.profile.i_am", "profile",
             r"我(?:现在|目前)?是(?P<rest>一(?:名|个|位)[^，,。]{1,20}|[\u4e00-\u9fff]{0,6}(?:老师|教师|医生|护士|学生|"
             r"工程师|程序员|设计师|律师|会计|研究生|博士生|大学生|司机|厨师|记者|产品经理|销售|自由职业者|退休人员)(?:[^，,。]{0,12}))$",
             "是{rest}",
             "我是一名软件工程师。",
             "是一名软件工程师"),
        Rule("zh.profile.native", "profile",
             r"我是(?P<rest>(?!一)[\u4e00-\u9fff]{2,6}?)人$",
             "是{rest}人",
             "我是广东人。",
             "是广东人"),
    ],
}


# Lead-in words that may precede the subject: "Honestly, I prefer…".
_LEADS: Final[dict[str, str]] = {
    "en": (
        r"(?:(?:well|so|and|but|also|honestly|actually|oh|yeah|yes|no|ok|okay|btw|by the way|anyway|personally|"
        r"to be honest|tbh|in general|generally|these days|nowadays|lately|recently|fyi|just so you know|"
        r"for the record|for context|as you know|hmm+|um+|ah|i think|i guess|i'd say|i feel like|i believe|"
        r"i suppose|also|plus|fwiw|oh and|and also|in fact|sure|right|now|from now on|going forward|"
        r"as i (?:said|mentioned|told you)|like i said|again|"
        r"after (?:a lot of|some|much) (?:thought|thinking|discussion)|after thinking about it|in the end|ultimately|"
        r"today|this morning|tonight|starting today|from today on|as of today)[,:;\s]+)*"
    ),
    "sv": (
        r"(?:(?:alltså|ärligt talat|faktiskt|men|och|så|förresten|btw|numera|nu för tiden|för övrigt|ja|nej|"
        r"okej|ok|jo|hmm+|asså|personligen|då|i allmänhet|generellt|jag tror|jag tycker att|jag känner att|"
        r"efter mycket funderande|till slut|från och med nu|idag|i dag|nu|som sagt|som jag sa)[,:;\s]+)*"
    ),
    "zh": (
        r"(?:(?:其实|说实话|老实说|另外|对了|而且|但是|不过|所以|嗯+|哦|好吧|顺便说一下|顺便说|顺便提一下|"
        r"最近|以后|我觉得|总之|反正|今天|刚才|经过考虑|想了想|从今天开始|从今天起|从现在开始|从现在起)[，,\s]*)*"
    ),
}
_FLAGS: Final[dict[str, int]] = {"en": re.IGNORECASE, "sv": re.IGNORECASE, "zh": 0}

# A match may start the clause or follow a comma ("When I travel, I prefer…");
# Chinese may also start right after a time word ("周末我喜欢爬山").
_ZH_TIME_WORDS: Final = ("的时候", "时候", "的话", "以后", "之后", "之前", "周末", "早上", "晚上", "平时",
                         "上午", "下午", "每天", "工作日", "假期", "冬天", "夏天", "时")
_STARTS: Final[dict[str, str]] = {
    "en": r"(?:^|(?<=,))\s*",
    "sv": r"(?:^|(?<=,))\s*",
    "zh": r"(?:^|(?<=[，,])|" + "|".join(f"(?<={w})" for w in _ZH_TIME_WORDS) + r")\s*",
}
# An English/Swedish prefix before the comma is kept when it is a condition
# ("when I travel"); a Chinese one when it ends with a time word.
_CONDITION: Final[dict[str, re.Pattern[str]]] = {
    "en": re.compile(r"(?:when|whenever|if|while|for|in|on|at|during|after|before|with)\b", re.IGNORECASE),
    "sv": re.compile(r"(?:när|om|under|efter|innan|på|i|vid|med|hemma|på jobbet)(?![a-zåäö])", re.IGNORECASE),
}
_SV_INVERSION: Final = re.compile(
    r"(?P<pre>[^,?]{2,40}?),? (?!(?:och|men|att|som|eller|än|med|för|till|om|när|då)\b)(?P<verb>[a-zåäö]+) jag "
    r"(?P<tail>.+)",
    re.IGNORECASE,
)
_SV_LEAD_ONLY: Final = re.compile(
    r"(?:från och med (?:idag|i dag|nu)|från (?:idag|i dag)|nu|faktiskt|ärligt talat|"
    r"egentligen|personligen|som sagt|därför|så)",
    re.IGNORECASE,
)
# Without a comma: "In the mornings I prefer tea", "If I have time I want to…".
_EN_CONDITION_PREFIX: Final = re.compile(
    r"(?P<pre>(?:when|whenever|if|while|in|on|at|during|after|before|for)\b[^,]{1,40}?)\s+(?=(?:i|i'm|my|we)\b)",
    re.IGNORECASE,
)


# --------------------------------------------------------------------------- #
# Filters: small talk, questions, today-only, references
# --------------------------------------------------------------------------- #

_SMALL_TALK_WORDS: Final = (
    r"(?:hi|hello|hey|hiya|yo|howdy|good (?:morning|afternoon|evening|night)|thanks?(?: you)?(?: so much|"
    r" a lot| very much)?"
    r"|thx|ty|cheers|ok(?:ay)?|k|cool|great|nice|awesome|perfect|sounds good|got it|sure|yes|yeah|yep|yup|no|nope|"
    r"lol|haha+|hehe|bye|goodbye|see you(?: later| soon)?|have a (?:nice|good|great) (?:day|evening|weekend)|you too|"
    r"no worries|no problem|np|how are you(?: doing| today)?|how's it going|i'm (?:fine|good|great|ok|okay)|not bad|"
    r"that's (?:great|cool|nice|helpful|interesting|awesome|perfect|fine)|makes sense|you're welcome|welcome|"
    r"hmm+|oh|wow|ah|good|fine|alright|all right|will do|right|exactly|indeed|agreed|please|"
    r"hej|hejsan|tjena|tja|hallå|god morgon|god kväll|godnatt|god natt|tack(?: så mycket| snälla|"
    r" för hjälpen| ska du ha)?|"
    r"tackar|okej|bra|toppen|perfekt|super|kanon|ja|nej|japp|nä|absolut|hej då|hejdå|vi ses|ha det bra|trevligt|"
    r"vad bra|låter bra|precis|förstår|jag förstår|hur mår du|jag mår bra|mår bra|härligt|grymt|snälla|"
    r"你好|您好|嗨|哈喽|早上好|早安|晚上好|晚安|谢谢|谢谢你|谢谢您|多谢|感谢|好的|好|嗯+|行|可以|没问题|对|是的|"
    r"哈哈+|再见|拜拜|明白了|知道了|收到|辛苦了|不客气|你好吗|我很好|还不错|太好了|不错|好吧|了解|"
    r"there|again|everyone|all|buddy|friend|so much|a lot|then|too|då|igen|på dig|啦|呀|哦)"
)
# A sentence made only of greetings, thanks and acknowledgements ("Thanks, bye!",
# "Hej hej!"), or gratitude for anything ("Thanks for the help yesterday").
_SMALL_TALK: Final = re.compile(
    rf"{_SMALL_TALK_WORDS}(?:[\s,，!！.。]*{_SMALL_TALK_WORDS})*"
    r"|(?:thanks?(?: you)?(?: so much| a lot)?|tack(?: så mycket)?) (?:for|för) [^.!?]{1,60}"
    r"|(?:谢谢|感谢|多谢)[^。！？]{0,20}",
    re.IGNORECASE,
)
# Brackets stay: "[address]" is a placeholder and "(aged 4)" content.
_TRAILING_NOISE: Final = re.compile(r"[\s.!?,;:…。！？，；：~～、\"'“”‘’]+$")

_QUESTION_START: Final = re.compile(
    r"(?:what|what's|whats|how|why|when|where|who|which|whose|can|could|would|will|should|do|does|did|is|"
    r"are|am|was|were|"
    r"have|has|shall|may|might|isn't|aren't|don't|doesn't|any idea|vad|hur|varför|när|var|vem|vilken|vilket|vilka|"
    r"kan|kommer|ska|skulle|är|har|finns|borde|måste)\b",
    re.IGNORECASE,
)
_ZH_QUESTION_END: Final = re.compile(r"(?:吗|呢|么|没有|不是|对不对|好不好|行不行|可以吗)[\s。.!！~]*$")

# Markers of "only true today". The exemption phrases turn them into the start
# of a lasting change ("from today on I'm vegetarian").
_TODAY: Final[dict[str, re.Pattern[str]]] = {
    "en": re.compile(r"\b(?:today|today's|tonight|tonight's|this (?:morning|afternoon|evening)|right now|"
                     r"at the moment|just now|at this very moment)\b", re.IGNORECASE),
    "sv": re.compile(r"(?<![a-zåäö])(?:idag|i dag|ikväll|i kväll|i morse|i eftermiddag|i natt|inatt|just nu|"
                     r"för tillfället|för stunden|för dagen)(?![a-zåäö])", re.IGNORECASE),
    "zh": re.compile(r"今天|今晚|今早|此刻|这会儿|刚才|刚刚|现在正在|目前正在|眼下|此时"),
}
_TODAY_EXEMPT: Final = re.compile(
    r"\b(?:starting|from|as of|beginning) (?:today|tonight|now)(?: on)?\b|\bfrom now on\b|"
    r"från och med (?:idag|i dag|nu)|från (?:idag|i dag)|fr\.o\.m\. (?:idag|i dag)|"
    r"从今天(?:开始|起)|今天起|从现在(?:开始|起)",
    re.IGNORECASE,
)

# Objects that only make sense in the conversation ("I like that", "I love your idea").
_DEICTIC: Final[dict[str, re.Pattern[str]]] = {
    "en": re.compile(r"(?:it|that|this|these|those|them|me|us|him|her|you|your|yours|here|there|so|which|what|how|why|"
                     r"the (?:idea|suggestion|answer|first one|second one|third one|last one|other one|plan|option|"
                     r"one|sound of that|way you))\b", re.IGNORECASE),
    "sv": re.compile(r"(?:det|den|detta|dessa|de|dem|du|dig|din|ditt|dina|mig|oss|honom|henne|här|där|som|vad|hur|"
                     r"idén|förslaget|svaret|planen)(?![a-zåäö])", re.IGNORECASE),
    "zh": re.compile(r"(?:这|那|它|你|您|一下|好了)"),
}

# The other speaker in the object ("I'd love to take you up on your offer") makes it
# about this conversation; a trailing demonstrative ("the way the light hits this")
# points at something only the conversation shows.
_CONVERSATIONAL: Final[dict[str, re.Pattern[str]]] = {
    "en": re.compile(r"\b(?:you|your|yours|yourself)\b|\b(?:this|that|these|those)$", re.IGNORECASE),
    "sv": re.compile(r"(?<![a-zåäö])(?:du|dig|din|ditt|dina)(?![a-zåäö])|(?<![a-zåäö])(?:detta|dessa|det här|den här)$",
                     re.IGNORECASE),
    "zh": re.compile(r"你|您|这个$|那个$"),
}
_EN_LEADING_ADVERBS: Final = re.compile(r"^(?:(?:also|really|actually|just|too|even)\s+)+", re.IGNORECASE)

# A rest that is nothing but a particle ("Yeah, I love to.", "Jag vill det också").
_EMPTY_REST: Final = re.compile(
    r"(?:to|too|so|one|ones|doing so|doing that|it all|a lot|very much|so much|lots|att|också|så|mycket|"
    r"jättemycket|了|的|啊)",
    re.IGNORECASE,
)

_STRONG: Final[dict[str, re.Pattern[str]]] = {
    "en": re.compile(r"\b(?:really|always|never|absolutely|definitely|strongly|truly|hate|can't stand|love|"
                     r"seriously|extremely|no longer|passionate)\b", re.IGNORECASE),
    "sv": re.compile(r"(?<![a-zåäö])(?:verkligen|alltid|aldrig|absolut|hatar|avskyr|älskar|jätte\w*|extremt|"
                     r"inte längre|står inte ut)(?![a-zåäö])", re.IGNORECASE),
    "zh": re.compile(r"真的|总是|从来|从不|一直|非常|特别|最|绝对|讨厌|受不了|一定|坚决"),
}

_TRAILING_FILLER: Final[dict[str, re.Pattern[str]]] = {
    "en": re.compile(r"[,\s]+(?:too|as well|also|haha+|lol|though|tbh|honestly|anyway|btw|to be honest|"
                     r"you know|i guess|i think|by the way|actually)$", re.IGNORECASE),
    "sv": re.compile(r"[,\s]+(?:också|haha+|lol|typ|liksom|ändå|faktiskt|alltså|asså|förresten|tror jag)$",
                     re.IGNORECASE),
    "zh": re.compile(r"(?:啊|呀|哦|哈+|嘛|啦|吧|呢|的说)+$"),
}

# Pronoun rewrites for a subjectless statement ("my partner" -> "their partner").
_PRONOUNS: Final[dict[str, list[tuple[re.Pattern[str], str]]]] = {
    "en": [
        (re.compile(r"\bI'm\b"), "they're"), (re.compile(r"\bI am\b"), "they are"), (re.compile(r"\bI've\b"), "they've"),
        (re.compile(r"\bI'll\b"), "they'll"), (re.compile(r"\bI'd\b"), "they'd"), (re.compile(r"\bI was\b"), "they were"),
        (re.compile(r"\bI\b"), "they"), (re.compile(r"\b[Mm]yself\b"), "themselves"), (re.compile(r"\b[Mm]y\b"), "their"),
        (re.compile(r"\bme\b"), "them"), (re.compile(r"\bmine\b"), "theirs"), (re.compile(r"\b[Oo]ur\b"), "their"),
        (re.compile(r"\bours\b"), "theirs"), (re.compile(r"\bourselves\b"), "themselves"), (re.compile(r"\bus\b"), "them"),
        (re.compile(r"\bwe're\b"), "they're"), (re.compile(r"\bwe\b"), "they"),
    ],
    "sv": [
        # "30 min" is minutes, not "my".
        (re.compile(r"(?<![0-9] )(?<![0-9])\b[Mm]in\b"), "sin"),
        (re.compile(r"\b[Mm]itt\b"), "sitt"), (re.compile(r"\b[Mm]ina\b"), "sina"),
        (re.compile(r"\b[Mm]ig\b"), "sig"), (re.compile(r"\b[Oo]ss\b"), "sig"), (re.compile(r"\b[Vv]år\b"), "sin"),
        (re.compile(r"\b[Vv]årt\b"), "sitt"), (re.compile(r"\b[Vv]åra\b"), "sina"), (re.compile(r"\b[Jj]ag\b"), "hen"),
    ],
    "zh": [(re.compile(r"我们的|我的"), "自己的"), (re.compile(r"我(?!们)"), "自己")],
}


# --------------------------------------------------------------------------- #
# Splitting and rewriting
# --------------------------------------------------------------------------- #

_SENTENCE_SPLIT: Final = re.compile(r"(?<=[.!?…])\s+|(?<=[。！？；;!?])|\n+")
_EN_POSS_CLAUSE = (r"(?:my|our) (?:[\w'-]+ ){0,2}(?:is|are|was|were|'s|has|have|likes|loves|prefers|hates|works|"
                   r"lives|wants|needs|called|named)\b")
_SV_POSS_CLAUSE = (r"(?:min|mitt|mina|vår|vårt|våra) (?:[\wåäö-]+ ){0,2}(?:är|var|heter|har|gillar|älskar|föredrar|"
                   r"jobbar|bor|vill)\b")
# Clause boundaries: a conjunction before a new subject ("…, and I work as…"), or
# before "my X is…" (but not "with my partner and our two cats").
_CLAUSE_SPLIT: Final = re.compile(
    r",\s+so\s+"
    r"|,?\s+(?:and|but|so|plus|while|whereas)\s+(?=(?:i|i'm|i've|i'd|i'll|we|we've|we're)\b)"
    rf"|(?:,\s+|,?\s+(?:and|but|while|whereas)\s+)(?={_EN_POSS_CLAUSE})"
    r"|,?\s+(?:och|men|så|plus|medan)\s+(?=(?:jag|vi)\b)"
    rf"|(?:,\s+|,?\s+(?:och|men|medan)\s+)(?={_SV_POSS_CLAUSE})"
    r"|[，,]\s*(?:而且|但是|但|不过|所以|并且|也|同时)?(?=我)",
    re.IGNORECASE,
)
# "I live in Västerås and have two kids": the second verb shares the subject.
_ELIDED_SUBJECT: Final = re.compile(
    # "love"/"like" are left out: "so much energy and love everywhere" is a noun.
    r",?\s+(?P<conj>and|och)\s+(?=(?:have|work|live|prefer|hate|enjoy|want|plan|speak|am|"
    r"har|jobbar|arbetar|bor|gillar|föredrar|vill|planerar|talar|pratar)\b)",
    re.IGNORECASE,
)
_STARTS_WITH_I: Final = re.compile(r"\W*(?:i|jag)\b", re.IGNORECASE)
_APOSTROPHES: Final = str.maketrans({"’": "'", "‘": "'", "`": "'", "＇": "'"})


# Words that only label an identifier. "Phone number is [phone]" or "Bor på [address]"
# says nothing once the identifier is masked, so such a memory is dropped.
_LABEL_WORDS: Final = re.compile(
    r"\b(?:phone|telephone|mobile|cell|number|numbers|email|e-mail|mail|address|addresses|home|work|office|"
    r"lives?|living|at|on|in|is|are|was|their|the|a|an|my|can|be|reached|reach|call|calls|contact|contacted|via|"
    r"by|or|and|card|account|bank|iban|ip|id|ssn|personal|identity|postcode|zip|"
    r"telefonnummer|telefon|mobilnummer|nummer|mejl|e-post|adress|adressen|bor|på|i|är|hens|sin|sitt|sina|"
    r"kan|nås|ring|kontonummer|kortnummer|och|eller)\b"
    r"|电话|手机|号码|手机号|邮箱|地址|住在|是|身份证号?|卡号|账号|的|自己|联系方式|可以|打|或",
    re.IGNORECASE,
)
