"""The OpenAI-compatible client against real servers on loopback: `kernelzero serve` in a subprocess for the
protocol, and small socket servers in threads for the failures a real server cannot be made to show on demand
(silence, 503 then success, a wrong number of choices)."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kernelzero.generation import GenerationError, SamplingConfig
from kernelzero.generation.openai import OpenAIPolicy

KEY = "test-key"
CHATS = [
    [{"role": "system", "content": "You write kernels."}, {"role": "user", "content": "Fuse add and relu."}],
    [{"role": "user", "content": "Hello"}],
    [{"role": "user", "content": "Write a softmax."}],
]
SAMPLING = SamplingConfig(max_new_tokens=16, seed=0)


@pytest.fixture(scope="module")
def server_url(tiny_model_dir: Path) -> Iterator[str]:
    """`kernelzero serve` on 127.0.0.1, a free port, the tiny model, requiring an API key."""
    src = str(Path(__file__).parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    args = ["serve", "--model", str(tiny_model_dir), "--port", "0", "--api-key", KEY, "--device", "cpu"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelzero.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
    try:
        ready = lines.get(timeout=120)
        assert ready.startswith("kernelzero serve: tiny"), ready + proc.stderr.read()
        yield ready.split(" on ")[1].strip()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def local_policy(tiny_model_dir: Path):
    from kernelzero.generation.hf import HFPolicy

    return HFPolicy(tiny_model_dir, device="cpu")


def test_n_completions_per_prompt_match_the_local_backend(server_url, local_policy):
    client = OpenAIPolicy("tiny", server_url, api_key=KEY, max_concurrency=2)
    out = client.generate(CHATS, n=3, sampling=SAMPLING)
    assert [len(row) for row in out] == [3, 3, 3]
    # The server seeds each request, so every prompt's completions equal a local run of that prompt alone: this
    # checks the order of choices and of prompts across concurrent requests.
    for chat, row in zip(CHATS, out, strict=True):
        local = local_policy.generate([chat], n=3, sampling=SAMPLING)[0]
        assert [(c.text, c.finish_reason) for c in row] == [(c.text, c.finish_reason) for c in local]
    assert len({c.text for c in out[0]}) > 1


def test_one_request_per_sample_when_the_server_ignores_n(server_url):
    client = OpenAIPolicy("tiny", server_url, api_key=KEY, n_in_one_request=False)
    out = client.generate(CHATS[:1], n=3, sampling=SamplingConfig(max_new_tokens=8, seed=0))
    assert len(out[0]) == 3 and len({c.text for c in out[0]}) == 1  # same seed, n=1 each: identical samples


def test_agenerate_inside_an_event_loop(server_url):
    client = OpenAIPolicy("tiny", server_url, api_key=KEY)

    async def main():
        with pytest.raises(GenerationError, match="inside a running event loop; await agenerate"):
            client.generate(CHATS[:1], n=1, sampling=SAMPLING)
        return await client.agenerate(CHATS[:2], n=2, sampling=SAMPLING)

    assert [len(row) for row in asyncio.run(main())] == [2, 2]


def test_wrong_key_is_refused_without_retrying(server_url):
    client = OpenAIPolicy("tiny", server_url, api_key="wrong", backoff_s=30)  # a retry would hang this test
    with pytest.raises(
        GenerationError, match=r"refused the API key \(HTTP 401: incorrect API key provided\); set OPENAI_API_KEY"
    ):
        client.generate(CHATS[:1], n=1, sampling=SAMPLING)


def test_unknown_model_and_bad_path_name_what_to_check(server_url):
    client = OpenAIPolicy("gpt-9", server_url, api_key=KEY)
    with pytest.raises(GenerationError, match=r"HTTP 404 \(the model 'gpt-9' does not exist\); check the base URL"):
        client.generate(CHATS[:1], n=1, sampling=SAMPLING)
    bad_path = OpenAIPolicy("tiny", server_url.replace("/v1", "/api"), api_key=KEY)
    with pytest.raises(GenerationError, match=r"/api/chat/completions answered HTTP 404 \(no route"):
        bad_path.generate(CHATS[:1], n=1, sampling=SAMPLING)


def test_server_rejects_bad_requests_with_the_field(server_url):
    client = OpenAIPolicy("tiny", server_url, api_key=KEY)
    with pytest.raises(GenerationError, match=r"rejected the request \(HTTP 400\): n must be an integer in 1..64"):
        client.generate(CHATS[:1], n=65, sampling=SAMPLING)


def test_malformed_base_url():
    with pytest.raises(GenerationError, match="base URL must look like http://host:port/v1, got 'localhost:8000'"):
        OpenAIPolicy("tiny", "localhost:8000")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_refused_connection_is_retried_then_reported():
    port = free_port()  # bound then closed: nothing listens there
    client = OpenAIPolicy("tiny", f"http://127.0.0.1:{port}/v1", retries=1, backoff_s=0.01)
    with pytest.raises(GenerationError) as e:
        client.generate(CHATS[:1], n=1, sampling=SAMPLING)
    assert str(e.value) == (
        f"cannot connect to http://127.0.0.1:{port}/v1/chat/completions: connection refused (is the server running?)"
        " after 2 attempts"
    )


def test_silent_server_times_out_on_every_attempt():
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def accept_and_say_nothing():
        for _ in range(2):
            conn, _ = listener.accept()
            accepted.append(conn)  # kept open, never answered

    thread = threading.Thread(target=accept_and_say_nothing, daemon=True)
    thread.start()
    port = listener.getsockname()[1]
    client = OpenAIPolicy("tiny", f"http://127.0.0.1:{port}/v1", timeout_s=0.5, retries=1, backoff_s=0.01)
    try:
        with pytest.raises(GenerationError, match=r"no answer from .* within 0.5 s \(timed out\) after 2 attempts"):
            client.generate(CHATS[:1], n=1, sampling=SAMPLING)
        thread.join(timeout=5)
        assert len(accepted) == 2
    finally:
        for conn in accepted:
            conn.close()
        listener.close()


class ScriptedServer:
    """A loopback HTTP server that answers POSTs from a list of (status, body) and records each request body."""

    def __init__(self, answers: list[tuple[int, dict]]):
        self.answers, self.requests = list(answers), []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                outer.requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                status, body = outer.answers.pop(0)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def choices(*texts: str) -> dict:
    return {"choices": [{"index": i, "message": {"content": t}, "finish_reason": "stop"} for i, t in enumerate(texts)]}


def test_transient_server_error_is_retried():
    server = ScriptedServer([(503, {"error": {"message": "overloaded"}}), (200, choices("b", "a"))])
    try:
        out = OpenAIPolicy("m", server.url, retries=2, backoff_s=0.01).generate(CHATS[:1], n=2, sampling=SAMPLING)
    finally:
        server.close()
    assert [c.text for c in out[0]] == ["b", "a"]
    assert len(server.requests) == 2
    assert server.requests[0] == {
        "model": "m",
        "messages": CHATS[0],
        "n": 2,
        "temperature": 1.0,
        "top_p": 1.0,
        "max_tokens": 16,
        "seed": 0,
    }


def test_persistent_server_error_is_reported_with_its_message():
    server = ScriptedServer([(503, {"error": {"message": "overloaded"}})] * 2)
    try:
        with pytest.raises(GenerationError, match=r"answered HTTP 503: overloaded after 2 attempts"):
            OpenAIPolicy("m", server.url, retries=1, backoff_s=0.01).generate(CHATS[:1], n=1, sampling=SAMPLING)
    finally:
        server.close()


def test_wrong_number_of_choices_points_at_n_in_one_request():
    server = ScriptedServer([(200, choices("only one"))])
    try:
        with pytest.raises(GenerationError, match="returned 1 choices for n=3; .* use n_in_one_request=False"):
            OpenAIPolicy("m", server.url).generate(CHATS[:1], n=3, sampling=SAMPLING)
    finally:
        server.close()


def test_body_that_is_not_a_chat_completion():
    server = ScriptedServer([(200, {"data": []})])
    try:
        with pytest.raises(GenerationError, match="returned a body that is not a chat completion"):
            OpenAIPolicy("m", server.url).generate(CHATS[:1], n=1, sampling=SAMPLING)
    finally:
        server.close()
