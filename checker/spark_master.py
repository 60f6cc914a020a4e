"""Spark master URLs: the default, their syntax, and whether a cluster answers at all.

Checked in Python before a JVM starts, so that a typo or an unreachable host is one line
naming the URL within seconds, instead of a JVM stack trace (``local[0]``) or a minute of
Spark's own registration retries (``spark://`` with no master listening: three attempts
of 20 s each).

Known limitation: a host that accepts the connection but is no Spark master (another
service on that port) passes the reachability check, and Spark's own timeout applies.
"""

from __future__ import annotations

import re
import socket
import time

from .errors import EngineError

# Spark's local mode does not retry a failed task unless the master says so: with
# local[*] one crashed Python worker aborts the whole run. "local[*,4]" gives every task
# four attempts; a task has no side effects, so a retry cannot change a result.
DEFAULT_MASTER = "local[*,4]"
MAX_PARTITIONS = 4096  # more partitions than this only cost scheduling (100000 stalls level 1)
CONNECT_SECONDS = 5.0  # per attempt; every address together gets at most REACH_SECONDS
REACH_SECONDS = 10.0

_LOCAL = re.compile(r"local(?:\[(?P<threads>\*|\d{1,6})(?:\s*,\s*(?P<failures>\d{1,6}))?\])?")
_LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*\d{1,4}\s*,\s*\d{1,4}\s*,\s*\d{1,7}\s*\]")
_HOST_PORT = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]{1,253}):(?P<port>\d{1,5})")
_K8S = re.compile(r"k8s://(?:(?P<scheme>https?)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]{1,253})"
                  r"(?::(?P<port>\d{1,5}))?/?")
_FORMS = "local, local[N], local[*], local[N,F], spark://HOST:PORT, yarn or k8s://HOST:PORT"


def validate_master(url) -> str:
    """``url`` if it is a Spark master URL kmc can use, else a one-line ``EngineError``.

    Returns the addresses' syntax only; ``check_reachable`` asks the network.
    """
    if not isinstance(url, str) or not url.strip():
        raise EngineError(f"the Spark master URL is empty (use one of {_FORMS})")
    bad = f"{url!r} is not a Spark master URL (use one of {_FORMS})"
    if url.startswith("local-cluster"):
        if not _LOCAL_CLUSTER.fullmatch(url):
            raise EngineError(bad)
        return url
    if url.startswith("local"):
        m = _LOCAL.fullmatch(url)
        if not m:
            raise EngineError(bad)
        if m.group("threads") not in (None, "*") and int(m.group("threads")) < 1:
            raise EngineError(f"Spark master {url!r}: needs at least one thread")
        if m.group("failures") is not None and int(m.group("failures")) < 1:
            raise EngineError(f"Spark master {url!r}: needs at least one attempt per task")
        return url
    if url.startswith("spark://"):
        for part in url[len("spark://"):].split(","):
            m = _HOST_PORT.fullmatch(part)
            if not m or not 0 < int(m.group("port")) < 65536:
                raise EngineError(f"Spark master {url!r}: {part!r} is not HOST:PORT")
        return url
    if url == "yarn":
        return url
    if url.startswith("k8s://"):
        m = _K8S.fullmatch(url)
        if not m or (m.group("port") and not 0 < int(m.group("port")) < 65536):
            raise EngineError(f"Spark master {url!r}: not k8s://[https://]HOST[:PORT]")
        return url
    raise EngineError(bad)


def addresses(url) -> list[tuple[str, int]]:
    """The (host, port) pairs a cluster master URL names (none for local and yarn)."""
    if url.startswith("spark://"):
        pairs = [_HOST_PORT.fullmatch(p) for p in url[len("spark://"):].split(",")]
        return [(m.group("host").strip("[]"), int(m.group("port"))) for m in pairs if m]
    if url.startswith("k8s://"):
        m = _K8S.fullmatch(url)
        if m:
            default = 80 if m.group("scheme") == "http" else 443
            return [(m.group("host").strip("[]"), int(m.group("port") or default))]
    return []


def check_reachable(url, connect=socket.create_connection) -> None:
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
            connect((host, port), timeout=min(CONNECT_SECONDS, left)).close()
            return
        except socket.gaierror as e:
            why = f"{host}: unknown host ({e.strerror or e})"
        except socket.timeout:
            why = f"{host}:{port}: no answer within {min(CONNECT_SECONDS, left):.0f} s"
        except OSError as e:
            why = f"{host}:{port}: {e.strerror or e}"
    raise EngineError(f"cannot reach the Spark master {url} ({why})")
