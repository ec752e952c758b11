"""MCP: the bank's memory tools for LLM agents, over streamable HTTP and over stdio.

Five tools (``add_memory``, ``search_memories``, ``get_memory``, ``delete_memory``,
``memory_feedback``) built with the official ``mcp`` SDK. The namespace is never a tool argument,
so a model cannot be talked into crossing tenants:

- over HTTP (``memctl serve`` answers ``/mcp`` with :class:`McpEndpoint`) every request carries
  ``Authorization: Bearer <token>``, checked like the REST API's; the namespace is the token's
  only one, or, for a token of several namespaces or an admin token, the one named by the
  ``X-Memory-Namespace`` header (which the token must be allowed to use). Without auth (loopback
  development) the header names it, else ``default``;
- over stdio (``memctl mcp --namespace NS``, see :func:`serve_stdio`) it is the one namespace given.

An id of another namespace answers "not found", exactly as an unknown id does. A read-only token
may search and get, not add, delete or give feedback. The endpoint is stateless (JSON responses,
no MCP session kept between requests): every request is authorised on its own, a revoked token is
refused on its next request, and a restarted server breaks no client's session.

Read-your-writes across several servers of one bank, as the REST API's ``min_seq``: every answer
carries ``X-Memory-Seq`` (``add_memory``'s result also says it, as ``seq``), and a request with
``X-Memory-Min-Seq: N`` waits (up to 5 s, then 503) until the server it reached has seen change N.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import io
import json
import logging
import os
import signal
import sys
import threading
from datetime import datetime, timezone
from typing import Annotated, Any, AsyncContextManager, Callable, Iterator, Literal

import anyio
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse

import memory_core as mc
from memory_core import CATEGORIES, DURABILITIES, MemoryBank, Token, check_unicode, format_for_prompt

from .app import MAX_INT64, VERSION, Caller, Service, caller_of, error_response, status_of

__all__ = ["McpEndpoint", "serve_stdio", "NAMESPACE_HEADER", "MIN_SEQ_HEADER", "MAX_SEARCH_K", "build_server"]

log = logging.getLogger("memctl.mcp")

NAMESPACE_HEADER = "X-Memory-Namespace"  # picks the namespace for a token of several (or an admin token)
MIN_SEQ_HEADER = "X-Memory-Min-Seq"  # a change number the server must have seen before the request runs
MAX_SEARCH_K = 50  # memories one search_memories call may return
LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]

INSTRUCTIONS = """\
Long-term memory about the user, kept across conversations.
- Before answering anything that depends on the user (their preferences, plans, history, what was \
said in earlier conversations), call search_memories with the question. Use only what it returns; \
an empty result is a normal answer: then answer without memory and do not invent any. When two \
memories contradict each other, say so rather than silently picking one.
- After answering with the results of a search, call memory_feedback with its retrieval_id and the \
ids of the memories your answer used ([] if none).
- When the user tells you something lasting about themselves (a preference, goal, decision, \
recurring difficulty, a fact about their life), store it with add_memory as one short statement. \
Do not store small talk, passwords or identifiers, or what is true only today.
- When the user corrects or retracts something stored, add the correction and delete the old memory."""


# -- who is calling ------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Access:
    """What one MCP request may touch: the server's service and a caller narrowed to one namespace."""

    service: Service
    caller: Caller
    namespace: str


def narrowed(who: Caller, namespace: str) -> Caller:
    """``who`` limited to ``namespace`` only (keeping read-only), so that every check the REST API
    makes (an id of another namespace is not found, feedback only for its own recalls) applies."""
    if who.token is None:
        token = Token("anonymous", (namespace,), False, False, datetime.now(timezone.utc).replace(tzinfo=None))
        return Caller(token, anonymous=True)
    return Caller(dataclasses.replace(who.token, namespaces=(namespace,), admin=False))


def choose_namespace(who: Caller, asked: str | None, *, auth: bool) -> str:
    """The namespace of an MCP request: the token's only one, or the one ``asked`` for by the
    ``X-Memory-Namespace`` header (which the token must be allowed to use)."""
    if asked is not None:
        asked = asked.strip()
        if not asked:
            raise mc.ValidationError(f"the {NAMESPACE_HEADER} header is empty; name a namespace")
    if asked is None and not auth:
        asked = "default"
    spaces = who.namespaces
    if asked is None and (spaces is None or len(spaces) != 1):
        which = "every namespace" if spaces is None else ", ".join(spaces)
        raise mc.ValidationError(f"the token {who.name!r} may use {which}: say which one this MCP client uses "
                                 f"with the header {NAMESPACE_HEADER}: NAME")
    return who.namespace(asked)


def min_seq_of(value: str | None) -> int | None:
    """The change number of an ``X-Memory-Min-Seq`` header (None without one)."""
    if value is None:
        return None
    text = value.strip()
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_INT64:  # "²" is a digit to isdigit()
        raise mc.ValidationError(f"{MIN_SEQ_HEADER} must be a change number (a whole number >= 0, as an "
                                 f"answer's X-Memory-Seq header gives it), got {value[:40]!r}")
    return int(text)


# -- the tools -----------------------------------------------------------------------------------

Category = Literal[CATEGORIES]  # type: ignore[valid-type]
Durability = Literal[DURABILITIES]  # type: ignore[valid-type]


class MemoryRecord(BaseModel):
    """A stored memory, as ``Memory.to_dict()`` gives it (dates ISO 8601)."""

    model_config = ConfigDict(extra="allow")

    id: int
    text: str | None = Field(description="None once the memory has been hard-deleted.")
    namespace: str
    kind: str = Field(description="explicit (the user said it) or inferred (an agent concluded it)")
    category: str
    importance: float
    created_at: str
    updated_at: str
    last_accessed_at: str | None
    access_count: int
    use_count: int
    status: str = Field(description="active, archived, merged, superseded or deleted")
    pinned: bool
    source: str | None
    durability: str = Field("durable", description="durable, or transient: maintenance expires it once its time has passed")
    seq: int | None = Field(None, description=(
        "After add_memory: the change number the write reached. A client of several servers sends it "
        f"as the {MIN_SEQ_HEADER} header to read the memory back from any of them."))


class FoundMemory(BaseModel):
    """One memory a search returned, with the score that let it through."""

    id: int
    text: str | None
    score: float
    category: str
    kind: str
    importance: float
    created_at: str
    conflict_with: int | None = Field(description="the id of a memory this one contradicts (both returned)")


class SearchResult(BaseModel):
    retrieval_id: int | None = Field(description="Pass it to memory_feedback after answering.")
    memories: list[FoundMemory]


class FeedbackRecord(BaseModel):
    model_config = ConfigDict(extra="allow")

    retrieval_id: int
    namespace: str
    used_ids: list[int]
    helpful: bool | None
    replaced: bool = Field(description="True when this replaced earlier feedback for the same search.")


def tool_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A memory_core error becomes a tool error the model reads ("NotFoundError: ..."); anything
    else stays a crash, which the SDK logs and reports without its text."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except mc.MemoryCoreError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc

    return wrapper


def text_result(text: str, structured: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


# What build_server hands the tool groups: registers a function as a tool with its annotations.
Tool = Callable[[ToolAnnotations], Callable[[Callable[..., Any]], Callable[..., Any]]]


def build_server(access: Callable[[Context], Access]) -> MCPServer:
    """The MCP server of the memory tools; ``access(ctx)`` says who calls and in which namespace."""
    # log_level: the SDK configures the root logger at it when nothing else has (serve does first).
    server: MCPServer = MCPServer("memory-console", title="Memory Console", version=VERSION,
                                  instructions=INSTRUCTIONS, log_level="WARNING",
                                  description="Long-term memory of the user for LLM agents.")

    def tool(annotations: ToolAnnotations) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            server.add_tool(tool_errors(fn), description=inspect.cleandoc(fn.__doc__ or ""), annotations=annotations)
            return fn
        return register

    _store_tool(tool, access)
    _read_tools(tool, access)
    _delete_tool(tool, access)
    _feedback_tool(tool, access)
    return server


def _store_tool(tool: Tool, access: Callable[[Context], Access]) -> None:
    """add_memory: store one memory."""
    @tool(ToolAnnotations(title="Store a memory", read_only_hint=False, destructive_hint=False,
                                             idempotent_hint=False, open_world_hint=False))
    def add_memory(
        ctx: Context,
        text: Annotated[str, Field(min_length=1, max_length=4000, description=(
            "One short, self-contained statement about the user, in the third person, e.g. "
            "'Prefers vegetarian food' or 'Is training for the Berlin marathon in September 2026'."))],
        importance: Annotated[float, Field(ge=0.0, le=1.0, description=(
            "How central this is to the user, 0 to 1: names, health, goals and strong preferences "
            "0.8-1; ordinary preferences and facts 0.5; minor details 0.2-0.3."))] = 0.5,
        category: Annotated[Category, Field(description="What kind of memory this is.")] = "other",
        durability: Annotated[Durability | None, Field(description=(
            "durable (who the user is, what they prefer, want, find hard or decided) or transient (an "
            "event, a plan with a date, a state of the week); default: read from the text."))] = None,
    ) -> Annotated[CallToolResult, MemoryRecord]:
        """Store one long-term memory about the user, to recall in later conversations.

        Use it when the user states something lasting: a preference, a goal, a decision, a
        recurring difficulty, or a fact about their life that will matter later. Store the
        distilled fact, not the conversation: one short statement per fact, no small talk, no
        passwords, card or ID numbers, nothing true only today ("is tired right now"). Search first
        if it may already be stored; if the user corrected an earlier memory, store the correction
        and delete the old one. Returns the new memory's id.
        """
        who = access(ctx)
        who.caller.check_write()
        row = {"text": text, "namespace": who.namespace, "importance": importance, "category": category,
               "kind": "explicit", "created_at": None, "context": None, "pinned": False, "source": "mcp"}
        if durability is not None:
            row["durability"] = durability
        svc = who.service
        memory = svc.add(row, who.caller)
        return text_result(f"Stored memory {memory.id}: {memory.text}", {**memory.to_dict(), "seq": svc.bank.seen_seq})


def _read_tools(tool: Tool, access: Callable[[Context], Access]) -> None:
    """search_memories and get_memory: recall for a question, read one memory."""
    @tool(ToolAnnotations(title="Search memories", read_only_hint=True, open_world_hint=False))
    def search_memories(
        ctx: Context,
        query: Annotated[str, Field(min_length=1, max_length=4000, description=(
            "What you need to know, in natural language: usually the user's question itself, "
            "e.g. 'what should I cook tonight?' or 'where does the user work?'."))],
        k: Annotated[int | None, Field(ge=1, le=MAX_SEARCH_K, description=(
            "How many memories at most (default: the bank's setting, usually 3 to 5). Only memories "
            "relevant enough are returned, so fewer or none is normal."))] = None,
    ) -> Annotated[CallToolResult, SearchResult]:
        """Recall what is known about the user that is relevant to a question, before you answer it.

        Use it whenever the answer depends on the user: their preferences, plans, history, people
        in their life, or what was said in earlier conversations ("as we discussed", "my usual",
        "recommend me..."). Not needed for general knowledge questions. Returns the relevant
        memories formatted for your context, each marked with its id as [m:ID], most relevant
        first, or says that nothing relevant is stored: then answer without memory and do not
        invent any. Also returns a retrieval_id: after answering, pass it to memory_feedback.
        """
        who = access(ctx)
        bank = who.service.bank
        with who.service.acting(who.caller):
            hits = bank.recall(query, who.namespace, k=k, record=True)
        rid = bank.last_retrieval_id  # this thread's recall: safe with concurrent requests
        if hits:
            text = format_for_prompt(hits, cite=True)
        else:
            text = "No relevant memories are stored for this: answer without memory."
        if rid is not None:
            text += (f"\nretrieval_id: {rid} (after answering, call memory_feedback with it and the ids of the "
                     "memories your answer used)")
        found = [{"id": h.memory.id, "text": h.memory.text, "score": round(h.score, 4), "category": h.memory.category,
                  "kind": h.memory.kind, "importance": h.memory.importance,
                  "created_at": h.memory.created_at.isoformat(), "conflict_with": h.conflict_with} for h in hits]
        return text_result(text, {"retrieval_id": rid, "memories": found})

    @tool(ToolAnnotations(title="Read a memory", read_only_hint=True, open_world_hint=False))
    def get_memory(
        ctx: Context,
        id: Annotated[int, Field(ge=1, description="The memory's id, as search_memories shows it in [m:ID].")],
    ) -> Annotated[CallToolResult, MemoryRecord]:
        """Read one memory by its id, with all its fields (text, category, importance, dates, status).

        Use it to look at a memory search_memories returned, or one you stored, before changing or
        deleting it.
        """
        who = access(ctx)
        memory = who.service.memory(who.caller, id)
        when = memory.created_at.date().isoformat()
        return text_result(f"Memory {memory.id} ({memory.category}, importance {memory.importance:g}, {memory.status}, "
                           f"stored {when}): {memory.text}", memory.to_dict())


def _delete_tool(tool: Tool, access: Callable[[Context], Access]) -> None:
    """delete_memory: archive one memory."""
    @tool(ToolAnnotations(title="Delete a memory", read_only_hint=False, destructive_hint=True,
                                             idempotent_hint=True, open_world_hint=False))
    def delete_memory(
        ctx: Context,
        id: Annotated[int, Field(ge=1, description="The id of the memory to forget, as [m:ID] showed it.")],
    ) -> Annotated[CallToolResult, MemoryRecord]:
        """Forget one memory: when the user asks you to, or when it is wrong or no longer true.

        If the user corrected it, store the correction with add_memory as well. The memory is
        archived: it no longer comes up in searches, and an operator can restore it.
        """
        who = access(ctx)
        who.caller.check_write()
        svc = who.service
        svc.memory(who.caller, id)
        with svc.acting(who.caller):
            svc.bank.forget(id, hard=False, reason="deleted through MCP")
        memory = svc.bank.get(id)
        return text_result(f"Memory {id} is archived: it no longer comes up in searches.", memory.to_dict())


def _feedback_tool(tool: Tool, access: Callable[[Context], Access]) -> None:
    """memory_feedback: which memories of a search an answer used."""
    @tool(ToolAnnotations(title="Feedback on a search", read_only_hint=False,
                                             destructive_hint=False, idempotent_hint=True, open_world_hint=False))
    def memory_feedback(
        ctx: Context,
        retrieval_id: Annotated[int, Field(description="The retrieval_id search_memories returned.")],
        answer: Annotated[str | None, Field(max_length=20000, description=(
            "The answer you gave (optional). Without used_ids, its [m:ID] citations, or else its "
            "similarity to each memory, decide which memories it used."))] = None,
        used_ids: Annotated[list[int] | None, Field(max_length=MAX_SEARCH_K, description=(
            "Ids of the memories from that search your answer actually used; [] if none."))] = None,
        helpful: Annotated[bool | None, Field(description=(
            "Whether the memories helped you answer (optional)."))] = None,
    ) -> Annotated[CallToolResult, FeedbackRecord]:
        """Say, after answering, which memories of a search you used, so memory learns what helps.

        Call it once after each search_memories whose results you saw, with its retrieval_id and at
        least one of used_ids (best), answer or helpful. Memories that are used rank higher later;
        ones that never help fade. Calling again for the same retrieval_id replaces the feedback.
        """
        who = access(ctx)
        who.caller.check_write()
        with who.service.acting(who.caller):
            fb = who.service.bank.feedback(retrieval_id, answer, used_ids, helpful, namespaces=who.caller.namespaces)
        used = fb.used_ids
        text = (f"Feedback recorded for retrieval {fb.retrieval_id}: "
                + (f"used memories {', '.join(map(str, used))}" if used else "no memory used")
                + ("" if fb.helpful is None else ("; helpful" if fb.helpful else "; not helpful"))
                + (" (replaced the earlier feedback)" if fb.replaced else "") + ".")
        return text_result(text, {**fb.to_dict(), "used_ids": used})


# -- over HTTP: mounted at /mcp by memctl serve ----------------------------------------------------

class McpEndpoint:
    """The MCP endpoint of ``memctl serve``: ``create_app(bank, mcp=endpoint)`` routes ``/mcp`` to
    :meth:`app` and enters :meth:`lifespan` with the app's own.

    Every request is authorised like a REST request (the same tokens, the same 401 JSON); its
    namespace is chosen by :func:`choose_namespace`. Tool calls use the app's ``Service``, so
    ``add_memory`` goes through the same write queue as ``POST /v1/memories``.
    """

    def __init__(self, bank: MemoryBank, auth: bool = True):
        self.bank = bank
        self.auth = auth
        self.server = build_server(self.access)
        # Tokens protect the endpoint; without them (loopback only) a browser page must not reach
        # it through DNS rebinding, so Host and Origin must then name this machine.
        security = TransportSecuritySettings(enable_dns_rebinding_protection=not auth, allowed_hosts=LOOPBACK_HOSTS,
                                             allowed_origins=LOOPBACK_ORIGINS)
        self.server.streamable_http_app(stateless_http=True, json_response=True, transport_security=security)
        self.sessions = self.server.session_manager

    def app(self) -> "McpEndpoint":
        """The ASGI app answering ``/mcp``: authorise, then hand the request to the SDK."""
        return self

    def lifespan(self) -> AsyncContextManager[None]:
        """Runs the SDK's request handling (its task group) while the server runs."""
        return self.sessions.run()

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        request = Request(scope, receive)
        try:
            granted = await anyio.to_thread.run_sync(self.authorise, request)
        except mc.MemoryCoreError as exc:
            response = error_response(status_of(exc), type(exc).__name__, str(exc))
            return await response(scope, receive, send)
        request.state.memory_access = granted
        if scope.get("method") == "POST":
            body = await request.body()
            refused = not_unicode_call(body)
            if refused is not None:
                return await JSONResponse(refused)(scope, receive, send)
            receive = replay(body, receive)
        await self.sessions.handle_request(scope, receive, send)

    def authorise(self, request: Request) -> Access:
        """The request's token (401 without a valid one) and namespace (400 or 403 if unclear or not
        allowed), once the server has seen the change its ``X-Memory-Min-Seq`` names (503 if not in time)."""
        svc: Service = request.app.state.service
        who = caller_of(request)
        namespace = choose_namespace(who, request.headers.get(NAMESPACE_HEADER), auth=svc.auth)
        svc.caught_up(min_seq_of(request.headers.get(MIN_SEQ_HEADER)))
        return Access(svc, narrowed(who, namespace), namespace)

    @staticmethod
    def access(ctx: Context) -> Access:
        request = ctx.request_context.request
        granted = getattr(getattr(request, "state", None), "memory_access", None)
        if granted is None:  # cannot happen through handle(); refuse rather than guess a namespace
            raise mc.AuthenticationError("this MCP request was not authorised")
        return granted


def not_unicode_call(body: bytes) -> dict[str, Any] | None:
    """The tool error to answer a ``tools/call`` with when an argument holds a lone surrogate (a
    JSON escape such as ``\\ud800`` without its partner, which JavaScript's JSON.stringify writes for
    a broken string): the message :func:`memory_core.models.check_unicode` gives through REST, where
    the SDK's parser would answer only "Parse error: unexpected end of hex escape". None otherwise."""
    if b"\\u" not in body:
        return None
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None  # the SDK answers what is not JSON
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    params = message.get("params")
    arguments = params.get("arguments") if isinstance(params, dict) else None
    if not isinstance(arguments, dict):
        return None
    tool = str(params.get("name")).encode("utf-8", "backslashreplace").decode()
    for name, value in arguments.items():
        for text in _strings(value):
            try:
                check_unicode(text, str(name).encode("utf-8", "backslashreplace").decode())
            except mc.ValidationError as exc:
                said = f"Error executing tool {tool}: ValidationError: {exc}"  # as the SDK words a tool's error
                return {"jsonrpc": "2.0", "id": message.get("id"),
                        "result": {"content": [{"type": "text", "text": said}], "isError": True}}
    return None


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def replay(body: bytes, receive: Callable) -> Callable:
    """An ASGI ``receive`` that hands over ``body`` (already read) first, then what ``receive`` says."""
    sent = False

    async def again() -> dict:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


# -- over stdio: memctl mcp --namespace NS ---------------------------------------------------------

def serve_stdio(bank: MemoryBank, namespace: str) -> None:
    """Serve the memory tools over this process's stdin and stdout for ``namespace`` until the
    client closes stdin (or stops the process with SIGTERM or Ctrl-C), then close the bank. Log to
    stderr only: stdout carries the protocol."""
    granted = Access(Service(bank, auth=False), narrowed(Caller(None), namespace), namespace)
    server = build_server(lambda ctx: granted)

    def stop(signum: int, frame: Any) -> None:
        # The SDK reads stdin in a thread that nothing interrupts, so a signal cannot unwind the
        # event loop: close the bank (after the operation in flight), then end by the signal itself.
        signal.signal(signum, signal.SIG_DFL)

        def close_and_end() -> None:
            try:
                bank.close()
            finally:
                os.kill(os.getpid(), signum)

        threading.Thread(target=close_and_end, name="memctl-mcp-stop", daemon=True).start()

    handled = (signal.SIGTERM, signal.SIGINT)
    previous = {sig: signal.signal(sig, stop) for sig in handled} \
        if threading.current_thread() is threading.main_thread() else {}
    try:
        anyio.run(_run_stdio, server)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        bank.close()


async def _run_stdio(server: MCPServer) -> None:
    """The SDK's stdio transport over streams of our own, so that a ``tools/call`` whose arguments
    hold a lone surrogate is answered with :func:`not_unicode_call`'s message, as over HTTP, where
    the SDK's parser would answer only "Parse error"."""
    from mcp.server.stdio import stdio_server

    with _claimed_stdio() as (stdin, stdout):
        out = _LineWriter(anyio.wrap_file(stdout))
        async with stdio_server(_UnicodeCheckedLines(anyio.wrap_file(stdin), out), out) as (read, write):
            await server._lowlevel_server.run(read, write, server._lowlevel_server.create_initialization_options())


class _LineWriter:
    """stdout for whole JSON-RPC lines from two writers (the SDK and :class:`_UnicodeCheckedLines`):
    one line at a time, flushed, so neither tears the other's frame."""

    def __init__(self, file: anyio.AsyncFile[str]) -> None:
        self.file, self.lock = file, anyio.Lock()

    async def write(self, line: str) -> None:
        async with self.lock:
            await self.file.write(line)
            await self.file.flush()

    async def flush(self) -> None:
        pass  # every write is flushed


class _UnicodeCheckedLines:
    """stdin's lines for the SDK, less the ``tools/call`` lines :func:`not_unicode_call` refuses,
    which are answered here."""

    def __init__(self, file: anyio.AsyncFile[str], out: _LineWriter) -> None:
        self.file, self.out = file, out

    async def __aiter__(self) -> Any:
        async for line in self.file:
            refusal = not_unicode_call(line.encode("utf-8", "surrogatepass"))
            if refusal is None:
                yield line
            else:
                await self.out.write(json.dumps(refusal) + "\n")


@contextlib.contextmanager
def _claimed_stdio() -> Iterator[tuple[io.TextIOWrapper, io.TextIOWrapper]]:
    """The protocol's stdin and stdout as UTF-8 text on private copies of fds 0 and 1, while fd 0
    reads the null device and fd 1 writes to stderr: stray output (a library's print) cannot
    corrupt the protocol, as with the SDK's own transport. The fds are restored on exit."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    sys.stdout.flush()
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    stdin = io.TextIOWrapper(os.fdopen(wire_in, "rb", closefd=False), encoding="utf-8", errors="replace")
    stdout = io.TextIOWrapper(os.fdopen(wire_out, "wb", closefd=False), encoding="utf-8")
    try:
        yield stdin, stdout
    finally:
        with contextlib.suppress(ValueError, OSError):
            stdout.flush()
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        # The wire fds stay open: the SDK's reader thread may still block on stdin after we return.
