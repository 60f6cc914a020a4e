"""The address ``kmc explore`` binds and the hosts it answers: a loopback address unless
remote access is allowed (``--allow-remote``), and the ``Host`` header names a request may
carry (so that a page of another site that points its own name at 127.0.0.1, DNS
rebinding, is refused)."""

from __future__ import annotations

import ipaddress
import socket

import attrs
from kmc.checker.base.errors import UsageError

LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


# -- the address to bind ------------------------------------------------------------------


@attrs.frozen
class BindAddress:
    """Where the server listens: ``family`` and ``address`` as ``socket.bind`` takes
    them, ``host`` as the user wrote it, whether it is a loopback address and whether it
    is every interface (``0.0.0.0`` or ``::``)."""

    host: str
    family: int
    address: str
    loopback: bool
    every_interface: bool

    def url(self, port: int) -> str:
        """A URL a browser on this machine opens: an address every interface includes is
        shown as its loopback, an IPv6 address in brackets."""
        shown = self.address
        if self.every_interface:
            shown = "::1" if self.family == socket.AF_INET6 else "127.0.0.1"
        if ":" in shown:
            shown = f"[{shown}]"
        return f"http://{shown}:{port}/"


def bind_address(host: str, allow_remote: bool = False) -> BindAddress:
    """Resolve ``--host`` (an address, ``localhost``, or a name of this machine) without
    opening a socket.

    Raises:
        UsageError: the host does not resolve, or it is not a loopback address and
            ``allow_remote`` is false (one line, naming ``--host``).
    """
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):  # an IPv6 address as URLs write it
        text = text[1:-1]
    if not text:
        raise UsageError("--host: empty (give an address such as 127.0.0.1 or ::1)")
    try:
        infos = socket.getaddrinfo(text, None, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as e:
        reason = getattr(e, "strerror", None) or str(e)
        raise UsageError(f"--host {host}: not an address of this machine ({reason})") from None
    infos = [i for i in infos if i[0] in (socket.AF_INET, socket.AF_INET6)]
    if not infos:
        raise UsageError(f"--host {host}: no IPv4 or IPv6 address")
    family, _, _, _, sockaddr = infos[0]
    address = str(sockaddr[0])
    ip = ipaddress.ip_address(address.partition("%")[0])
    every = ip.is_unspecified
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    loopback = ip.is_loopback or (mapped is not None and mapped.is_loopback)
    if not loopback and not allow_remote:
        what = "every interface" if every else "an address other machines can reach"
        raise UsageError(
            f"--host {host}: {address} is {what}; the explorer listens on a loopback address "
            "(127.0.0.1, ::1) unless --allow-remote is given"
        )
    return BindAddress(host, family, address, loopback, every)


def remote_warning(bind: BindAddress) -> str:
    """The line printed when the server listens beyond this machine."""
    where = "every interface" if bind.every_interface else bind.address
    return (
        f"kmc: warning: listening on {where} ({bind.host}), not only this machine: anyone who can "
        "reach it can walk the model and run its search"
    )


def _machine_names() -> set[str]:
    """This machine's host name, its fully qualified name and their addresses."""
    names = {socket.gethostname(), socket.getfqdn()}
    for name in list(names):
        try:
            _, aliases, addresses = socket.gethostbyname_ex(name)
        except OSError:
            continue
        names.update(aliases, addresses)
    return {n for n in names if n}


def allowed_hosts(bind: BindAddress, port: int) -> set[str]:
    """The ``Host`` headers the server answers (lower case, with the port)."""
    names = set(LOOPBACK) | {bind.host, bind.address}
    if bind.every_interface:  # every interface: the names this machine goes by
        names |= _machine_names()
    out = set()
    for n in names:
        n = n.lower()
        if ":" in n and not n.startswith("["):
            n = f"[{n}]"
        out.add(f"{n}:{port}")
    return out
