"""The recall gate's rule table: per language, the patterns of turns that need the user's memory and of
turns that need none, each with an example turn the tests check. ``gate.py`` compiles and runs them."""

from __future__ import annotations

from typing import Final

from ..words import EN_PEOPLE, EN_PETS, SV_PEOPLE, SV_PETS, ZH_PEOPLE, ZH_PETS


_NO_MEMORY: Final = "no_memory"

# Shared word lists (the people and pets are memory_core.language.words', which
# extraction uses too). Patterns run on casefolded text, so everything is
# lowercase; Chinese patterns are written in simplified characters because
# traditional input is folded to simplified before matching.

_EN_ADJ = (
    r"(?:(?:new|old|little|big|baby|younger|older|elder|oldest|youngest|eldest|"
    r"best|late|dear|current|future|step|half|ex)[- ]?)?"
)
_EN_WORK = (
    r"job|work|career|company|startup|business|employer|office|projects?|thesis|dissertation|"
    r"research|paper|codebase|code|repo|repository|app|website|product|course|classes|class|"
    r"major|degree|school|university|college|exams?|interview|shift|salary|income|budget|"
    r"portfolio|savings|mortgage|rent|debts?|taxes|notes|files|documents|emails|inbox"
)
_EN_LIFE = (
    r"house|home|apartment|flat|place|car|bike|garden|kitchen|city|town|hometown|"
    r"neighbou?rhood|country|birthday|anniversary|wedding|name|age|address|email|"
    r"phone(?: number)?|diet|allerg(?:y|ies)|health|condition|medications?|meds|symptoms|"
    r"weight|height|blood type|doctor|schedule|calendar|appointments?|trip|vacation|holiday|"
    r"flight|hotel|commute|hobby|hobbies|gym|workout|training|languages?|native language|religion"
)

_SV_POSS = r"(?:min|mitt|mina|vår|vårt|våra)"
_SV_ADJ = (
    r"(?:(?:nya|gamla|lilla|lille|stora|store|äldsta|yngsta|bästa|före detta|ex|bonus|styv)"
    r"[- ]?)?"
)
_SV_WORK = (
    r"jobb|arbete|arbetsplats|anställning|karriär|företag|firma|startup|projekt|uppsats|"
    r"avhandling|exjobb|kod|app|hemsida|kurs|kurser|utbildning|skola|examen|tenta|tentor|"
    r"lön|inkomst|budget|ekonomi|lån|hyra|skatt"
)
_SV_LIFE = (
    r"hus|hem|lägenhet|bostad|bil|cykel|trädgård|stad|hemstad|födelsedag|bröllopsdag|bröllop|"
    r"namn|ålder|adress|mejl|e-post|telefonnummer|diet|kost|allergi|allergier|hälsa|sjukdom|"
    r"medicin|mediciner|vikt|längd|schema|kalender|möte|möten|resa|semester|flyg|hotell|"
    r"hobby|hobbyer|träning|gym|språk|modersmål"
)

# Each row: (rule_id, category, pattern, example).  rule_id is
# "<language>.<category>.<name>"; the example is a turn the rule fires on and
# is checked by the tests, so the table documents itself.
RULES: dict[str, list[tuple[str, str, str, str]]] = {
    "en": [
        # --- earlier_talk -------------------------------------------------
        # "when was the last time X won" is trivia, not a callback, hence the
        # look-behinds.
        ("en.earlier_talk.last_time", "earlier_talk",
         r"(?<!\bwas the )(?<!'s the )(?<!\bis the )\blast (?:time|session|chat|conversation)\b",
         "What did we talk about last time?"),
        ("en.earlier_talk.as_discussed", "earlier_talk",
         r"\bas discussed\b|\b(?:as|like) (?:we|i|you) (?:discussed|talked about|said|mentioned|"
         r"agreed|planned|decided|suggested)\b",
         "As we discussed, let's use Postgres."),
        ("en.earlier_talk.you_told_me", "earlier_talk",
         r"\byou (?:told|showed|taught|gave|sent|promised|reminded|asked) me\b|"
         r"\byou (?:said|mentioned|suggested|recommended) (?:earlier|before|last|yesterday|that|i)\b",
         "You told me about a good book, which one was it?"),
        ("en.earlier_talk.i_told_you", "earlier_talk",
         r"\bi (?:told|showed|asked|sent|gave) you\b|\bi (?:already )?mentioned\b|"
         r"\bi said (?:earlier|before|that|last)\b",
         "I told you my sister is visiting."),
        ("en.earlier_talk.remember", "earlier_talk",
         r"\b(?:do|did|can|could|will) you (?:still )?(?:remember|recall)\b|"
         r"\bremember (?:when|our|my|what (?:i|we|you)|(?:that|how) (?:i|we|you))\b",
         "Remember when I said I'd visit Rome?"),
        ("en.earlier_talk.like_before", "earlier_talk",
         r"\b(?:like|as|same as) before\b",
         "Format it like before."),
        # "thanks again" is a pleasantry, not a callback.
        ("en.earlier_talk.again", "earlier_talk",
         r"(?<!thanks )(?<!thank you )(?<!thx )\bagain\b",
         "Can you explain that again?"),
        ("en.earlier_talk.we_discussed", "earlier_talk",
         r"\bwe (?:discussed|talked|spoke about|chatted about|went over|covered|"
         r"were talking about|were discussing)\b",
         "What was that library we discussed?"),
        ("en.earlier_talk.previous_conversation", "earlier_talk",
         r"\b(?:our|the|that|my) (?:last|previous|earlier|past|other) (?:conversations?|chats?|"
         r"sessions?|discussions?|talks?)\b|\bearlier (?:in|during) (?:this|our|the) "
         r"(?:conversation|chat|session)\b|\bwhere we left off\b",
         "Let's continue where we left off."),
        ("en.earlier_talk.remind_me", "earlier_talk",
         r"\bremind me (?:of|about) (?:my|our|what|that)\b|"
         r"\bremind me (?:what|where|when|why|how|who|which) (?:i|we|you)\b",
         "Remind me what we picked for the logo."),
        # --- preference ---------------------------------------------------
        ("en.preference.my_preference", "preference",
         r"\bmy (?:personal )?(?:preferences?|preferred|favou?rites?|tastes?|likes|dislikes|"
         r"usual|go-to|style|habits?|routine)\b",
         "What's my favourite colour?"),
        ("en.preference.do_i_like", "preference",
         r"\b(?:do|did|would) i (?:usually |normally |typically |generally |really |even )?"
         r"(?:like|love|prefer|enjoy|hate|dislike)\b",
         "What kind of music do I like?"),
        ("en.preference.habits", "preference",
         r"\bi (?:usually|normally|typically|generally|tend to|prefer)\b",
         "I usually run in the morning, plan my week."),
        ("en.preference.as_usual", "preference",
         r"\b(?:as|like) usual\b|\bthe usual\b|\bthe way i like\b",
         "Make my coffee the way I like it."),
        # --- decision_or_goal ---------------------------------------------
        ("en.decision_or_goal.what_did_we_decide", "decision_or_goal",
         r"\bwhat (?:did|have|had) (?:we|i) (?:decide[ds]?|agree[ds]? (?:on|to)|settle[ds]? on|"
         r"choose|chosen|pick(?:ed)?|plan(?:ned)?|conclude[ds]?)\b",
         "What did we decide about the database?"),
        ("en.decision_or_goal.we_decided", "decision_or_goal",
         r"\b(?:we|i) (?:had |have |already )?(?:decided|agreed|settled on|chose|committed to)\b|"
         r"\bour (?:decision|agreement|deal)\b",
         "We agreed on weekly check-ins, right?"),
        ("en.decision_or_goal.my_goal_plan", "decision_or_goal",
         r"\b(?:my|our) (?:(?:long-term|short-term|current|main|big|new year'?s?|fitness|career|"
         r"weekly|daily) )?(?:goals?|plans?|targets?|objectives?|resolutions?|to-?do(?: list)?s?|"
         r"deadlines?|roadmap|milestones?|progress|intentions?|decisions?|strategy|timeline|"
         r"priorit(?:y|ies))\b",
         "What's my goal for this quarter?"),
        ("en.decision_or_goal.where_was_i", "decision_or_goal",
         r"\bwhere (?:was i|were we|did (?:i|we) (?:leave off|stop|get to))\b|"
         r"\bwhat was i (?:doing|working on|planning|going to|about to|saying)\b|"
         r"\bwhat were we (?:doing|working on|talking about|discussing)\b",
         "Where was I?"),
        ("en.decision_or_goal.i_was_going_to", "decision_or_goal",
         r"\bi was (?:going|planning|meaning) to\b|\bi (?:planned|intended|promised) to\b",
         "I was going to call the bank, when was that?"),
        # --- personal_fact ------------------------------------------------
        ("en.personal_fact.my_people", "personal_fact",
         rf"\b(?:my|our) {_EN_ADJ}(?:{EN_PEOPLE})\b",
         "My wife's birthday is next week."),
        ("en.personal_fact.my_pets", "personal_fact",
         rf"\b(?:my|our) {_EN_ADJ}(?:{EN_PETS})\b",
         "How old is my dog?"),
        ("en.personal_fact.my_work", "personal_fact",
         rf"\b(?:my|our) (?:(?:new|old|current|day|side|main|last|previous|first) )?(?:{_EN_WORK})\b",
         "Any update on my project?"),
        ("en.personal_fact.my_life", "personal_fact",
         rf"\bmy (?:(?:new|old|current|next|last|upcoming) )?(?:{_EN_LIFE})\b|"
         r"\bour (?:house|apartment|flat|car|garden|kitchen|wedding|anniversary|trip|vacation|"
         r"holiday|honeymoon)\b",
         "What's my name?"),
        ("en.personal_fact.about_me", "personal_fact",
         r"\b(?:know|remember|recall|saved|stored|learned|noted|have) about me\b|\bwho am i\b|"
         r"\bhow old am i\b|\b(?:where|what) do i (?:live|work|do for (?:a living|work))\b",
         "What do you know about me?"),
        # A bare "for me" is mostly politeness ("explain this for me"); only a
        # judgement about suitability makes it personal.
        ("en.personal_fact.for_me", "personal_fact",
         r"\b(?:good|bad|right|best|better|worse|suitable|ideal|healthy|unhealthy|safe|dangerous|"
         r"appropriate|enough|ok|okay|fine|realistic|affordable|too \w+|works?|fits?|"
         r"a good (?:fit|idea|choice|match|option)) for me\b",
         "Which laptop is best for me?"),
        # --- recommendation -----------------------------------------------
        # Bare "recommend"/"suggest" also appear in facts ("what does the WHO
        # recommend", "studies suggest"), so they need a request shape.
        ("en.recommendation.recommend", "recommendation",
         r"\b(?:(?:can|could|would|will|do) you|please|pls|you)\s+recommend\b|^recommend\b|"
         r"\brecommend (?:me|us|something|anything|some|a few)\b|"
         r"\b(?:any|your|some) recommendations?\b|\brecommendations? for (?:me|us|my|our)\b",
         "Recommend me a movie."),
        ("en.recommendation.suggest", "recommendation",
         r"\b(?:(?:can|could|would|will|do) you|please|pls|you)\s+suggest\b|^suggest\b|"
         r"\bsuggest (?:me|us|something|anything)\b|\b(?:any|your|some) suggestions?\b|"
         r"\bsuggestions? for (?:me|us|my|our)\b",
         "Can you suggest a restaurant?"),
        ("en.recommendation.what_should_i", "recommendation",
         r"\b(?:what|which|where|who|when) (?:should|shall) (?:i|we)\b|"
         r"\bshould i (?:buy|get|choose|pick|go with|try|watch|read|listen to|visit|eat|cook|"
         r"make|wear|order|drink|play|book|take)\b|"
         r"\bwhat do i (?:cook|eat|wear|buy|get|read|watch)\b",
         "What should I cook tonight?"),
        ("en.recommendation.ideas_for_me", "recommendation",
         r"\b(?:ideas?|tips|advice|suggestions?|options|gifts?|something|anything|plans?) "
         r"for (?:me|us)\b|\b(?:would|will|might) i (?:like|enjoy|love)\b",
         "Any ideas for me this weekend?"),
        ("en.recommendation.what_to", "recommendation",
         r"\b(?:what|where) to (?:cook|eat|make|watch|read|wear|play|buy|get|listen to|go|"
         r"visit|order)\b",
         "No idea what to eat tonight."),
        # --- no_memory ----------------------------------------------------
        ("en.no_memory.small_talk", _NO_MEMORY,
         r"^(?:(?:hi|hello|hey|heya|hiya|howdy|yo|greetings|good (?:morning|afternoon|evening|"
         r"night|day)|thanks|thank you|thx|ty|cheers|ok|okay|k|cool|great|nice|awesome|perfect|"
         r"got it|sure|yes|no|yep|nope|bye|goodbye|see you|see ya|later|lol|haha|how are you|"
         r"how are you doing|how's it going|what's up|sup|nice to meet you)"
         r"(?: (?:there|so much|a lot|very much|you|again|mate|buddy|everyone|all|bot|then|guys))*"
         r"[ !.?,:;)(*~-]*)+$",
         "Thanks so much!"),
        ("en.no_memory.factual_question", _NO_MEMORY,
         r"^(?:so |and |but |ok |okay |hey |please )?(?:"
         r"(?:what|who|when|where|which|why|how)(?:'s|'re| is| are| was| were| does| do| did|"
         r" many| much| far| long| old| big| tall| deep| large| fast| often)"
         r"|(?:what|which) (?:year|country|city|language|planet|element|continent)"
         r"|what (?:causes|caused|happens|happened|makes)"
         r"|who (?:wrote|invented|discovered|painted|founded|built|won|said|directed|composed))\b",
         "What is the capital of France?"),
        ("en.no_memory.how_to", _NO_MEMORY,
         r"^(?:please |can you |could you )?(?:explain|define|describe|summari[sz]e|translate|"
         r"calculate|compute|convert|solve|compare|tell me (?:a joke|a fun fact|about (?:the|a|an))|"
         r"how (?:to|do i|do you|does one|can i|can one)|is it true that)\b",
         "How do I cook rice?"),
    ],
    "sv": [
        # --- earlier_talk -------------------------------------------------
        # "när var sista gången ..." is trivia, hence the look-behind.
        ("sv.earlier_talk.last_time", "earlier_talk",
         r"(?<!\bvar )\b(?:förra|senaste|sista) (?:gången|samtalet|sessionen|chatten)\b|"
         r"\b(?:sist|senast) (?:vi|jag|du)\b",
         "Vad pratade vi om förra gången?"),
        ("sv.earlier_talk.as_discussed", "earlier_talk",
         r"\bsom (?:vi|jag|du) (?:pratade om|diskuterade|sa|sade|nämnde|kom överens om|"
         r"bestämde|snackade om|talade om)\b",
         "Som vi diskuterade igår, kör på Postgres."),
        ("sv.earlier_talk.you_said", "earlier_talk",
         r"\bdu (?:sa|sade|nämnde|berättade|lovade|tipsade om|föreslog|rekommenderade|visade)\b",
         "Du sa att jag borde läsa en bok, vilken var det?"),
        ("sv.earlier_talk.i_told_you", "earlier_talk",
         r"\bjag (?:sa|sade|nämnde|berättade|frågade|skrev) (?:till dig|för dig|att|om|tidigare|"
         r"förut|igår)\b|\bjag har (?:redan )?(?:sagt|nämnt|berättat)\b",
         "Jag berättade om min resa, minns du?"),
        ("sv.earlier_talk.remember", "earlier_talk",
         r"\b(?:kommer|kom) du ihåg\b|\bminns du\b|\bdu minns\b|\bkom ihåg (?:när|vad|att|hur)\b",
         "Kommer du ihåg vad jag sa?"),
        ("sv.earlier_talk.like_before", "earlier_talk",
         r"\b(?:som|precis som|likadant som|samma som) (?:förut|tidigare|sist|förra gången)\b",
         "Gör som förut."),
        # "tack igen" is a pleasantry; "igenom" is a different word (\b).
        ("sv.earlier_talk.again", "earlier_talk",
         r"(?<!tack )\bigen\b|\ben gång till\b",
         "Kan du förklara det igen?"),
        ("sv.earlier_talk.we_talked", "earlier_talk",
         r"\bvi (?:har )?(?:pratade|pratat|diskuterade|diskuterat|talade|talat|snackade|snackat|"
         r"chattade|chattat)\b",
         "Vilken bok var det vi pratade om?"),
        ("sv.earlier_talk.previous_conversation", "earlier_talk",
         r"\b(?:vårt|vår|det|ditt|mitt) (?:förra|senaste|tidigare) (?:samtal|samtalet|diskussion|"
         r"diskussionen|chatt|chatten|session|sessionen)\b|\bdär vi slutade\b",
         "Fortsätt där vi slutade."),
        ("sv.earlier_talk.remind_me", "earlier_talk",
         r"\bpåminn mig (?:om|vad|var|när|hur|varför)\b",
         "Påminn mig om vad vi valde."),
        # --- preference ---------------------------------------------------
        ("sv.preference.my_preference", "preference",
         r"\b(?:min|mitt|mina) (?:preferens|preferenser|smak|stil|vana|vanor|rutin|rutiner|"
         r"favorit\w*)\b",
         "Vad är min favoritfärg?"),
        ("sv.preference.do_i_like", "preference",
         r"\b(?:gillar|föredrar|älskar|ogillar|hatar|tycker) jag\b",
         "Vad gillar jag för musik?"),
        ("sv.preference.habits", "preference",
         r"\bjag (?:brukar|föredrar|tenderar att)\b|\bbrukar jag\b",
         "Jag brukar springa på morgonen."),
        ("sv.preference.as_usual", "preference",
         r"\bsom vanligt\b|\bdet vanliga\b|\bsom jag (?:vill ha det|gillar det|brukar)\b",
         "Gör kaffet som vanligt."),
        # --- decision_or_goal ---------------------------------------------
        ("sv.decision_or_goal.what_did_we_decide", "decision_or_goal",
         r"\bvad (?:bestämde|beslutade|valde|planerade|kom) (?:vi|jag)\b",
         "Vad bestämde vi om databasen?"),
        ("sv.decision_or_goal.we_decided", "decision_or_goal",
         r"\b(?:vi|jag) (?:har |hade )?(?:bestämde|bestämt|beslutade|beslutat|kom överens|"
         r"kommit överens|valde|valt|enades)\b|\bvårt beslut\b|\bvår överenskommelse\b",
         "Vi kom överens om veckomöten, eller hur?"),
        ("sv.decision_or_goal.my_goal_plan", "decision_or_goal",
         rf"\b{_SV_POSS} (?:mål|målet|plan|planer|planen|planering|att-göra-lista|todo-lista|"
         r"deadline|deadlines|nyårslöfte|nyårslöften|framsteg|prioriteringar|prioritet|beslut|"
         r"strategi|tidsplan|avsikt)\b",
         "Vad är mitt mål för kvartalet?"),
        ("sv.decision_or_goal.where_was_i", "decision_or_goal",
         r"\bvar (?:var|slutade|stannade|höll) (?:jag|vi)\b|"
         r"\bvad (?:höll|jobbade) (?:jag|vi) (?:på|med)\b",
         "Var var jag?"),
        # --- personal_fact ------------------------------------------------
        ("sv.personal_fact.my_people", "personal_fact",
         rf"\b{_SV_POSS} {_SV_ADJ}(?:{SV_PEOPLE})\b",
         "Min fru fyller år nästa vecka."),
        ("sv.personal_fact.my_pets", "personal_fact",
         rf"\b{_SV_POSS} {_SV_ADJ}(?:{SV_PETS})\b",
         "Hur gammal är min hund?"),
        ("sv.personal_fact.my_work", "personal_fact",
         rf"\b{_SV_POSS} (?:(?:nya|gamla|nuvarande) )?(?:{_SV_WORK})\b",
         "Hur går det med mitt projekt?"),
        ("sv.personal_fact.my_life", "personal_fact",
         rf"\b{_SV_POSS} (?:(?:nya|gamla|nästa|förra) )?(?:{_SV_LIFE})\b",
         "Vad är mitt namn?"),
        ("sv.personal_fact.about_me", "personal_fact",
         r"\b(?:vet|minns|kan) du (?:något |nåt |allt |mycket )?om mig\b|\bvem är jag\b|"
         r"\bvad heter jag\b|\bvar (?:bor|jobbar|arbetar) jag\b|\bhur gammal är jag\b",
         "Vad vet du om mig?"),
        # Same reasoning as en.personal_fact.for_me.
        ("sv.personal_fact.for_me", "personal_fact",
         r"\b(?:bra|dåligt|dålig|bäst|bättre|sämre|rätt|lämplig|lämpligt|nyttigt|hälsosamt|"
         r"farligt|säkert|perfekt|lagom|för \w+) för mig\b|\bpassar (?:mig|oss)\b",
         "Vilken laptop passar mig bäst?"),
        # --- recommendation -----------------------------------------------
        ("sv.recommendation.recommend", "recommendation",
         r"\b(?:kan|kunde|skulle|vill) du (?:inte )?rekommendera\b|^rekommendera\b|"
         r"\brekommendera (?:mig|oss|något|nåt|några)\b|\bvad rekommenderar du\b|"
         r"\b(?:några|dina) rekommendationer\b|\brekommendationer? (?:till|för|åt) (?:mig|oss)\b",
         "Kan du rekommendera en film?"),
        ("sv.recommendation.suggest", "recommendation",
         r"\b(?:kan|kunde|skulle) du (?:inte )?föreslå\b|^föreslå\b|"
         r"\bföreslå (?:mig|oss|något|nåt|några)\b|\bvad föreslår du\b|"
         r"\b(?:några|nåt|något) (?:förslag|idéer)\b|\b(?:förslag|idéer|tips) (?:till|för|åt) (?:mig|oss)\b",
         "Föreslå något att göra i helgen."),
        ("sv.recommendation.what_should_i", "recommendation",
         r"\b(?:vad|vilken|vilket|vilka|vart|var|vem|när) (?:ska|skall|borde|bör) (?:jag|vi)\b|"
         r"\b(?:ska|borde|bör) jag (?:köpa|välja|ta|läsa|se|titta på|lyssna på|äta|laga|resa|åka|"
         r"ha på mig|beställa|prova|testa)\b|"
         r"\bvad jag (?:ska|borde|bör) (?:göra|äta|laga|köpa|välja|se|läsa|ha på mig)\b",
         "Vad ska jag laga till middag ikväll?"),
        # --- no_memory ----------------------------------------------------
        ("sv.no_memory.small_talk", _NO_MEMORY,
         r"^(?:(?:hej|hejsan|hallå|tjena|tjenare|tja|morsning|god (?:morgon|kväll|natt|dag)|"
         r"tack|tack så mycket|tusen tack|stort tack|hej då|hejdå|ha det bra|vi ses|ok|okej|"
         r"bra|toppen|perfekt|schysst|vad bra|trevligt|läget|hur mår du|hur är läget|ja|nej)"
         r"(?: (?:igen|du|ni|på dig|alla|då|så mycket))*[ !.?,:;)(*~-]*)+$",
         "Tack så mycket!"),
        ("sv.no_memory.factual_question", _NO_MEMORY,
         r"^(?:(?:vad|vem|vilken|vilket|vilka|när|var|varför|hur) (?:är|var|hette|heter|betyder|"
         r"innebär|många|mycket|länge|lång|långt|gammal|gamla|stor|stort|hög|högt|djup|snabb|"
         r"fungerar|uppfann|skrev|grundade|upptäckte|byggde|vann)"
         r"|vilket år|vilket land|vilken stad|vad händer|vad orsakar)\b",
         "Vad är huvudstaden i Frankrike?"),
        # "hur ska jag ..." asks for personal advice, so it is left to the judge.
        ("sv.no_memory.how_to", _NO_MEMORY,
         r"^hur (?!ska |skall |borde |bör )(?:\w+ )?(?:man|jag|du)\b|"
         r"^(?:kan du )?(?:förklara|definiera|beskriv|översätt|räkna ut|beräkna|sammanfatta|"
         r"summera|jämför)\b",
         "Hur kokar man ris?"),
    ],
    "zh": [
        # --- earlier_talk -------------------------------------------------
        # "美国上次登月是什么时候" is trivia, hence the look-ahead.
        ("zh.earlier_talk.last_time", "earlier_talk",
         r"上一?[次回](?![^,.?!;]{0,30}?(?:是什么时候|是哪一?年|是几几年))",
         "上次我们聊到哪了？"),
        ("zh.earlier_talk.we_discussed", "earlier_talk",
         r"我们(?:之前|以前|上次|刚才|曾经|那天|昨天)?(?:聊|谈|说|讲|讨论|商量|提)(?:过|到|起)",
         "我们之前讨论过这个问题。"),
        # "你告诉我…" alone is an imperative ("tell me…"); only 过 or a time
        # word turns it into a callback. "跟你说过" is the user speaking
        # (zh.earlier_talk.i_told_you), hence the look-behind.
        ("zh.earlier_talk.you_said", "earlier_talk",
         r"(?<![跟和对向给])你(?:之前|以前|上次|曾经|那天|昨天|刚才)(?:说|讲|告诉|提|推荐|建议|答应)|"
         r"(?<![跟和对向给])你(?:说|讲|告诉我|告诉|提|提到|推荐|建议|答应|教)过",
         "你上次说的那本书叫什么？"),
        ("zh.earlier_talk.i_told_you", "earlier_talk",
         r"我(?:之前|以前|上次|曾经|昨天|刚才)(?:跟你|和你|对你|给你|向你)?(?:说|讲|提|告诉)|"
         r"我(?:跟你|和你|对你|向你)?(?:说|讲|提|提到)过|我告诉过你",
         "我跟你说过我对花生过敏。"),
        ("zh.earlier_talk.remember", "earlier_talk",
         r"还记得|你记得|记不记得|记得吗|你记住",
         "你还记得我的生日吗？"),
        ("zh.earlier_talk.like_before", "earlier_talk",
         r"(?:像|跟|和|同|如|按)(?:上次|之前|以前|往常|平时|平常|以往|上回|原来)(?:一样|那样|那么)|"
         r"照旧|老样子",
         "像上次一样做。"),
        # 再见 ("goodbye") must not count, so 再 needs a verb + measure word.
        ("zh.earlier_talk.again", "earlier_talk",
         r"再(?:来|做|说|讲|发|写|给我|推荐)一?(?:次|遍|个)|再一次|重新(?:来|说|讲)一?[次遍]",
         "再来一次。"),
        ("zh.earlier_talk.previous_conversation", "earlier_talk",
         r"(?:之前|上次|以前|早些时候|昨天|刚才|上回)的?(?:对话|聊天|谈话|讨论|会话)|"
         r"(?:继续|接着)(?:上次|之前|刚才|我们)",
         "接着上次的话题说。"),
        # --- preference ---------------------------------------------------
        ("zh.preference.my_preference", "preference",
         r"我的?(?:偏好|喜好|口味|爱好|兴趣|习惯|最爱|风格|品味|作息)",
         "我的偏好是什么？"),
        # 我爱你 must not fire, so 爱 needs 的/什么/a verb after it.
        ("zh.preference.do_i_like", "preference",
         r"我(?:最|比较|更|到底|一般|通常|平时)?(?:喜欢|爱|偏爱|偏好|讨厌|不喜欢)"
         r"(?:的|什么|啥|哪|吃|喝|看|听|做)",
         "我喜欢什么音乐？"),
        ("zh.preference.habits", "preference",
         r"我(?:平时|平常|通常|一般|经常|总是|往往|习惯|向来|一向|常常)",
         "我平时几点起床？"),
        ("zh.preference.as_usual", "preference",
         r"老规矩|照常|按(?:我的)?习惯|(?:和|跟|像)平常一样",
         "老规矩，来一杯拿铁。"),
        # --- decision_or_goal ---------------------------------------------
        ("zh.decision_or_goal.what_did_we_decide", "decision_or_goal",
         r"我们?(?:之前|上次|当时|最后|最终)?(?:决定|商量好|说好|约好|商定|定好|定下|选)了?"
         r"(?:什么|啥|哪|的|用|要)",
         "我们决定用哪个数据库？"),
        ("zh.decision_or_goal.my_goal_plan", "decision_or_goal",
         r"我们?的(?:目标|计划|打算|规划|梦想|待办|任务|进度|截止日期|deadline|日程|安排|决定|"
         r"新年愿望|优先级|策略|时间表|里程碑)",
         "我的目标是什么？"),
        ("zh.decision_or_goal.where_was_i", "decision_or_goal",
         r"我们?(?:上次|之前|刚才)?(?:做|写|学|看|读|聊|说|讲|谈|进行|弄)到(?:哪|什么地方|第几)|"
         r"到哪一步|我刚才在(?:做|干|说)",
         "我做到哪一步了？"),
        ("zh.decision_or_goal.i_had_planned", "decision_or_goal",
         r"我(?:本来|原来|之前|上次)(?:打算|计划|准备|想)",
         "我本来打算周末去爬山。"),
        # --- personal_fact ------------------------------------------------
        ("zh.personal_fact.my_people", "personal_fact",
         rf"我们?(?:的|家的?)?(?:{ZH_PEOPLE})",
         "我老婆下周过生日。"),
        # Single characters (狗, 猫) are too ambiguous without 的/家.
        ("zh.personal_fact.my_pets", "personal_fact",
         rf"我们?(?:的|家的?|养的)(?:{ZH_PETS})|"
         r"我们?(?:狗狗|猫咪|宠物)",
         "我家的狗多大了？"),
        # 应用/产品/代码 double as verbs or generic nouns ("我们应用这个公式"),
        # so they need 的.
        ("zh.personal_fact.my_work", "personal_fact",
         r"我们?(?:的|家的?)?(?:工作|公司|单位|项目|专案|论文|专业|学校|大学|课程|工资|薪水|"
         r"收入|预算|房贷|房租)|我们?的(?:考试|面试|代码|网站|应用|产品|存款|创业)",
         "我的项目进展如何？"),
        ("zh.personal_fact.my_life", "personal_fact",
         r"我们?(?:的|家的?)(?:房子|家|车|汽车|自行车|城市|生日|结婚纪念日|纪念日|婚礼|名字|年龄|"
         r"地址|邮箱|电话|手机号|饮食|过敏|健康|身体|病|病情|药|体重|身高|日程|日历|行程|假期|"
         r"旅行|航班|酒店|语言|母语)|我(?:家|生日|身体|体重|身高|行程|老家)",
         "我的生日是哪天？"),
        ("zh.personal_fact.about_me", "personal_fact",
         r"你还?(?:知道|记得|了解)(?:关于)?我(?!们)|关于我(?!们)的?(?:事|信息|资讯|情况|资料|一切)|"
         r"我(?:叫什么|住(?:在)?哪|在哪(?:里|儿)?(?:工作|上班|住|读书)|多大了|几岁)",
         "你知道我住在哪里吗？"),
        ("zh.personal_fact.for_me", "personal_fact",
         r"对我(?!们)(?:来说|而言|有(?:好处|益|害|用))|适合我",
         "什么运动适合我？"),
        # --- recommendation -----------------------------------------------
        # A bare 推荐/建议 also appears in facts ("医生建议每天…").
        ("zh.recommendation.recommend", "recommendation",
         r"(?:给|帮|为|替)我们?(?:推荐|挑|选)|推荐(?:一下|一|几|些|个|点|给我|我)|"
         r"有(?:什么|没有|啥)(?:好的?)?推荐|你(?:会|能|可以)?推荐|求推荐",
         "给我推荐一部电影。"),
        ("zh.recommendation.suggest", "recommendation",
         r"(?:给|帮)我们?(?:一些|一点|点|些|个|几个)?(?:建议|意见|主意|点子)|"
         r"你有?(?:什么|没有|啥)?(?:好的?)?(?:建议|主意|点子)|"
         r"有(?:什么|没有|啥)(?:好的?)?(?:建议|主意|点子)|建议我",
         "有什么建议吗？"),
        ("zh.recommendation.what_should_i", "recommendation",
         r"我们?(?:今天|今晚|明天|周末|晚上|中午|早上|现在|这周末)?(?:应该|应当|该|要|可以|能)?"
         r"(?:做|吃|买|看|去|穿|选|读|听|学|玩|煮|带|送|喝|点)(?:点|些)?(?:什么|啥|哪)",
         "我今晚应该吃什么？"),
        ("zh.recommendation.what_to_eat", "recommendation",
         r"(?:今天|今晚|明天|周末|晚上|中午|早上|早餐|午饭|晚饭|午餐|晚餐)(?:应该|该|要)?"
         r"(?:吃|做|喝|穿|去|玩|看)(?:点|些)?(?:什么|啥|哪)",
         "今晚吃什么好？"),
        # --- no_memory ----------------------------------------------------
        ("zh.no_memory.small_talk", _NO_MEMORY,
         r"^(?:你好|您好|嗨|哈喽|哈啰|早上好|早安|午安|晚上好|晚安|下午好|谢谢|谢谢你|谢谢您|多谢|"
         r"感谢|非常感谢|好的|好|嗯|嗯嗯|拜拜|再见|没事|没问题|你好吗|最近怎么样|在吗|哈哈+)"
         r"[啊呀哦喔了啦~!.,\s]*$",
         "谢谢！"),
        ("zh.no_memory.question_end", _NO_MEMORY,
         r"(?:是什么|是谁|是哪(?:里|儿|个|一年|年|国)?|在哪(?:里|儿)?|有多[少大高远长重深]|"
         r"多少[个种年人]?|什么意思|什么时候|哪一?年|几几年)[呢啊呀]?[?.!\s]*$",
         "法国的首都是哪里？"),
        # "我应该怎么…" asks for personal advice, so only plain 我怎么 counts.
        ("zh.no_memory.question_start", _NO_MEMORY,
         r"^(?:请问)?(?:为什么|为啥|怎么|怎样|如何|什么是|谁是|谁发明|哪个国家|哪位)|^我要?(?:怎么|如何)",
         "我怎么煮米饭？"),
        ("zh.no_memory.task", _NO_MEMORY,
         r"^(?:请|麻烦|帮我|请帮我|能不能|可以)?(?:解释|翻译|定义|计算|总结|概括|介绍一下|讲讲|"
         r"写一(?:个|首|篇|段|封))",
         "请解释一下相对论。"),
    ],
}

# Questions about the user in the first person ("Do I eat meat?", "Vad är jag allergisk mot?",
# "我的咖啡要怎么冲？"): what only memory can answer. Tried after the no-memory rules, so "Can you
# explain to me how tides work?" stays general knowledge.
ABOUT_USER: dict[str, list[tuple[str, str, str, str]]] = {
    "en": [
        ("en.personal_fact.first_person_question", "personal_fact",
         r"^(?=.*\?\s*$).*?\b(?:i|i'm|i've|i'd|my|me|mine|myself)\b|"
         r"^(?:what|which|where|when|who|how|do|does|did|is|am|are|was|can|should|could|would|will)\b.*"
         r"\b(?:i|my|me|mine|myself)\b",
         "Do I eat meat?"),
    ],
    "sv": [
        ("sv.personal_fact.first_person_question", "personal_fact",
         r"^(?=.*\?\s*$).*?\b(?:jag|mig|min|mitt|mina|mej)\b|"
         r"^(?:vad|vilken|vilket|vilka|var|när|vem|hur|varför|är|har|kan|ska|bör|får|brukar)\b.*"
         r"\b(?:jag|mig|min|mitt|mina|mej)\b",
         "Äter jag kött?"),
    ],
    "zh": [
        ("zh.personal_fact.first_person_question", "personal_fact",
         r"^(?=.*[？?]\s*$)[^我]*我|^[^我]*我.*(?:吗|呢|什么|啥|哪|几|多少|怎么|为什么|为啥)",
         "我吃肉吗？"),
    ],
}
