"""A real HTTP stand-in for an OpenAI-compatible LLM server, for tests.

It listens on 127.0.0.1 (a free port) in a background thread and speaks enough of
the OpenAI API for memory_core.language.llm: ``POST /v1/chat/completions`` and ``GET /v1/models``.
Tests script what it answers and inspect what it was sent::

    with StandInLLM() as llm:
        llm.script("first reply", {"a": 1}, Reply(status=500))   # consumed in order
        llm.respond_with(lambda messages: "...")                 # used once the script is empty
        config = LLMConfig(base_url=llm.base_url, model=llm.model)
        ...
        assert llm.requests[0].headers["authorization"] == "Bearer sk-..."

Ready-made behaviours: :meth:`StandInLLM.broken_json_once`, :meth:`~StandInLLM.always_broken_json`,
:meth:`~StandInLLM.slow`, :meth:`~StandInLLM.fail_then_succeed`, :meth:`~StandInLLM.unauthorized`;
``StandInLLM(api_key=...)`` answers 401 to requests without that Bearer key and
``StandInLLM(reject_response_format=True)`` answers 400 to JSON-mode requests (as LM Studio does).

As a pytest fixture (conftest.py)::

    from llm_server import stand_in_llm        # or tests.llm_server

    @pytest.fixture
    def llm_server():
        yield from stand_in_llm()
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Union

BROKEN_JSON = '{"verdict": "keep", "reason": "unterminated'
"""A reply that is almost, but not quite, JSON."""


@dataclass
class Reply:
    """One scripted answer.

    ``content`` is the assistant text (a dict/list is JSON-encoded); ``status`` the HTTP
    status (non-200 statuses send an OpenAI-style error body unless ``raw_body`` is given);
    ``delay`` seconds to wait before answering; ``headers`` extra response headers;
    ``raw_body`` bytes sent verbatim instead of a chat completion; ``finish_reason`` as sent.
    """

    content: Any = "ok"
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    raw_body: bytes | None = None
    finish_reason: str = "stop"


ReplyLike = Union[str, dict, list, Reply]
Responder = Callable[[list[dict[str, Any]]], ReplyLike]


@dataclass
class RecordedRequest:
    """What the server received: ``headers`` keys are lower-case; ``body`` is the parsed JSON (or None)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages of a completions request ([] otherwise)."""
        if isinstance(self.body, dict) and isinstance(self.body.get("messages"), list):
            return self.body["messages"]
        return []


def _default_responder(messages: list[dict[str, Any]]) -> ReplyLike:
    last_user = next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), "")
    return f"stand-in reply to: {last_user}"


_MEMORY_LINE = re.compile(r"^- \[m:(\d+)\] .*?relevance [\d.]+(?: \[inferred\])?: (.*)$", re.MULTILINE)
_SECTION = re.compile(r"^(Question|Reference answer|Answer A|Answer B):\n(.*?)(?=\n\n(?:Reference answer|Answer A|Answer B|"
                      r"Which answer)|\Z)", re.MULTILINE | re.DOTALL)


def ablation_responder(knowledge: dict[str, str] | None = None) -> Responder:
    """A deterministic answerer and judge for ablation tests (memory_core.evaluation.evaluate's prompts).

    * Judge requests (system prompt mentions an "impartial judge"): the winner is the answer that
      contains the reference answer (case-insensitive) while the other does not; otherwise a tie.
      The reply is ``{"winner": "A"|"B"|"tie", "reason": ...}``.
    * Answer requests with memories (lines ``- [m:ID] ...: text``): "From what you told me: <text of
      the first memory> [m:ID]." — the answer always leans on memory, right or wrong.
    * Answer requests without memories: the value of the first ``knowledge`` key found in the
      question (general knowledge the model has), else "I don't know."

    So a test knows each case's outcome from its data: memory helps when the expected answer is in
    the recalled memory, disturbs when only the model's own knowledge holds it.
    """
    facts = dict(knowledge or {})

    def respond(messages: list[dict[str, Any]]) -> ReplyLike:
        system = next((m.get("content", "") for m in messages if m.get("role") == "system"), "")
        user = next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), "")
        if "impartial judge" in system:
            # A JSON repair request appends turns after the judge's prompt: read the prompt itself.
            prompt = next((m.get("content", "") for m in messages if "Answer A:" in str(m.get("content", ""))), user)
            parts = {k: v.strip() for k, v in _SECTION.findall(prompt)}
            ref = parts.get("Reference answer", "").lower()
            a, b = parts.get("Answer A", "").lower(), parts.get("Answer B", "").lower()
            if ref and (ref in a) != (ref in b):
                return {"winner": "A" if ref in a else "B", "reason": "agrees with the reference answer"}
            return {"winner": "tie", "reason": "neither is closer to the reference"}
        found = _MEMORY_LINE.findall(system)
        if found:
            mid, text = found[0]
            return f"From what you told me: {text} [m:{mid}]."
        for key, value in facts.items():
            if key.lower() in user.lower():
                return value
        return "I don't know."

    return respond


def _as_reply(value: ReplyLike) -> Reply:
    return value if isinstance(value, Reply) else Reply(content=value)


class StandInLLM:
    """A scriptable OpenAI-compatible server on 127.0.0.1; use as a context manager.

    ``model`` is reported in answers and by /v1/models; ``api_key`` (when given) must be
    sent as ``Authorization: Bearer <key>`` or the server answers 401.
    """

    def __init__(
        self,
        *,
        model: str = "stand-in-model",
        api_key: str | None = None,
        reject_response_format: bool = False,
        responder: Responder | None = None,
    ) -> None:
        self.model = model
        self.api_key = api_key
        self.reject_response_format = reject_response_format
        self.requests: list[RecordedRequest] = []
        self._queue: deque[Reply] = deque()
        self._responder: Responder = responder or _default_responder
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> StandInLLM:
        """Start listening (idempotent); returns self."""
        if self._server is not None:
            return self
        handler = type("_BoundHandler", (_Handler,), {"stand_in": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="stand-in-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the server; handlers still sleeping in a delay wake up and exit."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> StandInLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        if self._server is None:
            raise RuntimeError("StandInLLM is not running; use it as a context manager or call start()")
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        """The API root to configure, e.g. ``http://127.0.0.1:54321/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # ------------------------------------------------------------------ scripting

    def script(self, *replies: ReplyLike) -> StandInLLM:
        """Queue replies for the next chat requests, in order (str/dict/list/Reply)."""
        with self._lock:
            self._queue.extend(_as_reply(r) for r in replies)
        return self

    def respond_with(self, responder: Responder) -> StandInLLM:
        """Answer chat requests with ``responder(messages)`` once the script queue is empty."""
        self._responder = responder
        return self

    def always(self, reply: ReplyLike) -> StandInLLM:
        """Answer every unscripted chat request with ``reply``."""
        fixed = _as_reply(reply)
        return self.respond_with(lambda _messages: fixed)

    def broken_json_once(self, then: ReplyLike) -> StandInLLM:
        """Answer broken JSON once, then ``then``."""
        return self.script(BROKEN_JSON, then)

    def always_broken_json(self, text: str = BROKEN_JSON) -> StandInLLM:
        """Answer broken JSON to every chat request."""
        return self.always(text)

    def slow(self, delay: float, content: ReplyLike = "slow reply") -> StandInLLM:
        """Wait ``delay`` seconds before every answer (to outlast a client timeout)."""
        base = _as_reply(content)
        return self.always(Reply(base.content, base.status, delay, base.headers, base.raw_body, base.finish_reason))

    def fail_then_succeed(self, status: int = 500, content: ReplyLike = "recovered", *, failures: int = 1) -> StandInLLM:
        """Answer HTTP ``status`` ``failures`` times, then ``content``."""
        return self.script(*[Reply(status=status) for _ in range(failures)], content)

    def unauthorized(self) -> StandInLLM:
        """Answer HTTP 401 (invalid API key) to every chat request."""
        return self.always(Reply(status=401))

    def reset(self) -> None:
        """Forget recorded requests and scripted replies; restore the default responder."""
        with self._lock:
            self.requests.clear()
            self._queue.clear()
        self._responder = _default_responder

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """Recorded POSTs to /v1/chat/completions."""
        with self._lock:
            return [r for r in self.requests if r.method == "POST" and r.path.endswith("/chat/completions")]

    # ------------------------------------------------------------------ used by the handler

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_reply(self, messages: list[dict[str, Any]]) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return _as_reply(self._responder(messages))

    def _sleep(self, seconds: float) -> None:
        self._stopping.wait(seconds)


_ERRORS = {
    400: ("Bad request", "invalid_request_error", None),
    401: ("Incorrect API key provided", "invalid_request_error", "invalid_api_key"),
    404: ("Not found", "invalid_request_error", None),
    429: ("Rate limit reached", "rate_limit_error", None),
    500: ("The server had an error while processing your request", "server_error", None),
    503: ("The server is overloaded", "server_error", None),
}


def _error_body(status: int, message: str | None = None) -> bytes:
    default, kind, code = _ERRORS.get(status, ("Error", "server_error" if status >= 500 else "invalid_request_error", None))
    return json.dumps({"error": {"message": message or default, "type": kind, "param": None, "code": code}}).encode()


class _Handler(BaseHTTPRequestHandler):
    stand_in: StandInLLM  # set on the per-server subclass
    server_version = "StandInLLM/1"

    def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
        pass

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _record(self, raw: bytes) -> RecordedRequest:
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            raw=raw,
        )
        self.stand_in._record(request)
        return request

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout); nothing to tell it

    def _authorized(self) -> bool:
        key = self.stand_in.api_key
        return key is None or self.headers.get("Authorization") == f"Bearer {key}"

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        self._record(b"")
        if not self._authorized():
            self._send(401, _error_body(401))
        elif self.path.rstrip("/") == "/v1/models":
            model = {"id": self.stand_in.model, "object": "model", "created": int(time.time()), "owned_by": "stand-in"}
            self._send(200, json.dumps({"object": "list", "data": [model]}).encode())
        else:
            self._send(404, _error_body(404, f"no route GET {self.path}"))

    def do_POST(self) -> None:  # noqa: N802
        request = self._record(self._read_body())
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, _error_body(404, f"no route POST {self.path}"))
            return
        if not self._authorized():
            self._send(401, _error_body(401))
            return
        body = request.body
        if not isinstance(body, dict) or not isinstance(body.get("model"), str) or not isinstance(body.get("messages"), list):
            self._send(400, _error_body(400, "body must be JSON with 'model' and 'messages'"))
            return
        if "response_format" in body and self.stand_in.reject_response_format:
            self._send(400, _error_body(400, "'response_format.type' must be 'json_schema'"))
            return

        reply = self.stand_in._next_reply(body["messages"])
        if reply.delay:
            self.stand_in._sleep(reply.delay)
        if reply.raw_body is not None:
            self._send(reply.status, reply.raw_body, reply.headers)
            return
        if reply.status != 200:
            self._send(reply.status, _error_body(reply.status), reply.headers)
            return
        content = reply.content if isinstance(reply.content, str) else json.dumps(reply.content)
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
        completion_tokens = len(content.split())
        completion = {
            "id": f"chatcmpl-standin-{len(self.stand_in.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": reply.finish_reason}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        self._send(200, json.dumps(completion).encode(), reply.headers)


def stand_in_llm(**kwargs: Any) -> Iterator[StandInLLM]:
    """Fixture body: yield a running :class:`StandInLLM` (kwargs go to its constructor), stop it after."""
    with StandInLLM(**kwargs) as server:
        yield server


def closed_port_url() -> str:
    """Return an API root on 127.0.0.1 where nothing listens (for "endpoint down" tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Bound then released without listen(): connecting now gets "connection refused".
    return f"http://127.0.0.1:{port}/v1"
