"""A fake OpenAI-compatible server (vLLM, llama.cpp server) on loopback: /v1/models, streamed
/v1/chat/completions (SSE), honouring max_tokens with finish_reason "length", and /v1/embeddings (hashed bags
of words, as the fake Ollama's, per embedding model and dimension). Records every request.
Failures on demand: an HTTP error status, an error event or a dropped connection mid-stream, a delay, an
endless stream that ignores max_tokens (dripped, padded), the interrupting server (`interrupting`), and any
path's `Faults` (as the fake Ollama's)."""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from typing import Any

from tests.fake_ollama import Faults, JsonHandler, hashed_embedding, mangled, serve_on_loopback, stop_server


class FakeOpenAI:
    def __init__(self, models: tuple[str, ...] = ("served-model",)) -> None:
        self.models = models
        self.answer = "The pump starts at 3 bar [1]."
        self.responder: Callable[[dict[str, Any]], str] | None = None   # the answer per request, when set
        self.status = 200                   # non-200: answer {"error": {"message": error}} with this code
        self.error = "GPU fell over"
        self.error_after: int | None = None  # send an error event after this many pieces and stop
        self.drop_after: int | None = None   # close the connection after this many pieces
        self.cut_next: list[int] = []        # cut the next requests' streams after this many pieces, one each
        self.delay = 0.0                     # seconds before the answer starts
        # Hostile on demand: ignore max_tokens and repeat the answer's words forever, a piece every drip_s
        # seconds, each chunk padded with this many bytes; `sent` counts the bytes that went out.
        self.endless = False
        self.drip_s = 0.0
        self.padding = 0
        self.sent = 0
        self.hung_up = threading.Event()     # set when the client closed an endless stream
        # llama-cpp-python's server with interrupt_requests (its default): one request is answered at a time;
        # after each piece it sends, a stream that sees another request waiting sends "data: [DONE]" with no
        # final frame (no finish_reason) and ends (llama_cpp/server/app.py, get_event_publisher and its two
        # locks). `piece_s` is the time a piece takes to generate; `interrupted` counts the streams cut.
        self.interrupting = False
        self.piece_s = 0.0
        self.interrupted = 0
        self.served = 0                      # streams that ended with their final frame
        self.open_at_arrival: list[int] = []  # per chat request: how many others were open when it arrived
        self._open = 0
        self._count = threading.Lock()
        self._outer = threading.Lock()       # held by a request waiting for the model
        self._inner = threading.Lock()       # held by the request the model is answering
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str] = []  # every request's Authorization header ("" without one)
        # /v1/embeddings: the embedding models served and their dimensions; the next `embed_drops` requests are
        # dropped without a reply; `per_token` answers each text with one vector per word, as llama-cpp-python's
        # server does for a model it does not pool.
        self.embed_models: dict[str, int] = {"embed-model": 48}
        self.embed_drops = 0
        self.per_token = False
        self.faults = Faults()               # a hostile server on demand, per path (`tests.fake_ollama.Fault`)
        self._server: ThreadingHTTPServer | None = None
        self.url = ""

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(JsonHandler):
            faults = fake.faults

            def do_GET(self) -> None:
                fake.authorizations.append(self.headers.get("Authorization", ""))
                if self.hostile():
                    return None
                if self.path == "/v1/models":
                    return self._json({"object": "list", "data": [{"id": m, "object": "model"} for m in fake.models]})
                return self._json({"error": {"message": "not found"}}, 404)

            def do_POST(self) -> None:
                fake.authorizations.append(self.headers.get("Authorization", ""))
                with fake._count:
                    fake.open_at_arrival.append(fake._open)
                    fake._open += 1
                try:
                    return self._answer()
                finally:
                    with fake._count:
                        fake._open -= 1

            def _answer(self) -> None:
                body = self._body()
                fake.requests.append(body)
                if self.hostile():
                    return None
                if self.path == "/v1/embeddings":
                    return self._embeddings(body)
                if self.path != "/v1/chat/completions":
                    return self._json({"error": {"message": "not found"}}, 404)
                if body.get("model") not in fake.models:
                    return self._json({"error": {"message": f"The model `{body.get('model')}` does not exist."}},
                                      404)
                time.sleep(fake.delay)
                if fake.status != 200:
                    return self._json({"error": {"message": fake.error}}, fake.status)
                answer = fake.responder(body) if fake.responder else fake.answer
                pieces = re.findall(r"\S+\s*", answer)
                if fake.endless:
                    return self._endless(body, pieces)
                if fake.interrupting:
                    with fake._outer:            # wait for the model; others waiting behind us see the lock held
                        fake._inner.acquire()
                    try:
                        return self._stream(body, pieces)
                    finally:
                        fake._inner.release()
                return self._stream(body, pieces)

            def _stream(self, body: dict[str, Any], pieces: list[str]) -> None:
                with fake._count:
                    cut = fake.cut_next.pop(0) if fake.cut_next else fake.drop_after
                reason = "stop"
                limit = body.get("max_tokens") or 0
                if 0 < limit < len(pieces):
                    pieces, reason = pieces[:limit], "length"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()

                def event(delta: dict[str, Any], finish: str | None) -> None:
                    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": body["model"],
                             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
                    self._send(f"data: {json.dumps(mangled(chunk, self.fault))}\n\n".encode())

                event({"role": "assistant", "content": ""}, None)
                for i, piece in enumerate(pieces):
                    if fake.interrupting and fake._outer.locked():
                        self.wfile.write(b"data: [DONE]\n\n")
                        self.wfile.flush()
                        self.close_connection = True
                        fake.interrupted += 1
                        return None
                    time.sleep(fake.piece_s)
                    if i == cut:
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return None
                    if i == fake.error_after:
                        self.wfile.write(f"data: {json.dumps({'error': {'message': fake.error}})}\n\n".encode())
                        self.close_connection = True
                        return None
                    event({"content": piece}, None)
                event({}, reason)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True
                fake.served += 1
                return None

            def _embeddings(self, body: dict[str, Any]) -> None:
                dim = fake.embed_models.get(str(body.get("model")))
                if dim is None:
                    return self._json({"error": {"message": f"The model `{body.get('model')}` does not exist."}},
                                      404)
                if fake.embed_drops > 0:
                    fake.embed_drops -= 1
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return None
                texts = body["input"] if isinstance(body.get("input"), list) else [body.get("input")]

                def vector(text: str) -> Any:
                    if fake.per_token:
                        return [hashed_embedding(word, dim) for word in text.split()]
                    return hashed_embedding(text, dim)

                return self._json({"object": "list", "model": body["model"],
                                   "data": [{"object": "embedding", "index": i, "embedding": vector(t)}
                                            for i, t in enumerate(texts)]})

            def _endless(self, body: dict[str, Any], pieces: list[str]) -> None:
                pad = {"x_padding": "x" * fake.padding} if fake.padding else {}

                def chunks() -> Iterator[bytes]:
                    for piece in itertools.cycle(pieces):
                        time.sleep(fake.drip_s)
                        chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": body["model"],
                                 "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}], **pad}
                        yield f"data: {json.dumps(chunk)}\n\n".encode()

                def count(n: int) -> None:
                    fake.sent += n

                JsonHandler._endless(self, chunks(), count, "text/event-stream")
                fake.hung_up.set()

        self._server = serve_on_loopback(Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        return self

    def stop(self) -> None:
        if self._server:
            stop_server(self._server)

