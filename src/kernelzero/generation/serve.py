"""A small OpenAI-compatible server: `POST /v1/chat/completions` (n >= 1, no streaming) over any local policy.

It lets every OpenAI client (ours included) talk to a local model, and it is what the HTTP backend is tested
against. Stdlib `ThreadingHTTPServer`; requests are served one generation at a time (the model is not re-entrant),
so concurrency here is queueing, not batching: for throughput use vLLM's server. It binds to 127.0.0.1 unless told
otherwise, and with `api_key` set it answers 401 to requests without `Authorization: Bearer <key>`, as OpenAI does.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kernelzero.generation.base import Policy, SamplingConfig

log = logging.getLogger(__name__)

MAX_N = 64
MAX_BODY_BYTES = 8 << 20


class _BadRequest(Exception):
    def __init__(self, status: int, message: str, code: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


def make_server(
    policy: Policy, host: str = "127.0.0.1", port: int = 0, *, api_key: str | None = None, served_name: str = "tiny"
) -> ThreadingHTTPServer:
    """A server bound to (host, port) (port 0 picks a free one: read `server.server_address`). Call serve_forever()."""
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": served_name, "object": "model"}]})
            elif self.path == "/health":
                self._send(200, {"status": "ok"})
            else:
                self._error(_BadRequest(404, f"no route {self.path}", "not_found"))

        def do_POST(self) -> None:
            try:
                if self.path.rstrip("/") != "/v1/chat/completions":
                    raise _BadRequest(
                        404, f"no route {self.path}; this server serves /v1/chat/completions", "not_found"
                    )
                if api_key is not None and self.headers.get("Authorization") != f"Bearer {api_key}":
                    raise _BadRequest(401, "incorrect API key provided", "invalid_api_key")
                request = self._json_body()
                if request.get("model") != served_name:
                    raise _BadRequest(404, f"the model {request.get('model')!r} does not exist", "model_not_found")
                chat, n, sampling = _parse_request(request)
                with lock:
                    completions = policy.generate([chat], n, sampling)[0]
            except _BadRequest as e:
                self._error(e)
                return
            except Exception as e:  # the server boundary: one bad request must not stop the server
                log.exception("generation failed")
                self._error(_BadRequest(500, f"generation failed: {type(e).__name__}: {e}", "server_error"))
                return
            choices = [
                {
                    "index": j,
                    "message": {"role": "assistant", "content": c.text},
                    "finish_reason": c.finish_reason,
                }
                for j, c in enumerate(completions)
            ]
            usage = sum(c.tokens or 0 for c in completions)
            self._send(
                200,
                {
                    "id": f"chatcmpl-{uuid.uuid4().hex}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": served_name,
                    "choices": choices,
                    "usage": {"completion_tokens": usage},
                },
            )

        def _json_body(self) -> dict[str, Any]:
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 < length <= MAX_BODY_BYTES:
                raise _BadRequest(400, f"request body must be 1..{MAX_BODY_BYTES} bytes of JSON, got {length}")
            try:
                body = json.loads(self.rfile.read(length))
            except ValueError as e:
                raise _BadRequest(400, f"request body is not JSON: {e}") from None
            if not isinstance(body, dict):
                raise _BadRequest(400, "request body must be a JSON object")
            return body

        def _error(self, e: _BadRequest) -> None:
            self._send(e.status, {"error": {"message": e.message, "type": "invalid_request_error", "code": e.code}})

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
            self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:  # the stdlib names the argument `format`
            log.info("%s %s", self.address_string(), format % args)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def _parse_request(request: dict[str, Any]) -> tuple[list[dict[str, str]], int, SamplingConfig]:
    """The chat, n and sampling settings of a chat-completion request; `_BadRequest` names the bad field."""
    if request.get("stream"):
        raise _BadRequest(400, "stream=true is not supported by this server")
    chat = request.get("messages")
    if not isinstance(chat, list) or not chat:
        raise _BadRequest(400, "messages must be a non-empty list")
    for m in chat:
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            raise _BadRequest(400, "each message must be an object with string 'role' and 'content'")
    n = request.get("n", 1)
    if not isinstance(n, int) or not 1 <= n <= MAX_N:
        raise _BadRequest(400, f"n must be an integer in 1..{MAX_N}, got {n!r}")
    stop = request.get("stop") or ()
    try:
        sampling = SamplingConfig(
            temperature=float(request.get("temperature", 1.0)),
            top_p=float(request.get("top_p", 1.0)),
            max_new_tokens=int(request.get("max_completion_tokens") or request.get("max_tokens") or 256),
            seed=request.get("seed"),
            stop=(stop,) if isinstance(stop, str) else tuple(stop),
        )
    except (TypeError, ValueError) as e:
        raise _BadRequest(400, str(e)) from None
    return [{"role": m["role"], "content": m["content"]} for m in chat], n, sampling
