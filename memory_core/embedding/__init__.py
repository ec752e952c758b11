"""Embedding: turning texts into vectors, and the few products of vectors that per-request paths take.

``embedder`` loads a model once per process and holds ``MODEL_DEFAULTS`` (what depends on a model's
cosine scale); ``e5`` runs multilingual-e5-small, the default, ``onnx`` the bundled MiniLM on ONNX
Runtime; ``gather`` lets concurrent callers share model calls; ``vectors`` computes small inner
products on the calling thread; ``model_data/`` ships the e5 directions.

May import: ``errors``, ``models``, ``storage`` (the cache folder) and ``language``; nothing above.
"""
