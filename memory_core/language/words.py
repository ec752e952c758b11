"""Words the rule tables share: the people and the pets a user calls "my ...", per language.

Each list is a regular-expression alternation, lowercase (the rules match casefolded text) and,
for Chinese, in simplified characters (traditional input is folded first). The recall gate
(:mod:`memory_core.index.gate`: "my wife's birthday" is a personal fact worth recalling) and extraction
(:mod:`memory_core.curation.extract`: "my dog is called Ludde", "I have two kids") use the same lists, so
a word added here counts for both. :data:`SV_DEFINITE` gives every Swedish word its definite form
("Min fru heter Anna" becomes "Frun heter Anna").
"""

from __future__ import annotations

from typing import Final

__all__ = ["EN_PEOPLE", "EN_PETS", "SV_PEOPLE", "SV_PETS", "ZH_PEOPLE", "ZH_PETS", "SV_DEFINITE"]

# Family, partners, friends and the people of a user's work and home. "best friend" comes before
# "friend" so that extraction keeps the whole relation ("Best friend is called Sam").
EN_PEOPLE: Final = (
    r"wife|husband|partner|spouse|fianc[ée]e?|boyfriend|girlfriend|bf|gf|ex|"
    r"sons?|daughters?|kids?|children|child|baby|babies|toddler|twins|"
    r"mom|mum|mother|mama|dad|father|papa|parents?|brothers?|sisters?|siblings?|family|"
    r"grandma|grandmother|grandpa|grandfather|grandparents?|aunt|uncle|cousins?|"
    r"nephew|niece|in-laws|best friend|friends?|bestie|boss|manager|colleagues?|coworkers?|co-workers?|"
    r"teammates?|team|roommates?|flatmates?|neighbou?rs?|therapist|landlord|"
    r"students?|clients?|customers?"
)
EN_PETS: Final = r"dogs?|cats?|pets?|puppy|puppies|kitten|kittens|hamsters?|rabbits?|bunny|parrot|horse"

SV_PEOPLE: Final = (
    r"fru|man|make|maka|sambo|partner|pojkvän|flickvän|fästman|fästmö|son|söner|dotter|döttrar|"
    r"barn|bebis|bäbis|mamma|mor|pappa|far|föräldrar|bror|bröder|syster|systrar|syskon|familj|"
    r"mormor|farmor|morfar|farfar|kusin|kusiner|bästa vän|vän|väninna|vänner|kompis|kompisar|chef|"
    r"kollega|kollegor|granne|grannar|kund|kunder|team"
)
SV_PETS: Final = r"hund|hundar|katt|katter|husdjur|valp|valpar|kattunge|kanin|häst|marsvin"

# The gate wants 的, 家 or 养的 before a pet (a lone 狗 or 猫 is too ambiguous); extraction has 叫
# or a counter (只, 条) next to it.
ZH_PEOPLE: Final = (
    r"老婆|妻子|太太|老公|丈夫|先生|爱人|男朋友|女朋友|男友|女友|对象|伴侣|未婚夫|未婚妻|"
    r"儿子|女儿|孩子|小孩|宝宝|宝贝|爸爸|妈妈|父亲|母亲|爸妈|父母|爷爷|奶奶|外公|外婆|"
    r"哥哥|姐姐|弟弟|妹妹|家人|亲戚|朋友|闺蜜|好友|同事|老板|上司|领导|经理|室友|邻居|"
    r"客户|医生|老师|同学|团队"
)
ZH_PETS: Final = r"狗狗|狗|猫咪|猫|小狗|小猫|兔子|鹦鹉|宠物|鱼|仓鼠"

SV_DEFINITE: Final[dict[str, str]] = {
    "fru": "frun", "man": "mannen", "make": "maken", "maka": "makan", "sambo": "sambon", "partner": "partnern",
    "pojkvän": "pojkvännen", "flickvän": "flickvännen", "fästman": "fästmannen", "fästmö": "fästmön",
    "son": "sonen", "söner": "sönerna", "dotter": "dottern", "döttrar": "döttrarna", "barn": "barnet",
    "bebis": "bebisen", "bäbis": "bäbisen", "mamma": "mamman", "mor": "modern", "pappa": "pappan",
    "far": "fadern", "föräldrar": "föräldrarna", "bror": "brodern", "bröder": "bröderna", "syster": "systern",
    "systrar": "systrarna", "syskon": "syskonen", "familj": "familjen", "mormor": "mormodern",
    "farmor": "farmodern", "morfar": "morfadern", "farfar": "farfadern", "kusin": "kusinen",
    "kusiner": "kusinerna", "bästa vän": "bästa vännen", "vän": "vännen", "väninna": "väninnan",
    "vänner": "vännerna", "kompis": "kompisen", "kompisar": "kompisarna", "chef": "chefen",
    "kollega": "kollegan", "kollegor": "kollegorna", "granne": "grannen", "grannar": "grannarna",
    "kund": "kunden", "kunder": "kunderna", "team": "teamet",
    "hund": "hunden", "hundar": "hundarna", "katt": "katten", "katter": "katterna", "husdjur": "husdjuret",
    "valp": "valpen", "valpar": "valparna", "kattunge": "kattungen", "kanin": "kaninen", "häst": "hästen",
    "marsvin": "marsvinet",
}
