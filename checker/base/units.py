"""Values a user writes in a spec file or on the command line, parsed without starting
anything: a size (``8G``, ``512M``) and a Spark master URL's syntax. The spec readers
(``model.spec`` the sizes, the application's ``app.specs`` the master) and the runtime
(``checker.base.memory``, ``checker.spark.master``) share them; nothing here reads the machine
or the network."""

from __future__ import annotations

import re

from .errors import EngineError

_SIZE = re.compile(r"^\s*(\d{1,15}(?:\.\d{1,9})?)\s*([KMGTP]?)(?:I?B)?\s*$", re.IGNORECASE)
UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}


def parse_size(text: str | int) -> int:
    """Bytes from a size such as ``8G``, ``512M``, ``1.5GiB`` or ``1000000`` (units of 1024).

    Raises:
        ValueError: not a size.
    """
    m = _SIZE.match(str(text))
    if not m:
        raise ValueError(f"{str(text)[:40]!r} is not a size (e.g. 8G, 512M, 1.5G)")
    return int(float(m.group(1)) * UNITS[m.group(2).upper()])


def format_size(n: int) -> str:
    """``n`` bytes as a short size (``1.5G``)."""
    for unit in ("P", "T", "G", "M", "K"):
        if n >= UNITS[unit]:
            return f"{n / UNITS[unit]:.3g}{unit}"
    return f"{n}B"


# The least and the largest ceiling a user may give (--max-memory, [check] max_memory): the
# least is above kmc's own resident memory at start-up (about 60 MiB with numpy, rich and a
# small spec loaded; measured 2026-11-26 with `kmc bench specs/le-three-replicas.toml
# --compare-engines`: peak RSS 57 MiB local, 67 MiB for the Spark engine's driver), so that a
# ceiling never stops a run before its first state.
MIN_CEILING = 128 << 20
MAX_CEILING = 1 << 50  # 1P


def check_ceiling(value: int) -> str | None:
    """Why ``value`` bytes cannot be a memory ceiling (one phrase), or None."""
    if value < MIN_CEILING:
        return f"must be at least {format_size(MIN_CEILING)} (kmc itself needs about 60M to start)"
    if value > MAX_CEILING:
        return f"must be at most {format_size(MAX_CEILING)}"
    return None


_LOCAL = re.compile(r"local(?:\[(?P<threads>\*|\d{1,6})(?:\s*,\s*(?P<failures>\d{1,6}))?\])?")
_LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*\d{1,4}\s*,\s*\d{1,4}\s*,\s*\d{1,7}\s*\]")
HOST_PORT = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]{1,253}):(?P<port>\d{1,5})")
K8S_MASTER = re.compile(
    r"k8s://(?:(?P<scheme>https?)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]{1,253})"
    r"(?::(?P<port>\d{1,5}))?/?"
)
_FORMS = "local, local[N], local[*], local[N,F], spark://HOST:PORT, yarn or k8s://HOST:PORT"


def validate_master(url: str) -> str:
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
        for part in url[len("spark://") :].split(","):
            m = HOST_PORT.fullmatch(part)
            if not m or not 0 < int(m.group("port")) < 65536:
                raise EngineError(f"Spark master {url!r}: {part!r} is not HOST:PORT")
        return url
    if url == "yarn":
        return url
    if url.startswith("k8s://"):
        m = K8S_MASTER.fullmatch(url)
        if not m or (m.group("port") and not 0 < int(m.group("port")) < 65536):
            raise EngineError(f"Spark master {url!r}: not k8s://[https://]HOST[:PORT]")
        return url
    raise EngineError(bad)
