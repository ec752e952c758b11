"""The prompts the LLM is asked with, in one place: the recall gate's judge, extraction, the
contradiction judge. Changing what a model is asked changes this file only; the modules that ask
(``gate.py``, ``extract.py``, ``conflicts/``) validate the replies.
"""

from __future__ import annotations


GATE_JUDGE_PROMPT = (
    "You decide whether an assistant should look up its long-term memory of this user before "
    "answering the user's message. Recall when the message refers to earlier conversations, the "
    "user's preferences, plans, decisions, people or things in their life, or asks for a "
    "personalised recommendation. Do not recall for general knowledge, small talk, or a new topic "
    "that needs nothing personal. Answer as JSON: {\"recall\": true|false, \"reason\": \"...\"}."
)
