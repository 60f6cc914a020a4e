"""The web server of ``kmc explore``: the page, its script and style, and the JSON API.

The standard library's ``ThreadingHTTPServer``: one page and a handful of GET endpoints
need no framework. Safety:

- bound to 127.0.0.1 unless ``--host`` says otherwise (the command warns then);
- the ``Host`` header must name the server (``localhost``, the loopback addresses or the
  bound host, with the port; bound to every interface, also this machine's names and
  addresses): a page of another site that points its own name at
  127.0.0.1 (DNS rebinding) gets 403;
- only GET and HEAD, no request body, a request target of at most ``MAX_TARGET`` bytes;
- nothing reads a file: the page's assets live in ``explore_page``, a ``--trace`` file
  was read when the command started;
- the answers forbid framing and scripts from elsewhere (``Content-Security-Policy``).

The API (every answer JSON, UTF-8; errors ``{"error": "one line"}`` with 400, 403, 404,
405, 413 or 414):

- ``GET /api/spec``: the title, the spec's path, the number of initial states, the
  action names, the properties (name, kind, description), the ``--trace`` walks;
- ``GET /api/state?walk=I.C1.C2...``: a walk (initial state ``I``, then the choices) ->
  its steps, the enabled next steps (``choice``, ``action`` as traces name it, its
  description), the actions not enabled, each property's status in the last state
  (``holds``/``violated`` with the reason, ``goal``/``not a goal``), the state as HTML
  and (Kafka) the swimlane SVG;
- ``GET /api/search``: the background search: ``state`` (running, done, stopped,
  failed, idle), ``distinct``, ``depth``, ``seconds``, and per property its ``verdict``,
  ``explanation`` and counterexample ``walk`` (or null).
"""

from __future__ import annotations

import json
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from kmc.reports.explorer import WalkError

from . import explore_page

MAX_TARGET = 64 << 10  # bytes of a request target (a walk of ~10,000 steps fits)
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)


def parse_walk(text: str) -> tuple[int, list[int]]:
    """``"0.3.1"`` -> ``(0, [3, 1])``; ``ValueError`` for anything else."""
    parts = text.split(".") if text else ["0"]
    if not all(p.isdigit() and len(p) <= 6 for p in parts):
        raise ValueError("a walk is numbers joined by dots: the initial state's, then each choice's")
    nums = [int(p) for p in parts]
    return nums[0], nums[1:]


def _machine_names() -> set[str]:
    """This machine's host name, its fully qualified name and their addresses."""
    import socket

    names = {socket.gethostname(), socket.getfqdn()}
    for name in list(names):
        try:
            _, aliases, addresses = socket.gethostbyname_ex(name)
        except OSError:
            continue
        names.update(aliases, addresses)
    return {n for n in names if n}


class ExploreServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, explorer, host="127.0.0.1", port=0) -> None:
        self.explorer = explorer
        super().__init__((host, port), Handler)
        self.bound_host = host
        self.port = self.server_address[1]
        names = set(LOOPBACK) | {host, f"[{host}]"}
        if host in ("", "0.0.0.0", "::"):  # every interface: the names this machine goes by
            names |= _machine_names()
        self.allowed_hosts = {f"{n}:{self.port}".lower() for n in names}

    def url(self) -> str:
        host = self.bound_host
        shown = "127.0.0.1" if host in ("", "0.0.0.0") else (f"[{host}]" if ":" in host else host)
        return f"http://{shown}:{self.port}/"

    def handle_error(self, request, client_address) -> None:
        """A request that failed: a client that went away (a reset, a closed pipe: a
        browser tab closed, a probe) is no error of the server's and says nothing; anything
        else is one line on standard error, never a traceback."""
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, TimeoutError)):
            return
        what = f"{type(error).__name__}: {error}"
        print(f"kmc: explore: a request from {client_address[0]} failed: {what}", file=sys.stderr)

    def serve_in_thread(self) -> threading.Thread:
        t = threading.Thread(target=self.serve_forever, name="kmc-explore-server", daemon=True)
        t.start()
        return t


class Handler(BaseHTTPRequestHandler):
    server: ExploreServer
    server_version = "kmc-explore"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args) -> None:  # noqa: A002 (the base class's name)
        pass  # quiet: the terminal shows the URL and the search, not every request

    # -- the checks every request passes ------------------------------------------------

    def _refused(self) -> bool:
        if len(self.path) > MAX_TARGET:
            self._error(HTTPStatus.REQUEST_URI_TOO_LONG, "the request target is too long")
            return True
        host = (self.headers.get("Host") or "").lower()
        if host not in self.server.allowed_hosts:
            self._error(HTTPStatus.FORBIDDEN, "the Host header does not name this server")
            return True
        length = self.headers.get("Content-Length")
        if (length not in (None, "0")) or self.headers.get("Transfer-Encoding"):
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "requests carry no body here")
            return True
        return False

    def do_HEAD(self) -> None:  # noqa: N802
        self.do_GET(head=True)

    def do_GET(self, head=False) -> None:  # noqa: N802
        if self._refused():
            return
        url = urlsplit(self.path)
        route = url.path
        try:
            query = parse_qs(url.query, max_num_fields=8, strict_parsing=False)
        except ValueError:
            self._error(HTTPStatus.BAD_REQUEST, "too many query fields")
            return
        if route in ("/", "/index.html"):
            self._send(HTTPStatus.OK, "text/html; charset=utf-8", explore_page.PAGE.encode(), head)
        elif route == "/explorer.js":
            self._send(HTTPStatus.OK, "text/javascript; charset=utf-8", explore_page.SCRIPT.encode(), head)
        elif route == "/explorer.css":
            self._send(HTTPStatus.OK, "text/css; charset=utf-8", explore_page.STYLE.encode(), head)
        elif route == "/api/spec":
            self._json(self.server.explorer.spec_doc(), head=head)
        elif route == "/api/search":
            self._json(self.server.explorer.search_doc(), head=head)
        elif route == "/api/state":
            try:
                init, choices = parse_walk((query.get("walk") or [""])[0])
                doc = self.server.explorer.state_doc(init, choices)
            except (ValueError, WalkError) as e:
                self._error(HTTPStatus.BAD_REQUEST, str(e))
                return
            self._json(doc, head=head)
        else:
            self._error(HTTPStatus.NOT_FOUND, f"no such page: {route[:80]}")

    def _method_not_allowed(self) -> None:
        self._error(HTTPStatus.METHOD_NOT_ALLOWED, "only GET and HEAD")

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _method_not_allowed  # noqa: N815

    # -- answers ---------------------------------------------------------------------------

    def _json(self, doc, status=HTTPStatus.OK, head=False) -> None:
        self._send(status, "application/json; charset=utf-8", json.dumps(doc).encode(), head)

    def _error(self, status, message) -> None:
        self.close_connection = True
        self._json({"error": message}, status)

    def _send(self, status, ctype, body, head=False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Content-Security-Policy", CSP)
        if status == HTTPStatus.METHOD_NOT_ALLOWED:
            self.send_header("Allow", "GET, HEAD")
        self.end_headers()
        if not head:
            self.wfile.write(body)
