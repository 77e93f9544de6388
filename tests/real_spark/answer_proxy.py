"""A proxy in front of a real master's REST submission server that loses create answers, as a
slow or cut network does: per create, in order, ``drop`` (the request is swallowed: never
reaches the master, never answered) or ``withhold`` (forwarded to the master, which carries it
out; its answer is kept from the client). Both hold the connection until the client gives up.
Creates beyond the list, and every other request, are forwarded and answered."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

HOLD_S = 60.0  # at most this long (the client gives up well before)


class AnswerProxy:
    def __init__(self, port: int, master_rest: str, creates: list[str]):
        self.master_rest = master_rest.rstrip("/")
        self.creates = list(creates)  # what to do with each create, in order
        self.forwarded_creates = 0
        self.seen_creates = 0
        self.release = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> AnswerProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    def next_create(self) -> str:
        with self._lock:
            self.seen_creates += 1
            return self.creates.pop(0) if self.creates else "forward"


def _handler(proxy: AnswerProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            self._forward(b"")

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if not self.path.endswith("/submissions/create"):
                self._forward(body)
                return
            what = proxy.next_create()
            if what == "forward":
                self._forward(body)
                return
            if what == "withhold":
                self._send_on(body)
                with proxy._lock:
                    proxy.forwarded_creates += 1
            proxy.release.wait(HOLD_S)  # no answer: the client times out
            self.close_connection = True

        def _send_on(self, body: bytes) -> httpx.Response:
            return httpx.request(self.command, proxy.master_rest + self.path, content=body,
                                 headers={"Content-Type": "application/json"}, timeout=30,
                                 trust_env=False)

        def _forward(self, body: bytes) -> None:
            if self.path.endswith("/submissions/create"):
                with proxy._lock:
                    proxy.forwarded_creates += 1
            answer = self._send_on(body) if self.command == "POST" else httpx.get(
                proxy.master_rest + self.path, timeout=30, trust_env=False)
            self.send_response(answer.status_code)
            self.send_header("Content-Type", answer.headers.get("content-type", "text/plain"))
            self.send_header("Content-Length", str(len(answer.content)))
            self.end_headers()
            self.wfile.write(answer.content)

    return Handler
