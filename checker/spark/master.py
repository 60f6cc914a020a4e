"""Spark master URLs: the default, their syntax, and whether a cluster answers at all.

Checked in Python before a JVM starts, so that a typo or an unreachable host is one line
naming the URL within seconds, instead of a JVM stack trace (``local[0]``) or a minute of
Spark's own registration retries (``spark://`` with no master listening: three attempts
of 20 s each).

A ``spark://`` address that accepts the connection is then asked one question in Spark's
own RPC framing (see ``speaks_spark``): a Spark master answers it at once, so a web server,
another service, or a port that accepts connections and says nothing is refused in one
line within ``PROBE_SECONDS`` more, instead of Spark's minute of retries ending in
"Cannot call methods on a stopped SparkContext" or a page of JVM trace.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable

from ..base.errors import EngineError
from ..base.units import HOST_PORT, K8S_MASTER
from ..base.units import validate_master as validate_master  # the master URL's syntax, checked here too

# Spark's local mode does not retry a failed task unless the master says so: with
# local[*] one crashed Python worker aborts the whole run. "local[*,4]" gives every task
# four attempts; a task has no side effects, so a retry cannot change a result.
DEFAULT_MASTER = "local[*,4]"
MAX_PARTITIONS = 4096  # more partitions than this only cost scheduling (100000 stalls level 1)
CONNECT_SECONDS = 5.0  # per attempt; every address together gets at most REACH_SECONDS
REACH_SECONDS = 10.0
PROBE_SECONDS = 4.0  # for a master that accepted the connection to answer the probe


def addresses(url: str) -> list[tuple[str, int]]:
    """The (host, port) pairs a cluster master URL names (none for local and yarn)."""
    if url.startswith("spark://"):
        pairs = [HOST_PORT.fullmatch(p) for p in url[len("spark://") :].split(",")]
        return [(m.group("host").strip("[]"), int(m.group("port"))) for m in pairs if m]
    if url.startswith("k8s://"):
        m = K8S_MASTER.fullmatch(url)
        if m:
            default = 80 if m.group("scheme") == "http" else 443
            return [(m.group("host").strip("[]"), int(m.group("port") or default))]
    return []


def check_reachable(url: str, connect: Callable[..., socket.socket] = socket.create_connection) -> None:
    """Refuse, in at most ``REACH_SECONDS``, a cluster master none of whose addresses
    accepts a TCP connection.

    Raises:
        EngineError: naming the URL and the last address's error.
    """
    pairs = addresses(url)
    if not pairs:
        return
    deadline = time.monotonic() + REACH_SECONDS
    why = "no answer"
    for host, port in pairs:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            conn = connect((host, port), timeout=min(CONNECT_SECONDS, left))
        except socket.gaierror as e:
            why = f"{host}: unknown host ({e.strerror or e})"
        except socket.timeout:
            why = f"{host}:{port}: no answer within {min(CONNECT_SECONDS, left):.0f} s"
        except OSError as e:
            why = f"{host}:{port}: {e.strerror or e}"
        else:
            try:
                if not url.startswith("spark://") or not hasattr(conn, "recv"):
                    return
                problem = speaks_spark(conn, PROBE_SECONDS)
            finally:
                conn.close()
            if problem is None:
                return
            raise EngineError(f"{url} is not a Spark master: {host}:{port} {problem}")
    raise EngineError(f"cannot reach the Spark master {url} ({why})")


# Spark's transport protocol frames every message as: its total length (8 bytes, big-endian,
# the length itself included), a type byte, then the message. An RPC request is
# (request id: 8 bytes, body length: 4 bytes, body). A Spark endpoint answers a request
# whose body it cannot read with an RPC failure (type 5) for the same id, at once.
_RPC_REQUEST, _RPC_RESPONSE, _RPC_FAILURE = 3, 4, 5
_PROBE_ID = 0x6B6D63  # "kmc"
_PROBE_BODY = b"kmc: is this a Spark master?\r\n\r\n"  # the line ends make a web server answer at once
_MAX_TYPE = 31  # Spark's message types are small numbers (0-12 in Spark 3 and 4)


def probe_request() -> bytes:
    """The bytes of the RPC request ``speaks_spark`` sends."""
    length = 8 + 1 + 8 + 4 + len(_PROBE_BODY)
    return struct.pack(">qbqi", length, _RPC_REQUEST, _PROBE_ID, len(_PROBE_BODY)) + _PROBE_BODY


def speaks_spark(sock: socket.socket, timeout: float = PROBE_SECONDS) -> str | None:
    """Ask the peer of the connected ``sock`` one RPC question in Spark's framing.

    Returns:
        ``None`` when it answers as a Spark endpoint does (a well-formed frame: an RPC
        response or failure for the same request, or any frame of a known type), else a
        short reason for a message: "answers HTTP (a web UI's port?)", "sent no answer
        within 4 s", "closed the connection without an answer", "answers in another
        protocol".
    """
    deadline = time.monotonic() + timeout
    head = b""
    try:
        sock.settimeout(timeout)
        sock.sendall(probe_request())
        while len(head) < 17:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout()
            sock.settimeout(left)
            chunk = sock.recv(17 - len(head))
            if not chunk:
                break
            head += chunk
    except socket.timeout:
        if not head:
            return f"sent no answer within {timeout:.0f} s"
    except OSError as e:
        if not head:
            return f"closed the connection without an answer ({e.strerror or e})"
    if head.startswith(b"HTTP/") or head[:1] == b"<":
        return "answers HTTP, not Spark (a web UI's port? a Spark master listens on 7077 by default)"
    if not head:
        return "closed the connection without an answer"
    if len(head) >= 9:
        length, kind = struct.unpack(">qb", head[:9])
        if 9 <= length < (1 << 31) and 0 <= kind <= _MAX_TYPE:
            if kind in (_RPC_RESPONSE, _RPC_FAILURE) and len(head) >= 17:
                if struct.unpack(">q", head[9:17])[0] != _PROBE_ID:
                    return "answers in another protocol"
            return None
    return "answers in another protocol"
