"""OpenAI-compatible chat client used by every LLM feature of memory_core.

Conflict judging, merge summaries, memory extraction and the ablation answerer/judge
all talk to one configured endpoint through :class:`LLMClient`. Any server that
speaks the OpenAI ``/v1/chat/completions`` API works (Ollama, llama.cpp, vLLM,
LM Studio, OpenAI itself). Only the standard library is used.

Configuration (see :meth:`LLMConfig.from_env`), highest priority first:

1. ``MEMCTL_LLM_BASE_URL``, ``MEMCTL_LLM_MODEL``, ``MEMCTL_LLM_API_KEY``,
   ``MEMCTL_LLM_TIMEOUT``, ``MEMCTL_LLM_MAX_RETRIES``
2. the ``[llm]`` table of the TOML file ``MEMCTL_CONFIG``
   (default ``~/.config/memory-console/config.toml``)
3. ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` as last-resort fallbacks

Every feature must keep working without an LLM: wrap the LLM call in
:func:`with_fallback`, whose :class:`LLMResult` says which path produced the value.

The API key never appears in ``repr``/``str``, log records or error messages.
"""

from __future__ import annotations

import http.client
import json
import logging
import math
import os
import random
import re
import ssl
import stat
import time
import tomllib
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from ..errors import LLMError, LLMNotConfiguredError, ValidationError

__all__ = [
    "LLMClient",
    "LLMConfig",
    "LLMHTTPError",
    "LLMResult",
    "default_config_path",
    "get_client",
    "with_fallback",
]

logger = logging.getLogger("memory_core.language.llm")

ENV_BASE_URL = "MEMCTL_LLM_BASE_URL"
ENV_MODEL = "MEMCTL_LLM_MODEL"
ENV_API_KEY = "MEMCTL_LLM_API_KEY"
ENV_TIMEOUT = "MEMCTL_LLM_TIMEOUT"
ENV_MAX_RETRIES = "MEMCTL_LLM_MAX_RETRIES"
ENV_CONFIG = "MEMCTL_CONFIG"
ENV_OPENAI_BASE_URL = "OPENAI_BASE_URL"
ENV_OPENAI_API_KEY = "OPENAI_API_KEY"

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 2
DEFAULT_TEMPERATURE = 0.0
# Retries multiply the worst-case wait; a hard cap keeps a misconfiguration from
# turning one request into minutes of blocking.
MAX_RETRIES_LIMIT = 10

_MASK = "***"
_ERROR_SNIPPET = 200
_FILE_KEYS = ("base_url", "model", "api_key", "timeout", "max_retries", "temperature")
_SETUP_HINT = f"set {ENV_BASE_URL} and {ENV_MODEL} (or base_url and model under [llm] in the config file)"

_JSON_INSTRUCTION = (
    "Reply with valid JSON only: no prose before or after it, no Markdown code fences."
)
_REPAIR_INSTRUCTION = (
    "Your previous reply was not valid JSON ({error}). Reply again with only the corrected "
    "JSON, no explanation and no Markdown code fences."
)
# Reasoning models served through Ollama/llama.cpp may prefix their answer with a
# <think> block; it is never part of the JSON.
_THINK_RE = re.compile(r"\A\s*<think>.*?</think>\s*", re.DOTALL | re.IGNORECASE)
_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*(.*?)\s*```", re.DOTALL)


def default_config_path() -> Path:
    """Return the config file read when neither an argument nor ``MEMCTL_CONFIG`` names one."""
    return Path.home() / ".config" / "memory-console" / "config.toml"


class LLMHTTPError(LLMError):
    """The endpoint answered with an HTTP error status that is not worth retrying (or retries ran out).

    ``status`` is the HTTP status code, ``endpoint`` the URL (without credentials).
    """

    def __init__(self, message: str, *, status: int, endpoint: str):
        super().__init__(message)
        self.status = status
        self.endpoint = endpoint


class _FieldError(ValidationError):
    """A ValidationError that remembers which config field was wrong, so from_env can say where it came from."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


class _RetryableFailure(Exception):
    """Internal: one attempt failed in a way a later attempt may not (connection, timeout, 429, 5xx)."""

    def __init__(self, message: str, hint: str, *, retry_after: float | None = None, status: int | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.retry_after = retry_after
        self.status = status


# --------------------------------------------------------------------------- helpers


def _display_url(url: str) -> str:
    """Return ``url`` with any ``user:password@`` part masked, for messages and logs."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{_MASK}@{host}"))


def _redact(text: str, secret: str | None) -> str:
    """Remove ``secret`` from text that came from elsewhere (server error bodies may echo it)."""
    if secret and secret in text:
        return text.replace(secret, _MASK)
    return text


def _is_number(value: object) -> bool:
    # bool is an int subclass; "timeout = true" in TOML is a mistake, not 1 second.
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_base_url(value: object) -> str:
    example = "e.g. http://127.0.0.1:11434/v1"
    if not isinstance(value, str) or not value.strip():
        raise _FieldError("base_url", f"LLM base_url is empty; set it to the API root of the server ({example})")
    url = value.strip().rstrip("/")
    parts = urllib.parse.urlsplit(url)
    shown = _display_url(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise _FieldError(
            "base_url", f"LLM base_url {shown!r} must start with http:// or https:// ({example})"
        )
    if not parts.hostname:
        raise _FieldError("base_url", f"LLM base_url {shown!r} has no host name ({example})")
    try:
        parts.port
    except ValueError:
        raise _FieldError("base_url", f"LLM base_url {shown!r} has an invalid port ({example})") from None
    if parts.query or parts.fragment:
        raise _FieldError(
            "base_url", f"LLM base_url {shown!r} must not contain '?' or '#'; give only the API root ({example})"
        )
    if parts.path.rstrip("/").endswith("/chat/completions"):
        raise _FieldError(
            "base_url",
            f"LLM base_url {shown!r} should be the API root, not the /chat/completions endpoint ({example})",
        )
    return url


def _check_model(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _FieldError("model", "LLM model is empty; set it to a model name the server knows (e.g. llama3.1:8b)")
    return value.strip()


def _check_api_key(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _FieldError("api_key", f"LLM api_key must be a string, got {type(value).__name__}")
    key = value.strip()  # keys pasted from files often carry a trailing newline
    if not key:
        return None
    # Never quote the key in the message. A control character would otherwise make
    # http.client raise "Invalid header value '<the key>'".
    if any(ch.isspace() or not ch.isprintable() or ord(ch) > 126 for ch in key):
        raise _FieldError(
            "api_key",
            "LLM api_key contains spaces, control or non-ASCII characters; copy the key again exactly",
        )
    return key


def _check_timeout(value: object) -> float:
    if not _is_number(value) or not math.isfinite(value) or value <= 0:  # type: ignore[arg-type]
        raise _FieldError("timeout", f"LLM timeout must be a number of seconds > 0 (e.g. 30), got {value!r}")
    return float(value)  # type: ignore[arg-type]


def _check_max_retries(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_RETRIES_LIMIT:
        raise _FieldError(
            "max_retries", f"LLM max_retries must be a whole number from 0 to {MAX_RETRIES_LIMIT}, got {value!r}"
        )
    return value


def _check_temperature(value: object) -> float:
    if not _is_number(value) or not math.isfinite(value) or not 0 <= value <= 2:  # type: ignore[arg-type]
        raise _FieldError("temperature", f"LLM temperature must be a number from 0 to 2, got {value!r}")
    return float(value)  # type: ignore[arg-type]


def _check_messages(messages: object) -> list[dict[str, Any]]:
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        raise ValidationError(
            'messages must be a non-empty list of {"role": ..., "content": ...} dicts'
        )
    checked: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise ValidationError(f"messages[{index}] must be a dict with 'role' and 'content', got {type(message).__name__}")
        role, content = message.get("role"), message.get("content")
        if not isinstance(role, str) or not role:
            raise ValidationError(f"messages[{index}] needs a non-empty string 'role' (system, user or assistant)")
        if not isinstance(content, str):
            raise ValidationError(f"messages[{index}] needs a string 'content', got {type(content).__name__}")
        checked.append(dict(message))  # copy: callers' lists must not change when we add instructions
    return checked


def _env(name: str) -> str | None:
    # An exported-but-empty variable means "unset"; treating "" as a URL would only produce a confusing error.
    value = os.environ.get(name)
    if value is None or not value.strip():
        return None
    return value.strip()


# --------------------------------------------------------------------------- config


@dataclass(frozen=True, repr=False)
class LLMConfig:
    """Where and how to reach the OpenAI-compatible chat endpoint.

    ``base_url`` is the API root (``http://127.0.0.1:11434/v1``), ``model`` the model name,
    ``api_key`` optional (sent as ``Authorization: Bearer``; masked in ``repr``/``str``),
    ``timeout`` seconds per attempt, ``max_retries`` extra attempts on transient failures,
    ``temperature`` the default sampling temperature. Invalid values raise
    :class:`~memory_core.errors.ValidationError` saying what to fix.
    """

    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES
    temperature: float = DEFAULT_TEMPERATURE

    def __post_init__(self) -> None:
        # frozen: normalised values must be written through object.__setattr__
        object.__setattr__(self, "base_url", _check_base_url(self.base_url))
        object.__setattr__(self, "model", _check_model(self.model))
        object.__setattr__(self, "api_key", _check_api_key(self.api_key))
        object.__setattr__(self, "timeout", _check_timeout(self.timeout))
        object.__setattr__(self, "max_retries", _check_max_retries(self.max_retries))
        object.__setattr__(self, "temperature", _check_temperature(self.temperature))

    def __repr__(self) -> str:
        key = _MASK if self.api_key else None
        return (
            f"LLMConfig(base_url={_display_url(self.base_url)!r}, model={self.model!r}, api_key={key!r}, "
            f"timeout={self.timeout!r}, max_retries={self.max_retries!r}, temperature={self.temperature!r})"
        )

    __str__ = __repr__

    @property
    def chat_url(self) -> str:
        """The chat completions URL (may contain credentials; use for requests, not messages)."""
        return f"{self.base_url}/chat/completions"

    @classmethod
    def from_env(cls, config_path: str | os.PathLike[str] | None = None) -> LLMConfig | None:
        """Build the config from environment variables and the optional TOML config file.

        The file is ``config_path``, else ``$MEMCTL_CONFIG``, else
        ``~/.config/memory-console/config.toml``; it may hold an ``[llm]`` table with
        ``base_url``, ``model``, ``api_key``, ``timeout``, ``max_retries``, ``temperature``.
        ``MEMCTL_LLM_*`` variables override the file; ``OPENAI_BASE_URL``/``OPENAI_API_KEY``
        are used only when neither sets the value (they are often exported globally for
        other tools, so the project's own file wins over them).

        Returns ``None`` when no base URL or no model is configured (LLM features then use
        their fallbacks). Raises ``ValidationError`` for a bad value, an unreadable or
        malformed file, or an explicitly named file that does not exist.
        """
        env_config = _env(ENV_CONFIG)
        if config_path is not None:
            path, explicit = Path(config_path).expanduser(), True
        elif env_config is not None:
            path, explicit = Path(env_config).expanduser(), True
        else:
            path, explicit = default_config_path(), False
        file_values = _read_config_file(path, required=explicit)
        file_source = f"[llm] in {path}"

        values: dict[str, Any] = {}
        sources: dict[str, str] = {}

        def pick(field: str, *candidates: tuple[str, Any]) -> None:
            for source, value in candidates:
                if value is not None:
                    values[field], sources[field] = value, source
                    return

        pick("base_url", (ENV_BASE_URL, _env(ENV_BASE_URL)), (file_source, file_values.get("base_url")),
             (ENV_OPENAI_BASE_URL, _env(ENV_OPENAI_BASE_URL)))
        pick("model", (ENV_MODEL, _env(ENV_MODEL)), (file_source, file_values.get("model")))
        pick("api_key", (ENV_API_KEY, _env(ENV_API_KEY)), (file_source, file_values.get("api_key")),
             (ENV_OPENAI_API_KEY, _env(ENV_OPENAI_API_KEY)))
        pick("timeout", (ENV_TIMEOUT, _env_number(ENV_TIMEOUT, float)), (file_source, file_values.get("timeout")))
        pick("max_retries", (ENV_MAX_RETRIES, _env_number(ENV_MAX_RETRIES, int)),
             (file_source, file_values.get("max_retries")))
        pick("temperature", (file_source, file_values.get("temperature")))

        if "base_url" not in values or "model" not in values:
            # Half a configuration is almost always a mistake, but the generic OPENAI_*
            # variables alone are not ours to complain about.
            ours = {f: s for f, s in sources.items() if f in ("base_url", "model") and not s.startswith("OPENAI_")}
            if ours:
                missing = "model" if "model" not in values else "base_url"
                logger.warning(
                    "LLM is only partly configured (%s set via %s, but no %s); LLM features will use "
                    "their fallbacks. To enable the LLM, %s.",
                    ", ".join(ours), ", ".join(sorted(set(ours.values()))), missing, _SETUP_HINT,
                )
            return None
        try:
            return cls(**values)
        except _FieldError as exc:
            raise ValidationError(f"{exc} (set via {sources.get(exc.field, 'defaults')})") from None


def _env_number(name: str, kind: type[int] | type[float]) -> int | float | None:
    raw = _env(name)
    if raw is None:
        return None
    try:
        return kind(raw)
    except ValueError:
        wanted = "a whole number" if kind is int else "a number"
        raise ValidationError(f"environment variable {name} must be {wanted}, got {raw!r}") from None


def _read_config_file(path: Path, *, required: bool) -> dict[str, Any]:
    """Return the validated ``[llm]`` table of ``path`` ({} when absent and not required)."""
    if not path.exists():
        if required:
            raise ValidationError(
                f"config file {path} does not exist; create it (with an [llm] table) "
                f"or point {ENV_CONFIG} at an existing file"
            )
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ValidationError(f"config file {path} is not valid TOML ({exc}); fix its syntax") from None
    except UnicodeDecodeError:
        raise ValidationError(f"config file {path} is not UTF-8 text; save it as UTF-8") from None
    except OSError as exc:
        raise ValidationError(f"cannot read config file {path} ({exc.strerror or exc}); check its permissions") from None
    section = data.get("llm")
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise ValidationError(f"'llm' in config file {path} must be a table: write it as [llm] followed by key = value lines")
    unknown = sorted(set(section) - set(_FILE_KEYS))
    if unknown:
        # A misspelt key (base-url, api-key) would otherwise be silently ignored.
        raise ValidationError(
            f"unknown key(s) {', '.join(unknown)} under [llm] in {path}; allowed keys: {', '.join(_FILE_KEYS)}"
        )
    for key in ("base_url", "model", "api_key"):
        if key in section and not isinstance(section[key], str):
            raise ValidationError(f"{key} under [llm] in {path} must be a quoted string, got {type(section[key]).__name__}")
    for key in ("timeout", "temperature"):
        if key in section and not _is_number(section[key]):
            raise ValidationError(f"{key} under [llm] in {path} must be a number, got {section[key]!r}")
    if "max_retries" in section and (not isinstance(section["max_retries"], int) or isinstance(section["max_retries"], bool)):
        raise ValidationError(f"max_retries under [llm] in {path} must be a whole number, got {section['max_retries']!r}")
    if section.get("api_key"):
        _warn_if_shared(path)
    return dict(section)


def _warn_if_shared(path: Path) -> None:
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        logger.warning("config file %s holds an API key and is readable by other users; run: chmod 600 %s", path, path)


# --------------------------------------------------------------------------- client


class _NoRedirectHandler(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: urllib would replay the Authorization header to the new host
    and silently turn a POST into a GET."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        return None  # urllib then raises HTTPError with the 3xx status


def _is_loopback(host: str | None) -> bool:
    if not host:
        return False
    host = host.lower()
    return host in ("localhost", "::1") or host.startswith("127.") or host.endswith(".localhost")


def _retry_after_seconds(value: str | None) -> float | None:
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None  # HTTP-date form: rare for LLM servers, fall back to our own backoff
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


class LLMClient:
    """Client for one OpenAI-compatible chat endpoint.

    Thread-safe for concurrent calls. Transient failures (connection errors, timeouts,
    HTTP 429 and 5xx) are retried ``config.max_retries`` times with exponential backoff;
    other errors raise :class:`~memory_core.errors.LLMError` at once.
    ``backoff_base``/``max_backoff`` (seconds) shape the wait between attempts.
    """

    def __init__(self, config: LLMConfig, *, backoff_base: float = 0.5, max_backoff: float = 8.0) -> None:
        if not isinstance(config, LLMConfig):
            raise ValidationError(
                f"LLMClient needs an LLMConfig, got {type(config).__name__}; use get_client() to build one from the environment"
            )
        if not _is_number(backoff_base) or backoff_base < 0 or not _is_number(max_backoff) or max_backoff < 0:
            raise ValidationError("backoff_base and max_backoff must be numbers of seconds >= 0")
        self.config = config
        self._backoff_base = float(backoff_base)
        self._max_backoff = float(max_backoff)
        # Flipped off when the server rejects response_format (LM Studio accepts only
        # json_schema); the prompt instruction alone then asks for JSON.
        self._json_mode_supported = True
        handlers: list[urllib.request.BaseHandler] = [_NoRedirectHandler()]
        if _is_loopback(urllib.parse.urlsplit(config.base_url).hostname):
            # A corporate http_proxy must not capture requests meant for a local server.
            handlers.append(urllib.request.ProxyHandler({}))
        self._opener = urllib.request.build_opener(*handlers)

    def __repr__(self) -> str:
        return f"LLMClient(model={self.config.model!r}, endpoint={self.endpoint!r})"

    @property
    def endpoint(self) -> str:
        """The chat completions URL, safe to show (credentials masked)."""
        return _display_url(self.config.chat_url)

    # ------------------------------------------------------------------ public API

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        response_format_json: bool = False,
    ) -> str:
        """Send ``messages`` to the chat completions endpoint and return the reply text.

        ``temperature`` defaults to the config's; ``max_tokens`` caps the reply length;
        ``response_format_json`` asks the server for ``{"type": "json_object"}`` output.
        Raises ``ValidationError`` for malformed arguments and ``LLMError`` when the
        endpoint is unreachable, times out on every attempt, rejects the request or
        answers something that is not a chat completion.
        """
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": _check_messages(messages),
            "temperature": self.config.temperature if temperature is None else _check_temperature(temperature),
            "stream": False,
        }
        if max_tokens is not None:
            if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens <= 0:
                raise ValidationError(f"max_tokens must be a whole number > 0, got {max_tokens!r}")
            body["max_tokens"] = max_tokens
        if response_format_json:
            body["response_format"] = {"type": "json_object"}
        payload = self._post(body)
        return self._extract_content(payload)

    def chat_json(self, messages: Sequence[Mapping[str, Any]], schema_hint: str | None = None) -> dict[str, Any] | list[Any]:
        """Ask for a JSON answer and return it parsed (a dict or a list).

        Adds a "JSON only" instruction (plus ``schema_hint``, e.g. ``'{"verdict": "keep|replace"}'``)
        to the system prompt and requests ``response_format`` ``json_object``. The reply
        is parsed strictly; a surrounding Markdown code fence is tolerated. If it does not
        parse, exactly one repair request is made (the broken reply is sent back with a
        request for valid JSON). Raises ``LLMError`` quoting the start of the bad reply
        if that fails too, or for any transport error.
        """
        prompt = _with_json_instruction(_check_messages(messages), schema_hint)
        first = self._chat_json_mode(prompt)
        try:
            return _parse_json_reply(first)
        except ValueError as exc:
            first_error = str(exc)
        logger.info("LLM reply from %s was not valid JSON (%s); asking once for a repair", self.endpoint, first_error)
        repair = prompt + [
            {"role": "assistant", "content": first},
            {"role": "user", "content": _REPAIR_INSTRUCTION.format(error=first_error)},
        ]
        second = self._chat_json_mode(repair)
        try:
            return _parse_json_reply(second)
        except ValueError as exc:
            quoted = f"the reply began: {self._snippet(first)!r}"
            if second != first:
                quoted += f"; the repaired reply began: {self._snippet(second)!r}"
            raise LLMError(
                f"LLM endpoint {self.endpoint} (model {self.config.model!r}) did not return valid JSON, "
                f"even after one repair request ({exc}); {quoted}. Try a model that follows JSON "
                f"instructions better, or a larger max_tokens if the reply was cut off."
            ) from None

    def ping(self) -> bool:
        """Return True when ``GET {base_url}/models`` answers with JSON, False otherwise. Never raises.

        Uses at most 5 s and no retries, so it suits health checks in the dashboard.
        """
        url = f"{self.config.base_url}/models"
        try:
            raw = self._send("GET", url, None, timeout=min(self.config.timeout, 5.0))
            json.loads(raw)
        except (LLMError, _RetryableFailure, ValueError) as exc:
            logger.info("LLM ping of %s failed: %s", _display_url(url), self._redact(str(exc)))
            return False
        return True

    # ------------------------------------------------------------------ internals

    def _snippet(self, text: str) -> str:
        return self._redact(text[:_ERROR_SNIPPET])

    def _redact(self, text: str) -> str:
        return _redact(text, self.config.api_key)

    def _chat_json_mode(self, messages: list[dict[str, Any]]) -> str:
        if self._json_mode_supported:
            try:
                return self.chat(messages, response_format_json=True)
            except LLMHTTPError as exc:
                if exc.status not in (400, 422):
                    raise
                logger.warning(
                    "LLM endpoint %s rejected the request with HTTP %d while JSON mode was on; "
                    "retrying once without response_format", self.endpoint, exc.status,
                )
            reply = self.chat(messages)
            # Only now is it certain that response_format (and not something else) was the problem.
            self._json_mode_supported = False
            return reply
        return self.chat(messages)

    def _build_request(self, method: str, url: str, data: bytes | None) -> urllib.request.Request:
        # Built in its own frame so the header dict holding the key is not a local of
        # the frames a traceback (or pytest --showlocals) would print.
        headers = {"Accept": "application/json", "User-Agent": "memory-console-llm/1"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        return urllib.request.Request(url, data=data, headers=headers, method=method)

    def _post(self, body: dict[str, Any]) -> Any:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        attempts = self.config.max_retries + 1
        for attempt in range(1, attempts + 1):
            logger.debug(
                "POST %s model=%s messages=%d attempt %d/%d",
                self.endpoint, self.config.model, len(body["messages"]), attempt, attempts,
            )
            started = time.monotonic()
            try:
                raw = self._send("POST", self.config.chat_url, data, timeout=self.config.timeout)
            except _RetryableFailure as failure:
                if attempt >= attempts:
                    tries = f"{attempts} attempt" + ("s" if attempts != 1 else "")
                    message = f"{failure.message} (gave up after {tries}). {failure.hint}"
                    if failure.status is not None:
                        raise LLMHTTPError(message, status=failure.status, endpoint=self.endpoint) from None
                    raise LLMError(message) from None
                delay = self._backoff(attempt, failure.retry_after)
                logger.warning(
                    "LLM request to %s failed (%s); retrying in %.2fs (attempt %d/%d)",
                    self.endpoint, failure.message, delay, attempt, attempts,
                )
                time.sleep(delay)
                continue
            logger.debug("LLM answered in %.2fs", time.monotonic() - started)
            return self._decode_body(raw)
        raise AssertionError("unreachable")  # the loop either returns or raises

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        delay = self._backoff_base * (2 ** (attempt - 1))
        # Jitter spreads out the retries of concurrent callers hitting the same overloaded server.
        delay *= random.uniform(0.75, 1.0)
        if retry_after is not None:
            delay = max(delay, retry_after)
        return min(delay, self._max_backoff)

    def _send(self, method: str, url: str, data: bytes | None, *, timeout: float) -> bytes:
        """One HTTP exchange. Returns the 2xx body; raises _RetryableFailure or LLMError."""
        shown = _display_url(url)
        request = self._build_request(method, url, data)
        try:
            with self._opener.open(request, timeout=timeout) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            raise self._http_failure(exc, shown) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError):
                raise self._timeout_failure(shown, timeout) from None
            if isinstance(reason, ssl.SSLError):
                raise LLMError(
                    f"TLS error talking to LLM endpoint {shown} ({reason}); check the https URL and the "
                    f"server certificate, or use http:// for a local server"
                ) from None
            if isinstance(reason, ConnectionRefusedError):
                what = "connection refused"
            elif isinstance(reason, OSError) and reason.strerror:
                what = reason.strerror
            else:
                what = str(reason)
            raise _RetryableFailure(
                f"could not connect to LLM endpoint {shown}: {what}",
                f"Is the LLM server running? Set {ENV_BASE_URL} (or base_url under [llm]) to its address.",
            ) from None
        except TimeoutError:
            raise self._timeout_failure(shown, timeout) from None
        except (ConnectionError, http.client.HTTPException, OSError) as exc:
            raise _RetryableFailure(
                f"connection to LLM endpoint {shown} broke ({type(exc).__name__}: {self._redact(str(exc)) or 'no details'})",
                "Is the LLM server running and stable? Check its logs.",
            ) from None

    def _timeout_failure(self, shown: str, timeout: float) -> _RetryableFailure:
        return _RetryableFailure(
            f"LLM endpoint {shown} did not answer within {timeout:g}s",
            f"Is the server running and the model loaded? A slow model needs a larger timeout: "
            f"set {ENV_TIMEOUT} or timeout under [llm].",
        )

    def _http_failure(self, exc: urllib.error.HTTPError, shown: str) -> Exception:
        status = exc.code
        try:
            raw = exc.read(4096)
        except Exception:  # the body is only decoration for the message
            raw = b""
        finally:
            exc.close()
        detail = self._redact(_error_detail(raw))
        detail_part = f": {detail}" if detail else ""
        if status == 429 or 500 <= status <= 599:
            hint = (
                "The server is rate limiting; wait and try again." if status == 429
                else "The LLM server failed; check its logs and try again later."
            )
            return _RetryableFailure(
                f"LLM endpoint {shown} answered HTTP {status}{detail_part}",
                hint,
                retry_after=_retry_after_seconds(exc.headers.get("Retry-After") if exc.headers else None),
                status=status,
            )
        if 300 <= status < 400:
            location = exc.headers.get("Location", "?") if exc.headers else "?"
            message = (
                f"LLM endpoint {shown} redirected (HTTP {status}) to {_display_url(location)}; set base_url to "
                f"the final address (redirects are not followed so the API key is never sent elsewhere)"
            )
        elif status in (401, 403):
            fix = (
                f"check the API key ({ENV_API_KEY} or api_key under [llm])" if self.config.api_key
                else f"the server wants an API key: set {ENV_API_KEY} (or api_key under [llm])"
            )
            message = f"LLM endpoint {shown} refused the request with HTTP {status}{detail_part}; {fix}"
        elif status == 404:
            message = (
                f"LLM endpoint {shown} answered HTTP 404{detail_part}; check that base_url is the API root "
                f"(usually ending in /v1) and that model {self.config.model!r} exists on the server"
            )
        else:
            message = (
                f"LLM endpoint {shown} rejected the request with HTTP {status}{detail_part}; "
                f"check the model name ({self.config.model!r}) and the request options"
            )
        return LLMHTTPError(message, status=status, endpoint=shown)

    def _decode_body(self, raw: bytes) -> Any:
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise LLMError(
                f"LLM endpoint {self.endpoint} answered with a body that is not JSON (it began: "
                f"{self._snippet(raw.decode('utf-8', 'replace'))!r}); is base_url an OpenAI-compatible API root "
                f"(e.g. http://127.0.0.1:11434/v1) rather than a web page?"
            ) from None

    def _extract_content(self, payload: Any) -> str:
        def bad(why: str) -> LLMError:
            return LLMError(f"LLM endpoint {self.endpoint} answered, but not with a chat completion ({why})")

        if not isinstance(payload, dict):
            raise bad(f"expected a JSON object, got {type(payload).__name__}")
        if payload.get("error"):
            error = payload["error"]
            text = error.get("message") if isinstance(error, dict) else error
            raise LLMError(f"LLM endpoint {self.endpoint} reported an error: {self._redact(str(text))[:_ERROR_SNIPPET]}")
        choices = payload.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise bad("no choices")
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            raise bad("choices[0] has no message")
        content = message.get("content")
        if isinstance(content, list):  # content-parts form used by some servers
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        if not isinstance(content, str):
            raise LLMError(
                f"LLM endpoint {self.endpoint} returned no text content "
                f"(finish_reason={choice.get('finish_reason')!r}); the model may have refused or called a tool"
            )
        if choice.get("finish_reason") == "length":
            logger.warning("LLM reply from %s was cut off at max_tokens (finish_reason=length)", self.endpoint)
        return content


def _error_detail(raw: bytes) -> str:
    """Pull the human message out of an OpenAI-style error body, else the first bytes of the body."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        return " ".join(text.split())[:_ERROR_SNIPPET]
    if isinstance(parsed, dict):
        error = parsed.get("error", parsed.get("detail", parsed.get("message")))
        if isinstance(error, dict):
            error = error.get("message", error)
        if error:
            return str(error)[:_ERROR_SNIPPET]
    return text[:_ERROR_SNIPPET]


def _with_json_instruction(messages: list[dict[str, Any]], schema_hint: str | None) -> list[dict[str, Any]]:
    instruction = _JSON_INSTRUCTION
    if schema_hint:
        instruction += f"\nThe JSON must have this shape:\n{schema_hint}"
    # Merge into the leading system message: several chat templates accept only one,
    # and only at the start.
    if messages and messages[0].get("role") == "system":
        first = dict(messages[0])
        first["content"] = f"{first['content'].rstrip()}\n\n{instruction}"
        return [first, *messages[1:]]
    return [{"role": "system", "content": instruction}, *messages]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _parse_json_reply(text: str) -> dict[str, Any] | list[Any]:
    """Parse a model reply as a JSON object or array; raise ValueError saying why it is not one."""
    body = _THINK_RE.sub("", text).strip()
    fenced = _FENCE_RE.fullmatch(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body:
        raise ValueError("the reply is empty")
    value = json.loads(body, parse_constant=_reject_constant)
    if not isinstance(value, (dict, list)):
        raise ValueError(f"expected a JSON object or array, got a JSON {type(value).__name__}")
    return value


def get_client(config: LLMConfig | None = None) -> LLMClient | None:
    """Return a client for ``config``, or for :meth:`LLMConfig.from_env` when None.

    Returns None when no LLM is configured. A configured but invalid setup raises
    ``ValidationError`` rather than silently disabling the LLM.
    """
    if config is None:
        config = LLMConfig.from_env()
        if config is None:
            return None
    return LLMClient(config)


# --------------------------------------------------------------------------- fallback


T = TypeVar("T")


@dataclass(frozen=True)
class LLMResult(Generic[T]):
    """A value plus which path produced it: ``"llm"`` or ``"fallback"``; ``detail`` says why/which."""

    value: T
    path: Literal["llm", "fallback"]
    detail: str = ""

    def __post_init__(self) -> None:
        if self.path not in ("llm", "fallback"):
            raise ValidationError(f"LLMResult.path must be 'llm' or 'fallback', got {self.path!r}")

    @property
    def used_llm(self) -> bool:
        """True when the LLM produced the value."""
        return self.path == "llm"


def with_fallback(
    llm_fn: Callable[[LLMClient], T],
    fallback_fn: Callable[[], T],
    client: LLMClient | None,
) -> LLMResult[T]:
    """Run ``llm_fn(client)``; if there is no client or it raises ``LLMError``, run ``fallback_fn()``.

    The result's ``path`` says which one produced ``value`` and ``detail`` why
    (the model and endpoint, or the reason the LLM was not used). ``llm_fn`` should raise
    ``LLMError`` when the model's answer is unusable so that the fallback takes over; any
    other exception is a bug and propagates, as do exceptions from ``fallback_fn``.
    """
    if client is None:
        reason = f"no LLM configured; {_SETUP_HINT} to enable it"
        logger.debug("using fallback: %s", reason)
        return LLMResult(fallback_fn(), "fallback", reason)
    try:
        value = llm_fn(client)
    except LLMNotConfiguredError as exc:
        logger.debug("using fallback: %s", exc)
        return LLMResult(fallback_fn(), "fallback", f"LLM not configured: {exc}")
    except LLMError as exc:
        logger.warning("LLM call failed, using the fallback instead: %s", exc)
        return LLMResult(fallback_fn(), "fallback", f"LLM failed: {exc}")
    return LLMResult(value, "llm", f"model {client.config.model!r} at {client.endpoint}")
