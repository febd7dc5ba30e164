"""A fake cross-encoder server on loopback speaking the common POST /v1/rerank shape
({model, query, documents, top_n} -> {results: [{index, relevance_score}]}), as llama.cpp's
server, vLLM and Infinity do. Its score is the share of the query's words found in the
document, so a test can predict the order. Failures on demand: an HTTP status, a malformed
body, a reply of the wrong shape, a delay, an
endless one. Records every request."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from typing import Any

from tests.fake_ollama import JsonHandler, serve_on_loopback, stop_server

WORD = re.compile(r"[a-z0-9]+")


def overlap_score(query: str, document: str) -> float:
    words = set(WORD.findall(query.lower()))
    return len(words & set(WORD.findall(document.lower()))) / max(1, len(words))


class FakeRerank:
    def __init__(self) -> None:
        self.status = 200
        self.delay = 0.0
        self.raw: bytes | None = None          # answer these bytes instead of the computed reply
        # answer these parts with no length said (a hostile server); `sent` counts the bytes that went out
        self.parts: Callable[[], Iterator[bytes]] | None = None
        self.sent = 0
        self.rewrite: Callable[[dict[str, Any]], Any] | None = None   # change the computed reply
        self.requests: list[dict[str, Any]] = []
        self._server: ThreadingHTTPServer | None = None
        self.url = ""

    def start(self) -> FakeRerank:
        fake = self

        class Handler(JsonHandler):
            def do_POST(self) -> None:
                body = self._body()
                fake.requests.append(body)
                time.sleep(fake.delay)
                if self.path != "/v1/rerank":
                    return self._json({"error": {"message": "not found"}}, 404)
                if fake.status != 200:
                    return self._json({"error": {"message": "reranker overloaded"}}, fake.status)
                if fake.parts is not None:
                    return self._endless(fake.parts(), fake.count)
                if fake.raw is not None:
                    self._headers(len(fake.raw))
                    self.wfile.write(fake.raw)
                    return None
                scored = [{"index": i, "relevance_score": overlap_score(body["query"], d)}
                          for i, d in enumerate(body["documents"])]
                scored.sort(key=lambda r: -r["relevance_score"])
                reply: Any = {"model": body.get("model"), "results": scored[:body.get("top_n") or len(scored)]}
                if fake.rewrite is not None:
                    reply = fake.rewrite(reply)
                return self._json(reply)

        self._server = serve_on_loopback(Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        return self

    def count(self, n: int) -> None:
        self.sent += n

    def stop(self) -> None:
        if self._server:
            stop_server(self._server)
