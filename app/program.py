"""The ``kmc`` program's start: its console script's entry point (``run``), and what
``python -m kmc.app.cli`` does first.

The program's imports (numpy, rich, the model) take a noticeable part of a second; a
Ctrl-C in them would end in a traceback, a SIGTERM in a silent kill. So the program's
very first act, before those imports, is ``protect_start_up``: until ``kmc.app.cli.main``
installs its own handlers (and again after it has returned), SIGINT and SIGTERM end it at
once with one line and exit 130 or 143. This module imports nothing of kmc, and importing
it changes nothing: only the program calls ``protect_start_up``.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType
from typing import NoReturn

_LINES: dict[int, bytes] = {signal.SIGINT: b"kmc: interrupted\n", signal.SIGTERM: b"kmc: stopped (SIGTERM)\n"}


def _exit_at_start_up(signum: int, frame: FrameType | None) -> None:
    """A signal while the program is still importing (or already finishing): nothing is
    running that could be stopped at a safe point and nothing needs saving, so say so in
    one line and exit now with 128 + the signal number."""
    try:  # after main has returned, its verdict may still sit in the buffer
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 (a write in progress, a closed pipe: exit all the same)
        pass
    try:
        os.write(2, _LINES.get(signum, b"kmc: stopped\n"))
    except OSError:
        pass
    os._exit(128 + signum)


def protect_start_up() -> bool:
    """Make SIGINT and SIGTERM end the program at once, in one line (see the module).
    Returns whether the handlers were installed (not outside the main thread)."""
    try:
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, _exit_at_start_up)
    except ValueError:  # not the main thread
        return False
    return True


def run() -> NoReturn:
    """The console script ``kmc``: the start-up handlers, then the command line."""
    protect_start_up()
    from .cli import run as command_line

    command_line()
