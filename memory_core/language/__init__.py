"""Language: what the rest of the package knows about text and the words in it.

The one tokenizer and language detection (``text``), word lists (``words``), the periods of time a
query names (``periods``), whether a memory lasts or passes (``durability``), PII redaction (``redact``), the rule tables per language (``rules/``,
data only), and the OpenAI-compatible LLM client with every prompt it is asked (``llm``,
``prompts``).

May import: ``errors``, ``models`` and ``storage`` (times, the cache folder); nothing above.
"""
