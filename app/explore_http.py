"""One request of ``kmc explore``'s web server (``explore_server``): the ``Host`` check, the
routes of the page and of the JSON API, and the answer's headers (no framing, no script
from elsewhere)."""

from __future__ import annotations

import io
import json
from collections.abc import Container
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qs, urlsplit

from kmc.app.render.explorer import WalkError

from . import explore_page

if TYPE_CHECKING:  # for the annotations only
    import socket

    from kmc.app.render.explorer import Explorer


class Owner(Protocol):
    """What a request reads of the server that accepted it (``app.explore_server.ExploreServer``):
    the hosts it answers, the explorer it serves, and where an unexpected error goes."""

    @property
    def allowed_hosts(self) -> Container[str]: ...
    @property
    def explorer(self) -> Explorer: ...

    def handle_error(self, request: Any, client_address: Any) -> None: ...


MAX_TARGET = 64 << 10  # bytes of a request target (a walk of ~10,000 steps fits)
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


def parse_walk_prefix(text: str) -> tuple[int, list[int], str | None]:
    """The longest prefix of ``text`` that is a walk's syntax: ``(init, choices, error)``,
    ``error`` ``None`` when all of it is (``"0.3.x.1"`` -> ``(0, [3], "step 3 ...")``)."""
    parts = text.split(".") if text else ["0"]
    nums: list[int] = []
    for part in parts:
        if not (part.isdigit() and len(part) <= 6):
            where = "the initial state" if not nums else f"step {len(nums) + 1}"
            shown = part[:20] + ("…" if len(part) > 20 else "")
            error = f"{where} of the walk is {shown!r}, not a number: a walk is numbers joined by dots"
            return (nums[0] if nums else 0), nums[1:], error
        nums.append(int(part))
    return nums[0], nums[1:], None


class Handler(BaseHTTPRequestHandler):
    server_version = "kmc-explore"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def __init__(self, sock: socket.socket, client_address: Any, owner: Owner, head: bytes) -> None:
        # (what socketserver's base class does, for kmc's own server: ``owner``)
        self._head = head
        self.owner = owner
        self.request, self.client_address = sock, client_address
        self.setup()
        try:
            self.handle()
        finally:
            self.finish()

    def setup(self) -> None:
        """The request's head, already read by the server; answers go to the socket."""
        self.connection = self.request
        self.rfile = io.BytesIO(self._head)
        self.wfile = self.connection.makefile("wb")

    def handle(self) -> None:
        """One request (the server reads the next one's head itself)."""
        self.close_connection = True
        self.handle_one_request()

    def finish(self) -> None:
        try:
            self.wfile.flush()
        finally:
            self.wfile.close()
            self.rfile.close()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        pass  # quiet: the terminal shows the URL and the search, not every request

    # -- the checks every request passes ------------------------------------------------

    def _refused(self) -> bool:
        if len(self.path) > MAX_TARGET:
            self._error(HTTPStatus.REQUEST_URI_TOO_LONG, "the request target is too long")
            return True
        host = (self.headers.get("Host") or "").lower()
        if host not in self.owner.allowed_hosts:
            self._error(HTTPStatus.FORBIDDEN, "the Host header does not name this server")
            return True
        length = self.headers.get("Content-Length")
        if (length not in (None, "0")) or self.headers.get("Transfer-Encoding"):
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "requests carry no body here")
            return True
        return False

    def do_HEAD(self) -> None:  # noqa: N802
        self.do_GET(head=True)

    def do_GET(self, head: bool = False) -> None:  # noqa: N802
        if self._refused():
            return
        url = urlsplit(self.path)
        route = url.path
        try:
            query = parse_qs(url.query, max_num_fields=8, strict_parsing=False)
        except ValueError:
            self._error(HTTPStatus.BAD_REQUEST, "too many query fields")
            return
        try:
            self._route(route, query, head)
        except (ConnectionError, TimeoutError):
            raise
        except Exception as e:  # the model's own code failed: 500 and one line on standard error
            self.owner.handle_error(self.request, self.client_address)
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"the model failed: {type(e).__name__}: {e}"[:500])

    def _route(self, route: str, query: dict[str, list[str]], head: bool) -> None:
        if route in ("/", "/index.html"):
            self._send(HTTPStatus.OK, "text/html; charset=utf-8", explore_page.PAGE.encode(), head)
        elif route == "/explorer.js":
            self._send(HTTPStatus.OK, "text/javascript; charset=utf-8", explore_page.SCRIPT.encode(), head)
        elif route == "/explorer.css":
            self._send(HTTPStatus.OK, "text/css; charset=utf-8", explore_page.STYLE.encode(), head)
        elif route == "/api/spec":
            self._json(self.owner.explorer.spec_doc(), head=head)
        elif route == "/api/search":
            self._json(self.owner.explorer.search_doc(), head=head)
        elif route in ("/favicon.ico", "/favicon.svg"):
            self._send(HTTPStatus.OK, "image/svg+xml", explore_page.FAVICON.encode(), head, cache=True)
        elif route == "/api/state":
            text = (query.get("walk") or [""])[0]
            try:
                if (query.get("prefix") or [""])[0] in ("1", "true"):
                    init, choices, broken = parse_walk_prefix(text)
                    doc = self.owner.explorer.state_doc_prefix(init, choices, broken)
                else:
                    init, choices = parse_walk(text)
                    doc = self.owner.explorer.state_doc(init, choices)
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

    def _json(self, doc: dict[str, Any], status: HTTPStatus = HTTPStatus.OK, head: bool = False) -> None:
        self._send(status, "application/json; charset=utf-8", json.dumps(doc).encode(), head)

    def _error(self, status: HTTPStatus, message: str) -> None:
        self.close_connection = True
        self._json({"error": message}, status)

    def _send(self, status: HTTPStatus, ctype: str, body: bytes, head: bool = False, cache: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "max-age=86400" if cache else "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Content-Security-Policy", CSP)
        if status == HTTPStatus.METHOD_NOT_ALLOWED:
            self.send_header("Allow", "GET, HEAD")
        self.end_headers()
        if not head:
            self.wfile.write(body)
