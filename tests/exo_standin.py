"""A stand-in for exo's API (github exo-explore/exo, src/exo/api/main.py): `GET /node_id`
and `GET /state`, answered from two files read on every request, so a test changes what
"exo" says by rewriting them. Anything else is 404, as exo's FastAPI app would.

In a thread: `StandIn(dir).start()`; as a process (inside a lab namespace):
`python tests/exo_standin.py DIR PORT [BIND]`. DIR holds `node_id` (raw body) and
`state` (raw body; the text `!slow` makes it answer after 5 s, `!500` an HTTP 500,
`!drip` send a byte every 0.2 s).
"""

from __future__ import annotations

import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def _handler(root: Path) -> type[BaseHTTPRequestHandler]:
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            name = {"/node_id": "node_id", "/state": "state"}.get(self.path)
            body = (root / name).read_bytes() if name and (root / name).exists() else None
            status = 200
            if body is None:
                status, body = 404, b'{"detail":"Not Found"}'
            elif body.strip() == b"!slow":
                time.sleep(5)
                body = b"{}"
            elif body.strip() == b"!500":
                status, body = 500, b"Internal Server Error"
            elif body.strip() == b"!drip":  # a byte every 0.2 s, for at most 20 s
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", "100")
                self.end_headers()
                for _ in range(100):
                    try:
                        self.wfile.write(b" ")
                        self.wfile.flush()
                    except OSError:  # the client gave up
                        return
                    time.sleep(0.2)
                return
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return H


class StandIn:
    def __init__(self, root: Path, port: int = 0, bind: str = "127.0.0.1") -> None:
        self.root = root
        self.server = ThreadingHTTPServer((bind, port), _handler(root))
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://{bind}:{self.port}"
        self.requests = 0

    def start(self) -> StandIn:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def say(self, node_id: bytes | None = None, state: bytes | None = None) -> None:
        if node_id is not None:
            (self.root / "node_id").write_bytes(node_id)
        if state is not None:
            tmp = self.root / "state.tmp"
            tmp.write_bytes(state)
            tmp.replace(self.root / "state")


if __name__ == "__main__":
    s = StandIn(Path(sys.argv[1]), int(sys.argv[2]),
                sys.argv[3] if len(sys.argv) > 3 else "127.0.0.1")
    print(f"exo stand-in on {s.url}", flush=True)
    s.server.serve_forever()
