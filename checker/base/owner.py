"""Which process owns a directory kmc made (a store of a run), told apart from every other
process that could have the same PID: the host, the PID namespace (a container has its
own), the PID and the process's start time. A directory is taken for a killed run's only
when all of that says so; anything that might be alive is left as it is."""

from __future__ import annotations

import os
import socket


def start_time(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot, ``/proc/PID/stat``'s
    22nd field), or None when no such process runs (or ``/proc`` cannot tell)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    return fields[19].decode() if len(fields) > 19 else None


def pid_namespace() -> str | None:
    """This process's PID namespace (the inode of ``/proc/self/ns/pid``), or None."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return None


def owner_line(pid: int | None = None) -> str:
    """``host pid-namespace pid start-time`` of process ``pid`` (default: this one),
    ``-`` for what cannot be told."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()} {pid_namespace() or '-'} {pid} {start_time(pid) or '-'}\n"


def owner_gone(line: str) -> bool:
    """True only when the owner ``line`` names has surely ended: it ran on this host, in
    this PID namespace, and no process has its PID now, or the one that has it started at
    another time (the PID was reused). False for anything that might be alive: another
    host or namespace (a container on a shared volume), a start time or namespace that
    could not be read, a line that is not an owner line."""
    words = line.split()
    if len(words) != 4 or not words[2].isdigit():
        return False
    host, namespace, pid_text, started = words
    if host != socket.gethostname() or namespace == "-" or namespace != pid_namespace():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return started != "-" and start_time(pid) != started
    if not os.path.isdir("/proc/self"):
        return False  # no /proc: whether the owner runs cannot be told
    now = start_time(pid)
    return now is None or (started != "-" and now != started)
