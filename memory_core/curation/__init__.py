"""Curation engines: finding what to supersede, merge, expire and remember, as plain data.

``conflicts/`` finds and judges contradictions, ``merge`` plans merges of near-duplicates,
``maintenance`` plans a maintenance run from reads only, ``extract`` distils a conversation into
memories. None of them writes: the curation service (``services.curation``) records what they
find, and the façade combines the steps.

May import: ``errors``, ``models``, ``storage`` (times), ``language``, ``embedding`` and ``index``;
never ``services`` or the façade.
"""
