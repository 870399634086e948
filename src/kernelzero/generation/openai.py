"""The OpenAI-compatible HTTP backend: async chat-completion requests with bounded concurrency, retries and timeouts.

Talks to anything that serves `POST {base_url}/chat/completions` (vLLM and SGLang servers, `kernelzero serve`, hosted
APIs). Stdlib only: a minimal HTTP/1.1 client on asyncio streams, one connection per request, so a deadline cancels
the request cleanly. Every request is bounded in time (`timeout_s` per attempt); transient failures (refused or
dropped connections, timeouts, HTTP 408/409/429/5xx) are retried `retries` times with jittered exponential backoff;
anything else (bad key, bad URL, bad request) fails at once with a one-line `GenerationError` that says what to check.
No HTTP proxy is used.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import ssl
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from kernelzero.generation.base import Chat, Completion, GenerationError, SamplingConfig, check_request

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class _Transient(GenerationError):
    """A failure worth retrying; surfaces as a plain GenerationError once the retries are spent."""


class OpenAIPolicy:
    """A model behind an OpenAI-compatible endpoint. `base_url` is the API root, e.g. `http://127.0.0.1:8000/v1`."""

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api_key: str | None = None,
        max_concurrency: int = 8,
        timeout_s: float = 300.0,
        retries: int = 3,
        backoff_s: float = 1.0,
        n_in_one_request: bool = True,
    ):
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise GenerationError(f"base URL must look like http://host:port/v1, got {base_url!r}")
        if max_concurrency < 1 or timeout_s <= 0 or retries < 0 or backoff_s < 0:
            raise ValueError("need max_concurrency >= 1, timeout_s > 0, retries >= 0 and backoff_s >= 0")
        self.name = model
        self.model = model
        self.url = base_url.rstrip("/") + ("/chat/completions" if parts.path.strip("/") else "/v1/chat/completions")
        self._host, self._tls = parts.hostname, parts.scheme == "https"
        self._port = parts.port or (443 if self._tls else 80)
        self._path = urlsplit(self.url).path
        self.api_key = api_key
        self.max_concurrency = max_concurrency
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.n_in_one_request = n_in_one_request  # False for servers that ignore `n` (then n requests of n=1)

    def generate(self, prompts: Sequence[Chat], n: int, sampling: SamplingConfig) -> list[list[Completion]]:
        """Blocking wrapper of `agenerate`; inside a running event loop, await `agenerate` instead."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.agenerate(prompts, n, sampling))
        raise GenerationError("OpenAIPolicy.generate() was called inside a running event loop; await agenerate()")

    async def agenerate(self, prompts: Sequence[Chat], n: int, sampling: SamplingConfig) -> list[list[Completion]]:
        """All requests run concurrently, at most `max_concurrency` in flight.

        The first hard failure cancels the rest.
        """
        check_request(prompts, n)
        limit = asyncio.Semaphore(self.max_concurrency)
        per_request = n if self.n_in_one_request else 1

        async def one(chat: Chat, k: int) -> list[Completion]:
            async with limit:
                return await self._complete(chat, k, sampling)

        jobs = [(i, one(chat, per_request)) for i, chat in enumerate(prompts) for _ in range(n // per_request)]
        results = await asyncio.gather(*(job for _, job in jobs))
        out: list[list[Completion]] = [[] for _ in prompts]
        for (i, _), completions in zip(jobs, results, strict=True):
            out[i].extend(completions)
        return out

    async def _complete(self, chat: Chat, n: int, sampling: SamplingConfig) -> list[Completion]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": chat,
            "n": n,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_new_tokens,
        }
        if sampling.seed is not None:
            payload["seed"] = sampling.seed
        if sampling.stop:
            payload["stop"] = list(sampling.stop)
        body = json.dumps(payload).encode()
        for attempt in range(self.retries + 1):
            try:
                status, data = await asyncio.wait_for(self._post(body), self.timeout_s)
                return self._completions(status, data, n)
            except TimeoutError:
                error: GenerationError = _Transient(
                    f"no answer from {self.url} within {self.timeout_s:g} s (timed out)"
                )
            except _Transient as e:
                error = e
            if attempt == self.retries:
                tries = f" after {self.retries + 1} attempts" if self.retries else ""
                raise GenerationError(str(error) + tries) from None
            delay = self.backoff_s * 2**attempt
            await asyncio.sleep(delay / 2 + random.uniform(0, delay / 2))
        raise AssertionError("unreachable")

    async def _post(self, body: bytes) -> tuple[int, bytes]:
        """One HTTP/1.1 POST on a fresh connection; returns (status, body). Connection failures are transient."""
        try:
            context = ssl.create_default_context() if self._tls else None
            reader, writer = await asyncio.open_connection(self._host, self._port, ssl=context)
        except socket.gaierror as e:
            raise GenerationError(f"cannot resolve host {self._host!r} of {self.url}: {e.strerror}") from None
        except ConnectionRefusedError:
            raise _Transient(f"cannot connect to {self.url}: connection refused (is the server running?)") from None
        except ssl.SSLError as e:
            raise GenerationError(f"TLS handshake with {self.url} failed: {e.reason}") from None
        except OSError as e:
            raise _Transient(f"cannot connect to {self.url}: {e.strerror or e}") from None
        try:
            headers = {
                "Host": f"{self._host}:{self._port}",
                "Content-Type": "application/json",
                "Content-Length": str(len(body)),
                "Accept": "application/json",
                "Connection": "close",
            }
            if self.api_key:
                headers["Authorization"] = f"Bearer {self.api_key}"
            head = f"POST {self._path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
            writer.write(head.encode("latin-1") + body)
            await writer.drain()
            return await _read_response(reader)
        except (ConnectionError, asyncio.IncompleteReadError) as e:
            raise _Transient(f"{self.url} dropped the connection: {type(e).__name__}") from None
        finally:
            writer.close()

    def _completions(self, status: int, data: bytes, n: int) -> list[Completion]:
        message = _error_message(data)
        if status in (401, 403):
            raise GenerationError(
                f"{self.url} refused the API key (HTTP {status}: {message}); set OPENAI_API_KEY to a valid key"
            )
        if status == 404:
            raise GenerationError(
                f"{self.url} answered HTTP 404 ({message}); check the base URL (the API root, usually ending in /v1) "
                f"and the model name {self.model!r}"
            )
        if status in RETRYABLE_STATUS:
            raise _Transient(f"{self.url} answered HTTP {status}: {message}")
        if status != 200:
            raise GenerationError(f"{self.url} rejected the request (HTTP {status}): {message}")
        try:
            choices = sorted(json.loads(data)["choices"], key=lambda c: c.get("index", 0))
            out = [
                Completion(text=c["message"].get("content") or "", finish_reason=c.get("finish_reason") or "stop")
                for c in choices
            ]
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise GenerationError(f"{self.url} returned a body that is not a chat completion ({e!r})") from None
        if len(out) != n:
            raise GenerationError(
                f"{self.url} returned {len(out)} choices for n={n}; if the server ignores n, use n_in_one_request=False"
            )
        return out


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """Status and body of one HTTP/1.1 response (Content-Length, chunked, or read to close)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        raise _Transient(f"not an HTTP response: {lines[0][:80]!r}") from None
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks = []
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
        return status, b"".join(chunks)
    if "content-length" in headers:
        return status, await reader.readexactly(int(headers["content-length"]))
    return status, await reader.read()


def _error_message(data: bytes) -> str:
    """The server's own error text, from OpenAI's `{"error": {"message": ...}}` shape or the raw body (clipped)."""
    try:
        err = json.loads(data).get("error")
        text = err.get("message") if isinstance(err, dict) else err
    except (ValueError, AttributeError):
        text = None
    text = text or data.decode("utf-8", errors="replace") or "no body"
    return " ".join(str(text).split())[:300]
