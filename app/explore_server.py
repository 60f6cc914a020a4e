"""The web server of ``kmc explore``: the page, its script and style, and the JSON API.

The standard library's ``http.server`` parses and answers each request; the connections
are kmc's own, so that no client can make the server unavailable to the others:

- one thread waits on every connection at once (``selectors``) and reads each request's
  head, without blocking, until its blank line; only a complete request goes to one of
  ``WORKERS`` worker threads, so a slow or half-open client holds no thread;
- a connection that has not sent a whole request head within ``HEAD_TIMEOUT`` seconds of
  being accepted (or of its previous answer) is closed, and so is one whose head passes
  ``MAX_HEAD`` bytes; an answer not taken by the client within ``IO_TIMEOUT`` seconds is
  dropped;
- at most ``max_connections`` connections are open (a quarter of the process's file
  limit, at most ``MAX_CONNECTIONS``): a new one closes the oldest that waits for its
  head, and when the process runs out of files the server pauses accepting instead of
  spinning; the listen backlog is ``BACKLOG``.

Safety:

- bound to a loopback address (127.0.0.1 unless ``--host`` says otherwise); any other
  address (``0``, ``0.0.0.0``, ``::``, a LAN address) only with ``allow_remote``
  (``--allow-remote``; the command warns then); ``bind_address`` decides it before any
  socket is opened;
- the ``Host`` header must name the server (``localhost``, the loopback addresses or the
  bound host, with the port; bound to every interface, also this machine's names and
  addresses): a page of another site that points its own name at
  127.0.0.1 (DNS rebinding) gets 403;
- only GET and HEAD, no request body, a request target of at most ``MAX_TARGET`` bytes;
- nothing reads a file: the page's assets live in ``explore_page``, a ``--trace`` file
  was read when the command started;
- the answers forbid framing and scripts from elsewhere (``Content-Security-Policy``).

The API (every answer JSON, UTF-8; errors ``{"error": "one line"}`` with 400, 403, 404,
405, 413 or 414, and 500 when the model's own code fails, also said in one line on
standard error):

- ``GET /api/spec``: the title, the spec's path, the initial states (their number and a
  label of each), the action names, the properties (name, kind, description), the
  ``--trace`` walks (each with its ``lasso`` or null);
- ``GET /api/state?walk=I.C1.C2...``: a walk (initial state ``I``, then the choices) ->
  its steps, the enabled next steps (``choice``, ``action`` as traces name it, its
  description), the actions not enabled (each with the conditions of its guard that
  fail: ``render.why_not``), the lasso the walk follows (``lasso``: a liveness
  counterexample of a ``--trace`` file or of the search, its cycle's start, the walk
  back to it; null off every lasso), each property's status in the last state
  (``holds``/``violated`` with the reason; ``goal``, ``not a goal`` or, once the search
  has decided the property, ``trap``), the state as HTML and (Kafka) the swimlane SVG.
  With ``&prefix=1`` a walk that does not replay is answered with its longest valid
  prefix and ``broken``: where it broke (``step``, 1 the initial state) and why;
- ``GET /api/search``: the background search: ``state`` (running, done, stopped,
  failed, idle), ``distinct``, ``depth``, ``seconds``, and per property its ``verdict``,
  ``explanation`` and counterexample ``walk`` (or null).
"""

from __future__ import annotations

import collections
import errno
import queue
import selectors
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from .explore_hosts import allowed_hosts, bind_address
from .explore_http import MAX_TARGET, Handler

if TYPE_CHECKING:  # for the annotations only
    from kmc.app.render.explorer import Explorer

MAX_HEAD = MAX_TARGET + (16 << 10)  # bytes of a request's head: its line and its headers
HEAD_TIMEOUT = 10.0  # seconds a connection has to send a whole request head
IO_TIMEOUT = 10.0  # seconds a worker waits on a client taking its answer
WORKERS = 8  # threads that answer complete requests
MAX_CONNECTIONS = 512  # open connections at most (fewer when the file limit is low)
BACKLOG = 1024  # the listen backlog (the system may cap it: net.core.somaxconn)


def _connection_limit() -> int:
    """``MAX_CONNECTIONS``, or a quarter of the process's file limit when that is lower."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        return MAX_CONNECTIONS
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(8, min(MAX_CONNECTIONS, soft // 4))


# -- the server ---------------------------------------------------------------------------


class _Connection:
    """A client's connection while the selector thread reads its next request head."""

    __slots__ = ("sock", "address", "buffer", "deadline")

    def __init__(self, sock: socket.socket, address: Any, buffer: bytes = b"") -> None:
        self.sock = sock
        self.address = address
        self.buffer = bytearray(buffer)
        self.deadline = time.monotonic() + HEAD_TIMEOUT


class ExploreServer:
    """The explorer's HTTP server (see the module): ``serve_forever`` (or
    ``serve_in_thread``), ``shutdown``, ``server_close``.

    Raises (from the constructor):
        UsageError: ``host`` is not a loopback address and ``allow_remote`` is false, or
            it does not resolve.
        OSError: the address cannot be bound (the port is taken).
    """

    def __init__(
        self,
        explorer: Explorer,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        allow_remote: bool = False,
        workers: int = WORKERS,
    ) -> None:
        self.explorer = explorer
        self.bind = bind_address(host, allow_remote)
        self.bound_host = host
        self.listener = socket.socket(self.bind.family, socket.SOCK_STREAM)
        try:
            self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if self.bind.family == socket.AF_INET6 and self.bind.every_interface:
                try:  # '::' takes IPv4 clients too where the system allows it
                    self.listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
                except (AttributeError, OSError):
                    pass
            self.listener.bind((self.bind.address, port))
            self.listener.listen(BACKLOG)
            self.listener.setblocking(False)
        except BaseException:
            self.listener.close()
            raise
        self.port = self.listener.getsockname()[1]
        self.allowed_hosts = allowed_hosts(self.bind, self.port)
        self.max_connections = _connection_limit()
        self._waiting: collections.OrderedDict[int, _Connection] = collections.OrderedDict()  # oldest first
        self._busy = 0  # connections a worker holds
        self._returned: queue.SimpleQueue[_Connection] = queue.SimpleQueue()  # back from a worker
        self._jobs: queue.SimpleQueue[_Connection | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()
        self._paused_until = 0.0
        self._workers = [
            threading.Thread(target=self._work, name=f"kmc-explore-worker-{i}", daemon=True) for i in range(workers)
        ]
        for t in self._workers:
            t.start()

    def url(self) -> str:
        return self.bind.url(self.port)

    # -- the selector thread ------------------------------------------------------------------

    def serve_forever(self) -> None:
        """Accept connections and read request heads until ``shutdown``."""
        self._stopped.clear()
        sel = self._selector
        sel.register(self.listener, selectors.EVENT_READ, "listen")
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        listening = True
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                if not listening and now >= self._paused_until:
                    sel.register(self.listener, selectors.EVENT_READ, "listen")
                    listening = True
                for key, _ in sel.select(timeout=0.5):
                    if key.data == "listen":
                        if not self._accept():
                            sel.unregister(self.listener)
                            listening = False
                    elif key.data == "wake":
                        self._drain_wake()
                    else:
                        self._read(key.data)
                self._take_returned()
                self._expire(time.monotonic())
        finally:
            for key in list(sel.get_map().values()):
                sel.unregister(key.fileobj)
            self._stopped.set()

    def _accept(self) -> bool:
        """Accept what is pending; ``False`` when the process is out of files (accepting
        pauses for a moment instead of spinning on a listener that stays readable)."""
        for _ in range(256):
            try:
                sock, address = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return True
            except OSError as e:
                if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    if not self._evict():
                        self._paused_until = time.monotonic() + 0.1
                        return False
                    continue
                return True  # a connection reset before it was accepted, and the like
            with self._lock:
                full = len(self._waiting) + self._busy >= self.max_connections
            if full and not self._evict():
                sock.close()  # every connection is being answered: this one must wait its turn
                continue
            sock.setblocking(False)
            self._watch(_Connection(sock, address))
        return True

    def _watch(self, conn: _Connection) -> None:
        self._waiting[conn.sock.fileno()] = conn
        self._selector.register(conn.sock, selectors.EVENT_READ, conn)
        if b"\r\n\r\n" in conn.buffer:  # a pipelined request already read
            self._dispatch(conn)

    def _evict(self) -> bool:
        """Close the connection that has waited longest for its request head."""
        if not self._waiting:
            return False
        _, conn = self._waiting.popitem(last=False)
        self._drop(conn)
        return True

    def _drop(self, conn: _Connection) -> None:
        try:
            self._selector.unregister(conn.sock)
        except (KeyError, ValueError):
            pass
        conn.sock.close()

    def _read(self, conn: _Connection) -> None:
        try:
            data = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:  # the client went away
            self._waiting.pop(conn.sock.fileno(), None)
            self._drop(conn)
            return
        conn.buffer += data
        if b"\r\n\r\n" in conn.buffer or len(conn.buffer) > MAX_HEAD:
            self._dispatch(conn)

    def _dispatch(self, conn: _Connection) -> None:
        self._waiting.pop(conn.sock.fileno(), None)
        self._selector.unregister(conn.sock)
        with self._lock:
            self._busy += 1
        self._jobs.put(conn)

    def _expire(self, now: float) -> None:
        while self._waiting:
            conn = next(iter(self._waiting.values()))
            if conn.deadline > now:
                # the order is the order of deadlines: accepted (or returned) in turn
                break
            self._waiting.popitem(last=False)
            self._drop(conn)

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError, OSError):
            pass

    def _take_returned(self) -> None:
        while True:
            try:
                conn = self._returned.get_nowait()
            except queue.Empty:
                return
            conn.deadline = time.monotonic() + HEAD_TIMEOUT
            if self._stop.is_set():
                conn.sock.close()
            else:
                self._watch(conn)

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except OSError:  # full (a wake-up is pending anyway) or closed
            pass

    # -- the workers ---------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            conn = self._jobs.get()
            if conn is None:
                return
            keep = False
            try:
                keep = self._answer(conn)
            except Exception:  # noqa: BLE001 (one line on standard error, never a traceback)
                self.handle_error(conn.sock, conn.address)
            finally:
                with self._lock:
                    self._busy -= 1
            if keep and not self._stop.is_set():
                self._returned.put(conn)
                self._wake()
            else:
                conn.sock.close()

    def _answer(self, conn: _Connection) -> bool:
        """Answer the request in ``conn.buffer``; whether the connection stays open."""
        conn.sock.setblocking(True)
        conn.sock.settimeout(IO_TIMEOUT)
        head, sep, rest = bytes(conn.buffer).partition(b"\r\n\r\n")
        conn.buffer = bytearray(rest)
        handler = Handler(conn.sock, conn.address, self, head + sep)
        if not sep or handler.close_connection or len(rest) > MAX_HEAD:
            return False
        conn.sock.setblocking(False)
        return True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A request that failed: a client that went away (a reset, a closed pipe: a
        browser tab closed, a probe) is no error of the server's and says nothing; anything
        else is one line on standard error, never a traceback."""
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, TimeoutError)):
            return
        what = f"{type(error).__name__}: {error}"
        print(f"kmc: explore: a request from {client_address[0]} failed: {what}", file=sys.stderr)

    # -- starting and stopping -------------------------------------------------------------------

    def serve_in_thread(self) -> threading.Thread:
        self._stopped.clear()
        t = threading.Thread(target=self.serve_forever, name="kmc-explore-server", daemon=True)
        t.start()
        return t

    def shutdown(self) -> None:
        """Stop ``serve_forever`` and wait for it."""
        self._stop.set()
        self._wake()
        self._stopped.wait(10)

    def server_close(self) -> None:
        """Close the listener, every connection and the workers (a worker answering a
        request finishes it)."""
        self._stop.set()
        self._wake()
        self._stopped.wait(10)
        for conn in list(self._waiting.values()):
            conn.sock.close()
        self._waiting.clear()
        for _ in self._workers:
            self._jobs.put(None)
        self.listener.close()
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()
