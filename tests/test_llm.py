"""memory_core.language.llm against a real HTTP stand-in server on 127.0.0.1."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core.errors import LLMError, LLMNotConfiguredError, ValidationError
from memory_core.language.llm import LLMClient, LLMConfig, LLMHTTPError, LLMResult, get_client, with_fallback

try:
    from tests.llm_server import BROKEN_JSON, Reply, StandInLLM, closed_port_url, stand_in_llm
except ImportError:  # tests/ is not a package: pytest puts tests/ itself on sys.path
    from llm_server import BROKEN_JSON, Reply, StandInLLM, closed_port_url, stand_in_llm

SECRET = "sk-test-5ecr3t-DO-NOT-LEAK-0123456789"
ENV_VARS = (
    "MEMCTL_LLM_BASE_URL", "MEMCTL_LLM_MODEL", "MEMCTL_LLM_API_KEY", "MEMCTL_LLM_TIMEOUT",
    "MEMCTL_LLM_MAX_RETRIES", "MEMCTL_CONFIG", "OPENAI_BASE_URL", "OPENAI_API_KEY",
)


@pytest.fixture
def llm() -> Iterator[StandInLLM]:
    yield from stand_in_llm()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No LLM variables, and a HOME without a config file, so the developer's own setup cannot leak in."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def make_client(server: StandInLLM | None = None, *, base_url: str | None = None, **overrides: object) -> LLMClient:
    settings: dict = {"base_url": base_url or server.base_url, "model": "stand-in-model", "api_key": SECRET,
                      "timeout": 5, "max_retries": 2}
    settings.update(overrides)
    # Tiny backoff keeps retry tests fast; the backoff maths is not what they check.
    return LLMClient(LLMConfig(**settings), backoff_base=0.01)


# ---------------------------------------------------------------- chat


def test_chat_returns_reply_and_sends_openai_request(llm: StandInLLM) -> None:
    llm.script("hello there")
    client = make_client(llm)

    reply = client.chat([{"role": "user", "content": "hi"}], max_tokens=50)

    assert reply == "hello there"
    [request] = llm.requests
    assert request.method == "POST"
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.headers["content-type"] == "application/json"
    assert request.body["model"] == "stand-in-model"
    assert request.body["messages"] == [{"role": "user", "content": "hi"}]
    assert request.body["temperature"] == 0
    assert request.body["max_tokens"] == 50
    assert "response_format" not in request.body


def test_chat_without_key_sends_no_authorization(llm: StandInLLM) -> None:
    client = make_client(llm, api_key=None, temperature=0.7)
    assert client.chat([{"role": "user", "content": "ping"}], temperature=0.2) == "stand-in reply to: ping"
    [request] = llm.requests
    assert "authorization" not in request.headers
    assert request.body["temperature"] == 0.2


def test_chat_rejects_malformed_messages(llm: StandInLLM) -> None:
    client = make_client(llm)
    for bad in ([], "hi", [{"role": "user"}], [{"content": "x"}], ["hi"]):
        with pytest.raises(ValidationError):
            client.chat(bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="max_tokens"):
        client.chat([{"role": "user", "content": "x"}], max_tokens=0)
    assert llm.requests == []


def test_chat_non_json_body_is_a_clear_error(llm: StandInLLM) -> None:
    llm.script(Reply(raw_body=b"<html>web ui</html>"))
    with pytest.raises(LLMError, match="not JSON.*web ui"):
        make_client(llm).chat([{"role": "user", "content": "x"}])


# ---------------------------------------------------------------- chat_json


def test_chat_json_parses_object_and_asks_for_json(llm: StandInLLM) -> None:
    llm.script({"verdict": "keep", "score": 0.5})
    client = make_client(llm)

    value = client.chat_json(
        [{"role": "system", "content": "You judge conflicts."}, {"role": "user", "content": "A vs B"}],
        schema_hint='{"verdict": "keep|replace", "score": number}',
    )

    assert value == {"verdict": "keep", "score": 0.5}
    [request] = llm.requests
    assert request.body["response_format"] == {"type": "json_object"}
    system = request.messages[0]
    assert system["role"] == "system"
    assert system["content"].startswith("You judge conflicts.")
    assert "JSON" in system["content"] and '"verdict": "keep|replace"' in system["content"]
    assert len(request.messages) == 2  # merged into the existing system message, not added


def test_chat_json_adds_system_message_and_does_not_mutate_input(llm: StandInLLM) -> None:
    llm.script([1, 2, 3])
    messages = [{"role": "user", "content": "list"}]
    assert make_client(llm).chat_json(messages) == [1, 2, 3]
    assert messages == [{"role": "user", "content": "list"}]
    sent = llm.requests[0].messages
    assert [m["role"] for m in sent] == ["system", "user"]


@pytest.mark.parametrize(
    "reply",
    ['```json\n{"a": 1}\n```', '```\n{"a": 1}\n```', '  ```JSON {"a": 1}```  ', '<think>hmm</think>\n{"a": 1}'],
)
def test_chat_json_strips_fences(llm: StandInLLM, reply: str) -> None:
    llm.script(reply)
    assert make_client(llm).chat_json([{"role": "user", "content": "x"}]) == {"a": 1}
    assert len(llm.requests) == 1


def test_chat_json_repairs_once(llm: StandInLLM) -> None:
    llm.broken_json_once({"fixed": True})

    value = make_client(llm).chat_json([{"role": "user", "content": "judge"}])

    assert value == {"fixed": True}
    assert len(llm.requests) == 2
    repair = llm.requests[1].messages
    assert repair[-2] == {"role": "assistant", "content": BROKEN_JSON}
    assert repair[-1]["role"] == "user" and "not valid JSON" in repair[-1]["content"]
    assert repair[:-2] == llm.requests[0].messages


def test_chat_json_always_broken_raises_after_exactly_two_requests(llm: StandInLLM) -> None:
    garbage = "Sure! Here is the answer you wanted: " + "x" * 300 + "END-MARKER"
    llm.always_broken_json(garbage)

    with pytest.raises(LLMError) as info:
        make_client(llm).chat_json([{"role": "user", "content": "judge"}])

    assert len(llm.requests) == 2
    message = str(info.value)
    assert garbage[:200] in message
    assert "END-MARKER" not in message  # only the first 200 characters are quoted
    assert "repair" in message


def test_chat_json_rejects_scalars_and_nan(llm: StandInLLM) -> None:
    llm.always_broken_json('"just a string"')
    with pytest.raises(LLMError, match="object or array"):
        make_client(llm).chat_json([{"role": "user", "content": "x"}])
    llm.reset()
    llm.always_broken_json('{"a": NaN}')
    with pytest.raises(LLMError, match="NaN"):
        make_client(llm).chat_json([{"role": "user", "content": "x"}])


def test_chat_json_falls_back_when_server_rejects_response_format() -> None:
    with StandInLLM(reject_response_format=True) as llm:
        llm.script({"ok": 1}, {"ok": 2})
        client = make_client(llm)
        assert client.chat_json([{"role": "user", "content": "x"}]) == {"ok": 1}
        assert client.chat_json([{"role": "user", "content": "x"}]) == {"ok": 2}
        formats = ["response_format" in r.body for r in llm.requests]
    # first call: rejected with JSON mode, retried without; second call: straight without
    assert formats == [True, False, False]


# ---------------------------------------------------------------- failures and retries


def test_timeout_raises_within_bounded_time(llm: StandInLLM) -> None:
    llm.slow(2.0)
    client = make_client(llm, timeout=0.5, max_retries=1)

    started = time.monotonic()
    with pytest.raises(LLMError) as info:
        client.chat([{"role": "user", "content": "x"}])
    elapsed = time.monotonic() - started

    assert elapsed < 1.9  # two 0.5 s attempts plus a tiny backoff, never the server's 2 s
    assert len(llm.requests) == 2
    message = str(info.value)
    assert "0.5s" in message and client.endpoint in message and "2 attempts" in message


def test_http_500_then_success_is_retried(llm: StandInLLM) -> None:
    llm.fail_then_succeed(500, "recovered")
    assert make_client(llm).chat([{"role": "user", "content": "x"}]) == "recovered"
    assert len(llm.requests) == 2


def test_http_429_honours_retry_after(llm: StandInLLM) -> None:
    llm.script(Reply(status=429, headers={"Retry-After": "0.3"}), "after the wait")
    started = time.monotonic()
    assert make_client(llm).chat([{"role": "user", "content": "x"}]) == "after the wait"
    assert time.monotonic() - started >= 0.3
    assert len(llm.requests) == 2


def test_persistent_5xx_gives_up_after_max_retries(llm: StandInLLM) -> None:
    llm.always(Reply(status=503))
    with pytest.raises(LLMHTTPError, match="HTTP 503.*3 attempts") as info:
        make_client(llm, max_retries=2).chat([{"role": "user", "content": "x"}])
    assert info.value.status == 503
    assert len(llm.requests) == 3


def test_http_401_is_not_retried_and_says_what_to_fix(llm: StandInLLM) -> None:
    llm.unauthorized()
    with pytest.raises(LLMHTTPError) as info:
        make_client(llm).chat([{"role": "user", "content": "x"}])
    assert len(llm.requests) == 1
    assert info.value.status == 401
    message = str(info.value)
    assert "401" in message and "MEMCTL_LLM_API_KEY" in message and llm.base_url in message
    assert SECRET not in message


def test_server_requiring_key_accepts_bearer_and_refuses_others() -> None:
    with StandInLLM(api_key=SECRET) as llm:
        assert make_client(llm).chat([{"role": "user", "content": "x"}]).startswith("stand-in reply")
        with pytest.raises(LLMError, match="wants an API key"):
            make_client(llm, api_key=None).chat([{"role": "user", "content": "x"}])
        assert len(llm.requests) == 2


def test_http_404_hints_at_base_url(llm: StandInLLM) -> None:
    client = make_client(base_url=llm.base_url.removesuffix("/v1"))
    with pytest.raises(LLMHTTPError, match="404.*/v1"):
        client.chat([{"role": "user", "content": "x"}])
    assert len(llm.requests) == 1


def test_redirect_is_not_followed(llm: StandInLLM) -> None:
    llm.script(Reply(status=307, headers={"Location": "http://127.0.0.1:9/v1/chat/completions"}))
    with pytest.raises(LLMHTTPError, match="redirected"):
        make_client(llm).chat([{"role": "user", "content": "x"}])
    assert len(llm.requests) == 1


def test_endpoint_down_says_so() -> None:
    client = make_client(base_url=closed_port_url(), max_retries=1)
    started = time.monotonic()
    with pytest.raises(LLMError) as info:
        client.chat([{"role": "user", "content": "x"}])
    assert time.monotonic() - started < 3
    message = str(info.value)
    assert "could not connect" in message and "refused" in message
    assert client.endpoint in message
    assert "Is the LLM server running?" in message and "MEMCTL_LLM_BASE_URL" in message


def test_ping(llm: StandInLLM) -> None:
    assert make_client(llm).ping() is True
    assert llm.requests[-1].method == "GET" and llm.requests[-1].path == "/v1/models"
    assert make_client(base_url=closed_port_url()).ping() is False


# ---------------------------------------------------------------- secrecy


def test_key_masked_in_repr_and_str(llm: StandInLLM) -> None:
    config = LLMConfig(base_url=llm.base_url, model="m", api_key=SECRET)
    for text in (repr(config), str(config), repr(LLMClient(config)), f"{config}"):
        assert SECRET not in text
    assert "api_key='***'" in repr(config)
    assert "api_key=None" in repr(LLMConfig(base_url=llm.base_url, model="m"))


def test_key_never_logged(llm: StandInLLM, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    client = make_client(llm)
    llm.fail_then_succeed(500, "ok")
    client.chat([{"role": "user", "content": "x"}])
    llm.broken_json_once({"a": 1})
    client.chat_json([{"role": "user", "content": "x"}])
    llm.always(Reply(status=401, raw_body=f'{{"error": {{"message": "bad key {SECRET}"}}}}'.encode()))
    with pytest.raises(LLMError) as info:
        client.chat([{"role": "user", "content": "x"}])
    assert SECRET not in str(info.value)  # even when the server echoes it back
    with_fallback(lambda c: c.chat([{"role": "user", "content": "x"}]), lambda: "fb", client)
    make_client(base_url=closed_port_url(), max_retries=1).ping()

    # The key did travel, as a Bearer token...
    assert all(r.headers.get("authorization") == f"Bearer {SECRET}" for r in llm.requests)
    # ...but no log record mentions it or the header.
    llm_records = [r for r in caplog.records if r.name.startswith("memory_core.language.llm")]
    assert llm_records, "expected the client to log retries and fallbacks"
    for record in caplog.records:
        text = record.getMessage()
        assert SECRET not in text
        assert "Bearer" not in text and "Authorization" not in text


# ---------------------------------------------------------------- configuration


def test_config_validation_messages_say_what_to_fix() -> None:
    with pytest.raises(ValidationError, match="http:// or https://"):
        LLMConfig(base_url="ftp://host/v1", model="m")
    with pytest.raises(ValidationError, match="http:// or https://"):
        LLMConfig(base_url="127.0.0.1:11434/v1", model="m")
    with pytest.raises(ValidationError, match="API root"):
        LLMConfig(base_url="http://h/v1/chat/completions", model="m")
    with pytest.raises(ValidationError, match="model"):
        LLMConfig(base_url="http://h/v1", model=" ")
    for timeout in (0, -1, float("nan"), True, "30"):
        with pytest.raises(ValidationError, match="timeout"):
            LLMConfig(base_url="http://h/v1", model="m", timeout=timeout)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="max_retries"):
        LLMConfig(base_url="http://h/v1", model="m", max_retries=-1)
    with pytest.raises(ValidationError, match="temperature"):
        LLMConfig(base_url="http://h/v1", model="m", temperature=3)
    with pytest.raises(ValidationError, match="api_key") as info:
        LLMConfig(base_url="http://h/v1", model="m", api_key="sk-abc\ndef")
    assert "sk-abc" not in str(info.value)


def test_config_normalises() -> None:
    config = LLMConfig(base_url=" http://h:8080/v1/ ", model=" m ", api_key="sk-1\n", timeout=3)
    assert config.base_url == "http://h:8080/v1"
    assert config.model == "m"
    assert config.api_key == "sk-1"
    assert config.timeout == 3.0 and config.max_retries == 2 and config.temperature == 0.0
    assert LLMConfig(base_url="http://h/v1", model="m", api_key="  ").api_key is None


def test_from_env_none_when_unconfigured(clean_env: Path) -> None:
    assert LLMConfig.from_env() is None
    assert get_client() is None


def test_from_env_variables(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCTL_LLM_BASE_URL", "http://127.0.0.1:11434/v1/")
    monkeypatch.setenv("MEMCTL_LLM_MODEL", "llama3.1:8b")
    monkeypatch.setenv("MEMCTL_LLM_API_KEY", SECRET)
    monkeypatch.setenv("MEMCTL_LLM_TIMEOUT", "12.5")
    monkeypatch.setenv("MEMCTL_LLM_MAX_RETRIES", "0")
    assert LLMConfig.from_env() == LLMConfig(
        base_url="http://127.0.0.1:11434/v1", model="llama3.1:8b", api_key=SECRET, timeout=12.5, max_retries=0
    )
    client = get_client()
    assert isinstance(client, LLMClient) and client.config.model == "llama3.1:8b"


def test_from_env_openai_fallbacks(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.example.test/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    assert LLMConfig.from_env() is None  # no model: nothing to talk to
    monkeypatch.setenv("MEMCTL_LLM_MODEL", "gpt-x")
    config = LLMConfig.from_env()
    assert config is not None
    assert (config.base_url, config.api_key) == ("https://api.example.test/v1", "sk-openai")
    monkeypatch.setenv("MEMCTL_LLM_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("MEMCTL_LLM_API_KEY", "sk-memctl")
    config = LLMConfig.from_env()
    assert (config.base_url, config.api_key) == ("http://127.0.0.1:1/v1", "sk-memctl")


def test_from_env_partial_config_warns(clean_env: Path, monkeypatch: pytest.MonkeyPatch,
                                       caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("MEMCTL_LLM_BASE_URL", "http://127.0.0.1:11434/v1")
    with caplog.at_level(logging.WARNING, logger="memory_core.language.llm"):
        assert LLMConfig.from_env() is None
    assert any("MEMCTL_LLM_MODEL" in r.getMessage() and "no model" in r.getMessage() for r in caplog.records)


def test_from_env_bad_env_value(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCTL_LLM_BASE_URL", "http://127.0.0.1:11434/v1")
    monkeypatch.setenv("MEMCTL_LLM_MODEL", "m")
    monkeypatch.setenv("MEMCTL_LLM_TIMEOUT", "soon")
    with pytest.raises(ValidationError, match="MEMCTL_LLM_TIMEOUT"):
        LLMConfig.from_env()
    monkeypatch.setenv("MEMCTL_LLM_TIMEOUT", "0")
    with pytest.raises(ValidationError, match="timeout.*MEMCTL_LLM_TIMEOUT"):
        LLMConfig.from_env()
    monkeypatch.delenv("MEMCTL_LLM_TIMEOUT")
    monkeypatch.setenv("MEMCTL_LLM_BASE_URL", "localhost:11434")
    with pytest.raises(ValidationError, match="http://.*MEMCTL_LLM_BASE_URL"):
        LLMConfig.from_env()


def write_config(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")
    path.chmod(0o600)
    return path


def test_from_env_toml_file(clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_config(tmp_path / "config.toml", f"""
[llm]
base_url = "http://127.0.0.1:8080/v1"
model = "qwen2.5:7b"
api_key = "{SECRET}"
timeout = 45
""")
    config = LLMConfig.from_env(config_path=path)
    assert config == LLMConfig(base_url="http://127.0.0.1:8080/v1", model="qwen2.5:7b", api_key=SECRET, timeout=45)

    # MEMCTL_CONFIG names the file when no argument does; env vars override the file.
    monkeypatch.setenv("MEMCTL_CONFIG", str(path))
    monkeypatch.setenv("MEMCTL_LLM_MODEL", "override")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://ignored.example/v1")  # the file wins over OPENAI_*
    config = LLMConfig.from_env()
    assert (config.base_url, config.model, config.timeout) == ("http://127.0.0.1:8080/v1", "override", 45.0)


def test_from_env_default_file_location(clean_env: Path) -> None:
    write_config(clean_env / ".config" / "memory-console" / "config.toml",
                 '[llm]\nbase_url = "http://127.0.0.1:1234/v1"\nmodel = "m"\n')
    config = LLMConfig.from_env()
    assert config is not None and config.base_url == "http://127.0.0.1:1234/v1"


def test_from_env_file_without_llm_section(clean_env: Path, tmp_path: Path) -> None:
    path = write_config(tmp_path / "c.toml", '[dashboard]\nport = 8501\n')
    assert LLMConfig.from_env(config_path=path) is None


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("[llm\nmodel = 1", "not valid TOML"),
        ('[llm]\nbase_url = "http://h/v1"\nmodel = "m"\nbase-url = "x"', "unknown key.*base-url"),
        ('[llm]\nbase_url = "http://h/v1"\nmodel = 7', "model.*quoted string"),
        ('[llm]\nbase_url = "http://h/v1"\nmodel = "m"\ntimeout = "30"', "timeout.*number"),
        ('[llm]\nbase_url = "http://h/v1"\nmodel = "m"\ntimeout = -5', r"timeout.*\[llm\] in"),
        ('llm = "yes"', "must be a table"),
    ],
)
def test_from_env_bad_file(clean_env: Path, tmp_path: Path, body: str, match: str) -> None:
    path = write_config(tmp_path / "c.toml", body)
    with pytest.raises(ValidationError, match=match):
        LLMConfig.from_env(config_path=path)


def test_from_env_missing_explicit_file(clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValidationError, match="does not exist"):
        LLMConfig.from_env(config_path=tmp_path / "nope.toml")
    monkeypatch.setenv("MEMCTL_CONFIG", str(tmp_path / "nope.toml"))
    with pytest.raises(ValidationError, match="MEMCTL_CONFIG"):
        LLMConfig.from_env()


# ---------------------------------------------------------------- with_fallback


def judge(client: LLMClient) -> str:
    return client.chat_json([{"role": "user", "content": "which wins?"}])["winner"]


def test_with_fallback_uses_llm_when_it_works(llm: StandInLLM) -> None:
    llm.script({"winner": "B"})
    result = with_fallback(judge, lambda: "A (newest wins)", make_client(llm))
    assert result == LLMResult("B", "llm", result.detail)
    assert result.used_llm and "stand-in-model" in result.detail


def test_with_fallback_when_endpoint_down() -> None:
    client = make_client(base_url=closed_port_url(), max_retries=0)
    result = with_fallback(judge, lambda: "A (newest wins)", client)
    assert result.value == "A (newest wins)"
    assert result.path == "fallback" and not result.used_llm
    assert "could not connect" in result.detail and client.endpoint in result.detail


def test_with_fallback_when_unconfigured_or_garbage(llm: StandInLLM) -> None:
    result = with_fallback(judge, lambda: "A", None)
    assert (result.value, result.path) == ("A", "fallback")
    assert "no LLM configured" in result.detail and "MEMCTL_LLM_BASE_URL" in result.detail

    llm.always_broken_json()
    result = with_fallback(judge, lambda: "A", make_client(llm))
    assert result.path == "fallback" and "valid JSON" in result.detail

    def not_configured(_client: LLMClient) -> str:
        raise LLMNotConfiguredError("conflict judging needs a model")

    assert with_fallback(not_configured, lambda: "A", make_client(llm)).path == "fallback"


def test_with_fallback_lets_bugs_propagate(llm: StandInLLM) -> None:
    with pytest.raises(ZeroDivisionError):
        with_fallback(lambda c: 1 / 0, lambda: 0, make_client(llm))


def test_llm_result_rejects_unknown_path() -> None:
    with pytest.raises(ValidationError):
        LLMResult(1, "maybe")  # type: ignore[arg-type]
