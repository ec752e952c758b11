"""The prompts the LLM is asked with, in one place: the recall gate's judge, extraction, the
contradiction judge. Changing what a model is asked changes this file only; the modules that ask
(``gate.py``, ``extract.py``, ``conflicts/``) validate the replies.
"""

from __future__ import annotations

from typing import Final


GATE_JUDGE_PROMPT = (
    "You decide whether an assistant should look up its long-term memory of this user before "
    "answering the user's message. Recall when the message refers to earlier conversations, the "
    "user's preferences, plans, decisions, people or things in their life, or asks for a "
    "personalised recommendation. Do not recall for general knowledge, small talk, or a new topic "
    "that needs nothing personal. Answer as JSON: {\"recall\": true|false, \"reason\": \"...\"}."
)


EXTRACT_SYSTEM_PROMPT: Final = (
    'You distil a conversation between a user and an assistant into long-term memories about the '
    'USER, for an assistant that will talk to this user again weeks later.\n'
    '\n'
    'Keep only what will still be true and useful later:\n'
    '- preferences ("Prefers tea in the mornings"), goals ("Training for the Stockholm half '
    'marathon"), decisions ("Decided to use PostgreSQL"), recurring difficulties ("Struggles with '
    'keeping a regular sleep schedule"), profile facts ("Works as a nurse in Uppsala"; names of '
    'family members and pets).\n'
    'Never keep:\n'
    '- small talk, greetings, thanks; questions the user asked; anything the assistant said that the '
    'user did not confirm;\n'
    "- anything true only today or right now (moods, today's plans, what they are eating tonight); "
    'but a lasting change IS kept ("now prefers X", "decided today to switch to Y");\n'
    '- personal identifiers: email addresses, phone numbers, card or bank numbers, national ID '
    'numbers, street addresses, IP addresses. Text like [email] or [phone] marks an identifier that '
    'was removed; never reconstruct it, and do not make memories whose only content is such an '
    'identifier.\n'
    '\n'
    'Write each memory as one short standalone statement without a subject ("Prefers ...", "Decided '
    'to ..."), in the language the user used (Swedish: "Föredrar te på morgonen"; Chinese: '
    '"决定用PostgreSQL"), at most 300 characters, understandable without the conversation (no "it", '
    '"that", "the second option").\n'
    '\n'
    'Fields:\n'
    '- text: the statement.\n'
    '- category: one of preference, goal, decision, difficulty, fact, profile, other.\n'
    '- kind: "explicit" if the user said it, "inferred" if you concluded it from what they said.\n'
    '- importance: 0 to 1 (profile and goals about 0.7-0.8, preferences and decisions about 0.6, '
    'difficulties about 0.5, other about 0.3; higher when the user is emphatic: "always", "never", '
    '"really").\n'
    '- source_turn: the index [n] of the user turn it comes from.\n'
    "- evidence: the user's own words that justify it, quoted from that turn.\n"
    '\n'
    'If nothing is worth keeping, return {"memories": []}.'
)

EXTRACT_SCHEMA_HINT: Final = (
    '{"memories": [{"text": "Prefers tea in the mornings", "category": "preference|goal|decision|difficulty|'
    'fact|profile|other", "kind": "explicit|inferred", "importance": 0.6, "source_turn": 0, '
    '"evidence": "I really prefer tea in the mornings"}]}'
)


# --------------------------------------------------------------------------- #
# LLM judge
# --------------------------------------------------------------------------- #

CONFLICT_SYSTEM_PROMPT: Final = """\
You check the long-term memory of an AI assistant for contradictions. Each memory is a short \
statement the assistant keeps about one user (in English, Swedish or Chinese). You get two memories \
that are about the same topic. Decide whether they CONTRADICT: they cannot both be true of the user \
at the same time, so one of them must be outdated or wrong.

Not contradictions: paraphrases and duplicates ("Prefers tea" / "Likes tea best"); refinements that \
add detail ("Likes coffee" / "Likes coffee with oat milk"); compatible facts on one topic ("Runs on \
Sundays" / "Training for a half marathon"); two negative statements ("Doesn't eat meat" / "Never eats \
pork"); a past fact and the present one that follows it ("Used to live in Manchester" / "Lives in \
Stockholm").

Contradictions, by kind:
- "polarity": one negates what the other affirms ("Doesn't like maths" / "Finds maths fun now").
- "value_change": the same attribute with a new value ("Lives in Paris" / "Moved to Berlin").
- "switch": explicit change words replace the old statement ("Prefers tea" / "Switched to coffee").
Use "none" when there is no contradiction.

Suggest a resolution:
- "newer_wins": a direct contradiction where the newer memory is the current truth.
- "explicit_wins": one memory is explicit (the user said it) and the other inferred (the assistant \
concluded it); the explicit one should win.
- "keep_both": both can be true in context, or there is no contradiction.
- "review": you are unsure; a person should decide.

"confidence" is how sure you are of "conflict", from 0 to 1. "evidence" is one short sentence naming \
the words or values that disagree. Refer to memories only by the ids you were given.
"""

CONFLICT_SCHEMA_HINT: Final = (
    '{"conflict": true or false, "kind": "polarity|value_change|switch|none", '
    '"evidence": "one short sentence", "confidence": a number from 0 to 1, '
    '"suggestion": "newer_wins|explicit_wins|keep_both|review"}'
)
