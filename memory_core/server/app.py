"""The REST API: routes over one open MemoryBank, bearer tokens per namespace, JSON mc.

Every route names the namespace it touches or reaches one through an id; the caller's token must
allow it. An id of a namespace the token may not use answers 404, exactly as an unknown id does,
so a tenant cannot even learn that another's memory exists. Errors are
``{"error": {"type": <memory_core error class>, "message": ...}}`` with the status of
:data:`STATUS`. Every answer carries ``X-Memory-Seq`` (:class:`SeqHeader`) and every read takes
``min_seq`` (:meth:`Service.caught_up`): read-your-writes across several servers of one bank. Route handlers are plain functions run in the server's thread pool: the bank is
thread-safe and serialises what must be.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable

from importlib.metadata import version

import anyio.to_thread
from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route

import memory_core as mc
from memory_core import STATUSES, Memory, MemoryBank, Token, format_for_prompt

from .docs import add_docs
from .metrics import CONTENT_TYPE, RequestMetrics, ServerMetrics
from .writes import WriteQueue

log = logging.getLogger("memctl.serve")
VERSION = version("memory-console")

MAX_BODY = 8 * 1024 * 1024  # bytes of a request body; a batch of 1,000 rows with vectors fits
MAX_BATCH = 10_000  # rows of one POST /v1/memories/batch
MAX_K = 1_000  # memories one recall may return
MAX_PAGE = 10_000  # memories one GET /v1/memories may return

# memory_core's errors and the HTTP status each answers with (the first class that matches).
STATUS: list[tuple[type[Exception], int]] = [
    (mc.AuthenticationError, 401),
    (mc.PermissionDeniedError, 403),
    (mc.NotFoundError, 404),
    (mc.PayloadTooLargeError, 413),
    (mc.ValidationError, 400),
    (mc.StateError, 409),
    (mc.ModelMismatchError, 409),
    (mc.BankReadOnlyError, 409),
    (mc.BankLockedError, 503),
    (mc.CorruptBankError, 503),
    (mc.LLMError, 502),
]
RETRY_AFTER = "1"  # seconds, on a 503: the bank is busy or its store unreachable for a moment
MAX_INT64 = 2**63 - 1  # change numbers and offsets are 64-bit in the store
SEQ_HEADER = "X-Memory-Seq"  # on every answer: the change number the server had caught up with
MIN_SEQ_WAIT = 5.0  # seconds a read with min_seq waits for the server to catch up, then 503
MIN_SEQ_DOC = ("Read-your-writes across servers: answer only once this server has caught up with change "
               "number min_seq (what the X-Memory-Seq header of an earlier answer, from any server of the "
               "bank, said); waits up to 5 s, then 503 with Retry-After.")


# -- who is calling ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Caller:
    """The token of a request (None when the server runs without auth: everything is allowed)."""

    token: Token | None
    anonymous: bool = False  # a token made up for a connection without auth (MCP over stdio, --no-auth)

    @property
    def name(self) -> str:
        return "anonymous" if self.token is None else self.token.name

    @property
    def actor(self) -> str | None:
        """Who the bank's history names for this caller's changes (None: the server's own actor)."""
        return None if self.token is None or self.anonymous else self.token.actor

    @property
    def namespaces(self) -> tuple[str, ...] | None:
        """The namespaces it may use, or None for all of them."""
        return None if self.token is None or self.token.admin else self.token.namespaces

    def may_use(self, namespace: str) -> bool:
        return self.token is None or self.token.may_use(namespace)

    def namespace(self, namespace: str | None, *, write: bool = False) -> str:
        """The namespace a request names (or the token's only one), checked against the token."""
        if write and self.token is not None and self.token.read_only:
            raise mc.PermissionDeniedError(f"the token {self.name!r} is read-only; it cannot change memories")
        if namespace is None:
            spaces = self.namespaces
            if spaces is not None and len(spaces) == 1:
                return spaces[0]
            raise mc.ValidationError("namespace is required" + (
                f": this token may use {', '.join(spaces)}" if spaces else ""))
        if not self.may_use(namespace):
            raise mc.PermissionDeniedError(f"the token {self.name!r} may not use namespace {namespace!r}")
        return namespace

    def check_write(self) -> None:
        if self.token is not None and self.token.read_only:
            raise mc.PermissionDeniedError(f"the token {self.name!r} is read-only; it cannot change memories")

    def admin(self) -> None:
        if self.token is not None and not self.token.admin:
            raise mc.PermissionDeniedError(f"the token {self.name!r} is not an admin token")


@dataclass
class Service:
    """What the routes share: the bank, whether tokens are checked, the write queue, and which
    worker this is (``memctl serve --workers``; None for a server alone)."""

    bank: MemoryBank
    auth: bool = True
    writes: WriteQueue | None = None
    worker: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def add(self, row: dict[str, Any], caller: Caller) -> Memory:
        """Store one memory through the write queue (grouped with concurrent adds); the stored memory."""
        if self.writes is not None:
            return self.writes.add(row, caller.actor)
        with self.acting(caller):
            return self.bank.get(self.bank.add(**row))

    def acting(self, caller: Caller) -> contextlib.AbstractContextManager:
        """Record this thread's changes in the block as the caller's (its token's name)."""
        return contextlib.nullcontext() if caller.actor is None else self.bank.acting_as(caller.actor)

    def has_seen(self, min_seq: int | None) -> bool:
        """Whether the bank has seen change ``min_seq`` already (or none was asked for)."""
        return min_seq is None or self.bank.seen_seq >= min_seq

    def caught_up(self, min_seq: int | None) -> None:
        """Wait (bounded) until the bank has seen change ``min_seq``; BankLockedError (503) if not."""
        if self.has_seen(min_seq):
            return
        if not self.bank.wait_for_change(min_seq, MIN_SEQ_WAIT):
            raise mc.BankLockedError(
                f"this server has not seen change {min_seq} within {MIN_SEQ_WAIT:g} s (it is at "
                f"{self.bank.seen_seq}); try again, or leave min_seq out if the number came from another bank")

    def memory(self, caller: Caller, memory_id: int) -> Memory:
        """The memory with this id if the caller may see it; otherwise not found, as if absent."""
        return visible(caller, self.bank.get, "memory", memory_id)

    def conflict(self, caller: Caller, conflict_id: int) -> Any:
        """The conflict with this id if the caller may see it; otherwise not found, as if absent."""
        self.settle()
        return visible(caller, self.bank.conflict, "conflict", conflict_id)

    def settle(self) -> None:
        """The contradictions of every add answered so far are recorded (adds are answered before
        their check: see writes.py), so a caller reads the conflicts its own adds made."""
        if self.writes is not None:
            self.writes.settle()


def visible(caller: Caller, lookup: Callable[[int], Any], what: str, ident: int) -> Any:
    """What ``lookup`` finds for ``ident`` if it is of a namespace the caller may use; an unknown id
    and another tenant's answer the same NotFoundError, so neither tells that the other exists. A
    server without tokens has no tenant to hide: the bank's own error (memctl's warm helper answers
    as the bank in process would)."""
    try:
        found = lookup(ident)
    except mc.NotFoundError:
        if caller.token is None:
            raise
        found = None
    if found is None or not caller.may_use(found.namespace):
        raise mc.NotFoundError(f"no {what} with id {ident}")
    return found


async def service(request: Request) -> Service:
    return request.app.state.service


def _secret(request: Request) -> str:
    """The secret of ``Authorization: Bearer <secret>``; 401 without one."""
    scheme, _, secret = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise mc.AuthenticationError("send a token: Authorization: Bearer <token> (memctl token create)")
    return secret.strip()


def _valid(token: Token | None) -> Caller:
    if token is None:
        raise mc.AuthenticationError("this token is not valid (unknown or revoked)")
    return Caller(token)


def caller_of(request: Request) -> Caller:
    """The caller's token (see :func:`caller`), for code already on a thread: it may wait for the store."""
    svc: Service = request.app.state.service
    return Caller(None) if not svc.auth else _valid(svc.bank.tokens.check(_secret(request)))


async def caller(request: Request) -> Caller:
    """The caller's token from ``Authorization: Bearer <secret>``; 401 without a valid one.
    Checked on the event loop when the cached tokens are known true, else on a thread (reading
    them may wait for the store): a thread less per request, most of the time."""
    svc: Service = request.app.state.service
    if not svc.auth:
        return Caller(None)
    secret = _secret(request)
    known, token = svc.bank.tokens.check_at_once(secret)
    if not known:
        token = await anyio.to_thread.run_sync(svc.bank.tokens.check, secret)
    return _valid(token)


async def fresh(request: Request, who: Caller = Depends(caller),
                min_seq: int | None = Query(None, ge=0, le=MAX_INT64, description=MIN_SEQ_DOC)) -> Caller:
    """The caller (see :func:`caller`), once the server has caught up with ``min_seq`` if given
    (on a thread, only when it has not yet: catching up may wait for the store)."""
    svc: Service = request.app.state.service
    if not svc.has_seen(min_seq):
        await anyio.to_thread.run_sync(svc.caught_up, min_seq)
    return who


# -- request bodies ----------------------------------------------------------------------------------

class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class NewRow(_Body):
    text: str = Field(description="A short distilled statement, e.g. 'Prefers vegetarian food'.")
    namespace: str | None = Field(None, description="Whose memory; default: the token's only namespace.")
    importance: float = Field(0.5, ge=0, le=1, description="0 to 1.")
    category: str = "other"
    kind: str = Field("explicit", description="explicit (the user said it) or inferred (the agent concluded it).")
    created_at: str | None = Field(None, description="ISO 8601; default now.")
    context: str | None = Field(None, description="Text that situates the memory; matched by recall, never shown.")
    pinned: bool = False
    source: str | None = None
    embedding: list[float] | None = Field(None, description="Its vector from the bank's model (skips embedding).")
    durability: str | None = Field(None, description="durable or transient (maintenance expires only transient "
                                                     "memories once their time has passed); default: read from the text.")


class NewMemory(NewRow):
    detect_conflicts: bool = Field(True, description="Check the new memory against stored ones for contradictions.")
    dedupe: bool = Field(True, description="The same text as an active memory of the namespace reinforces that "
                                           "memory (its id is returned) instead of storing it twice; false: store it anew.")


class Batch(_Body):
    rows: list[NewRow] = Field(max_length=MAX_BATCH, description="Stored all or nothing.")
    dedupe: bool = Field(True, description="A row with the text of an active memory of its namespace (or of an "
                                           "earlier row) reinforces that memory and gets its id; false: store every row.")


class MemoryChanges(_Body):
    text: str | None = None
    namespace: str | None = None
    importance: float | None = Field(None, ge=0, le=1)
    category: str | None = None
    kind: str | None = None
    created_at: str | None = None
    pinned: bool | None = None
    source: str | None = None
    durability: str | None = None


class RecallRequest(_Body):
    query: str
    namespace: str | None = None
    k: int | None = Field(None, ge=1, le=MAX_K)
    threshold: float | None = None
    preset: str | None = Field(None, description="A preset by name (default: the bank's active one).")
    params: dict[str, Any] | None = Field(None, description="ScoringParams fields, instead of a preset.")
    now: str | None = Field(None, description="Recall as of this ISO 8601 time (default now).")
    record: bool = Field(True, description="Log the recall and count the accesses (what feedback refers to).")
    gate: bool = Field(False, description="Ask the recall gate first; recall nothing if it says no.")
    min_seq: int | None = Field(None, ge=0, le=MAX_INT64, description=MIN_SEQ_DOC)


class FeedbackRequest(_Body):
    retrieval_id: int
    answer: str | None = None
    used_ids: list[int] | None = None
    helpful: bool | None = None
    at: str | None = Field(None, description="When the feedback was given, ISO 8601 (default now).")


class Resolution(_Body):
    rule: str = Field(description="newer_wins, explicit_wins, keep_both, edit or dismiss.")
    memory_id: int | None = None
    text: str | None = None


class Dismissal(_Body):
    ids: list[int] = Field(max_length=MAX_BATCH, description="Open or acknowledged conflicts, dismissed together.")


class ErrorDetail(BaseModel):
    type: str = Field(description="The memory_core error class, e.g. ValidationError, NotFoundError.")
    message: str = Field(description="What was wrong and what to do about it.")


class ErrorBody(BaseModel):
    error: ErrorDetail


# Every route may answer with these (documented once for all, so /docs and clients know them).
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "Invalid input; nothing changed."},
    401: {"model": ErrorBody, "description": "No token, or an unknown or revoked one."},
    403: {"model": ErrorBody, "description": "The token may not do this (namespace, read-only, admin)."},
    404: {"model": ErrorBody, "description": "No such id, or one of a namespace the token may not use."},
    409: {"model": ErrorBody, "description": "The memory's state does not allow it (e.g. restore an active one)."},
    413: {"model": ErrorBody, "description": f"The body is over the limit (default {MAX_BODY} bytes)."},
    503: {"model": ErrorBody, "description": "The bank is busy or its store unreachable; retry after Retry-After."},
}


# -- the app -----------------------------------------------------------------------------------------

def create_app(bank: MemoryBank, *, auth: bool = True, max_body: int = MAX_BODY,
               on_close: Callable[[], None] | None = None, mcp: Any = None, threads: int | None = None,
               worker: int | None = None) -> FastAPI:
    """The ASGI app serving ``bank``. It owns the bank from then on: shutting the app down writes
    queued adds, flushes the recall journal and closes the bank. ``mcp``, when given, answers
    ``/mcp`` (see :mod:`memory_core.server.mcp`); ``threads`` bounds the requests that work on
    the bank at once; ``worker`` is this process's number among ``memctl serve --workers``."""
    svc = Service(bank, auth, worker=worker)
    metrics = ServerMetrics(bank, lambda: svc.writes, worker)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if threads is not None:
            anyio.to_thread.current_default_thread_limiter().total_tokens = threads
        svc.writes = WriteQueue(bank)
        bank.serve_store()
        # Learn of other servers' writes by LISTEN/NOTIFY (a PostgreSQL bank), not by a query per
        # recall; a client that must read its own writes sends min_seq.
        bank.watch_changes()
        try:
            async with contextlib.AsyncExitStack() as stack:
                if mcp is not None:  # stopped first: no tool call runs once the bank closes
                    await stack.enter_async_context(mcp.lifespan())
                yield
        finally:
            svc.writes.close()
            bank.close()
            if on_close is not None:
                on_close()

    app = FastAPI(title="Memory Console", version=VERSION, lifespan=lifespan, responses=ERROR_RESPONSES,
                  docs_url=None, redoc_url=None,  # add_docs serves them with local assets, not a CDN's
                  description="Long-term memory for LLM agents: store, recall, feedback and curation, "
                              "per namespace, with bearer tokens (memctl token create). Every answer carries "
                              f"{SEQ_HEADER}: the change number the server had caught up with (after a write, "
                              "at least the write's own). Reads take min_seq (the body of POST /v1/recall, a "
                              "query parameter of the GET routes): the server answers once it has caught up "
                              "with that change, so a client behind a load balancer reads its own writes on "
                              "any server of the bank.")
    app.state.service = svc
    app.state.metrics = metrics
    _errors(app)
    app.add_middleware(BodyLimit, max_body=max_body)
    app.add_middleware(SeqHeader, bank=bank)
    app.add_middleware(RequestMetrics, metrics=metrics)  # last added, outermost: times it all
    _routes(app)
    add_docs(app)
    if mcp is not None:
        # Routes, not a mount: a mount at /mcp answers /mcp itself with a redirect to /mcp/.
        endpoint = mcp.app()
        app.router.routes.extend([Route("/mcp", endpoint), Route("/mcp/", endpoint)])
    return app


def acting(route: Callable) -> Callable:
    """Run a route's body with the bank recording its changes as the caller's (see Service.acting)."""
    @functools.wraps(route)
    def run(*args: Any, **kwargs: Any) -> Any:
        with kwargs["svc"].acting(kwargs["who"]):
            return route(*args, **kwargs)
    return run


def _routes(app: FastAPI) -> None:
    """Every route, in the order the API lists them: one function per group."""
    _health_route(app)
    _memory_routes(app)
    _recall_routes(app)
    _curation_routes(app)
    _server_routes(app)


def _health_route(app: FastAPI) -> None:
    """Whether the server is up."""
    @app.get("/v1/health", tags=["server"])
    def health(svc: Service = Depends(service)) -> dict:
        """Whether the server is up (no token needed); ``worker`` is the worker that answered
        (``memctl serve --workers``), else null."""
        return {"status": "ok", "version": VERSION, "model": svc.bank.model, "auth": svc.auth, "worker": svc.worker}


def _memory_routes(app: FastAPI) -> None:
    """Adding, reading, changing, forgetting and restoring memories, and their history."""
    @app.post("/v1/memories", status_code=201, tags=["memories"])
    async def add_memory(body: NewMemory, svc: Service = Depends(service), who: Caller = Depends(caller)) -> dict:
        """Store one memory (checked for contradictions with stored ones unless ``detect_conflicts`` is
        false); returns it as stored. The same text as an active memory of the namespace returns that
        memory, reinforced, unless ``dedupe`` is false."""
        row = body.model_dump()
        row["namespace"] = who.namespace(body.namespace, write=True)
        if svc.writes is None:
            memory = await anyio.to_thread.run_sync(svc.add, row, who)
        else:
            # Awaited on the event loop: a pool thread that only waited for the writer cost a
            # thread switch each way. Shielded: a disconnected client's add is still stored and
            # answered (to no one), never taken back half-way.
            memory = await asyncio.shield(asyncio.wrap_future(svc.writes.submit(row, who.actor)))
        return json_response(memory.to_dict(), 201)

    @app.post("/v1/memories/batch", status_code=201, tags=["memories"])
    @acting
    def add_memories(body: Batch, svc: Service = Depends(service), who: Caller = Depends(caller)) -> dict:
        """Store many memories in one transaction, all or nothing; returns their ids in order, and
        ``seq``: the change number their write reached (as the X-Memory-Seq header says)."""
        who.check_write()
        rows = []
        for row in body.rows:
            data = row.model_dump(exclude_none=True)
            data["namespace"] = who.namespace(row.namespace, write=True)
            rows.append(data)
        ids = svc.bank.add_many(rows, dedupe=body.dedupe)
        return {"ids": ids, "seq": svc.bank.seen_seq}

    @app.get("/v1/memories", tags=["memories"])
    def list_memories(namespace: str | None = None,
                      status: str = Query("active", description=f"{', '.join(STATUSES)}, or any"),
                      limit: int = Query(100, ge=1, le=MAX_PAGE), offset: int = Query(0, ge=0, le=MAX_INT64),
                      svc: Service = Depends(service), who: Caller = Depends(fresh)) -> dict:
        """Memories of a namespace, newest first, with how many match in all."""
        ns = who.namespace(namespace)
        wanted = None if status == "any" else status
        return {"memories": [m.to_dict() for m in svc.bank.memories(ns, wanted, limit=limit, offset=offset)],
                "total": svc.bank.count(ns, wanted)}

    @app.get("/v1/memories/{memory_id}", tags=["memories"])
    def get_memory(memory_id: int, svc: Service = Depends(service), who: Caller = Depends(fresh)) -> dict:
        """One memory by id."""
        return svc.memory(who, memory_id).to_dict()

    @app.patch("/v1/memories/{memory_id}", tags=["memories"])
    @acting
    def update_memory(memory_id: int, body: MemoryChanges, svc: Service = Depends(service),
                      who: Caller = Depends(caller)) -> dict:
        """Change fields of a memory (a new text is embedded again); returns it as updated."""
        who.check_write()
        svc.memory(who, memory_id)
        changes = body.model_dump(exclude_unset=True)
        if "namespace" in changes:
            who.namespace(changes["namespace"], write=True)
        return svc.bank.update(memory_id, **changes).to_dict()

    @app.delete("/v1/memories/{memory_id}", tags=["memories"])
    @acting
    def delete_memory(memory_id: int, hard: bool = False, reason: str | None = None,
                      svc: Service = Depends(service), who: Caller = Depends(caller)) -> dict:
        """Archive a memory (restorable), or with ``hard=true`` erase its text for good."""
        who.check_write()
        svc.memory(who, memory_id)
        svc.bank.forget(memory_id, hard=hard, reason=reason)
        return svc.bank.get(memory_id).to_dict()

    @app.post("/v1/memories/{memory_id}/restore", tags=["memories"])
    @acting
    def restore_memory(memory_id: int, svc: Service = Depends(service), who: Caller = Depends(caller)) -> dict:
        """Bring an archived memory back into recall."""
        who.check_write()
        svc.memory(who, memory_id)
        return svc.bank.restore(memory_id).to_dict()

    @app.get("/v1/memories/{memory_id}/history", tags=["memories"])
    def memory_history(memory_id: int, svc: Service = Depends(service), who: Caller = Depends(fresh)) -> dict:
        """Every change of a memory, oldest first."""
        svc.memory(who, memory_id)
        return {"events": [e.to_dict() for e in svc.bank.history(memory_id)]}


def _recall_routes(app: FastAPI) -> None:
    """Recall and feedback on what a recall returned."""
    @app.post("/v1/recall", tags=["recall"])
    @acting
    def recall(body: RecallRequest, svc: Service = Depends(service), who: Caller = Depends(caller)) -> dict:
        """The memories most worth putting in the prompt for ``query``: the top k that clear the
        threshold, possibly none. ``retrieval_id`` is what feedback refers to."""
        ns = who.namespace(body.namespace)
        svc.caught_up(body.min_seq)
        bank = svc.bank
        decision = bank.should_recall(body.query) if body.gate else None
        if body.preset is not None and body.params is not None:
            raise mc.ValidationError("give preset or params, not both")
        params = bank.preset(body.preset) if body.preset is not None else None
        if body.params is not None:
            params = mc.ScoringParams.from_dict(body.params)
        hits = bank.recall(body.query, ns, params, now=body.now, record=body.record, gate=body.gate, k=body.k,
                           threshold=body.threshold)
        return json_response({"retrieval_id": bank.last_retrieval_id if body.record else None,
                              "hits": [h.to_dict() for h in hits],
                              "gate": None if decision is None else decision.to_dict(),
                              "prompt": format_for_prompt(hits, now=body.now) if hits else ""})

    @app.post("/v1/feedback", tags=["recall"])
    @acting
    def feedback(body: FeedbackRequest, svc: Service = Depends(service), who: Caller = Depends(caller)) -> dict:
        """What happened after a recall: the answer, the memories it used, whether it helped."""
        who.check_write()
        return svc.bank.feedback(body.retrieval_id, body.answer, body.used_ids, body.helpful, at=body.at,
                                 namespaces=who.namespaces).to_dict()


def _curation_routes(app: FastAPI) -> None:
    """Recorded contradictions and resolving them."""
    @app.get("/v1/conflicts", tags=["curation"])
    def conflicts(namespace: str | None = None,
                  status: str = Query("open", description="open, resolved, acknowledged, dismissed, or any"),
                  memory_id: int | None = Query(None, description="Only the conflicts of this memory."),
                  svc: Service = Depends(service), who: Caller = Depends(fresh)) -> dict:
        """Recorded contradictions of a namespace, newest first."""
        ns = who.namespace(namespace)
        svc.settle()
        found = svc.bank.conflicts(ns, None if status == "any" else status, memory_id)
        return {"conflicts": [c.to_dict() for c in found]}

    @app.post("/v1/conflicts/{conflict_id}/resolve", tags=["curation"])
    @acting
    def resolve_conflict(conflict_id: int, body: Resolution, svc: Service = Depends(service),
                         who: Caller = Depends(caller)) -> dict:
        """Resolve a contradiction by a rule; one undoable operation."""
        who.check_write()
        svc.conflict(who, conflict_id)
        return svc.bank.resolve_conflict(conflict_id, body.rule, memory_id=body.memory_id, text=body.text).to_dict()

    @app.post("/v1/conflicts/dismiss", tags=["curation"])
    @acting
    def dismiss_conflicts(body: Dismissal, svc: Service = Depends(service), who: Caller = Depends(caller)) -> dict:
        """Dismiss several contradictions as one undoable operation (a triage of false alarms is one
        Undo): all or none, when one is already resolved or dismissed. ``group`` is the undo group,
        null for no ids."""
        who.check_write()
        for cid in dict.fromkeys(body.ids):
            svc.conflict(who, cid)  # another tenant's conflict is not found, as if absent
        return {"group": svc.bank.dismiss_conflicts(body.ids), "dismissed": len(set(body.ids))}


def _server_routes(app: FastAPI) -> None:
    """The bank's namespaces, the server's metrics and its tokens."""
    @app.get("/v1/namespaces", tags=["server"])
    def namespaces(svc: Service = Depends(service), who: Caller = Depends(fresh)) -> dict:
        """The namespaces this token may use that hold memories, with their active counts."""
        return {"namespaces": [{"namespace": ns, "active": n} for ns, n in svc.bank.namespaces() if who.may_use(ns)]}

    @app.get("/metrics", tags=["admin"], response_class=PlainTextResponse,
             responses={200: {"content": {CONTENT_TYPE: {}}, "description": "Prometheus' text format."}})
    async def metrics(request: Request, who: Caller = Depends(caller)) -> Response:
        """The server's metrics for Prometheus (admin tokens only): requests and latencies by route,
        single adds and the groups they were stored in, lock waits, the change number seen, the
        process's CPU and memory. No label names a namespace."""
        who.admin()
        return Response(request.app.state.metrics.render(), media_type=CONTENT_TYPE)

    @app.get("/v1/tokens", tags=["admin"])
    def tokens(svc: Service = Depends(service), who: Caller = Depends(caller)) -> dict:
        """Every token's name and scope (admin tokens only; secrets are never kept)."""
        who.admin()
        return {"tokens": [t.to_dict() for t in svc.bank.tokens.list()]}


# -- errors ------------------------------------------------------------------------------------------

def json_response(content: dict[str, Any], status: int = 200) -> JSONResponse:
    """``content`` (JSON-ready already: the records' ``to_dict``) as the answer, as it is: FastAPI's
    encoding of a returned dict walks every value again, longer than a recall takes."""
    return JSONResponse(content, status_code=status)


def error_response(status: int, kind: str, message: str) -> JSONResponse:
    # A message may quote what the caller sent; a lone surrogate in it could not be sent as UTF-8.
    message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    headers = {"Retry-After": RETRY_AFTER} if status == 503 else None
    if status == 401:
        headers = {"WWW-Authenticate": "Bearer"}
    return JSONResponse({"error": {"type": kind, "message": message}}, status_code=status, headers=headers)


def status_of(exc: Exception) -> int:
    for cls, status in STATUS:
        if isinstance(exc, cls):
            return status
    return 500


def _errors(app: FastAPI) -> None:
    @app.exception_handler(mc.MemoryCoreError)
    async def core_error(request: Request, exc: mc.MemoryCoreError) -> JSONResponse:
        return error_response(status_of(exc), type(exc).__name__, str(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        body = _body_problem(request, exc)
        if body is not None:
            return error_response(400, "ValidationError", body)
        problems = []
        for e in exc.errors()[:10]:
            where = ".".join(str(p) for p in e.get("loc", ()) if p != "body")
            problems.append(f"{where}: {e.get('msg')}" if where else str(e.get("msg")))
        return error_response(400, "ValidationError", "; ".join(problems) or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
            # FastAPI's answer to a body it could not decode: bytes that are not UTF-8 text.
            return error_response(400, "ValidationError", f"{SEND_JSON}; the body is not UTF-8 text")
        kind = {404: "NotFoundError", 405: "MethodNotAllowed"}.get(exc.status_code, "HTTPError")
        return error_response(exc.status_code, kind, str(exc.detail))

    @app.exception_handler(UnicodeError)
    async def not_unicode(request: Request, exc: UnicodeError) -> JSONResponse:
        # A lone surrogate in a field no check names (the checked ones say which field and where).
        return error_response(400, "ValidationError", "the request contains a lone surrogate (half of a UTF-16 "
                                                      "pair, e.g. a JSON escape \\ud800 without its partner): it "
                                                      "is not valid Unicode text; send UTF-8 text")

    @app.exception_handler(Exception)
    async def crash(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return error_response(500, "InternalError", "the server failed on this request; its log says why")


SEND_JSON = "send a JSON object with Content-Type: application/json"


def _body_problem(request: Request, exc: RequestValidationError) -> str | None:
    """What to send instead, when the body as a whole was wrong (not JSON, not an object, missing),
    not one of its fields; None otherwise."""
    errors = exc.errors()
    first = errors[0] if errors else {}
    loc = tuple(first.get("loc", ()))
    kind = first.get("type")
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "json_invalid":
        at = loc[1] if len(loc) > 1 and isinstance(loc[1], int) else None
        where = ""
        body = exc.body if isinstance(exc.body, (str, bytes)) else None
        if at is not None and body is not None:
            text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
            line = text.count("\n", 0, at) + 1
            where = f" at line {line} column {at - (text.rfind(chr(10), 0, at) + 1) + 1}"
        reason = (first.get("ctx") or {}).get("error")
        return f"{SEND_JSON}; the body is not valid JSON{where}" + (f" ({reason})" if reason else "")
    if loc != ("body",) or kind not in ("missing", "model_attributes_type", "dict_type"):
        return None
    if kind == "missing":
        return f"{SEND_JSON}; the body was empty"
    if content_type and content_type != "application/json" and not content_type.endswith("+json"):
        return f"{SEND_JSON}; the body was sent as {content_type[:60]}"
    return f"{SEND_JSON} ({{\"field\": value, ...}}); the body is JSON but not an object"


class BodyLimit:
    """Refuses a request body over ``max_body`` bytes with 413, by its Content-Length or, without
    one, as it streams in (pure ASGI, so nothing larger is ever buffered)."""

    def __init__(self, app: Any, max_body: int):
        self.app, self.max_body = app, max_body

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        too_large = mc.PayloadTooLargeError(f"the request body is over the limit of {self.max_body} bytes; "
                                                "send fewer rows per batch")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            return await _send_error(send, too_large)
        seen = 0

        async def limited() -> dict:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise _TooLarge()
            return message

        started = False

        async def tracking_send(message: dict) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited, tracking_send)
        except _TooLarge:
            if not started:
                await _send_error(send, too_large)


class SeqHeader:
    """Adds ``X-Memory-Seq`` to every answer: the change number the bank had caught up with when
    the answer started (pure ASGI). Read after the route's work, so after a write it is at least
    the write's own number: a client that sends it back as ``min_seq`` to any server of the bank
    reads its own writes."""

    def __init__(self, app: Any, bank: MemoryBank):
        self.app, self.bank = app, bank

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def stamped(message: dict) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                headers.append((SEQ_HEADER.lower().encode(), str(self.bank.seen_seq).encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, stamped)


class _TooLarge(Exception):
    pass


async def _send_error(send: Callable, exc: mc.MemoryCoreError) -> None:
    response = error_response(status_of(exc), type(exc).__name__, str(exc))
    await send({"type": "http.response.start", "status": response.status_code,
                "headers": response.raw_headers})
    await send({"type": "http.response.body", "body": response.body})
