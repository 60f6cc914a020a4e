"""Stopping a run cleanly on SIGINT and SIGTERM: the first signal asks the engine to stop
at its next safe point (a level boundary, where a checkpoint can be written); a second
one does not wait."""

from __future__ import annotations

import signal
from types import FrameType

from .exitcodes import signal_exit_code


class StopOnSignals:
    """While active, SIGINT and SIGTERM ask ``engine`` to stop at its next safe point.

    The first signal calls ``engine.cancel("interrupted")`` (every engine has it, from
    ``checker.driver.LevelDriver``: it sets ``stop_requested``, and the Spark engine's also
    aborts work in flight)
    and records the signal in ``signum``; from then on a second SIGINT raises
    ``KeyboardInterrupt`` and a second SIGTERM kills the process, so a user who does not
    want to wait never has to.
    Outside the main thread (where Python cannot install handlers) it does nothing.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, engine, reason: str = "interrupted") -> None:
        self.engine = engine
        self.reason = reason
        self.signum: int | None = None
        self._old: dict = {}

    @property
    def exit_code(self) -> int:
        """128 + the signal number (130 for SIGINT, 143 for SIGTERM), as a shell reports it."""
        return signal_exit_code(self.signum or signal.SIGINT)

    def __enter__(self) -> StopOnSignals:
        for s in self.SIGNALS:
            try:
                self._old[s] = signal.signal(s, self._handle)
            except ValueError:  # not the main thread
                break
        return self

    def __exit__(self, *exc: object) -> None:
        for s, old in self._old.items():
            signal.signal(s, old)
        self._old.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum
        self.engine.cancel(self.reason)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


# -- start-up: before ``kmc``'s main function runs ------------------------------------------

_STARTUP_LINES: dict[int, bytes] = {signal.SIGINT: b"kmc: interrupted\n", signal.SIGTERM: b"kmc: stopped (SIGTERM)\n"}


def _exit_at_startup(signum: int, frame: FrameType | None) -> None:
    """A signal while the ``kmc`` program is still importing (or already finishing):
    nothing is running that could be stopped at a safe point and nothing needs saving, so
    say so in one line and exit now with 128 + the signal number."""
    import os
    import sys

    try:  # after main has returned, its verdict may still sit in the buffer
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 (a write in progress, a closed pipe: exit all the same)
        pass
    try:
        os.write(2, _STARTUP_LINES.get(signum, b"kmc: stopped\n"))
    except OSError:
        pass
    os._exit(signal_exit_code(signum))


def is_kmc_program(argv0, orig_argv) -> bool:
    """Whether this process is the ``kmc`` command: its console script, or
    ``python -m kmc.app.cli``."""
    import os

    name = os.path.basename(argv0 or "")
    if name in ("kmc", "kmc.exe", "kmc-script.py"):
        return True
    args = list(orig_argv or ())
    return "-m" in args[1:3] and "kmc.app.cli" in args[2:4]


def install_startup_handlers() -> bool:
    """In the ``kmc`` program only (never in a process that merely imports kmc), make
    SIGINT and SIGTERM end it at once with one line and exit 130 or 143 until its main
    function installs its own handlers (and again after it has returned).

    Called first thing when ``kmc.checker`` is imported, because the imports that follow
    (numpy, rich, the model) take a noticeable part of a second, and a Ctrl-C in them
    would otherwise end in a traceback, a SIGTERM in a silent kill. Returns whether the
    handlers were installed.
    """
    import sys

    if not is_kmc_program(sys.argv[0] if sys.argv else "", getattr(sys, "orig_argv", ())):
        return False
    try:
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, _exit_at_startup)
    except ValueError:  # not the main thread
        return False
    return True
