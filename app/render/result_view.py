"""The terminal face of ``kmc check``'s outcome, drawn with rich through
``__rich_console__``: the constants, the verdicts, the statistics, the per-action counts,
the counterexamples (``render.terminal.TraceView``) and a one-line summary.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from kmc.checker.base.text import safe_text
from kmc.checker.core.result import HOLDS, UNKNOWN, VIOLATED
from kmc.model.actions import action_names
from kmc.model.describe import plural
from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.padding import Padding
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from .counterexample import by_path, cross_checked_text
from .json_result import expectation
from .terminal import UNCLEAN_NOTE, TraceView, trap_share

if TYPE_CHECKING:
    from kmc.checker.core.result import CheckResult, Violation
    from kmc.model.config import Config
    from kmc.model.kafka import KafkaModel
    from kmc.model.spec import Spec

__all__ = ["ResultView", "collision_text", "stop_reason"]


def _count(n: int) -> str:
    return f"{n:,}"


def collision_text(probability: float) -> str:
    """A probability as TLC prints it: two significant digits, ``1.2E-14``."""
    return f"{probability:.1E}"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.2f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"


# -- a whole run --------------------------------------------------------------------------

_MEANING_MIN = 24  # below this many cells the "meaning" column is left out

_VERDICT_TEXT = {
    HOLDS: Text("holds", "bold green"),
    VIOLATED: Text("VIOLATED", "bold red"),
    UNKNOWN: Text("unknown", "bold yellow"),
}


def join_fitting(pieces: Iterable[Text], separator: Text, max_width: int | None = None) -> Iterator[Text]:
    """``pieces`` joined by ``separator`` on as few lines as fit in ``max_width`` cells,
    breaking only between pieces (a line never ends in a separator, no piece is cut)."""
    line = Text()
    for piece in pieces:
        if line.cell_len and max_width is not None and line.cell_len + separator.cell_len + piece.cell_len > max_width:
            yield line
            line = Text()
        if line.cell_len:
            line.append_text(separator)
        line.append_text(piece)
    if line.cell_len:
        yield line


def stop_reason(result: CheckResult, spec: Spec | None = None, max_states: int | None = None) -> str | None:
    """Why the search did not explore every reachable state, in words (``None`` if it did).

    ``max_states`` is the state bound the run used (default: the spec's).
    """
    if result.complete:
        return None
    stopped = result.stopped
    if stopped == "violation":
        unknown = [p for p in result.checked if result.verdict(p) == UNKNOWN]
        if not unknown:
            return (
                "stopped after the first level with a violation (keep_going is off); every checked property is decided"
            )
        return (
            "stopped after the first level with a violation (keep_going is off), so "
            f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} unknown "
            f"(--keep-going decides {'it' if len(unknown) == 1 else 'them'})"
        )
    if stopped == "max-depth":
        return f"stopped at the depth bound (max_depth = {result.max_depth}): states deeper than that were not explored"
    if stopped == "max-states":
        if max_states is None and spec is not None:
            max_states = spec.max_states
        bound = f" (max_states = {max_states:,})" if max_states else ""
        return (
            f"stopped at the end of the level that reached the state bound{bound}: "
            "the rest of the state space was not explored"
        )
    if stopped == "max-memory":
        return "stopped at the memory bound (max_memory): the rest of the state space was not explored"
    if stopped == "out-of-memory":
        return "stopped out of memory (the process could not allocate): the rest of the state space was not explored"
    if stopped == "disk-full":
        return "stopped: the Spark store's disk was short of space: the rest of the state space was not explored"
    if stopped == "interrupted":
        return "interrupted before the search finished"
    return f"stopped early ({stopped})" if stopped else "the search did not finish"


def _never_fired_note(model: KafkaModel, name: str, result: CheckResult) -> str:
    cfg = model.config
    if name in ("Crash", "Restart") and cfg.max_crashes == 0:
        return "never fired (max_crashes = 0)"
    if name == "Produce" and cfg.max_messages == 0:
        return "never fired (max_messages = 0)"
    if name in ("ElectLeader", "BecomeFollower") and cfg.max_leader_epoch == 0:
        return "never fired (max_leader_epoch = 0)"
    if name in ("ElectLeader", "BecomeFollower") and cfg.max_crashes == 0 and not cfg.preferred_election:
        return "never fired (no crash and no preferred election: the first leader stays)"
    if not result.complete:
        return "never fired before the search stopped"
    return "never fired — a modelling bug or an unreachable action?"


def _flags(cfg: Config) -> str:
    from .headers import config_flags

    on = config_flags(cfg)
    return ", ".join(on) if on else "none"


def spec_header(
    spec: Spec | None, cfg: Config, command: str = "check", engine: str | None = None
) -> Iterator[Text | Padding]:
    """The header of a run (``kmc check``, ``kmc simulate``): the spec's path, title and
    description, then the configuration (the Kafka release it names and the spec's overrides
    of it, then every option that changes the model: ``_flags``) and, when given, the engine."""
    if spec is not None:
        # A spec is untrusted: its text is shown as text, control characters escaped.
        title = Text(f"kmc {command} ", "bold")
        title.append(safe_text(spec.path), "bold cyan")
        yield title
        if spec.title:
            yield Text(safe_text(spec.title), "bold")
        if spec.description.strip():
            yield Padding(Text(safe_text(" ".join(spec.description.split())), "dim italic"), (0, 0, 0, 2), expand=False)
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim")
    grid.add_column()
    # the Kafka release the model was read from, and the spec's overrides
    kafka = spec.kafka if spec is not None else None
    if kafka is not None:
        grid.add_row("kafka", kafka.text())
    grid.add_row("replicas", f"{', '.join(cfg.replicas)}  (min ISR {cfg.min_insync_replicas})")
    grid.add_row("truncation", cfg.truncation)
    grid.add_row(
        "bounds",
        f"≤ {plural(cfg.max_messages, 'message')} · "
        f"≤ {plural(cfg.max_crashes, 'crash')} · "
        f"leader epochs ≤ {cfg.max_leader_epoch}",
    )
    grid.add_row("flags", _flags(cfg))
    if engine is not None:
        grid.add_row("engine", engine)
    yield Padding(grid, (1, 0, 0, 2), expand=False)


class ResultView:
    """The outcome of ``kmc check``: what was checked, the verdicts, the statistics and
    the counterexamples.

    Args:
        spec: the ``model.spec.Spec`` (``None`` when there is none: no title, no
            expectation).
        model: the ``KafkaModel`` that was explored.
        result: the engine's ``CheckResult``.
        diff: show counterexamples in the compact changed-fields form.
        show_traces: show the counterexamples at all.
    """

    def __init__(
        self,
        spec: Spec | None,
        model: KafkaModel,
        result: CheckResult,
        *,
        diff: bool = False,
        show_traces: bool = True,
        max_states: int | None = None,
        coverage: bool = False,
    ) -> None:
        self.spec = spec
        self.coverage = coverage  # the coverage tables in the action table's place
        self.max_states = max_states
        self.model = model
        self.result = result
        self.diff = diff
        self.show_traces = show_traces
        self.expectation = expectation(spec, result)

    # the parts, in order

    def header(self) -> Iterator[Text | Padding]:
        yield from spec_header(self.spec, self.model.config, "check", self.result.engine)

    def verdict_table(self, max_width: int | None = None) -> Table:
        """The verdict of every checked property, its expectation and what it means (the
        meaning is left out when ``max_width`` is too narrow for it: see
        ``kmc invariants``)."""
        from kmc.checker.core.deadlock import DEADLOCK, Deadlock
        from kmc.invariants import BY_NAME

        result, expected = self.result, self.expectation["expected"]
        rows = []
        for name in result.checked:
            verdict = result.verdict(name)
            want = expected.get(name)
            if want is None:
                exp = Text("")
            elif want == verdict:
                exp = Text("as expected", "green")
            elif verdict == UNKNOWN:  # not a contradiction: the search did not get there
                exp = Text(f"not decided (expected {want})", "yellow")
            else:
                exp = Text(f"UNEXPECTED (expected {want})", "bold red")
            prop = BY_NAME.get(name) or (Deadlock if name == DEADLOCK else None)
            rows.append((name, _VERDICT_TEXT[verdict].copy(), exp, prop.description if prop is not None else ""))
        name_width = max((len(r[0]) for r in rows), default=8)
        exp_width = max((r[2].cell_len for r in rows), default=0)
        needed = name_width + len("VIOLATED") + max(exp_width, len("expectation")) + 4 * 3 + _MEANING_MIN
        show_meaning = max_width is None or needed <= max_width
        table = Table(box=box.SIMPLE_HEAD, header_style="bold dim", show_edge=False)
        table.add_column("property", style="bold", no_wrap=True, min_width=name_width)
        table.add_column("verdict", no_wrap=True)
        table.add_column("expectation")
        if show_meaning:
            table.add_column("meaning", style="dim", ratio=1)
        for name, shown, exp, meaning in rows:
            table.add_row(name, shown, exp, *((meaning,) if show_meaning else ()))
        return table

    def statistics(self, max_width: int | None = None) -> Iterator[Text]:
        s = self.result.stats
        parts = (
            (_count(s.distinct), " distinct states"),
            (_count(s.generated), " generated"),
            ("depth ", str(s.depth)),
            (_count(s.terminal), " terminal (no action enabled)"),
            (_duration(s.seconds), ""),
            (f"{s.states_per_second:,.0f}", " states/s"),
        )
        pieces = []
        for a, b in parts:
            piece = Text()
            if a.endswith(" "):  # "depth 10": the label comes first
                piece.append(a)
                piece.append(b, "bold")
            else:
                piece.append(a, "bold")
                piece.append(b)
            pieces.append(piece)
        yield from join_fitting(pieces, Text("  ·  ", "dim"), max_width)
        reason = stop_reason(self.result, self.spec, self.max_states)
        if reason is not None:
            yield Text(f"incomplete: {reason}", "yellow")
            if s.queue:
                yield Text(f"{_count(s.queue)} states left on the queue (found, not yet expanded)", "yellow")
        yield Text(
            f"fingerprint collision probability: calculated (optimistic) "
            f'{collision_text(s.collision_probability)} (see docs/model.md, "Counting")',
            "dim",
        )
        if s.cross_checked:
            yield Text(f"batch kernel: {cross_checked_text(s.cross_checked)}", "dim")

    def action_table(self) -> Table:
        s = self.result.stats
        table = Table(box=box.SIMPLE_HEAD, header_style="bold dim", show_edge=False)
        table.add_column("action", no_wrap=True)
        table.add_column("fired", justify="right")
        table.add_column("new states", justify="right")
        table.add_column("")
        for name in action_names(self.model.config):
            fired, new = s.fired.get(name, 0), s.new.get(name, 0)
            note = Text("") if fired else Text(_never_fired_note(self.model, name, self.result), "yellow")
            table.add_row(name, _count(fired), _count(new), note)
        return table

    def violations(self) -> list[Violation]:
        """The violations, shortest counterexample first."""
        return sorted(self.result.violations.values(), key=lambda v: (len(v.path), v.path.choices))

    def summary(self) -> Iterator[Text]:
        result, model = self.result, self.model
        ordered = self.violations()
        n = len(result.checked)
        if not ordered:
            states = _count(result.stats.distinct)
            steps = any(_kind(p) == "step" for p in result.checked)
            what = ("property" if steps else "invariant") if n == 1 else ("properties" if steps else "invariants")
            unknown = [p for p in result.checked if result.verdict(p) == UNKNOWN]
            if not result.complete:
                yield Text(
                    f"No violation in {states} distinct states, but the search is incomplete: {n} {what} unknown.",
                    "bold yellow",
                )
            elif unknown:  # complete, but a property needing more (an always-possibly one)
                yield Text(f"No violation in {states} distinct states; unknown: {', '.join(unknown)}.", "bold yellow")
            elif n == 1:
                yield Text(f"✓ {result.checked[0]} holds over {states} distinct states.", "bold green")
            else:
                yield Text(f"✓ All {n} {what} hold over {states} distinct states.", "bold green")
        else:
            from .counterexample import lasso_summary

            first = ordered[0]
            # a liveness property's lasso has no "shortest": say what it is instead
            head = (
                f"counterexample is {lasso_summary(first)}"
                if first.loop is not None
                else f"shortest counterexample has {len(first.path)} states{self._traps(first)}"
            )
            text = Text(f"✗ {first.property} violated: {head}.", "bold red")
            rest = [f"{v.property} ({lasso_summary(v)}{self._traps(v)})" for v in ordered[1:]]
            if rest:
                text.append(f" Also violated: {', '.join(rest)}.", "red")
            unknown = [p for p in result.checked if result.verdict(p) == UNKNOWN]
            if unknown:
                text.append(f" Unknown: {', '.join(unknown)}.", "yellow")
            yield text
            if "CommittedNeverLost" in result.violations and model.config.unclean_leader_election:
                yield Text(UNCLEAN_NOTE, "dim")
        for name, reason in result.unknown.items():
            yield Text(f"{name} is unknown: {safe_text(reason)}", "yellow")
        never = result.never_reached
        if never:
            yield Text(
                f"✗ Never reached: {', '.join(never)} (a cover must be reached: the configuration never shows "
                f"{'that scenario' if len(never) == 1 else 'those scenarios'}).",
                "bold red",
            )
        exp = self.expectation
        if exp["expected"]:
            undecided = [n for n in exp["expected"] if exp["got"].get(n) == UNKNOWN]
            checked = [n for n in exp["expected"] if n not in exp["unchecked"]]
            if not checked:
                yield Text(
                    "The spec's expectation is about properties that were not checked "
                    f"({', '.join(exp['unchecked'])}).",
                    "dim",
                )
            elif exp["matched"]:
                skipped = f" (not checked: {', '.join(exp['unchecked'])})" if exp["unchecked"] else ""
                yield Text(f"This matches the spec's expectation{skipped}.", "green")
            elif len(undecided) == len(exp["mismatches"]):  # nothing contradicts it
                yield Text(
                    "The spec's expectation is not confirmed yet: the search stopped "
                    f"before deciding {', '.join(undecided)}.",
                    "yellow",
                )
            else:
                yield Text(
                    "This does NOT match the spec's expectation: " + "; ".join(exp["mismatches"]) + ".", "bold red"
                )

    def _traps(self, v: Violation) -> str:
        """For an always-possibly violation, its trap count and share, else ``""``."""
        if v.kind != "possibly":
            return ""
        return f"; {trap_share(v.traps, self.result.stats.distinct)}"

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self.header()
        yield Text("")
        yield self.verdict_table(options.max_width)
        yield Text("")
        yield from self.statistics(options.max_width)
        yield Text("")
        if self.coverage:  # its action table has every column of the plain one, and more
            from .coverage import coverage_view

            yield coverage_view(self.result.stats)
        else:
            yield self.action_table()
        if self.result.covers:
            from .generic import cover_line

            yield Text("")
            yield Text("covers (each must be reached):", "bold")
            for name in self.result.covers:
                yield cover_line(self.result, name)
            for name, path in self.result.witnesses.items() if self.show_traces else ():
                yield Text("")
                title = Text(f"Witness: {name} ({len(path)} states)", "bold green")
                yield Rule(title, style="green") if title.cell_len + 6 <= options.max_width else title
                yield TraceView(self.model, self.result.witness(name), diff=self.diff)
        if self.show_traces:
            for v, *also in by_path(self.violations()):  # a path several properties share: once
                yield Text("")
                names = ", ".join(x.property for x in (v, *also))
                title = Text(f"Counterexample: {names} ({len(v.path)} states)", "bold red")
                # a rule would cut a title that does not fit: then the title alone, wrapped
                yield Rule(title, style="red") if title.cell_len + 6 <= options.max_width else title
                yield TraceView(self.model, v, diff=self.diff, distinct=self.result.stats.distinct, also=also)
        yield Text("")
        yield from self.summary()


def _kind(name: str) -> str | None:
    from kmc.invariants import BY_NAME

    prop = BY_NAME.get(name)
    return None if prop is None else prop.kind
