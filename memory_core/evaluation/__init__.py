"""Evaluation: measuring what memory does for an agent, read-only.

``metrics`` turns the logs into retrieval, usage and feedback tables, ``tuning`` tunes the weights
over labeled sets and replays logged recalls, ``evaluate`` runs ablations (an LLM answers with and
without memory), ``usage`` decides which returned memories an answer used.

May import: ``errors``, ``models``, ``storage`` (times), ``language``, ``embedding`` and ``index``;
never ``services`` or the façade.
"""
