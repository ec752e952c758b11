"""The index and ranking: a namespace's dense (FAISS) and lexical (BM25) indexes, and how recall ranks.

``scoring`` is the blended score, the presets and the tier rule (scoring lives there only); ``gate``
decides whether a turn should recall at all; the rest is the index of one namespace's live
memories, derived from the store. May import: ``errors``, ``models``, ``storage`` (times),
``language`` and ``embedding``; nothing above.

A :class:`NamespaceIndex` keeps, for every active memory of a namespace, its vector, its
tokens and the fields scoring needs, in parallel arrays, so recall scores *every* live memory
with a few vectorized operations: the result is exact by construction.

Indexes are caches. They are saved next to the bank (``<bank>.index/``: per namespace the
vectors as ``.npy``, the BM25 arrays and rows' fields, the side structures pruned recall built,
and a small JSON header) and reconciled with the store whenever they are loaded: rows changed
since the saved change sequence are fetched again, rows no longer live are dropped, and anything
that does not add up (a missing or truncated file, another model, another dimension) triggers a
rebuild from the store; side structures not written by the same save as the vectors are built
again. Nothing is lost when they are deleted.

Memory: a large namespace's vectors live in an unlinked, memory-mapped scratch file (the process
holds only the pages it reads), or, loaded from the cache and unchanged since, in the saved file
mapped read-only; its BM25 postings and per-row fields in compact arrays (the footprint at a
million memories: BENCHMARKS.md, "Memory footprint at 1,000,000 memories").
"""

from .formats import FORMAT_VERSION, HASH_DTYPE, namespace_key
from .infos import RowInfos
from .lexical import LexicalIndex, memory_tokens
from .namespace import NamespaceIndex, Ranking
from .pruning import _Ivf, _Priors, _Projection, _Sq8  # noqa: F401 (tests count their builds)

__all__ = ["FORMAT_VERSION", "HASH_DTYPE", "LexicalIndex", "NamespaceIndex", "Ranking", "RowInfos", "memory_tokens",
           "namespace_key"]
