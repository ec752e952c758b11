"""Rule tables: the word lists and patterns, per language, that the rule engines (``gate.py``,
``extract.py``, ``conflicts/``) compile and run. Data only: adding a language or a phrase touches
these files, not the logic.
"""
