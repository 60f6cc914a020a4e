"""A live, transient progress line while an engine explores.

    with ProgressDisplay(console) as progress:
        result = LocalEngine(model, props, options, progress=progress.update).run()

The line disappears when the block ends, so what is printed afterwards (the result)
is not mixed with it. When standard error is not a terminal (CI, nohup, ``2> log``) there
is no live line: ``every`` seconds a plain, lasting line is written instead
(``plain_line``), with a timestamp, the distinct and generated states, the queue, the
depth and the rate.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING

from rich.console import Console
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

if TYPE_CHECKING:
    from kmc.checker.core.result import Stats


def _elapsed(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def progress_text(stats: Stats, title: str = "exploring", seconds: float | None = None) -> Text:
    """The progress line for a ``Stats`` snapshot (without the spinner); ``seconds``: the
    run's time now, when it has moved on since the snapshot. Once the search is over and a
    verdict is being decided (``stats.deciding``), the line says so, with the counts."""
    text = Text()
    text.append(title, "bold")
    seconds = stats.seconds if seconds is None else seconds
    deciding = stats.deciding
    if deciding:
        text.append("  ·  ", "dim")
        text.append(deciding, "cyan")
        text.append("  ·  ", "dim")
        text.append(f"{stats.distinct:,}", "cyan")
        text.append(" distinct states", "dim")
        text.append("  ·  ", "dim")
        text.append(_elapsed(seconds), "cyan")
        return text
    for label, value, after in (
        ("", f"{stats.distinct:,}", " distinct states"),
        ("", f"{stats.queue:,}", " in queue"),
        ("depth ", f"{stats.depth}", ""),
        ("", f"{stats.states_per_second:,.0f}", " states/s"),
        ("", _elapsed(seconds), ""),
    ):
        text.append("  ·  ", "dim")
        text.append(label, "dim")
        text.append(value, "cyan")
        text.append(after, "dim")
    return text


def level_text(stats: Stats, level_seconds: float) -> Text:
    """The lasting line printed when a level completes."""
    text = Text()
    text.append(f"level {stats.depth}", "bold")
    for value, after in (
        (f"{stats.queue:,}", " in the frontier"),
        (f"{stats.distinct:,}", " distinct states"),
        (f"{level_seconds:.1f}", " s"),
    ):
        text.append("  ·  ", "dim")
        text.append(value, "cyan")
        text.append(after, "dim")
    return text


def plain_line(stats: Stats, when: datetime, title: str = "kmc") -> str:
    """One lasting progress line for logs: ``2026-01-02T03:04:05Z kmc: 1,834 distinct ·
    3,455 generated · 580 queue · depth 10 · 6,400 states/s``."""
    line = (
        f"{when.strftime('%Y-%m-%dT%H:%M:%SZ')} {title}: {stats.distinct:,} distinct · "
        f"{stats.generated:,} generated · {stats.queue:,} queue · depth {stats.depth} · "
        f"{stats.states_per_second:,.0f} states/s"
    )
    deciding = stats.deciding
    return f"{line} · {deciding}" if deciding else line


def _utc_now() -> datetime:
    return datetime.now(UTC)


class ProgressDisplay:
    """A context manager showing the latest ``Stats`` snapshot on one transient line.

    Args:
        console: the rich ``Console`` to draw on.
        enabled: when False nothing is drawn and ``update`` does nothing (for
            ``--no-progress`` and for output that is not a terminal).
        title: the word at the start of the line.
        levels: also print a lasting line for every completed level (level, frontier
            size, distinct states so far, the level's time): for engines that report once
            a level, such as Spark, where a level can take minutes.
        every: when not ``enabled`` (no live line), write a plain lasting line
            (``plain_line``) at most once every ``every`` seconds; ``None``: never.
        clock, now: the monotonic clock that paces the plain lines and the wall clock of
            their timestamps (injected by tests).
    """

    def __init__(
        self,
        console: Console,
        *,
        enabled: bool = True,
        title: str = "exploring",
        levels: bool = False,
        every: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.console = console
        self.enabled = enabled
        self.title = title
        self.levels = levels
        self.every = None if enabled else every
        self._clock, self._now = clock, now
        self._last_plain = clock() if self.every is not None else 0.0
        self.last: Stats | None = None  # the latest snapshot, kept even when disabled
        self._level_started = 0.0
        self._spinner = Spinner("dots", text=Text(f"{title} …", "bold"), style="cyan")
        self._live: Live | None = None
        self._shown_at = 0.0  # the clock() when the latest snapshot came: its time runs on from there
        self._said = False  # a status message is on the line (until the next snapshot)

    def __enter__(self) -> ProgressDisplay:
        if self.enabled:
            self._live = Live(
                _Ticking(self),
                console=self.console,
                transient=True,
                refresh_per_second=8,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def update(self, stats: Stats) -> None:
        """Show a new snapshot (``checker.core.result.Stats``); called by the engine."""
        previous, self.last = self.last, stats
        if self._live is None:
            now = self._clock() if self.every is not None else 0.0
            if self.every is not None and now - self._last_plain >= self.every:
                self._last_plain = now
                self.console.print(
                    plain_line(stats, self._now(), self.title), markup=False, highlight=False, soft_wrap=True
                )
            return
        if self.levels and (previous is None or stats.depth != previous.depth):
            self._live.console.print(level_text(stats, stats.seconds - self._level_started))
            self._level_started = stats.seconds
        self._shown_at = self._clock()
        self._said = False
        self._spinner.update(text=progress_text(stats, self.title))

    def line(self) -> Text | None:
        """The live line now: the latest snapshot, its clock moved on by the time since it
        came (so that a long step with no new counts, such as a liveness decision, never
        shows a frozen clock); ``None`` before the first snapshot."""
        if self.last is None or self._said:
            return None
        return progress_text(self.last, self.title, self.last.seconds + self._clock() - self._shown_at)

    def status(self, message: str) -> None:
        """Say what the engine is doing before it has counts to show (Spark's start-up):
        on the live line, or as a plain timestamped line when there is none."""
        if self._live is not None:
            self._said = True  # shown until the next snapshot
            self._spinner.update(text=Text(f"{self.title}: {message} …", "bold"))
        elif self.every is not None:
            self.console.print(
                f"{self._now().strftime('%Y-%m-%dT%H:%M:%SZ')} {self.title}: {message}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )

    __call__ = update  # so the display itself can be passed as an engine's ``progress``


class _Ticking:
    """What the live display draws at each refresh: the spinner, its text rebuilt from the
    latest snapshot with the clock running (``ProgressDisplay.line``)."""

    def __init__(self, display: ProgressDisplay) -> None:
        self.display = display

    def __rich__(self) -> Spinner:
        line = self.display.line()
        if line is not None:
            self.display._spinner.text = line
        return self.display._spinner
