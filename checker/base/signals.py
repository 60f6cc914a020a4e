"""Stopping a run cleanly on SIGINT and SIGTERM: the first signal asks the engine to stop
at its next safe point (a level boundary, where a checkpoint can be written); a second
one does not wait."""

from __future__ import annotations

import signal
from types import FrameType
from typing import Any

from .exitcodes import signal_exit_code


class StopOnSignals:
    """While active, SIGINT and SIGTERM ask ``engine`` to stop at its next safe point.

    The first signal calls ``engine.cancel("interrupted")`` (every engine has it, from
    ``checker.core.driver.LevelDriver``: it sets ``stop_requested``, and the Spark engine's also
    aborts work in flight)
    and records the signal in ``signum``; from then on a second SIGINT raises
    ``KeyboardInterrupt`` and a second SIGTERM kills the process, so a user who does not
    want to wait never has to.
    Outside the main thread (where Python cannot install handlers) it does nothing.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, engine: Any, reason: str = "interrupted") -> None:
        self.engine = engine
        self.reason = reason
        self.signum: int | None = None
        self._old: dict[int, Any] = {}

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
