"""The one module that imports `anthropic`: Messages API streaming, retries and error translation.

Retries, and who does them:
  * the SDK retries a request that failed *before* the stream began — 408/409/429/5xx/529 and
    connection errors — `max_retries` times with exponential backoff, honouring `retry-after`;
    a middleware only watches those attempts to tell the user ("rate limited, retrying in 2s") and
    refuses to sit out a `retry-after` longer than `MAX_RETRY_AFTER` seconds;
  * the SDK does *not* retry a stream that dies half-way (dropped connection, an `overloaded_error`
    event, a body that ends before `message_stop`): this module restarts the request itself,
    `MAX_STREAM_RESTARTS` times with backoff, and tells the sink so partial text can be discarded.
Everything else becomes an `AgentError` whose message says what the user can do.

Credentials: the key comes from `ANTHROPIC_API_KEY` or the *user* config (`AgentSettings.api_key`;
the config loader ignores it in project files), is handed to the SDK explicitly (so the SDK never
goes looking in profiles) and appears in no message, log line or saved request.
"""

from __future__ import annotations

import asyncio
import contextvars
import ipaddress
import logging
import os
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anthropic
import httpx2

from tether.agent.model import ModelRequest, ModelResponse, StreamEvent, StreamSink, Usage
from tether.core.config import AgentSettings, user_config_path
from tether.errors import AgentError

log = logging.getLogger(__name__)

MAX_STREAM_RESTARTS = 2
MAX_RETRY_AFTER = 60.0
OFFLINE_KEY = "tether-offline-no-key"
DEFAULT_TIMEOUT = 600.0
_RETRYABLE_EVENT_TYPES = {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}

_current_sink: contextvars.ContextVar[StreamSink | None] = contextvars.ContextVar("tether_sink", default=None)


class ApiFailure(AgentError):
    """An API failure with its HTTP status (None for connection problems) and retry hint."""

    def __init__(self, message: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class _WaitTooLong(Exception):
    """Raised by the middleware: the API asked for a wait longer than we will sit through."""

    def __init__(self, status: int, seconds: float) -> None:
        super().__init__(f"retry-after {seconds:g}s")
        self.status = status
        self.seconds = seconds


class _StreamBroke(Exception):
    """The stream started but did not finish; safe to send the same request again."""


@dataclass(frozen=True)
class Endpoint:
    """Where requests go and with which key; `repr` never shows the key."""

    base_url: str | None
    api_key: str
    offline: bool  # a loopback URL: the local offline server (or a local proxy)
    placeholder_key: bool = False  # no real key exists: nothing secret to protect

    def __repr__(self) -> str:
        return f"Endpoint(base_url={self.base_url!r}, offline={self.offline})"

    @property
    def shown_url(self) -> str:
        return self.base_url or "https://api.anthropic.com"


def resolve_endpoint(settings: AgentSettings, environ: Mapping[str, str] | None = None) -> Endpoint:
    """Key and base URL from the environment, else the user config; never from a project file.

    Without a key, only a loopback base URL (the offline server) is accepted: it gets a
    placeholder key, so no real secret is ever needed — or sent — offline.
    """
    env = os.environ if environ is None else environ
    base_url = env.get("ANTHROPIC_BASE_URL") or settings.base_url or None
    key = env.get("ANTHROPIC_API_KEY") or settings.api_key or None
    offline = base_url is not None and _is_loopback(base_url)
    if key is None:
        if offline:
            return Endpoint(base_url, OFFLINE_KEY, True, placeholder_key=True)
        raise AgentError(
            "no Anthropic API key: set ANTHROPIC_API_KEY in the environment, or `api_key` under [agent] "
            f"in your user config ({user_config_path()}). To work offline, start `tether fake-api --script "
            "FILE` and set ANTHROPIC_BASE_URL to the URL it prints."
        )
    return Endpoint(base_url, key, offline)


def _is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class AnthropicModelClient:
    """`ModelClient` over `anthropic.AsyncAnthropic` with streaming."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        max_retries: int = 2,
        timeout: float = DEFAULT_TIMEOUT,
        stream_restarts: int = MAX_STREAM_RESTARTS,
        backoff: float = 0.5,
    ) -> None:
        self.endpoint = endpoint
        self.max_retries = max_retries
        self.stream_restarts = stream_restarts
        self.backoff = backoff
        self.timeout = timeout
        self._client: anthropic.AsyncAnthropic | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _sdk(self) -> anthropic.AsyncAnthropic:
        """The SDK client for the running event loop.

        Its connection pool belongs to the loop that opened it: reusing it from another loop (two
        `asyncio.run` calls, a restarted server loop) fails mid-request and makes the SDK re-send.
        """
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = anthropic.AsyncAnthropic(
                api_key=self.endpoint.api_key,
                base_url=self.endpoint.base_url,
                max_retries=self.max_retries,
                timeout=httpx2.Timeout(self.timeout, connect=10.0),
                middleware=[self._watch_attempt],
            )
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        if self._client is not None and self._loop is asyncio.get_running_loop():
            await self._client.close()
        self._client = None
        self._loop = None

    async def stream(self, request: ModelRequest, sink: StreamSink) -> ModelResponse:
        token = _current_sink.set(sink)
        try:
            attempt = 0
            while True:
                try:
                    return await self._stream_once(request, sink)
                except _StreamBroke as exc:
                    if attempt >= self.stream_restarts:
                        raise ApiFailure(
                            f"the connection to {self.endpoint.shown_url} kept dropping mid-response "
                            f"({attempt + 1} attempts; last: {exc}). "
                            "Check your network or proxy and try again.",
                        ) from exc
                    delay = self.backoff * (2**attempt) * (1 - 0.25 * random.random())
                    attempt += 1
                    sink(StreamEvent("restart", f"{exc}; retrying in {delay:.1f}s", {"delay": delay}))
                    await asyncio.sleep(delay)
        finally:
            _current_sink.reset(token)

    async def _stream_once(self, request: ModelRequest, sink: StreamSink) -> ModelResponse:
        kwargs: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": request.messages,
        }
        if request.tools:
            kwargs["tools"] = request.tools
        if request.system:
            kwargs["system"] = request.system
        if request.temperature is not None:
            # Not a named parameter in this SDK (newer models reject non-default sampling): body only.
            kwargs["extra_body"] = {"temperature": request.temperature}
        started = False
        try:
            async with self._sdk().messages.stream(**kwargs) as stream:
                started = True
                async for event in stream:
                    _forward(event, sink)
                message = await stream.get_final_message()
        except _WaitTooLong as exc:
            raise ApiFailure(
                _wait_message(exc.status, exc.seconds), status=exc.status, retry_after=exc.seconds
            ) from None
        except anthropic.APIStatusError as exc:
            if started and (exc.type or "") in _RETRYABLE_EVENT_TYPES:
                raise _StreamBroke(f"the API sent {exc.type} mid-response") from exc
            raise self._translate(exc, request.model) from None
        except (anthropic.APIConnectionError, httpx2.TransportError) as exc:
            if started:
                raise _StreamBroke(f"connection dropped mid-response ({type(exc).__name__})") from exc
            raise self._translate(exc, request.model) from None
        except anthropic.AnthropicError as exc:
            raise ApiFailure(f"the Anthropic client failed: {exc}") from None
        if message.stop_reason is None:
            raise _StreamBroke("the response ended before message_stop")
        return ModelResponse(
            id=message.id,
            model=message.model,
            content=[_block_json(block) for block in message.content],
            stop_reason=message.stop_reason,
            usage=Usage(
                input_tokens=message.usage.input_tokens or 0,
                output_tokens=message.usage.output_tokens or 0,
                cache_creation_input_tokens=message.usage.cache_creation_input_tokens or 0,
                cache_read_input_tokens=message.usage.cache_read_input_tokens or 0,
            ),
        )

    async def _watch_attempt(self, request: Any, call_next: Any) -> Any:
        """Runs inside the SDK's retry loop, once per attempt: report retries, refuse long waits."""
        response = await call_next(request)
        status = int(response.status_code)
        if status < 400 or (status not in (408, 409, 429) and status < 500):
            return response
        if response.headers.get("x-should-retry") == "false":
            return response
        wait = _retry_after(response.headers)
        if wait is not None and wait > MAX_RETRY_AFTER:
            await response.http_response.aclose()
            raise _WaitTooLong(status, wait)
        if request.retries_taken < self.max_retries:
            sink = _current_sink.get()
            if sink is not None:
                shown = f"{wait:g}s" if wait is not None else "a moment"
                sink(
                    StreamEvent(
                        "retry",
                        f"{_status_name(status)} (HTTP {status}); retrying in {shown} "
                        f"(attempt {request.retries_taken + 2} of {self.max_retries + 1})",
                        {"status": status, "retry_after": wait},
                    )
                )
        return response

    def _translate(self, exc: Exception, model: str) -> ApiFailure:
        url = self.endpoint.shown_url
        tries = self.max_retries + 1
        if isinstance(exc, anthropic.APITimeoutError):
            return ApiFailure(
                f"the request to {url} timed out ({tries} attempts). The API may be slow or unreachable: "
                "try again, or check your network and ANTHROPIC_BASE_URL."
            )
        if isinstance(exc, anthropic.APIConnectionError | httpx2.TransportError):
            hint = (
                "is the offline server (`tether fake-api`) still running?"
                if self.endpoint.offline
                else "check your network, proxy and ANTHROPIC_BASE_URL."
            )
            return ApiFailure(f"could not reach {url} ({tries} attempts): {hint}")
        if not isinstance(exc, anthropic.APIStatusError):
            return ApiFailure(f"the Anthropic API call failed: {exc}")
        status = exc.status_code
        detail = exc.api_message or ""
        wait = _retry_after(exc.response.headers)
        if status == 401:
            text = (
                "the API key was rejected (HTTP 401 authentication_error). Set a valid key in "
                f"ANTHROPIC_API_KEY or under [agent] api_key in {user_config_path()}."
            )
        elif status == 403:
            text = (
                f"this API key may not use {model} (HTTP 403 permission_error: {detail}). Pick another model "
                "with --model, or check the key's workspace and permissions in the Anthropic console."
            )
        elif status == 404:
            text = f"not found (HTTP 404: {detail}). Is the model id {model!r} right? Try --model."
        elif status == 413:
            text = "the request is too large (HTTP 413). Start a new conversation or read smaller files."
        elif status == 429:
            text = _wait_message(429, wait) + f" Gave up after {tries} attempts."
        elif status == 529:
            text = (
                f"the Anthropic API is overloaded (HTTP 529) and stayed so for {tries} attempts. "
                "Wait a minute and try again."
            )
        elif status >= 500:
            text = (
                f"the Anthropic API had an internal error (HTTP {status}: {detail}) on {tries} attempts. "
                "Try again shortly; if it persists, check status.anthropic.com."
            )
        elif status == 400:
            text = f"the API rejected the request (HTTP 400 invalid_request_error): {detail}"
        else:
            text = f"the API answered HTTP {status}: {detail or exc.message}"
        return ApiFailure(text, status=status, retry_after=wait)


def _wait_message(status: int, seconds: float | None) -> str:
    what = "rate limited (HTTP 429)" if status == 429 else f"asked to wait (HTTP {status})"
    if seconds is None:
        return f"the API {what}. Wait a little and try again, or lower your request rate."
    if seconds > MAX_RETRY_AFTER:
        return (
            f"the API {what} and asks to wait {seconds:g}s (more than Tether waits, {MAX_RETRY_AFTER:g}s). "
            f"Try again after that, or check your usage limits in the Anthropic console."
        )
    return f"the API {what}; it asked to wait {seconds:g}s. Try again after that."


def _status_name(status: int) -> str:
    return {408: "request timeout", 409: "conflict", 429: "rate limited", 529: "API overloaded"}.get(
        status, "server error"
    )


def _retry_after(headers: Any) -> float | None:
    """The wait the API asked for, in seconds (`retry-after-ms` preferred, then `retry-after`)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) * scale
        except ValueError:
            continue
    return None


def _forward(event: Any, sink: StreamSink) -> None:
    kind = getattr(event, "type", "")
    if kind == "text":
        sink(StreamEvent("text", event.text))
    elif kind == "thinking":
        sink(StreamEvent("thinking", event.thinking))
    elif kind == "content_block_start" and getattr(event.content_block, "type", "") == "tool_use":
        block = event.content_block
        sink(StreamEvent("tool_use_start", block.name, {"id": block.id, "name": block.name}))


_KEEP = {
    "text": ("type", "text", "citations"),
    "tool_use": ("type", "id", "name", "input"),
    "thinking": ("type", "thinking", "signature"),
    "redacted_thinking": ("type", "data"),
}


def _block_json(block: Any) -> dict[str, Any]:
    """The block as the API wants it back: known fields only, no helper-added ones, no nulls."""
    data: dict[str, Any] = block.to_dict(exclude_none=True)
    keep = _KEEP.get(str(data.get("type")))
    if keep is None:
        data.pop("parsed_output", None)
        return data
    return {k: data[k] for k in keep if k in data}


def make_client(
    settings: AgentSettings, environ: Mapping[str, str] | None = None, **options: Any
) -> AnthropicModelClient:
    """The production client for these settings (raises AgentError when no key is available)."""
    return AnthropicModelClient(resolve_endpoint(settings, environ), **options)
