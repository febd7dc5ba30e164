"""A fake Ollama HTTP server on loopback, speaking the API the `ollama` client uses.

Tests drive the real HTTP path (LlamaIndex -> ollama client -> httpx -> here).
Embeddings are hashed bags of stemmed words, L2-normalised, so related texts are
near. Chat replies are scripted per test (pieces, delays, done_reason, HTTP errors,
malformed lines, dropped connections). Every request is recorded. Any path can be
made hostile (`Faults`: drop, 503, huge, deep, drip, wrong counts and types, giant
integers), here and in the fake OpenAI-compatible server.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WORD = re.compile(r"[a-z0-9]+")
STOP = frozenset(
    ("a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "in", "is", "it", "its",
     "of", "on", "or", "that", "the", "this", "to", "was", "were", "with")
)
SUFFIXES = ("ing", "edly", "ed", "es", "ly", "s")


def stem(word: str) -> str:
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def hashed_embedding(text: str, dim: int) -> list[float]:
    """Bag of stemmed words hashed into `dim` signed buckets, unit length."""
    vec = [0.0] * dim
    for word in WORD.findall(text.lower()):
        if word in STOP:
            continue
        h = int.from_bytes(hashlib.blake2b(stem(word).encode(), digest_size=8).digest(), "little")
        vec[h % dim] += 1.0 if (h >> 40) & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vec))
    if norm == 0:
        vec[0], norm = 1.0, 1.0
    return [x / norm for x in vec]


@dataclass
class Reply:
    """One scripted chat/generate answer."""

    pieces: list[str] = field(default_factory=lambda: ["ok"])
    delay: float = 0.0                 # seconds before each piece
    done_reason: str = "stop"
    status: int = 200                  # non-200: answer {"error": error} with this code
    error: str = "internal server error"
    malformed_after: int | None = None  # send a non-JSON line after this many pieces
    drop_after: int | None = None      # close the connection after this many pieces
    error_after: int | None = None     # stream {"error": error} after this many pieces and stop
    ignore_num_predict: bool = False   # a server that streams past the request's num_predict

    @classmethod
    def text(cls, text: str, **kw: Any) -> Reply:
        return cls(pieces=re.findall(r"\S+\s*", text) or [""], **kw)


@dataclass
class Model:
    name: str
    kind: str                          # "embed" | "chat"
    dim: int = 64
    context_length: int = 8192        # /api/show's "<family>.context_length"; 0 leaves it out
    shows_dim: bool = True            # /api/show gives an embed model's "<family>.embedding_length" (its dim)


@dataclass
class Recorded:
    method: str
    path: str
    body: dict[str, Any]
    at: float


def fenced(text: str) -> str:
    """The document text of a prompt's first fence (`<<<` ... `>>>` lines), or the text itself without one."""
    match = re.search(r"(?ms)^<<<\n(.*?)\n>>>$", text)
    return (match.group(1) if match else text).strip()


def default_responder(body: dict[str, Any]) -> Reply:
    """Annotation prompts get a quote of the extract's first sentence; anything else a short cited answer that
    names a word of the prompt's first fenced source (so it says something a source says; "this" without one)."""
    text = "\n".join(str(m.get("content", "")) for m in body.get("messages", [])) or body.get("prompt", "")
    if "EXTRACT" in text:
        extract = fenced(text.split("EXTRACT:", 1)[-1])
        first = re.split(r"(?<=[.!?])\s", extract, maxsplit=1)[0][:160]
        return Reply.text(f'"{first}" This quote is relevant to the question.')
    fence = re.search(r"(?ms)^<<<\n(.*?)\n>>>$", text)
    named = next((w for w in re.findall(r"[^\W\d_]{4,}", fence.group(1)) if w.lower() not in _COMMON), "this") \
        if fence else "this"
    return Reply.text(f"The sources agree on {named} [1].")


_COMMON = {"that", "this", "with", "from", "they", "their", "there", "these", "have", "when", "what", "which"}


class FakeOllama:
    def __init__(self) -> None:
        self.models: dict[str, Model] = {}
        for model in (Model("nomic-embed-text", "embed", dim=64), Model("all-minilm", "embed", dim=32),
                      Model("chat", "chat"), Model("annotator", "chat")):
            self.add_model(model)
        self.requests: list[Recorded] = []
        self.scripted: deque[Reply] = deque()
        self.responder: Callable[[dict[str, Any]], Reply] = default_responder
        self.embed_failures = 0            # answer this many embed calls with HTTP 500 first
        self.embed_delay = 0.0
        self.embed_gate: threading.Event | None = None   # /api/embed answers once this is set (20 s at most)
        # A fault per test: given the texts of an /api/embed call and the model's dimension, the raw body to
        # answer with (malformed JSON, nulls, NaN, wrong dimensions), or None for the normal answer.
        self.embed_body: Callable[[list[str], int], bytes | None] | None = None
        self.tags_body: bytes | None = None  # answer /api/tags with exactly these bytes (a broken server)
        # answer /api/tags or /api/show with these parts and no length (a hostile server), counting what went out
        self.tags_parts: Callable[[], Iterator[bytes]] | None = None
        self.show_parts: Callable[[], Iterator[bytes]] | None = None
        self.sent = 0                      # bytes of such answers that went out
        self.embed_drip_s = 0.0            # send an /api/embed body one byte per this many seconds
        self.show_delay = 0.0              # seconds before answering /api/show (a busy server loading a model)
        self.faults = Faults()             # a hostile server on demand, per path (`Fault`)
        self.disconnects = 0               # streams the client closed before the end
        self.prompt_eval_count = 1         # the prompt tokens each chat/generate answer's last frame reports
        self._lock = threading.Lock()
        self._in_flight = 0
        self.max_in_flight = 0             # most chat/generate requests open at once
        self._server: ThreadingHTTPServer | None = None
        self.url = ""

    # --- control -------------------------------------------------------------

    def add_model(self, model: Model) -> None:
        self.models[model.name] = model

    def script(self, *replies: Reply) -> None:
        """Queue replies for the next chat/generate calls, in order; then the responder answers."""
        self.scripted.extend(replies)

    def count_sent(self, n: int) -> None:
        with self._lock:
            self.sent += n

    def calls(self, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.path == path]

    def start(self) -> FakeOllama:
        fake = self

        class Handler(_Handler):
            server_ref = fake
            faults = fake.faults

        self._server = serve_on_loopback(Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        return self

    def stop(self) -> None:
        if self._server:
            stop_server(self._server)
            self._server = None

    # --- internals -------------------------------------------------------------

    def _lookup(self, name: str) -> Model | None:
        base = name.removesuffix(":latest")
        return self.models.get(base)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self.scripted:
                return self.scripted.popleft()
        return self.responder(body)

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1


def serve_on_loopback(handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    """A threaded server on 127.0.0.1 and a free port, serving in the background."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def stop_server(server: ThreadingHTTPServer) -> None:
    server.shutdown()
    server.server_close()


FAULTS = ("drop", "503", "huge", "deep", "drip", "count", "types", "giant")


@dataclass
class Fault:
    """What a hostile server does to each request for one path: `drop` the connection unanswered, answer `503`,
    send a `huge` reply (endless, no length said), JSON nested too `deep` to parse, the normal reply in a slow
    `drip` (a byte every DRIP_S), or the normal JSON reply (each frame of a stream) with every list one item
    longer (`count`), every number a string (`types`) or every number a 400-digit integer (`giant`). `times`:
    the next that many requests only (a server that flaps, then recovers); None: every one."""

    kind: str
    times: int | None = None


DRIP_S = 0.5


class Faults:
    """The faults a fake server injects, by request path (shared by its handler threads)."""

    def __init__(self) -> None:
        self._by_path: dict[str, Fault] = {}
        self._lock = threading.Lock()
        self.injected = 0                   # requests a fault was applied to

    def inject(self, path: str, kind: str, times: int | None = None) -> None:
        assert kind in FAULTS, kind
        with self._lock:
            self._by_path[path] = Fault(kind, times)

    def clear(self) -> None:
        with self._lock:
            self._by_path.clear()
            self.injected = 0

    def take(self, path: str) -> str | None:
        """The fault for this request to `path`, if any (counting down a fault of so many `times`)."""
        with self._lock:
            fault = self._by_path.get(path.split("?", 1)[0])
            if fault is None or fault.times == 0:
                return None
            if fault.times is not None:
                fault.times -= 1
            self.injected += 1
            return fault.kind


def mangled(obj: Any, kind: str | None) -> Any:
    """A JSON value with the `count`, `types` or `giant` fault applied throughout (unchanged for other kinds)."""
    if kind not in ("count", "types", "giant"):
        return obj
    if isinstance(obj, dict):     # a list's "index" (OpenAI's) stays, so that the numbers it orders are reached
        return {k: v if k == "index" else mangled(v, kind) for k, v in obj.items()}
    if isinstance(obj, list):
        items = [mangled(v, kind) for v in obj]
        return items + items[:1] if kind == "count" else items
    if isinstance(obj, (int, float)) and not isinstance(obj, bool):
        return str(obj) if kind == "types" else 10 ** 400
    return obj


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet HTTP/1.1 handler that answers JSON; the fake servers build on it. With `faults` set, each request
    first meets the fault injected for its path (`hostile`)."""

    protocol_version = "HTTP/1.1"
    faults: Faults | None = None
    fault: str | None = None                # the fault this request meets, once `hostile` has looked

    def hostile(self) -> bool:
        """Apply this request's fault; True when that fault was the whole answer (the handler stops there)."""
        self.fault = self.faults.take(self.path) if self.faults is not None else None
        if self.fault == "drop":
            self.close_connection = True
            self.connection.shutdown(2)
            return True
        if self.fault == "503":
            self._json({"error": "server busy, try again later"}, 503)
            return True
        if self.fault == "huge":
            self._endless(iter(lambda: b"[" + b"0," * 65536 + b"0]", b""), lambda n: None)
            return True
        if self.fault == "deep":
            data = b"[" * 100_000 + b"]" * 100_000
            self._headers(len(data))
            self.wfile.write(data)
            return True
        return False

    def _send(self, data: bytes) -> None:
        """The bytes of an answer, a byte every DRIP_S under the `drip` fault."""
        self._drip(data, DRIP_S if self.fault == "drip" else 0.0)

    def _drip(self, data: bytes, every_s: float) -> None:
        """`data` at once, or one byte every `every_s` seconds until the client gives up."""
        if not every_s:
            self.wfile.write(data)
            return
        try:
            for i in range(len(data)):
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
                time.sleep(every_s)
        except OSError:                    # the client gave up: what its deadline is for
            pass

    def log_message(self, *args: Any) -> None:
        pass

    def _body(self) -> Any:
        """The request's JSON body ({} when empty); JSONDecodeError for a body that is not JSON."""
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")

    def _json(self, obj: Any, code: int = 200) -> None:
        self._headers(len(data := json.dumps(mangled(obj, self.fault)).encode()), code)
        self._send(data)

    def _endless(self, parts: Iterable[bytes], counter: Callable[[int], None],
                 content_type: str = "application/json") -> None:
        """A 200 answer of `parts`, with no length said (the connection's close ends it), as a hostile server
        sends a reply bigger than anything it announces; `counter` is told the bytes that went out. Stops
        when the client hangs up."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            for part in parts:
                self.wfile.write(part)
                self.wfile.flush()
                counter(len(part))
        except OSError:                    # the client gave up: what a limit is for
            pass

    def _headers(self, length: int, code: int = 200) -> None:
        """The status line and headers of a JSON answer of `length` bytes (the body is the caller's)."""
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(length))
        self.end_headers()


class _Handler(JsonHandler):
    server_ref: FakeOllama

    def _record(self, body: dict[str, Any]) -> None:
        with self.server_ref._lock:
            self.server_ref.requests.append(Recorded(self.command, self.path, body, time.monotonic()))

    def do_GET(self) -> None:
        self._record({})
        if self.hostile():
            return None
        fake = self.server_ref
        if self.path == "/api/version":
            return self._json({"version": "0.12.6"})
        if self.path == "/api/tags":
            if fake.tags_body is not None:
                return self._raw(fake.tags_body)
            if fake.tags_parts is not None:
                return self._endless(fake.tags_parts(), fake.count_sent)
            return self._json({"models": [
                {"name": f"{m.name}:latest", "model": f"{m.name}:latest", "modified_at": "2026-01-01T00:00:00Z",
                 "size": 1000, "digest": hashlib.sha256(m.name.encode()).hexdigest(),
                 "details": {"format": "gguf", "family": m.kind}}
                for m in fake.models.values()]})
        if self.path == "/":
            return self._json("Ollama is running")
        return self._json({"error": "not found"}, 404)

    def do_POST(self) -> None:
        try:
            body = self._body()
        except json.JSONDecodeError:
            return self._json({"error": "invalid JSON"}, 400)
        self._record(body)
        if self.hostile():
            return None
        fake = self.server_ref
        name = str(body.get("model") or body.get("name") or "")
        model = fake._lookup(name)
        if model is None:
            return self._json({"error": f'model "{name}" not found, try pulling it first'}, 404)
        if self.path == "/api/show":
            time.sleep(fake.show_delay)
            if fake.show_parts is not None:
                return self._endless(fake.show_parts(), fake.count_sent)
            return self._json({
                "modelfile": "", "parameters": "", "template": "{{ .Prompt }}",
                "details": {"format": "gguf", "family": model.kind},
                "model_info": {"general.architecture": model.kind,
                               **({f"{model.kind}.context_length": model.context_length}
                                  if model.context_length else {}),
                               **({f"{model.kind}.embedding_length": model.dim}
                                  if model.kind == "embed" and model.shows_dim else {})},
                "capabilities": ["embedding"] if model.kind == "embed" else ["completion"],
            })
        if self.path in ("/api/embed", "/api/embeddings"):
            return self._embed(model, body)
        if self.path in ("/api/chat", "/api/generate"):
            if model.kind != "chat":
                return self._json({"error": f'"{name}" does not support chat'}, 400)
            fake._enter()
            try:
                return self._chat(name, body)
            finally:
                fake._leave()
        return self._json({"error": "not found"}, 404)

    def _embed(self, model: Model, body: dict[str, Any]) -> None:
        fake = self.server_ref
        if model.kind != "embed":
            return self._json({"error": f'"{model.name}" does not support embeddings'}, 400)
        if fake.embed_delay:
            time.sleep(fake.embed_delay)
        if fake.embed_gate is not None:
            fake.embed_gate.wait(20)
        with fake._lock:
            failing = fake.embed_failures > 0
            fake.embed_failures -= failing
        if failing:
            return self._json({"error": "embedding backend failed"}, 500)
        if self.path == "/api/embeddings":
            return self._json({"embedding": hashed_embedding(str(body.get("prompt", "")), model.dim)})
        inputs = body.get("input", "")
        texts = [inputs] if isinstance(inputs, str) else list(inputs)
        raw = fake.embed_body(texts, model.dim) if fake.embed_body else None
        if raw is not None or fake.embed_drip_s:
            return self._raw(raw if raw is not None else json.dumps(
                {"model": model.name, "embeddings": [hashed_embedding(t, model.dim) for t in texts]}).encode())
        return self._json({"model": model.name,
                           "embeddings": [hashed_embedding(t, model.dim) for t in texts],
                           "total_duration": 1, "load_duration": 0, "prompt_eval_count": len(texts)})

    def _raw(self, data: bytes) -> None:
        """A 200 answer with exactly these bytes, dripped one byte at a time when embed_drip_s is set."""
        self._headers(len(data))
        self._drip(data, self.server_ref.embed_drip_s)

    def _chat(self, name: str, body: dict[str, Any]) -> None:
        fake = self.server_ref
        reply = fake._next_reply(body)
        if reply.status != 200:
            if reply.delay:
                time.sleep(reply.delay)
            return self._json({"error": reply.error}, reply.status)
        pieces, reason = list(reply.pieces), reply.done_reason
        limit = int((body.get("options") or {}).get("num_predict") or -1)
        if 0 < limit < len(pieces) and not reply.ignore_num_predict:
            pieces, reason = pieces[:limit], "length"
        chat = self.path == "/api/chat"

        def frame(content: str, done: bool) -> dict[str, Any]:
            out: dict[str, Any] = {"model": name, "created_at": "2026-01-01T00:00:00Z", "done": done}
            if chat:
                out["message"] = {"role": "assistant", "content": content}
            else:
                out["response"] = content
            if done:
                out.update(done_reason=reason, total_duration=1, load_duration=0,
                           prompt_eval_count=fake.prompt_eval_count, prompt_eval_duration=1,
                           eval_count=len(pieces), eval_duration=1)
            return out

        if body.get("stream") is False:
            for _ in pieces:
                if reply.delay:
                    time.sleep(reply.delay)
            return self._json(frame("".join(pieces), True))

        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def send(data: bytes) -> None:
            self._send(f"{len(data):X}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        try:
            for i, piece in enumerate(pieces):
                if reply.drop_after is not None and i == reply.drop_after:
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return None
                if reply.malformed_after is not None and i == reply.malformed_after:
                    send(b"{this is not json\n")
                if reply.error_after is not None and i == reply.error_after:
                    send((json.dumps({"error": reply.error}) + "\n").encode())
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                    return None
                if reply.delay:
                    time.sleep(reply.delay)
                send((json.dumps(mangled(frame(piece, False), self.fault)) + "\n").encode())
            send((json.dumps(mangled(frame("", True), self.fault)) + "\n").encode())
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            with fake._lock:
                fake.disconnects += 1
        return None
