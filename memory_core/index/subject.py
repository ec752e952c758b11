"""The namespace's subject in a query: a person's name says who a question is about, not what.

An agent stores "Name is Maya Lindqvist" once and "Mildly allergic to cashews" without her name.
Asked "What is Maya allergic to?", the model's cosine and BM25 both favour the name statement: the
name is the question's rarest word, and the one memory holding it is about nothing else. So recall
ranks a question without the words that name the namespace's subject (:func:`ranking_query`), the
dense vector and the lexical match alike; everything else about the query (the periods it names,
what is logged) reads the question as asked.

Who the subject is comes from the namespace's own memories: a name statement ("Name is X", "My
name is X", "Heter X", "Mitt namn är X", "名字叫X", "我叫X"; :data:`NAME_STATEMENT`) names it, and a
query word whose token is among X's tokens is the subject's name. A name is held by few memories,
so only the query tokens of at most :data:`MAX_HOLDERS` memories are looked up, from the lexical
index's postings: no state beyond the index, and the cost is a few posting lists per query. A query
that is nothing but the name ("Who is Maya?") is ranked as asked.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Callable

from ..language.text import CJK_RUN, WORD, lexical_tokens
from .lexical import LexicalIndex

# A memory that states its subject's name; the group that matched holds the name.
NAME_STATEMENT = re.compile(
    r"^(?:(?:my|her|his|their|the user's|user's|full) )*name is (?P<en>.+)$"
    r"|^(?:i am|i'm|she is|he is|she's|he's) called (?P<en_called>.+)$"
    r"|^(?:(?:jag|hon|han) )?heter (?P<sv>.+)$"
    r"|^(?:mitt|hennes|hans) (?:fullständiga )?namn är (?P<sv_name>.+)$"
    r"|^(?:我|她|他)?(?:的)?(?:名字|姓名|全名)(?:叫|是)(?P<zh>.+)$"
    r"|^(?:我|她|他)叫(?P<zh_called>.+)$")
MAX_HOLDERS = 3  # a query token held by more memories than this is not looked up as a name
_POSSESSIVE = ("'s", "\u2019s")


def stated_name(text: str) -> str | None:
    """The name a name statement gives (casefolded), or None when ``text`` is not one."""
    t = unicodedata.normalize("NFKC", text).casefold().strip().rstrip(".。!！ ")
    m = NAME_STATEMENT.match(t)
    return next((v for v in m.groups() if v), None) if m else None


def subject_tokens(lexical: LexicalIndex, text_of: Callable[[int], str], query_tokens: list[str]) -> frozenset[str]:
    """The query tokens that name the namespace's subject: held in its name by a name statement
    among the namespace's memories (``text_of(row)``: a row's text); a Swedish genitive ("Mayas")
    counts as the name."""
    found = set()
    for token in dict.fromkeys(query_tokens):
        bases = (token, token[:-1]) if len(token) > 3 and token.endswith("s") else (token,)
        for base in bases:
            for row in lexical.rows_holding(base, MAX_HOLDERS):
                name = stated_name(text_of(int(row)))
                if name is not None and base in lexical_tokens(name):
                    found.add(token)
    return frozenset(found)


def without_words(query: str, tokens: frozenset[str]) -> str:
    """``query`` without the words whose tokens are all in ``tokens`` (with an English possessive),
    and without those of ``tokens`` that are Chinese words inside a CJK run."""
    out = query
    for m in reversed(list(WORD.finditer(query))):
        word = m.group(0)
        if CJK_RUN.search(word) is None:
            toks = lexical_tokens(word) or lexical_tokens(word.casefold().removesuffix("'s"))
            if toks and all(t in tokens for t in toks):
                end = m.end() + (2 if query[m.end():m.end() + 2] in _POSSESSIVE else 0)
                out = out[:m.start()] + out[end:]
            continue
        new = word
        for t in sorted(tokens, key=len, reverse=True):
            if len(t) > 1 and CJK_RUN.fullmatch(t):
                new = new.replace(t, "")
        if new != word:
            out = out[:m.start()] + new + out[m.end():]
    return re.sub(r"\s+", " ", out).strip()


def ranking_query(query: str, lexical: LexicalIndex | None, text_of: Callable[[int], str]) -> str:
    """The text recall embeds and matches for ``query`` in a namespace (its BM25 ``lexical``, its
    rows' texts ``text_of``): the query without the words naming the namespace's subject; the
    query itself when it names none, or nothing else."""
    if lexical is None or lexical.n == 0:
        return query
    tokens = subject_tokens(lexical, text_of, lexical_tokens(query))
    if not tokens:
        return query
    stripped = without_words(query, tokens)
    return stripped if lexical_tokens(stripped) else query
