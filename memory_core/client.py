"""RemoteBank: a bank served by ``memctl serve``, with the façade's API, over HTTP.

    from memory_core import MemoryBank

    bank = MemoryBank.open("http://127.0.0.1:8765", token="mct_...")   # a RemoteBank
    mid = bank.add("Prefers vegetarian food", namespace="alice", importance=0.8)
    hits = bank.recall("what should I cook tonight?", namespace="alice")
    bank.feedback(bank.last_retrieval_id, used_ids=[hits[0].memory.id])

``add``, ``add_many``, ``recall``, ``get``, ``update``, ``forget``, ``restore``, ``history``,
``feedback``, ``conflicts``, ``resolve_conflict`` and ``dismiss_conflicts`` take the arguments of
:class:`~memory_core.MemoryBank` and return the same records (:class:`Memory`, :class:`Hit`,
:class:`Event`, :class:`Feedback`, :class:`Conflict`), read back with their ``from_dict``; errors
are the classes the server names (``{"error": {"type", "message"}}``), so ``except NotFoundError``
works on either. Where the two differ:

- ``namespace=None`` (the default of the writes and reads here) lets the server choose: the token's
  only namespace. A token of several namespaces, an admin token or a server without auth must be
  told which (``ValidationError`` otherwise), where a local bank defaults to ``"default"``.
- An id of a namespace the token may not use is ``NotFoundError``, exactly like an unknown id.
- ``add_many`` sends its rows in one request (one transaction), or ``batch_size`` rows per request,
  each all or nothing; rows cannot carry an ``id``, so ``skip_existing`` is refused.
- ``feedback`` is scoped by the token; ``namespaces=`` (what a server passes for its caller) is refused.
- Errors of the connection: a refused connection is retried ``retries`` times (nothing was sent),
  then raises :class:`~memory_core.ServerUnavailableError`, as does a timeout or a dropped
  connection. A 503 (the bank file is locked, or the server is at its concurrency limit) is
  retried ``retries`` times after its ``Retry-After``, then raises :class:`~memory_core.BankLockedError`
  (``ServerUnavailableError``, its subclass, when the server named no error). Both are
  ``BankLockedError``: try again later, as with a busy bank file.

Read-your-writes behind a load balancer: every answer of a server carries ``X-Memory-Seq``, the
change number the server had caught up with (after a write: at least the write's own). The client
keeps the highest it has seen (:attr:`last_seq`) and, with ``read_your_writes=True`` (the
default), sends it as ``min_seq`` with every read (recall, get, memories, count, history,
conflicts, namespaces), so whichever server answers first catches up with everything this client
wrote or saw: an ``add`` on one server is in the next ``recall`` on another. A server that is
already caught up answers at once; one that is behind waits (up to 5 s; milliseconds in
practice). ``read_your_writes=False`` reads whatever the answering server has (another server's
write then shows up within its notification delay (see BENCHMARKS.md, "Figures behind the code").

One :class:`httpx.Client` (kept-alive connections) serves every call; a RemoteBank may be shared by
threads, and :attr:`last_retrieval_id`, like the local bank's, is per thread. Nothing is sent until
the first call (:meth:`health` checks the server).
"""

from __future__ import annotations

import json
import numbers
import re
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable

from . import errors
from .errors import (
    AuthenticationError, BankLockedError, MemoryCoreError, ModelMismatchError, NotFoundError, PayloadTooLargeError,
    PermissionDeniedError, ServerUnavailableError, StateError, ValidationError,
)
from .models import Conflict, Event, Feedback, Hit, ImportReport, Memory, check_id, check_importance, parse_time

if TYPE_CHECKING:  # imported where used: a client (memctl over its warm helper) loads no model or index code
    from .index.scoring import ScoringParams

__all__ = ["RemoteBank", "NotServedError", "ERRORS", "DEFAULT_TIMEOUT", "DEFAULT_RETRIES", "MAX_RETRY_WAIT", "is_url"]

DEFAULT_TIMEOUT = 30.0  # seconds for one request (a recall that loads a large namespace takes a while)
DEFAULT_RETRIES = 3  # extra tries after a 503 or a refused connection
MAX_RETRY_WAIT = 10.0  # seconds: the longest Retry-After honoured between tries
PAGE = 10_000  # memories per GET /v1/memories (the server's MAX_PAGE)
MAX_K = 1_000  # the most memories one recall returns (ScoringParams.k, the server's MAX_K)

# The error classes a server may name, by name: memory_core's errors (every one memory_core exports).
ERRORS: dict[str, type[MemoryCoreError]] = {
    name: cls for name, cls in vars(errors).items() if isinstance(cls, type) and issubclass(cls, MemoryCoreError)}
# The class for an error response that names none of them (a proxy's page, an older server).
_BY_STATUS: dict[int, type[MemoryCoreError]] = {400: ValidationError, 401: AuthenticationError,
                                                403: PermissionDeniedError, 404: NotFoundError,
                                                409: StateError, 413: PayloadTooLargeError, 422: ValidationError}
_ROW = re.compile(r"^row (\d+): ")


class NotServedError(StateError, AttributeError):
    """A MemoryBank operation the server's REST API does not offer (an AttributeError too, so
    ``hasattr`` still answers False)."""


def is_url(path: Any) -> bool:
    """Whether ``MemoryBank.open`` was given a server's address rather than a bank file."""
    return isinstance(path, str) and path.lower().startswith(("http://", "https://"))


class RemoteBank:
    """A bank served by ``memctl serve`` at ``url``, used through its REST API with ``token``.

    ``timeout`` bounds each request (seconds); ``retries`` is how many more times a 503 or a
    refused connection is tried; ``model``, when given, must be the served bank's model
    (``ModelMismatchError`` otherwise, as :meth:`MemoryBank.open` does); ``read_your_writes``
    sends the highest change number seen with every read (see the module's docstring); ``uds``
    is the path of a unix socket the server listens on (``url`` then only names it).
    """

    def __init__(self, url: str, token: str | None = None, *, timeout: float = DEFAULT_TIMEOUT,
                 retries: int = DEFAULT_RETRIES, model: str | None = None, read_your_writes: bool = True,
                 uds: str | None = None):
        import httpx

        if not is_url(url):
            raise ValidationError(f"a served bank's address starts with http:// or https://, got {url!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValidationError(f"timeout is a number of seconds above 0, got {timeout!r}")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValidationError(f"retries is a whole number >= 0, got {retries!r}")
        if not isinstance(read_your_writes, bool):
            raise ValidationError(f"read_your_writes is true or false, got {read_your_writes!r}")
        headers = {"Accept": "application/json"}
        if token is not None:
            if not isinstance(token, str) or not token.strip():
                raise ValidationError("token must be a non-empty string (memctl token create prints one)")
            headers["Authorization"] = f"Bearer {token.strip()}"
        self.url = url.rstrip("/")
        self.timeout = float(timeout)
        self.retries = retries
        transport = None if uds is None else httpx.HTTPTransport(uds=uds)  # a server on a unix socket
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=self.timeout, transport=transport)
        self._latest = threading.local()
        self.read_your_writes = read_your_writes
        self._seq: int | None = None  # the highest X-Memory-Seq any answer carried
        self._seq_guard = threading.Lock()
        self._model: str | None = None
        self._closed = False
        if model is not None:
            try:
                from .embedding.embedder import canonical_model_name

                if canonical_model_name(model) != self.model:
                    raise ModelMismatchError(f"the bank served at {self.url} uses {self.model!r}, not {model!r}")
            except BaseException:
                self.close()
                raise

    # -- opening and closing -------------------------------------------------------------------

    def close(self) -> None:
        """Close the connections. Safe to call twice; the server keeps running."""
        self._closed = True
        self._http.close()

    def flush(self) -> int:
        """Nothing to write: the server journals and writes recorded recalls itself. Returns 0."""
        return 0

    def __enter__(self) -> "RemoteBank":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RemoteBank({self.url!r})"

    # -- what the bank is ----------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def __getattr__(self, name: str) -> Any:
        """A bank operation the REST API does not serve says so and where to run it, instead of a
        bare AttributeError (memctl shows it as one line)."""
        if name.startswith("_"):
            raise AttributeError(name)
        raise NotServedError(f"{name} is not served over {self.url}'s REST API: run it where the bank is "
                             "(memctl --bank FILE_OR_POSTGRESQL_URL ...)")

    def health(self) -> dict[str, Any]:
        """The server's ``GET /v1/health``: status, version, the bank's model, whether auth is on."""
        return self._request("GET", "/v1/health")

    @property
    def model(self) -> str:
        """The embedding model of the served bank's vectors (asked once)."""
        if self._model is None:
            self._model = self.health()["model"]
        return self._model

    @property
    def last_retrieval_id(self) -> int | None:
        """The id of this thread's latest recorded recall through this client (what :meth:`feedback` takes)."""
        return getattr(self._latest, "rid", None)

    @property
    def last_seq(self) -> int | None:
        """The highest change number the server's answers carried (``X-Memory-Seq``), or None
        before the first answer: what a read sends as ``min_seq`` with ``read_your_writes``."""
        return self._seq

    def _saw(self, response: Any) -> None:
        value = response.headers.get("x-memory-seq")
        if value is None or not value.isdigit():
            return
        seq = int(value)
        with self._seq_guard:
            if self._seq is None or seq > self._seq:
                self._seq = seq

    # -- writing -------------------------------------------------------------------------------

    def add(self, text: str, namespace: str | None = None, importance: float = 0.5, kind: str = "explicit",
            category: str = "other", created_at: Any = None, source: str | None = None, embedding: Any = None,
            pinned: bool = False, detect_conflicts: bool = True, context: str | None = None,
            dedupe: bool = True, durability: str | None = None) -> int:
        """Store one memory and return its id (see :meth:`MemoryBank.add`)."""
        importance = check_importance(importance)  # the library's own message, not the route schema's
        body = {"text": text, "namespace": namespace, "importance": importance, "kind": kind, "category": category,
                "created_at": _time(created_at, "created_at"), "source": source, "embedding": _vector(embedding),
                "pinned": pinned, "detect_conflicts": detect_conflicts, "context": context, "dedupe": dedupe}
        if durability is not None:  # left out otherwise: a server of before durabilities takes the body as it was
            body["durability"] = durability
        return self._request("POST", "/v1/memories", body)["id"]

    def add_many(self, rows: Iterable[dict[str, Any]], *, progress: Callable[[int], None] | None = None,
                 batch_size: int | None = None, skip_existing: bool = False,
                 report: ImportReport | None = None, dedupe: bool = True) -> list[int]:
        """Store many memories; returns their ids in order. One request (one transaction, all or
        nothing) for all rows, or one per ``batch_size`` rows; ``progress`` hears of each.
        ``dedupe``: see :meth:`MemoryBank.add_many`."""
        if isinstance(rows, (str, bytes, dict)) or not isinstance(rows, Iterable):
            raise ValidationError("add_many takes a list of mappings (one per memory)")
        if skip_existing:
            raise ValidationError("skip_existing applies to rows that carry their ids, which a served bank "
                                  "does not take; import such a file with memctl import on the server's machine")
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                       or batch_size < 1):
            raise ValidationError("batch_size must be a whole number >= 1")
        rows = [_row(r) for r in rows]
        size = batch_size or max(len(rows), 1)
        ids: list[int] = []
        for start in range(0, len(rows), size):
            chunk = rows[start:start + size]
            try:
                ids.extend(self._request("POST", "/v1/memories/batch", {"rows": chunk, "dedupe": dedupe})["ids"])
            except (ValidationError, ModelMismatchError) as exc:
                if start == 0 or not _ROW.match(str(exc)):
                    raise
                raise type(exc)(_ROW.sub(lambda m: f"row {int(m.group(1)) + start}: ", str(exc))) from None
            if progress is not None:
                progress(len(chunk))
        if report is not None:
            report.added += len(ids)
            report.ids.extend(ids)
        return ids

    # -- reading -------------------------------------------------------------------------------

    def get(self, memory_id: int) -> Memory:
        """The memory with this id (a hard-deleted one comes back with ``text=None``)."""
        return Memory.from_dict(self._request("GET", f"/v1/memories/{check_id(memory_id)}"))

    def memories(self, namespace: str | None = None, status: str | None = "active", *, limit: int | None = 100,
                 offset: int = 0) -> list[Memory]:
        """Memories of a namespace, newest first; ``status=None`` for every status, ``limit=None`` for all."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise ValidationError(f"limit must be a whole number >= 0 or None, got {limit!r}")
        out: list[Memory] = []
        while limit is None or len(out) < limit:
            page = PAGE if limit is None else min(PAGE, limit - len(out))
            got = self._list(namespace, status, page, offset + len(out))["memories"]
            out.extend(Memory.from_dict(m) for m in got)
            if len(got) < page:
                break
        return out

    def count(self, namespace: str | None = None, status: str | None = "active") -> int:
        """How many memories of a namespace have this status (``None``: any)."""
        return self._list(namespace, status, 1, 0)["total"]

    def namespaces(self) -> list[tuple[str, int]]:
        """The namespaces the token may use that hold memories, with their active counts."""
        return [(n["namespace"], n["active"]) for n in self._request("GET", "/v1/namespaces")["namespaces"]]

    def history(self, memory_id: int) -> list[Event]:
        """Every event of one memory, oldest first."""
        events = self._request("GET", f"/v1/memories/{check_id(memory_id)}/history")["events"]
        return [Event.from_dict(e) for e in events]

    # -- changing ------------------------------------------------------------------------------

    def update(self, memory_id: int, **changes: Any) -> Memory:
        """Change fields of a memory (a new text is embedded again); returns the updated memory."""
        if "created_at" in changes:
            changes["created_at"] = _time(changes["created_at"], "created_at")
        return Memory.from_dict(self._request("PATCH", f"/v1/memories/{check_id(memory_id)}", changes))

    def forget(self, memory_id: int, hard: bool = False, reason: str | None = None) -> None:
        """Archive a memory (restorable) or, with ``hard=True``, erase its text for good."""
        params = {"hard": "true" if hard else "false"}
        if reason is not None:
            params["reason"] = reason
        self._request("DELETE", f"/v1/memories/{check_id(memory_id)}", params=params)

    def restore(self, memory_id: int) -> Memory:
        """Bring an archived (soft-deleted) memory back into recall."""
        return Memory.from_dict(self._request("POST", f"/v1/memories/{check_id(memory_id)}/restore"))

    # -- recall --------------------------------------------------------------------------------

    def recall(self, query: str, namespace: str | None = None, params: ScoringParams | str | None = None,
               now: Any = None, record: bool = True, gate: bool = False, k: int | None = None,
               threshold: float | None = None) -> list[Hit]:
        """The top k memories of ``namespace`` for ``query`` that clear the threshold, possibly none."""
        if k is not None:  # ScoringParams' own messages, not the route schema's
            if isinstance(k, bool) or not isinstance(k, int):
                raise ValidationError(f"k must be a whole number, got {k!r}")
            if not 1 <= k <= MAX_K:
                raise ValidationError(f"k must be between 1 and {MAX_K}, got {k}")
        body: dict[str, Any] = {"query": query, "namespace": namespace, "now": _time(now, "now"), "record": record,
                                "gate": gate, "k": k, "threshold": threshold}
        if self.read_your_writes and self._seq is not None:
            body["min_seq"] = self._seq
        if isinstance(params, str):
            body["preset"] = params
        elif params is not None:
            from .index.scoring import ScoringParams

            if not isinstance(params, ScoringParams):
                raise ValidationError(f"params must be a ScoringParams, a preset name or None, got {type(params).__name__}")
            body["params"] = params.to_dict()
        answer = self._request("POST", "/v1/recall", body)
        if answer.get("retrieval_id") is not None:
            self._latest.rid = answer["retrieval_id"]
        return [Hit.from_dict(h) for h in answer["hits"]]

    def feedback(self, retrieval_id: int, answer: str | None = None, used_ids: Iterable[int] | None = None,
                 helpful: bool | None = None, *, at: Any = None, namespaces: Iterable[str] | None = None) -> Feedback:
        """Record what happened after a recall: the answer, the memories it used, whether it helped."""
        if namespaces is not None:
            raise ValidationError("a served bank scopes feedback by the token's namespaces; leave namespaces out")
        if used_ids is not None and not isinstance(used_ids, (str, bytes)) and isinstance(used_ids, Iterable):
            used_ids = [_whole(i) for i in used_ids]
        body = {"retrieval_id": _whole(retrieval_id), "answer": answer, "used_ids": used_ids, "helpful": helpful,
                "at": _time(at, "at")}
        return Feedback.from_dict(self._request("POST", "/v1/feedback", body))

    # -- curation ------------------------------------------------------------------------------

    def conflicts(self, namespace: str | None = None, status: str | None = "open",
                  memory_id: int | None = None) -> list[Conflict]:
        """Recorded contradictions of a namespace, newest first; ``status=None`` for every status."""
        params: dict[str, Any] = {"status": "any" if status is None else status}
        if namespace is not None:
            params["namespace"] = namespace
        if memory_id is not None:
            params["memory_id"] = check_id(memory_id)
        return [Conflict.from_dict(c) for c in self._request("GET", "/v1/conflicts", params=params)["conflicts"]]

    def resolve_conflict(self, conflict_id: int, rule: str, *, memory_id: int | None = None,
                         text: str | None = None) -> Conflict:
        """Resolve a conflict by a rule (see RESOLUTIONS); one undoable operation."""
        path = f"/v1/conflicts/{check_id(conflict_id, 'a conflict id')}/resolve"
        return Conflict.from_dict(self._request("POST", path, {"rule": rule, "memory_id": memory_id, "text": text}))

    def dismiss_conflicts(self, conflict_ids: Iterable[int]) -> int | None:
        """Dismiss several open conflicts as one undoable operation; returns its group (None for no ids)."""
        ids = [check_id(c, "a conflict id") for c in conflict_ids]
        return self._request("POST", "/v1/conflicts/dismiss", {"ids": ids})["group"] if ids else None

    # -- HTTP ----------------------------------------------------------------------------------

    def _list(self, namespace: str | None, status: str | None, limit: int, offset: int) -> dict[str, Any]:
        params: dict[str, Any] = {"status": "any" if status is None else status, "limit": limit, "offset": offset}
        if namespace is not None:
            params["namespace"] = namespace
        return self._request("GET", "/v1/memories", params=params)

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None,
                 params: dict[str, Any] | None = None) -> Any:
        """Send one request and return its JSON, retrying what is safe to retry; errors as memory_core's."""
        import httpx

        if self._closed:
            raise StateError(f"this RemoteBank ({self.url}) is closed; open it again with MemoryBank.open")
        content = None
        if body is not None:
            try:
                content = json.dumps(body, allow_nan=False, ensure_ascii=False).encode()
            except (TypeError, ValueError) as exc:  # NaN, a set, an object: what no JSON can carry
                raise ValidationError(f"cannot send this request as JSON: {exc}") from None
        headers = {"Content-Type": "application/json"} if content is not None else None
        where = f"{method} {self.url}{path}"
        if method == "GET" and self.read_your_writes and self._seq is not None and path != "/v1/health":
            params = {**(params or {}), "min_seq": self._seq}
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = self._http.request(method, path, content=content, params=params, headers=headers)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                if not last:  # nothing reached the server: trying again is safe for every method
                    time.sleep(min(MAX_RETRY_WAIT, 0.2 * 2 ** attempt))
                    continue
                raise ServerUnavailableError(f"cannot reach the Memory Console server at {self.url} ({_say(exc)}); "
                                             "is `memctl serve` running there?") from None
            except httpx.TimeoutException:
                raise ServerUnavailableError(
                    f"{where} got no answer within {self.timeout:g} s" +
                    ("" if method == "GET" else "; the change may or may not have been made")) from None
            except httpx.HTTPError as exc:
                if method == "GET" and not last:
                    continue
                raise ServerUnavailableError(f"{where} failed: the connection broke ({_say(exc)})") from None
            if response.status_code == 503 and not last:
                time.sleep(_retry_after(response, attempt))
                continue
            break
        self._saw(response)
        if response.is_success:
            try:
                return response.json()
            except ValueError:
                raise MemoryCoreError(f"{where} answered {response.status_code} with something that is not JSON; "
                                      "is this a Memory Console server?") from None
        raise self._error(response, where)

    def _error(self, response: Any, where: str) -> MemoryCoreError:
        """The memory_core error a failed response names (or its status implies)."""
        status = response.status_code
        try:
            error = response.json()["error"]
            kind, message = str(error["type"]), str(error["message"])
        except (ValueError, KeyError, TypeError):
            kind, message = None, f"{where} answered {status}: {response.text[:200].strip() or response.reason_phrase}"
        cls = ERRORS.get(kind) if kind is not None else None
        if status == 503:
            tries = f" (tried {self.retries + 1} times)"
            if cls is not None and issubclass(cls, BankLockedError):  # the bank file stayed locked
                return cls(message + tries)
            if cls is None:  # the server itself is busy (at its concurrency limit) or behind a proxy
                return ServerUnavailableError(f"the server at {self.url} stayed busy{tries}: {message}")
            return cls(message)  # a damaged store, say: waiting does not help, say what the server said
        if cls is None:
            cls = _BY_STATUS.get(status, MemoryCoreError)
            if kind is not None:
                message = f"{kind}: {message}"
        return cls(message)


def _time(value: Any, what: str) -> Any:
    """A time argument as the server takes it: ISO 8601 (a datetime, a date or POSIX seconds is
    converted here, with the library's own checks); text goes as it is, for the server to check."""
    if value is None or isinstance(value, str):
        return value
    return parse_time(value, what).isoformat()


def _vector(value: Any) -> Any:
    """An embedding as a JSON list (a numpy array included); anything else goes as it is."""
    if value is None or isinstance(value, (str, bytes)):
        return value
    if hasattr(value, "tolist"):
        return value.tolist()
    return list(value) if isinstance(value, Iterable) else value


def _whole(value: Any) -> Any:
    """A numpy integer as int (JSON knows no numpy); anything else goes as it is, for the server to check."""
    return int(value) if isinstance(value, numbers.Integral) and not isinstance(value, bool) else value


def _row(row: Any) -> Any:
    if not isinstance(row, dict):
        return row  # the server says which row is not a mapping
    out = dict(row)
    if "created_at" in out:
        out["created_at"] = _time(out["created_at"], "created_at")
    if "embedding" in out:
        out["embedding"] = _vector(out["embedding"])
    return out


def _say(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


def _retry_after(response: Any, attempt: int) -> float:
    """Seconds to wait before trying again after a 503: its Retry-After (seconds), else a backoff."""
    try:
        wait = float(response.headers.get("retry-after", ""))
    except ValueError:
        wait = 0.25 * 2 ** attempt
    return min(MAX_RETRY_WAIT, max(0.0, wait))
