"""Services: the bank's operations, each one concern, on one unit of work.

``core`` is the unit of work (the store, the bank's lock, the caches, sessions, catch-up); every
other service takes the ``Core`` and the services it builds on: writing (``writer``, ``transfer``),
changing (``changes``, ``curation``), reading (``queries``, ``recall``, ``settings``), the logs
(``recall_log``, ``recall_writer``, ``feedback``, ``labels``), access (``tokens``), and the loaded
indexes (``index_cache``, ``rows``). The façade (``bank.py``) wires them together.

May import: every package below (``storage``, ``language``, ``embedding``, ``index``, ``curation``,
``evaluation``); never the façade.
"""
