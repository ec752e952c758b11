"""Adapters that put a memory bank behind the interfaces agent frameworks already use.

- :mod:`memory_core.integrations.langgraph_store`: ``MemoryBankStore``, a LangGraph ``BaseStore``.
- :mod:`memory_core.integrations.langchain_retriever`: ``MemoryBankRetriever``, a LangChain
  ``BaseRetriever``.

They need the optional extra (``pip install 'memory-console[langgraph]'``); importing
``memory_core`` never imports them, nor LangGraph. Like the other faces they use the public
package only (tests/test_public_api.py).
"""
