"""A LangGraph ``BaseStore`` backed by a memory bank: LangGraph agents (and LangMem) keep their
long-term memory here, and get the bank's ranking, threshold, curation and dashboard.

    from memory_core.integrations.langgraph_store import MemoryBankStore

    store = MemoryBankStore("data/memory.duckdb")   # or "postgresql://...", or a served bank's URL
    store.put(("users", "alice"), "diet", {"text": "Alice is vegetarian"})
    store.search(("users", "alice"), query="what should I cook?")   # the bank's blended recall

How LangGraph's model maps onto the bank's:

- **Namespaces.** A namespace tuple is one bank namespace, its labels joined with ``"."``:
  ``("users", "alice")`` is the bank namespace ``users.alice``. LangGraph forbids a period inside
  a label, so the encoding is reversible without escaping; a bank namespace with an empty part
  (``"a..b"``, ``".x"``) is not one a tuple can name, and the store does not list it.
- **Items.** An item is one memory. Its text (what the bank embeds, matches and ranks) comes from
  the value: the fields of ``index={"fields": [...]}`` (LangGraph's paths, e.g. ``"content.text"``,
  joined by new lines), or by default the first of ``text``, ``content``, ``memory`` that holds a
  string; failing those, the whole value as JSON. The key and the whole value are kept in the
  memory's ``source`` as ``langgraph:{"key": ..., "value": ...}``, so ``get`` returns exactly what
  was put, an update of the key changes the same memory (its history and undo work as for any
  change), and a hard delete erases the value with the text. A numeric ``importance`` field in
  [0, 1] sets the memory's importance (default ``importance=``).
- **Memories written elsewhere** (the dashboard, MCP, REST) in the namespace appear as items too,
  keyed ``memory:<id>`` with the value ``{"text": ...}``; putting that key turns the memory into
  an item of this store.
- **Search** with a query runs the bank's recall in each namespace under the prefix (the active
  preset unless ``params=``, its threshold: an irrelevant memory is worse than none, so fewer than
  ``limit`` items, or none, is a correct answer), merged by score; ``SearchItem.score`` is the
  blended score. Recalls are recorded (``record=True``), so the dashboard's usage pages see them.
  With a ``filter`` every memory clearing the threshold is a candidate (the recall asks for as
  many as the namespace holds), then the filter picks. Without a query, items are listed, newest
  update first.
- **Delete** archives the memory (restorable from the dashboard) unless ``hard_delete=True``.
- **Batches** check every operation first: a bad one raises before anything is written. A batch's
  new items are added together (one embedding batch, one transaction; one add each on a served
  bank). Reads run before writes, as in LangGraph's ``InMemoryStore``; several puts of one key
  keep the last.

Finding a key reads the namespace's active memories once per batch: cost grows with the
namespace, as a namespace per user or per topic keeps it small.

Errors are LangGraph's: :class:`~langgraph.store.base.InvalidNamespaceError` for an empty tuple, a
label that is not a non-empty string without a period, a root label ``"langgraph"`` (through
``put``: LangGraph keeps it for itself and reaches it through ``batch``), a namespace
longer than the bank allows, and, through a served bank, a namespace the token may not use (such
namespaces are simply absent from ``search`` and ``list_namespaces``); ``ValueError`` for a value
that is not a JSON mapping or whose text the bank refuses.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import (
    BaseStore, GetOp, IndexConfig, InvalidNamespaceError, Item, ListNamespacesOp, MatchCondition, Op, PutOp,
    Result, SearchItem, SearchOp, get_text_at_path, tokenize_path,
)

from memory_core import MAX_TEXT, Memory, MemoryBank, PermissionDeniedError, RemoteBank, ScoringParams, ValidationError

__all__ = ["MemoryBankStore", "encode_namespace", "decode_namespace", "SEPARATOR", "SOURCE_PREFIX"]

SEPARATOR = "."  # LangGraph forbids it inside a label, so joining by it is reversible
SOURCE_PREFIX = "langgraph:"  # a memory's source that carries an item's key and value
FOREIGN_PREFIX = "memory:"  # the key of a memory written by another face
DEFAULT_TEXT_FIELDS = ("text", "content", "memory")
MAX_NAMESPACE = 256  # the bank's limit on a namespace's length
MAX_K = 1000  # the most a recall returns (ScoringParams.k)

Bank = MemoryBank | RemoteBank


def encode_namespace(namespace: tuple[str, ...]) -> str:
    """The bank namespace of a LangGraph namespace tuple; InvalidNamespaceError when it has none."""
    if not isinstance(namespace, tuple) or not namespace:
        raise InvalidNamespaceError(f"Namespace must be a non-empty tuple of strings, got {namespace!r}.")
    _check_labels(namespace)
    joined = SEPARATOR.join(namespace)
    if not joined.strip():
        raise InvalidNamespaceError(f"Namespace {namespace!r} has no visible characters.")
    if len(joined) > MAX_NAMESPACE:
        raise InvalidNamespaceError(
            f"Namespace {namespace!r} is {len(joined)} characters joined; the bank allows {MAX_NAMESPACE}.")
    return joined


def _storable(namespace: tuple[str, ...]) -> str | None:
    """The bank namespace of a tuple whose labels passed, or None when it cannot hold items."""
    try:
        return encode_namespace(namespace)
    except InvalidNamespaceError:
        return None


def decode_namespace(name: str) -> tuple[str, ...] | None:
    """The tuple a bank namespace stands for, or None when no tuple encodes to it."""
    parts = tuple(name.split(SEPARATOR))
    return parts if all(parts) else None


def _check_labels(path: Any, *, wildcard: bool = False) -> None:
    """LangGraph's rules for labels (its own check, with the type of the path checked too)."""
    if not isinstance(path, tuple):
        raise InvalidNamespaceError(f"Namespace must be a tuple of strings, got {type(path).__name__}.")
    for label in path:
        if not isinstance(label, str):
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {path}: labels must be strings, not {type(label).__name__}.")
        if not label:
            raise InvalidNamespaceError(f"Namespace labels cannot be empty strings. Got {path}.")
        if SEPARATOR in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {path}: labels cannot contain periods or NUL bytes.")


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path) if condition.match_type == "prefix" else zip(reversed(namespace), reversed(path))
    return all(p == "*" or k == p for k, p in pairs)


def _compare(item_value: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics (as its InMemoryStore): equality, nested dicts, $eq/$ne/$gt/$gte/$lt/$lte."""
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(item_value, op, v) for op, v in wanted.items())
        return isinstance(item_value, dict) and all(_compare(item_value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (isinstance(item_value, (list, tuple)) and len(item_value) == len(wanted)
                and all(_compare(a, b) for a, b in zip(item_value, wanted)))
    return item_value == wanted


def _operator(value: Any, op: str, wanted: Any) -> bool:
    if op == "$eq":
        return value == wanted
    if op == "$ne":
        return value != wanted
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"Unsupported filter operator: {op}")
    try:
        a, b = float(value), float(wanted)
    except (TypeError, ValueError):
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def _check_filter(filter: Any) -> None:
    if filter is None:
        return
    if not isinstance(filter, Mapping):
        raise ValueError(f"filter must be a dict of value fields, got {type(filter).__name__}")

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            for k, v in node.items():
                if isinstance(k, str) and k.startswith("$") and k not in ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte"):
                    raise ValueError(f"Unsupported filter operator: {k}")
                walk(v)

    walk(filter)


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def _count(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be a whole number >= {low}, got {value!r}")
    return value


class MemoryBankStore(BaseStore):
    """LangGraph's store interface over a :class:`MemoryBank` (a file, ``postgresql://``, or a
    served bank by URL and token). See the module's docstring for the mapping."""

    def __init__(self, bank: Bank | str | os.PathLike, *, token: str | None = None,
                 index: IndexConfig | None = None, params: ScoringParams | str | None = None,
                 importance: float = 0.5, hard_delete: bool = False, record: bool = True,
                 detect_conflicts: bool = True, now: Callable[[], datetime] | None = None,
                 **open_args: Any) -> None:
        """``bank`` is an open bank (left open by :meth:`close`) or anything ``MemoryBank.open``
        takes (opened here with ``token`` and ``open_args``, closed by :meth:`close`). ``index``
        is LangGraph's index config: only its ``fields`` matter (the bank embeds with its own
        model). ``params`` overrides the bank's active preset for recall; ``now`` is the clock
        for recall and new items (tests pass a fixed one)."""
        if isinstance(bank, (str, os.PathLike)):
            self.bank: Bank = MemoryBank.open(bank, token=token, **open_args)
            self.owns_bank = True
        else:
            self.bank = bank
            self.owns_bank = False
        self.index_config = dict(index) if index else None
        fields = (index or {}).get("fields")
        self.text_paths = None if not fields else [(f, f if f == "$" else tokenize_path(f)) for f in fields]
        self.params = params
        self.importance = float(importance)
        self.hard_delete = hard_delete
        self.record = record
        self.detect_conflicts = detect_conflicts
        self.now = now

    # -- lifetime ------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the bank when this store opened it."""
        if self.owns_bank:
            self.bank.close()

    def __enter__(self) -> "MemoryBankStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- LangGraph's two entry points ----------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations: all are checked first, reads run before writes."""
        ops = list(ops)
        puts = self.check_ops(ops)
        run = _Batch(self)
        for namespace, _ in puts:  # a namespace the token may not use fails here, before any write
            run.keys(namespace)
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                name = _storable(op.namespace)
                results.append(None if name is None else run.get(name, str(op.key)))
            elif isinstance(op, SearchOp):
                results.append(run.search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(run.list_namespaces(op))
            else:
                results.append(None)
        for (namespace, key), (op, row) in puts.items():
            run.write(namespace, key, op, row)
        run.add_new()
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` on a worker thread (the bank is thread-safe), so the event loop runs on."""
        ops = list(ops)
        return await asyncio.get_running_loop().run_in_executor(None, self.batch, ops)

    # -- checking ------------------------------------------------------------------------------

    def check_ops(self, ops: list[Op]) -> dict[tuple[str, str], tuple[PutOp, dict[str, Any] | None]]:
        """Every operation checked before any runs; the puts to apply, the last per key."""
        puts: dict[tuple[str, str], tuple[PutOp, dict[str, Any] | None]] = {}
        for op in ops:
            if isinstance(op, GetOp):
                _check_labels(op.namespace)  # a namespace nothing can be put in (``()``) holds nothing: None
            elif isinstance(op, SearchOp):
                _check_labels(op.namespace_prefix)
                _count("limit", op.limit, 0)
                _count("offset", op.offset, 0)
                _check_filter(op.filter)
                if op.query is not None and not isinstance(op.query, str):
                    raise ValueError(f"query must be a string, got {type(op.query).__name__}")
            elif isinstance(op, ListNamespacesOp):
                for condition in op.match_conditions or ():
                    if condition.match_type not in ("prefix", "suffix"):
                        raise ValueError(f"Unsupported match type: {condition.match_type}")
                    _check_labels(tuple(condition.path))
                if op.max_depth is not None:
                    _count("max_depth", op.max_depth, 1)
                _count("limit", op.limit, 0)
                _count("offset", op.offset, 0)
            elif isinstance(op, PutOp):
                if op.value is None:  # a delete, as LangGraph's: of nothing, where nothing can be stored
                    _check_labels(op.namespace)
                    if _storable(op.namespace) is None:
                        continue
                namespace = encode_namespace(op.namespace)  # (put() refuses the root "langgraph"; batch lets it in)
                key = op.key
                if not isinstance(key, str) or not key:
                    raise ValueError(f"key must be a non-empty string, got {key!r}")
                if getattr(op, "ttl", None) is not None:
                    raise NotImplementedError("TTL is not supported by MemoryBankStore; the bank's maintenance "
                                              "expires old unimportant memories instead")
                row = None if op.value is None else self.row_of(op.value, op.index, key)
                puts.pop((namespace, key), None)  # the last put of a key wins, in the order given
                puts[(namespace, key)] = (op, row)
            else:
                raise ValueError(f"Unknown operation type: {type(op).__name__}")
        return puts

    def row_of(self, value: Any, index: Any, key: str) -> dict[str, Any]:
        """What a put writes: text, source (key and value) and importance, checked."""
        if not isinstance(value, Mapping):
            raise ValueError(f"value must be a dict (a JSON object), got {type(value).__name__}")
        value = dict(value)
        try:
            payload = json.dumps({"key": key, "value": value}, ensure_ascii=False, allow_nan=False,
                                 separators=(",", ":"))
        except (TypeError, ValueError) as e:
            raise ValueError(f"value must be JSON-serializable: {e}") from e
        text = self.text_of(value, index)
        if not text.strip():
            text = json.dumps(value, ensure_ascii=False, sort_keys=True)
        # The bank's own rules for a text, checked here so that a batch fails before its first write.
        if len(text) > MAX_TEXT:
            raise ValueError(f"the item {key!r} has {len(text):,} characters of text; the bank takes {MAX_TEXT:,}")
        if "\x00" in text:
            raise ValueError(f"the item {key!r} has a NUL character in its text")
        importance = value.get("importance", self.importance)
        if isinstance(importance, bool) or not isinstance(importance, (int, float)) or not 0 <= importance <= 1:
            importance = self.importance
        return {"text": text, "source": SOURCE_PREFIX + payload, "importance": float(importance)}

    def text_of(self, value: dict[str, Any], index: Any) -> str:
        if index is False:
            return json.dumps(value, ensure_ascii=False, sort_keys=True)
        if index is not None:
            if not isinstance(index, (list, tuple)) or not all(isinstance(f, str) for f in index):
                raise ValueError(f"index must be False, None or a list of field paths, got {index!r}")
            paths = [(f, f if f == "$" else tokenize_path(f)) for f in index]
        else:
            paths = self.text_paths
        if paths is None:
            for name in DEFAULT_TEXT_FIELDS:
                found = value.get(name)
                if isinstance(found, str) and found.strip():
                    return found
            return json.dumps(value, ensure_ascii=False, sort_keys=True)
        return "\n".join(t for _, path in paths for t in get_text_at_path(value, path) if t.strip())

    # -- memories as items ---------------------------------------------------------------------

    @staticmethod
    def key_and_value(memory: Memory) -> tuple[str, dict[str, Any]]:
        """The key and value a memory stands for in this store."""
        source = memory.source or ""
        if source.startswith(SOURCE_PREFIX):
            try:
                payload = json.loads(source[len(SOURCE_PREFIX):])
                if isinstance(payload, dict) and isinstance(payload.get("key"), str) \
                        and isinstance(payload.get("value"), dict):
                    return payload["key"], payload["value"]
            except ValueError:
                pass
        return f"{FOREIGN_PREFIX}{memory.id}", {"text": memory.text}

    def item(self, memory: Memory, score: float | None = None, *, search: bool = False) -> Item:
        """The LangGraph item (a SearchItem when ``search``) of a memory."""
        key, value = self.key_and_value(memory)
        namespace = decode_namespace(memory.namespace) or (memory.namespace,)
        created, updated = _aware(memory.created_at), _aware(memory.updated_at)
        if search:
            return SearchItem(namespace=namespace, key=key, value=value, created_at=created, updated_at=updated,
                              score=score)
        return Item(value=value, key=key, namespace=namespace, created_at=created, updated_at=updated)


class _Batch:
    """One batch's work: the namespaces' items read once, then reads, then writes."""

    def __init__(self, store: MemoryBankStore):
        self.store = store
        self.bank = store.bank
        self.by_key: dict[str, dict[str, Memory]] = {}
        self.active: dict[str, int] | None = None
        self.new: list[dict[str, Any]] = []  # rows of the batch's new items, added together at the end

    def now(self) -> datetime | None:
        return self.store.now() if self.store.now is not None else None

    def keys(self, namespace: str) -> dict[str, Memory]:
        """The namespace's active memories by key (newest wins, should two share one)."""
        if namespace not in self.by_key:
            try:
                memories = self.bank.memories(namespace, status="active", limit=None)
            except PermissionDeniedError as e:  # a served bank's token may not use it
                raise InvalidNamespaceError(f"Namespace {namespace!r} is not one this store may use: {e}") from e
            found: dict[str, Memory] = {}
            for m in sorted(memories, key=lambda m: (m.updated_at, m.id)):
                found[self.store.key_and_value(m)[0]] = m
            self.by_key[namespace] = found
        return self.by_key[namespace]

    def counts(self) -> dict[str, int]:
        """Bank namespaces a tuple names, with their active memories (only those that hold some)."""
        if self.active is None:
            self.active = {name: n for name, n in self.bank.namespaces() if n and decode_namespace(name)}
        return self.active

    def get(self, namespace: str, key: str) -> Item | None:
        memory = self.keys(namespace).get(key)
        return None if memory is None else self.store.item(memory)

    def under(self, prefix: tuple[str, ...]) -> list[str]:
        n = len(prefix)
        return sorted(name for name in self.counts() if decode_namespace(name)[:n] == prefix)  # type: ignore[index]

    def search(self, op: SearchOp) -> list[SearchItem]:
        store, wanted = self.store, op.offset + op.limit
        if op.limit == 0:
            return []
        found: list[tuple[float, Memory]] = []
        for name in self.under(tuple(op.namespace_prefix)):
            if op.query:
                k = min(MAX_K, self.counts()[name] if op.filter else wanted)
                hits = self.bank.recall(op.query, namespace=name, params=store.params, now=self.now(),
                                        record=store.record, k=max(1, k))
                found.extend((h.score, h.memory) for h in hits)
            else:
                found.extend((0.0, m) for m in self.bank.memories(name, status="active", limit=None))
        if op.filter:
            found = [(s, m) for s, m in found
                     if all(_compare(store.key_and_value(m)[1].get(k), v) for k, v in op.filter.items())]
        if op.query:
            found.sort(key=lambda p: (-p[0], p[1].id))
        else:
            found.sort(key=lambda p: (p[1].updated_at, p[1].id), reverse=True)
        return [store.item(m, s if op.query else None, search=True)  # type: ignore[misc]
                for s, m in found[op.offset:wanted]]

    def list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        spaces = [decode_namespace(name) for name in self.counts()]
        spaces = [s for s in spaces if s and all(_matches(c, s) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            spaces = [s[:op.max_depth] for s in spaces]
        return sorted(set(spaces))[op.offset:op.offset + op.limit]  # type: ignore[type-var]

    def write(self, namespace: str, key: str, op: PutOp, row: dict[str, Any] | None) -> None:
        store = self.store
        memory = self.keys(namespace).get(key)
        if row is None:
            if memory is not None:
                self.bank.forget(memory.id, hard=store.hard_delete, reason=f"langgraph delete of {key!r}")
            return
        if memory is None:
            self.new.append({"text": row["text"], "namespace": namespace, "importance": row["importance"],
                             "source": row["source"], "created_at": self.now()})
            return
        changes = {field: row[field] for field in ("text", "source", "importance")
                   if getattr(memory, field) != row[field]}
        if changes:
            self.bank.update(memory.id, **changes)

    def add_new(self) -> None:
        """The batch's new items: together where the bank can (one embedding batch, one transaction,
        each checked for contradictions as an add is), else one add each (a served bank)."""
        if not self.new:
            return
        detect = self.store.detect_conflicts
        if isinstance(self.bank, MemoryBank):
            errors = [r for r in self.bank.add_each(self.new, detect_conflicts=detect) if not isinstance(r, int)]
        else:
            errors = []
            for row in self.new:
                try:
                    self.bank.add(row.pop("text"), detect_conflicts=detect, **row)
                except ValidationError as e:
                    errors.append(e)
        if errors:
            raise ValueError(f"the bank refused {len(errors)} item(s): {errors[0]}") from errors[0]
